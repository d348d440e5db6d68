import acl  # run under the emulator: python -m emu run this_file.py

"""Host-device copy with a kernel between (data replication guide, "Host-Device Copy").

H2D copy, kernel, D2H copy, all on one stream; the host reads its output only
after aclrtSynchronizeStream. myKernel<<<numBlocks, nullptr, stream>>>(devIn, devOut)
is acl.rt.launch_kernel here: a Python function run on the device buffers.
"""
import sys

import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
NPY_UINT8 = 2

SIZE = 1 << 20
KERNEL_US = 50.0


def check(what, ret):
    if ret != ACL_SUCCESS:
        print(f"{what} failed: ret = {ret} ({acl.get_recent_err_msg()})")
        sys.exit(1)


def my_kernel(dev_in, dev_out):
    """devOut[i] = devIn[i] + 1 (bytes, wrapping)."""
    np.add(dev_in, 1, out=dev_out)


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    stream, ret = acl.rt.create_stream(); check("create_stream", ret)

    host_in, ret = acl.rt.malloc_host(SIZE); check("malloc_host", ret)
    host_out, ret = acl.rt.malloc_host(SIZE); check("malloc_host", ret)
    dev_in, ret = acl.rt.malloc(SIZE, ACL_MEM_MALLOC_HUGE_FIRST); check("malloc", ret)
    dev_out, ret = acl.rt.malloc(SIZE, ACL_MEM_MALLOC_HUGE_FIRST); check("malloc", ret)

    data = acl.util.ptr_to_numpy(host_in, (SIZE,), NPY_UINT8)
    data[:] = np.arange(SIZE) % 251
    result = acl.util.ptr_to_numpy(host_out, (SIZE,), NPY_UINT8)
    result[:] = 0

    # Copy the input data from the host to the device.
    check("memcpy_async H2D", acl.rt.memcpy_async(dev_in, SIZE, host_in, SIZE, ACL_MEMCPY_HOST_TO_DEVICE, stream))
    # The kernel runs in order with the preceding copy on the same stream.
    check("launch_kernel", acl.rt.launch_kernel(my_kernel, [(dev_in, SIZE), (dev_out, SIZE)], stream, KERNEL_US))
    # Copy the output data from the device back to the host.
    check("memcpy_async D2H", acl.rt.memcpy_async(host_out, SIZE, dev_out, SIZE, ACL_MEMCPY_DEVICE_TO_HOST, stream))

    print(f"before synchronize: hostOut still zero: {not result.any()}")
    check("synchronize_stream", acl.rt.synchronize_stream(stream))
    expected = (data + 1).astype(np.uint8)
    ok = np.array_equal(result, expected)
    print(f"after synchronize:  hostOut == myKernel(hostIn): {ok}")
    if not ok:
        sys.exit(1)

    check("free", acl.rt.free(dev_in))
    check("free", acl.rt.free(dev_out))
    check("free_host", acl.rt.free_host(host_in))
    check("free_host", acl.rt.free_host(host_out))
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())
    print("run success!")


if __name__ == "__main__":
    main()
