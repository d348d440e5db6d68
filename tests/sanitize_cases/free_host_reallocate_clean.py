import acl  # acl-emu run --sanitize tests/sanitize_cases/free_host_reallocate_clean.py

"""Clean control (use after free): a staging buffer is freed and a new one allocated each round (the
allocator may hand back the same address); every copy uses the live buffer of its round."""
N = 1 << 16
H2D = 1
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
dev, ret = acl.rt.malloc(N, 0)
for i in range(4):
    host, ret = acl.rt.malloc_host(N)
    acl.util.ptr_to_numpy(host, (N,), NPY_UINT8)[:] = i
    ok(acl.rt.memcpy(dev, N, host, N, H2D))
    ok(acl.rt.free_host(host))

ok(acl.rt.free(dev))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
