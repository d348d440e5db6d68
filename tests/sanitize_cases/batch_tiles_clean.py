import acl  # acl-emu run --sanitize tests/sanitize_cases/batch_tiles_clean.py

"""Clean control (batch entries): one aclrtMemcpyBatchAsync copies eight tiles in, all from one host buffer
(several entries reading the same bytes is no race), into disjoint tiles of the device buffer; a second
batch copies them out after it on the same stream."""
N = 1 << 14
HOST, DEVICE = 0, 1  # aclrtMemLocationType
NPY_UINT8 = 2
H2D = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}}
D2H = {"dst_loc": {"id": 0, "type": HOST}, "src_loc": {"id": 0, "type": DEVICE}}


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
back, ret = acl.rt.malloc_host(8 * N)
dev, ret = acl.rt.malloc(8 * N, 0)
acl.util.ptr_to_numpy(host, (N,), NPY_UINT8)[:] = 5

tiles = [dev + k * N for k in range(8)]
_, ret = acl.rt.memcpy_batch_async(tiles, [N] * 8, [host] * 8, [N] * 8, 8, [H2D], [0], 1, stream)
ok(ret)
outs = [back + k * N for k in range(8)]
_, ret = acl.rt.memcpy_batch_async(outs, [N] * 8, tiles, [N] * 8, 8, [D2H], [0], 1, stream)
ok(ret)
ok(acl.rt.synchronize_stream(stream))
assert (acl.util.ptr_to_numpy(back, (8 * N,), NPY_UINT8) == 5).all()

ok(acl.rt.free(dev))
for p in (host, back):
    ok(acl.rt.free_host(p))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
