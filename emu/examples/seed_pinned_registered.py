import acl  # run under the emulator: python -m emu run this_file.py

"""Host page-locked memory (host page-locked memory usage samples).

1. aclrtMallocHost memory, an asynchronous H2D copy, aclrtSynchronizeStream.
2. Pageable memory registered with aclrtHostRegisterV2(PINNED | MAPPED); a kernel
   reads it through the device address from aclrtHostGetDevicePointer.
3. VA-consistent host memory: aclrtMallocHostWithCfg with VA_FLAG, then
   aclrtHostRegister gives a device address equal to the host address.
"""
import sys
import warnings

import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_NORMAL_ONLY = 2
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_HOST_REG_MAPPED = 0x2
ACL_HOST_REG_PINNED = 0x10000000
ACL_HOST_REGISTER_MAPPED = 0
ACL_RT_MEM_ATTR_VA_FLAG = 3
NPY_UINT8 = 2

SIZE = 64 << 10

# numpy_to_ptr is deprecated in pyACL but is the way to show numpy memory to ACL
warnings.filterwarnings("ignore", "acl.util.numpy_to_ptr is deprecated")


def check(what, ret):
    if ret != ACL_SUCCESS:
        print(f"{what} failed: ret = {ret} ({acl.get_recent_err_msg()})")
        sys.exit(1)


def verify(what, got, expected):
    ok = np.array_equal(got, expected)
    print(f"{what}: {'bytes verified' if ok else 'WRONG BYTES'}")
    if not ok:
        sys.exit(1)


def read_device(dev_ptr):
    out = np.zeros(SIZE, dtype=np.uint8)
    check("memcpy D2H", acl.rt.memcpy(acl.util.numpy_to_ptr(out), SIZE, dev_ptr, SIZE, ACL_MEMCPY_DEVICE_TO_HOST))
    return out


def pinned_h2d(stream):
    host_ptr, ret = acl.rt.malloc_host(SIZE); check("malloc_host", ret)
    device_ptr, ret = acl.rt.malloc(SIZE, ACL_MEM_MALLOC_NORMAL_ONLY); check("malloc", ret)
    data = acl.util.ptr_to_numpy(host_ptr, (SIZE,), NPY_UINT8)
    data[:] = np.arange(SIZE) % 253
    check("memcpy_async H2D", acl.rt.memcpy_async(device_ptr, SIZE, host_ptr, SIZE, ACL_MEMCPY_HOST_TO_DEVICE,
                                                  stream))
    check("synchronize_stream", acl.rt.synchronize_stream(stream))
    verify("page-locked memory, async H2D", read_device(device_ptr), data)
    check("free", acl.rt.free(device_ptr))
    check("free_host", acl.rt.free_host(host_ptr))


def registered_kernel(stream):
    host = np.arange(SIZE).astype(np.uint8)  # pageable memory, as malloc(size)
    host_ptr = acl.util.numpy_to_ptr(host)
    check("host_register_v2", acl.rt.host_register_v2(host_ptr, SIZE, ACL_HOST_REG_PINNED | ACL_HOST_REG_MAPPED))
    device_ptr, ret = acl.rt.host_get_device_pointer(host_ptr, 0); check("host_get_device_pointer", ret)
    print(f"registered host memory 0x{host_ptr:x} is at device address 0x{device_ptr:x}")

    def invert(mapped, out):  # the task reads the host memory through the device address
        np.bitwise_not(mapped, out=out)

    dev_out, ret = acl.rt.malloc(SIZE, ACL_MEM_MALLOC_NORMAL_ONLY); check("malloc", ret)
    check("launch_kernel", acl.rt.launch_kernel(invert, [(device_ptr, SIZE), (dev_out, SIZE)], stream, 10.0))
    check("synchronize_stream", acl.rt.synchronize_stream(stream))
    verify("registered memory read by a kernel", read_device(dev_out), ~host)
    check("free", acl.rt.free(dev_out))
    check("host_unregister", acl.rt.host_unregister(host_ptr))
    del host  # free(hostPtr)


def va_consistent(stream):
    cfg = [{"attr": ACL_RT_MEM_ATTR_VA_FLAG, "value": 1}]
    host_ptr, ret = acl.rt.malloc_host_with_cfg(SIZE, cfg); check("malloc_host_with_cfg", ret)
    device_ptr, ret = acl.rt.host_register(host_ptr, SIZE, ACL_HOST_REGISTER_MAPPED); check("host_register", ret)
    mapped, ret = acl.rt.host_get_device_pointer(host_ptr, 0); check("host_get_device_pointer", ret)
    print(f"VA_FLAG host memory 0x{host_ptr:x}: device address 0x{device_ptr:x}, "
          f"same address: {device_ptr == host_ptr == mapped}")
    if not device_ptr == host_ptr == mapped:
        sys.exit(1)
    data = acl.util.ptr_to_numpy(host_ptr, (SIZE,), NPY_UINT8)
    data[:] = 0x5A
    dev, ret = acl.rt.malloc(SIZE, ACL_MEM_MALLOC_NORMAL_ONLY); check("malloc", ret)
    check("memcpy_async H2D", acl.rt.memcpy_async(dev, SIZE, host_ptr, SIZE, ACL_MEMCPY_HOST_TO_DEVICE, stream))
    check("synchronize_stream", acl.rt.synchronize_stream(stream))
    verify("VA-consistent memory, async H2D", read_device(dev), data)
    check("free", acl.rt.free(dev))
    check("host_unregister", acl.rt.host_unregister(host_ptr))
    check("free_host", acl.rt.free_host(host_ptr))


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    stream, ret = acl.rt.create_stream(); check("create_stream", ret)
    pinned_h2d(stream)
    registered_kernel(stream)
    va_consistent(stream)
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())
    print("run success!")


if __name__ == "__main__":
    main()
