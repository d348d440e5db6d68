import acl  # acl-emu run --sanitize tests/sanitize_cases/batch_destination_overlaps_source_fixed.py

"""The fixed twin: the result is copied out by one batch, the next tile copied in by a second batch after it
on the same stream."""
N = 1 << 16
HOST, DEVICE = 0, 1  # aclrtMemLocationType
NPY_UINT8 = 2
H2D = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}}
D2H = {"dst_loc": {"id": 0, "type": HOST}, "src_loc": {"id": 0, "type": DEVICE}}


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(4 * N)
back, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(4 * N, 0)
acl.util.ptr_to_numpy(host, (4 * N,), NPY_UINT8)[:] = 3

_, ret = acl.rt.memcpy_batch_async([dev], [4 * N], [host], [4 * N], 1, [H2D], [0], 1, stream)
ok(ret)
result = dev + 3 * N  # the previous step's result, in the last tile
_, ret = acl.rt.memcpy_batch_async([back], [N], [result], [N], 1, [D2H], [0], 1, stream)
ok(ret)
_, ret = acl.rt.memcpy_batch_async([dev + 3 * N], [N], [host], [N], 1, [H2D], [0], 1, stream)
ok(ret)
ok(acl.rt.synchronize_stream(stream))

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.free_host(back))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
