import acl  # acl-emu run --sanitize tests/sanitize_cases/read_through_fresh_view_caught_fixed.py

"""The fixed twin: the view is made, and read, after the synchronize."""
N = 1 << 16
H2D, D2H = 1, 2
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)
ok(acl.rt.memset(dev, N, 7, N))

ok(acl.rt.memcpy_async(host, N, dev, N, D2H, stream))
ok(acl.rt.synchronize_stream(stream))
total = int(acl.util.ptr_to_numpy(host, (N,), NPY_UINT8).sum())

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
