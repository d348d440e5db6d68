"""The handlers of the C functions whose form differs from their runtime function's: C arrays and structs
read from the program's memory, structs written back, C function pointers called, strings returned, a
parameter both read and written. Each `SPECIAL[name](proto, types)` makes the handler (see bridge.py).
"""
from __future__ import annotations

import ctypes
import sys
import threading

from .. import runtime as rt
from ..constants import SIZE_MAX
from ..runtime import fp16
from ..errors import ACL_ERROR_API_NOT_SUPPORT, ACL_ERROR_INVALID_PARAM, AclError, recent_error, set_recent_error
from . import marshal

MAX_ENTRIES = 1 << 20  # entries of a C array the library reads (batch copies take at most 4096)
_SIZE_T = ctypes.c_size_t


class BatchAttr(ctypes.Structure):
    """aclrtMemcpyBatchAttr: {aclrtMemLocation dstLoc; aclrtMemLocation srcLoc; uint8_t rsv[16];}, each
    location {uint32_t id; aclrtMemLocationType type;}."""
    _fields_ = [("dst_id", ctypes.c_uint32), ("dst_type", ctypes.c_int), ("src_id", ctypes.c_uint32),
                ("src_type", ctypes.c_int), ("rsv", ctypes.c_uint8 * 16)]


class MallocAttribute(ctypes.Structure):
    """aclrtMallocAttribute: {aclrtMallocAttrType attr; aclrtMallocAttrValue value;}, the value a union of
    uint16_t moduleId, uint32_t deviceId / vaFlag and uint8_t rsv[8]."""
    _fields_ = [("attr", ctypes.c_int), ("value", ctypes.c_uint8 * 8)]


class MallocConfig(ctypes.Structure):
    """aclrtMallocConfig: {aclrtMallocAttribute *attrs; size_t numAttrs;}."""
    _fields_ = [("attrs", ctypes.c_void_p), ("num_attrs", ctypes.c_size_t)]


class PtrAttributes(ctypes.Structure):
    """aclrtPtrAttributes: {aclrtMemLocation location; uint32_t pageSize; uint32_t rsv[4];}."""
    _fields_ = [("id", ctypes.c_uint32), ("type", ctypes.c_int), ("page_size", ctypes.c_uint32),
                ("rsv", ctypes.c_uint32 * 4)]


MAX_DIMS = 128  # ACL_MAX_DIM_CNT, ACL_MAX_TENSOR_NAME_LEN, ACL_MAX_BATCH_NUM, ACL_MAX_HW_NUM (acl_mdl.h)


class IODims(ctypes.Structure):
    """aclmdlIODims: {char name[128]; size_t dimCount; int64_t dims[128];}."""
    _fields_ = [("name", ctypes.c_char * MAX_DIMS), ("dim_count", ctypes.c_size_t), ("dims", ctypes.c_int64 * MAX_DIMS)]


class Batch(ctypes.Structure):
    """aclmdlBatch: {size_t batchCount; uint64_t batch[128];}."""
    _fields_ = [("count", ctypes.c_size_t), ("batch", ctypes.c_uint64 * MAX_DIMS)]


class HW(ctypes.Structure):
    """aclmdlHW: {size_t hwCount; uint64_t hw[128][2];}."""
    _fields_ = [("count", ctypes.c_size_t), ("hw", (ctypes.c_uint64 * 2) * MAX_DIMS)]


def _refuse(message: str):
    """A C argument the library will not read (an array longer than it reads): 100000, with the message
    aclGetRecentErrMsg gives (the error never reaches the runtime, whose wrapper would set it)."""
    set_recent_error(message)
    raise AclError(ACL_ERROR_INVALID_PARAM, message)


def _entries(address: int, count: int, ctype, name: str = ""):
    """`count` items of `ctype` at `address` (a ctypes array); None for a null pointer (the runtime judges
    it). More than MAX_ENTRIES are refused, the message naming the count's parameter when `name` is given."""
    if address == 0:
        return None
    if count > MAX_ENTRIES:
        _refuse(f"{name} {count}: more than {MAX_ENTRIES}" if name else
                f"{count} entries: more than the {MAX_ENTRIES} an array may hold here")
    return (ctype * count).from_address(address)


def _array(address: int, count: int, ctype) -> list | None:
    """`count` items of `ctype` at `address` as a list; None for a null pointer (the runtime judges it)."""
    items = _entries(address, count, ctype)
    return None if items is None else list(items)


def _batch_attrs(address: int, count: int) -> list | None:
    attrs = _entries(address, count, BatchAttr, "numAttrs")
    if attrs is None:
        return None
    return [{"dst_loc": {"type": a.dst_type, "id": a.dst_id}, "src_loc": {"type": a.src_type, "id": a.src_id},
             "rsv": bytes(a.rsv)} for a in attrs]


def _code(fn, *args) -> int:
    """`fn(*args)` called for its effect: 0, or the code of the AclError it raised."""
    try:
        fn(*args)
    except AclError as e:
        return e.code
    return 0


def _batch(proto, types):
    """aclrtMemcpyBatch and its three twins: the arrays read from the program's memory. failIndex (where the C form
    has it), as hicann/runtime writes it: null, 100000 before anything else (memory.cpp aclrtMemcpyBatchImpl /
    aclrtMemcpyBatchAsyncImpl); SIZE_MAX when every size is 0 (MemcpyBatchImpl); left as it was by a failure
    before the runtime's parameter checks (the ACL layer's, the chip gate, the stream handle: the BatchError's
    fail_index is None, as is an array the library refuses to read); else SIZE_MAX (ApiErrorDecorator::
    MemcpyBatch / MemcpyBatchAsync write it first), or the entry that failed (ApiImpl::MemcpyBatch,
    LoopMemcpyAsync, ApiImplDavid::BatchMemcpyAsync)."""
    fn = getattr(rt, _runtime_name(proto.name))
    with_fail_index = any(p.name == "failIndex" for p in proto.params)
    with_stream = proto.params[-1].name == "stream"

    def handler(dsts, dest_maxs, srcs, sizes, count, attrs, indexes, num_attrs, *rest):
        fail_at = rest[0] if with_fail_index else 0
        if with_fail_index and fail_at == 0:
            return marshal.null_output(proto.name, "failIndex")
        stream = rest[-1] if with_stream else None
        try:
            args = [_array(dsts, count, ctypes.c_uint64), _array(dest_maxs, count, _SIZE_T),
                    _array(srcs, count, ctypes.c_uint64), _array(sizes, count, _SIZE_T), count,
                    _batch_attrs(attrs, num_attrs), _array(indexes, num_attrs, _SIZE_T), num_attrs]
            fn(*args, *(() if stream is None else (stream,)))
        except AclError as e:
            written = getattr(e, "fail_index", None)
            if fail_at and written is not None:
                marshal.write(fail_at, _SIZE_T, written)
            return e.code
        if fail_at:
            marshal.write(fail_at, _SIZE_T, SIZE_MAX)
        return 0

    return handler


def _runtime_name(acl: str) -> str:
    return next(d.name for d in rt.APIS if d.acl == acl)


def _malloc_config(address: int) -> list | None:
    """An aclrtMallocConfig as the runtime takes it: None, or [{"attr", "value"}] (the value read as the
    attribute's union member)."""
    if address == 0:
        return None
    cfg = MallocConfig.from_address(address)
    if cfg.attrs is None or cfg.num_attrs == 0:
        return []
    out = []
    for a in _entries(cfg.attrs, cfg.num_attrs, MallocAttribute, "numAttrs"):
        raw = bytes(a.value)
        width = 2 if a.attr == 1 else 4  # MODULE_ID: uint16_t moduleId; the others a uint32_t
        out.append({"attr": a.attr, "value": int.from_bytes(raw[:width], sys.byteorder)})
    return out


def _malloc_with_config(proto, types):
    """aclrtMallocWithCfg and aclrtMallocHostWithCfg: the address written to the first parameter, the
    aclrtMallocConfig of the last read (`_malloc_config`), the ones between passed as they are."""
    fn = getattr(rt, _runtime_name(proto.name))
    out = proto.params[0].name

    def handler(ptr, *args):
        if ptr == 0:
            return marshal.null_output(proto.name, out)
        return _code(lambda: marshal.write(ptr, ctypes.c_void_p, fn(*args[:-1], _malloc_config(args[-1]))))

    return handler


def _pointer_attributes(proto, types):
    def handler(ptr, attributes):
        if attributes == 0:
            return marshal.null_output(proto.name, "attributes")
        try:
            found = rt.pointer_get_attributes(ptr)
        except AclError as e:
            return e.code
        out = PtrAttributes.from_address(attributes)
        out.type, out.id, out.page_size = int(found.type), found.id, found.page_size
        return 0

    return handler


def _in_call():
    """native.c's acl_emu_in_call (None in a process that did not link the library: a Python program that loaded
    it privately)."""
    try:
        fn = ctypes.CDLL(None).acl_emu_in_call
    except (AttributeError, OSError):
        return None
    fn.argtypes, fn.restype = (ctypes.c_int,), ctypes.c_int
    return fn


def _launch_callback(proto, types):
    """aclrtLaunchCallback: the program's function is called, with its userData pointer, on the thread the
    stream's callbacks run on (the thread that called aclrtProcessReport). While it runs, the thread is in the
    program's own code, not in the ACL call that runs it: a fault there is the program's (native.c)."""
    c_callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    mark = _in_call()

    def handler(fn, user_data, block_type, stream):
        call = None
        if fn:
            c_fn = c_callback(fn)

            def call(data, c_fn=c_fn):
                outer = mark(0) if mark is not None else 0
                try:
                    c_fn(data)
                finally:
                    if mark is not None:
                        mark(outer)
        return _code(rt.launch_callback, call, user_data, block_type, stream)

    return handler


def _exchange_mode(proto, types):
    """aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode *mode): the mode read, set, and the previous one
    written back."""
    def handler(mode):
        if mode == 0:
            return marshal.null_output(proto.name, "mode")
        cell = ctypes.c_int.from_address(mode)
        try:
            cell.value = rt.ri_capture_thread_exchange_mode(cell.value)
        except AclError as e:
            return e.code
        return 0

    return handler


def _set_memcpy_desc(proto, types):
    def handler(desc, kind, src, dst, count, config):
        return _code(rt.set_memcpy_desc, desc, kind, src, dst, count, None if config == 0 else config)

    return handler


def _pass_through(proto, types):
    """Every argument passed as the int it is (pointers to pointers the runtime reads itself)."""
    fn = getattr(rt, _runtime_name(proto.name))

    def handler(*args):
        return _code(fn, *args)

    return handler


def _soc_name(proto, types):
    def handler():
        try:
            return marshal.c_string(rt.get_soc_name())
        except AclError:
            return 0

    return handler


_messages: dict[int, ctypes.Array] = {}  # per thread: its last message, kept until it asks again


def _recent_error(proto, types):
    """aclGetRecentErrMsg: this thread's last error message, NULL when none failed (as acl.get_recent_err_msg)."""
    def handler():
        message = recent_error()
        if message is None:
            return 0
        buf = _messages[threading.get_ident()] = ctypes.create_string_buffer(message.encode("utf-8", "replace"))
        return ctypes.addressof(buf)

    return handler


def _version(proto, types):
    """aclrtGetVersion: the version of the ACL headers the emulator follows (1.17.0)."""
    def handler(major, minor, patch):
        for name, address in (("majorVersion", major), ("minorVersion", minor), ("patchVersion", patch)):
            if address == 0:
                return marshal.null_output(proto.name, name)
        for address, value in ((major, 1), (minor, 17), (patch, 0)):
            marshal.write(address, ctypes.c_int32, value)
        return 0

    return handler


def _no_kernels(proto, types):
    """aclrtLaunchKernel: the emulator runs no device code (from C there is no binary it could run)."""
    message = (f"acl-emu: {proto.name} is not emulated: acl-emu runs no device code; a program's kernels are "
               f"outside its scope (pyACL scripts can time a kernel with acl.rt.launch_kernel)")

    def handler(*args):
        set_recent_error(message)
        print(message, file=sys.stderr, flush=True)
        return ACL_ERROR_API_NOT_SUPPORT

    return handler


def _float_to_float16(proto, types):
    """aclFloatToFloat16: the half of a float as the reference rounds it (emu.runtime.fp16.float_to_float16:
    fp16_impl.cpp FloatToFp16, which saturates)."""
    def handler(value):
        return fp16.float_to_float16(value)

    return handler


def _float16_to_float(proto, types):
    """aclFloat16ToFloat: the float of a half as the reference reads it (emu.runtime.fp16.float16_to_float:
    fp16_impl.cpp Fp16ToFloat, which keeps no infinity or NaN)."""
    def handler(value):
        return marshal.double_bits(fp16.float16_to_float(value))

    return handler


INVALID_EXCEPTION_INFO = 0xFFFFFFFF  # callback.cpp ACL_ERROR_INVALID_EXCEPTION_INFO
# rtExceptionInfo (hicann/runtime pkg_inc/runtime/rt_external_base.h): {uint32_t taskid, streamid, tid, deviceid,
# retcode; ...}: each getter's field, by its offset
_EXCEPTION_FIELDS = {"aclrtGetTaskIdFromExceptionInfo": 0, "aclrtGetStreamIdFromExceptionInfo": 4,
                     "aclrtGetThreadIdFromExceptionInfo": 8, "aclrtGetDeviceIdFromExceptionInfo": 12,
                     "aclrtGetErrorCodeFromExceptionInfo": 16}


def _exception_field(proto, types):
    """aclrtGet{TaskId,StreamId,ThreadId,DeviceId,ErrorCode}FromExceptionInfo (callback.cpp
    aclrtGet*FromExceptionInfoImpl): 0xFFFFFFFF for a null info, else the field of the rtExceptionInfo given (the
    emulator reports no task failure itself: an info a program holds is one it made)."""
    offset = _EXCEPTION_FIELDS[proto.name]

    def handler(info):
        if info == 0:
            set_recent_error(f"{proto.name}: info is null")
            return INVALID_EXCEPTION_INFO
        return ctypes.c_uint32.from_address(info + offset).value

    return handler


def _fill_dims(out: IODims, dims: dict) -> None:
    name = dims["name"].encode("utf-8", "replace")[:MAX_DIMS - 1]
    out.name = name
    out.dim_count = len(dims["dims"])
    out.dims[:len(dims["dims"])] = dims["dims"]


def _fill_batch(out: Batch, batch: dict) -> None:
    out.count = batch["batchCount"]
    out.batch[:len(batch["batch"])] = batch["batch"]


def _fill_hw(out: HW, hw: dict) -> None:
    out.count = hw["hwCount"]
    for i, (h, w) in enumerate(hw["hw"]):
        out.hw[i][0], out.hw[i][1] = h, w


def _struct_out(structure, fill):
    """A model description getter whose last parameter is a struct it fills (aclmdlIODims, aclmdlBatch,
    aclmdlHW) from the runtime function's dict."""
    def make(proto, types):
        fn = getattr(rt, _runtime_name(proto.name))
        last = proto.params[-1].name

        def handler(*args):
            if args[-1] == 0:
                return marshal.null_output(proto.name, last)
            try:
                found = fn(*args[:-1])
            except AclError as e:
                return e.code
            fill(structure.from_address(args[-1]), found)
            return 0

        return handler

    return make


NOT_EMULATED = {"aclrtLaunchKernel"}  # SPECIAL's handlers that only fail (with a message of their own)

SPECIAL = {
    "aclmdlGetInputDims": _struct_out(IODims, _fill_dims), "aclmdlGetInputDimsV2": _struct_out(IODims, _fill_dims),
    "aclmdlGetOutputDims": _struct_out(IODims, _fill_dims),
    "aclmdlGetCurOutputDims": _struct_out(IODims, _fill_dims),
    "aclmdlGetDynamicBatch": _struct_out(Batch, _fill_batch), "aclmdlGetDynamicHW": _struct_out(HW, _fill_hw),
    "aclrtMemcpyBatch": _batch, "aclrtMemcpyBatchAsync": _batch, "aclrtMemcpyBatchV2": _batch,
    "aclrtMemcpyBatchAsyncV2": _batch,
    "aclrtMallocWithCfg": _malloc_with_config, "aclrtMallocHostWithCfg": _malloc_with_config,
    "aclrtPointerGetAttributes": _pointer_attributes,
    "aclrtLaunchCallback": _launch_callback,
    "aclmdlRICaptureThreadExchangeMode": _exchange_mode,
    "aclrtSetMemcpyDesc": _set_memcpy_desc,
    "aclrtMemcpyAsyncWithOffset": _pass_through,
    "aclrtGetSocName": _soc_name,
    "aclGetRecentErrMsg": _recent_error,
    "aclrtGetVersion": _version,
    "aclrtLaunchKernel": _no_kernels,
    "aclFloatToFloat16": _float_to_float16, "aclFloat16ToFloat": _float16_to_float,
    **{name: _exception_field for name in _EXCEPTION_FIELDS},
}
