"""Asynchronous copies on a stream, the call sequence of Ascend/samples' pyACL memory sample
(python/level1_single_api/1_acl/2_memory_management/memcpy_host_device_async_python).

Two streams are created (the sample uses the first). Per release cycle: aclrtMallocHost, an
aclrtMemsetAsync of that page-locked buffer to 7, acl.media.dvpp_malloc for the device buffer,
synchronize, look at the host buffer with a host-to-host aclrtMemcpy into a `bytes` object, an
aclrtMemcpyAsync host to device, a second aclrtMallocHost, a memory query, synchronize, look at the
first host buffer again through aclrtMemcpy called with DEVICE_TO_HOST (its source is host memory:
the sync copy infers the direction), an aclrtMemcpyAsync device to host into the second buffer,
aclrtFreeHost of the first buffer while that copy is queued, synchronize, aclrtFreeHost of the
second. The device buffers are freed with acl.media.dvpp_free after the cycle.

Unlike the public sample, this one also checks the bytes: every read is all 7s, and the second host
buffer (which the public sample frees unread) is read before it is freed. Where the public sample
retries a failed call forever, this one reports it and exits 1.
"""
import argparse
import sys

import numpy as np

import acl

ACL_SUCCESS = 0
ACL_DDR_MEM = 0
ACL_HBM_MEM = 1
ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
FILL = 7


def ok_or_exit(what, ret):
    if ret != ACL_SUCCESS:
        print(f"{what} failed ret = {ret}")
        sys.exit(1)


def check_bytes(what, src, size, kind):
    holder = np.ones(size, dtype=np.byte).tobytes()
    ok_or_exit("acl.rt.memcpy", acl.rt.memcpy(acl.util.bytes_to_ptr(holder), size, src, size, kind))
    good = bool((np.frombuffer(holder, dtype=np.byte) == FILL).all())
    print(f"{what}: {size} bytes, all {FILL}: {good}")
    if not good:
        sys.exit(1)


def query_memory(cycle, release):
    for name, attr in (("DDR", ACL_DDR_MEM), ("HBM", ACL_HBM_MEM)):
        free, total, ret = acl.rt.get_mem_info(attr)
        ok_or_exit("acl.rt.get_mem_info", ret)
        print(f"cycle {cycle}, release {release}: {name} free {free} of {total} bytes")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--release_cycle", type=int, default=2)
    parser.add_argument("--number_of_cycles", type=int, default=1)
    parser.add_argument("--device_id", type=int, default=0)
    parser.add_argument("--memory_size", type=int, default=1 << 20)
    args = parser.parse_args()
    size = args.memory_size

    ok_or_exit("acl.init", acl.init())
    ok_or_exit("acl.rt.set_device", acl.rt.set_device(args.device_id))
    context, ret = acl.rt.create_context(args.device_id)
    ok_or_exit("acl.rt.create_context", ret)
    stream, ret = acl.rt.create_stream()
    ok_or_exit("acl.rt.create_stream", ret)
    spare_stream, ret = acl.rt.create_stream()  # created and left unused, as in the public sample
    ok_or_exit("acl.rt.create_stream", ret)
    query_memory(0, 0)

    for cycle in range(args.number_of_cycles):
        device_buffers = []
        for release in range(args.release_cycle):
            host, ret = acl.rt.malloc_host(size)
            ok_or_exit("acl.rt.malloc_host", ret)
            ok_or_exit("acl.rt.memset_async", acl.rt.memset_async(host, size, FILL, size, stream))
            dev, ret = acl.media.dvpp_malloc(size)
            ok_or_exit("acl.media.dvpp_malloc", ret)
            device_buffers.append(dev)
            ok_or_exit("acl.rt.synchronize_stream", acl.rt.synchronize_stream(stream))
            check_bytes("host buffer after memset_async", host, size, ACL_MEMCPY_HOST_TO_HOST)
            ok_or_exit("acl.rt.memcpy_async",
                       acl.rt.memcpy_async(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE, stream))
            second, ret = acl.rt.malloc_host(size)
            ok_or_exit("acl.rt.malloc_host", ret)
            query_memory(cycle, release)
            ok_or_exit("acl.rt.synchronize_stream", acl.rt.synchronize_stream(stream))
            # the public sample's kind: DEVICE_TO_HOST, with a host source
            check_bytes("host buffer read with kind DEVICE_TO_HOST", host, size, ACL_MEMCPY_DEVICE_TO_HOST)
            ok_or_exit("acl.rt.memcpy_async",
                       acl.rt.memcpy_async(second, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST, stream))
            ok_or_exit("acl.rt.free_host", acl.rt.free_host(host))  # while the D2H copy is queued
            ok_or_exit("acl.rt.synchronize_stream", acl.rt.synchronize_stream(stream))
            check_bytes("second host buffer after the async D2H", second, size, ACL_MEMCPY_HOST_TO_HOST)
            ok_or_exit("acl.rt.free_host", acl.rt.free_host(second))
        for dev in device_buffers:
            ok_or_exit("acl.media.dvpp_free", acl.media.dvpp_free(dev))
        query_memory(cycle + 1, args.release_cycle)

    ok_or_exit("acl.rt.destroy_context", acl.rt.destroy_context(context))
    ok_or_exit("acl.rt.reset_device", acl.rt.reset_device(args.device_id))
    ok_or_exit("acl.finalize", acl.finalize())
    print("run success!")


if __name__ == "__main__":
    main()
