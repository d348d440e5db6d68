"""Synchronous host <-> device copies, the call sequence of Ascend/samples' pyACL memory sample
(python/level1_single_api/1_acl/2_memory_management/memcpy_host_device_python).

Per release cycle: aclrtMallocHost + aclrtMalloc (once per cycle, or once overall with
--memory_reuse), aclrtMemset of the host buffer to 7, a host-to-host aclrtMemcpy into a `bytes`
object to look at it, aclrtMemcpy host to device, aclrtMemcpy device to host to look at the device
copy and, with --write_back_host, a second page-locked buffer written back from the device. The
device memory is queried with aclrtGetMemInfo (DDR, then HBM) before, per cycle and after. Each
copy read back is checked to be all 7s here (the public sample only logs it), and where the public
sample retries a failed call forever, this one reports it and exits 1.
"""
import argparse
import sys

import numpy as np

import acl

ACL_SUCCESS = 0
ACL_DDR_MEM = 0
ACL_HBM_MEM = 1
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_HOST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
FILL = 7


def fail(what, ret):
    """Report a failed call and stop, with the return code in the message."""
    print(f"{what} failed ret = {ret}")
    sys.exit(1)


def read_back(what, src, size, kind):
    """Copy `size` bytes at src into a bytes object (through bytes_to_ptr) and check they are all FILL."""
    holder = np.ones(size, dtype=np.byte).tobytes()
    ret = acl.rt.memcpy(acl.util.bytes_to_ptr(holder), size, src, size, kind)
    if ret != ACL_SUCCESS:
        fail("acl.rt.memcpy", ret)
    seen = np.frombuffer(holder, dtype=np.byte)
    ok = bool((seen == FILL).all())
    print(f"{what}: {size} bytes, all {FILL}: {ok}")
    if not ok:
        sys.exit(1)


def query_memory(cycle, release):
    for name, attr in (("DDR", ACL_DDR_MEM), ("HBM", ACL_HBM_MEM)):
        free, total, ret = acl.rt.get_mem_info(attr)
        if ret != ACL_SUCCESS:
            fail("acl.rt.get_mem_info", ret)
        print(f"cycle {cycle}, release {release}: {name} free {free} of {total} bytes")


def alloc_pair(size):
    host, ret = acl.rt.malloc_host(size)
    if ret != ACL_SUCCESS:
        fail("acl.rt.malloc_host", ret)
    dev, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
    if ret != ACL_SUCCESS:
        fail("acl.rt.malloc", ret)
    return host, dev


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--release_cycle", type=int, default=2)
    parser.add_argument("--number_of_cycles", type=int, default=1)
    parser.add_argument("--device_id", type=int, default=0)
    parser.add_argument("--memory_size", type=int, default=1 << 20)
    parser.add_argument("--write_back_host", action="store_true")
    parser.add_argument("--memory_reuse", action="store_true")
    args = parser.parse_args()
    size = args.memory_size

    for what, ret in (("acl.init", acl.init()), ("acl.rt.set_device", acl.rt.set_device(args.device_id))):
        if ret != ACL_SUCCESS:
            fail(what, ret)
    context, ret = acl.rt.create_context(args.device_id)
    if ret != ACL_SUCCESS:
        fail("acl.rt.create_context", ret)
    query_memory(0, 0)

    for cycle in range(args.number_of_cycles):
        hosts, devs = [], []
        if args.memory_reuse:
            host, dev = alloc_pair(size)
            hosts.append(host)
            devs.append(dev)
        for release in range(args.release_cycle):
            if not args.memory_reuse:
                host, dev = alloc_pair(size)
                hosts.append(host)
                devs.append(dev)
            ret = acl.rt.memset(host, size, FILL, size)
            if ret != ACL_SUCCESS:
                fail("acl.rt.memset", ret)
            read_back("host buffer after memset", host, size, ACL_MEMCPY_HOST_TO_HOST)
            ret = acl.rt.memcpy(dev, size, host, size, ACL_MEMCPY_HOST_TO_DEVICE)
            if ret != ACL_SUCCESS:
                fail("acl.rt.memcpy", ret)
            read_back("device buffer", dev, size, ACL_MEMCPY_DEVICE_TO_HOST)
            if args.write_back_host:
                back, ret = acl.rt.malloc_host(size)
                if ret != ACL_SUCCESS:
                    fail("acl.rt.malloc_host", ret)
                ret = acl.rt.memcpy(back, size, dev, size, ACL_MEMCPY_DEVICE_TO_HOST)
                if ret != ACL_SUCCESS:
                    fail("acl.rt.memcpy", ret)
                read_back("written back to the host", back, size, ACL_MEMCPY_HOST_TO_HOST)
                ret = acl.rt.free_host(back)
                if ret != ACL_SUCCESS:
                    fail("acl.rt.free_host", ret)
            query_memory(cycle, release + 1)
        for host in hosts:
            ret = acl.rt.free_host(host)
            if ret != ACL_SUCCESS:
                fail("acl.rt.free_host", ret)
        for dev in devs:
            ret = acl.rt.free(dev)
            if ret != ACL_SUCCESS:
                fail("acl.rt.free", ret)
        query_memory(cycle + 1, args.release_cycle)

    for what, call, arg in (("acl.rt.destroy_context", acl.rt.destroy_context, context),
                            ("acl.rt.reset_device", acl.rt.reset_device, args.device_id)):
        ret = call(arg)
        if ret != ACL_SUCCESS:
            fail(what, ret)
    ret = acl.finalize()
    if ret != ACL_SUCCESS:
        fail("acl.finalize", ret)
    print("run success!")


if __name__ == "__main__":
    main()
