"""Issue 30: return codes checked against the reference runtime (hicann/runtime 681ef7610).

Paths are of that repository; the 2D-copy rules are rows 2S6-2S11 and 2A6-2A18 of
docs/conformance/copy2d_batch_descriptors.md.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import emu
from emu import constants as C
from helpers import code, peek


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


H2D, D2H, D2D = 1, 2, 3


def _rc_board():
    """200I/500 A2 in RC mode (no 2D copy there, by the API reference) with a stream, device memory and
    aclrtMallocHost memory (device memory on the board)."""
    rt = emu.configure(product="200I_A2", functional=True)
    rt.set_device(0)
    return rt, rt.create_stream(), rt.malloc(4096, 2), rt.malloc_host(4096)


def test_memcpy2d_size_limits_on_200i_a2_come_before_not_supported():
    """src/runtime/api/impl/api_error.cc ApiErrorDecorator::MemCopy2DSync -> ApiErrorDecorator::MemCopy2DCheckParam:
    height > 5,242,880, then width > 5,000,000 -> 107000 on every chip; nothing on the sync path (api_c.cc
    rtMemcpy2d, api_error.cc, api_impl.cc ApiImpl::MemCopy2DSync) tests the chip or the run mode, so the RC
    refusal of hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md (207000) comes after. The emulator used
    to give 207000 here."""
    rt, _, d, h = _rc_board()
    assert code(rt.memcpy2d, d, 16, h, 16, 8, 5_242_881, H2D) == 107000
    assert code(rt.memcpy2d, d, 5_000_001, h, 5_000_001, 5_000_001, 1, H2D) == 107000
    assert code(rt.memcpy2d, d, 16, h, 16, 8, 2, H2D) == 207000


def test_memcpy2d_async_null_stream_on_200i_a2_comes_before_not_supported():
    """src/runtime/api/impl/api_error.cc ApiErrorDecorator::MemCopy2DAsync: its first step is
    src/runtime/core/src/runtime.cc Runtime::GetCurStream, which keeps a null stream null on a chip without
    RT_FEATURE_DEVICE_CTRL_SQ (src/runtime/config/mini_v3/dev_info_reg.cc does not set it) -> 107000, before the
    RC refusal (207000). docs/conformance/products.md said so; the emulator used to give 207000."""
    rt, s, d, h = _rc_board()
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, 0) == 107000
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, s) == 207000


def test_memcpy2d_async_handle_and_size_limits_on_200i_a2_come_before_not_supported():
    """src/runtime/api/api_c.cc rtMemcpy2dAsync validates the stream handle (RT_VALIDATE_AND_UNWRAP_OBJECT, 107017),
    then src/runtime/api/impl/api_error.cc ApiErrorDecorator::MemCopy2DAsync -> MemCopy2DCheckParam gives 107000 for
    height > 5,242,880 or width > 5,000,000; the RC refusal (207000) comes after both."""
    rt, s, d, h = _rc_board()
    gone = rt.create_stream()
    rt.destroy_stream(gone)
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, gone) == 107017
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 5_242_881, H2D, s) == 107000
    assert code(rt.memcpy2d_async, d, 5_000_001, h, 5_000_001, 5_000_001, 1, H2D, s) == 107000


@pytest.mark.parametrize("api", ["memcpy2d", "memcpy2d_async"])
def test_rc_refusal_comes_after_the_context_and_before_the_location_query(api):
    """The refusal has no check in the source, so it stands where the runtime first asks the driver about the
    copy's memory: src/runtime/api/impl/api_error.cc ApiErrorDecorator::GetLocationType (from MemCopy2DSync, and
    from MemcpyAsyncCheckLocation for MemCopy2DAsync), after its context check (107002) and before
    NpuDriver::PtrGetRealLocation and MemcpyKindAutoCorrect. So valid RC copies are 207000, not the 107000 the
    correction of board memory (all device memory) would give, and unknown memory is 207000, not 100000."""
    rt, s, d, h = _rc_board()
    call = getattr(rt, api)
    tail = (s,) if api == "memcpy2d_async" else ()
    out = []
    t = threading.Thread(target=lambda: out.append(code(call, d, 16, h, 16, 8, 2, H2D, *tail)))
    t.start(); t.join()
    assert out == [107002]
    for dst, src, kind in ((d, h, H2D), (h, d, D2H), (d, 0x1234_0000, H2D)):
        assert code(call, dst, 16, src, 16, 8, 2, kind, *tail) == 207000


@pytest.mark.parametrize("product", ["310P", "910"])
def test_memcpy2d_async_d2d_runs_on_310p_and_910(product):
    """src/runtime/api/impl/api_error.cc ApiErrorDecorator::MemCopy2DAsync lets H2D, D2H and D2D through on every chip;
    src/runtime/api/impl/api_impl.cc ApiImpl::MemCopy2DAsync issues D2D as one Memcpy2DAsync task per row
    (src/runtime/core/src/launch/memcpy_stars.cc, built for every chip by src/runtime/cmake/runtime.cmake), and
    memory_memcpy_async_task.cc ConvertD2DCpyType only asks the driver which channel. The API reference
    (aclrtMemcpy2dAsync in docs/zh/api_ref/11-03_memory_copy_and_set.md) lists D2D for 950, A3 and A2 only and
    says an unsupported kind is ACL_ERROR_INVALID_PARAM (other published versions of the page say
    ACL_ERROR_RT_FEATURE_NOT_SUPPORT); no check of the runtime gives either for D2D, so the runtime is followed and
    the copy runs. The emulator used to give 100000."""
    rt = emu.configure(product=product, functional=True)
    rt.set_device(0)
    s = rt.create_stream()
    a, b = rt.malloc(4096, 2), rt.malloc(4096, 2)
    rt.memset(a, 4096, 7, 4096)
    rt.memset(b, 4096, 0, 4096)
    assert code(rt.memcpy2d_async, b, 32, a, 16, 16, 3, D2D, s) == 0
    rt.synchronize_stream(s)
    got = peek(rt, b, 96)
    for r in range(3):
        assert np.all(got[r * 32:r * 32 + 16] == 7) and np.all(got[r * 32 + 16:r * 32 + 32] == 0)
