"""Graph capture as it affects copies and memsets (docs/conformance/hostmem_peer_capture.md#capture; enums of
hicann/runtime include/external/acl/acl_rt.h; codes of hicann/runtime include/external/acl/error_codes/rt_error_codes.h;
support: docs/conformance/products.md).

aclmdlRICaptureBegin / GetInfo / End, aclmdlRIExecuteAsync, aclmdlRIDestroy; what a capture does to
the copies and memsets queued on the captured stream, and the "unsafe API" rule for the synchronous
ones while a capture is active.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import emu.acl as acl
from emu import AclError
from helpers import code

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

GLOBAL, THREAD_LOCAL, RELAXED = 0, 1, 2  # aclmdlRICaptureMode
NONE, ACTIVE = 0, 1  # aclmdlRICaptureStatus
H2H, H2D, D2H, D2D = 0, 1, 2, 3
NORMAL_ONLY = 2
NPY_UINT8 = 2
N = 4096
OLD = 0xEE

INVALID_PARAM = 100000
RT_PARAM_INVALID = 107000
INVALID_HANDLE = 107017
STREAM_CAPTURED = 107027
EVENT_CAPTURED = 107028
STREAM_NOT_CAPTURED = 107029
CAPTURE_MODE_NOT_SUPPORT = 107030
WRONG_THREAD = 107038
MODE_BLOCK_ASYNC = 107041
FEATURE_NOT_SUPPORT = 207000


def in_thread(fn):
    """Run fn() on a new host thread; its return value or AclError code."""
    out = {}

    def body():
        try:
            out["value"] = fn()
        except AclError as e:
            out["value"] = e.code

    t = threading.Thread(target=body)
    t.start()
    t.join(30)
    assert not t.is_alive()
    return out["value"]


def pinned(rt, fill=OLD, n=N):
    h = rt.malloc_host(n)
    view = acl.util.ptr_to_numpy(h, (n,), NPY_UINT8)
    view[:] = fill
    return h, view


def device(rt, fill=OLD, n=N):
    d = rt.malloc(n, NORMAL_ONLY)
    rt.memset(d, n, fill, n)
    return d


def peek(rt, ptr, n=N):
    """Device bytes now, without an API call."""
    r, off = rt.space.resolve(ptr, n)
    if r.is_device and not r.materialized:
        return np.zeros(n, dtype=np.uint8)
    return r.view(off, n).copy()


def pattern(seed=0, n=N):
    return ((np.arange(n) * 7 + seed) % 251).astype(np.uint8)


def copy_records(rt):
    return [t for t in rt.machine.records if t.kind in ("copy", "fill") and t.label.endswith("Async")]


# ---------------------------------------------------------------------------
# aclmdlRICaptureBegin
# ---------------------------------------------------------------------------

def test_begin_null_stream_is_invalid_param(rt):
    assert code(rt.ri_capture_begin, 0, GLOBAL) == INVALID_PARAM


@pytest.mark.parametrize("product", ["910", "200I_A2"])
def test_begin_on_product_without_capture_is_feature_not_supported(fresh, product):
    rt = fresh(product)
    rt.set_device(0)
    s = rt.create_stream()
    assert code(rt.ri_capture_begin, s, GLOBAL) == FEATURE_NOT_SUPPORT
    assert code(rt.ri_capture_get_info, s) == FEATURE_NOT_SUPPORT
    assert code(rt.ri_capture_end, s) == FEATURE_NOT_SUPPORT


def test_begin_on_ipv350_is_feature_not_supported(fresh):
    # IPV350 has no aclrtCreateStream (docs/conformance/products.md): a stream handle cannot be made there, so any
    # non-null handle stands in for one
    rt = fresh("IPV350")
    rt.set_device(0)
    assert code(rt.create_stream) == FEATURE_NOT_SUPPORT
    assert code(rt.ri_capture_begin, 0x5A000010, GLOBAL) == FEATURE_NOT_SUPPORT


@pytest.mark.parametrize("product", ["910", "200I_A2"])
def test_begin_null_stream_is_checked_before_the_product_gate(fresh, product):
    rt = fresh(product)
    rt.set_device(0)
    assert code(rt.ri_capture_begin, 0, GLOBAL) == INVALID_PARAM


@pytest.mark.parametrize("mode", [-1, 3, 0x7FFFFFFF])
def test_begin_mode_outside_0_to_2_is_param_invalid(rt, mode):
    s = rt.create_stream()
    assert code(rt.ri_capture_begin, s, mode) == RT_PARAM_INVALID
    assert rt.ri_capture_get_info(s) == (NONE, 0)  # nothing started


@pytest.mark.parametrize("mode", [GLOBAL, THREAD_LOCAL, RELAXED])
def test_begin_already_capturing_is_stream_captured(rt, mode):
    s = rt.create_stream()
    rt.ri_capture_begin(s, mode)
    assert code(rt.ri_capture_begin, s, mode) == STREAM_CAPTURED
    assert code(rt.ri_capture_begin, s, RELAXED) == STREAM_CAPTURED
    rt.ri_capture_end(s)


# ---------------------------------------------------------------------------
# aclmdlRICaptureGetInfo / aclmdlRICaptureEnd
# ---------------------------------------------------------------------------

def test_get_info_non_capturing_stream_is_none(rt, acl):
    assert acl.rt.set_device(0) == 0
    s, ret = acl.rt.create_stream()
    assert ret == 0
    assert acl.mdl.ri_capture_get_info(s) == (NONE, 0, 0)


def test_get_info_capturing_stream_is_active_with_its_model(rt):
    s = rt.create_stream()
    rt.ri_capture_begin(s, GLOBAL)
    status, ri = rt.ri_capture_get_info(s)
    assert status == ACTIVE
    assert ri != 0
    assert rt.ri_capture_end(s) == ri
    assert rt.ri_capture_get_info(s) == (NONE, 0)


def test_get_info_null_stream_is_invalid_param(rt):
    assert code(rt.ri_capture_get_info, 0) == INVALID_PARAM


def test_end_not_capturing_is_stream_not_captured(rt):
    s = rt.create_stream()
    assert code(rt.ri_capture_end, s) == STREAM_NOT_CAPTURED
    rt.ri_capture_begin(s, GLOBAL)
    rt.ri_capture_end(s)
    assert code(rt.ri_capture_end, s) == STREAM_NOT_CAPTURED


@pytest.mark.parametrize("mode", [GLOBAL, THREAD_LOCAL])
def test_end_from_another_thread_is_wrong_thread(rt, mode):
    """10.3: 107038, and the capture is over all the same (Context::StreamEndCapture calls
    CaptureModeExit and ClearCaptureModel before returning it): status NONE, a second End 107029.
    Changed: the capture used to stay active. The other thread sets the device first: without a
    context End is 107002 before the thread check (ApiImpl::StreamEndCapture)."""
    s = rt.create_stream()
    rt.ri_capture_begin(s, mode)
    assert in_thread(lambda: rt.ri_capture_end(s)) == 107002
    assert in_thread(lambda: (rt.set_device(0), rt.ri_capture_end(s))[1]) == WRONG_THREAD
    assert rt.ri_capture_get_info(s) == (NONE, 0)
    assert code(rt.ri_capture_end, s) == STREAM_NOT_CAPTURED


def test_end_from_another_thread_in_relaxed_mode_is_allowed(rt):
    s = rt.create_stream()
    d = device(rt)
    rt.ri_capture_begin(s, RELAXED)
    rt.memset_async(d, N, 0x33, N, s)
    _, ri = rt.ri_capture_get_info(s)
    assert in_thread(lambda: (rt.set_device(0), rt.ri_capture_end(s))[1]) == ri  # a context first (107002)
    assert rt.ri_capture_get_info(s) == (NONE, 0)
    rt.ri_execute_async(ri, s)
    rt.synchronize_stream(s)
    assert (peek(rt, d) == 0x33).all()


# ---------------------------------------------------------------------------
# Copies and memsets on a capturing stream; aclmdlRIExecuteAsync
# ---------------------------------------------------------------------------

def _capture_copies(rt, s, mode=GLOBAL):
    """Capture an H2D, a D2D, a D2H and a memset on s; returns (model, buffers)."""
    h_src, src = pinned(rt, 0)
    h_dst, dst = pinned(rt, OLD)
    d1, d2, d3 = device(rt), device(rt), device(rt)
    src[:] = pattern(1)
    rt.ri_capture_begin(s, mode)
    rt.memcpy_async(d1, N, h_src, N, H2D, s)
    rt.memcpy_async(d2, N, d1, N, D2D, s)
    rt.memcpy_async(h_dst, N, d2, N, D2H, s)
    rt.memset_async(d3, N, 0x42, N, s)
    ri = rt.ri_capture_end(s)
    return ri, dict(h_src=h_src, src=src, h_dst=h_dst, dst=dst, d1=d1, d2=d2, d3=d3)


def test_copies_and_memsets_on_capturing_stream_are_recorded_not_executed(rt):
    s, other = rt.create_stream(), rt.create_stream()
    before = len(copy_records(rt))
    ri, b = _capture_copies(rt, s)
    rt.memset_async(device(rt), N, 1, N, other)
    rt.synchronize_stream(other)
    rt.synchronize_stream(s)  # no longer capturing: nothing queued on it
    assert (b["dst"] == OLD).all()
    for d in (b["d1"], b["d2"], b["d3"]):
        assert (peek(rt, d) == OLD).all()
    assert len(copy_records(rt)) == before + 1  # only the memset on the other stream ran
    assert len(rt.handles[ri].tasks) == 4


def test_execute_async_replays_the_captured_copies(rt):
    s = rt.create_stream()
    ri, b = _capture_copies(rt, s)
    assert rt.ri_execute_async(ri, s) is None
    rt.synchronize_stream(s)
    np.testing.assert_array_equal(b["dst"], pattern(1))
    np.testing.assert_array_equal(peek(rt, b["d2"]), pattern(1))
    assert (peek(rt, b["d3"]) == 0x42).all()


def test_execute_async_replays_on_another_stream_and_the_default_stream(rt):
    s, other = rt.create_stream(), rt.create_stream()
    ri, b = _capture_copies(rt, s)
    rt.ri_execute_async(ri, other)
    rt.synchronize_stream(other)
    np.testing.assert_array_equal(b["dst"], pattern(1))
    b["dst"][:] = 0
    rt.ri_execute_async(ri, 0)
    rt.synchronize_stream(0)
    np.testing.assert_array_equal(b["dst"], pattern(1))


def test_execute_async_is_asynchronous(rt):
    s = rt.create_stream()
    ri, b = _capture_copies(rt, s)
    rt.ri_execute_async(ri, s)
    assert (b["dst"] == OLD).all()  # queued, not yet run
    rt.synchronize_stream(s)
    np.testing.assert_array_equal(b["dst"], pattern(1))


def test_execute_async_replays_as_many_times_as_called(rt):
    s = rt.create_stream()
    ri, _ = _capture_copies(rt, s)
    before = len(copy_records(rt))
    for _ in range(3):
        rt.ri_execute_async(ri, s)
    rt.synchronize_stream(s)
    assert len(copy_records(rt)) == before + 3 * 4


def test_execute_async_reads_the_source_at_replay_time(rt):
    s = rt.create_stream()
    ri, b = _capture_copies(rt, s)
    rt.ri_execute_async(ri, s)
    rt.synchronize_stream(s)
    np.testing.assert_array_equal(b["dst"], pattern(1))
    b["src"][:] = pattern(2)  # change the page-locked source between two replays
    rt.ri_execute_async(ri, s)
    rt.synchronize_stream(s)
    np.testing.assert_array_equal(b["dst"], pattern(2))
    np.testing.assert_array_equal(peek(rt, b["d1"]), pattern(2))


def test_execute_async_on_capturing_stream_is_stream_captured(rt):
    s, t = rt.create_stream(), rt.create_stream()
    ri, _ = _capture_copies(rt, s)
    rt.ri_capture_begin(t, GLOBAL)
    assert code(rt.ri_execute_async, ri, t) == STREAM_CAPTURED
    rt.ri_capture_end(t)
    assert code(rt.ri_execute_async, ri, t) == 0


def test_execute_async_null_model_is_invalid_param(rt):
    s = rt.create_stream()
    assert code(rt.ri_execute_async, 0, s) == INVALID_PARAM


def test_destroy_null_is_invalid_param(rt):
    assert code(rt.ri_destroy, 0) == INVALID_PARAM


def test_destroy_then_execute_is_invalid_handle(rt):
    s = rt.create_stream()
    ri, b = _capture_copies(rt, s)
    assert code(rt.ri_destroy, ri) == 0
    assert code(rt.ri_execute_async, ri, s) == INVALID_HANDLE
    rt.synchronize_stream(s)
    assert (b["dst"] == OLD).all()


def test_capture_through_the_facade(acl):
    assert acl.rt.set_device(0) == 0
    s, _ = acl.rt.create_stream()
    h, _ = acl.rt.malloc_host(N)
    d, _ = acl.rt.malloc(N, NORMAL_ONLY)
    view = acl.util.ptr_to_numpy(h, (N,), NPY_UINT8)
    view[:] = 0
    assert acl.mdl.ri_capture_begin(s, GLOBAL) == 0
    status, ri, ret = acl.mdl.ri_capture_get_info(s)
    assert (status, ret) == (ACTIVE, 0) and ri != 0
    assert acl.rt.memset_async(d, N, 0x17, N, s) == 0
    assert acl.rt.memcpy_async(h, N, d, N, D2H, s) == 0
    assert acl.mdl.ri_capture_end(s) == (ri, 0)
    assert acl.mdl.ri_capture_end(s) == (0, STREAM_NOT_CAPTURED)
    assert acl.mdl.ri_execute_async(ri, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert (view == 0x17).all()
    assert acl.mdl.ri_destroy(ri) == 0
    assert acl.mdl.ri_execute_async(ri, s) == INVALID_HANDLE
    assert acl.mdl.ri_destroy(0) == INVALID_PARAM


# ---------------------------------------------------------------------------
# Pageable memory in a capture
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("mode", [GLOBAL, RELAXED])
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_pageable_memcpy_async_on_capturing_stream_is_param_invalid_and_not_recorded(rt, direction, mode):
    s = rt.create_stream()
    arr = np.full(N, 0x11, dtype=np.uint8)
    host = acl.util.numpy_to_ptr(arr)
    d = device(rt)
    rt.ri_capture_begin(s, mode)  # the pageable rule comes first, whatever the mode
    if direction == "h2d":
        assert code(rt.memcpy_async, d, N, host, N, H2D, s) == RT_PARAM_INVALID
    else:
        assert code(rt.memcpy_async, host, N, d, N, D2H, s) == RT_PARAM_INVALID
    status, ri = rt.ri_capture_get_info(s)
    assert status == ACTIVE  # the capture goes on
    assert rt.ri_capture_end(s) == ri
    assert rt.handles[ri].tasks == []  # nothing recorded
    rt.ri_execute_async(ri, s)
    rt.synchronize_stream(s)
    assert (peek(rt, d) == OLD).all()
    assert (arr == 0x11).all()


# ---------------------------------------------------------------------------
# Unsafe APIs while a capture is active (docs/conformance/hostmem_peer_capture.md#capture; default exchange mode GLOBAL)
# ---------------------------------------------------------------------------

def _unsafe_calls(rt, other):
    """name -> a zero-argument call of each unsafe API, on buffers of their own."""
    h, hv = pinned(rt, 0x21)
    d = device(rt)
    arr = np.full(N, 0x31, dtype=np.uint8)
    page = acl.util.numpy_to_ptr(arr)
    return {
        "memcpy": lambda: rt.memcpy(d, N, h, N, H2D),
        "memset": lambda: rt.memset(d, N, 0x55, N),
        "memcpy2d": lambda: rt.memcpy2d(d, 64, h, 64, 64, N // 64, H2D),
        "pageable_memcpy_async": lambda: rt.memcpy_async(d, N, page, N, H2D, other),
    }, d, arr


GLOBAL_CODES = {"memcpy": CAPTURE_MODE_NOT_SUPPORT, "memset": CAPTURE_MODE_NOT_SUPPORT,
                "memcpy2d": CAPTURE_MODE_NOT_SUPPORT, "pageable_memcpy_async": MODE_BLOCK_ASYNC}


@pytest.mark.parametrize("api", sorted(GLOBAL_CODES))
def test_unsafe_api_during_global_capture_is_refused(rt, api):
    s, other = rt.create_stream(), rt.create_stream()
    calls, d, _ = _unsafe_calls(rt, other)
    rt.ri_capture_begin(s, GLOBAL)
    assert code(calls[api]) == GLOBAL_CODES[api]
    assert (peek(rt, d) == OLD).all()  # nothing happened
    rt.ri_capture_end(s)
    assert code(calls[api]) == 0  # after End it works again


@pytest.mark.parametrize("api", sorted(GLOBAL_CODES))
def test_unsafe_api_during_global_capture_is_refused_on_another_thread(rt, api):
    s, other = rt.create_stream(), rt.create_stream()
    calls, _, _ = _unsafe_calls(rt, other)
    ctx = rt.get_context()
    rt.ri_capture_begin(s, GLOBAL)

    def call():
        rt.set_context(ctx)
        calls[api]()
        return 0

    assert in_thread(call) == GLOBAL_CODES[api]
    rt.ri_capture_end(s)


@pytest.mark.parametrize("api", sorted(GLOBAL_CODES))
def test_unsafe_api_during_relaxed_capture_works(rt, api):
    s, other = rt.create_stream(), rt.create_stream()
    calls, d, _ = _unsafe_calls(rt, other)
    rt.ri_capture_begin(s, RELAXED)
    assert code(calls[api]) == 0
    assert not (peek(rt, d) == OLD).all()  # it ran, synchronously
    assert rt.ri_capture_get_info(s)[0] == ACTIVE
    rt.ri_capture_end(s)


@pytest.mark.parametrize("api", sorted(GLOBAL_CODES))
def test_unsafe_api_during_thread_local_capture_is_refused_on_the_capturing_thread(rt, api):
    s, other = rt.create_stream(), rt.create_stream()
    calls, _, _ = _unsafe_calls(rt, other)
    rt.ri_capture_begin(s, THREAD_LOCAL)
    assert code(calls[api]) == GLOBAL_CODES[api]  # this thread's mode is THREAD_LOCAL
    rt.ri_capture_end(s)


@pytest.mark.parametrize("api", sorted(GLOBAL_CODES))
def test_unsafe_api_during_thread_local_capture_works_on_another_thread(rt, api):
    s, other = rt.create_stream(), rt.create_stream()
    calls, _, _ = _unsafe_calls(rt, other)
    ctx = rt.get_context()
    rt.ri_capture_begin(s, THREAD_LOCAL)

    def call():
        rt.set_context(ctx)
        calls[api]()
        return 0

    assert in_thread(call) == 0  # the context's mode is THREAD_LOCAL, not GLOBAL; that thread has none
    rt.ri_capture_end(s)


def test_unsafe_api_rule_follows_the_strictest_active_capture(rt):
    """Context and thread modes are recomputed on End from the captures still active."""
    s1, s2 = rt.create_stream(), rt.create_stream()
    h, _ = pinned(rt)
    d = device(rt)
    rt.ri_capture_begin(s1, RELAXED)
    rt.ri_capture_begin(s2, GLOBAL)
    assert code(rt.memcpy, d, N, h, N, H2D) == CAPTURE_MODE_NOT_SUPPORT
    rt.ri_capture_end(s2)  # only the RELAXED capture is left
    assert code(rt.memcpy, d, N, h, N, H2D) == 0
    rt.ri_capture_begin(s2, THREAD_LOCAL)
    assert code(rt.memcpy, d, N, h, N, H2D) == CAPTURE_MODE_NOT_SUPPORT
    rt.ri_capture_end(s2)
    rt.ri_capture_end(s1)
    assert code(rt.memcpy, d, N, h, N, H2D) == 0


def test_unsafe_api_in_another_context_is_not_affected(rt):
    s = rt.create_stream()
    rt.ri_capture_begin(s, GLOBAL)

    def on_device1():
        rt.set_device(1)
        h = rt.malloc_host(N)
        d = rt.malloc(N, NORMAL_ONLY)
        rt.memcpy(d, N, h, N, H2D)
        rt.memset(d, N, 0, N)
        return 0

    assert in_thread(on_device1) == 0  # no capture is active in device 1's context
    rt.ri_capture_end(s)


def test_async_copies_on_other_streams_run_during_a_global_capture(rt):
    s, other = rt.create_stream(), rt.create_stream()
    h, view = pinned(rt, 0)
    d = device(rt, 0x66)
    rt.ri_capture_begin(s, GLOBAL)
    rt.memcpy_async(h, N, d, N, D2H, other)  # page-locked: a real async copy, not unsafe
    rt.synchronize_stream(other)
    assert (view == 0x66).all()
    rt.ri_capture_end(s)


# ---------------------------------------------------------------------------
# Synchronizing and destroying what is being captured
# ---------------------------------------------------------------------------

def test_synchronize_capturing_stream_is_stream_captured(rt):
    s = rt.create_stream()
    rt.ri_capture_begin(s, GLOBAL)
    assert code(rt.synchronize_stream, s) == STREAM_CAPTURED
    rt.ri_capture_end(s)
    assert code(rt.synchronize_stream, s) == 0


def test_synchronize_with_timeout_capturing_stream_is_stream_captured(rt):
    s = rt.create_stream()
    rt.ri_capture_begin(s, GLOBAL)
    assert code(rt.synchronize_stream_with_timeout, s, -1) == STREAM_CAPTURED


def test_destroy_capturing_stream_is_stream_captured(rt):
    s = rt.create_stream()
    rt.ri_capture_begin(s, GLOBAL)
    assert code(rt.destroy_stream, s) == STREAM_CAPTURED
    assert rt.ri_capture_get_info(s)[0] == ACTIVE  # the stream lives on
    rt.ri_capture_end(s)
    assert code(rt.destroy_stream, s) == 0


@pytest.mark.parametrize("api", ["synchronize_event", "query_event_status"])
def test_event_recorded_on_capturing_stream_is_event_captured(rt, api):
    s, other = rt.create_stream(), rt.create_stream()
    ev = rt.create_event_ex_with_flag(0x1)  # only Ex events may be captured (ApiImpl::EventRecord)
    rt.ri_capture_begin(s, GLOBAL)
    rt.record_event(ev, s)
    assert code(getattr(rt, api), ev) == EVENT_CAPTURED
    rt.ri_capture_end(s)
    rt.record_event(ev, other)  # recorded again outside a capture: usable again
    assert code(getattr(rt, api), ev) == 0


def test_after_end_everything_works_again(rt):
    s = rt.create_stream()
    h, view = pinned(rt, 0x71)
    d = device(rt)
    rt.ri_capture_begin(s, GLOBAL)
    assert code(rt.memcpy, d, N, h, N, H2D) == CAPTURE_MODE_NOT_SUPPORT
    rt.ri_capture_end(s)
    rt.memcpy(d, N, h, N, H2D)
    assert (peek(rt, d) == 0x71).all()
    rt.memset(d, N, 0x72, N)
    rt.memcpy2d(h, 64, d, 64, 64, N // 64, D2H)
    assert (view == 0x72).all()
    rt.memset_async(d, N, 0x73, N, s)  # no longer recorded: runs on the stream
    rt.memcpy_async(h, N, d, N, D2H, s)
    rt.synchronize_stream(s)
    assert (view == 0x73).all()
    rt.ri_capture_begin(s, GLOBAL)  # the stream can be captured again
    rt.ri_capture_end(s)
    rt.destroy_stream(s)


# ---------------------------------------------------------------------------
# Products (docs/conformance/products.md: Begin/GetInfo/End/ExecuteAsync on 950, A3, A2, 310P)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("product", ["910B", "A3", "950PR", "310P"])
def test_capture_and_replay_supported_on(fresh, product):
    rt = fresh(product)
    rt.set_device(0)
    s = rt.create_stream()
    ri, b = _capture_copies(rt, s)
    assert (b["dst"] == OLD).all()
    rt.ri_execute_async(ri, s)
    rt.synchronize_stream(s)
    np.testing.assert_array_equal(b["dst"], pattern(1))
    assert (peek(rt, b["d3"]) == 0x42).all()
    rt.ri_destroy(ri)


@pytest.mark.parametrize("product", ["910", "200I_A2"])
def test_destroy_exists_where_capture_does_not(fresh, product):
    rt = fresh(product)
    rt.set_device(0)
    assert code(rt.ri_destroy, 0) == INVALID_PARAM
