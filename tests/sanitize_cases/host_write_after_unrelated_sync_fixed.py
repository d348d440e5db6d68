import acl  # acl-emu run --sanitize tests/sanitize_cases/host_write_after_unrelated_sync_fixed.py

"""The fixed twin: the host waits for `copy_in` before it refills the input."""

N = 1 << 20
H2D = 1
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


def busy(buf):
    pass


ok(acl.init())
ok(acl.rt.set_device(0))
copy_in, ret = acl.rt.create_stream()
compute, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)
scratch, ret = acl.rt.malloc(N, 0)
batch = acl.util.ptr_to_numpy(host, (N,), NPY_UINT8)
batch[:] = 1

ok(acl.rt.launch_kernel(busy, [(scratch, N)], compute, 500.0, access="w"))
ok(acl.rt.memcpy_async(dev, N, host, N, H2D, copy_in))
ok(acl.rt.synchronize_stream(compute))
ok(acl.rt.synchronize_stream(copy_in))  # the copy is known complete: the input may be refilled
batch[:] = 2
ok(acl.rt.synchronize_stream(copy_in))

for p in (dev, scratch):
    ok(acl.rt.free(p))
ok(acl.rt.free_host(host))
for s in (copy_in, compute):
    ok(acl.rt.destroy_stream(s))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
