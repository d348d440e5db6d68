import acl  # acl-emu run --sanitize tests/sanitize_cases/band_copies_interleaved_clean.py

"""Clean control (2-D copies of any height): an image of 512 rows split into interleaved column bands of 64
bytes, the even bands uploaded by one stream and the odd ones by another, each band one aclrtMemcpy2dAsync;
no two copies touch the same byte (their spans overlap, their rows do not)."""
ROWS, PITCH, BAND = 512, 1024, 64
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

for k, col in enumerate(range(0, PITCH, BAND)):
    ok(acl.rt.memcpy2d_async(image + col, PITCH, host + col, PITCH, BAND, ROWS, H2D, (left, right)[k % 2]))
ok(acl.rt.synchronize_stream(left))
ok(acl.rt.synchronize_stream(right))

ok(acl.rt.free(image))
ok(acl.rt.free_host(host))
for s in (left, right):
    ok(acl.rt.destroy_stream(s))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
