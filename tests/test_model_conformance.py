"""The model API's codes and order, third audit (issue 43, items 1-7 and 13): each rule as the reference sources
give it, from pyACL (and from C where the C form differs).

Reference (cited by repository, file and function):
- hicann/ge api/acl/acl_model/model/acl_model.cpp (the router each aclmdlLoad* / aclmdlQuerySize* goes through
  first), acl_model_router.cpp (AclIsOm2ModelByPath, AclIsOm2ModelByData), model.cpp (ModelExecute,
  aclmdlSetDynamicBatchSizeImpl, aclmdlSetDynamicHWSizeImpl, aclmdlSetInputDynamicDimsImpl,
  aclmdlGetCurOutputDimsImpl), model_common.cpp (GetDims, GetCurGearIndex, GetCurOuputShapeInfo);
- hicann/ge runtime/v1/executor/ge_executor.cc (GeExecutor::ExecModel, SetDynamicInputDataFlag,
  SetDynamicBatchSize, SetDynamicImageSize, SetDynamicDims, GetCurDynamicDims, GetCurShape);
  runtime/v1/graph/load/model_manager/davinci_model.cc (NnExecute, InitModelStream, CopyModelData,
  UpdateAllNodeArgs, ConstructZeroCopyIoActiveBaseAddrs, CheckUserAndModelSize, SetDynamicSize);
  runtime/om2/om2_model_executor.cc (IsOm2Model); api/acl/common/error_codes_inner.h (ACL_GET_ERRCODE_GE);
  docs/zh/api/graph_engine_api/c/acl/aclmdlGetOutputDims.md, aclmdlGetCurOutputDims.md;
  compiler/graph/passes/multi_batch/multi_batch_clone_pass.cc (SetMaxShape, ATTR_USER_DESIGNEATE_SHAPE_ORDER);
- hicann/metadef pkg_inc/common/checker.h (GE_ASSERT, ErrorResult: a failed assertion returns ge::PARAM_INVALID);
- hicann/runtime src/runtime/api/impl/api_impl.cc (ApiImpl::ModelExecute), src/runtime/core/src/common/
  errcode_manage.cc (RT_ERROR_MODEL_CONTEXT -> ACL_ERROR_RT_MODEL_CONTEXT).
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import emu
from emu import modeldecl
from helpers import acl_on, no_declared_models

STATIC = {"name": "static",
          "input": [{"name": "x", "dtype": "float32", "shape": [4, 8]}],
          "output": [{"name": "y", "dtype": "float32", "shape": [4, 4]}],
          "compute_us": 100}
BATCHED = {"name": "batched", "dynamic_batch": [1, 2, 4],
           "input": [{"name": "x", "dtype": "float32", "shape": [-1, 8]}],
           "output": [{"name": "y", "dtype": "float32", "shape": [-1, 4]}],
           "compute_us": {"default": {"base": 100, "per_batch": 50}}}
HW = {"name": "hw", "dynamic_hw": [[8, 8], [16, 32]],
      "input": [{"name": "img", "dtype": "uint8", "shape": [1, 3, -1, -1], "format": "NCHW"}],
      "output": [{"name": "y", "dtype": "float32", "shape": [1, 10]}],
      "compute_us": {"default": {"base": 10, "per_pixel": 0.5}}}
# resnet50_imagenet_dynamic_dims: atc --input_format=ND --input_shape="data:-1,3,-1,-1"
# --dynamic_dims="1,200,200;2,200,200;1,224,224;2,224,224" --out_nodes=prob:0 (output [-1, 1000])
DIMS = {"name": "dims", "dynamic_dims": [[1, 20, 20], [2, 20, 20], [1, 24, 24], [2, 24, 24]],
        "input": [{"name": "data", "dtype": "float16", "shape": [-1, 3, -1, -1]}],
        "output": [{"name": "prob", "dtype": "float32", "shape": [-1, 10]}],
        "compute_us": {"default": {"base": 100, "per_batch": 10, "per_pixel": 0.25}}}
GEAR_INPUT = modeldecl.DYNAMIC_INPUT

GE_FAILURE = 500002  # ACL_ERROR_GE_FAILURE
GE_PARAM_INVALID = 145000
MODEL_ID_INVALID = 145003
DATA_SIZE_INVALID = 145006
INPUT_LENGTH_INVALID = 145012
BATCH_SIZE_INVALID = 145013
INVALID_PARAM = 100000
FAILURE = 500001  # ACL_ERROR_FAILURE
CONTEXT_NULL = 107002
MODEL_CONTEXT = 107004
STREAM_CONTEXT = 107003


pytestmark = pytest.mark.usefixtures(no_declared_models.__name__)


def load(acl, tmp_path, decl) -> int:
    path = tmp_path / f"{decl['name']}.om"
    emu.declare_model(path, decl)
    mid, ret = acl.mdl.load_from_file(str(path))
    assert ret == 0
    return mid


def dataset(acl, *sizes_or_bufs) -> int:
    """A dataset of data buffers: an int is that many bytes of new device memory, (ptr, size) a buffer as given."""
    ds = acl.mdl.create_dataset()
    for item in sizes_or_bufs:
        ptr, size = item if isinstance(item, tuple) else (acl.rt.malloc(max(item, 1), 0)[0], item)
        assert acl.mdl.add_dataset_buffer(ds, acl.create_data_buffer(ptr, size)) == (ds, 0)
    return ds


def desc_of(acl, mid) -> int:
    desc = acl.mdl.create_desc()
    assert acl.mdl.get_desc(desc, mid) == 0
    return desc


def one_task(name):
    r = emu.current().records()
    (task,) = r[r["api"] == name]
    return task


def last_task(name):
    r = emu.current().records()
    return r[r["api"] == name][-1]


# -- 1. dataset buffer counts -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["an input more", "an input fewer", "no input", "an output more", "an output fewer",
                                  "no output"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_buffer_counts_other_than_the_models_are_ge_failure_500002_not_145000(tmp_path, case, mode):
    """Rule: a dataset holding more, fewer or no buffers than the model's inputs or outputs fails with 500002.
    davinci_model.cc DavinciModel::UpdateAllNodeArgs returns ACL_ERROR_GE_PARAM_INVALID (145000) for the count,
    but DavinciModel::CopyModelData calls it as GE_ASSERT_SUCCESS(UpdateAllNodeArgs(...)): metadef
    pkg_inc/common/checker.h GE_ASSERT returns ::ErrorResult(), whose ge::Status is ge::PARAM_INVALID, a code
    outside the GE and runtime ranges error_codes_inner.h ACL_GET_ERRCODE_GE passes on, so model.cpp ModelExecute
    returns ACL_ERROR_GE_FAILURE. (tests/test_inference.py said 145000 before this audit.)"""
    acl = acl_on()
    mid = load(acl, tmp_path, STATIC)
    ins = {"an input more": (128, 128), "an input fewer": (), "no input": ()}.get(case, (128,))
    outs = {"an output more": (64, 64), "an output fewer": (), "no output": ()}.get(case, (64,))
    if case == "an input fewer":  # (the static model has one input: fewer is none; the gear model below has two)
        mid = load(acl, tmp_path, BATCHED)
        ins = (128,)
    s, _ = acl.rt.create_stream()
    run = (lambda i, o: acl.mdl.execute(mid, i, o)) if mode == "sync" else (
        lambda i, o: acl.mdl.execute_async(mid, i, o, s))
    assert run(dataset(acl, *ins), dataset(acl, *outs)) == GE_FAILURE
    assert "takes" in acl.get_recent_err_msg() and "buffers" in acl.get_recent_err_msg()


def test_the_count_is_checked_before_the_sizes_and_after_the_execution_mode(tmp_path):
    """davinci_model.cc: DavinciModel::NnExecute checks the mode (InitModelStream) before CopyModelData, whose
    UpdateAllNodeArgs checks the counts before ConstructZeroCopyIoActiveBaseAddrs checks each buffer's size
    (CheckUserAndModelSize). All three are 500002; the message tells which fired. InitModelStream records the
    mode before the counts are checked: a refused execution still fixes it."""
    acl = acl_on()
    mid = load(acl, tmp_path, STATIC)
    assert acl.mdl.execute(mid, dataset(acl, 8, 8), dataset(acl, 64)) == GE_FAILURE  # too small and one too many
    assert "takes 1 inputs" in acl.get_recent_err_msg()
    s, _ = acl.rt.create_stream()
    assert acl.mdl.execute_async(mid, dataset(acl, 128), dataset(acl, 64), s) == GE_FAILURE
    assert "synchronously" in acl.get_recent_err_msg()
    mid2 = load(acl, tmp_path, STATIC)
    assert acl.mdl.execute_async(mid2, dataset(acl, 128), dataset(acl, 64), s) == 0
    assert acl.mdl.execute(mid2, dataset(acl, 8, 8), dataset(acl, 64)) == GE_FAILURE
    assert "asynchronously" in acl.get_recent_err_msg()


def test_a_destroyed_data_buffer_in_a_dataset_is_100000_before_the_model_id(tmp_path):
    """model.cpp ModelExecute: a blob whose dataBuf is null, in the inputs then the outputs, is 100000 before the
    graph engine looks the model up; a data buffer destroyed after it was added stands for it (on the board its
    struct is freed memory)."""
    acl = acl_on()
    mid = load(acl, tmp_path, STATIC)
    ptr, _ = acl.rt.malloc(128, 0)
    buf = acl.create_data_buffer(ptr, 128)
    ins = acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(ins, buf)
    assert acl.destroy_data_buffer(buf) == 0
    assert acl.mdl.execute(mid + 9, ins, dataset(acl, 64)) == INVALID_PARAM
    assert acl.mdl.execute(mid + 9, dataset(acl, 128), ins) == INVALID_PARAM
    assert "not a live data buffer" in acl.get_recent_err_msg()


# -- 2. aclmdlExecute's ACL-layer checks of the outputs ---------------------------------------------------------
def test_an_empty_output_buffer_beside_an_extra_one_is_100000_before_the_graph_engine(tmp_path):
    """Rule: model.cpp ModelExecute, for aclmdlExecute only: when an output buffer is empty (a null address) it
    takes the model's output descriptions (GeExecutor::GetModelDescInfo) and returns ACL_ERROR_INVALID_PARAM if
    there are fewer than the dataset's buffers, before GeExecutor::ExecModel checks anything. aclmdlExecuteAsync
    has no such step: the graph engine's count check (500002) fires."""
    acl = acl_on()
    mid = load(acl, tmp_path, STATIC)
    s, _ = acl.rt.create_stream()
    assert acl.mdl.execute(mid, dataset(acl, 128), dataset(acl, (0, 0), 64)) == INVALID_PARAM
    assert "output descriptions" in acl.get_recent_err_msg()
    assert acl.mdl.execute(mid, dataset(acl, 128), dataset(acl, 64, (0, 0))) == INVALID_PARAM
    assert acl.mdl.execute(mid, dataset(acl, 128), dataset(acl, 64, 64)) == GE_FAILURE  # none empty: GE's count
    mid2 = load(acl, tmp_path, STATIC)
    assert acl.mdl.execute_async(mid2, dataset(acl, 128), dataset(acl, (0, 0), 64), s) == GE_FAILURE


def test_an_unknown_model_id_with_an_empty_output_buffer_is_100000_not_145003(tmp_path):
    """Rule: for an id no model has, GeExecutor::GetModelDescInfo fails and ModelExecute ignores it ((void)),
    so it sees no output description: an empty output buffer makes it 100000 before ModelManager::ExecuteModel
    would say 145003. Without an empty output buffer, or from aclmdlExecuteAsync, the id is 145003."""
    acl = acl_on()
    mid = load(acl, tmp_path, STATIC)
    s, _ = acl.rt.create_stream()
    assert acl.mdl.execute(mid + 9, dataset(acl, 128), dataset(acl, (0, 0))) == INVALID_PARAM
    assert "no model is loaded" in acl.get_recent_err_msg()
    assert acl.mdl.execute(mid + 9, dataset(acl, 128), dataset(acl, 64)) == MODEL_ID_INVALID
    assert acl.mdl.execute_async(mid + 9, dataset(acl, 128), dataset(acl, (0, 0)), s) == MODEL_ID_INVALID
    assert acl.mdl.unload(mid) == 0
    assert acl.mdl.execute(mid, dataset(acl, 128), dataset(acl, (0, 0))) == INVALID_PARAM


def test_empty_output_buffers_get_their_memory_before_the_graph_engine_fails(tmp_path):
    """Rule: ModelExecute's aclrtMalloc of the empty output buffers comes before GeExecutor::ExecModel: a count
    the graph engine refuses (500002) leaves the buffer with memory of the output's size, the program's to free."""
    acl = acl_on()
    mid = load(acl, tmp_path, BATCHED)
    out_buf = acl.create_data_buffer(0, 0)
    outs = acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(outs, out_buf)
    assert acl.mdl.execute(mid, dataset(acl, 128), outs) == GE_FAILURE  # the gear input's buffer is missing
    ptr = acl.get_data_buffer_addr(out_buf)
    assert ptr and acl.get_data_buffer_size_v2(out_buf) == 4 * 4 * 4  # the largest gear's size
    assert acl.rt.free(ptr) == 0


# -- 3. the gear setters check the buffer's length before the model id -------------------------------------------
def test_set_dynamic_batch_size_checks_the_buffer_length_before_the_model_id(tmp_path):
    """Rule: model.cpp aclmdlSetDynamicBatchSizeImpl checks the dataset, the batch, the buffer and its address
    (100000), then GeExecutor::SetDynamicBatchSize checks the length (under 4 bytes: 145012) before
    GraphExecutor::GetDynamicBatchInfo looks the model up (145003), then the gear (145013)."""
    acl = acl_on()
    mid = load(acl, tmp_path, BATCHED)
    short, good = dataset(acl, 128, 3), dataset(acl, 128, 8)
    assert acl.mdl.set_dynamic_batch_size(mid + 9, short, 1, 2) == INPUT_LENGTH_INVALID
    assert acl.mdl.set_dynamic_batch_size(mid + 9, good, 1, 2) == MODEL_ID_INVALID
    assert acl.mdl.set_dynamic_batch_size(mid, good, 1, 3) == BATCH_SIZE_INVALID
    assert acl.mdl.set_dynamic_batch_size(mid + 9, short, 1, 0) == INVALID_PARAM  # the ACL layer's first
    assert acl.mdl.set_dynamic_batch_size(mid + 9, dataset(acl, 128, (0, 8)), 1, 2) == INVALID_PARAM


def test_set_dynamic_hw_size_checks_the_buffer_length_before_the_model_id(tmp_path):
    """Rule: model.cpp aclmdlSetDynamicHWSizeImpl, then GeExecutor::SetDynamicImageSize: a gear buffer under
    kDynamicImageSizeInputSize * sizeof(uint32_t) = 8 bytes is 145012 before the model is looked up (145003)."""
    acl = acl_on()
    mid = load(acl, tmp_path, HW)
    assert acl.mdl.set_dynamic_hw_size(mid + 9, dataset(acl, 1536, 7), 1, 8, 8) == INPUT_LENGTH_INVALID
    assert acl.mdl.set_dynamic_hw_size(mid + 9, dataset(acl, 1536, 8), 1, 8, 8) == MODEL_ID_INVALID
    assert acl.mdl.set_dynamic_hw_size(mid, dataset(acl, 1536, 8), 1, 8, 9) == BATCH_SIZE_INVALID
    assert acl.mdl.set_dynamic_hw_size(mid, dataset(acl, 1536, 8), 1, 8, 8) == 0


# -- 4. output dims of models with gears ------------------------------------------------------------------------
def test_output_dims_are_the_largest_gears_and_input_dims_keep_their_minus_1(tmp_path):
    """Rule: aclmdlGetOutputDims of a model with gears gives its largest gear's dims (doc aclmdlGetOutputDims.md;
    DavinciModel::CreateOutput takes the NetOutput's shape, which multi_batch_clone_pass.cc SetMaxShape sized at
    the largest gear), before and after any setter or execution; aclmdlGetInputDims keeps the -1
    (DavinciModel::CreateInputDimsInfo: ATTR_MBATCH_ORIGIN_INPUT_DIMS). (The emulator gave -1 for outputs
    before this audit.)"""
    acl = acl_on()
    mid = load(acl, tmp_path, BATCHED)
    desc = desc_of(acl, mid)
    assert acl.mdl.get_output_dims(desc, 0) == ({"name": "y", "dimCount": 2, "dims": [4, 4]}, 0)
    assert acl.mdl.get_input_dims(desc, 0)[0]["dims"] == [-1, 8]
    ins = dataset(acl, 128, 8)
    assert acl.mdl.set_dynamic_batch_size(mid, ins, 1, 1) == 0
    assert acl.mdl.execute(mid, ins, dataset(acl, 64)) == 0
    assert acl.mdl.get_output_dims(desc, 0)[0]["dims"] == [4, 4]
    dmid = load(acl, tmp_path, DIMS)
    ddesc = desc_of(acl, dmid)
    assert acl.mdl.get_output_dims(ddesc, 0)[0]["dims"] == [2, 10]
    assert acl.mdl.get_input_dims(ddesc, 0)[0]["dims"] == [-1, 3, -1, -1]
    assert acl.mdl.get_input_size_by_index(ddesc, 0) == 2 * 3 * 24 * 24 * 2
    assert acl.mdl.get_input_dims(ddesc, 1)[0] == {"name": GEAR_INPUT, "dimCount": 1, "dims": [3]}


def test_current_output_dims_follow_the_last_successful_setter_not_the_last_execution(tmp_path):
    """Rule: model.cpp aclmdlGetCurOutputDimsImpl asks GeExecutor::GetCurShape, the gear the last setter that
    reached GraphExecutor::SetDynamicSize recorded on the model (DavinciModel::SetDynamicSize), whichever dataset
    it set; no setter yet: the description's dims, the largest gear's (GetDims). An execution does not change
    it, nor does a setter GE refuses before SetDynamicSize. (The emulator followed the last execution before.)"""
    acl = acl_on()
    mid = load(acl, tmp_path, BATCHED)
    desc = desc_of(acl, mid)
    cur = lambda: acl.mdl.get_cur_output_dims(desc, 0)[0]["dims"]  # noqa: E731
    assert cur() == [4, 4]
    a, b, outs = dataset(acl, 128, 8), dataset(acl, 128, 8), dataset(acl, 64)
    assert acl.mdl.set_dynamic_batch_size(mid, a, 1, 2) == 0
    assert cur() == [2, 4]
    assert acl.mdl.set_dynamic_batch_size(mid, b, 1, 1) == 0
    assert acl.mdl.execute(mid, a, outs) == 0  # runs at a's batch, 2
    assert one_task("batched")["end"] - one_task("batched")["start"] == pytest.approx((100 + 2 * 50) * 1e-6)
    assert cur() == [1, 4]  # b's setter, the last
    assert acl.mdl.set_dynamic_batch_size(mid, a, 1, 3) == BATCH_SIZE_INVALID
    assert cur() == [1, 4]
    assert acl.mdl.unload(mid) == 0
    assert acl.mdl.get_cur_output_dims(desc, 0) == ({}, MODEL_ID_INVALID)
    assert acl.mdl.get_cur_output_dims(desc, 1) == ({}, INVALID_PARAM)  # the index first


def test_current_output_dims_after_an_nd_setter_on_a_batch_model_are_500001(tmp_path):
    """Rule: model_common.cpp GetCurGearIndex looks an ND gear up among the description's ND gears only; a batch
    model, which GE lets aclmdlSetInputDynamicDims set (GetCurDynamicDims follows ATC's recorded input order,
    ATTR_USER_DESIGNEATE_SHAPE_ORDER, for every model with gears), has none: ACL_ERROR_FAILURE."""
    acl = acl_on()
    mid = load(acl, tmp_path, BATCHED)
    desc = desc_of(acl, mid)
    assert acl.mdl.set_input_dynamic_dims(mid, dataset(acl, 128, 8), 1, {"dimCount": 2, "dims": [2, 8]}) == 0
    assert acl.mdl.get_cur_output_dims(desc, 0) == ({}, FAILURE)


# -- 5. a failed setter still marks the dataset -------------------------------------------------------------------
@pytest.mark.parametrize("failure", ["not a gear", "a short gear buffer", "an unknown model"])
def test_a_failed_batch_setter_still_marks_the_dataset_dynamic(tmp_path, failure):
    """Rule: model.cpp aclmdlSetDynamicBatchSizeImpl sets dataset->dynamicBatchSize before
    GeExecutor::SetDynamicBatchSize fails; GeExecutor::ExecModel then runs a model with gears dynamically
    (SetDynamicInputDataFlag: is_dynamic_batch, the batch label of the matching gear, else gear 0), so
    DavinciModel::CheckUserAndModelSize checks no size: an input buffer far too small is accepted, and the
    execution runs at the matching gear, or the model's first."""
    acl = acl_on()
    mid = load(acl, tmp_path, BATCHED)
    small = dataset(acl, 8, 3 if failure == "a short gear buffer" else 8)
    outs = dataset(acl, 64)
    assert acl.mdl.execute(mid, dataset(acl, 8, 8), outs) == GE_FAILURE  # unmarked: the size is checked
    setter_id, batch, code = {"not a gear": (mid, 3, BATCH_SIZE_INVALID),
                              "a short gear buffer": (mid, 2, INPUT_LENGTH_INVALID),
                              "an unknown model": (mid + 9, 2, MODEL_ID_INVALID)}[failure]
    assert acl.mdl.set_dynamic_batch_size(setter_id, small, 1, batch) == code
    assert acl.mdl.execute(mid, small, outs) == 0
    ran = 1 if failure == "not a gear" else 2  # no gear matches 3: the first gear, batch 1
    task = one_task("batched")
    assert task["end"] - task["start"] == pytest.approx((100 + ran * 50) * 1e-6)


def test_a_failed_image_size_setter_still_marks_the_dataset_dynamic(tmp_path):
    """Rule: model.cpp aclmdlSetDynamicHWSizeImpl sets dynamicResolutionHeight / Width before
    GeExecutor::SetDynamicImageSize refuses a size the model lacks (145013); the execution then runs dynamically
    at the model's first gear (SetDynamicInputDataFlag: no gear matches, batch label 0), its small buffers
    accepted."""
    acl = acl_on()
    mid = load(acl, tmp_path, HW)
    small, outs = dataset(acl, 16, 16), dataset(acl, 40)
    assert acl.mdl.execute(mid, small, outs) == GE_FAILURE
    assert acl.mdl.set_dynamic_hw_size(mid, small, 1, 9, 9) == BATCH_SIZE_INVALID
    assert acl.mdl.execute(mid, small, outs) == 0
    task = one_task("hw")
    assert task["end"] - task["start"] == pytest.approx((10 + 0.5 * 8 * 8) * 1e-6)  # gear 0: 8 x 8


def test_a_static_model_ignores_the_mark_a_failed_setter_left(tmp_path):
    """GeExecutor::ExecModel marks the execution dynamic only when the model has gears (batch_info not empty):
    on a static model the sizes are checked as ever."""
    acl = acl_on()
    mid = load(acl, tmp_path, STATIC)
    small = dataset(acl, 8)
    assert acl.mdl.set_dynamic_batch_size(mid, small, 0, 2) == BATCH_SIZE_INVALID
    assert acl.mdl.execute(mid, small, dataset(acl, 64)) == GE_FAILURE


def test_a_failed_nd_setter_clears_the_marks(tmp_path):
    """model.cpp aclmdlSetInputDynamicDimsImpl clears dynamicBatchSize, the resolution and dynamicDims before
    GeExecutor::SetDynamicDims and sets dynamicDims only once it succeeded: after a failed ND setter the dataset
    is not dynamic, and the sizes are checked again."""
    acl = acl_on()
    mid = load(acl, tmp_path, BATCHED)
    small, outs = dataset(acl, 8, 8), dataset(acl, 64)
    assert acl.mdl.set_dynamic_batch_size(mid, small, 1, 2) == 0
    assert acl.mdl.execute(mid, small, outs) == 0
    assert acl.mdl.set_input_dynamic_dims(mid, small, 1, {"dimCount": 2, "dims": [3, 8]}) == BATCH_SIZE_INVALID
    assert acl.mdl.execute(mid, small, outs) == GE_FAILURE


# -- 6. execution outside the model's context ---------------------------------------------------------------------
def test_execution_in_another_context_is_107004_and_with_none_107002(tmp_path):
    """Rule: the launch (DavinciModel::NnExecute -> aclmdlRIExecuteAsync -> rtModelExecute) reaches hicann/runtime
    api_impl.cc ApiImpl::ModelExecute: no current context is RT_ERROR_CONTEXT_NULL (107002), a context other than
    the model's RT_ERROR_MODEL_CONTEXT (errcode_manage.cc: ACL_ERROR_RT_MODEL_CONTEXT, 107004); GE passes the
    code on (GE_CHK_RT_EXEC, RT_ERROR_TO_GE_STATUS) and so does ACL (ACL_GET_ERRCODE_GE keeps the runtime's
    range). Another device's context, a new context on the same device and a thread with none all fail; the
    model's own context runs it. (On the board a first aclmdlExecute on a thread without a context may fail
    earlier, creating the model's stream, with 500002; the emulator creates no such stream.)"""
    acl = acl_on()
    mid = load(acl, tmp_path, STATIC)
    ins, outs = dataset(acl, 128), dataset(acl, 64)
    main_ctx, _ = acl.rt.get_context()
    got = {}

    def no_context():
        got["sync"] = acl.mdl.execute(mid, ins, outs)

    t = threading.Thread(target=no_context)
    t.start()
    t.join()
    assert got["sync"] == CONTEXT_NULL
    assert acl.rt.set_device(1) == 0
    other_stream, _ = acl.rt.create_stream()
    assert acl.mdl.execute(mid, ins, outs) == MODEL_CONTEXT
    assert "execute a model in the context that loaded it" in acl.get_recent_err_msg()
    mid2 = load(acl, tmp_path, STATIC)  # (a model of device 1's context, for the asynchronous form)
    assert acl.mdl.execute_async(mid2, ins, outs, other_stream) == 0
    assert acl.rt.set_context(main_ctx) == 0
    assert acl.mdl.execute_async(mid2, ins, outs, 0) == MODEL_CONTEXT
    assert acl.mdl.execute_async(mid2, ins, outs, other_stream) == MODEL_CONTEXT
    new_ctx, _ = acl.rt.create_context(0)
    assert acl.mdl.execute(mid, ins, outs) == MODEL_CONTEXT  # same device, another context
    assert acl.rt.set_context(main_ctx) == 0
    assert acl.mdl.execute(mid, ins, outs) == 0


def test_an_async_execution_checks_the_stream_handle_then_the_contexts(tmp_path):
    """rtModelExecute validates the stream object first (RT_VALIDATE_AND_UNWRAP_OBJECT: 107017), then
    ApiImpl::ModelExecute the contexts; a live stream of another context in the model's own context is refused
    as every stream of another context is (107003)."""
    acl = acl_on()
    mid = load(acl, tmp_path, STATIC)
    ins, outs = dataset(acl, 128), dataset(acl, 64)
    main_ctx, _ = acl.rt.get_context()
    assert acl.rt.set_device(1) == 0
    other_stream, _ = acl.rt.create_stream()
    assert acl.mdl.execute_async(mid, ins, outs, 0x12345) == 107017
    assert acl.rt.set_context(main_ctx) == 0
    assert acl.mdl.execute_async(mid, ins, outs, other_stream) == STREAM_CONTEXT


# -- 7. a NULL output pointer is judged after the router ------------------------------------------------------------
def test_the_router_reads_the_file_or_bytes_before_the_null_output_is_judged(tmp_path):
    """Rule: acl_model.cpp aclmdlLoadFromFile (and the other loads and queries) first routes the model
    (acl_model_router.cpp AclIsOm2ModelByPath / AclIsOm2ModelByData -> om2_model_executor.cc IsOm2Model: a null
    path or model, size 0: 100000; no file: 145002; under 4 bytes: 145006), and only then does the API's Impl
    refuse a NULL modelId / workSize (ACL_REQUIRES_NOT_NULL, 100000). The runtime takes the C ABI's NULL
    output as `null_out`."""
    rt = emu.configure("910B", functional=True)
    rt.set_device(0)
    good = tmp_path / "good.om"
    emu.declare_model(good, STATIC)
    tiny = tmp_path / "tiny.om"
    tiny.write_bytes(b"IM")
    emu.declare_model(tiny, STATIC)
    missing = str(tmp_path / "missing.om")

    def code(fn, *args, **kw):
        with pytest.raises(emu.AclError) as e:
            fn(*args, **kw)
        return e.value.code

    assert code(rt.load_from_file, missing, null_out="modelId") == 145002
    assert code(rt.load_from_file, str(tiny), null_out="modelId") == DATA_SIZE_INVALID
    assert code(rt.load_from_file, str(good), null_out="modelId") == INVALID_PARAM
    assert "modelId is null" in emu.acl.get_recent_err_msg()
    assert code(rt.load_from_file_with_mem, missing, 0, 0, 0, 0, null_out="modelId") == 145002
    assert code(rt.query_size, missing, null_out="workSize") == 145002
    assert code(rt.query_size, str(good), null_out="workSize") == INVALID_PARAM
    data = rt.register_host(b"not a model, but four bytes or more")
    assert code(rt.load_from_mem, data, 3, null_out="modelId") == DATA_SIZE_INVALID
    assert code(rt.load_from_mem, 0, 10, null_out="modelId") == INVALID_PARAM
    assert code(rt.load_from_mem, data, 30, null_out="modelId") == INVALID_PARAM  # not a model: the Impl's check
    assert code(rt.load_from_mem_with_mem, data, 2, 0, 0, 0, 0, null_out="modelId") == DATA_SIZE_INVALID
    assert code(rt.query_size_from_mem, data, 3, null_out="workSize") == DATA_SIZE_INVALID
    assert rt.load_from_file(str(good)) == 1  # no id was used by the refused calls


def test_a_model_file_under_4_bytes_is_145006_even_with_a_declaration(tmp_path):
    """Rule: om2_model_executor.cc IsOm2Model(file_path) reads FILE_MAGIC_HEADER_SIZE (4) bytes of the file: a
    shorter one is ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, whatever declaration stands in for it (a
    declaration needs no .om file at all)."""
    acl = acl_on()
    tiny = tmp_path / "tiny.om"
    tiny.write_bytes(b"")
    emu.declare_model(tiny, STATIC)
    assert acl.mdl.load_from_file(str(tiny)) == (0, DATA_SIZE_INVALID)
    assert "0 bytes" in acl.get_recent_err_msg()
    assert acl.mdl.query_size(str(tiny)) == (0, 0, DATA_SIZE_INVALID)
    tiny.unlink()
    assert acl.mdl.load_from_file(str(tiny)) == (1, 0)


# -- 13. aclmdlSetInputDynamicDims ---------------------------------------------------------------------------------
def dims(*values):
    return {"name": "", "dimCount": len(values), "dims": list(values)}


def test_set_input_dynamic_dims_codes_in_the_reference_order(tmp_path):
    """Rule: model.cpp aclmdlSetInputDynamicDimsImpl: a null dataset, dimCount 0, no buffer at the index, a null
    buffer address: 100000; then GeExecutor::SetDynamicDims -> GetCurDynamicDims: an id not loaded 145003
    (GetModelDescInfo), a count other than the inputs' dims or a static dim given another value 145012; a gear
    not among the model's 145013 (IsDynmaicDimsSizeMatchModel); a static model has no recorded input order, so
    any dims are a wrong count (145012)."""
    acl = acl_on()
    mid = load(acl, tmp_path, DIMS)
    ins = dataset(acl, 2 * 3 * 24 * 24 * 2, 24)
    assert acl.mdl.set_input_dynamic_dims(mid, 0, 1, dims(2, 3, 24, 24)) == INVALID_PARAM
    assert acl.mdl.set_input_dynamic_dims(mid, ins, 1, dims()) == INVALID_PARAM
    assert acl.mdl.set_input_dynamic_dims(mid, ins, 5, dims(2, 3, 24, 24)) == INVALID_PARAM
    assert acl.mdl.set_input_dynamic_dims(mid, dataset(acl, 8, (0, 24)), 1, dims(2, 3, 24, 24)) == INVALID_PARAM
    assert acl.mdl.set_input_dynamic_dims(mid + 9, ins, 1, dims(2, 3, 24, 24)) == MODEL_ID_INVALID
    assert acl.mdl.set_input_dynamic_dims(mid, ins, 1, dims(2, 24, 24)) == INPUT_LENGTH_INVALID
    assert acl.mdl.set_input_dynamic_dims(mid, ins, 1, dims(2, 4, 24, 24)) == INPUT_LENGTH_INVALID
    assert "static" in acl.get_recent_err_msg()
    assert acl.mdl.set_input_dynamic_dims(mid, ins, 1, dims(2, 3, 20, 24)) == BATCH_SIZE_INVALID
    assert acl.mdl.set_input_dynamic_dims(mid, ins, 1, dims(-2, 3, 24, 24)) == BATCH_SIZE_INVALID  # (a uint64)
    assert acl.mdl.set_input_dynamic_dims(mid, ins, 1, dims(2, 3, 24, 24)) == 0
    smid = load(acl, tmp_path, STATIC)
    assert acl.mdl.set_input_dynamic_dims(smid, dataset(acl, 128), 0, dims(4, 8)) == INPUT_LENGTH_INVALID


def test_set_input_dynamic_dims_writes_the_gear_and_the_execution_runs_at_it(tmp_path):
    """Rule: GeExecutor::SetDynamicDims writes each of the gear's values (the -1 dims') into the gear buffer,
    8 bytes each when it holds them, else 4; the dataset is marked (dynamicDims) and GeExecutor::ExecModel runs
    that gear (SetDynamicInputDataFlag): its time, the bytes it reads and writes, its sizes unchecked (a
    smaller gear's buffers); aclmdlGetCurOutputDims gives the output at that gear."""
    acl = acl_on()
    rt = emu.current()
    mid = load(acl, tmp_path, DIMS)
    desc = desc_of(acl, mid)
    x_size, gear_size = 1 * 3 * 20 * 20 * 2, acl.mdl.get_input_size_by_index(desc, 1)
    assert gear_size == 24
    g, _ = acl.rt.malloc(gear_size, 0)
    ins = dataset(acl, x_size, (g, gear_size))
    outs = dataset(acl, acl.mdl.get_output_size_by_index(desc, 0))
    assert acl.mdl.execute(mid, ins, outs) == GE_FAILURE  # no gear set: the largest gear's sizes are checked
    assert acl.mdl.set_input_dynamic_dims(mid, ins, 1, dims(1, 3, 20, 20)) == 0
    assert rt.device_array(g, (3,), np.uint64).tolist() == [1, 20, 20]
    assert acl.mdl.get_cur_output_dims(desc, 0)[0]["dims"] == [1, 10]
    assert acl.mdl.execute(mid, ins, outs) == 0
    task = one_task("dims")
    assert task["end"] - task["start"] == pytest.approx((100 + 1 * 10 + 0.25 * 400) * 1e-6)
    assert task["bytes"] == x_size + 24 + 1 * 10 * 4
    g4, _ = acl.rt.malloc(12, 0)
    ins4 = dataset(acl, x_size, (g4, 12))
    assert acl.mdl.set_input_dynamic_dims(mid, ins4, 1, dims(2, 3, 24, 24)) == 0
    assert rt.device_array(g4, (3,), np.uint32).tolist() == [2, 24, 24]


def test_a_short_gear_buffer_fails_the_nd_setter_after_the_gear_is_recorded(tmp_path):
    """Rule: GeExecutor::SetDynamicDims checks the buffer's length (under 4 bytes a value: 145012) after
    GraphExecutor::SetDynamicSize recorded the gear: aclmdlGetCurOutputDims follows it, and the dataset stays
    unmarked (aclmdlSetInputDynamicDimsImpl sets dynamicDims only on success)."""
    acl = acl_on()
    mid = load(acl, tmp_path, DIMS)
    desc = desc_of(acl, mid)
    assert acl.mdl.set_input_dynamic_dims(mid, dataset(acl, 8, 11), 1, dims(1, 3, 24, 24)) == INPUT_LENGTH_INVALID
    assert acl.mdl.get_cur_output_dims(desc, 0)[0]["dims"] == [1, 10]


@pytest.mark.parametrize("bad, error, says", [
    ([2, 3, 24, 24], TypeError, "argument 4 is not dict"),
    ({"dimCount": 4, "dims": (2, 3, 24, 24)}, TypeError, "not a list"),
    ({"dimCount": 5, "dims": [2, 3, 24, 24]}, TypeError, "dimCount"),
    ({"dims": [2, 3, 24, 24]}, TypeError, "dimCount"),
    ({"dimCount": 2, "dims": [2, "3"]}, TypeError, "not list of int"),
    ({"dimCount": 1, "dims": [2 ** 63]}, ValueError, "PyLong_AsLongLong"),
    ({"dimCount": 1, "dims": [2], "name": 5}, RuntimeError, "PyUnicode_AsUTF8String"),
])
def test_pyacl_reads_the_dims_dict_as_pyacl_does(tmp_path, bad, error, says):
    """pyACL's WrapAclMdlSetInputDynamicDims: argument 4 a dict (else "argument 4 is not dict"), its "dims" a
    list (else "The dims of parameter 4 is not a list."), "dimCount" items of it each an int (else "the dims of
    fourth parameter is not list of int") within an int64 (else PyLong_AsLongLong's error); "name", if given, a
    str; items past dimCount are not read."""
    acl = acl_on()
    mid = load(acl, tmp_path, DIMS)
    ins = dataset(acl, 8, 24)
    with pytest.raises(error, match=says):
        acl.mdl.set_input_dynamic_dims(mid, ins, 1, bad)
    assert acl.mdl.set_input_dynamic_dims(mid, ins, 1, {"dimCount": 4, "dims": [2, 3, 24, 24, 99]}) == 0
    with pytest.raises(TypeError, match="args parse failed"):
        acl.mdl.set_input_dynamic_dims(mid, ins, 1)


def test_acl_app_log_writes_the_line_as_the_c_library_does(capsys):
    """pyACL's acl.app_log(log_level, message) (WrapAclAppLog: "is", ACL_APP_LOG, returns None): the emulator
    writes "[LEVEL] file:line function: message" on stderr, as its aclAppLog does for C; acllite's logger calls
    it for every line. Anything but an int and a str: TypeError "acl.app_log args parse failed"."""
    import emu.acl as acl
    assert acl.app_log(3, "the model failed") is None
    assert acl.app_log(1, "info") is None
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("[ERROR] ") and err[0].endswith(" test_acl_app_log_writes_the_line_as_the_c_library_"
                                                              "does: the model failed")
    assert __file__ in err[0] and err[1].startswith("[INFO] ")
    for bad in [("3", "x"), (3,), (3, b"x"), (2 ** 40, "x")]:
        with pytest.raises(TypeError, match="acl.app_log args parse failed"):
            acl.app_log(*bad)


# -- the table --------------------------------------------------------------------------------------------------
def test_load_with_mem_takes_device_memory_only(tmp_path):
    """(emulator) aclmdlLoadFromFileWithMem / FromMemWithMem: a non-null workPtr or weightPtr must be device memory
    of the size given (100000); null pointers let the runtime allocate its own. The reference hands the pointers
    to GE unchecked (ConstructGeModelLoadArg); a model run from host memory would fault on the board."""
    acl = acl_on()
    path = tmp_path / "static.om"
    emu.declare_model(path, STATIC)
    host, _ = acl.rt.malloc_host(4096)
    dev, _ = acl.rt.malloc(4096, 0)
    assert acl.mdl.load_from_file_with_mem(str(path), host, 4096, 0, 0) == (0, INVALID_PARAM)
    assert "device memory" in acl.get_recent_err_msg()
    assert acl.mdl.load_from_file_with_mem(str(path), dev, 4096, host, 4096) == (0, INVALID_PARAM)
    assert acl.mdl.load_from_file_with_mem(str(path), dev, 4096, 0, 0) == (1, 0)


def test_every_row_of_the_models_table_names_a_test_that_exists():
    """docs/conformance/models.md: each row's last cell is tests/<file>::<function>, a test of that file."""
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parent
    page = (root.parent / "docs" / "conformance" / "models.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| ") and ".py::" in line]
    assert len(rows) > 50
    tests: dict[str, set[str]] = {}
    for row in rows:
        order, *_, cell = [c.strip() for c in row.strip("|").split("|")]
        name, func = cell.split("::")
        if name not in tests:
            tree = ast.parse((root / name).read_text(encoding="utf-8"))
            tests[name] = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")}
        assert func in tests[name], f"{order}: {cell} is no test"
