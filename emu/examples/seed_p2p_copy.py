import acl  # run under the emulator: python -m emu run this_file.py

"""Cross-device memory copy (cross-device data exchange sample).

Check peer access between devices 0 and 1, enable it in both directions,
copy 10 bytes from device 0 to device 1, disable it again. The sample copies
uninitialised memory; here device 0's buffer is filled first and device 1's
copy is read back, so the bytes can be checked.
"""
import sys

import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_MEMCPY_DEVICE_TO_DEVICE = 3

SIZE = 10


def check(what, ret):
    if ret != ACL_SUCCESS:
        print(f"{what} failed: ret = {ret} ({acl.get_recent_err_msg()})")
        sys.exit(1)


def main():
    check("acl.init", acl.init())
    can_access_peer, ret = acl.rt.device_can_access_peer(0, 1); check("device_can_access_peer", ret)
    if can_access_peer == 1:
        reserve_flag = 0
        check("set_device(0)", acl.rt.set_device(0))
        check("enable_peer_access(1)", acl.rt.device_enable_peer_access(1, reserve_flag))
        dev0_mem, ret = acl.rt.malloc(SIZE, ACL_MEM_MALLOC_HUGE_FIRST_P2P); check("malloc on device 0", ret)
        payload = bytes(range(1, SIZE + 1))
        check("memcpy H2D", acl.rt.memcpy(dev0_mem, SIZE, acl.util.bytes_to_ptr(payload), SIZE,
                                          ACL_MEMCPY_HOST_TO_DEVICE))

        check("set_device(1)", acl.rt.set_device(1))
        check("enable_peer_access(0)", acl.rt.device_enable_peer_access(0, reserve_flag))
        dev1_mem, ret = acl.rt.malloc(SIZE, ACL_MEM_MALLOC_HUGE_FIRST_P2P); check("malloc on device 1", ret)
        check("memcpy D2D", acl.rt.memcpy(dev1_mem, SIZE, dev0_mem, SIZE, ACL_MEMCPY_DEVICE_TO_DEVICE))

        out = bytes(SIZE)
        check("memcpy D2H", acl.rt.memcpy(acl.util.bytes_to_ptr(out), SIZE, dev1_mem, SIZE,
                                          ACL_MEMCPY_DEVICE_TO_HOST))
        same = np.array_equal(np.frombuffer(out, dtype=np.uint8), np.frombuffer(payload, dtype=np.uint8))
        print(f"device 1 holds device 0's bytes: {same} {list(out)}")
        if not same:
            sys.exit(1)

        check("disable_peer_access(0)", acl.rt.device_disable_peer_access(0))
        check("free on device 1", acl.rt.free(dev1_mem))
        check("reset_device(1)", acl.rt.reset_device(1))
        check("set_device(0)", acl.rt.set_device(0))
        check("disable_peer_access(1)", acl.rt.device_disable_peer_access(1))
        check("free on device 0", acl.rt.free(dev0_mem))
        check("reset_device_force(0)", acl.rt.reset_device_force(0))
        print("P2P copy success")
    else:
        print("current device doesn't support p2p feature")
    check("acl.finalize", acl.finalize())


if __name__ == "__main__":
    main()
