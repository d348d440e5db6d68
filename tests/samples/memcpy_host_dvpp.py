"""Host <-> DVPP memory copies, the call sequence of Ascend/samples' pyACL memory sample
(python/level1_single_api/1_acl/2_memory_management/memcpy_host_DVPP_python).

As the synchronous host/device sample, with the device buffer from acl.media.dvpp_malloc (freed with
acl.media.dvpp_free) and no write-back: aclrtMallocHost, dvpp_malloc, aclrtMemset of the host
buffer to 7, a host-to-host aclrtMemcpy into a `bytes` object, aclrtMemcpy host to DVPP memory,
then a read of the host buffer through aclrtMemcpy with kind DEVICE_TO_HOST (as the public sample
does: the sync copy infers the direction from the addresses). This version adds a real read of the
DVPP buffer and checks that every read is all 7s; where the public sample retries a failed call
forever, it reports the failure and exits 1.
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
    parser.add_argument("--memory_reuse", action="store_true")
    args = parser.parse_args()
    size = args.memory_size

    ok_or_exit("acl.init", acl.init())
    ok_or_exit("acl.rt.set_device", acl.rt.set_device(args.device_id))
    context, ret = acl.rt.create_context(args.device_id)
    ok_or_exit("acl.rt.create_context", ret)
    query_memory(0, 0)

    def allocate():
        host, ret = acl.rt.malloc_host(size)
        ok_or_exit("acl.rt.malloc_host", ret)
        dvpp, ret = acl.media.dvpp_malloc(size)
        ok_or_exit("acl.media.dvpp_malloc", ret)
        hosts.append(host)
        dvpps.append(dvpp)
        return host, dvpp

    for cycle in range(args.number_of_cycles):
        hosts, dvpps = [], []
        if args.memory_reuse:
            host, dvpp = allocate()
        for release in range(args.release_cycle):
            if not args.memory_reuse:
                host, dvpp = allocate()
            ok_or_exit("acl.rt.memset", acl.rt.memset(host, size, FILL, size))
            check_bytes("host buffer after memset", host, size, ACL_MEMCPY_HOST_TO_HOST)
            ok_or_exit("acl.rt.memcpy", acl.rt.memcpy(dvpp, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE))
            check_bytes("host buffer read with kind DEVICE_TO_HOST", host, size, ACL_MEMCPY_DEVICE_TO_HOST)
            check_bytes("DVPP buffer", dvpp, size, ACL_MEMCPY_DEVICE_TO_HOST)
            query_memory(cycle, release + 1)
        for host in hosts:
            ok_or_exit("acl.rt.free_host", acl.rt.free_host(host))
        for dvpp in dvpps:
            ok_or_exit("acl.media.dvpp_free", acl.media.dvpp_free(dvpp))
        query_memory(cycle + 1, args.release_cycle)

    ok_or_exit("acl.rt.destroy_context", acl.rt.destroy_context(context))
    ok_or_exit("acl.rt.reset_device", acl.rt.reset_device(args.device_id))
    ok_or_exit("acl.finalize", acl.finalize())
    print("run success!")


if __name__ == "__main__":
    main()
