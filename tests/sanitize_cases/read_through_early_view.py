import acl  # acl-emu run --sanitize tests/sanitize_cases/read_through_early_view.py

"""Read through a view made before the copy (a documented limit): the program makes its numpy view of the
output buffer once, before the async copy out, and reads it before synchronizing. A read through a numpy
array is invisible to the emulator, so no finding is possible; the report says which view it could not
see through."""
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
out = acl.util.ptr_to_numpy(host, (N,), NPY_UINT8)  # hazard: view
ok(acl.rt.memset(dev, N, 7, N))

ok(acl.rt.memcpy_async(host, N, dev, N, D2H, stream))
total = int(out.sum())  # read before the copy is known complete: unseen
ok(acl.rt.synchronize_stream(stream))

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
