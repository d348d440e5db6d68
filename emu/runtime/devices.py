"""Initialisation, devices and contexts: aclInit / aclFinalize, aclrtSetDevice, aclrtResetDevice(Force),
aclrtGetDevice(Count), aclrtGetRunMode, aclrtSynchronizeDevice, aclrtCreate/Destroy/Set/GetCurrentContext."""
from __future__ import annotations

import hashlib
import json
import re

from .. import constants as C
from .. import files
from ..errors import (ACL_ERROR_FAILURE, ACL_ERROR_INVALID_FILE, ACL_ERROR_INVALID_PARAM, ACL_ERROR_PARSE_FILE,
                      ACL_ERROR_REPEAT_FINALIZE, ACL_ERROR_REPEAT_INITIALIZE, ACL_ERROR_RT_CONTEXT_NULL,
                      ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_NO_DEVICE,
                      ACL_ERROR_RT_PARAM_INVALID)
from . import streams
from .core import Context, Core, Device, api, fail


# -- init / finalize ------------------------------------------------------------
# aclInit's config file (hicann/runtime src/acl/common/json_parser.cpp, src/acl/aclrt_impl/acl.cpp)
MAX_CONFIG_FILE_BYTES = 10 * 1024 * 1024  # json_parser.cpp MAX_CONFIG_FILE_BYTE
MAX_CONFIG_DEPTH = 10  # json_parser.cpp MAX_CONFIG_OBJ_DEPTH, MAX_CONFIG_ARRAY_DEPTH
_DEVICE_ID = re.compile(r"0|[1-9][0-9]*")  # json_parser.cpp GetDefaultDeviceIdFromFile's regex


@api("aclInit", pyacl="acl.init", params="s", optional=1)
def init(rt: Core, config_path: str | None = None) -> None:
    """Initialise ACL (aclInit), optionally from a JSON config file.

    config_path: None, "" or a JSON file; its {"defaultDevice": {"default_device": "<id>"}} (the id a string of
    digits) is the device a thread without a context opens on its first call that needs one; "err_msg_mode" may
    be "0" or "1"; other keys are not read. Raises, in the reference's order (acl.cpp aclInitImpl):
    100002 if ACL is already initialised; 100003 for a file that is missing or cannot be read, is not a regular
    file or is over 10 MiB (GetStrFromConfigPath, JsonParser::IsValidFileName); 100000 after aclFinalize with
    a config other than the first one; 100006 for a file that is not JSON or nests objects or arrays more than
    10 deep (JsonParser::ParseJsonFromFile); 100000 for another err_msg_mode (HandleErrorManagerConfig); 500001
    for a default_device that is not a string of digits (HandleDefaultDeviceAndStackSize); 107001 for one
    that is no visible device (rtSetDefaultDeviceId). An empty file (or one whose first byte is NUL) is an
    empty config."""
    if rt.init_refcount > 0:
        rt.init_refcount += 1
        fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit was already called")
    content = b""
    if config_path:
        try:
            content = files.read_bytes(config_path, MAX_CONFIG_FILE_BYTES, "an aclInit config")
        except files.FileRefused as e:  # missing, unreadable, a FIFO, a device, a directory, over 10 MiB
            fail(ACL_ERROR_INVALID_FILE, f"aclInit: invalid config file {e}")
    digest = hashlib.sha256(content).hexdigest()
    if rt.finalized and rt.init_hash is not None and digest != rt.init_hash:
        fail(ACL_ERROR_INVALID_PARAM, f"aclInit: the content of config {config_path} differs from the first "
                                      f"aclInit's config")
    cfg = _config_json(config_path, content)
    if isinstance(cfg, dict) and "err_msg_mode" in cfg and cfg["err_msg_mode"] not in ("0", "1"):
        fail(ACL_ERROR_INVALID_PARAM, f"aclInit: err_msg_mode {json.dumps(cfg['err_msg_mode'])} in {config_path} "
                                      f"is not \"0\" or \"1\"")
    default_device = _default_device(rt, config_path, cfg)
    if default_device is not None:
        rt.default_device = default_device
    rt.init_hash = rt.init_hash or digest
    rt.init_refcount = 1
    rt.finalized = False


def _config_json(path: str | None, content: bytes):
    """The config as JSON (None for an empty one), as json_parser.cpp reads it: the text up to its first NUL
    byte (ParseJson takes a C string); more than MAX_CONFIG_DEPTH '{' or '[' open at once, counted on the raw
    characters (GetMaxNestedLayers), or text that is not strict JSON (no NaN or Infinity; whitespace alone is no
    JSON), is 100006."""
    text = content.split(b"\0", 1)[0]
    if not text:
        return None
    objects = arrays = most_objects = most_arrays = 0
    for ch in text.translate(None, _NOT_BRACKETS):  # CountDepth
        if ch == 0x7B:
            objects += 1
            most_objects = max(most_objects, objects)
        elif ch == 0x7D:
            objects = max(objects - 1, 0)
        elif ch == 0x5B:
            arrays += 1
            most_arrays = max(most_arrays, arrays)
        else:
            arrays = max(arrays - 1, 0)
    if most_objects > MAX_CONFIG_DEPTH or most_arrays > MAX_CONFIG_DEPTH:
        fail(ACL_ERROR_PARSE_FILE, f"aclInit: config {path} nests objects {most_objects} or arrays {most_arrays} "
                                   f"deep, more than {MAX_CONFIG_DEPTH}")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        fail(ACL_ERROR_PARSE_FILE, f"aclInit: config {path} is not JSON: {e}")


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"{}[]")


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _default_device(rt: Core, path: str | None, cfg) -> int | None:
    """json_parser.cpp GetDefaultDeviceIdFromFile: "defaultDevice" absent, or not an object, or without
    "default_device": none. default_device not a string (nlohmann's get<std::string> throws: 500000, which
    HandleDefaultDeviceAndStackSize makes ACL_ERROR_FAILURE) or not digits without a leading zero (100000, made
    ACL_ERROR_FAILURE likewise): 500001. The digits are read by strtol into an int32_t (so "4294967296" is 0 and
    "4294967295" is -1, INVALID_DEFAULT_DEVICE: none); then rtSetDefaultDeviceId: an id that is no visible device
    is 107001 (ApiErrorDecorator::SetDefaultDeviceId, Runtime::ChgUserDevIdToDeviceId / CheckDeviceIdIsValid)."""
    block = cfg.get("defaultDevice") if isinstance(cfg, dict) else None
    if not isinstance(block, dict) or "default_device" not in block:
        return None
    value = block["default_device"]
    if not isinstance(value, str) or not _DEVICE_ID.fullmatch(value):
        fail(ACL_ERROR_FAILURE, f"aclInit: default_device {json.dumps(value)} in {path} is not a device id "
                                f"(a string of digits: \"0\", \"1\", ...)")
    device = (min(int(value), (1 << 63) - 1) + (1 << 31)) % (1 << 32) - (1 << 31)  # strtol, then an int32_t
    if device == -1:  # acl.cpp INVALID_DEFAULT_DEVICE: no default device is set
        return None
    if not 0 <= device < len(rt.visible):
        fail(ACL_ERROR_RT_INVALID_DEVICEID, f"aclInit: default_device {device} in {path} is not one of the "
                                            f"{len(rt.visible)} visible devices of {rt.product.name}")
    return device


@api("aclFinalize", pyacl="acl.finalize")
def finalize(rt: Core) -> None:
    """Finalise ACL (aclFinalize); a second call raises 100037. Devices, memory and streams stay as they are."""
    if rt.finalized:
        fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize was already called")
    rt.finalized = True
    rt.init_refcount = 0


@api("aclrtSetDevice", pyacl="acl.rt.set_device", params="i")
def set_device(rt: Core, device_id: int) -> None:
    """Make `device_id` (an index into the visible devices) this thread's current device (aclrtSetDevice).

    The first set creates the device's primary context and its default stream; each set holds a reference
    that aclrtResetDevice releases. An id outside the visible devices (ASCEND_RT_VISIBLE_DEVICES) raises
    107001."""
    rt.open_device(device_id)


def _release_context(rt: Core, ctx: Context) -> None:
    rt.sanitize("context_released", ctx)
    for s in [ctx.default_stream, *ctx.streams]:
        if not s.m.idle:
            rt.wait_for(s.m.last)
        s.destroyed = True
        rt.handles.pop(s.handle, None)
    ctx.streams.clear()
    ctx.destroyed = True
    rt.handles.pop(ctx.handle, None)
    ctx.device.contexts.remove(ctx)
    if rt.ctx is ctx:
        rt.ctx = None


def _release_device(rt: Core, dev: Device) -> None:
    """The device's contexts, streams and allocations go. Host registrations stay, with the device
    addresses of mapped ones: the runtime keeps them in process-wide tables (register_memory.cc
    g_pinnedHost / g_mappedHost / g_mappedPair) that rtDeviceReset does not touch; aclrtHostUnregister
    releases them."""
    for ctx in list(dev.contexts):
        _release_context(rt, ctx)
    dev.primary = None
    dev.refcount = 0
    for r in [r for r in rt.space.regions() if r.is_device and r.device == dev.id and r.origin != "alias"]:
        rt.sanitize("freed", r)
        rt.space.free_device(r)


@api("aclrtResetDevice", pyacl="acl.rt.reset_device", params="i")
def reset_device(rt: Core, device_id: int) -> None:
    """Release one reference on `device_id` held by aclrtSetDevice or aclrtCreateContext (aclrtResetDevice).

    At the last one the device's contexts and streams go (after their queued tasks complete), and so does
    its device memory; host registrations stay. A device that is not set raises 507007."""
    dev = rt.physical(device_id)
    if dev.refcount <= 0:
        fail(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, f"device {device_id} is not set (or already reset)")
    dev.refcount -= 1
    if dev.refcount == 0:
        _release_device(rt, dev)


@api("aclrtResetDeviceForce", pyacl="acl.rt.reset_device_force", params="i")
def reset_device_force(rt: Core, device_id: int) -> None:
    """Release `device_id` whatever its reference count, as aclrtResetDevice does at the last reference
    (aclrtResetDeviceForce). A device that is not set (or already reset) raises 507007."""
    dev = rt.physical(device_id)
    if dev.refcount <= 0:
        fail(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, f"device {device_id} is not set (or already reset)")
    _release_device(rt, dev)


@api("aclrtGetDevice", pyacl="acl.rt.get_device", outputs=(0,))
def get_device(rt: Core) -> int:
    """This thread's current device id (aclrtGetDevice); without a context, the aclInit default device, else
    107002."""
    ctx = rt.ctx
    if ctx is None:
        if rt.default_device is not None:
            return rt.default_device
        fail(ACL_ERROR_RT_CONTEXT_NULL, "no current device: call aclrtSetDevice first")
    return rt.visible.index(ctx.device.id)


@api("aclrtGetDeviceCount", pyacl="acl.rt.get_device_count", outputs=(0,))
def get_device_count(rt: Core) -> int:
    """How many devices are visible (aclrtGetDeviceCount): the product's, or those ASCEND_RT_VISIBLE_DEVICES
    names (207004 when it names none of them)."""
    if not rt.visible:
        fail(ACL_ERROR_RT_NO_DEVICE, "ASCEND_RT_VISIBLE_DEVICES names no device of this product")
    return len(rt.visible)


@api("aclrtGetRunMode", pyacl="acl.rt.get_run_mode", outputs=(0,))
def get_run_mode(rt: Core) -> int:
    """ACL_HOST (1) on an EP deployment (the host drives a card), ACL_DEVICE (0) on RC and control-CPU ones
    (the program runs on the board) (aclrtGetRunMode)."""
    return C.ACL_HOST if rt.product.ep_mode else C.ACL_DEVICE


@api("aclrtSynchronizeDevice", pyacl="acl.rt.synchronize_device")
def synchronize_device(rt: Core) -> None:
    """Block this thread until every stream of the current context, its default stream included, is drained
    (aclrtSynchronizeDevice). A task that failed on one raises 507899."""
    ctx = rt.current_context()
    joined = [streams.drain(rt, s, wake=False) for s in [ctx.default_stream, *ctx.streams]]
    if any(joined):
        rt.woken()  # one round trip for the call, however many streams it joined


# -- contexts -------------------------------------------------------------------
@api("aclrtCreateContext", pyacl="acl.rt.create_context", params="i", outputs=(0,))
def create_context(rt: Core, device_id: int) -> int:
    """Create a context on `device_id` and make it this thread's current one (aclrtCreateContext); returns its
    handle. Like aclrtSetDevice it holds a reference on the device (creating its primary context first if
    needed), which aclrtDestroyContext releases."""
    dev = rt.physical(device_id)
    if dev.refcount == 0 or dev.primary is None:
        dev.primary = rt.new_context(dev, primary=True)
    dev.refcount += 1
    ctx = rt.new_context(dev, primary=False)
    rt.ctx = ctx
    return ctx.handle


@api("aclrtDestroyContext", pyacl="acl.rt.destroy_context", params="i")
def destroy_context(rt: Core, handle: int) -> None:
    """Destroy a context of aclrtCreateContext (aclrtDestroyContext): its streams go (after their queued
    tasks), and its reference on the device, the last of which releases the device as aclrtResetDevice does.

    context.cpp: aclrtDestroyContextImpl; ApiErrorDecorator::ContextDestroy; ApiImpl::ContextDestroy:
    a context that is not live, or the primary one, is RT_ERROR_CONTEXT_NULL (107002)."""
    if handle == 0:
        fail(ACL_ERROR_INVALID_PARAM, "context is null")
    ctx = _live_context(rt, handle, ACL_ERROR_RT_CONTEXT_NULL)
    if ctx.primary:
        fail(ACL_ERROR_RT_CONTEXT_NULL, "the primary context cannot be destroyed: aclrtResetDevice releases it")
    dev = ctx.device
    _release_context(rt, ctx)
    dev.refcount -= 1
    if dev.refcount == 0:
        _release_device(rt, dev)


@api("aclrtSetCurrentContext", pyacl="acl.rt.set_context", params="i")
def set_context(rt: Core, handle: int) -> None:
    """Make context `handle` this thread's current context, and its device the current device
    (aclrtSetCurrentContext).

    context.cpp: aclrtSetCurrentContextImpl; ApiErrorDecorator::ContextSetCurrent:
    CHECK_CONTEXT_VALID_WITH_RETURN(ctx, RT_ERROR_INVALID_VALUE) -> 107000 for a context that is not live."""
    if handle == 0:
        fail(ACL_ERROR_INVALID_PARAM, "context is null")
    rt.ctx = _live_context(rt, handle, ACL_ERROR_RT_PARAM_INVALID)


def _live_context(rt: Core, handle: int, code: int) -> Context:
    if rt.caller.gate is not None:
        rt.runtime_layer()
    ctx = rt.handles.get(handle)
    if not isinstance(ctx, Context) or ctx.destroyed:
        fail(code, f"context 0x{handle:x} is not a live context")
    return ctx


@api("aclrtGetCurrentContext", pyacl="acl.rt.get_context", outputs=(0,))
def get_context(rt: Core) -> int:
    """This thread's current context handle (aclrtGetCurrentContext); 107002 without one (the aclInit default
    device is not opened)."""
    return rt.current_context(implicit=False).handle
