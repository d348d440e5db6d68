import acl  # acl-emu run --sanitize tests/sanitize_cases/missing_event_fixed.py

"""Missing event, fixed: stream `work` waits for an event recorded on `copy_in` after the copy in."""
N = 1 << 20
H2D, D2H, D2D = 1, 2, 3
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
copy_in, ret = acl.rt.create_stream()
work, ret = acl.rt.create_stream()
copied, ret = acl.rt.create_event()
host_in, ret = acl.rt.malloc_host(N)
host_out, ret = acl.rt.malloc_host(N)
dev_in, ret = acl.rt.malloc(N, 0)
dev_out, ret = acl.rt.malloc(N, 0)
acl.util.ptr_to_numpy(host_in, (N,), NPY_UINT8)[:] = 7

ok(acl.rt.memcpy_async(dev_in, N, host_in, N, H2D, copy_in))
ok(acl.rt.record_event(copied, copy_in))
ok(acl.rt.stream_wait_event(work, copied))
ok(acl.rt.memcpy_async(dev_out, N, dev_in, N, D2D, work))
ok(acl.rt.memcpy_async(host_out, N, dev_out, N, D2H, work))
ok(acl.rt.synchronize_stream(work))
ok(acl.rt.synchronize_stream(copy_in))
assert (acl.util.ptr_to_numpy(host_out, (N,), NPY_UINT8) == 7).all()

for p in (dev_in, dev_out):
    ok(acl.rt.free(p))
for p in (host_in, host_out):
    ok(acl.rt.free_host(p))
ok(acl.rt.destroy_event(copied))
for s in (copy_in, work):
    ok(acl.rt.destroy_stream(s))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
