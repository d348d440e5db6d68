import acl  # acl-emu run --sanitize tests/sanitize_cases/batch_destination_overlaps_source.py

"""A batch entry reads what another entry writes: one aclrtMemcpyBatchAsync both copies a tile in and copies
the device result of the previous step out, and the tile copied in lands on the bytes copied out. The
entries run in no promised order, so the copy out may read the new tile or the old result."""
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
dsts = [dev + 3 * N, back]  # the new tile lands on the result the second entry copies out
srcs = [host, result]
sizes, attrs = [N, N], [H2D, D2H]
_, ret = acl.rt.memcpy_batch_async(dsts, sizes, srcs, sizes, 2, attrs, [0, 1], 2, stream)  # hazard: first, second
ok(ret)
ok(acl.rt.synchronize_stream(stream))

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.free_host(back))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
