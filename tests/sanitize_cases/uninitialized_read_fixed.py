import acl  # acl-emu run --sanitize tests/sanitize_cases/uninitialized_read_fixed.py

"""Uninitialised read, fixed: the whole device buffer is written before it is copied out."""
N = 1 << 20
H2D, D2H = 1, 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)

ok(acl.rt.memcpy_async(dev, N, host, N // 2, H2D, stream))
ok(acl.rt.memset_async(dev + N // 2, N // 2, 0, N // 2, stream))
ok(acl.rt.memcpy_async(host, N, dev, N, D2H, stream))
ok(acl.rt.synchronize_stream(stream))

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
