"""Conformance of initialisation, devices, contexts, streams, events and kernel launch to the
reference runtime (hicann/runtime 681ef7610). One test per row of
docs/conformance/devices_streams_events.md; each docstring cites the source function that
makes the rule and any disagreement with the API reference (hicann/runtime docs/zh/api_ref/)."""
from __future__ import annotations

import pytest

from emu import constants as C
from emu.constants import ACL_EVENT_WAIT_STATUS_COMPLETE as EVENT_WAIT_STATUS_COMPLETE, \
    ACL_EVENT_WAIT_STATUS_NOT_READY as EVENT_WAIT_STATUS_NOT_READY
from helpers import code

SYNC, PROGRESS, DDSYNC, TIME_LINE = 0x1, 0x2, 0x4, 0x8
MC2, EXTERNAL, IPC = 0x10, 0x20, 0x40


def slow_task(r, stream: int, us: float = 1000.0) -> None:
    """A kernel of `us` microseconds on `stream`, so the stream is busy for a while."""
    r.launch_kernel(lambda: None, (), stream, duration_us=us)


# ------------------------------------------------------------- aclrtCreateEventExWithFlag

@pytest.mark.parametrize("flag", [MC2 | SYNC, EXTERNAL | SYNC, IPC | SYNC, IPC | TIME_LINE])
def test_create_event_ex_solo_flag_combined_is_107000(rt, flag):
    """api_error.cc: ApiErrorDecorator::EventCreateEx: MC2 0x10, EXTERNAL 0x20 and IPC 0x40 must stand alone."""
    assert code(rt.create_event_ex_with_flag, flag) == 107000


def test_create_event_ex_ipc_without_chip_feature_is_207000(fresh):
    """api_error.cc: ApiErrorDecorator::EventCreateEx: IPC 0x40 alone needs RT_FEATURE_IPC_EVENT,
    which config/910_B_93 and 950 set and cloud (910) and dc (310P) do not."""
    r = fresh("310P")
    r.set_device(0)
    assert code(r.create_event_ex_with_flag, IPC) == 207000


def test_create_event_ex_ipc_alone_with_chip_feature_is_0(rt):
    """api_error.cc: ApiErrorDecorator::EventCreateEx, api_impl.cc: ApiImpl::EventCreateEx: an IPC event on 910B."""
    assert code(rt.create_event_ex_with_flag, IPC) == 0


@pytest.mark.parametrize("flag", [0, MC2, EXTERNAL, 0x80, 0x8F])
def test_create_event_ex_flag_outside_mask_is_107000(rt, flag):
    """api_error.cc: ApiErrorDecorator::EventCreateEx: flag & 0x4F == 0 or flag > 0x4F -> 107000; so MC2 and
    EXTERNAL alone are refused here, though aclrtCreateEventWithFlag accepts them."""
    assert code(rt.create_event_ex_with_flag, flag) == 107000


@pytest.mark.parametrize("flag", [SYNC, PROGRESS, DDSYNC, TIME_LINE, 0xF, SYNC | TIME_LINE])
def test_create_event_ex_subset_of_0x0f_is_0(rt, flag):
    """api_error.cc: ApiErrorDecorator::EventCreateEx: any non-empty OR of 0x1, 0x2, 0x4, 0x8."""
    assert code(rt.create_event_ex_with_flag, flag) == 0


def test_create_event_ex_without_context_is_107002(fresh):
    """api_impl.cc: ApiImpl::EventCreateEx: CHECK_CONTEXT_VALID_WITH_RETURN after the flag checks."""
    r = fresh()
    assert code(r.create_event_ex_with_flag, 0x40 | 0x1) == 107000  # flag checks come first
    assert code(r.create_event_ex_with_flag, SYNC) == 107002


# ------------------------------------------------------------- aclrtQueryEventWaitStatus

def test_query_event_wait_status_null_event_is_100000(rt):
    """acl/aclrt_impl/event.cpp: aclrtQueryEventWaitStatusImpl: ACL_REQUIRES_NOT_NULL(event)."""
    assert code(rt.query_event_wait_status, 0) == 100000


def test_query_event_wait_status_bad_handle_is_107017(rt):
    """api_c.cc: rtEventQueryWaitStatus: RT_VALIDATE_AND_UNWRAP_OBJECT on a destroyed event."""
    ev = rt.create_event()
    rt.destroy_event(ev)
    assert code(rt.query_event_wait_status, ev) == 107017


def test_query_event_wait_status_ex_event_is_207000(rt):
    """api_impl_event_common.cc: ApiImplEvent::EventQueryWaitStatus: IsNewMode() (an Ex event) -> not supported."""
    assert code(rt.query_event_wait_status, rt.create_event_ex_with_flag(SYNC)) == 207000


@pytest.mark.parametrize("flag", [EXTERNAL])
def test_query_event_wait_status_external_event_is_207000(rt, flag):
    """api_impl_event_common.cc: ApiImplEvent::EventQueryWaitStatus: flag == EXTERNAL -> not supported."""
    assert code(rt.query_event_wait_status, rt.create_event_with_flag(flag)) == 207000


def test_query_event_wait_status_without_waits_is_complete(rt):
    """event.cc: Event::QueryEventWaitStatus: no wait task on the event -> COMPLETE (0)."""
    assert rt.query_event_wait_status(rt.create_event()) == EVENT_WAIT_STATUS_COMPLETE


def test_query_event_wait_status_pending_wait_is_not_ready(rt):
    """event.cc: Event::QueryEventWaitStatus: a stream wait on the event not yet done -> NOT_READY (1);
    COMPLETE once the waiting stream has passed it."""
    a, b = rt.create_stream(), rt.create_stream()
    ev = rt.create_event()
    slow_task(rt, a)
    rt.record_event(ev, a)
    rt.stream_wait_event(b, ev)
    assert rt.query_event_wait_status(ev) == EVENT_WAIT_STATUS_NOT_READY
    rt.synchronize_stream(b)
    assert rt.query_event_wait_status(ev) == EVENT_WAIT_STATUS_COMPLETE


def test_query_event_wait_status_without_wait_capability_is_complete(rt):
    """event.cc: Event::QueryEventWaitStatus: IsEventWithoutWaitTask (TIME_LINE only) -> COMPLETE."""
    assert rt.query_event_wait_status(rt.create_event_with_flag(TIME_LINE)) == EVENT_WAIT_STATUS_COMPLETE


def test_query_event_wait_status_without_context_is_0(fresh):
    """api_impl_event_common.cc: ApiImplEvent::EventQueryWaitStatus: a null current context is skipped, not
    an error (no 107002)."""
    r = fresh()
    r.set_device(0)
    ev = r.create_event()
    r.reset_device(0)
    assert code(r.query_event_wait_status, ev) == 0


def in_thread(fn) -> int:
    """The code of `fn()` run on a new host thread (no current context there)."""
    import threading
    out = []
    t = threading.Thread(target=lambda: out.append(code(fn)))
    t.start()
    t.join()
    return out[0]


# ------------------------------------------------------------- init / devices

def test_init_twice_is_100002(fresh):
    """acl.cpp: aclInitImpl: a second aclInit while initialised -> ACL_ERROR_REPEAT_INITIALIZE."""
    r = fresh()
    assert code(r.init) == 0 and code(r.init) == 100002


def test_finalize_twice_is_100037(fresh):
    """acl.cpp: aclFinalizeImpl: finalize after finalize -> ACL_ERROR_REPEAT_FINALIZE."""
    r = fresh()
    r.init()
    assert code(r.finalize) == 0 and code(r.finalize) == 100037


def test_set_device_outside_visible_range_is_107001(fresh):
    """api_error.cc: ApiErrorDecorator::SetDevice: ChgUserDevIdToDeviceId fails -> RT_ERROR_DEVICE_ID."""
    r = fresh()
    assert code(r.set_device, r.get_device_count()) == 107001


def test_reset_device_never_set_is_507007(fresh):
    """api_error.cc: ApiErrorDecorator::DeviceReset: impl returns RT_ERROR_CONTEXT_DEL -> 507007."""
    r = fresh()
    assert code(r.reset_device, 0) == 507007
    assert code(r.reset_device_force, 0) == 507007


def test_get_device_without_context_is_107002(fresh):
    """api_impl.cc: ApiImpl::GetDevice: no valid context and no default device -> RT_ERROR_CONTEXT_NULL."""
    assert code(fresh().get_device) == 107002


def test_synchronize_device_without_context_is_107002(fresh):
    """api_impl.cc: ApiImpl::DeviceSynchronize: CHECK_CONTEXT_VALID_WITH_RETURN."""
    assert code(fresh().synchronize_device) == 107002


# ------------------------------------------------------------- contexts

def test_destroy_primary_context_is_107002(rt):
    """api_impl.cc: ApiImpl::ContextDestroy: inCtx->IsPrimary() -> RT_ERROR_CONTEXT_NULL (107002).
    The emulator returned 107000 before."""
    assert code(rt.destroy_context, rt.get_context()) == 107002


def test_destroy_destroyed_context_is_107002(fresh):
    """api_impl.cc: ApiImpl::ContextDestroy: a context no longer tracked -> RT_ERROR_CONTEXT_NULL."""
    r = fresh()
    ctx = r.create_context(0)
    r.destroy_context(ctx)
    assert code(r.destroy_context, ctx) == 107002


def test_set_current_destroyed_context_is_107000(fresh):
    """api_error.cc: ApiErrorDecorator::ContextSetCurrent: CHECK_CONTEXT_VALID_WITH_RETURN(RT_ERROR_INVALID_VALUE)."""
    r = fresh()
    ctx = r.create_context(0)
    r.destroy_context(ctx)
    assert code(r.set_context, ctx) == 107000


def test_get_current_context_without_context_is_107002(fresh):
    """api_impl.cc: ApiImpl::ContextGetCurrent: Runtime::CurrentContext() null -> RT_ERROR_CONTEXT_NULL."""
    assert code(fresh().get_context) == 107002


# ------------------------------------------------------------- streams

def test_synchronize_stream_without_context_is_107002(rt):
    """api_impl.cc: ApiImpl::StreamSynchronize: CHECK_CONTEXT_VALID_WITH_RETURN. The emulator returned 0 for a
    live stream on a thread with no context."""
    s = rt.create_stream()
    assert in_thread(lambda: rt.synchronize_stream(s)) == 107002


def test_stream_query_without_context_is_107002(rt):
    """api_impl.cc: ApiImpl::StreamQuery: CHECK_CONTEXT_VALID_WITH_RETURN (was 0)."""
    s = rt.create_stream()
    assert in_thread(lambda: rt.stream_query(s)) == 107002


def test_destroy_stream_without_context_is_107002(rt):
    """api_impl.cc: ApiImpl::StreamDestroy: CHECK_CONTEXT_VALID_WITH_RETURN (was 0)."""
    s = rt.create_stream()
    assert in_thread(lambda: rt.destroy_stream(s)) == 107002
    assert in_thread(lambda: rt.destroy_stream_force(s)) == 107002
    assert code(rt.destroy_stream, s) == 0  # nothing was destroyed by the failed calls


def test_destroy_stream_of_another_context_is_107003(fresh):
    """api_impl.cc: ApiImpl::StreamDestroy: COND_RETURN_AND_MSG_INVALID_CONTEXT_STREAM -> RT_ERROR_STREAM_CONTEXT."""
    r = fresh()
    r.set_device(0)
    s = r.create_stream()
    r.create_context(0)
    assert code(r.destroy_stream, s) == 107003


def test_synchronize_stream_of_another_context_is_0(fresh):
    """api_impl.cc: ApiImpl::StreamSynchronize switches to the stream's context: no 107003."""
    r = fresh()
    r.set_device(0)
    s = r.create_stream()
    r.create_context(0)
    assert code(r.synchronize_stream, s) == 0


def test_synchronize_stream_with_timeout_below_minus_one_is_107000(rt):
    """stream.cpp: aclrtSynchronizeStreamWithTimeoutImpl: timeout < -1 -> ACL_ERROR_RT_PARAM_INVALID (107000),
    before the handle check. The emulator returned 100000 before."""
    assert code(rt.synchronize_stream_with_timeout, 0xDEAD0, -2) == 107000


def test_synchronize_stream_with_timeout_zero_is_107000(rt):
    """api_error.cc: ApiErrorDecorator::StreamSynchronize: timeout == 0 -> RT_ERROR_INVALID_VALUE (was 0),
    after the handle check (api_c_stream.cc: rtStreamSynchronizeWithTimeout)."""
    assert code(rt.synchronize_stream_with_timeout, 0xDEAD0, 0) == 107017
    assert code(rt.synchronize_stream_with_timeout, rt.create_stream(), 0) == 107000


def test_stream_query_capturing_is_107027(rt):
    """api_error.cc: ApiErrorDecorator::StreamQuery: stm->IsCapturing() -> RT_ERROR_STREAM_CAPTURED (was 0)."""
    s = rt.create_stream()
    rt.ri_capture_begin(s, 0)
    assert code(rt.stream_query, s) == 107027
    rt.ri_capture_end(s)


@pytest.mark.parametrize("flag", [C.ACL_STREAM_PERSISTENT, C.ACL_STREAM_DEVICE_USE_ONLY, C.ACL_STREAM_CPU_SCHEDULE])
def test_stream_query_special_flags_is_complete(rt, flag):
    """api_error.cc: ApiErrorDecorator::StreamQuery: PERSISTENT / CP_PROCESS_USE / AICPU streams -> success,
    so COMPLETE, before the context check."""
    s = rt.create_stream_with_config(0, flag)
    slow_task(rt, s)
    assert rt.stream_query(s) == C.ACL_STREAM_STATUS_COMPLETE
    assert in_thread(lambda: rt.synchronize_stream(s)) == 0


def test_create_stream_with_config_huge_on_310p_is_207000(fresh):
    """api_error.cc: ApiErrorDecorator::CheckStreamFlags: HUGE without RT_FEATURE_STREAM_HUGE_DEPTH (config/dc)."""
    r = fresh("310P")
    r.set_device(0)
    assert code(r.create_stream_with_config, 0, C.ACL_STREAM_HUGE) == 207000
    assert code(r.create_stream_with_config, 0, C.ACL_STREAM_FAST_LAUNCH) == 0


def test_create_stream_with_config_device_use_only_combined_is_107000(rt):
    """api_error.cc: ApiErrorDecorator::CheckStreamFlags: CP_PROCESS_USE only with ACSQ_LOCK, which ACL never sets."""
    assert code(rt.create_stream_with_config, 0, C.ACL_STREAM_DEVICE_USE_ONLY | C.ACL_STREAM_FAST_SYNC) == 107000


def test_create_stream_with_config_unknown_bits_are_dropped(rt):
    """stream.cpp: aclrtCreateStreamWithConfigImpl maps the six ACL flags and drops the rest (was 107000)."""
    assert code(rt.create_stream_with_config, 0, 0x1000) == 0


def test_create_stream_with_config_priority_is_read_as_int32(rt):
    """api_error.cc: ApiErrorDecorator::StreamCreate clamps the int32 priority to [0, 7]: 0xFFFFFFFF is -1 -> 0."""
    s = rt.create_stream_with_config(0xFFFFFFFF, 0)
    assert rt.handles[s].priority == 0
    assert rt.handles[rt.create_stream_with_config(100, 0)].priority == 7


def test_create_stream_without_context_is_107002(fresh):
    """api_impl.cc: ApiImpl::StreamCreate: CHECK_CONTEXT_VALID_WITH_RETURN, after the flag checks."""
    r = fresh()
    assert code(r.create_stream_with_config, 0, 0x21) == 107000
    assert code(r.create_stream) == 107002


# ------------------------------------------------------------- events and capture

def test_record_plain_event_in_capture_is_207000(rt):
    """api_impl.cc: ApiImpl::EventRecord: ToBeCaptured and !IsNewMode -> RT_ERROR_FEATURE_NOT_SUPPORT (was 0)."""
    s = rt.create_stream()
    ev, ev2 = rt.create_event(), rt.create_event_with_flag(SYNC)
    rt.ri_capture_begin(s, 0)
    assert code(rt.record_event, ev, s) == 207000
    assert code(rt.record_event, ev2, s) == 207000
    rt.ri_capture_end(s)


def test_record_external_event_in_capture_is_0(rt):
    """feature/aclgraph/event_capture.cc: Event::ToBeCaptured is false for EXTERNAL: recorded, never capturing."""
    s = rt.create_stream()
    ev = rt.create_event_with_flag(EXTERNAL)
    rt.ri_capture_begin(s, 0)
    assert code(rt.record_event, ev, s) == 0
    rt.ri_capture_end(s)


def test_record_ex_event_without_wait_capability_in_capture_is_0_and_not_captured(rt):
    """api_impl.cc: ApiImpl::EventRecord: IsEventWithoutWaitTask -> RT_ERROR_NONE, nothing captured."""
    s = rt.create_stream()
    ev = rt.create_event_ex_with_flag(TIME_LINE)
    rt.ri_capture_begin(s, 0)
    assert code(rt.record_event, ev, s) == 0
    assert code(rt.query_event_status, ev) == 0
    rt.ri_capture_end(s)


def test_record_ex_event_in_capture_makes_it_captured_until_the_end(rt):
    """api_impl.cc: ApiImpl::EventRecord -> CaptureEventRecord; event_capture.cc: Event::IsCapturing is true
    only while the capture model is capturing (107028 from SynchronizeEvent)."""
    s = rt.create_stream()
    ev = rt.create_event_ex_with_flag(SYNC)
    rt.ri_capture_begin(s, 0)
    rt.record_event(ev, s)
    assert code(rt.synchronize_event, ev) == 107028
    rt.ri_capture_end(s)
    assert code(rt.synchronize_event, ev) == 0


def test_record_ipc_event_on_capturing_stream_is_207000(rt):
    """api_error.cc: ApiErrorDecorator::EventRecord: IPC event and stm->IsCapturing()."""
    s = rt.create_stream()
    ev = rt.create_event_ex_with_flag(IPC)
    rt.ri_capture_begin(s, 0)
    assert code(rt.record_event, ev, s) == 207000
    rt.ri_capture_end(s)


def test_record_event_without_context_is_107002(rt):
    """api_impl.cc: ApiImpl::EventRecord: CHECK_CONTEXT_VALID_WITH_RETURN."""
    ev, s = rt.create_event(), rt.create_stream()
    assert in_thread(lambda: rt.record_event(ev, s)) == 107002


def test_stream_wait_plain_event_in_capture_is_207000(rt):
    """api_impl.cc: ApiImpl::StreamWaitEvent: capturing stream, event not Ex and not EXTERNAL (was 0)."""
    s = rt.create_stream()
    ev = rt.create_event()
    rt.record_event(ev, 0)
    rt.ri_capture_begin(s, 0)
    assert code(rt.stream_wait_event, s, ev) == 207000
    rt.ri_capture_end(s)


def test_stream_wait_ex_event_recorded_outside_capture_is_107024(rt):
    """api_impl.cc: ApiImpl::StreamWaitEvent: Ex event with a record outside the capture ->
    RT_ERROR_STREAM_CAPTURE_ISOLATION (107024)."""
    s = rt.create_stream()
    ev = rt.create_event_ex_with_flag(SYNC)
    rt.record_event(ev, 0)
    rt.ri_capture_begin(s, 0)
    assert code(rt.stream_wait_event, s, ev) == 107024
    rt.ri_capture_end(s)


def test_stream_wait_captured_event_inside_its_capture_is_0(rt):
    """api_impl.cc: ApiImpl::StreamWaitEvent -> CaptureEventWait on the same capture."""
    s = rt.create_stream()
    ev = rt.create_event_ex_with_flag(SYNC)
    rt.ri_capture_begin(s, 0)
    rt.record_event(ev, s)
    assert code(rt.stream_wait_event, s, ev) == 0
    rt.ri_capture_end(s)


def test_stream_wait_captured_event_from_default_stream_is_107031(rt):
    """api_impl.cc: ApiImpl::StreamWaitEvent: capturing event, curStm is the default stream ->
    RT_ERROR_STREAM_CAPTURE_IMPLICIT."""
    s = rt.create_stream()
    ev = rt.create_event_ex_with_flag(SYNC)
    rt.ri_capture_begin(s, 0)
    rt.record_event(ev, s)
    assert code(rt.stream_wait_event, 0, ev) == 107031
    rt.ri_capture_end(s)


def test_stream_wait_event_without_wait_capability_is_207000(rt):
    """api_error.cc: ApiErrorDecorator::StreamWaitEvent: IsEventWithoutWaitTask (TIME_LINE only)."""
    assert code(rt.stream_wait_event, 0, rt.create_event_with_flag(TIME_LINE)) == 207000


def test_stream_wait_external_event_is_0(rt):
    """event.hpp: Event::IsEventWithoutWaitTask counts EXTERNAL as wait-capable (was 207000)."""
    assert code(rt.stream_wait_event, 0, rt.create_event_with_flag(EXTERNAL)) == 0


def test_reset_ex_event_is_207000(rt):
    """api_impl.cc: ApiImpl::EventReset: evt->IsNewMode() -> RT_ERROR_FEATURE_NOT_SUPPORT, always."""
    assert code(rt.reset_event, rt.create_event_ex_with_flag(SYNC), 0) == 207000


def test_reset_event_without_wait_capability_is_207000(rt):
    """api_error.cc: ApiErrorDecorator::EventReset: IsEventWithoutWaitTask (was 0)."""
    assert code(rt.reset_event, rt.create_event_with_flag(TIME_LINE), 0) == 207000


def test_reset_ipc_event_is_207000(rt):
    """api_error.cc: ApiErrorDecorator::EventReset: flag == IPC."""
    assert code(rt.reset_event, rt.create_event_ex_with_flag(IPC), 0) == 207000


def test_reset_plain_event_on_capturing_stream_is_207000(rt):
    """api_impl.cc: ApiImpl::EventReset: not the default stream and Event::ToBeCaptured (was 0)."""
    s = rt.create_stream()
    ev = rt.create_event()
    rt.ri_capture_begin(s, 0)
    assert code(rt.reset_event, ev, s) == 207000
    rt.ri_capture_end(s)


def test_reset_event_without_context_is_107002(rt):
    """api_impl.cc: ApiImpl::EventReset: CHECK_CONTEXT_VALID_WITH_RETURN (was 0 with a stream handle)."""
    ev, s = rt.create_event(), rt.create_stream()
    assert in_thread(lambda: rt.reset_event(ev, s)) == 107002


def test_device_use_only_event_record_wait_reset_is_107000(rt):
    """api_error.cc: ApiErrorDecorator::EventRecord / StreamWaitEvent / EventReset: an MC2 (0x10) event."""
    ev = rt.create_event_with_flag(MC2)
    assert code(rt.record_event, ev, 0) == 107000
    assert code(rt.stream_wait_event, 0, ev) == 107000
    assert code(rt.reset_event, ev, 0) == 107000


def test_synchronize_external_event_is_207000(rt):
    """api_error.cc: ApiErrorDecorator::EventSynchronize: flag == EXTERNAL."""
    assert code(rt.synchronize_event, rt.create_event_with_flag(EXTERNAL)) == 207000


def test_elapsed_time_unrecorded_is_507000(rt):
    """event.cc: Event::ElapsedTime: !HasRecord -> RT_ERROR_EVENT_RECORDER_NULL (507000)."""
    a, b = rt.create_event(), rt.create_event()
    assert code(rt.event_elapsed_time, a, b) == 507000


# ------------------------------------------------------------- launch

def test_launch_kernel_null_function_is_100000(rt):
    """kernel.cpp: aclrtLaunchKernelImpl: ACL_REQUIRES_NOT_NULL(funcHandle)."""
    assert code(rt.launch_kernel, None, (), 0, duration_us=1) == 100000


def test_launch_kernel_invalid_function_is_107017(rt):
    """api_c.cc: rtLaunchKernelByFuncHandleV3: the funcHandle is validated before the stream (was 100000)."""
    assert code(rt.launch_kernel, 42, (), 0xDEAD0, duration_us=1) == 107017


def test_launch_kernel_without_context_is_107002(rt):
    """api_impl.cc: ApiImpl::LaunchKernel: CHECK_CONTEXT_VALID_WITH_RETURN."""
    s = rt.create_stream()
    assert in_thread(lambda: rt.launch_kernel(lambda: None, (), s, duration_us=1)) == 107002


def test_launch_kernel_stream_of_another_context_is_107003(fresh):
    """api_impl.cc: ApiImpl::LaunchKernel: stream not in the current context -> RT_ERROR_STREAM_CONTEXT."""
    r = fresh()
    r.set_device(0)
    s = r.create_stream()
    r.create_context(0)
    assert code(r.launch_kernel, lambda: None, (), s, duration_us=1) == 107003
