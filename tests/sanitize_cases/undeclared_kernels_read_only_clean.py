import acl  # acl-emu run --sanitize tests/sanitize_cases/undeclared_kernels_read_only_clean.py

"""Clean control (undeclared kernel arguments): two kernels on two streams, launched without access=, both
read one input and each writes its own output. Undeclared, the shared input might be written by either, so
the pair is only a possible hazard; neither run writes it, so it is no finding (the report's note says so)."""
import numpy as np

N = 1 << 16
H2D, D2H = 1, 2
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


def plus_one(src, dst):
    np.add(src, 1, out=dst)


def times_two(src, dst):
    np.multiply(src, 2, out=dst)


ok(acl.init())
ok(acl.rt.set_device(0))
a, ret = acl.rt.create_stream()
b, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev_in, ret = acl.rt.malloc(N, 0)
out_a, ret = acl.rt.malloc(N, 0)
out_b, ret = acl.rt.malloc(N, 0)
acl.util.ptr_to_numpy(host, (N,), NPY_UINT8)[:] = 3
ok(acl.rt.memcpy(dev_in, N, host, N, H2D))

ok(acl.rt.launch_kernel(plus_one, [(dev_in, N), (out_a, N)], a, 50.0))
ok(acl.rt.launch_kernel(times_two, [(dev_in, N), (out_b, N)], b, 50.0))
ok(acl.rt.synchronize_stream(a))
ok(acl.rt.synchronize_stream(b))
ok(acl.rt.memcpy(host, N, out_b, N, D2H))

for p in (dev_in, out_a, out_b):
    ok(acl.rt.free(p))
ok(acl.rt.free_host(host))
for s in (a, b):
    ok(acl.rt.destroy_stream(s))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
