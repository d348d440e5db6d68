"""Offline-model inference, the call sequence of Ascend/samples' pyACL classification samples
(python/level2_simple_inference/1_classification/resnet50_async_imagenet_classification/src/acl_net.py
and its siblings, which import their constants from a sibling constant.py).

acl.init, aclrtSetDevice, aclrtCreateContext, aclrtCreateStream, aclrtGetRunMode, then
acl.mdl.load_from_file and the model description calls that size the input and output buffers
(aclrtMalloc), the H2D copies of the input, acl.mdl.execute and the D2H copies of the output.
Under acl-emu the model is its declaration, ../model/resnet50.om.toml: the script loads it, sizes the input
buffers from its description and copies the input.
"""
import argparse

import numpy as np

import acl
from constant import ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_SUCCESS


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise Exception(f"{what} failed ret={ret}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--model_path", default="../model/resnet50.om")
    args = parser.parse_args()

    print("init resource stage:")
    check("acl.init", acl.init())
    check("acl.rt.set_device", acl.rt.set_device(args.device))
    context, ret = acl.rt.create_context(args.device)
    check("acl.rt.create_context", ret)
    stream, ret = acl.rt.create_stream()
    check("acl.rt.create_stream", ret)
    run_mode, ret = acl.rt.get_run_mode()
    check("acl.rt.get_run_mode", ret)
    print("run mode:", run_mode)

    model_id, ret = acl.mdl.load_from_file(args.model_path)
    check("acl.mdl.load_from_file", ret)
    desc = acl.mdl.create_desc()
    check("acl.mdl.get_desc", acl.mdl.get_desc(desc, model_id))
    inputs = acl.mdl.create_dataset()
    for i in range(acl.mdl.get_num_inputs(desc)):
        size = acl.mdl.get_input_size_by_index(desc, i)
        dev, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
        check("acl.rt.malloc", ret)
        data = np.zeros(size, dtype=np.uint8).tobytes()
        check("acl.rt.memcpy", acl.rt.memcpy(dev, size, acl.util.bytes_to_ptr(data), size,
                                             ACL_MEMCPY_HOST_TO_DEVICE))
        acl.mdl.add_dataset_buffer(inputs, acl.create_data_buffer(dev, size))
    print("model loaded:", model_id, ACL_MEMCPY_DEVICE_TO_HOST)


if __name__ == "__main__":
    main()
