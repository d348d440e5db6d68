import acl  # acl-emu run --sanitize tests/sanitize_cases/read_before_sync.py

"""Read before sync: the host reads the output buffer before the async copy into it is known complete."""
N = 1 << 20
H2D, D2H = 1, 2
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host_in, ret = acl.rt.malloc_host(N)
host_out, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)
acl.util.ptr_to_numpy(host_in, (N,), NPY_UINT8)[:] = 5

ok(acl.rt.memcpy_async(dev, N, host_in, N, H2D, stream))
ok(acl.rt.memcpy_async(host_out, N, dev, N, D2H, stream))  # hazard: first
result = acl.util.ptr_to_bytes(host_out, N)  # hazard: second
ok(acl.rt.synchronize_stream(stream))
print(f"all 5: {set(result) == {5}}")

ok(acl.rt.free(dev))
for p in (host_in, host_out):
    ok(acl.rt.free_host(p))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
