"""Offline models (aclmdl*, acl.mdl.*) run as declared stand-ins, with their datasets and data buffers.

The emulator does not run an `.om` file: a model is its declaration (`emu.modeldecl`: inputs, outputs, gears,
time per product). Loading, descriptions, datasets, data buffers and execution follow the reference's checks and
codes (hicann/ge api/acl/acl_model/model/{acl_model.cpp, acl_model_router.cpp, model.cpp, model_om2.cpp,
model_common.cpp}; runtime/v1/executor/ge_executor.cc; runtime/v1/graph/load/model_manager/{model_manager.cc,
davinci_model.cc}; hicann/runtime src/acl/aclrt_impl/data_buffer.cpp; the table: docs/conformance/models.md):

- Model ids are 1, 2, 3, ... per process, never reused; a load that fails after its file was read uses one
  (ModelManager::LoadModelOffline: GenModelId, then ModelHelper::LoadRootModel).
- A declaration that is wrong in any way (not TOML, nested too deeply, a wrong type, a missing field, a size past
  a size_t or a dim past an int64, no time for the product) or missing beside an .om file is a model file GE
  cannot parse: 145000, ACL_ERROR_GE_PARAM_INVALID (base/common/helper/model_helper.cc ModelHelper::LoadRootModel
  and ModelManager::GetModelMemAndWeightSize, when ModelParserBase::ParseModelContent fails), with the one-line
  problem as the recent error message. An id not loaded is 145003 (ModelManager::ExecuteModel, GetDesc,
  Unload, the gear setters), but for aclmdlExecute with an empty output buffer, which the ACL layer refuses
  first (100000).
- Gears (dynamic batch, image size, ND dims): a setter marks the dataset, even when GE then refuses the gear, and
  records the model's current gear once GE accepts it; an execution of a marked dataset runs at its gear without
  size checks; aclmdlGetCurOutputDims follows the recorded gear.
- The getters of a description or dataset fail silently, as the reference does: a null or unknown handle, or an
  index past the end, gives 0, "" (names), -1 (formats, data types) or a null buffer.
- An execution is one task on a stream (the model's own stream for aclmdlExecute, which waits for it): it holds
  the device's compute for the declared time on this product (and gear), reads every input buffer and writes
  every output buffer (the sanitizer sees both), in stream order with copies, events and callbacks. Its label is
  the model's name in records, traces and summaries.
- Functional mode: each output's bytes are a pure function of the model's name, the output's index and the
  bytes of every input (SHAKE-256 of them): floating outputs hold values in [0, 1), integer ones the hash's raw
  bytes. The same inputs give the same outputs, run after run.

Handles of descriptions, datasets and data buffers are ints, like the runtime's other handles; an unknown
non-null handle (a freed struct in C) is refused with 100000 by the APIs that return a code.
"""
from __future__ import annotations

import hashlib
import os
import stat

import numpy as np

from emu.models import KERNEL, Task

from .. import constants as C
from .. import modeldecl
from ..errors import (ACL_ERROR_FAILURE, ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID,
                      ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID, ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID,
                      ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, ACL_ERROR_GE_FAILURE,
                      ACL_ERROR_GE_PARAM_INVALID, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_MODEL_CONTEXT)
from ..memory import Region
from . import allocation, transfer
from .core import Context, Core, Stream, api, fail, new_handle

# GE's external codes (emu.errors) pass through ACL (api/acl/common/error_codes_inner.h ACL_GET_ERRCODE_GE);
# GE's inner codes surface as ACL_ERROR_GE_FAILURE.
SIZE_SLACK = 64  # davinci_model.cc CheckUserAndModelSize: kDataMemAlignSizeCompare
MAX_NAME = 128  # ACL_MAX_TENSOR_NAME_LEN


class LoadedModel:
    """A loaded model: its id, declaration, the context it was loaded in, the mode it executes in (None, "sync" or
    "async"), its own stream (for aclmdlExecute) and its current gear, (ND, values), which the last setter that
    reached GE's SetDynamicSize recorded (DavinciModel::SetDynamicSize: batch_size_ and dynamic_type_), else None."""

    def __init__(self, model_id: int, decl: modeldecl.ModelDecl, ctx: Context):
        self.id, self.decl, self.ctx = model_id, decl, ctx
        self.mode: str | None = None
        self.stream: Stream | None = None
        self.cur_shape: tuple[bool, tuple[int, ...]] | None = None


class ModelDesc:
    """An aclmdlDesc: what aclmdlGetDesc filled in (empty until then)."""

    def __init__(self):
        self.handle = new_handle()
        self.decl: modeldecl.ModelDecl | None = None
        self.model_id = 0


class Dataset:
    """An aclmdlDataset: its data buffers' handles, in order, and the gear marks the setters leave on it, as the
    ACL layer's struct holds them: dynamicBatchSize (`batch`), dynamicResolutionHeight and Width (`hw`) and
    dynamicDims (`dims`); 0 and () when not set."""

    def __init__(self):
        self.handle = new_handle()
        self.buffers: list[int] = []
        self.batch, self.hw, self.dims = 0, (0, 0), ()


class DataBuffer:
    """An aclDataBuffer: an address and a length (both may be 0: an empty buffer)."""

    def __init__(self, data: int, size: int):
        self.handle = new_handle()
        self.data, self.size = data, size


class _Models:
    """A runtime's loaded models and the next model id (ids start at 1: model_manager.h max_model_id_)."""

    def __init__(self):
        self.next_id = 1
        self.loaded: dict[int, LoadedModel] = {}


def _models(rt: Core) -> _Models:
    return rt.family_state("inference", lambda _: _Models())


def _obj(rt: Core, handle: int, typ):
    """The live `typ` a handle names, else None (a null or unknown handle: a destroyed one is no longer in
    `rt.handles`)."""
    obj = rt.handles.get(handle) if isinstance(handle, int) else None
    return obj if isinstance(obj, typ) else None


def _need(rt: Core, handle: int, typ, what: str):
    """The live `typ` a handle names; null or unknown: 100000 (ACL_REQUIRES_NOT_NULL; an unknown handle would
    be a freed struct on the board)."""
    if not handle:
        fail(ACL_ERROR_INVALID_PARAM, f"{what} is null")
    obj = _obj(rt, handle, typ)
    if obj is None:
        fail(ACL_ERROR_INVALID_PARAM, f"{what} 0x{handle:x} is not a live {what}")
    return obj


def _model(rt: Core, model_id: int) -> LoadedModel:
    """The loaded model of an id, else 145003 (ModelManager: "Invalid model id")."""
    m = _models(rt).loaded.get(model_id)
    if m is None:
        fail(ACL_ERROR_GE_EXEC_MODEL_ID_INVALID,
             f"Invalid model id {model_id}, check whether model has been loaded or not")
    return m


# -- load, query, unload ------------------------------------------------------------------------------------
def _parsed(rt: Core, read, *args, load: bool = True) -> modeldecl.ModelDecl:
    """read(*args), the declaration; a ModelDeclarationError is 145000 with its one-line problem. A load uses a
    model id first (LoadModelOffline: GenModelId before LoadRootModel parses the model); a query does not."""
    try:
        return read(*args)
    except modeldecl.ModelDeclarationError as e:
        if load:
            _models(rt).next_id += 1
        fail(ACL_ERROR_GE_PARAM_INVALID, e.problem)


MAGIC_BYTES = 4  # om2_model_executor.cc FILE_MAGIC_HEADER_SIZE: what IsOm2Model reads of a model to route it


def _null_output(null_out: str) -> None:
    """The C ABI's NULL output pointer (`null_out` names it), judged where the reference judges it: by the API's
    Impl (ACL_REQUIRES_NOT_NULL, 100000), after acl_model.cpp's router has read the file or the bytes."""
    if null_out:
        fail(ACL_ERROR_INVALID_PARAM, f"{null_out} is null")


def _declaration_of_file(rt: Core, path, load: bool = True, null_out: str = "") -> modeldecl.ModelDecl:
    """The router (acl_model.cpp aclmdlLoadFromFile & co: acl_model_router.cpp AclIsOm2ModelByPath,
    om2_model_executor.cc IsOm2Model), then the API's Impl, then GraphLoader::LoadDataFromFile: a null path 100000;
    no model file and no declaration 145002; a model file under 4 bytes 145006; then a null output (`null_out`)
    100000. A declaration stands in even without the .om file; a wrong one, or an $ACL_EMU_MODELS that cannot be
    read, is 145000 (`_parsed`)."""
    if path is None:
        fail(ACL_ERROR_INVALID_PARAM, "modelPath is null")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"modelPath must be a str, got {type(path).__name__}")
    if not os.path.exists(path) and _parsed(rt, modeldecl.declaration_source, path, load=load) is None:
        fail(ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID,
             f"model file {os.fspath(path)!r} does not exist (and no declaration stands in "
                                    f"for it: {os.fspath(path)}.toml, emu.declare_model or "
                                    f"{modeldecl.MODELS_ENV})")
    size = _file_size(path)
    if size is not None and size < MAGIC_BYTES:
        fail(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID,
             f"model file {os.fspath(path)!r} holds {size} bytes, under the {MAGIC_BYTES} of a model's magic "
             f"number: no model (its declaration stands in without the file: remove the file)")
    _null_output(null_out)
    return _parsed(rt, modeldecl.for_file, path, load=load)


def _file_size(path) -> int | None:
    """The size of the regular file at `path`, None when there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _declaration_of_bytes(rt: Core, model: int, size: int, load: bool = True,
                          null_out: str = "") -> modeldecl.ModelDecl:
    """The router (acl_model_router.cpp AclIsOm2ModelByData): a null model or size 0 100000, fewer than 4 bytes
    145006; then a null output (`null_out`) 100000; the bytes are read from host memory the emulator knows."""
    if not model or size == 0:
        fail(ACL_ERROR_INVALID_PARAM, "model is null or modelSize is 0")
    if size < MAGIC_BYTES:
        fail(ACL_ERROR_GE_EXEC_MODEL_DATA_SIZE_INVALID, f"modelSize {size} is under 4 bytes: no model")
    _null_output(null_out)
    r, off = transfer.locate(rt, model, size)
    if r.virtual:
        fail(ACL_ERROR_INVALID_PARAM, f"{r.describe()} is timing-only: it holds no model bytes")
    return _parsed(rt, modeldecl.for_bytes, r.view(off, size).tobytes(), load=load)


def _load(rt: Core, decl: modeldecl.ModelDecl) -> int:
    """A model id for `decl`, loaded on the current context's device (GenModelId, then the load)."""
    ctx = rt.current_context()
    models = _models(rt)
    model_id, models.next_id = models.next_id, models.next_id + 1
    _parsed(rt, decl.timing, rt.product.name, load=False)  # a product compute_us does not cover: at load (145000)
    models.loaded[model_id] = LoadedModel(model_id, decl, ctx)
    return model_id


@api("aclmdlLoadFromFile", pyacl="acl.mdl.load_from_file", params="s", outputs=(0,))
def load_from_file(rt: Core, model_path: str, *, null_out: str = "") -> int:
    """Load the model of a file (aclmdlLoadFromFile) and return its id (1, 2, ... never reused): the emulator
    runs its declaration (`emu.modeldecl`: X.om.toml beside it, `emu.declare_model`, $ACL_EMU_MODELS), with
    or without the .om file. A null path: 100000; no file and no declaration: 145002; a missing or wrong
    declaration beside an .om file: 145000, the message naming the file and the problem; a model file under 4
    bytes: 145006 (acl_model_router.cpp AclIsOm2ModelByPath, model.cpp aclmdlLoadFromFileImpl,
    GraphLoader::LoadDataFromFile, ModelHelper::LoadRootModel).
    `null_out` (keyword): the C ABI's NULL output pointer, named: the router's checks first, then 100000
    (acl_model.cpp: AclIsOm2ModelBy{Path,Data} before the Impl's ACL_REQUIRES_NOT_NULL)."""
    return _load(rt, _declaration_of_file(rt, model_path, null_out=null_out))


@api("aclmdlLoadFromMem", sizes=("model_size",), pyacl="acl.mdl.load_from_mem", params="ii", outputs=(0,))
def load_from_mem(rt: Core, model: int, model_size: int, *, null_out: str = "") -> int:
    """Load a model from host memory (aclmdlLoadFromMem) and return its id. The bytes are those of an .om file
    declared with `emu.declare_model` or named in $ACL_EMU_MODELS (found by their SHA-256), or a declaration's
    TOML text. A null model or size 0: 100000; under 4 bytes: 145006 (acl_model_router.cpp
    AclIsOm2ModelByData).
    `null_out` (keyword): the C ABI's NULL output pointer, named: the router's checks first, then 100000
    (acl_model.cpp: AclIsOm2ModelBy{Path,Data} before the Impl's ACL_REQUIRES_NOT_NULL)."""
    return _load(rt, _declaration_of_bytes(rt, model, model_size, null_out=null_out))


def _check_with_mem(rt: Core, work_ptr: int, work_size: int, weight_ptr: int, weight_size: int) -> None:
    """The workspace and weight memory the program gives: device memory of the sizes it says, when not null."""
    for what, ptr, size in (("workPtr", work_ptr, work_size), ("weightPtr", weight_ptr, weight_size)):
        if ptr:
            r, _ = transfer.locate(rt, ptr, size)
            if not r.is_device:
                fail(ACL_ERROR_INVALID_PARAM, f"{what} 0x{ptr:x} is {r.describe()}: the model's memory is device "
                                              f"memory")


@api("aclmdlLoadFromFileWithMem", sizes=("work_size", "weight_size"), pyacl="acl.mdl.load_from_file_with_mem",
     params="siiii", outputs=(0,))
def load_from_file_with_mem(rt: Core, model_path: str, work_ptr: int, work_size: int, weight_ptr: int,
                            weight_size: int, *, null_out: str = "") -> int:
    """aclmdlLoadFromFileWithMem: `load_from_file` with the workspace and weight memory the program allocated
    (sizes from aclmdlQuerySize; null pointers: the runtime allocates its own). A non-null pointer must be
    device memory of that size (100000). `null_out`: as `load_from_file`'s."""
    decl = _declaration_of_file(rt, model_path, null_out=null_out)
    _check_with_mem(rt, work_ptr, work_size, weight_ptr, weight_size)
    return _load(rt, decl)


@api("aclmdlLoadFromMemWithMem", sizes=("model_size", "work_size", "weight_size"),
     pyacl="acl.mdl.load_from_mem_with_mem", params="iiiiii", outputs=(0,))
def load_from_mem_with_mem(rt: Core, model: int, model_size: int, work_ptr: int, work_size: int, weight_ptr: int,
                           weight_size: int, *, null_out: str = "") -> int:
    """aclmdlLoadFromMemWithMem: `load_from_mem` with the program's workspace and weight memory. `null_out`: as
    `load_from_mem`'s."""
    decl = _declaration_of_bytes(rt, model, model_size, null_out=null_out)
    _check_with_mem(rt, work_ptr, work_size, weight_ptr, weight_size)
    return _load(rt, decl)


@api("aclmdlQuerySize", pyacl="acl.mdl.query_size", params="s", outputs=(0, 0))
def query_size(rt: Core, file_name: str, *, null_out: str = "") -> tuple[int, int]:
    """(work size, weight size) in bytes a model needs (aclmdlQuerySize): the declaration's work_size and
    weight_size, else the sum of its tensors' sizes (acl_model.cpp aclmdlQuerySize: the router, then model.cpp
    aclmdlQuerySizeImpl: null 100000, no file 145002, a file under 4 bytes 145006; a wrong declaration 145000,
    ModelManager::GetModelMemAndWeightSize). `null_out`: as `load_from_file`'s."""
    decl = _declaration_of_file(rt, file_name, load=False, null_out=null_out)
    return decl.work_size, decl.weight_size


@api("aclmdlQuerySizeFromMem", sizes=("model_size",), pyacl="acl.mdl.query_size_from_mem", params="ii",
     outputs=(0, 0))
def query_size_from_mem(rt: Core, model: int, model_size: int, *, null_out: str = "") -> tuple[int, int]:
    """(work size, weight size) of a model in host memory (aclmdlQuerySizeFromMem); see `load_from_mem`."""
    decl = _declaration_of_bytes(rt, model, model_size, load=False, null_out=null_out)
    return decl.work_size, decl.weight_size


@api("aclmdlUnload", pyacl="acl.mdl.unload", params="i")
def unload(rt: Core, model_id: int) -> None:
    """Unload a model (aclmdlUnload). An id not loaded (never, or already unloaded): 145003
    (GeExecutor::UnloadModel, ModelManager::DestroyAicpuSessionForInfer). Datasets and buffers stay the
    program's."""
    rt.runtime_layer()
    m = _model(rt, model_id)
    del _models(rt).loaded[m.id]


# -- descriptions ---------------------------------------------------------------------------------------
@api("aclmdlCreateDesc", pyacl="acl.mdl.create_desc", outputs=(0,), by_hand=True)
def create_desc(rt: Core) -> int:
    """A new, empty model description (aclmdlCreateDesc): fill it with aclmdlGetDesc."""
    d = ModelDesc()
    rt.handles[d.handle] = d
    return d.handle


@api("aclmdlDestroyDesc", pyacl="acl.mdl.destroy_desc", params="i")
def destroy_desc(rt: Core, model_desc: int) -> None:
    """Destroy a model description (aclmdlDestroyDesc); null: 100000."""
    rt.handles.pop(_need(rt, model_desc, ModelDesc, "modelDesc").handle)


@api("aclmdlGetDesc", pyacl="acl.mdl.get_desc", params="ii")
def get_desc(rt: Core, model_desc: int, model_id: int) -> None:
    """Fill a description with a loaded model's inputs, outputs and gears (aclmdlGetDesc). Null: 100000; the
    description is emptied first, then an id not loaded is 145003 (model.cpp aclmdlGetDescImpl: Clear, then
    ModelManager::GetInputOutputDescInfo)."""
    d = _need(rt, model_desc, ModelDesc, "modelDesc")
    d.decl, d.model_id = None, 0
    m = _model(rt, model_id)
    d.decl, d.model_id = m.decl, m.id


def _tensors(rt: Core, model_desc: int, side: str):
    d = _obj(rt, model_desc, ModelDesc)
    if d is None or d.decl is None:
        return ()
    return d.decl.inputs if side == "input" else d.decl.outputs


def _tensor(rt: Core, model_desc: int, index: int, side: str):
    """The tensor at `index` of a description's inputs or outputs, else None (a silent getter's miss)."""
    tensors = _tensors(rt, model_desc, side)
    return tensors[index] if isinstance(index, int) and 0 <= index < len(tensors) else None


def _field(rt: Core, model_desc: int, index: int, side: str, attr: str, missing):
    """The attribute `attr` of the tensor at `index` of a description's inputs or outputs; `missing` for a
    null description or an index past the end (the silent getters' miss)."""
    t = _tensor(rt, model_desc, index, side)
    return missing if t is None else getattr(t, attr)


@api("aclmdlGetNumInputs", pyacl="acl.mdl.get_num_inputs", params="i", outputs=(0,), by_hand=True)
def get_num_inputs(rt: Core, model_desc: int) -> int:
    """How many inputs the model has, the gear input included (aclmdlGetNumInputs); 0 for a null description."""
    return len(_tensors(rt, model_desc, "input"))


@api("aclmdlGetNumOutputs", pyacl="acl.mdl.get_num_outputs", params="i", outputs=(0,), by_hand=True)
def get_num_outputs(rt: Core, model_desc: int) -> int:
    """How many outputs the model has (aclmdlGetNumOutputs); 0 for a null description."""
    return len(_tensors(rt, model_desc, "output"))


@api("aclmdlGetInputSizeByIndex", sizes=("index",), pyacl="acl.mdl.get_input_size_by_index",
     params="ii", outputs=(0,), by_hand=True)
def get_input_size_by_index(rt: Core, model_desc: int, index: int) -> int:
    """An input's size in bytes, of the largest gear for a model with gears (aclmdlGetInputSizeByIndex); 0 for
    a null description or an index past the end (model_om2.cpp)."""
    return _field(rt, model_desc, index, "input", "nbytes", 0)


@api("aclmdlGetOutputSizeByIndex", sizes=("index",), pyacl="acl.mdl.get_output_size_by_index",
     params="ii", outputs=(0,), by_hand=True)
def get_output_size_by_index(rt: Core, model_desc: int, index: int) -> int:
    """An output's size in bytes, of the largest gear (aclmdlGetOutputSizeByIndex); 0 on a miss."""
    return _field(rt, model_desc, index, "output", "nbytes", 0)


def _dims(rt: Core, model_desc: int, index: int, side: str, current: bool = False) -> dict:
    """model_common.cpp GetDims: null description 100000, index past the end 100000, over 128 dims 300000; a name
    of 128 characters or more is given as acl_modelId_<id>_<side>_<index>. (Over 128 dims, 300000, cannot happen:
    a declaration has at most 128.) An input's dims keep the gear's -1 (DavinciModel::CreateInputDimsInfo:
    ATTR_MBATCH_ORIGIN_INPUT_DIMS); an output's are those of its largest gear (the compiled NetOutput's shape,
    multi_batch_clone_pass.cc SetMaxShape; doc aclmdlGetOutputDims.md). `current`: aclmdlGetCurOutputDims's."""
    d = _need(rt, model_desc, ModelDesc, "modelDesc")
    t = _tensor(rt, model_desc, index, side)
    if t is None:
        count = len(_tensors(rt, model_desc, side))
        fail(ACL_ERROR_INVALID_PARAM, f"{side} index {index} is not below the model's {count} {side}s")
    name = t.name if len(t.name) + 1 <= MAX_NAME else f"acl_modelId_{d.model_id}_{side}_{index}"
    dims = t.shape if side == "input" else t.max_shape
    if current:
        dims = _current_dims(rt, d, t, dims)
    return {"name": name, "dimCount": len(dims), "dims": list(dims)}


def _current_dims(rt: Core, d: ModelDesc, t: modeldecl.Tensor, described: tuple[int, ...]) -> tuple[int, ...]:
    """model.cpp aclmdlGetCurOutputDimsImpl after its index check: the model's current gear (GeExecutor::GetCurShape:
    an id no longer loaded 145003); none set, the described dims; else the gear's place among the description's
    gears (model_common.cpp GetCurGearIndex: ND gears among the ND ones, else one value among the batches and two
    among the image sizes; not found 500001) and the output's dims there (GetCurOuputShapeInfo)."""
    m = _model(rt, d.model_id)
    if m.cur_shape is None:
        return described
    nd, values = m.cur_shape
    decl = d.decl
    kind = "dims" if nd else {1: "batch", 2: "hw"}.get(len(values))
    listed = {"dims": decl.dims, "batch": tuple((b,) for b in decl.batches), "hw": decl.hws}.get(kind, ())
    if values not in listed:
        fail(ACL_ERROR_FAILURE, f"the model's current gear {list(values)} is not among its description's "
                                f"{'ND' if nd else 'batch' if kind == 'batch' else 'image-size'} gears")
    return t.dims_at(*modeldecl.gear_args(kind, values))


@api("aclmdlGetInputDims", sizes=("index",), pyacl="acl.mdl.get_input_dims", params="ii", outputs=({},))
def get_input_dims(rt: Core, model_desc: int, index: int) -> dict:
    """An input's dims, {"name", "dimCount", "dims"} (aclmdlGetInputDims); a gear dim is -1. A null description
    or an index past the end: 100000 (model_om2.cpp, model_common.cpp GetDims)."""
    return _dims(rt, model_desc, index, "input")


@api("aclmdlGetInputDimsV2", sizes=("index",), pyacl="acl.mdl.get_input_dims_v2", params="ii", outputs=({},))
def get_input_dims_v2(rt: Core, model_desc: int, index: int) -> dict:
    """aclmdlGetInputDimsV2: `get_input_dims` (a declared model has no format-converted dims of its own)."""
    return _dims(rt, model_desc, index, "input")


@api("aclmdlGetOutputDims", sizes=("index",), pyacl="acl.mdl.get_output_dims", params="ii", outputs=({},))
def get_output_dims(rt: Core, model_desc: int, index: int) -> dict:
    """An output's dims, {"name", "dimCount", "dims"} (aclmdlGetOutputDims); for a model with gears, those of
    the largest gear (doc aclmdlGetOutputDims.md: the compiled output's shape), whatever gear is set."""
    return _dims(rt, model_desc, index, "output")


@api("aclmdlGetCurOutputDims", sizes=("index",), pyacl="acl.mdl.get_cur_output_dims", params="ii", outputs=({},))
def get_cur_output_dims(rt: Core, model_desc: int, index: int) -> dict:
    """An output's dims at the model's current gear (aclmdlGetCurOutputDims): the gear of the last setter that
    reached GE's SetDynamicSize on any dataset of the model, not that of the last execution; a static model, or
    one no setter has set, gives `get_output_dims` (its largest gear). A null description or an index past the
    end 100000; the model unloaded 145003 (model.cpp aclmdlGetCurOutputDimsImpl, GeExecutor::GetCurShape)."""
    return _dims(rt, model_desc, index, "output", current=True)


@api("aclmdlGetInputNameByIndex", sizes=("index",), pyacl="acl.mdl.get_input_name_by_index",
     params="ii", outputs=("",), by_hand=True)
def get_input_name_by_index(rt: Core, model_desc: int, index: int) -> str:
    """An input's name (aclmdlGetInputNameByIndex); "" for a null description or an index past the end."""
    return _field(rt, model_desc, index, "input", "name", "")


@api("aclmdlGetOutputNameByIndex", sizes=("index",), pyacl="acl.mdl.get_output_name_by_index",
     params="ii", outputs=("",), by_hand=True)
def get_output_name_by_index(rt: Core, model_desc: int, index: int) -> str:
    """An output's name (aclmdlGetOutputNameByIndex); "" on a miss."""
    return _field(rt, model_desc, index, "output", "name", "")


@api("aclmdlGetInputFormat", sizes=("index",), pyacl="acl.mdl.get_input_format",
     params="ii", outputs=(-1,), by_hand=True)
def get_input_format(rt: Core, model_desc: int, index: int) -> int:
    """An input's aclFormat (aclmdlGetInputFormat); ACL_FORMAT_UNDEFINED (-1) on a miss."""
    return _field(rt, model_desc, index, "input", "format", modeldecl.UNDEFINED)


@api("aclmdlGetOutputFormat", sizes=("index",), pyacl="acl.mdl.get_output_format",
     params="ii", outputs=(-1,), by_hand=True)
def get_output_format(rt: Core, model_desc: int, index: int) -> int:
    """An output's aclFormat (aclmdlGetOutputFormat); -1 on a miss."""
    return _field(rt, model_desc, index, "output", "format", modeldecl.UNDEFINED)


@api("aclmdlGetInputDataType", sizes=("index",), pyacl="acl.mdl.get_input_data_type",
     params="ii", outputs=(-1,), by_hand=True)
def get_input_data_type(rt: Core, model_desc: int, index: int) -> int:
    """An input's aclDataType (aclmdlGetInputDataType); ACL_DT_UNDEFINED (-1) on a miss."""
    return _field(rt, model_desc, index, "input", "dtype", modeldecl.UNDEFINED)


@api("aclmdlGetOutputDataType", sizes=("index",), pyacl="acl.mdl.get_output_data_type",
     params="ii", outputs=(-1,), by_hand=True)
def get_output_data_type(rt: Core, model_desc: int, index: int) -> int:
    """An output's aclDataType (aclmdlGetOutputDataType); -1 on a miss."""
    return _field(rt, model_desc, index, "output", "dtype", modeldecl.UNDEFINED)


def _index_by_name(rt: Core, model_desc: int, name: str, side: str) -> int:
    _need(rt, model_desc, ModelDesc, "modelDesc")
    if name is None:
        fail(ACL_ERROR_INVALID_PARAM, "name is null")
    for i, t in enumerate(_tensors(rt, model_desc, side)):
        if t.name == name:
            return i
    fail(ACL_ERROR_INVALID_PARAM, f"the model has no {side} named {name!r}")


@api("aclmdlGetInputIndexByName", pyacl="acl.mdl.get_input_index_by_name", params="is", outputs=(0,))
def get_input_index_by_name(rt: Core, model_desc: int, name: str) -> int:
    """The index of the input named `name` (aclmdlGetInputIndexByName); no such input (a static model asked for
    "ascend_mbatch_shape_data"), a null description or name: 100000."""
    return _index_by_name(rt, model_desc, name, "input")


@api("aclmdlGetOutputIndexByName", pyacl="acl.mdl.get_output_index_by_name", params="is", outputs=(0,))
def get_output_index_by_name(rt: Core, model_desc: int, name: str) -> int:
    """The index of the output named `name` (aclmdlGetOutputIndexByName); not found or null: 100000."""
    return _index_by_name(rt, model_desc, name, "output")


@api("aclmdlGetDynamicBatch", pyacl="acl.mdl.get_dynamic_batch", params="i", outputs=({},))
def get_dynamic_batch(rt: Core, model_desc: int) -> dict:
    """The batch gears, {"batchCount", "batch"} (aclmdlGetDynamicBatch); batchCount 0 for a model without.
    A null description: 100000."""
    d = _need(rt, model_desc, ModelDesc, "modelDesc")
    batches = list(d.decl.batches) if d.decl is not None else []
    return {"batchCount": len(batches), "batch": batches}


@api("aclmdlGetDynamicHW", sizes=("index",), pyacl="acl.mdl.get_dynamic_hw", params="ii", outputs=({},))
def get_dynamic_hw(rt: Core, model_desc: int, index: int) -> dict:
    """The image-size gears, {"hwCount", "hw": [[h, w], ...]} (aclmdlGetDynamicHW; index is reserved: -1).
    hwCount 0 for a model without. A null description: 100000."""
    d = _need(rt, model_desc, ModelDesc, "modelDesc")
    hws = [list(g) for g in d.decl.hws] if d.decl is not None else []
    return {"hwCount": len(hws), "hw": hws}


# -- gears -----------------------------------------------------------------------------------------------
# The ACL layer marks the dataset with the gear before the graph engine checks it (model.cpp
# aclmdlSetDynamicBatchSizeImpl, aclmdlSetDynamicHWSizeImpl: dataset->dynamicBatchSize / dynamicResolution set,
# then GeExecutor::SetDynamicBatchSize / SetDynamicImageSize), so a setter that fails in GE leaves the dataset
# marked; aclmdlSetInputDynamicDimsImpl clears every mark first and sets the ND one only once GE succeeded. GE
# records the model's current gear (GraphExecutor::SetDynamicSize, DavinciModel::SetDynamicSize) once the gear
# matches one of the model's: aclmdlGetCurOutputDims reads it (GetCurShape), whatever runs after.
def _gear_buffer(rt: Core, dataset: int, index: int) -> tuple[Dataset, DataBuffer]:
    """model.cpp aclmdlSetDynamicBatchSizeImpl: null dataset, no buffer at index, a null buffer address: 100000."""
    ds = _need(rt, dataset, Dataset, "dataset")
    buf = _obj(rt, ds.buffers[index], DataBuffer) if 0 <= index < len(ds.buffers) else None
    if buf is None:
        fail(ACL_ERROR_INVALID_PARAM, f"the dataset has no buffer at index {index}")
    if not buf.data:
        fail(ACL_ERROR_INVALID_PARAM, f"the buffer at index {index} has a null address")
    return ds, buf


def _check_gear_buffer(buf: DataBuffer, values: int) -> None:
    """GeExecutor::SetDynamicBatchSize / SetDynamicImageSize / SetDynamicDims: a gear buffer under 4 bytes a value:
    145012."""
    if buf.size < 4 * values:
        fail(ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID, f"the gear buffer holds {buf.size} bytes, under {4 * values}")


def _write_gear(rt: Core, buf: DataBuffer, values: tuple[int, ...], api: str) -> None:
    """GE writes the gear into the ascend_mbatch_shape_data buffer (a blocking host-to-device copy, of `api`):
    uint64 values when the buffer holds them, else uint32."""
    width = 8 if buf.size >= 8 * len(values) else 4
    data = np.array(values, dtype=np.uint64 if width == 8 else np.uint32).tobytes()
    r, off = transfer.locate(rt, buf.data, len(data))
    rt.sanitize_host_span(api, r, off, len(data), "w")
    if transfer.has_bytes(rt, "the gear", r):
        r.target(off, len(data))[:] = np.frombuffer(data, dtype=np.uint8)


def _match(m: LoadedModel, gear: tuple[int, ...], what: str) -> None:
    """ge_executor.cc IsDynamicBatchSizeMatchModel, IsDynamicImageSizeMatchModel, IsDynmaicDimsSizeMatchModel: a
    gear that is not one of the model's (a static model has none): 145013."""
    if gear not in m.decl.gears:
        gears = [list(g) for g in m.decl.gears]
        fail(ACL_ERROR_GE_DYNAMIC_BATCH_SIZE_INVALID,
             f"{what} {list(gear)} is not one of model {m.id}'s gears {gears}" if gears else
             f"{what} {list(gear)}: model {m.id} has no gears")


@api("aclmdlSetDynamicBatchSize", sizes=("index",), pyacl="acl.mdl.set_dynamic_batch_size", params="iiii")
def set_dynamic_batch_size(rt: Core, model_id: int, dataset: int, index: int, batch_size: int) -> None:
    """Set the batch gear of an input dataset (aclmdlSetDynamicBatchSize): `index` is the
    ascend_mbatch_shape_data input's. In the reference's order (model.cpp aclmdlSetDynamicBatchSizeImpl, then
    GeExecutor::SetDynamicBatchSize): a null dataset, batch 0, no buffer at index, a null buffer: 100000; the
    dataset is then marked with the batch, even if what follows fails; a gear buffer under 4 bytes 145012; an id
    not loaded 145003; a batch not among the model's gears 145013. Then the batch is the model's current gear
    (aclmdlGetCurOutputDims) and is written into the gear buffer."""
    _need(rt, dataset, Dataset, "dataset")
    if not batch_size:
        fail(ACL_ERROR_INVALID_PARAM, "batchSize is 0")
    ds, buf = _gear_buffer(rt, dataset, index)
    ds.batch, ds.hw = batch_size, (0, 0)
    _check_gear_buffer(buf, 1)
    m = _model(rt, model_id)
    _match(m, (batch_size,), "batch")
    m.cur_shape = (False, (batch_size,))
    _write_gear(rt, buf, (batch_size,), "aclmdlSetDynamicBatchSize")


@api("aclmdlSetDynamicHWSize", sizes=("index",), pyacl="acl.mdl.set_dynamic_hw_size", params="iiiii")
def set_dynamic_hw_size(rt: Core, model_id: int, dataset: int, index: int, height: int, width: int) -> None:
    """Set the image-size gear of an input dataset (aclmdlSetDynamicHWSize), in the reference's order (model.cpp
    aclmdlSetDynamicHWSizeImpl, GeExecutor::SetDynamicImageSize): a null dataset, a zero height or width, no
    buffer at index, a null buffer: 100000; the dataset is then marked with the size, even if what follows
    fails; a gear buffer under 8 bytes 145012; an id not loaded 145003; a size not among the model's gears 145013.
    Then the size is the model's current gear and is written into the gear buffer."""
    _need(rt, dataset, Dataset, "dataset")  # (the null dataset first, before the sizes)
    if not height or not width:
        fail(ACL_ERROR_INVALID_PARAM, f"height {height} or width {width} is 0")
    ds, buf = _gear_buffer(rt, dataset, index)
    ds.batch, ds.hw = 0, (height, width)
    _check_gear_buffer(buf, 2)
    m = _model(rt, model_id)
    _match(m, (height, width), "image size")
    m.cur_shape = (False, (height, width))
    _write_gear(rt, buf, (height, width), "aclmdlSetDynamicHWSize")


# aclmdlIODims: char name[ACL_MAX_TENSOR_NAME_LEN]; size_t dimCount; int64_t dims[ACL_MAX_DIM_CNT]
IO_DIMS_COUNT_AT, IO_DIMS_AT = MAX_NAME, MAX_NAME + 8
IO_DIMS_BYTES = IO_DIMS_AT + 8 * modeldecl.MAX_DIMS


def _dims_values(rt: Core, dims) -> tuple[int, list[int]] | None:
    """(dimCount, values) of an aclmdlIODims: a list of ints (pyACL's dict, read by the facade; a Pythonic
    caller's list) or the address of the struct in host memory (a C program's), read as the ACL layer reads it:
    dimCount, then that many dims. None for a null struct. Of a dimCount past the struct's 128 dims only the 128
    are read (the board reads on past the struct; GE refuses the count, `_cur_dynamic_dims`)."""
    if dims is None or isinstance(dims, bool):
        return None
    if not isinstance(dims, int):
        values = [int(d) for d in dims]
        return len(values), values
    if dims == 0:
        return None
    r, off = transfer.locate(rt, dims, IO_DIMS_BYTES)
    if r.virtual:
        fail(ACL_ERROR_INVALID_PARAM, f"dims 0x{dims:x} is {r.describe()}: timing-only, it holds no dims")
    raw = r.view(off, IO_DIMS_BYTES).tobytes()
    count = int.from_bytes(raw[IO_DIMS_COUNT_AT:IO_DIMS_AT], "little")
    return count, np.frombuffer(raw, dtype="<i8", count=min(count, modeldecl.MAX_DIMS), offset=IO_DIMS_AT).tolist()


def _cur_dynamic_dims(m: LoadedModel, count: int, values: list[int]) -> tuple[int, ...]:
    """GeExecutor::GetCurDynamicDims: `values` are every dim of the model's data inputs, in order (the order ATC
    recorded from --input_shape, ATTR_USER_DESIGNEATE_SHAPE_ORDER; a model without gears has none): another
    count, or a static dim given another value, is 145012; the values of its -1 dims are the gear. (A count past
    the 128 dims an aclmdlIODims holds is refused too: the emulator reads no further than the struct.)"""
    all_dims = [d for t in m.decl.data_inputs for d in t.shape] if m.decl.kind is not None else []
    if count != len(all_dims) or count > len(values):
        fail(ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID,
             f"dims give {count} values; model {m.id}'s inputs have {len(all_dims)} dims "
             f"{all_dims if all_dims else '(a model without gears)'}"
             + (f" (and an aclmdlIODims holds {modeldecl.MAX_DIMS})" if count > modeldecl.MAX_DIMS else ""))
    values = [v % (1 << 64) for v in values]  # (GE reads them as uint64_t)
    for i, (v, d) in enumerate(zip(values, all_dims)):
        if d >= 0 and v != d:
            fail(ACL_ERROR_GE_DYNAMIC_INPUT_LENGTH_INVALID,
                 f"dims[{i}] is {v}; that dim of model {m.id}'s inputs is static, {d}")
    return tuple(v for v, d in zip(values, all_dims) if d < 0)


@api("aclmdlSetInputDynamicDims", sizes=("index",), pyacl="acl.mdl.set_input_dynamic_dims", params="iiil",
     by_hand=True)
def set_input_dynamic_dims(rt: Core, model_id: int, dataset: int, index: int, dims) -> None:
    """Set the ND gear of an input dataset (aclmdlSetInputDynamicDims, models with ATC's --dynamic_dims): `dims`
    gives every dim of the model's inputs in order, the static ones as they are: a list of ints (pyACL's facade
    reads them from its {"dimCount", "dims"[, "name"]}) or the address of a C program's aclmdlIODims. In the
    reference's order (model.cpp aclmdlSetInputDynamicDimsImpl, then
    GeExecutor::SetDynamicDims and GetCurDynamicDims): a null dataset or dims, dimCount 0, no buffer at index, a
    null buffer: 100000; the dataset's gear marks are then cleared; an id not loaded 145003; a count other than
    the inputs' dims, or a static dim given another value, 145012; a gear not among the model's 145013; the gear
    is then the model's current one (aclmdlGetCurOutputDims), even if the gear buffer, checked next, holds under
    4 bytes a value (145012); the values are written into the gear buffer and the dataset is marked with them."""
    _need(rt, dataset, Dataset, "dataset")
    got = _dims_values(rt, dims)
    if got is None:
        fail(ACL_ERROR_INVALID_PARAM, "dims is null")
    count, values = got
    if count == 0:
        fail(ACL_ERROR_INVALID_PARAM, "dims.dimCount is 0")
    ds, buf = _gear_buffer(rt, dataset, index)
    ds.batch, ds.hw, ds.dims = 0, (0, 0), ()
    m = _model(rt, model_id)
    gear = _cur_dynamic_dims(m, count, values)
    _match(m, gear, "dims")
    m.cur_shape = (True, gear)
    _check_gear_buffer(buf, len(gear))
    _write_gear(rt, buf, gear, "aclmdlSetInputDynamicDims")
    ds.dims = gear


# -- datasets and data buffers ------------------------------------------------------------------------------
@api("aclmdlCreateDataset", pyacl="acl.mdl.create_dataset", outputs=(0,), by_hand=True)
def create_dataset(rt: Core) -> int:
    """A new, empty dataset (aclmdlCreateDataset)."""
    ds = Dataset()
    rt.handles[ds.handle] = ds
    return ds.handle


@api("aclmdlDestroyDataset", pyacl="acl.mdl.destroy_dataset", params="i")
def destroy_dataset(rt: Core, dataset: int) -> None:
    """Destroy a dataset (aclmdlDestroyDataset), not its data buffers nor their memory (the program destroys and
    frees those). Null: 100000."""
    rt.handles.pop(_need(rt, dataset, Dataset, "dataset").handle)


@api("aclmdlAddDatasetBuffer", pyacl="acl.mdl.add_dataset_buffer", params="ii", outputs=(0,))
def add_dataset_buffer(rt: Core, dataset: int, data_buffer: int) -> int:
    """Append a data buffer to a dataset (aclmdlAddDatasetBuffer); returns the dataset, as pyACL does. A null
    dataset or buffer: 100000 (model_om2.cpp: no limit, no duplicate check)."""
    ds = _need(rt, dataset, Dataset, "dataset")
    _need(rt, data_buffer, DataBuffer, "dataBuffer")
    ds.buffers.append(data_buffer)
    return dataset


@api("aclmdlGetDatasetBuffer", sizes=("index",), pyacl="acl.mdl.get_dataset_buffer",
     params="ii", outputs=(0,), by_hand=True)
def get_dataset_buffer(rt: Core, dataset: int, index: int) -> int:
    """The data buffer at `index` of a dataset (aclmdlGetDatasetBuffer); 0 (null) for a null dataset or an
    index past the end."""
    ds = _obj(rt, dataset, Dataset)
    return ds.buffers[index] if ds is not None and 0 <= index < len(ds.buffers) else 0


@api("aclmdlGetDatasetNumBuffers", pyacl="acl.mdl.get_dataset_num_buffers", params="i", outputs=(0,), by_hand=True)
def get_dataset_num_buffers(rt: Core, dataset: int) -> int:
    """How many buffers a dataset holds (aclmdlGetDatasetNumBuffers); 0 for a null dataset."""
    ds = _obj(rt, dataset, Dataset)
    return 0 if ds is None else len(ds.buffers)


@api("aclCreateDataBuffer", sizes=("size",), pyacl="acl.create_data_buffer", params="ii", outputs=(0,), by_hand=True)
def create_data_buffer(rt: Core, data: int, size: int) -> int:
    """A data buffer over `size` bytes at `data` (aclCreateDataBuffer). Both may be 0: an empty buffer, which
    aclmdlExecute fills with output memory it allocates (data_buffer.cpp)."""
    buf = DataBuffer(data, size)
    rt.handles[buf.handle] = buf
    return buf.handle


@api("aclDestroyDataBuffer", pyacl="acl.destroy_data_buffer", params="i")
def destroy_data_buffer(rt: Core, data_buffer: int) -> None:
    """Destroy a data buffer (aclDestroyDataBuffer), not the memory it names. Null: 100000."""
    rt.handles.pop(_need(rt, data_buffer, DataBuffer, "dataBuffer").handle)


@api("aclGetDataBufferAddr", pyacl="acl.get_data_buffer_addr", params="i", outputs=(0,), by_hand=True)
def get_data_buffer_addr(rt: Core, data_buffer: int) -> int:
    """A data buffer's address (aclGetDataBufferAddr); 0 for a null buffer."""
    buf = _obj(rt, data_buffer, DataBuffer)
    return 0 if buf is None else buf.data


@api("aclGetDataBufferSizeV2", pyacl="acl.get_data_buffer_size_v2", params="i", outputs=(0,), by_hand=True)
def get_data_buffer_size_v2(rt: Core, data_buffer: int) -> int:
    """A data buffer's length in bytes (aclGetDataBufferSizeV2); 0 for a null buffer."""
    buf = _obj(rt, data_buffer, DataBuffer)
    return 0 if buf is None else buf.size


@api("aclGetDataBufferSize", pyacl="acl.get_data_buffer_size", params="i", outputs=(0,), by_hand=True)
def get_data_buffer_size(rt: Core, data_buffer: int) -> int:
    """A data buffer's length as a uint32 (aclGetDataBufferSize, deprecated: it truncates); 0 for a null buffer."""
    buf = _obj(rt, data_buffer, DataBuffer)
    return 0 if buf is None else buf.size % (1 << 32)


@api("aclUpdateDataBuffer", sizes=("size",), pyacl="acl.update_data_buffer", params="iii")
def update_data_buffer(rt: Core, data_buffer: int, data: int, size: int) -> None:
    """Point a data buffer at other memory (aclUpdateDataBuffer). A null buffer: 100000."""
    buf = _need(rt, data_buffer, DataBuffer, "dataBuffer")
    buf.data, buf.size = data, size


@api("aclDataTypeSize", pyacl="acl.data_type_size", params="i", outputs=(0,), by_hand=True)
def data_type_size(rt: Core, data_type: int) -> int:
    """Bytes per element of an aclDataType (aclDataTypeSize): 0 for STRING and UNDEFINED, 1 for the sub-byte
    types, 8 for a type the runtime does not list (data_buffer.cpp aclDataTypeSizeImpl)."""
    return modeldecl.type_size(data_type)


# -- execution ---------------------------------------------------------------------------------------------
# model.cpp ModelExecute (aclmdlExecute, aclmdlExecuteAsync) checks the datasets, then, for aclmdlExecute only,
# the empty output buffers against the model's output descriptions, before the graph engine runs:
# GeExecutor::ExecModel, ModelManager::ExecuteModel (the model id), DavinciModel::NnExecute (InitModelStream:
# the execution mode; CopyModelData -> UpdateAllNodeArgs: the buffer counts, then each buffer's size), then the
# launch (aclmdlRIExecuteAsync -> rtModelExecute: the current context). The counts and sizes are checked inside
# GE_ASSERT_SUCCESS / GE_ASSERT_TRUE (metadef pkg_inc/common/checker.h GE_ASSERT): a failed assertion returns
# ErrorResult, whose ge::Status is PARAM_INVALID, a GE code outside the ranges ACL_GET_ERRCODE_GE passes on, so
# the program sees ACL_ERROR_GE_FAILURE (500002), not the ACL_ERROR_GE_PARAM_INVALID the check itself names.
def _blobs(rt: Core, dataset: Dataset, side: str) -> list[DataBuffer]:
    """A dataset's buffers; a destroyed one: 100000 (model.cpp ModelExecute: a blob with a null dataBuf)."""
    out = []
    for i, h in enumerate(dataset.buffers):
        buf = _obj(rt, h, DataBuffer)
        if buf is None:
            fail(ACL_ERROR_INVALID_PARAM, f"{side} buffer {i} (0x{h:x}) is not a live data buffer")
        out.append(buf)
    return out


def _alloc_outputs(rt: Core, m: LoadedModel | None, outs: list[DataBuffer]) -> None:
    """model.cpp ModelExecute, aclmdlExecute only, before GE: when an output buffer is empty (a null address), the
    ACL layer takes the model's output descriptions (GeExecutor::GetModelDescInfo: none for an id not loaded) and
    fails with 100000 when there are fewer than the dataset's buffers (an extra buffer, or no model); then each
    empty buffer of an output with a size gets aclrtMalloc of that size in the current context (the program frees
    it: aclrtFree, then aclUpdateDataBuffer(buf, NULL, 0); doc aclmdlExecute.md), whatever GE says next."""
    empty = [i for i, buf in enumerate(outs) if not buf.data]
    if not empty:
        return
    tensors = m.decl.outputs if m is not None else ()
    if len(tensors) < len(outs):
        fail(ACL_ERROR_INVALID_PARAM,
             f"output buffer {empty[0]} is empty and the model's output descriptions are {len(tensors)}, fewer than "
             f"the dataset's {len(outs)} buffers" + ("" if m is not None else " (no model is loaded with this id)"))
    device = rt.current_context().device.id
    for i in empty:
        size = tensors[i].nbytes
        if size:
            r = allocation.alloc_by_policy(rt, device, size, C.ACL_MEM_MALLOC_HUGE_FIRST, origin="aclmdlExecute")
            outs[i].data, outs[i].size = r.base, size


def _check_sizes(m: LoadedModel, blobs: list[DataBuffer], tensors, side: str) -> None:
    """davinci_model.cc CheckUserAndModelSize (ConstructZeroCopyIoActiveBaseAddrs, inside GE_ASSERT_TRUE): a buffer
    64 bytes or more under the model's size fails, 500002; larger is fine."""
    for i, (buf, t) in enumerate(zip(blobs, tensors)):
        if buf.size + SIZE_SLACK < t.nbytes:
            fail(ACL_ERROR_GE_FAILURE,
                 f"{side} {i} ({t.name!r}) of model {m.id}: the buffer holds {buf.size} bytes, the model "
                             f"needs {t.nbytes}")


def _exec_gear(m: LoadedModel, ds: Dataset) -> tuple[int, ...] | None:
    """The gear an execution runs at dynamically, else None (GeExecutor::ExecModel, SetDynamicInputDataFlag): a
    dataset a setter marked (even one that failed: see the gear setters) runs a model with gears at the gear
    that matches the mark, or at the model's first gear (batch label 0) when none does, and its sizes are not
    checked (DavinciModel::CheckUserAndModelSize: is_dynamic_); a model without gears ignores the mark."""
    gears = m.decl.gears
    if not (ds.batch or any(ds.hw) or ds.dims) or not gears:
        return None
    for g in gears:
        if ds.dims and len(ds.dims) <= len(g):
            if g[:len(ds.dims)] == ds.dims:
                return g
        elif (len(g) == 1 and g[0] == ds.batch) or (len(g) == 2 and g == ds.hw):
            return g
    return gears[0]


def _checked_run(rt: Core, model_id: int, inputs: int, outputs: int, mode: str):
    """The checks of an execution, in the reference's order (see above); returns (model, input buffers, output
    buffers, the gear it runs at: the dataset's, else the largest for a model with gears, else None)."""
    ins_ds = _need(rt, inputs, Dataset, "input")
    outs_ds = _need(rt, outputs, Dataset, "output")
    ins, outs = _blobs(rt, ins_ds, "input"), _blobs(rt, outs_ds, "output")
    if mode == "sync":
        _alloc_outputs(rt, _models(rt).loaded.get(model_id), outs)
    rt.runtime_layer()
    m = _model(rt, model_id)
    if m.mode is not None and m.mode != mode:  # DavinciModel::InitModelStream
        fail(ACL_ERROR_GE_FAILURE, f"model {m.id} was executed {m.mode}hronously: a model runs either "
                                   f"synchronously (aclmdlExecute) or asynchronously (aclmdlExecuteAsync), not both")
    m.mode = mode
    if len(ins) != len(m.decl.inputs) or len(outs) != len(m.decl.outputs):  # DavinciModel::UpdateAllNodeArgs
        fail(ACL_ERROR_GE_FAILURE, f"model {m.id} takes {len(m.decl.inputs)} inputs and {len(m.decl.outputs)} "
                                   f"outputs; the datasets hold {len(ins)} and {len(outs)} buffers")
    gear = _exec_gear(m, ins_ds)
    if gear is None:
        _check_sizes(m, ins, m.decl.inputs, "input")
        _check_sizes(m, outs, m.decl.outputs, "output")
    return m, ins, outs, gear if gear is not None else m.decl.largest


def _check_context(rt: Core, m: LoadedModel) -> None:
    """The launch (DavinciModel::NnExecute -> aclmdlRIExecuteAsync -> rtModelExecute; hicann/runtime
    api_impl.cc ApiImpl::ModelExecute): no current context 107002 (CHECK_CONTEXT_VALID_WITH_RETURN), a context
    other than the one the model was loaded in 107004 (RT_ERROR_MODEL_CONTEXT, errcode_manage.cc); GE and ACL
    pass both codes on (GE_CHK_RT_EXEC, RT_ERROR_TO_GE_STATUS; ACL_GET_ERRCODE_GE keeps the runtime's range)."""
    ctx = rt.current_context()
    if ctx is not m.ctx:
        fail(ACL_ERROR_RT_MODEL_CONTEXT,
             f"model {m.id} was loaded in a context of device {m.ctx.device.id}; the current context (of device "
             f"{ctx.device.id}) is another: execute a model in the context that loaded it")


def _spans(rt: Core, bufs: list[DataBuffer], tensors, args: tuple, mode: str) -> list[tuple[Region, int, int, str]]:
    """(region, offset, nbytes, mode) of what the execution reads or writes of each buffer: the model's size at
    the gear (`args`: ModelDecl.args), or the buffer's if smaller; empty buffers touch nothing."""
    out = []
    for buf, t in zip(bufs, tensors):
        n = min(buf.size, t.nbytes_at(*args))
        if n and buf.data:
            r, off = transfer.locate(rt, buf.data, n)
            out.append((r, off, n, mode))
    return out


_FLOAT_SIZES = {"float32": 4, "float16": 2, "float64": 8, "bfloat16": 2}  # the floating dtypes: bytes a value


def output_bytes(name: str, index: int, inputs: list[bytes], dtype: str, nbytes: int) -> bytes:
    """The bytes an execution writes to output `index`: SHAKE-256 of the model's name, the index and every input's
    bytes; floating dtypes hold values in [0, 1) (float32, float16, float64, bfloat16), others the raw hash."""
    h = hashlib.shake_256(f"{name}\0{index}\0".encode())
    for data in inputs:
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    size = _FLOAT_SIZES.get(dtype)
    if size is not None:
        count = nbytes // size
        unit = np.frombuffer(h.digest(4 * count), dtype=np.uint32) / 2.0 ** 32
        if dtype == "bfloat16":
            values = (unit.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        else:
            values = unit.astype(dtype)
        return values.tobytes().ljust(nbytes, b"\0")
    return h.digest(nbytes)


def _runner(rt: Core, m: LoadedModel, reads: list, writes: list):
    """on_start and on_complete of the execution's task: read the inputs when it starts, write the outputs when
    it ends; nothing on timing-only or freed memory."""
    held: dict[str, list] = {}

    def start():
        if transfer.has_bytes(rt, m.decl.name, *(r for r, *_ in reads + writes)):
            held["in"] = [r.view(off, n).tobytes() for r, off, n, _ in reads]

    def end():
        got = held.pop("in", None)
        if got is None or not transfer.has_bytes(rt, m.decl.name, *(r for r, *_ in writes)):
            return
        for i, (r, off, n, _) in enumerate(writes):
            data = output_bytes(m.decl.name, i, got, m.decl.outputs[i].dtype_name, n)
            r.target(off, n)[:] = np.frombuffer(data, dtype=np.uint8)

    return start, end


def _enqueue(rt: Core, m: LoadedModel, s: Stream, ins, outs, gear) -> Task:
    """The execution's task on `s`: the model's time on this product at its gear, its reads and writes."""
    args = m.decl.args(gear)
    reads = _spans(rt, ins, m.decl.inputs, args, "r")
    writes = _spans(rt, outs, m.decl.outputs, args, "w")
    start, end = _runner(rt, m, reads, writes)
    task = Task(KERNEL, device=s.device, label=m.decl.name, duration=m.decl.seconds(rt.product.name, *args),
                nbytes=sum(n for _, _, n, _ in reads + writes), on_start=start, on_complete=end)
    rt.tick(rt.product.hardware.launch)  # the host hands the model's tasks to the device
    return rt.submit(s, task, tuple(reads + writes))


def _own_stream(rt: Core, m: LoadedModel) -> Stream:
    """The model's own stream, on which aclmdlExecute runs it (made at its first synchronous execution)."""
    if m.stream is None:
        s = Stream(m.ctx, None)
        s.m = rt.machine.stream(f"dev{m.ctx.device.id}/model{m.id}", m.ctx.device.id)
        rt.sanitize("stream_created", s)
        m.stream = s
    return m.stream


@api("aclmdlExecute", pyacl="acl.mdl.execute", params="iii")
def execute(rt: Core, model_id: int, inputs: int, outputs: int) -> None:
    """Run a model and wait for it (aclmdlExecute): one task on the model's own stream, for the declared time on
    this product (and gear), reading the input buffers and writing the outputs. An empty output buffer gets
    device memory the runtime allocates. Checks, in order (model.cpp ModelExecute, GeExecutor::ExecModel,
    ModelManager::ExecuteModel, DavinciModel::NnExecute, ApiImpl::ModelExecute): a null dataset or a destroyed
    buffer 100000; an empty output buffer and fewer output descriptions than buffers (an extra buffer, an id not
    loaded) 100000, else the empty buffers get their memory; an id not loaded 145003; the model executed
    asynchronously before 500002; buffer counts other than the model's 500002; a buffer 64 bytes or more too
    small 500002 (not on a dataset marked with a gear); no current context 107002; a context other than the
    model's 107004."""
    m, ins, outs, gear = _checked_run(rt, model_id, inputs, outputs, "sync")
    _check_context(rt, m)
    task = _enqueue(rt, m, _own_stream(rt, m), ins, outs, gear)
    rt.wait_for(task)
    rt.woken()


@api("aclmdlExecuteAsync", pyacl="acl.mdl.execute_async", params="iiii")
def execute_async(rt: Core, model_id: int, inputs: int, outputs: int, stream: int) -> None:
    """Queue a model's execution on `stream` (aclmdlExecuteAsync; 0: the default stream): it runs in stream
    order with copies, events and callbacks, for the declared time on this product (and gear). The checks of
    `execute` but the output allocation (a model executed synchronously before: 500002), then the launch's
    (rtModelExecute): a stream that is not live 107017, no current context 107002, a context other than the
    model's 107004, a stream of another context 107003. Synchronize the stream before reading the outputs. On a
    stream being captured (aclmdlRICaptureBegin) the execution is captured, and runs at each replay."""
    m, ins, outs, gear = _checked_run(rt, model_id, inputs, outputs, "async")
    if stream:
        rt.stream_of(stream, check_context=False)
    _check_context(rt, m)
    _enqueue(rt, m, rt.stream_of(stream), ins, outs, gear)

