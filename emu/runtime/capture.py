"""Graph capture (aclmdlRI*), as far as copies and memsets go (docs/conformance/hostmem_peer_capture.md).

While a stream is captured its tasks are recorded into a model instead of
running; aclmdlRIExecuteAsync replays them on a stream, as often as it is
called, each replay reading the source memory when its task runs. While any
capture is active, the synchronous copy and memset APIs are refused according
to the capture modes (the "unsafe API" rule).
"""
from __future__ import annotations

import threading

from emu.models import Task

from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC, ACL_ERROR_RT_INTERNAL_ERROR,
                      ACL_ERROR_RT_MODEL_CONTEXT, ACL_ERROR_RT_STREAM_CONTEXT,
                      ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                      ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_STREAM_CAPTURED,
                      ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD, ACL_ERROR_RT_STREAM_NOT_CAPTURED)
from ..constants import ACL_MODEL_RI_CAPTURE_MODE_GLOBAL as GLOBAL, \
    ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL as THREAD_LOCAL, ACL_MODEL_RI_CAPTURE_MODE_RELAXED as RELAXED, \
    ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE as ACTIVE, ACL_MODEL_RI_CAPTURE_STATUS_NONE as NONE, \
    ACL_STREAM_DEVICE_USE_ONLY
from .core import Context, Core, Stream, api, fail, new_handle

MODES = (GLOBAL, THREAD_LOCAL, RELAXED)


class Model:
    """A captured graph (aclmdlRI): the tasks to replay, in order."""

    def __init__(self, ctx: Context):
        self.handle = new_handle()
        self.ctx = ctx  # the context the capture began in: the model belongs to it
        self.tasks: list[Task] = []
        self.destroyed = False


class Capture:
    """An active capture on its origin stream (aclmdlRICaptureBegin to aclmdlRICaptureEnd): its mode, the
    thread that began it and the model its tasks go into."""

    def __init__(self, stream: Stream, mode: int):
        self.stream = stream
        self.mode = mode
        self.thread = threading.get_ident()
        self.model = Model(stream.ctx)
        self.status = ACTIVE

    @property
    def tasks(self) -> list[Task]:
        return self.model.tasks


def _strictest(counts: dict[int, int]) -> int | None:
    live = [m for m, n in counts.items() if n > 0]
    return min(live) if live else None


# -- capture modes ---------------------------------------------------------------------------------
def _thread_modes(rt: Core) -> dict[int, int]:
    return rt.caller.capture_modes


def check_capture_safe(rt: Core, converted: bool = False) -> None:
    """Refuse a synchronous copy or memset while a capture makes it unsafe
    (docs/conformance/hostmem_peer_capture.md, Capture)."""
    ctx = rt.caller.ctx
    if ctx is None or ctx.destroyed or not ctx.capture_modes:
        return
    ctx_mode = _strictest(ctx.capture_modes)
    if ctx_mode is None:
        return
    thread_mode = _strictest(_thread_modes(rt))
    exchange = rt.caller.exchange_mode
    if exchange == RELAXED:
        return
    if exchange == GLOBAL:
        bad = ctx_mode == GLOBAL or thread_mode == THREAD_LOCAL
    else:
        bad = thread_mode in (GLOBAL, THREAD_LOCAL)
    if bad:
        if converted:
            fail(ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC,
                 "a pageable copy would block while a stream is captured")
        fail(ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, "synchronous copies and memsets are unsafe while a "
                                                    "stream is captured")


# -- the check chain shared by Begin / GetInfo / End (rtStreamBeginCapture & co.,
#    docs/conformance/hostmem_peer_capture.md) -----------------------------------------------------
def _capture_stream(rt: Core, stream: int) -> Stream:
    """ACL: stream null -> 100000. C entry: no ACL-graph chip flag -> 207000, then the handle -> 107017."""
    if stream == 0:
        fail(ACL_ERROR_INVALID_PARAM, "stream is null")
    rt.feature_gate()
    return rt.lookup(stream, Stream, "stream")


def _capturable(s: Stream) -> None:
    """StreamFlagIsSupportCapture: a device-only stream (CP_PROCESS_USE) -> 507000."""
    if s.flags & ACL_STREAM_DEVICE_USE_ONLY:  # RT_STREAM_CP_PROCESS_USE in the runtime: no capture
        fail(ACL_ERROR_RT_INTERNAL_ERROR, f"stream 0x{s.handle:x} (ACL_STREAM_DEVICE_USE_ONLY) cannot be captured")


def _capture_context(rt: Core, s: Stream) -> None:
    """ApiImpl::StreamBegin/EndCapture: context (107002), the stream's context (107003), not the
    default stream (207000; unreachable here: its handle is null, refused by the ACL layer)."""
    ctx = rt.current_context()
    if s.ctx is not ctx:
        fail(ACL_ERROR_RT_STREAM_CONTEXT, f"stream 0x{s.handle:x} belongs to another context")
    if s.default:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "the default stream cannot be captured")


def _release_capture(rt: Core, s: Stream) -> Capture:
    """Context::CaptureModeExit: the stream leaves capture; the context's and this thread's mode
    counts drop."""
    cap, s.capture = s.capture, None
    s.ctx.capture_modes[cap.mode] -= 1
    tm = _thread_modes(rt)
    if tm.get(cap.mode):
        tm[cap.mode] -= 1
    return cap


@api("aclmdlRICaptureBegin", gate=False, feature="acl_graph", pyacl="acl.mdl.ri_capture_begin", params="ii")
def ri_capture_begin(rt: Core, stream: int, mode: int) -> None:
    """Begin capturing `stream` (aclmdlRICaptureBegin): from now on the tasks queued on it (copies, memsets,
    kernels, event records) go into a model instead of running. mode (aclmdlRICaptureMode): GLOBAL 0,
    THREAD_LOCAL 1 or RELAXED 2, which synchronous APIs the capture makes unsafe. Not the default stream;
    a stream already captured raises 107027; products without graph capture, 207000."""
    s = _capture_stream(rt, stream)
    if mode not in MODES:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"capture mode {mode} is not one of 0..2")
    _capturable(s)
    _capture_context(rt, s)
    if s.capture is not None:
        fail(ACL_ERROR_RT_STREAM_CAPTURED, f"stream 0x{stream:x} is already being captured")
    s.capture = Capture(s, mode)
    s.ctx.capture_modes[mode] = s.ctx.capture_modes.get(mode, 0) + 1
    tm = _thread_modes(rt)
    tm[mode] = tm.get(mode, 0) + 1


@api("aclmdlRICaptureGetInfo", gate=False, feature="acl_graph", pyacl="acl.mdl.ri_capture_get_info", params="i",
     outputs=(0, 0))
def ri_capture_get_info(rt: Core, stream: int) -> tuple[int, int]:
    """(status, model handle) of a stream's capture (aclmdlRICaptureGetInfo): (ACTIVE (1), the model being
    captured), or (NONE (0), 0) if it is not captured. No context is needed
    (ApiImpl::StreamGetCaptureInfo reads the stream only)."""
    s = _capture_stream(rt, stream)
    if s.capture is None:
        return NONE, 0
    return s.capture.status, s.capture.model.handle


@api("aclmdlRICaptureEnd", gate=False, feature="acl_graph", pyacl="acl.mdl.ri_capture_end", params="i", outputs=(0,))
def ri_capture_end(rt: Core, stream: int) -> int:
    """End the capture of `stream` (aclmdlRICaptureEnd); returns the captured model's handle, for
    aclmdlRIExecuteAsync. A stream not captured raises 107029. Ended on another thread than the one that
    began it (except in RELAXED mode), the capture ends all the same, its model dropped, and 107038 is raised."""
    s = _capture_stream(rt, stream)
    _capturable(s)
    _capture_context(rt, s)
    cap = s.capture
    if cap is None:
        fail(ACL_ERROR_RT_STREAM_NOT_CAPTURED, f"stream 0x{stream:x} is not being captured")
    if cap.mode != RELAXED and cap.thread != threading.get_ident():
        _release_capture(rt, s)  # Context::StreamEndCapture ends the capture all the same
        fail(ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD, "the capture must end on the thread that began it; "
                                                       "it is ended and its model dropped")
    _release_capture(rt, s)
    rt.handles[cap.model.handle] = cap.model
    return cap.model.handle


@api("aclmdlRICaptureThreadExchangeMode", gate=False, feature="acl_graph")
def ri_capture_thread_exchange_mode(rt: Core, mode: int) -> int:
    """Set this thread's capture exchange mode (aclmdlRICaptureThreadExchangeMode): which synchronous APIs
    an active capture refuses on this thread; returns the old mode."""
    rt.feature_gate()
    if not 0 <= mode < len(MODES):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"capture mode {mode} is not one of 0..2")
    rt.current_context()
    old, rt.caller.exchange_mode = rt.caller.exchange_mode, mode
    return old


# -- models ------------------------------------------------------------------------------
def _check_model_context(rt: Core, m: Model) -> None:
    """ApiImpl::ModelExecute / ModelDestroy: context (107002), the model's context (107004)."""
    ctx = rt.current_context()
    if m.ctx is not ctx:
        fail(ACL_ERROR_RT_MODEL_CONTEXT, f"modelRI 0x{m.handle:x} was captured in another context")


@api("aclmdlRIExecuteAsync", gate=False, pyacl="acl.mdl.ri_execute_async", params="ii")
def ri_execute_async(rt: Core, model: int, stream: int = 0) -> None:
    """Replay a captured model's tasks, in order, on `stream` (0: the default stream of the model's context)
    (aclmdlRIExecuteAsync); each replay reads its sources when its tasks run. A stream being captured raises
    107027; the current context must be the model's (107004) and so must the stream's (107003)."""
    if model == 0:
        fail(ACL_ERROR_INVALID_PARAM, "modelRI is null")
    m = rt.lookup(model, Model, "modelRI")
    given = rt.lookup(stream, Stream, "stream") if stream else None
    if given is not None and given.capture is not None:
        fail(ACL_ERROR_RT_STREAM_CAPTURED, f"stream 0x{given.handle:x} is being captured")
    _check_model_context(rt, m)
    s = given or m.ctx.default_stream
    if s.ctx is not m.ctx:  # Model::Execute
        fail(ACL_ERROR_RT_STREAM_CONTEXT, f"stream 0x{s.handle:x} is not in the modelRI's context")
    for t in m.tasks:
        clone = t.clone()
        clone.device = s.device
        rt.submit(s, clone, (rt, t), 0.0, _replayed)


def _replayed(of: tuple) -> object:
    """What a replayed task of a captured model reads and writes, of (runtime, the captured task), for
    `Core.submit` (called only when the sanitizer is on)."""
    rt, task = of
    return rt.sanitizer.captured(task)


@api("aclmdlRIDestroy", gate=False, pyacl="acl.mdl.ri_destroy", params="i")
def ri_destroy(rt: Core, model: int) -> None:
    """Destroy a captured model (aclmdlRIDestroy), from the context it was captured in (else 107004)."""
    if model == 0:
        fail(ACL_ERROR_INVALID_PARAM, "modelRI is null")
    m = rt.lookup(model, Model, "modelRI")
    _check_model_context(rt, m)
    m.destroyed = True
