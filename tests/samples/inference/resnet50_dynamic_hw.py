"""ResNet-50 classification at an image-size gear: the call sequence of Ascend/samples'
python/level2_simple_inference/1_classification/resnet50_imagenet_dynamic_hw/src/acl_net.py
(fc2aea93e48be8f8cee51d0c6c1b13a08155f83a), written for acl-emu's tests.

The same pyACL calls in the same order with the same checks: acl.init, set_device, create_context,
acl.mdl.load_from_file, create_desc, get_desc, one device buffer per input (the picture and the gear input
"ascend_mbatch_shape_data") and output sized by the description; per image: a blocking H2D copy of input 0's
size (the largest gear's), datasets of data buffers, get_input_index_by_name("ascend_mbatch_shape_data"),
get_dynamic_hw, the check that the picture's size is a gear (else ACL_ERROR_GE_SHAPE_INVALID),
set_dynamic_hw_size, acl.mdl.execute, the data buffers and datasets destroyed, malloc_host and a blocking D2H
copy per output, get_cur_output_dims, the softmax's top 5, free_host; then the release. The pictures are
generated at --h x --w (images.py), the model is its declaration, model/tf_resnet50.om.toml (gears 112, 224 and
448). Each image prints "image <seed> at <h>x<w> top5: [...]".

One difference: the public sample copies the largest gear's bytes from a host buffer of the picture's size,
reading past its end when the gear is smaller (acl-emu refuses that copy with ACL_ERROR_INVALID_PARAM); here
the host bytes are the picture followed by zeros up to the copied size.
"""
import argparse
import os

import numpy as np

import acl
from constant import (ACL_ERROR_GE_SHAPE_INVALID, ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEMCPY_DEVICE_TO_HOST,
                      ACL_MEMCPY_HOST_TO_DEVICE, ACL_SUCCESS, NPY_FLOAT32)
from images import tf_input

buffer_method = {"in": acl.mdl.get_input_size_by_index, "out": acl.mdl.get_output_size_by_index}


def check_ret(message, ret):
    if ret != ACL_SUCCESS:
        raise Exception("{} failed ret={}".format(message, ret))


class Net:
    def __init__(self, device_id, model_path):
        self.device_id = device_id
        self.model_path = model_path
        self.model_id = None
        self.context = None
        self.input_data = []
        self.output_data = []
        self.model_desc = None
        self.load_input_dataset = None
        self.load_output_dataset = None
        self.height = None
        self.width = None
        self.init_resource()

    def release_resource(self):
        print("Releasing resources stage:")
        check_ret("acl.mdl.unload", acl.mdl.unload(self.model_id))
        if self.model_desc:
            acl.mdl.destroy_desc(self.model_desc)
            self.model_desc = None
        for items in (self.input_data, self.output_data):
            while items:
                check_ret("acl.rt.free", acl.rt.free(items.pop()["buffer"]))
        if self.context:
            check_ret("acl.rt.destroy_context", acl.rt.destroy_context(self.context))
            self.context = None
        check_ret("acl.rt.reset_device", acl.rt.reset_device(self.device_id))
        check_ret("acl.finalize", acl.finalize())
        print("Resources released successfully.")

    def init_resource(self):
        print("init resource stage:")
        check_ret("acl.init", acl.init())
        check_ret("acl.rt.set_device", acl.rt.set_device(self.device_id))
        self.context, ret = acl.rt.create_context(self.device_id)
        check_ret("acl.rt.create_context", ret)
        self.model_id, ret = acl.mdl.load_from_file(self.model_path)
        check_ret("acl.mdl.load_from_file", ret)
        print("model_id:{}".format(self.model_id))
        self.model_desc = acl.mdl.create_desc()
        self._get_model_info()
        print("init resource success")

    def _get_model_info(self):
        check_ret("acl.mdl.get_desc", acl.mdl.get_desc(self.model_desc, self.model_id))
        output_size = acl.mdl.get_num_outputs(self.model_desc)
        input_size = acl.mdl.get_num_inputs(self.model_desc)
        self._gen_data_buffer(input_size, des="in")
        self._gen_data_buffer(output_size, des="out")

    def _gen_data_buffer(self, size, des):
        func = buffer_method[des]
        for i in range(size):
            temp_buffer_size = func(self.model_desc, i)
            temp_buffer, ret = acl.rt.malloc(temp_buffer_size, ACL_MEM_MALLOC_HUGE_FIRST)
            check_ret("acl.rt.malloc", ret)
            items = self.input_data if des == "in" else self.output_data
            items.append({"buffer": temp_buffer, "size": temp_buffer_size})

    def _data_interaction(self, dataset, policy=ACL_MEMCPY_HOST_TO_DEVICE):
        temp_data_buffer = [self.input_data[0]] if policy == ACL_MEMCPY_HOST_TO_DEVICE else self.output_data
        if len(dataset) == 0 and policy == ACL_MEMCPY_DEVICE_TO_HOST:
            for item in self.output_data:
                temp, ret = acl.rt.malloc_host(item["size"])
                if ret != 0:
                    raise Exception("can't malloc_host ret={}".format(ret))
                dataset.append({"size": item["size"], "buffer": temp})
        for i, item in enumerate(temp_data_buffer):
            if policy == ACL_MEMCPY_HOST_TO_DEVICE:
                bytes_data = dataset[i].tobytes().ljust(item["size"], b"\0")  # the copy reads item["size"] bytes
                ptr = acl.util.bytes_to_ptr(bytes_data)
                ret = acl.rt.memcpy(item["buffer"], item["size"], ptr, item["size"], policy)
            else:
                ret = acl.rt.memcpy(dataset[i]["buffer"], item["size"], item["buffer"], item["size"], policy)
            check_ret("acl.rt.memcpy", ret)

    def _gen_dataset(self, type_str):
        dataset = acl.mdl.create_dataset()
        if type_str == "in":
            self.load_input_dataset = dataset
            temp_dataset = self.input_data
        else:
            self.load_output_dataset = dataset
            temp_dataset = self.output_data
        for item in temp_dataset:
            data = acl.create_data_buffer(item["buffer"], item["size"])
            _, ret = acl.mdl.add_dataset_buffer(dataset, data)
            if ret != ACL_SUCCESS:
                check_ret("acl.destroy_data_buffer", acl.destroy_data_buffer(data))

    def _data_from_host_to_device(self, images):
        print("data interaction from host to device")
        self._data_interaction(images, ACL_MEMCPY_HOST_TO_DEVICE)
        self._gen_dataset("in")
        self._gen_dataset("out")
        print("data interaction from host to device success")

    def _data_from_device_to_host(self):
        print("data interaction from device to host")
        res = []
        self._data_interaction(res, ACL_MEMCPY_DEVICE_TO_HOST)
        print("data interaction from device to host success")
        result = self.get_result(res)
        for item in res:
            check_ret("acl.rt.free_host", acl.rt.free_host(item["buffer"]))
        return result

    def run(self, images):
        self._data_from_host_to_device(images)
        self.forward()
        return self._data_from_device_to_host()

    def _model_set_dynamic_info(self):
        index, ret = acl.mdl.get_input_index_by_name(self.model_desc, "ascend_mbatch_shape_data")
        check_ret("get_input_index_by_name", ret)
        hw_info, ret = acl.mdl.get_dynamic_hw(self.model_desc, index)
        check_ret("acl.mdl.get_dynamic_hw", ret)
        if [self.height, self.width] not in hw_info["hw"]:
            check_ret("[dynamic hw] {} is not in {}".format([self.height, self.width], hw_info["hw"]),
                      ACL_ERROR_GE_SHAPE_INVALID)
        ret = acl.mdl.set_dynamic_hw_size(self.model_id, self.load_input_dataset, index, self.height, self.width)
        check_ret("acl.mdl.set_dynamic_hw_size", ret)
        return ret

    def forward(self):
        print("execute stage:")
        check_ret("_model_set_dynamicInfo", self._model_set_dynamic_info())
        ret = acl.mdl.execute(self.model_id, self.load_input_dataset, self.load_output_dataset)
        check_ret("acl.mdl.execute", ret)
        self._destroy_databuffer()
        print("execute stage success")

    def _destroy_databuffer(self):
        for dataset in [self.load_input_dataset, self.load_output_dataset]:
            if not dataset:
                continue
            for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
                data_buf = acl.mdl.get_dataset_buffer(dataset, i)
                if data_buf:
                    check_ret("acl.destroy_data_buffer", acl.destroy_data_buffer(data_buf))
            check_ret("acl.mdl.destroy_dataset", acl.mdl.destroy_dataset(dataset))

    def get_result(self, output_data):
        result = []
        dims, ret = acl.mdl.get_cur_output_dims(self.model_desc, 0)
        check_ret("acl.mdl.get_cur_output_dims", ret)
        out_dim = dims["dims"]
        for temp in output_data:
            if "ptr_to_bytes" in dir(acl.util):
                bytes_data = acl.util.ptr_to_bytes(temp["buffer"], temp["size"])
                data = np.frombuffer(bytes_data, dtype=np.float32).reshape(tuple(out_dim))
            else:
                data = acl.util.ptr_to_numpy(temp["buffer"], tuple(out_dim), NPY_FLOAT32)
            result.append(data)
        return result

    def transfer_pic(self, seed, h, w):
        self.height = h
        self.width = w
        return tf_input(seed, h, w)


def top5(result):
    vals = np.array(result).flatten()
    vals = np.exp(vals) / np.sum(np.exp(vals))
    return [int(j) for j in vals.argsort()[-1:-6:-1]]


def main():
    current_dir = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser()
    parser.add_argument("--h", type=int, default=224)
    parser.add_argument("--w", type=int, default=224)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--model_path", type=str, default=os.path.join(current_dir, "model/tf_resnet50.om"))
    parser.add_argument("--images", type=int, default=2, help="how many generated pictures to classify")
    args = parser.parse_args()
    print("Using device id:{}\nmodel path:{}".format(args.device, args.model_path))
    net = Net(args.device, args.model_path)
    for seed in range(args.images):
        print("images:{}".format(seed))
        img = net.transfer_pic(seed, args.h, args.w)
        result = net.run([img])
        print("image {} at {}x{} top5: {}".format(seed, args.h, args.w, top5(result)))
    print("*****run finish******")
    net.release_resource()


if __name__ == "__main__":
    main()
