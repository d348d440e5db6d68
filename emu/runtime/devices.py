"""Initialisation, devices and contexts: aclInit / aclFinalize, aclrtSetDevice, aclrtResetDevice(Force),
aclrtGetDevice(Count), aclrtGetRunMode, aclrtSynchronizeDevice, aclrtCreate/Destroy/Set/GetCurrentContext."""
from __future__ import annotations

import hashlib
import json

from .. import constants as C
from .. import files
from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_REPEAT_FINALIZE, ACL_ERROR_REPEAT_INITIALIZE,
                      ACL_ERROR_RT_CONTEXT_NULL, ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, ACL_ERROR_RT_NO_DEVICE,
                      ACL_ERROR_RT_PARAM_INVALID)
from . import streams
from .core import Context, Core, Device, api, fail


# -- init / finalize ------------------------------------------------------------
@api("aclInit", pyacl="acl.init", params="s", optional=1)
def init(rt: Core, config_path: str | None = None) -> None:
    """Initialise ACL (aclInit), optionally from a JSON config file.

    config_path: None or a JSON file; its "defaultDevice" (an id, or {"default_device": id}) is the device
    a thread without a context opens on its first call that needs one. Raises 100002 if ACL is already
    initialised; 100000 for a file that cannot be read or is not JSON, or (after aclFinalize) for a config
    other than the first one."""
    if rt.init_refcount > 0:
        rt.init_refcount += 1
        fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit was already called")
    content = b""
    if config_path:
        try:
            content = files.read_bytes(config_path, files.CONFIG_BYTES, "an aclInit config")
        except files.FileRefused as e:  # missing, a FIFO, a device, a directory, over the bound
            fail(ACL_ERROR_INVALID_PARAM, f"cannot read config {e}")
    digest = hashlib.sha256(content).hexdigest()
    if rt.finalized and rt.init_hash is not None and digest != rt.init_hash:
        fail(ACL_ERROR_INVALID_PARAM, "aclInit after aclFinalize with a different config")
    if content.strip():
        try:
            cfg = json.loads(content)
        except ValueError as e:
            fail(ACL_ERROR_INVALID_PARAM, f"config {config_path} is not JSON: {e}")
        except RecursionError:
            fail(ACL_ERROR_INVALID_PARAM, f"config {config_path} is not JSON that can be read: nested too deeply")
        dd = cfg.get("defaultDevice") if isinstance(cfg, dict) else None
        if isinstance(dd, dict):
            dd = dd.get("default_device")
        if dd is not None:
            try:
                rt.default_device = int(dd)
            except (TypeError, ValueError, OverflowError):
                fail(ACL_ERROR_INVALID_PARAM, f"defaultDevice {dd!r} is not a device id")
    rt.init_hash = rt.init_hash or digest
    rt.init_refcount = 1
    rt.finalized = False


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
