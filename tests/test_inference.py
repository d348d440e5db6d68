"""Offline models as declared stand-ins (emu.runtime.inference, acl.mdl.*): the reference's codes and check order,
the silent values of the getters, datasets and data buffers, and executions as device tasks (ordering, overlap,
the sanitizer, deterministic outputs, the declared time per product).

Reference: hicann/ge api/acl/acl_model/model/model.cpp (aclmdlLoadFromFileImpl, aclmdlGetDescImpl,
aclmdlExecuteImpl, ModelExecute, aclmdlSetDynamicBatchSizeImpl, aclmdlGetCurOutputDimsImpl),
model_om2.cpp (the desc and dataset getters), model_common.cpp (GetDims), acl_model_router.cpp
(AclIsOm2ModelByPath, AclIsOm2ModelByData); runtime/v1/graph/load/model_manager/model_manager.cc
(ExecuteModel, GenModelId), davinci_model.cc (InitModelStream, UpdateAllNodeArgs, CheckUserAndModelSize);
hicann/runtime src/acl/aclrt_impl/data_buffer.cpp (aclCreateDataBuffer & co, aclDataTypeSizeImpl)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import emu
from emu import modeldecl
from emu.runtime import inference

DECL = {"name": "resnet50",
        "input": [{"name": "data", "dtype": "float16", "shape": [1, 3, 16, 16], "format": "NCHW"}],
        "output": [{"name": "prob", "dtype": "float32", "shape": [1, 100]}],
        "compute_us": {"910B": 4000, "A3": 1000}}
IN, OUT = 3 * 16 * 16 * 2, 400
BATCHED = {"name": "batched", "dynamic_batch": [1, 2, 4],
           "input": [{"name": "x", "dtype": "float32", "shape": [-1, 8]}],
           "output": [{"name": "y", "dtype": "float32", "shape": [-1, 4]}],
           "compute_us": {"default": {"base": 100, "per_batch": 50}}}
H2D, D2H = 1, 2


@pytest.fixture(autouse=True)
def _forget():
    yield
    modeldecl.forget_models()


@pytest.fixture
def model_path(tmp_path):
    path = tmp_path / "resnet50.om"
    emu.declare_model(path, DECL)
    return str(path)


def setup(product="910B", sanitize=None):
    emu.configure(product, functional=True, sanitize=sanitize)
    import emu.acl as acl
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    return acl


def dataset(acl, *bufs):
    ds = acl.mdl.create_dataset()
    for ptr, size in bufs:
        assert acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size)) == (ds, 0)
    return ds


def loaded(acl, path, in_size=IN, out_size=OUT):
    """(model id, input dataset, output dataset, input ptr, output ptr)."""
    mid, ret = acl.mdl.load_from_file(path)
    assert ret == 0
    din, _ = acl.rt.malloc(max(in_size, 1), 0)
    dout, _ = acl.rt.malloc(max(out_size, 1), 0)
    return mid, dataset(acl, (din, in_size)), dataset(acl, (dout, out_size)), din, dout


def host_bytes(acl, data: bytes) -> int:
    return acl.util.bytes_to_ptr(data)


def model_tasks(rt, name="resnet50"):
    r = rt.records()
    return r[r["api"] == name]


# -- load, query, unload ---------------------------------------------------------------------------------
def test_model_ids_count_from_1_per_process_and_are_never_reused(model_path):
    """model_manager.h max_model_id_ starts at 1; GenModelId only adds."""
    acl = setup()
    ids = [acl.mdl.load_from_file(model_path)[0] for _ in range(2)]
    assert ids == [1, 2]
    assert acl.mdl.unload(1) == 0
    assert acl.mdl.load_from_file(model_path) == (3, 0)


def test_load_from_file_null_path_is_100000_and_a_missing_file_145002(tmp_path):
    """acl_model_router.cpp AclIsOm2ModelByPath: a null path 100000; realpath empty 145002."""
    acl = setup()
    assert acl.mdl.load_from_file(None) == (0, 100000)
    assert acl.mdl.load_from_file(str(tmp_path / "absent.om")) == (0, 145002)
    assert "absent.om" in acl.get_recent_err_msg() and "declaration" in acl.get_recent_err_msg()


def test_an_om_file_without_declaration_is_145000_naming_the_declaration_expected(tmp_path):
    """A model the emulator cannot parse (no declaration stands in for it) is GE's parse error, 145000
    (model_helper.cc ModelHelper::LoadRootModel); the message names the file it looked for, in one line."""
    acl = setup()
    om = tmp_path / "real.om"
    om.write_bytes(b"IMOD" * 8)
    assert acl.mdl.load_from_file(str(om)) == (0, 145000)
    message = acl.get_recent_err_msg()
    assert f"{om}.toml" in message and "no declaration" in message and "\n" not in message, message


def test_a_product_the_declaration_does_not_time_is_refused_at_load(model_path):
    """The declaration has no time for this product: 145000 at load, the message naming the product."""
    acl = setup("950PR")
    assert acl.mdl.load_from_file(model_path) == (0, 145000)
    assert "no time for product 950PR" in acl.get_recent_err_msg()


def test_load_from_mem_codes_and_a_toml_text_as_the_model():
    """AclIsOm2ModelByData: null or size 0 100000, under 4 bytes 145006."""
    acl = setup()
    text = ('name = "mem"\ncompute_us = 10\n[[input]]\nname = "a"\ndtype = "int8"\nshape = [8]\n'
            '[[output]]\nname = "b"\ndtype = "int8"\nshape = [8]\n').encode()
    ptr = host_bytes(acl, text)
    assert acl.mdl.load_from_mem(0, 10) == (0, 100000)
    assert acl.mdl.load_from_mem(ptr, 0) == (0, 100000)
    assert acl.mdl.load_from_mem(ptr, 3) == (0, 145006)
    mid, ret = acl.mdl.load_from_mem(ptr, len(text))
    assert ret == 0 and acl.mdl.query_size_from_mem(ptr, len(text)) == (16, 16, 0)


def test_load_from_mem_finds_a_declared_om_files_bytes(tmp_path):
    om = tmp_path / "m.om"
    om.write_bytes(b"IMOD" + bytes(range(100)))
    emu.declare_model(om, DECL)
    acl = setup()
    data = om.read_bytes()
    assert acl.mdl.load_from_mem(host_bytes(acl, data), len(data)) == (1, 0)


def test_query_size_then_load_with_the_programs_memory(model_path):
    """The C sample's sequence: aclmdlQuerySize, two aclrtMalloc, aclmdlLoadFromFileWithMem; sizes derived
    (inputs + outputs) when undeclared."""
    acl = setup()
    work, weight, ret = acl.mdl.query_size(model_path)
    assert (work, weight, ret) == (IN + OUT, IN + OUT, 0)
    assert acl.mdl.query_size(None) == (0, 0, 100000)
    wp, _ = acl.rt.malloc(work, 0)
    gp, _ = acl.rt.malloc(weight, 0)
    assert acl.mdl.load_from_file_with_mem(model_path, wp, work, gp, weight) == (1, 0)
    assert acl.mdl.load_from_file_with_mem(None, wp, work, gp, weight) == (0, 100000)


def test_unloading_twice_or_a_never_loaded_id_is_145003(model_path):
    """GeExecutor::UnloadModel -> ModelManager::DestroyAicpuSessionForInfer: unknown id 145003."""
    acl = setup()
    mid, _ = acl.mdl.load_from_file(model_path)
    assert acl.mdl.unload(mid) == 0
    assert acl.mdl.unload(mid) == 145003
    assert acl.mdl.unload(77) == 145003


# -- descriptions ---------------------------------------------------------------------------------------
def test_get_desc_fills_the_description_and_pyacl_gives_its_shapes(model_path):
    acl = setup()
    mid, _ = acl.mdl.load_from_file(model_path)
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, mid) == 0
    assert (acl.mdl.get_num_inputs(desc), acl.mdl.get_num_outputs(desc)) == (1, 1)
    assert (acl.mdl.get_input_size_by_index(desc, 0), acl.mdl.get_output_size_by_index(desc, 0)) == (IN, OUT)
    assert acl.mdl.get_input_dims(desc, 0) == ({"name": "data", "dimCount": 4, "dims": [1, 3, 16, 16]}, 0)
    assert acl.mdl.get_input_dims_v2(desc, 0) == acl.mdl.get_input_dims(desc, 0)
    assert acl.mdl.get_output_dims(desc, 0) == ({"name": "prob", "dimCount": 2, "dims": [1, 100]}, 0)
    assert acl.mdl.get_cur_output_dims(desc, 0) == acl.mdl.get_output_dims(desc, 0)
    assert (acl.mdl.get_input_name_by_index(desc, 0), acl.mdl.get_output_name_by_index(desc, 0)) == ("data", "prob")
    assert (acl.mdl.get_input_data_type(desc, 0), acl.mdl.get_output_data_type(desc, 0)) == (1, 0)
    assert (acl.mdl.get_input_format(desc, 0), acl.mdl.get_output_format(desc, 0)) == (0, 2)
    assert acl.mdl.get_input_index_by_name(desc, "data") == (0, 0)
    assert acl.mdl.get_output_index_by_name(desc, "prob") == (0, 0)
    assert acl.mdl.destroy_desc(desc) == 0


def test_get_desc_of_an_unknown_id_is_145003_and_empties_the_description_first(model_path):
    """aclmdlGetDescImpl: modelDesc->Clear(), then GetModelDescInfo: unknown id 145003; null desc 100000."""
    acl = setup()
    mid, _ = acl.mdl.load_from_file(model_path)
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, mid)
    assert acl.mdl.get_desc(desc, 99) == 145003
    assert acl.mdl.get_num_inputs(desc) == 0
    assert acl.mdl.get_desc(0, mid) == 100000
    assert acl.mdl.destroy_desc(0) == 100000


def test_the_getters_fail_silently_with_0_empty_name_and_minus_1(model_path):
    """model_om2.cpp: a null desc or an index past the end gives 0 (counts, sizes), "" (names), -1 (formats,
    data types: ACL_FORMAT_UNDEFINED, ACL_DT_UNDEFINED)."""
    acl = setup()
    mid, _ = acl.mdl.load_from_file(model_path)
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, mid)
    for d, i in ((0, 0), (desc, 5), (desc, -1)):
        assert acl.mdl.get_input_size_by_index(d, i) == acl.mdl.get_output_size_by_index(d, i) == 0
        assert acl.mdl.get_input_name_by_index(d, i) == acl.mdl.get_output_name_by_index(d, i) == ""
        assert acl.mdl.get_input_format(d, i) == acl.mdl.get_output_format(d, i) == -1
        assert acl.mdl.get_input_data_type(d, i) == acl.mdl.get_output_data_type(d, i) == -1
    assert acl.mdl.get_num_inputs(0) == acl.mdl.get_num_outputs(0) == 0


def test_dims_of_a_null_desc_or_an_index_past_the_end_are_100000(model_path):
    """model_common.cpp GetDims: desc NULL, index >= count: ACL_ERROR_INVALID_PARAM."""
    acl = setup()
    mid, _ = acl.mdl.load_from_file(model_path)
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, mid)
    assert acl.mdl.get_input_dims(0, 0)[1] == 100000
    assert acl.mdl.get_output_dims(desc, 1)[1] == 100000
    assert acl.mdl.get_cur_output_dims(desc, 3)[1] == 100000


def test_a_name_of_128_characters_is_given_as_the_conversion_name(tmp_path):
    """model_common.cpp: strlen(name) + 1 > ACL_MAX_TENSOR_NAME_LEN -> acl_modelId_<id>_input_<idx>."""
    emu.declare_model(tmp_path / "long.om", {**DECL, "input": [{**DECL["input"][0], "name": "n" * 128}]})
    acl = setup()
    mid, _ = acl.mdl.load_from_file(str(tmp_path / "long.om"))
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, mid)
    assert acl.mdl.get_input_dims(desc, 0)[0]["name"] == f"acl_modelId_{mid}_input_0"
    assert acl.mdl.get_input_name_by_index(desc, 0) == "n" * 128


def test_an_index_by_name_not_found_is_100000_so_static_models_have_no_gear_input(model_path):
    """acllite asks for "ascend_mbatch_shape_data" on every execute and takes ret != 0 as a static model."""
    acl = setup()
    mid, _ = acl.mdl.load_from_file(model_path)
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, mid)
    assert acl.mdl.get_input_index_by_name(desc, "ascend_mbatch_shape_data") == (0, 100000)
    assert acl.mdl.get_input_index_by_name(0, "data")[1] == 100000
    assert acl.mdl.get_dynamic_batch(desc) == ({"batchCount": 0, "batch": []}, 0)
    assert acl.mdl.get_dynamic_hw(desc, -1) == ({"hwCount": 0, "hw": []}, 0)
    assert acl.mdl.get_dynamic_batch(0)[1] == 100000


# -- datasets and data buffers ----------------------------------------------------------------------------
def test_data_buffers_and_datasets_silent_getters_and_null_checks():
    """data_buffer.cpp: an empty buffer (NULL, 0) is accepted; getters of a null buffer give 0; destroy and
    update of a null one 100000. model_om2.cpp: dataset getters give 0 / NULL on a miss, add of a null 100000."""
    acl = setup()
    empty = acl.create_data_buffer(0, 0)
    assert empty and acl.get_data_buffer_addr(empty) == 0 and acl.get_data_buffer_size_v2(empty) == 0
    assert acl.get_data_buffer_addr(0) == acl.get_data_buffer_size_v2(0) == acl.get_data_buffer_size(0) == 0
    big = acl.create_data_buffer(0x1000, (1 << 32) + 5)
    assert acl.get_data_buffer_size_v2(big) == (1 << 32) + 5 and acl.get_data_buffer_size(big) == 5  # uint32
    assert acl.update_data_buffer(empty, 0x2000, 64) == 0 and acl.get_data_buffer_addr(empty) == 0x2000
    assert acl.update_data_buffer(0, 0, 0) == acl.destroy_data_buffer(0) == 100000
    ds = acl.mdl.create_dataset()
    assert acl.mdl.add_dataset_buffer(ds, 0) == (0, 100000)
    assert acl.mdl.add_dataset_buffer(0, empty) == (0, 100000)
    assert acl.mdl.add_dataset_buffer(ds, empty) == (ds, 0)
    assert acl.mdl.get_dataset_num_buffers(ds) == 1 and acl.mdl.get_dataset_buffer(ds, 0) == empty
    assert acl.mdl.get_dataset_buffer(ds, 1) == acl.mdl.get_dataset_buffer(0, 0) == 0
    assert acl.mdl.get_dataset_num_buffers(0) == 0
    assert acl.mdl.destroy_dataset(0) == 100000


def test_destroying_a_dataset_leaves_its_buffers_to_the_program():
    acl = setup()
    buf = acl.create_data_buffer(0x1000, 8)
    ds = dataset(acl)
    acl.mdl.add_dataset_buffer(ds, buf)
    assert acl.mdl.destroy_dataset(ds) == 0
    assert acl.get_data_buffer_addr(buf) == 0x1000 and acl.destroy_data_buffer(buf) == 0


def test_data_type_size():
    acl = setup()
    assert [acl.data_type_size(t) for t in (0, 1, 9, 13, 999)] == [4, 2, 8, 0, 8]


def test_value_getters_return_the_value_alone_and_parse_their_arguments():
    acl = setup()
    assert isinstance(acl.mdl.create_dataset(), int) and isinstance(acl.mdl.get_num_inputs(0), int)
    with pytest.raises(TypeError, match="acl.mdl.get_num_inputs args parse failed"):
        acl.mdl.get_num_inputs("x")
    with pytest.raises(TypeError, match="acl.create_data_buffer args parse failed"):
        acl.create_data_buffer(1)


def test_acl_op_stays_not_emulated():
    import emu.acl as acl
    with pytest.raises(AttributeError, match="acl.op.execute_v2 is not emulated"):
        acl.op.execute_v2  # noqa: B018


# -- execution: the reference's checks ----------------------------------------------------------------------
def test_execute_null_datasets_are_100000_and_an_unknown_id_145003(model_path):
    """aclmdlExecuteImpl: input, output NULL 100000; ModelManager::ExecuteModel: unknown id 145003."""
    acl = setup()
    mid, ins, outs, *_ = loaded(acl, model_path)
    assert acl.mdl.execute(mid, 0, outs) == acl.mdl.execute(mid, ins, 0) == 100000
    assert acl.mdl.execute(mid + 5, ins, outs) == 145003
    s, _ = acl.rt.create_stream()
    assert acl.mdl.execute_async(mid + 5, ins, outs, s) == 145003
    acl.mdl.unload(mid)
    assert acl.mdl.execute(mid, ins, outs) == 145003


def test_buffer_counts_other_than_the_models_are_500002(model_path):
    """davinci_model.cc UpdateAllNodeArgs returns ACL_ERROR_GE_PARAM_INVALID for an input or output count other
    than the model's (an empty dataset too), but CopyModelData calls it inside GE_ASSERT_SUCCESS (metadef
    pkg_inc/common/checker.h GE_ASSERT), which returns ge::PARAM_INVALID, outside the GE range ACL passes on:
    500002 (error_codes_inner.h ACL_GET_ERRCODE_GE). This test asserted 145000 before the third audit; the
    source decides. More cases: tests/test_model_conformance.py."""
    acl = setup()
    mid, ins, outs, din, dout = loaded(acl, model_path)
    assert acl.mdl.execute(mid, acl.mdl.create_dataset(), outs) == 500002
    assert acl.mdl.execute(mid, ins, dataset(acl, (dout, OUT), (dout, OUT))) == 500002


def test_a_buffer_64_bytes_or_more_too_small_is_500002_larger_is_fine(model_path):
    """davinci_model.cc CheckUserAndModelSize: user_len + 64 < model_len fails (GE PARAM_INVALID -> 500002)."""
    acl = setup()
    mid, ins, outs, din, dout = loaded(acl, model_path)
    assert acl.mdl.execute(mid, dataset(acl, (din, IN - 65)), outs) == 500002
    assert acl.mdl.execute(mid, dataset(acl, (din, IN - 64)), outs) == 0
    big, _ = acl.rt.malloc(OUT * 2, 0)
    assert acl.mdl.execute(mid, ins, dataset(acl, (big, OUT * 2))) == 0


def test_a_model_runs_synchronously_or_asynchronously_not_both(model_path):
    """davinci_model.cc InitModelStream: mixing sync and async execution -> INTERNAL_ERROR -> 500002."""
    acl = setup()
    mid, ins, outs, *_ = loaded(acl, model_path)
    s, _ = acl.rt.create_stream()
    assert acl.mdl.execute(mid, ins, outs) == 0
    assert acl.mdl.execute_async(mid, ins, outs, s) == 500002
    mid2, ins2, outs2, *_ = loaded(acl, model_path)
    assert acl.mdl.execute_async(mid2, ins2, outs2, s) == 0
    assert acl.mdl.execute(mid2, ins2, outs2) == 500002


def test_sync_execute_allocates_empty_output_buffers_async_does_not(model_path):
    """aclmdlExecuteImpl: an output buffer with data NULL gets aclrtMalloc(output size), the program frees it."""
    acl = setup()
    mid, ins, _, din, _ = loaded(acl, model_path)
    buf = acl.create_data_buffer(0, 0)
    outs = dataset(acl)
    acl.mdl.add_dataset_buffer(outs, buf)
    assert acl.mdl.execute(mid, ins, outs) == 0
    ptr = acl.get_data_buffer_addr(buf)
    assert ptr and acl.get_data_buffer_size_v2(buf) == OUT
    assert acl.rt.free(ptr) == 0
    mid2, ins2, *_ = loaded(acl, model_path)
    s, _ = acl.rt.create_stream()
    outs2 = dataset(acl, (0, 0))
    assert acl.mdl.execute_async(mid2, ins2, outs2, s) == 500002  # (0 + 64 < 400: too small)


# -- execution on the device ------------------------------------------------------------------------------
def test_execution_takes_the_declared_time_on_910b_and_on_a3(model_path):
    for product, us in (("910B", 4000), ("A3", 1000)):
        acl = setup(product)
        mid, ins, outs, *_ = loaded(acl, model_path)
        assert acl.mdl.execute(mid, ins, outs) == 0
        (task,) = model_tasks(emu.current())
        assert task["end"] - task["start"] == pytest.approx(us * 1e-6)
        assert task["kind"] == "kernel"


def test_execute_blocks_until_the_model_is_done(model_path):
    acl = setup()
    mid, ins, outs, *_ = loaded(acl, model_path)
    acl.mdl.execute(mid, ins, outs)
    (task,) = model_tasks(emu.current())
    assert emu.current().clock >= task["end"]


def test_copies_before_and_after_on_one_stream_run_in_order(model_path):
    acl = setup()
    rt = emu.current()
    mid, ins, outs, din, dout = loaded(acl, model_path)
    s, _ = acl.rt.create_stream()
    hin, _ = acl.rt.malloc_host(IN)
    hout, _ = acl.rt.malloc_host(OUT)
    assert acl.rt.memcpy_async(din, IN, hin, IN, H2D, s) == 0
    assert acl.mdl.execute_async(mid, ins, outs, s) == 0
    assert acl.rt.memcpy_async(hout, OUT, dout, OUT, D2H, s) == 0
    assert rt.clock < 1e-3  # queued: the host did not wait
    assert acl.rt.synchronize_stream(s) == 0
    r = rt.records()
    h2d, run, d2h = (r[r["route"] == "h2d"][0], model_tasks(rt)[0], r[r["route"] == "d2h"][0])
    assert h2d["end"] <= run["start"] and run["end"] <= d2h["start"]


def test_a_copy_on_another_stream_overlaps_the_execution(model_path):
    acl = setup()
    rt = emu.current()
    mid, ins, outs, *_ = loaded(acl, model_path)
    a, _ = acl.rt.create_stream()
    b, _ = acl.rt.create_stream()
    other, _ = acl.rt.malloc(1 << 20, 0)
    host, _ = acl.rt.malloc_host(1 << 20)
    acl.mdl.execute_async(mid, ins, outs, a)
    acl.rt.memcpy_async(other, 1 << 20, host, 1 << 20, H2D, b)
    acl.rt.synchronize_device()
    r = rt.records()
    run, copy = model_tasks(rt)[0], r[r["route"] == "h2d"][0]
    assert copy["start"] < run["end"] and copy["end"] < run["end"]


def test_an_event_orders_the_execution_after_another_streams_copy(model_path):
    acl = setup()
    rt = emu.current()
    mid, ins, outs, din, _ = loaded(acl, model_path)
    a, _ = acl.rt.create_stream()
    b, _ = acl.rt.create_stream()
    ev, _ = acl.rt.create_event()
    host, _ = acl.rt.malloc_host(IN)
    acl.rt.memcpy_async(din, IN, host, IN, H2D, b)
    acl.rt.record_event(ev, b)
    acl.rt.stream_wait_event(a, ev)
    acl.mdl.execute_async(mid, ins, outs, a)
    acl.rt.synchronize_device()
    r = rt.records()
    assert r[r["route"] == "h2d"][0]["end"] <= model_tasks(rt)[0]["start"]


@pytest.mark.parametrize("with_event", [False, True])
def test_the_sanitizer_sees_a_race_on_an_input_written_by_another_stream(model_path, with_event):
    acl = setup(sanitize="race")
    rt = emu.current()
    mid, ins, outs, din, _ = loaded(acl, model_path)
    a, _ = acl.rt.create_stream()
    b, _ = acl.rt.create_stream()
    host, _ = acl.rt.malloc_host(IN)
    acl.rt.memcpy_async(din, IN, host, IN, H2D, b)
    if with_event:
        ev, _ = acl.rt.create_event()
        acl.rt.record_event(ev, b)
        acl.rt.stream_wait_event(a, ev)
    acl.mdl.execute_async(mid, ins, outs, a)
    findings = rt.sanitizer.finish()
    races = [f for f in findings if f.tool == "race"]
    assert bool(races) is not with_event, rt.sanitizer.report()


def test_the_sanitizer_sees_the_execution_write_its_outputs(model_path):
    acl = setup(sanitize="race")
    rt = emu.current()
    mid, ins, outs, din, dout = loaded(acl, model_path)
    a, _ = acl.rt.create_stream()
    b, _ = acl.rt.create_stream()
    host, _ = acl.rt.malloc_host(OUT)
    acl.mdl.execute_async(mid, ins, outs, a)
    acl.rt.memcpy_async(host, OUT, dout, OUT, D2H, b)  # reads the output without waiting for the execution
    assert [f for f in rt.sanitizer.finish() if f.tool == "race"], rt.sanitizer.report()


def run_once(model_path, data: bytes) -> np.ndarray:
    acl = setup()
    mid, ins, outs, din, dout = loaded(acl, model_path)
    acl.rt.memcpy(din, IN, host_bytes(acl, data), IN, H2D)
    assert acl.mdl.execute(mid, ins, outs) == 0
    out = bytearray(OUT)
    acl.rt.memcpy(host_bytes(acl, bytes(out)), OUT, dout, OUT, D2H)
    return emu.current().device_array(dout, (100,), np.float32).copy()


def test_outputs_are_a_pure_function_of_the_model_name_and_the_inputs(model_path):
    a = run_once(model_path, bytes(IN))
    b = run_once(model_path, bytes(IN))
    c = run_once(model_path, b"\x01" * IN)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert ((a >= 0) & (a < 1)).all()  # float outputs hold values in [0, 1)
    expect = inference.output_bytes("resnet50", 0, [bytes(IN)], "float32", OUT)
    assert a.tobytes() == expect


def test_dynamic_batch_gears_sizes_time_and_current_dims(tmp_path):
    emu.declare_model(tmp_path / "b.om", BATCHED)
    acl = setup()
    mid, _ = acl.mdl.load_from_file(str(tmp_path / "b.om"))
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, mid)
    assert acl.mdl.get_dynamic_batch(desc) == ({"batchCount": 3, "batch": [1, 2, 4]}, 0)
    gear_index, ret = acl.mdl.get_input_index_by_name(desc, "ascend_mbatch_shape_data")
    assert (gear_index, ret) == (1, 0) and acl.mdl.get_num_inputs(desc) == 2
    assert acl.mdl.get_input_size_by_index(desc, 0) == 4 * 8 * 4  # the largest gear
    assert acl.mdl.get_output_dims(desc, 0)[0]["dims"] == [4, 4]  # the largest gear (doc aclmdlGetOutputDims.md)
    assert acl.mdl.get_input_dims(desc, 0)[0]["dims"] == [-1, 8]  # an input keeps its -1
    x, _ = acl.rt.malloc(128, 0)
    g, _ = acl.rt.malloc(8, 0)
    y, _ = acl.rt.malloc(64, 0)
    ins, outs = dataset(acl, (x, 128), (g, 8)), dataset(acl, (y, 64))
    assert acl.mdl.set_dynamic_batch_size(mid, ins, gear_index, 3) == 145013
    assert acl.mdl.set_dynamic_batch_size(mid, ins, gear_index, 0) == 100000
    assert acl.mdl.set_dynamic_batch_size(mid, 0, gear_index, 2) == 100000
    assert acl.mdl.set_dynamic_batch_size(mid, ins, 7, 2) == 100000
    assert acl.mdl.set_dynamic_batch_size(99, ins, gear_index, 2) == 145003
    assert acl.mdl.set_dynamic_batch_size(mid, ins, gear_index, 2) == 0
    assert emu.current().device_array(g, (1,), np.uint64)[0] == 2  # the gear, written into the gear input
    assert acl.mdl.execute(mid, ins, outs) == 0
    assert acl.mdl.get_cur_output_dims(desc, 0) == ({"name": "y", "dimCount": 2, "dims": [2, 4]}, 0)  # the setter's
    (task,) = model_tasks(emu.current(), "batched")
    assert task["end"] - task["start"] == pytest.approx((100 + 2 * 50) * 1e-6)
    assert task["bytes"] == 2 * 8 * 4 + 8 + 2 * 4 * 4  # the gear's sizes, read and written


def test_a_model_with_gears_runs_at_its_largest_when_none_is_set(tmp_path):
    emu.declare_model(tmp_path / "b.om", BATCHED)
    acl = setup()
    mid, _ = acl.mdl.load_from_file(str(tmp_path / "b.om"))
    x, _ = acl.rt.malloc(128, 0)
    g, _ = acl.rt.malloc(8, 0)
    y, _ = acl.rt.malloc(64, 0)
    assert acl.mdl.execute(mid, dataset(acl, (x, 128), (g, 8)), dataset(acl, (y, 64))) == 0
    (task,) = model_tasks(emu.current(), "batched")
    assert task["end"] - task["start"] == pytest.approx((100 + 4 * 50) * 1e-6)
    assert acl.mdl.execute(mid, dataset(acl, (x, 32), (g, 8)), dataset(acl, (y, 64))) == 500002  # sizes checked


def test_an_execution_on_a_captured_stream_runs_at_each_replay(model_path):
    acl = setup()
    rt = emu.current()
    mid, ins, outs, *_ = loaded(acl, model_path)
    s, _ = acl.rt.create_stream()
    assert acl.mdl.ri_capture_begin(s, 0) == 0
    assert acl.mdl.execute_async(mid, ins, outs, s) == 0
    graph, ret = acl.mdl.ri_capture_end(s)
    assert ret == 0 and len(model_tasks(rt)) == 0
    assert acl.mdl.ri_execute_async(graph, s) == acl.mdl.ri_execute_async(graph, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert len(model_tasks(rt)) == 2


def test_a_gear_buffer_under_4_bytes_is_145012(tmp_path):
    """GE SetDynamicBatchSize: the gear input's length < 4 -> ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID."""
    emu.declare_model(tmp_path / "b.om", BATCHED)
    acl = setup()
    mid, _ = acl.mdl.load_from_file(str(tmp_path / "b.om"))
    g, _ = acl.rt.malloc(8, 0)
    assert acl.mdl.set_dynamic_batch_size(mid, dataset(acl, (g, 3)), 0, 2) == 145012


def test_dynamic_hw_gears(tmp_path):
    decl = {"name": "hw", "dynamic_hw": [[8, 8], [16, 32]],
            "input": [{"name": "img", "dtype": "uint8", "shape": [1, 3, -1, -1], "format": "NCHW"}],
            "output": [{"name": "y", "dtype": "float32", "shape": [1, 10]}],
            "compute_us": {"default": {"base": 10, "per_pixel": 0.5}}}
    emu.declare_model(tmp_path / "hw.om", decl)
    acl = setup()
    mid, _ = acl.mdl.load_from_file(str(tmp_path / "hw.om"))
    desc = acl.mdl.create_desc()
    acl.mdl.get_desc(desc, mid)
    hw, ret = acl.mdl.get_dynamic_hw(desc, -1)
    assert ret == 0 and hw == {"hwCount": 2, "hw": [[8, 8], [16, 32]]} and [8, 8] in hw["hw"]
    assert acl.mdl.get_input_size_by_index(desc, 0) == 3 * 16 * 32
    x, _ = acl.rt.malloc(3 * 16 * 32, 0)
    g, _ = acl.rt.malloc(16, 0)
    y, _ = acl.rt.malloc(40, 0)
    ins = dataset(acl, (x, 3 * 16 * 32), (g, 16))
    assert acl.mdl.set_dynamic_hw_size(mid, ins, 1, 8, 0) == 100000
    assert acl.mdl.set_dynamic_hw_size(mid, ins, 1, 9, 9) == 145013
    assert acl.mdl.set_dynamic_hw_size(mid, ins, 1, 8, 8) == 0
    assert acl.mdl.execute(mid, ins, dataset(acl, (y, 40))) == 0
    (task,) = model_tasks(emu.current(), "hw")
    assert task["end"] - task["start"] == pytest.approx((10 + 0.5 * 64) * 1e-6)


def test_the_trace_summary_and_msprof_show_the_execution_by_the_models_name(model_path, tmp_path):
    from emu.studies import runsummary
    acl = setup()
    mid, ins, outs, *_ = loaded(acl, model_path)
    s, _ = acl.rt.create_stream()
    acl.mdl.execute_async(mid, ins, outs, s)
    acl.rt.synchronize_stream(s)
    result = runsummary.summary(emu.current(), tmp_path / "out")
    assert result["calls"]["aclmdlExecuteAsync"] == 1 and result["device_tasks"] >= 1
    events = json.loads((tmp_path / "out" / "trace.json").read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert any(e.get("name") == "resnet50" and e.get("ph") == "X" for e in events)
    from emu.studies import profiles, replay
    msprof = replay.write_msprof_runtime(emu.current(), tmp_path / "msprof_run.json")
    (task,) = [t for t in profiles.load(msprof).tasks if t.name == "resnet50"]
    assert task.kind == "kernel" and task.duration == pytest.approx(4000e-6)


def test_the_pythonic_runtime_raises_and_returns_values(model_path):
    rt = emu.configure("910B")
    rt.set_device(0)
    mid = rt.load_from_file(model_path)
    desc = rt.create_desc()
    rt.get_desc(desc, mid)
    assert rt.get_input_dims(desc, 0)["dims"] == [1, 3, 16, 16]
    with pytest.raises(emu.AclError) as ei:
        rt.unload(mid + 1)
    assert ei.value.code == 145003
