"""Conformance of initialisation, devices, contexts, streams, events and kernel launch to the
reference runtime (hicann/runtime 681ef7610). One test per row of
docs/conformance/devices_streams_events.md; each docstring cites the source function that
makes the rule and any disagreement with the spec or the seeds."""
from __future__ import annotations

import pytest

from emu import constants as C
from emu.runtime.core import EVENT_WAIT_STATUS_COMPLETE, EVENT_WAIT_STATUS_NOT_READY
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
    EXTERNAL alone are refused here, though aclrtCreateEventWithFlag accepts them (spec 6.4 agrees)."""
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
