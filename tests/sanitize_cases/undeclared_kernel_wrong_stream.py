import acl  # acl-emu run --sanitize tests/sanitize_cases/undeclared_kernel_wrong_stream.py

"""Wrong stream, kernel launched without access=: the kernel writes its output on `compute`, the output is
copied out on `copy_out`. Undeclared, an argument may be read or written; the kernel's run is seen writing
the output, so the missing edge is a race, reported with a hint to declare the arguments' use."""
import numpy as np

N = 1 << 20
H2D, D2H = 1, 2
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


def add_one(src, dst):
    np.add(src, 1, out=dst)


ok(acl.init())
ok(acl.rt.set_device(0))
compute, ret = acl.rt.create_stream()
copy_out, ret = acl.rt.create_stream()
host_in, ret = acl.rt.malloc_host(N)
host_out, ret = acl.rt.malloc_host(N)
dev_in, ret = acl.rt.malloc(N, 0)
dev_out, ret = acl.rt.malloc(N, 0)
acl.util.ptr_to_numpy(host_in, (N,), NPY_UINT8)[:] = 1

ok(acl.rt.memcpy_async(dev_in, N, host_in, N, H2D, compute))
ok(acl.rt.launch_kernel(add_one, [(dev_in, N), (dev_out, N)], compute, 100.0))  # hazard: first
ok(acl.rt.memcpy_async(host_out, N, dev_out, N, D2H, copy_out))  # hazard: second
ok(acl.rt.synchronize_stream(copy_out))
ok(acl.rt.synchronize_stream(compute))

for p in (dev_in, dev_out):
    ok(acl.rt.free(p))
for p in (host_in, host_out):
    ok(acl.rt.free_host(p))
for s in (compute, copy_out):
    ok(acl.rt.destroy_stream(s))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
