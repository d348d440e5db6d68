"""Issue 30: four return codes checked against the reference runtime (hicann/runtime 681ef7610)."""
from __future__ import annotations

from emu import constants as C
from helpers import code


def test_subscribe_report_on_stars_chip_without_context_is_107002(rt):
    """src/runtime/api/impl/api_impl.cc ApiImpl::SubscribeReport: ChipIsHaveStars -> ApiImpl::EventCreate
    (RT_EVENT_DDSYNC_NS), whose CHECK_CONTEXT_VALID_WITH_RETURN gives RT_ERROR_CONTEXT_NULL (107002) even for
    an explicit stream, from a thread with no current context."""
    import threading
    s = rt.create_stream()
    out = []
    t = threading.Thread(target=lambda: out.append(code(rt.subscribe_report, 12345, s)))
    t.start(); t.join()
    assert out == [107002]


def test_query_never_recorded_ex_event_is_complete(rt):
    """src/runtime/core/src/event/event.cc Event::QueryEventStatus: no record -> RT_EVENT_RECORDED for a
    new-mode event; api_impl.cc ApiImpl::EventCreateEx makes every non-IPC ExWithFlag event new mode
    (Event(..., isNewMode=true)); event.cpp aclrtQueryEventStatusImpl maps RECORDED to COMPLETE."""
    ev = rt.create_event_ex_with_flag(0x1)
    assert rt.query_event_status(ev) == C.ACL_EVENT_RECORDED_STATUS_COMPLETE
    old = rt.create_event()
    assert rt.query_event_status(old) == C.ACL_EVENT_RECORDED_STATUS_NOT_READY
