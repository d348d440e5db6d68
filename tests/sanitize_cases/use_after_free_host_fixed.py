import acl  # acl-emu run --sanitize tests/sanitize_cases/use_after_free_host_fixed.py

"""The fixed twin: both copies are made before the staging buffer is freed."""
N = 1 << 16
H2D = 1
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)
acl.util.ptr_to_numpy(host, (N,), NPY_UINT8)[:] = 1
ok(acl.rt.memcpy(dev, N, host, N, H2D))
ok(acl.rt.memcpy(dev, N, host, N, H2D))
ok(acl.rt.free_host(host))

ok(acl.rt.free(dev))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
