import acl  # acl-emu run --sanitize tests/sanitize_cases/capture_replay_live_buffer_fixed.py

"""Capture replay over a live buffer, fixed: the replay on the second stream waits for an event recorded
after the first replay."""
import numpy as np

N = 1 << 20
H2D, D2H = 1, 2
NPY_UINT8 = 2
GLOBAL = 0


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


def double(src, dst):
    np.multiply(src, 2, out=dst)


ok(acl.init())
ok(acl.rt.set_device(0))
capture, ret = acl.rt.create_stream()
first, ret = acl.rt.create_stream()
second, ret = acl.rt.create_stream()
done, ret = acl.rt.create_event()
host_in, ret = acl.rt.malloc_host(N)
host_out, ret = acl.rt.malloc_host(N)
dev_in, ret = acl.rt.malloc(N, 0)
dev_out, ret = acl.rt.malloc(N, 0)
acl.util.ptr_to_numpy(host_in, (N,), NPY_UINT8)[:] = 3

ok(acl.mdl.ri_capture_begin(capture, GLOBAL))
ok(acl.rt.memcpy_async(dev_in, N, host_in, N, H2D, capture))
ok(acl.rt.launch_kernel(double, [(dev_in, N), (dev_out, N)], capture, 200.0, access=("r", "w")))
ok(acl.rt.memcpy_async(host_out, N, dev_out, N, D2H, capture))
model, ret = acl.mdl.ri_capture_end(capture)

ok(acl.mdl.ri_execute_async(model, first))
ok(acl.rt.record_event(done, first))
ok(acl.rt.stream_wait_event(second, done))
ok(acl.mdl.ri_execute_async(model, second))
ok(acl.rt.synchronize_stream(second))
assert (acl.util.ptr_to_numpy(host_out, (N,), NPY_UINT8) == 6).all()

ok(acl.mdl.ri_destroy(model))
for p in (dev_in, dev_out):
    ok(acl.rt.free(p))
for p in (host_in, host_out):
    ok(acl.rt.free_host(p))
ok(acl.rt.destroy_event(done))
for s in (capture, first, second):
    ok(acl.rt.destroy_stream(s))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
