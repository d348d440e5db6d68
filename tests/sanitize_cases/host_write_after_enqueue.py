import acl  # acl-emu run --sanitize tests/sanitize_cases/host_write_after_enqueue.py

"""Host write after enqueue: the host refills its input buffer for the next batch while the async copy of
the current batch has not read it yet (the copy then moves the next batch's bytes)."""
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
    ok(acl.rt.memcpy_async(dev + i * N, N, host, N, H2D, stream))  # hazard: first
    batch[:] = i + 1  # the next batch, written before the copy above has run
ok(acl.rt.synchronize_stream(stream))  # hazard: second

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
