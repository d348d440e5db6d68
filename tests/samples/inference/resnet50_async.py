"""Asynchronous ResNet-50 classification with callbacks: the call sequence of Ascend/samples'
python/level2_simple_inference/1_classification/resnet50_async_imagenet_classification/src/acl_net.py
(fc2aea93e48be8f8cee51d0c6c1b13a08155f83a), written for acl-emu's tests.

The same pyACL calls in the same order with the same checks: acl.init, set_device, create_context,
create_stream, acl.mdl.load_from_file, create_desc, get_desc; one memory pool per --mem_pools, each an input
dataset (rt.malloc NORMAL_ONLY of the picture's size and a blocking H2D copy) and an output dataset sized by
the description; acl.util.start_thread of a thread that sets the context and loops on rt.process_report(50),
rt.subscribe_report; --execute_times acl.mdl.execute_async over the pools in turn on the one stream, and every
--callback_interval executions rt.launch_callback (blocking) of a callback that copies each output to the host
(get_data_buffer_addr, get_data_buffer_size_v2, malloc_host, a blocking D2H copy, get_cur_output_dims);
synchronize_stream, unsubscribe_report, stop_thread; then unload, destroy_desc, each dataset's buffers freed
and destroyed, destroy_stream, destroy_context, reset_device, finalize. The pictures are generated
(images.py), the model is its declaration, model/resnet50.om.toml. Each callback prints
"execution <n> top5: [...]".

In that sequence every input is copied before the first execution: no copy overlaps an execution. With
--prefetch (not in the public sample) each execution's input is copied from pinned host memory on a second
stream (rt.memcpy_async), which the execution stream waits for with an event; the copy of one pool then runs
while the previous pool executes, and a pool's input is copied again only after its previous execution (a
second event).
"""
import argparse
import os
import sys

import numpy as np

import acl
from constant import (ACL_MEM_MALLOC_NORMAL_ONLY, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
                      ACL_MEMCPY_HOST_TO_HOST, ACL_SUCCESS, NPY_FLOAT32)
from images import caffe_input


def check_ret(message, ret):
    if ret != ACL_SUCCESS:
        raise Exception("{} failed ret={}".format(message, ret))


class Net:
    def __init__(self, device_id, execute_times, callback_interval, memory_pool, model_path, prefetch=False):
        self.device_id = device_id
        self.model_path = model_path
        self.model_id = None
        self.context = None
        self.stream = None
        self.excute_times = execute_times
        self.callback_interval = callback_interval
        self.is_callback = True if callback_interval else False
        self.memory_pool = memory_pool
        self.prefetch = prefetch
        self.copy_stream = None
        self.staging = {}  # --prefetch: input dataset -> its pinned host copy, device buffer and events
        self.input_num = 0
        self.output_num = 0
        self.model_desc = None
        self.dataset_list = []
        self.executions = 0
        self.exit_flag = False
        self.init_resource()

    def release_resource(self):
        print("release source stage:")
        if self.model_id:
            check_ret("acl.mdl.unload", acl.mdl.unload(self.model_id))
        if self.model_desc:
            check_ret("acl.mdl.destroy_desc", acl.mdl.destroy_desc(self.model_desc))
        self._destroy_dataset_and_databuf()
        self._release_staging()
        if self.stream:
            check_ret("acl.rt.destroy_stream", acl.rt.destroy_stream(self.stream))
        if self.context:
            check_ret("acl.rt.destroy_context", acl.rt.destroy_context(self.context))
        check_ret("acl.rt.reset_device", acl.rt.reset_device(self.device_id))
        check_ret("acl.finalize", acl.finalize())
        print("release source stage success")

    def _release_staging(self):
        for staged in self.staging.values():
            check_ret("acl.rt.free_host", acl.rt.free_host(staged["host"]))
            check_ret("acl.rt.destroy_event", acl.rt.destroy_event(staged["ready"]))
            check_ret("acl.rt.destroy_event", acl.rt.destroy_event(staged["done"]))
        self.staging = {}
        if self.copy_stream:
            check_ret("acl.rt.destroy_stream", acl.rt.destroy_stream(self.copy_stream))

    def init_resource(self):
        print("init resource stage:")
        check_ret("acl.init", acl.init())
        check_ret("acl.rt.set_device", acl.rt.set_device(self.device_id))
        self.context, ret = acl.rt.create_context(self.device_id)
        check_ret("acl.rt.create_context", ret)
        self.stream, ret = acl.rt.create_stream()
        check_ret("acl.rt.create_stream", ret)
        if self.prefetch:
            self.copy_stream, ret = acl.rt.create_stream()
            check_ret("acl.rt.create_stream", ret)
        self._get_model_info()
        print("init resource stage success")

    def _get_model_info(self):
        self.model_id, ret = acl.mdl.load_from_file(self.model_path)
        check_ret("acl.mdl.load_from_file", ret)
        self.model_desc = acl.mdl.create_desc()
        check_ret("acl.mdl.get_desc", acl.mdl.get_desc(self.model_desc, self.model_id))
        self.input_num = acl.mdl.get_num_inputs(self.model_desc)
        self.output_num = acl.mdl.get_num_outputs(self.model_desc)

    def _load_input_data(self, images_data):
        bytes_data = images_data.tobytes()
        img_ptr = acl.util.bytes_to_ptr(bytes_data)
        image_buffer_size = images_data.size * images_data.itemsize
        img_device, ret = acl.rt.malloc(image_buffer_size, ACL_MEM_MALLOC_NORMAL_ONLY)
        check_ret("acl.rt.malloc", ret)
        if self.prefetch:  # the picture waits in pinned memory; each execution copies it (_copy_input)
            staged = self._stage(img_device, img_ptr, image_buffer_size)
        else:
            ret = acl.rt.memcpy(img_device, image_buffer_size, img_ptr, image_buffer_size,
                                ACL_MEMCPY_HOST_TO_DEVICE)
            check_ret("acl.rt.memcpy", ret)
        img_dataset = acl.mdl.create_dataset()
        img_data_buffer = acl.create_data_buffer(img_device, image_buffer_size)
        if img_data_buffer is None:
            raise Exception("can't create data buffer, create input failed!!!")
        _, ret = acl.mdl.add_dataset_buffer(img_dataset, img_data_buffer)
        if ret != ACL_SUCCESS:
            check_ret("acl.destroy_data_buffer", acl.destroy_data_buffer(img_data_buffer))
        if self.prefetch:
            self.staging[img_dataset] = staged
        return img_dataset

    def _stage(self, img_device, img_ptr, size):
        host, ret = acl.rt.malloc_host(size)
        check_ret("acl.rt.malloc_host", ret)
        check_ret("acl.rt.memcpy", acl.rt.memcpy(host, size, img_ptr, size, ACL_MEMCPY_HOST_TO_HOST))
        staged = {"host": host, "device": img_device, "size": size, "used": False}
        for name in ("ready", "done"):
            staged[name], ret = acl.rt.create_event()
            check_ret("acl.rt.create_event", ret)
        return staged

    def _copy_input(self, img_data):
        """--prefetch: copy the pool's input on the copy stream once its previous execution has read it; the
        execution stream waits for the copy."""
        staged = self.staging[img_data]
        if staged["used"]:
            check_ret("acl.rt.stream_wait_event", acl.rt.stream_wait_event(self.copy_stream, staged["done"]))
        ret = acl.rt.memcpy_async(staged["device"], staged["size"], staged["host"], staged["size"],
                                  ACL_MEMCPY_HOST_TO_DEVICE, self.copy_stream)
        check_ret("acl.rt.memcpy_async", ret)
        check_ret("acl.rt.record_event", acl.rt.record_event(staged["ready"], self.copy_stream))
        check_ret("acl.rt.stream_wait_event", acl.rt.stream_wait_event(self.stream, staged["ready"]))
        staged["used"] = True

    def _load_output_data(self):
        output_data = acl.mdl.create_dataset()
        for i in range(self.output_num):
            temp_buffer_size = acl.mdl.get_output_size_by_index(self.model_desc, i)
            temp_buffer, ret = acl.rt.malloc(temp_buffer_size, ACL_MEM_MALLOC_NORMAL_ONLY)
            check_ret("acl.rt.malloc", ret)
            data_buf = acl.create_data_buffer(temp_buffer, temp_buffer_size)
            _, ret = acl.mdl.add_dataset_buffer(output_data, data_buf)
            if ret != ACL_SUCCESS:
                check_ret("acl.destroy_data_buffer", acl.destroy_data_buffer(data_buf))
        return output_data

    def _data_interaction(self, images_dataset_list):
        print("data interaction from host to device")
        for idx in range(self.memory_pool):
            img_input = self._load_input_data(images_dataset_list[idx % len(images_dataset_list)])
            infer_ouput = self._load_output_data()
            self.dataset_list.append([img_input, infer_ouput])
        print("data interaction from host to device success")

    def _destroy_dataset_and_databuf(self):
        while self.dataset_list:
            dataset = self.dataset_list.pop()
            for temp in dataset:
                for i in range(acl.mdl.get_dataset_num_buffers(temp)):
                    data_buf_temp = acl.mdl.get_dataset_buffer(temp, i)
                    if data_buf_temp:
                        check_ret("acl.rt.free", acl.rt.free(acl.get_data_buffer_addr(data_buf_temp)))
                        check_ret("acl.destroy_data_buffer", acl.destroy_data_buffer(data_buf_temp))
                check_ret("acl.mdl.destroy_dataset", acl.mdl.destroy_dataset(temp))

    def _process_callback(self, args_list):
        context, time_out = args_list
        acl.rt.set_context(context)
        while self.callback_interval:
            acl.rt.process_report(time_out)
            if self.exit_flag:
                print("exit acl.rt.process_report")
                break

    def run(self, images):
        self._data_interaction(images)
        tid, ret = acl.util.start_thread(self._process_callback, [self.context, 50])
        check_ret("acl.util.start_thread", ret)
        check_ret("acl.rt.subscribe_report", acl.rt.subscribe_report(tid, self.stream))
        self.forward()
        check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(self.stream))
        check_ret("acl.rt.unsubscribe_report", acl.rt.unsubscribe_report(tid, self.stream))
        self.exit_flag = True
        check_ret("acl.util.stop_thread", acl.util.stop_thread(tid))

    def _get_callback(self, idx):
        if (idx + 1) % self.callback_interval == 0:
            acl.rt.launch_callback(self.callback_func, self.excute_dataset, 1, self.stream)
            self.dataset_list.extend(self.excute_dataset)
            self.excute_dataset = []

    def forward(self):
        print("execute stage:")
        self.excute_dataset = []
        for idx in range(self.excute_times):
            img_data, infer_output = self.dataset_list.pop(0)
            if self.prefetch:
                self._copy_input(img_data)
            ret = acl.mdl.execute_async(self.model_id, img_data, infer_output, self.stream)
            check_ret("acl.mdl.execute_async", ret)
            if self.prefetch:
                check_ret("acl.rt.record_event", acl.rt.record_event(self.staging[img_data]["done"], self.stream))
            if self.is_callback:
                self.excute_dataset.append([img_data, infer_output])
                self._get_callback(idx)
        print("execute stage success")

    def callback_func(self, delete_list):
        print("callback func stage:")
        for temp in delete_list:
            _, infer_output = temp
            for i in range(acl.mdl.get_dataset_num_buffers(infer_output)):
                temp_output_buf = acl.mdl.get_dataset_buffer(infer_output, i)
                infer_output_ptr = acl.get_data_buffer_addr(temp_output_buf)
                infer_output_size = acl.get_data_buffer_size_v2(temp_output_buf)
                output_host, ret = acl.rt.malloc_host(infer_output_size)
                check_ret("acl.rt.malloc_host", ret)
                ret = acl.rt.memcpy(output_host, infer_output_size, infer_output_ptr, infer_output_size,
                                    ACL_MEMCPY_DEVICE_TO_HOST)
                check_ret("acl.rt.memcpy", ret)
                result = self.get_result([{"buffer": output_host, "size": infer_output_size}])
                vals = np.array(result).flatten()
                top_k = [int(j) for j in vals.argsort()[-1:-6:-1]]
                print("execution {} top5: {}".format(self.executions, top_k))
            self.executions += 1
        print("callback func stage success")

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


def main():
    current_dir = os.path.dirname(os.path.abspath(sys.argv[0]))  # the script's folder, as `python script.py` runs it
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--execute_times", type=int, default=4)
    parser.add_argument("--callback_interval", type=int, default=1)
    parser.add_argument("--mem_pools", type=int, default=4)
    parser.add_argument("--model_path", type=str, default=os.path.join(current_dir, "model/resnet50.om"))
    parser.add_argument("--images", type=int, default=2, help="how many generated pictures to classify")
    parser.add_argument("--prefetch", action="store_true", help="copy each execution's input on a second stream")
    args = parser.parse_args()
    print("Using device id:{}\nexecute_times:{}\ncallback_interval:{}\nmem_pools:{}\nmodel path:{}".format(
        args.device, args.execute_times, args.callback_interval, args.mem_pools, args.model_path))
    net = Net(args.device, args.execute_times, args.callback_interval, args.mem_pools, args.model_path,
              args.prefetch)
    net.run([caffe_input(seed) for seed in range(args.images)])
    print("run finish!!!")
    net.release_resource()


if __name__ == "__main__":
    main()
