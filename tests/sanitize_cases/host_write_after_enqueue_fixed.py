import acl  # acl-emu run --sanitize tests/sanitize_cases/host_write_after_enqueue_fixed.py

"""Host write after enqueue, fixed: the host waits for each copy before refilling the buffer."""
N = 1 << 20
H2D = 1
NPY_UINT8 = 2
BATCHES = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N * BATCHES, 0)
batch = acl.util.ptr_to_numpy(host, (N,), NPY_UINT8)

batch[:] = 0
for i in range(BATCHES):
    ok(acl.rt.memcpy_async(dev + i * N, N, host, N, H2D, stream))
    ok(acl.rt.synchronize_stream(stream))
    batch[:] = i + 1

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
