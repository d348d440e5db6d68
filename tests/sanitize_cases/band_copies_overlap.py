import acl  # acl-emu run --sanitize tests/sanitize_cases/band_copies_overlap.py

"""Overlapping column bands: an image of 512 rows is uploaded in two column bands by two streams with
aclrtMemcpy2dAsync, but the right band starts 64 columns too early, so both streams write those columns of
every row."""
ROWS, PITCH, BAND = 512, 1024, 512
H2D = 1
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
left, ret = acl.rt.create_stream()
right, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(ROWS * PITCH)
image, ret = acl.rt.malloc(ROWS * PITCH, 0)
acl.util.ptr_to_numpy(host, (ROWS * PITCH,), NPY_UINT8)[:] = 9

start = BAND - 64  # should be BAND
ok(acl.rt.memcpy2d_async(image, PITCH, host, PITCH, BAND, ROWS, H2D, left))  # hazard: first
ok(acl.rt.memcpy2d_async(image + start, PITCH, host + start, PITCH, PITCH - start, ROWS, H2D, right))  # hazard: second
ok(acl.rt.synchronize_stream(left))
ok(acl.rt.synchronize_stream(right))

ok(acl.rt.free(image))
ok(acl.rt.free_host(host))
for s in (left, right):
    ok(acl.rt.destroy_stream(s))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
