"""Graph capture (aclmdlRI*), as far as copies and memsets go (spec 10.3).

While a stream is captured its tasks are recorded into a model instead of
running; aclmdlRIExecuteAsync replays them on a stream, as often as it is
called, each replay reading the source memory when its task runs. While any
capture is active, the synchronous copy and memset APIs are refused according
to the capture modes (the "unsafe API" rule).
"""
from __future__ import annotations

import threading

from models import Task

from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC,
                      ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                      ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_STREAM_CAPTURED,
                      ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD, ACL_ERROR_RT_STREAM_NOT_CAPTURED)
from .core import Core, Stream, _handles, api, fail

GLOBAL, THREAD_LOCAL, RELAXED = 0, 1, 2  # aclmdlRICaptureMode
NONE, ACTIVE, INVALIDATED = 0, 1, 2  # aclmdlRICaptureStatus


class Model:
    """A captured graph (aclmdlRI): the tasks to replay, in order."""

    def __init__(self):
        self.handle = next(_handles)
        self.tasks: list[Task] = []
        self.destroyed = False


class Capture:
    """An active capture on its origin stream."""

    def __init__(self, stream: Stream, mode: int):
        self.stream = stream
        self.mode = mode
        self.thread = threading.get_ident()
        self.model = Model()
        self.status = ACTIVE

    @property
    def tasks(self) -> list[Task]:
        return self.model.tasks


def _strictest(counts: dict[int, int]) -> int | None:
    live = [m for m, n in counts.items() if n > 0]
    return min(live) if live else None


class CaptureOps:
    """Mixed into `Runtime`."""

    def _thread_modes(self: Core) -> dict[int, int]:
        return self._state.capture_modes

    def check_capture_safe(self: Core, converted: bool = False) -> None:
        """Refuse a synchronous copy or memset while a capture makes it unsafe (spec 10.3)."""
        ctx = self.ctx
        if ctx is None:
            return
        ctx_mode = _strictest(ctx.capture_modes)
        if ctx_mode is None:
            return
        thread_mode = _strictest(self._thread_modes())
        exchange = self._state.exchange_mode
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

    def _capture_stream(self: Core, stream: int) -> Stream:
        if stream == 0:
            fail(ACL_ERROR_INVALID_PARAM, "stream is null")
        return self._lookup(stream, Stream, "stream")

    @api("aclmdlRICaptureBegin")
    def ri_capture_begin(self: Core, stream: int, mode: int) -> None:
        s = self._capture_stream(stream)
        if not self.product.has("acl_graph"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"graph capture is not supported on {self.product.name}")
        if mode not in (GLOBAL, THREAD_LOCAL, RELAXED):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"capture mode {mode} is not one of 0..2")
        if s.capture is not None:
            fail(ACL_ERROR_RT_STREAM_CAPTURED, f"stream 0x{stream:x} is already being captured")
        s.capture = Capture(s, mode)
        s.ctx.capture_modes[mode] = s.ctx.capture_modes.get(mode, 0) + 1
        tm = self._thread_modes()
        tm[mode] = tm.get(mode, 0) + 1

    @api("aclmdlRICaptureGetInfo")
    def ri_capture_get_info(self: Core, stream: int) -> tuple[int, int]:
        """(status, model handle) of a stream's capture; (NONE, 0) if it is not captured."""
        s = self._capture_stream(stream)
        if s.capture is None:
            return NONE, 0
        return s.capture.status, s.capture.model.handle

    @api("aclmdlRICaptureEnd")
    def ri_capture_end(self: Core, stream: int) -> int:
        s = self._capture_stream(stream)
        cap = s.capture
        if cap is None:
            fail(ACL_ERROR_RT_STREAM_NOT_CAPTURED, f"stream 0x{stream:x} is not being captured")
        if cap.mode != RELAXED and cap.thread != threading.get_ident():
            fail(ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD, "the capture must end on the thread that began it")
        s.capture = None
        s.ctx.capture_modes[cap.mode] -= 1
        tm = self._thread_modes()
        if tm.get(cap.mode):
            tm[cap.mode] -= 1
        self.handles[cap.model.handle] = cap.model
        return cap.model.handle

    @api("aclmdlRIExecuteAsync")
    def ri_execute_async(self: Core, model: int, stream: int = 0) -> None:
        if model == 0:
            fail(ACL_ERROR_INVALID_PARAM, "modelRI is null")
        m = self._lookup(model, Model, "model")
        s = self.stream_of(stream)
        if s.capture is not None:
            fail(ACL_ERROR_RT_STREAM_CAPTURED, f"stream 0x{s.handle:x} is being captured")
        for t in m.tasks:
            clone = t.clone()
            clone.device = s.device
            self.submit(s, clone)

    @api("aclmdlRIDestroy")
    def ri_destroy(self: Core, model: int) -> None:
        if model == 0:
            fail(ACL_ERROR_INVALID_PARAM, "modelRI is null")
        self._lookup(model, Model, "model").destroyed = True
