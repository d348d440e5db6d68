import acl  # acl-emu run --sanitize tests/sanitize_cases/host_write_double_buffer_clean.py

"""Clean control (host writes by happens-before): double buffering. Each batch's input is copied from one of
two page-locked buffers; the host refills a buffer only after an event recorded after that buffer's last
copy has completed, while the other buffer's copy runs."""
N = 1 << 18
H2D = 1
NPY_UINT8 = 2
BATCHES = 6


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
hosts = [acl.rt.malloc_host(N)[0] for _ in range(2)]
events = [acl.rt.create_event()[0] for _ in range(2)]
dev, ret = acl.rt.malloc(N * BATCHES, 0)
views = [acl.util.ptr_to_numpy(h, (N,), NPY_UINT8) for h in hosts]
recorded = [False, False]

for i in range(BATCHES):
    k = i % 2
    if recorded[k]:
        ok(acl.rt.synchronize_event(events[k]))  # the copy out of this buffer is done
    views[k][:] = i + 1
    ok(acl.rt.memcpy_async(dev + i * N, N, hosts[k], N, H2D, stream))
    ok(acl.rt.record_event(events[k], stream))
    recorded[k] = True
ok(acl.rt.synchronize_stream(stream))

ok(acl.rt.free(dev))
for h in hosts:
    ok(acl.rt.free_host(h))
for e in events:
    ok(acl.rt.destroy_event(e))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
