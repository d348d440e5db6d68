import acl  # acl-emu run --sanitize tests/sanitize_cases/uninitialized_2d_fixed.py

"""The fixed twin: the image is cleared (aclrtMemsetAsync) before its left halves are uploaded."""
ROWS, PITCH = 64, 1024
H2D, D2H = 1, 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(ROWS * PITCH)
image, ret = acl.rt.malloc(ROWS * PITCH, 0)

ok(acl.rt.memset_async(image, ROWS * PITCH, 0, ROWS * PITCH, stream))
ok(acl.rt.memcpy2d_async(image, PITCH, host, PITCH, PITCH // 2, ROWS, H2D, stream))
ok(acl.rt.memcpy_async(host, ROWS * PITCH, image, ROWS * PITCH, D2H, stream))
ok(acl.rt.synchronize_stream(stream))

ok(acl.rt.free(image))
ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
