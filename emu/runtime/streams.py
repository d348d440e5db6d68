"""Streams and events: aclrtCreateStream(WithConfig), aclrtDestroyStream(Force), aclrtSynchronizeStream
(WithTimeout), aclrtStreamQuery, aclrtCreateEvent(WithFlag, ExWithFlag), aclrtDestroyEvent, aclrtRecordEvent,
aclrtResetEvent, aclrtStreamWaitEvent, aclrtSynchronizeEvent, aclrtQueryEvent(Wait)Status,
aclrtEventElapsedTime."""
from __future__ import annotations

from emu.models import MARKER, Task

from .. import constants as C
from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_CAPTURE_DEPENDENCY, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                      ACL_ERROR_RT_EVENT_CAPTURED, ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                      ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INTERNAL_ERROR, ACL_ERROR_RT_NO_EVENT_RESOURCE,
                      ACL_ERROR_RT_NO_STREAM_RESOURCE, ACL_ERROR_RT_PARAM_INVALID,
                      ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT, ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, DeviceException)
from .core import (Core, Event, Stream,
                   NO_SYNC_STREAM_FLAGS, STREAM_FLAGS, api, fail)
from .handles import EventHandle, StreamHandle


# -- streams ---------------------------------------------------------------------
def _new_stream(rt: Core, flags: int = 0, priority: int = 0) -> int:
    ctx = rt.current_context()
    dev = ctx.device
    if dev.streams >= rt.product.max_streams:
        fail(ACL_ERROR_RT_NO_STREAM_RESOURCE,
             f"device {dev.id} already has {rt.product.max_streams} streams, the limit on "
             f"{rt.product.name}")
    s = Stream(ctx, None, flags=flags, priority=priority)
    s.m = rt.machine.stream(f"dev{dev.id}/stream{s.handle:x}", dev.id)
    ctx.streams.append(s)
    rt.handles[s.handle] = s
    rt.sanitize("stream_created", s)
    return StreamHandle(s.handle, rt)


@api("aclrtCreateStream", pyacl="acl.rt.create_stream", outputs=(0,))
def create_stream(rt: Core) -> int:
    """Create a stream in the current context (aclrtCreateStream); returns its handle. Past the product's stream
    limit per device (default streams included): 207008."""
    return _new_stream(rt)


@api("aclrtCreateStreamWithConfig", pyacl="acl.rt.create_stream_with_config", params="ii", outputs=(0,))
def create_stream_with_config(rt: Core, priority: int, flag: int) -> int:
    """Create a stream in the current context with a priority (clamped to 0..7) and ACL_STREAM_* flags
    (aclrtCreateStreamWithConfig); returns its handle. HUGE on a product without it raises 207000;
    DEVICE_USE_ONLY combined with another flag, 107000.

    acl stream.cpp: aclrtCreateStreamWithConfigImpl (unknown bits dropped), then
    api_error.cc: ApiErrorDecorator::StreamCreate / CheckStreamFlags, api_impl.cc: ApiImpl::StreamCreate."""
    rt.runtime_layer()
    flag &= STREAM_FLAGS
    if flag & C.ACL_STREAM_HUGE:  # RT_FEATURE_STREAM_HUGE_DEPTH
        rt.require_feature("huge_stream", "ACL_STREAM_HUGE streams")
    if flag & C.ACL_STREAM_DEVICE_USE_ONLY and flag != C.ACL_STREAM_DEVICE_USE_ONLY:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"stream flag 0x{flag:x}: ACL_STREAM_DEVICE_USE_ONLY must stand alone")
    prio = (int(priority) + 2**31) % 2**32 - 2**31  # the runtime reads the uint32 as int32
    return _new_stream(rt, flags=flag, priority=min(max(prio, 0), 7))


def drain(rt: Core, s: Stream, wake: bool = True, last: Task | None = None) -> bool:
    """Wait for what `s` has queued (up to `last`, the task queued last when the call began, if given: work
    another thread queues meanwhile is not this call's); `wake`: then pay the synchronize's round trip
    (Core.woken) if it had any task. True when it had one."""
    last = s.m.last if last is None else last
    if last is not None and not last.completed:
        rt.wait_for(last)
    else:
        rt.sanitize("joined", last)  # done already: the wait still orders what follows after it
    if s.m.failed:
        task, s.m.failed[:] = s.m.failed[0], []
        code = task.error.code if isinstance(task.error, DeviceException) else ACL_ERROR_RT_DRV_INTERNAL_ERROR
        fail(code, f"{task.label} on {s.m.name} failed: {getattr(task.error, 'message', task.error)}")
    joined = last is not None
    if joined and wake:
        rt.woken()
    return joined


def _destroy_stream(rt: Core, handle: int, wait: bool) -> None:
    """api_c_stream.cc: rtStreamDestroy(Force); ApiErrorDecorator::StreamDestroy; ApiImpl::StreamDestroy."""
    if handle == 0:
        fail(ACL_ERROR_INVALID_PARAM, "stream is null")
    s = rt.lookup(handle, Stream, "stream")
    rt.check_not_capturing(s)
    rt.stream_of(handle)  # 107002 without a context, 107003 from another context
    rt.sanitize("stream_destroyed", s, wait)
    if wait and not s.m.idle:
        rt.wait_for(s.m.last)
    elif not wait:
        rt.catch_up()  # what the device has started by now it does (a kernel launched just before: its output)
    s.destroyed = True
    rt.handles.pop(handle, None)
    if s in s.ctx.streams:
        s.ctx.streams.remove(s)


@api("aclrtDestroyStream", pyacl="acl.rt.destroy_stream", params="i")
def destroy_stream(rt: Core, handle: int) -> None:
    """Destroy a stream of the current context once its queued tasks complete (aclrtDestroyStream).

    A null handle raises 100000, a stream being captured 107027, a stream of another context 107003."""
    _destroy_stream(rt, handle, wait=True)


@api("aclrtDestroyStreamForce", pyacl="acl.rt.destroy_stream_force", params="i")
def destroy_stream_force(rt: Core, handle: int) -> None:
    """Destroy a stream at once, without waiting for its queued tasks (aclrtDestroyStreamForce); the checks are
    aclrtDestroyStream's."""
    _destroy_stream(rt, handle, wait=False)


def _sync_target(rt: Core, handle: int, timeout_ms: int = -1) -> Stream | None:
    """The checks synchronize and query share, in order: the handle (107017), a zero timeout (107000),
    a capturing stream (107027), the flags that return at once (None), no context (107002).
    A stream of another context is allowed (ApiImpl::StreamSynchronize switches context)."""
    s = None if handle == 0 else rt.lookup(handle, Stream, "stream")
    if rt.caller.gate is not None:
        rt.runtime_layer()
    if timeout_ms == 0:
        fail(ACL_ERROR_RT_PARAM_INVALID, "timeout 0 ms: must be -1 (forever) or > 0")
    if s is not None:
        rt.check_not_capturing(s)
        if s.flags & NO_SYNC_STREAM_FLAGS:
            return None
    ctx = rt.current_context()
    return s if s is not None else ctx.default_stream


@api("aclrtSynchronizeStream", pyacl="acl.rt.synchronize_stream", params="i")
def synchronize_stream(rt: Core, handle: int = 0) -> None:
    """Block this thread until every task queued on stream `handle` (0: the default stream) has completed
    (aclrtSynchronizeStream); a stream created PERSISTENT, DEVICE_USE_ONLY or CPU_SCHEDULE returns at
    once. A task that failed raises 507899; a stream being captured, 107027.

    stream.cpp: aclrtSynchronizeStreamImpl; ApiErrorDecorator::StreamSynchronize; ApiImpl::StreamSynchronize."""
    s = _sync_target(rt, handle)
    if s is not None:
        drain(rt, s)


@api("aclrtSynchronizeStreamWithTimeout", pyacl="acl.rt.synchronize_stream_with_timeout", params="ii")
def synchronize_stream_with_timeout(rt: Core, handle: int, timeout_ms: int) -> None:
    """As aclrtSynchronizeStream, waiting at most `timeout_ms` of simulated time (-1: forever)
    (aclrtSynchronizeStreamWithTimeout). Past it, this thread's clock is at the deadline and 507046 is
    raised; a timeout of 0 or below -1 raises 107000.

    stream.cpp: aclrtSynchronizeStreamWithTimeoutImpl (timeout < -1 -> 107000), then as synchronize."""
    if timeout_ms < -1:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"timeout {timeout_ms} ms: must be -1 (forever) or > 0")
    s = _sync_target(rt, handle, timeout_ms)
    if s is None:
        return
    last = s.m.last  # what was queued when the call began; another thread may queue more while it waits
    if timeout_ms > 0 and not s.m.idle:
        deadline = rt.clock + timeout_ms / 1000.0
        if rt.bounding(rt.caller):  # other host threads: within their horizon (see emu.runtime.core)
            rt.wait_until(last, deadline)
        else:
            rt.machine.run_until(deadline)
        if not last.completed:
            rt.clock = deadline
            fail(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                 f"stream not complete after {timeout_ms} ms of simulated time")
    drain(rt, s, last=last)


@api("aclrtStreamQuery", pyacl="acl.rt.stream_query", params="i", outputs=(0,))
def stream_query(rt: Core, handle: int = 0) -> int:
    """ACL_STREAM_STATUS_COMPLETE (0) when every task queued on stream `handle` (0: the default stream) has
    completed by this thread's time, else ACL_STREAM_STATUS_NOT_READY (1) (aclrtStreamQuery).

    stream.cpp: aclrtStreamQueryImpl; ApiErrorDecorator::StreamQuery; ApiImpl::StreamQuery."""
    s = _sync_target(rt, handle)
    if s is None:
        return C.ACL_STREAM_STATUS_COMPLETE
    rt.catch_up()
    if not s.m.idle:
        return C.ACL_STREAM_STATUS_NOT_READY
    rt.sanitize("joined", s.m.last)  # the host saw it complete
    return C.ACL_STREAM_STATUS_COMPLETE


# -- events -----------------------------------------------------------------------
def _new_event(rt: Core, flags: int, ex: bool = False) -> int:
    dev = rt.current_context().device
    if dev.events >= rt.product.max_events:
        fail(ACL_ERROR_RT_NO_EVENT_RESOURCE, f"device {dev.id} has no event left")
    ev = Event(flags, dev.id, ex)
    dev.events += 1
    rt.handles[ev.handle] = ev
    rt.sanitize("event_created", ev)
    return EventHandle(ev.handle, rt)


@api("aclrtCreateEvent", pyacl="acl.rt.create_event", outputs=(0,))
def create_event(rt: Core) -> int:
    """Create an event on the current device with the default flags 0x0E (aclrtCreateEvent): timed, can be
    waited on and reset; returns its handle. Past the product's event limit per device: 207007."""
    return _new_event(rt, C.ACL_EVENT_DEFAULT_FLAGS)


# The event flags aclrtCreateEventWithFlag takes (ACL_EVENT_SYNC .. ACL_EVENT_EXTERNAL; no IPC events here).
_EVENT_FLAGS = (C.ACL_EVENT_SYNC | C.ACL_EVENT_CAPTURE_STREAM_PROGRESS | C.ACL_EVENT_DDSYNC | C.ACL_EVENT_TIME_LINE
                | C.ACL_EVENT_DEVICE_USE_ONLY | C.ACL_EVENT_EXTERNAL)


@api("aclrtCreateEventWithFlag", pyacl="acl.rt.create_event_with_flag", params="i", outputs=(0,))
def create_event_with_flag(rt: Core, flag: int) -> int:
    """Create an event with ACL_EVENT_* flags (aclrtCreateEventWithFlag); returns its handle.

    `flag` must set a bit of 0x3F and no higher one (no IPC events here), with DEVICE_USE_ONLY (0x10) and
    EXTERNAL (0x20) only alone; otherwise 107000."""
    if flag & _EVENT_FLAGS == 0:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{flag:x} sets no known bit")
    if flag > _EVENT_FLAGS:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{flag:x} is out of range (IPC events unsupported)")
    for solo in (C.ACL_EVENT_DEVICE_USE_ONLY, C.ACL_EVENT_EXTERNAL):
        if flag & solo and flag != solo:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{solo:x} cannot be combined with others")
    return _new_event(rt, flag)


@api("aclrtCreateEventExWithFlag", pyacl="acl.rt.create_event_ex_with_flag", params="i", outputs=(0,))
def create_event_ex_with_flag(rt: Core, flag: int) -> int:
    """Create a "new mode" event, the only kind a capture may record (aclrtCreateEventExWithFlag); returns
    its handle. `flag`: an OR of SYNC 0x1, CAPTURE_STREAM_PROGRESS 0x2, DDSYNC 0x4 and TIME_LINE 0x8, or
    IPC 0x40 alone (207000 on products without IPC events); otherwise 107000.

    src/runtime/api/impl/api_error.cc: ApiErrorDecorator::EventCreateEx, then api_impl.cc: EventCreateEx."""
    rt.runtime_layer()
    for solo in (C.ACL_EVENT_DEVICE_USE_ONLY, C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC):
        if flag & solo and flag & ~solo:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{flag:x}: 0x{solo:x} cannot be combined with others")
    if flag == C.ACL_EVENT_IPC:  # RT_FEATURE_IPC_EVENT
        rt.require_feature("ipc_event", "IPC events")
    known = C.ACL_EVENT_SYNC | C.ACL_EVENT_CAPTURE_STREAM_PROGRESS | C.ACL_EVENT_DDSYNC | \
        C.ACL_EVENT_TIME_LINE | C.ACL_EVENT_IPC
    if flag & known == 0 or flag > known:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{flag:x}: expected an OR of 0x1, 0x2, 0x4, 0x8, "
                                         f"or 0x40 alone")
    return _new_event(rt, flag, ex=True)


@api("aclrtDestroyEvent", pyacl="acl.rt.destroy_event", params="i")
def destroy_event(rt: Core, handle: int) -> None:
    """Destroy an event (aclrtDestroyEvent); records and waits already queued still run."""
    if handle == 0:
        fail(ACL_ERROR_INVALID_PARAM, "event is null")
    ev = rt.event_of(handle)
    ev.destroyed = True
    rt.handles.pop(handle, None)
    rt.devices[ev.device].events -= 1


def _check_event_not_captured(ev: Event) -> None:
    if ev.captured:
        fail(ACL_ERROR_RT_EVENT_CAPTURED, f"event 0x{ev.handle:x} was recorded in a capture")


def _event_and_stream(rt: Core, event: int, stream: int, what: str) -> tuple[Event, Stream | None]:
    """The C entry's handle checks (event, then stream: 107017) and the decorator's MC2 rule (107000)."""
    if event == 0:
        fail(ACL_ERROR_INVALID_PARAM, "event is null")
    ev = rt.event_of(event)
    s = None if stream == 0 else rt.lookup(stream, Stream, "stream")
    if rt.caller.gate is not None:
        rt.runtime_layer()
    if ev.flags & C.ACL_EVENT_DEVICE_USE_ONLY:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"a DEVICE_USE_ONLY event cannot be {what} from the host")
    return ev, s


def _check_ipc_not_captured(ev: Event, s: Stream | None) -> None:
    if ev.flags == C.ACL_EVENT_IPC and s is not None and s.capture is not None:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an IPC event cannot be used on a capturing stream")


def _check_capturable(ev: Event, s: Stream) -> None:
    """ApiImpl::EventRecord / StreamWaitEvent / EventReset: on a capturing stream only an
    aclrtCreateEventExWithFlag event (or an EXTERNAL one, which is never captured) is allowed."""
    if s.capture is not None and not ev.ex and ev.flags != C.ACL_EVENT_EXTERNAL:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an event of aclrtCreateEvent / aclrtCreateEventWithFlag cannot "
                                               "be used on a capturing stream: use aclrtCreateEventExWithFlag")


@api("aclrtRecordEvent", pyacl="acl.rt.record_event", params="ii")
def record_event(rt: Core, event: int, stream: int = 0) -> None:
    """Queue a record of `event` on `stream` (0: the default stream) (aclrtRecordEvent): the record
    completes when every earlier task on the stream has. On a capturing stream it goes into the capture:
    only aclrtCreateEventExWithFlag (or EXTERNAL) events may be recorded there, others raise 207000.

    event.cpp: aclrtRecordEventImpl; api_c.cc: rtEventRecord; ApiErrorDecorator::EventRecord; ApiImpl::EventRecord."""
    ev, _ = _event_and_stream(rt, event, stream, "recorded")
    s = rt.stream_of(stream)
    _check_ipc_not_captured(ev, s)
    _check_capturable(ev, s)
    if s.capture is not None and ev.flags != C.ACL_EVENT_EXTERNAL and not ev.can_wait:
        return  # ApiImpl::EventRecord: an Ex event without wait capability is not captured; 0
    task = rt.submit(s, Task(MARKER, device=s.device, label=f"record event 0x{event:x}"))
    if s.capture is None:
        ev.record, ev.capture = task, None
    elif ev.flags != C.ACL_EVENT_EXTERNAL:
        ev.capture = s.capture  # a captured record runs only when the model does: the live one stays


@api("aclrtResetEvent", pyacl="acl.rt.reset_event", params="ii")
def reset_event(rt: Core, event: int, stream: int = 0) -> None:
    """Forget the latest record of `event` (aclrtResetEvent), at once: `stream` is checked, nothing is
    queued on it. An event that cannot be waited on (no SYNC, DDSYNC, EXTERNAL or IPC flag), or made by
    aclrtCreateEventExWithFlag, raises 207000.

    event.cpp: aclrtResetEventImpl; api_c.cc: rtEventReset; ApiErrorDecorator::EventReset; ApiImpl::EventReset."""
    ev, _ = _event_and_stream(rt, event, stream, "reset")
    if ev.flags == C.ACL_EVENT_IPC:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an IPC event cannot be reset")
    if not ev.can_wait:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"an event of flag 0x{ev.flags:x} (no ACL_EVENT_SYNC) cannot be reset")
    ctx = rt.current_context()
    if ev.ex:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an aclrtCreateEventExWithFlag event cannot be reset")
    s = rt.stream_of(stream)
    if s is not ctx.default_stream:
        _check_capturable(ev, s)
    ev.record = None


@api("aclrtStreamWaitEvent", pyacl="acl.rt.stream_wait_event", params="ii")
def stream_wait_event(rt: Core, stream: int, event: int) -> None:
    """Make the tasks queued next on `stream` (0: the default stream) wait for the latest record of
    `event` (aclrtStreamWaitEvent); an event never recorded is no wait. An event that cannot be waited on
    (no SYNC, DDSYNC, EXTERNAL or IPC flag) raises 207000.

    stream.cpp: aclrtStreamWaitEventImpl; api_c_stream.cc: rtStreamWaitEvent (stream handle, then event);
    ApiErrorDecorator::StreamWaitEvent; ApiImpl::StreamWaitEvent."""
    if event == 0:
        fail(ACL_ERROR_INVALID_PARAM, "event is null")
    if stream != 0:
        rt.lookup(stream, Stream, "stream")
    ev, _ = _event_and_stream(rt, event, stream, "waited on")
    _check_ipc_not_captured(ev, None if stream == 0 else rt.handles[stream])
    if not ev.can_wait:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"event flag 0x{ev.flags:x} has no ACL_EVENT_SYNC: it cannot be waited on")
    s = rt.stream_of(stream)
    if ev.captured:
        return _wait_captured_event(rt, ev, s)
    _check_capturable(ev, s)
    if s.capture is not None and ev.record is not None:
        fail(ACL_ERROR_RT_CAPTURE_DEPENDENCY, "the event was recorded outside the capture: a captured stream "
                                              "cannot wait on it (see ACL_EVENT_WAIT_EXTERNAL)")
    if ev.record is not None:
        wait = rt.submit(s, Task(MARKER, device=s.device, waits=(ev.record,), label=f"wait event 0x{event:x}"))
        n = len(ev.waits)
        if n >= 32 and n & (n - 1) == 0:  # at each power of two: keep only the waits still pending
            ev.waits = [t for t in ev.waits if not t.completed]
        ev.waits.append(wait)
    else:
        rt.sanitize("unrecorded_wait", ev, "aclrtStreamWaitEvent")


def _wait_captured_event(rt: Core, ev: Event, s: Stream) -> None:
    """ApiImpl::StreamWaitEvent on a capturing event: the default stream cannot join a capture (107031);
    a wait inside the event's own capture follows from stream order."""
    if s is s.ctx.default_stream:
        fail(ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT, "the default stream cannot wait on an event being captured")
    if s.capture is not ev.capture:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "waiting on a captured event from a stream outside that capture "
                                               "(multi-stream capture) is not emulated")


def _event_to_observe(rt: Core, event: int, verb: str) -> Event:
    """The checks aclrtSynchronizeEvent and aclrtQueryEventStatus share, in order: null (100000), the handle
    (107017), an EXTERNAL event (207000), one recorded into an active capture (107028)."""
    if event == 0:
        fail(ACL_ERROR_INVALID_PARAM, "event is null")
    ev = rt.event_of(event)
    if ev.flags & C.ACL_EVENT_EXTERNAL:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"an EXTERNAL event cannot be {verb}")
    _check_event_not_captured(ev)
    return ev


@api("aclrtSynchronizeEvent", pyacl="acl.rt.synchronize_event", params="i")
def synchronize_event(rt: Core, event: int) -> None:
    """Block this thread until the latest record of `event` has completed (aclrtSynchronizeEvent); at once if it
    was never recorded. An EXTERNAL event raises 207000, one recorded into an active capture 107028."""
    ev = _event_to_observe(rt, event, "synchronized")
    if ev.record is not None:
        rt.wait_for(ev.record)
        rt.woken()
    else:
        rt.sanitize("unrecorded_wait", ev, "aclrtSynchronizeEvent")


@api("aclrtQueryEventStatus", pyacl="acl.rt.query_event_status", params="i", outputs=(0,))
def query_event_status(rt: Core, event: int) -> int:
    """ACL_EVENT_RECORDED_STATUS_COMPLETE (1) when the latest record of `event` has completed by this thread's
    time, else ACL_EVENT_RECORDED_STATUS_NOT_READY (0), also for an event never recorded
    (aclrtQueryEventStatus), except a never-recorded aclrtCreateEventExWithFlag ("new mode") event, which is
    COMPLETE (event.cc Event::QueryEventStatus; ipc_event.cc IpcEvent::IpcEventQuery for IPC)."""
    ev = _event_to_observe(rt, event, "queried")
    rt.catch_up()
    if ev.record is None and ev.ex:  # event.cc Event::QueryEventStatus: no record, new mode -> RT_EVENT_RECORDED
        return C.ACL_EVENT_RECORDED_STATUS_COMPLETE
    if not (ev.record is not None and ev.record.completed):
        return C.ACL_EVENT_RECORDED_STATUS_NOT_READY
    rt.sanitize("joined", ev.record)  # the host saw it complete
    return C.ACL_EVENT_RECORDED_STATUS_COMPLETE


@api("aclrtQueryEventWaitStatus", pyacl="acl.rt.query_event_wait_status", params="i", outputs=(0,))
def query_event_wait_status(rt: Core, event: int) -> int:
    """Whether the stream waits on `event` are over (aclrtQueryEventWaitStatus): COMPLETE (0) when the
    event cannot be waited on or every stream wait on it has completed by this thread's time, else
    NOT_READY (1).

    src/runtime/api/impl/api_impl_event_common.cc: ApiImplEvent::EventQueryWaitStatus; Event::QueryEventWaitStatus."""
    if event == 0:
        fail(ACL_ERROR_INVALID_PARAM, "event is null")
    ev = rt.event_of(event)
    if ev.ex:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an aclrtCreateEventExWithFlag event has no wait status")
    if ev.flags in (C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC):
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"an event of flag 0x{ev.flags:x} has no wait status")
    _check_event_not_captured(ev)
    rt.catch_up()
    ev.waits = [t for t in ev.waits if not t.completed]
    if ev.waits and ev.can_wait:
        return C.ACL_EVENT_WAIT_STATUS_NOT_READY
    return C.ACL_EVENT_WAIT_STATUS_COMPLETE


@api("aclrtEventElapsedTime", pyacl="acl.rt.event_elapsed_time", params="ii", outputs=(0.0,))
def event_elapsed_time(rt: Core, start: int, end: int) -> float:
    """Milliseconds of simulated time from the completion of `start`'s latest record to that of `end`'s
    (aclrtEventElapsedTime); negative if `end` completed first. Both must be recorded (else 507000), created
    with ACL_EVENT_TIME_LINE and complete (else 107006)."""
    if start == 0 or end == 0:
        fail(ACL_ERROR_INVALID_PARAM, "event is null")
    a, b = rt.event_of(start), rt.event_of(end)
    _check_event_not_captured(a)
    _check_event_not_captured(b)
    if (a.flags | b.flags) & (C.ACL_EVENT_EXTERNAL | C.ACL_EVENT_IPC):
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "EXTERNAL / IPC events have no elapsed time")
    if a.record is None or b.record is None:
        fail(ACL_ERROR_RT_INTERNAL_ERROR, "both events must be recorded first")
    if not (a.timed and b.timed):
        fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "an event created without ACL_EVENT_TIME_LINE has no timestamp")
    rt.catch_up()
    if not (a.record.completed and b.record.completed):
        fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "an event has not completed yet: synchronize first")
    rt.sanitize("joined", a.record)  # the host saw both complete
    rt.sanitize("joined", b.record)
    return (b.record.end - a.record.end) * 1000.0
