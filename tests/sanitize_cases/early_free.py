import acl  # acl-emu run --sanitize tests/sanitize_cases/early_free.py

"""Early free: the device buffer is freed while the copy out of it is still queued."""
N = 1 << 20
H2D, D2H = 1, 2
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)
acl.util.ptr_to_numpy(host, (N,), NPY_UINT8)[:] = 3

ok(acl.rt.memcpy_async(dev, N, host, N, H2D, stream))
ok(acl.rt.memcpy_async(host, N, dev, N, D2H, stream))  # hazard: first
ok(acl.rt.free(dev))  # hazard: second
ok(acl.rt.synchronize_stream(stream))

ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
