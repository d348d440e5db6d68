import acl  # run under the emulator: acl-emu run (or python -m emu run this_file.py)

# What `acl-emu run` runs when given no script: 64 MiB through two streams, H2D then D2D and D2H per chunk. Run
# this way it takes --host-time calls unless told otherwise (--host-time wall, $ACL_EMU_HOST_TIME), so the
# summary's headline counts the calls and the copies, as the time this prints does, not this machine's numpy.

import sys

import numpy as np

# pyACL exports no constants: scripts define their own, as here.
ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3
NPY_UINT8 = 2
ACL_STREAM_STATUS_NOT_READY = 1

CHUNK = 16 << 20  # bytes per chunk
CHUNKS = 4


def check(what, ret):
    if ret != ACL_SUCCESS:
        print(f"{what} failed: ret = {ret} ({acl.get_recent_err_msg()})")
        sys.exit(1)


def main():
    check("acl.init", acl.init())
    check("acl.rt.set_device", acl.rt.set_device(0))
    copy_in, ret = acl.rt.create_stream(); check("create_stream", ret)
    copy_out, ret = acl.rt.create_stream(); check("create_stream", ret)
    start, ret = acl.rt.create_event(); check("create_event", ret)
    stop, ret = acl.rt.create_event(); check("create_event", ret)

    size = CHUNK * CHUNKS
    host_in, ret = acl.rt.malloc_host(size); check("malloc_host", ret)
    host_out, ret = acl.rt.malloc_host(size); check("malloc_host", ret)
    dev_in, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST); check("malloc", ret)
    dev_out, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST); check("malloc", ret)

    data = acl.util.ptr_to_numpy(host_in, (size,), NPY_UINT8)
    data.reshape(-1, 256)[:] = np.arange(256, dtype=np.uint8)  # byte i is i % 256, no temporary
    check("memset", acl.rt.memset(host_out, size, 0, size))

    # chunk i: H2D on one stream, D2D + D2H on the other after an event says the H2D is done
    check("record_event", acl.rt.record_event(start, copy_in))
    for i in range(CHUNKS):
        off = i * CHUNK
        check("memcpy_async", acl.rt.memcpy_async(dev_in + off, CHUNK, host_in + off, CHUNK,
                                                  ACL_MEMCPY_HOST_TO_DEVICE, copy_in))
        ready, ret = acl.rt.create_event(); check("create_event", ret)
        check("record_event", acl.rt.record_event(ready, copy_in))
        check("stream_wait_event", acl.rt.stream_wait_event(copy_out, ready))
        check("memcpy_async", acl.rt.memcpy_async(dev_out + off, CHUNK, dev_in + off, CHUNK,
                                                  ACL_MEMCPY_DEVICE_TO_DEVICE, copy_out))
        check("memcpy_async", acl.rt.memcpy_async(host_out + off, CHUNK, dev_out + off, CHUNK,
                                                  ACL_MEMCPY_DEVICE_TO_HOST, copy_out))
        check("destroy_event", acl.rt.destroy_event(ready))
    check("record_event", acl.rt.record_event(stop, copy_out))

    # The copies are queued, not done: ask the stream (reading host_out now would race with them).
    status, ret = acl.rt.stream_query(copy_out); check("stream_query", ret)
    print(f"before synchronize: copies still running: {status == ACL_STREAM_STATUS_NOT_READY}")
    check("synchronize_stream", acl.rt.synchronize_stream(copy_out))
    result = acl.util.ptr_to_numpy(host_out, (size,), NPY_UINT8)
    print(f"after synchronize:  output equals input: {np.array_equal(result, data)}")
    ms, ret = acl.rt.event_elapsed_time(start, stop); check("event_elapsed_time", ret)
    print(f"{CHUNKS} chunks of {CHUNK >> 20} MiB: H2D, D2D, D2H on two streams took {ms:.3f} ms "
          f"(simulated), {3 * size / (ms / 1e3) / 1e9:.1f} GB/s of copies")
    free, total, ret = acl.rt.get_mem_info(1); check("get_mem_info", ret)
    print(f"device memory: {(total - free) >> 20} MiB in use of {total >> 30} GiB")

    for p in (dev_in, dev_out):
        check("free", acl.rt.free(p))
    for p in (host_in, host_out):
        check("free_host", acl.rt.free_host(p))
    for s in (copy_in, copy_out):
        check("destroy_stream", acl.rt.destroy_stream(s))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())
    print("run success!")


if __name__ == "__main__":
    main()
