import acl  # acl-emu run --sanitize tests/sanitize_cases/uninitialized_read.py

"""Uninitialised read: only the first half of the device buffer is copied in, all of it is copied out."""
N = 1 << 20
H2D, D2H = 1, 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)  # hazard: first

ok(acl.rt.memcpy_async(dev, N, host, N // 2, H2D, stream))
ok(acl.rt.memcpy_async(host, N, dev, N, D2H, stream))  # hazard: second
ok(acl.rt.synchronize_stream(stream))

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
