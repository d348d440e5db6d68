import acl  # acl-emu run --sanitize tests/sanitize_cases/batch_overlapping_destinations.py

"""Overlapping batch entries: two entries of one aclrtMemcpyBatchAsync write overlapping device bytes (the
second tile's offset is computed one tile too short). A batch's entries run in no promised order, so which
tile's bytes end up there is the luck of the run."""
N = 1 << 16
HOST, DEVICE = 0, 1  # aclrtMemLocationType
NPY_UINT8 = 2
H2D = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}}


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


ok(acl.init())
ok(acl.rt.set_device(0))
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(4 * N)
dev, ret = acl.rt.malloc(4 * N, 0)
acl.util.ptr_to_numpy(host, (4 * N,), NPY_UINT8)[:] = 3

offsets = [0, N, N + N // 2, 3 * N]  # the third tile starts half a tile early: it overlaps the second
dsts = [dev + o for o in offsets]
srcs = [host + k * N for k in range(4)]
_, ret = acl.rt.memcpy_batch_async(dsts, [N] * 4, srcs, [N] * 4, 4, [H2D], [0], 1, stream)  # hazard: first, second
ok(ret)
ok(acl.rt.synchronize_stream(stream))

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
