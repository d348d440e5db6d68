"""A single-operator Add, the call sequence of Ascend/samples' pyACL operator sample
(python/level1_single_api/1_acl/4_blas/acl_operator_add/src/acl_execute_add.py, which imports its
constants from a sibling constant.py).

acl.init, aclrtSetDevice, aclrtCreateContext, aclrtCreateStream, then the operator APIs
(acl.op.create_attr, acl.op.set_model_dir, tensor descriptors, data buffers, acl.op.execute_v2)
around aclrtMalloc / aclrtMemcpy / aclrtSynchronizeStream. A failed call raises, as in the public
sample. acl-emu does not emulate the operator APIs: this script stops at acl.op.create_attr, and the
emulator must say so by name.
"""
import os
import sys

import numpy as np

import acl
from constant import (ACL_FORMAT_ND, ACL_INT32, ACL_MEM_MALLOC_NORMAL_ONLY, ACL_MEMCPY_DEVICE_TO_HOST,
                      ACL_MEMCPY_HOST_TO_DEVICE, ACL_SUCCESS)


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise Exception(f"{what} failed ret={ret}")


def main(device_id=0):
    a = np.arange(128, dtype=np.int32).reshape(8, 16)
    b = np.full((8, 16), 3, dtype=np.int32)
    print("init resource stage:")
    check("acl.init", acl.init())
    check("acl.rt.set_device", acl.rt.set_device(device_id))
    context, ret = acl.rt.create_context(device_id)
    check("acl.rt.create_context", ret)
    stream, ret = acl.rt.create_stream()
    check("acl.rt.create_stream", ret)
    attr = acl.op.create_attr()
    check("acl.op.set_model_dir",
          acl.op.set_model_dir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "op_models")))
    print("init resource success")

    descs, buffers, devs = [], [], []
    for factor in (a, b, None):
        desc = acl.create_tensor_desc(ACL_INT32, [8, 16], ACL_FORMAT_ND)
        size = acl.get_tensor_desc_size(desc)
        dev, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_NORMAL_ONLY)
        check("acl.rt.malloc", ret)
        if factor is not None:
            data = factor.tobytes()
            check("acl.rt.memcpy", acl.rt.memcpy(dev, size, acl.util.bytes_to_ptr(data), size,
                                                 ACL_MEMCPY_HOST_TO_DEVICE))
        descs.append(desc)
        devs.append(dev)
        buffers.append(acl.create_data_buffer(dev, size))
    check("acl.op.execute_v2", acl.op.execute_v2("Add", descs[:2], buffers[:2], descs[2:], buffers[2:], attr,
                                                 stream))
    check("acl.rt.synchronize_stream", acl.rt.synchronize_stream(stream))
    host, ret = acl.rt.malloc_host(a.nbytes)
    check("acl.rt.malloc_host", ret)
    check("acl.rt.memcpy", acl.rt.memcpy(host, a.nbytes, devs[2], a.nbytes, ACL_MEMCPY_DEVICE_TO_HOST))
    out = np.frombuffer(acl.util.ptr_to_bytes(host, a.nbytes), dtype=np.int32).reshape(8, 16)
    print("a + b correct:", bool((out == a + b).all()))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
