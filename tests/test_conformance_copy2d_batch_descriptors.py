"""Conformance: every row of docs/conformance/copy2d_batch_descriptors.md, one test per rule.

Each test names its row (2S = aclrtMemcpy2d, 2A = aclrtMemcpy2dAsync, B = the batch family,
GS / SD / WD = aclrtGetMemcpyDescSize / aclrtSetMemcpyDesc / aclrtMemcpyAsyncWithDesc,
WO = aclrtMemcpyAsyncWithOffset) and cites the source function of the reference runtime
(hicann/runtime 681ef7610) it follows; where the API reference (hicann/runtime docs/zh/api_ref/) says otherwise,
the docstring says so. "UT <name>" is the test <name> of hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import emu
from emu.errors import BatchError
from helpers import code, device, pageable, peek, pinned

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

H2H, H2D, D2H, D2D, DEFAULT, H2B2D, INNER_D2D = range(7)
HOST, DEVICE = 0, 1
GLOBAL, RELAXED = 0, 2
SIZE_MAX = 2 ** 64 - 1
H2D_ATTR = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}}


def in_thread(fn, *args):
    """code(fn, *args) on a new host thread, which has no current context."""
    out = {}
    t = threading.Thread(target=lambda: out.update(code=code(fn, *args)))
    t.start()
    t.join()
    return out["code"]


def on(product: str):
    rt = emu.configure(product=product, functional=True)
    rt.set_device(0)
    return rt


def destroyed_stream(rt) -> int:
    s = rt.create_stream()
    rt.destroy_stream(s)
    return s


# ---------------------------------------------------------------------------
# aclrtMemcpy2d (2S)
# ---------------------------------------------------------------------------

def test_2s1_zero_width_or_height_returns_0_before_any_check(rt):
    """2S1, memory.cpp CheckMemcpy2dParam: width 0 or height 0 -> 0 with null pointers and a bad kind."""
    assert code(rt.memcpy2d, 0, 0, 0, 0, 0, 1, 0x7FFFFFFF) == 0
    assert code(rt.memcpy2d, 0, 0, 0, 0, 1, 0, 0x7FFFFFFF) == 0


@pytest.mark.parametrize("which", ["dst", "src"])
def test_2s2_2s3_null_pointer_is_100000(rt, which):
    """2S2-2S3, memory.cpp CheckMemcpy2dParam: dst null, then src null -> 100000."""
    d = device(rt, 64)
    h, _ = pinned(rt, 64)
    args = (0, 16, h, 16) if which == "dst" else (d, 16, 0, 16)
    assert code(rt.memcpy2d, *args, 8, 2, H2D) == 100000


def test_2s4_width_above_a_pitch_is_100000(rt):
    """2S4, memory.cpp CheckMemcpy2dParam: width > spitch or width > dpitch -> 100000 (UT aclrtMemcpy2dTest)."""
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert code(rt.memcpy2d, d, 16, h, 4, 8, 2, H2D) == 100000
    assert code(rt.memcpy2d, d, 4, h, 16, 8, 2, H2D) == 100000


@pytest.mark.parametrize("kind", [H2H, H2B2D, INNER_D2D, 0x7FFFFFFF])
def test_2s5_kind_outside_h2d_d2h_d2d_default_is_100000(rt, kind):
    """2S5, memory.cpp CheckMemcpy2dParam: the ACL layer takes H2D, D2H, D2D and DEFAULT only."""
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert code(rt.memcpy2d, d, 16, h, 16, 8, 2, kind) == 100000


def test_2s6_product_gate_is_207000_before_the_limits():
    """2S6, the product gate at the runtime's entry (api_c.cc rtMemcpy2d): aclrtMemcpy2d is in IPV350's
    `[api] unsupported` list (IPV350 is "not supported" in hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md)
    -> 207000, before the size limits (2S7); after the ACL checks (2S2)."""
    rt = on("IPV350")
    d, (h, _) = rt.malloc(4096), pageable(4096)
    assert code(rt.memcpy2d, d, 16, h, 16, 8, 5_242_881, H2D) == 207000
    assert code(rt.memcpy2d, 0, 16, h, 16, 8, 2, H2D) == 100000


def test_2s7_2s8_height_and_width_limits_are_107000(rt):
    """2S7-2S8, api_error.cc ApiErrorDecorator::MemCopy2DCheckParam: height > 5,242,880, then width >
    5,000,000 -> 107000, before the D2D refusal."""
    assert code(rt.memcpy2d, 1 << 48, 1, 1 << 48, 1, 1, 5_242_881, D2D) == 107000
    assert code(rt.memcpy2d, 1 << 48, 5_000_001, 1 << 48, 5_000_001, 5_000_001, 1, D2D) == 107000


def test_2s9_d2d_is_207000_before_the_context(rt):
    """2S9, api_error.cc ApiErrorDecorator::MemCopy2DSync: kind D2D -> 207000, even without a context."""
    a, b = device(rt, 64), device(rt, 64)
    assert in_thread(rt.memcpy2d, b, 16, a, 16, 8, 2, D2D) == 207000


def test_2s10_no_context_is_107002_before_the_locations_and_the_correction(rt):
    """2S10, api_error.cc ApiErrorDecorator::MemCopy2DSync -> GetLocationType: no context -> 107002, before
    the kind correction (DEFAULT device->device would be 107000) and the address lookups (an unknown
    address would be 100000). The emulator used to check the correction first."""
    a, b = device(rt, 64), device(rt, 64)
    assert in_thread(rt.memcpy2d, b, 16, a, 16, 8, 2, DEFAULT) == 107002
    assert in_thread(rt.memcpy2d, 0x1234_0000, 16, a, 16, 8, 2, H2D) == 107002


def test_2s11_no_2d_deployment_is_207000_after_the_argument_checks_and_the_context(fresh):
    """2S11, aclrtMemcpy2d in hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md: no 2D copy on 200I/500 A2
    in RC mode. The source has no such check (api_error.cc ApiErrorDecorator::MemCopy2DSync, api_impl.cc
    ApiImpl::MemCopy2DSync: no chip or run-mode test), so it stands where the runtime first asks the driver about
    the memory (GetLocationType): the limits (2S7-2S8, MemCopy2DCheckParam) and the context (2S10) come first;
    the location query (2S12) and the kind correction (2S13: RC host memory is device memory) do not."""
    rt = fresh("200I_A2")
    rt.set_device(0)
    d, h = rt.malloc(4096, 2), rt.malloc_host(4096)
    assert code(rt.memcpy2d, d, 16, h, 16, 8, 5_242_881, H2D) == 107000
    assert code(rt.memcpy2d, d, 5_000_001, h, 5_000_001, 5_000_001, 1, H2D) == 107000
    assert in_thread(rt.memcpy2d, d, 16, h, 16, 8, 2, H2D) == 107002
    assert code(rt.memcpy2d, d, 16, 0x1234_0000, 16, 8, 2, H2D) == 207000
    for dst, src, kind in ((d, h, H2D), (h, d, D2H), (d, h, DEFAULT)):
        assert code(rt.memcpy2d, dst, 16, src, 16, 8, 2, kind) == 207000


def test_2s12_unknown_memory_is_refused_after_the_context(rt):
    """2S12, GetLocationType: the location queries come after the context; memory the emulator was never
    shown -> 100000 (the emulator's rule for unknown addresses)."""
    d = device(rt, 64)
    assert code(rt.memcpy2d, d, 16, 0x1234_0000, 16, 8, 2, H2D) == 100000


@pytest.mark.parametrize("kind", [DEFAULT, H2D, D2H])
def test_2s13_corrected_kind_other_than_h2d_d2h_is_107000(rt, kind):
    """2S13, api_error.cc ApiErrorDecorator::MemCopy2DSync -> MemcpyKindAutoCorrect: device->device is
    forced to D2D, which a sync 2D copy refuses -> 107000; nothing moves."""
    a, b = device(rt, 64, 1), device(rt, 64, 2)
    assert code(rt.memcpy2d, b, 16, a, 16, 8, 2, kind) == 107000
    assert np.all(peek(rt, b, 64) == 2)


def test_2s14_capture_mode_violation_is_107030(rt):
    """2S14, api_impl.cc ApiImpl::MemCopy2DSync: a GLOBAL capture in the context -> 107030."""
    s = rt.create_stream()
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    rt.ri_capture_begin(s, GLOBAL)
    assert code(rt.memcpy2d, d, 16, h, 16, 8, 2, H2D) == 107030


def test_2s15_rows_land_by_pitch(rt):
    """2S15, npu_driver_mem.cc NpuDriver::MemCopy2D: height rows of width bytes, pitch gaps untouched."""
    d = device(rt, 64, 0)
    h, view = pinned(rt, 64)
    view[:] = np.arange(64, dtype=np.uint8)
    rt.memcpy2d(d, 16, h, 8, 4, 3, H2D)
    got = peek(rt, d, 48)
    for r in range(3):
        assert np.array_equal(got[r * 16:r * 16 + 4], view[r * 8:r * 8 + 4])
        assert np.all(got[r * 16 + 4:r * 16 + 16] == 0)


# ---------------------------------------------------------------------------
# aclrtMemcpy2dAsync (2A)
# ---------------------------------------------------------------------------

def test_2a1_to_2a5_acl_checks_come_before_the_stream_handle(rt):
    """2A1-2A5, memory.cpp CheckMemcpy2dParam: the ACL checks before the handle (107017) (UT
    aclrtMemcpy2d_zero_size_return_before_param_check, aclrtMemcpy2dAsyncTest)."""
    s = destroyed_stream(rt)
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert code(rt.memcpy2d_async, 0, 0, 0, 0, 0, 1, 0x7FFFFFFF, s) == 0
    assert code(rt.memcpy2d_async, 0, 1, h, 1, 1, 1, H2D, s) == 100000
    assert code(rt.memcpy2d_async, d, 1, 0, 1, 1, 1, H2D, s) == 100000
    assert code(rt.memcpy2d_async, d, 4, h, 16, 8, 1, H2D, s) == 100000
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 1, H2B2D, s) == 100000


def test_2a6_product_gate_is_207000_before_the_stream_handle():
    """2A6, the product gate at the runtime's entry (api_c.cc rtMemcpy2dAsync, before RT_VALIDATE_AND_UNWRAP_OBJECT):
    aclrtMemcpy2dAsync is in IPV350's `[api] unsupported` list -> 207000, even for a handle that is no stream
    (2A7: 107017 on a product with the API)."""
    rt = on("IPV350")
    d, (h, _) = rt.malloc(4096), pageable(4096)
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, 0x5EED) == 207000
    assert code(on("910B").memcpy2d_async, d, 16, h, 16, 8, 2, H2D, 0x5EED) == 107017


def test_2a7_destroyed_stream_is_107017_before_the_limits(rt):
    """2A7, api_c.cc rtMemcpy2dAsync: the handle is validated before ApiErrorDecorator's checks."""
    s = destroyed_stream(rt)
    assert code(rt.memcpy2d_async, 1 << 48, 1, 1 << 48, 1, 1, 5_242_881, H2D, s) == 107017


@pytest.mark.parametrize("product", ["910", "310P"])
def test_2a8_null_stream_without_a_default_2d_stream_is_107000(product):
    """2A8, api_error.cc ApiErrorDecorator::MemCopy2DAsync -> runtime.cc Runtime::GetCurStream: a null
    stream is the default stream only on chips with RT_FEATURE_DEVICE_CTRL_SQ (config/910_B_93, 950,
    350); on cloud (910) and dc (310P) it stays null -> 107000. An explicit stream works. The seeds say
    a null stream is the default stream everywhere."""
    rt = on(product)
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, 0) == 107000
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, s) == 0


def test_2a9_null_stream_without_context_is_107000(rt):
    """2A9, runtime.cc Runtime::GetCurStream: no context to take the default stream from -> 107000, not
    107002 (spec G5)."""
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert in_thread(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, 0) == 107000


def test_2a10_2a11_limits_are_107000(rt):
    """2A10-2A11, ApiErrorDecorator::MemCopy2DCheckParam: height, then width limits -> 107000."""
    assert code(rt.memcpy2d_async, 1 << 48, 1, 1 << 48, 1, 1, 5_242_881, H2D, 0) == 107000
    assert code(rt.memcpy2d_async, 1 << 48, 5_000_001, 1 << 48, 5_000_001, 5_000_001, 1, H2D, 0) == 107000


def test_2a12_explicit_stream_without_context_is_107002(rt):
    """2A12, ApiErrorDecorator::MemcpyAsyncCheckLocation: no context (no implicit device) -> 107002, before
    the address lookups."""
    s = rt.create_stream()
    d = device(rt, 64)
    assert in_thread(rt.memcpy2d_async, d, 16, 0x1234_0000, 16, 8, 2, H2D, s) == 107002


def test_2a13_no_2d_deployment_is_207000_after_the_stream_the_limits_and_the_context(fresh):
    """2A13, aclrtMemcpy2dAsync in hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md: no 2D copy on 200I/500
    A2 in RC mode, placed as 2S11 (api_error.cc ApiErrorDecorator::MemCopy2DAsync -> MemcpyAsyncCheckLocation ->
    GetLocationType). First: the handle (2A7, api_c.cc rtMemcpy2dAsync), the null stream (2A8, runtime.cc
    Runtime::GetCurStream: mini_v3 lacks RT_FEATURE_DEVICE_CTRL_SQ), the limits (2A10-2A11) and the context (2A12)."""
    rt = fresh("200I_A2")
    rt.set_device(0)
    s = rt.create_stream()
    d, d2, h = rt.malloc(4096, 2), rt.malloc(4096, 2), rt.malloc_host(4096)
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, destroyed_stream(rt)) == 107017
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, 0) == 107000
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 5_242_881, H2D, s) == 107000
    assert code(rt.memcpy2d_async, d, 5_000_001, h, 5_000_001, 5_000_001, 1, H2D, s) == 107000
    assert in_thread(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, s) == 107002
    assert code(rt.memcpy2d_async, d, 16, 0x1234_0000, 16, 8, 2, H2D, s) == 207000
    for dst, src, kind in ((d, h, H2D), (h, d, D2H), (d2, d, D2D)):
        assert code(rt.memcpy2d_async, dst, 16, src, 16, 8, 2, kind, s) == 207000


def test_2a14_corrected_kind_refused_is_107000(rt):
    """2A14, MemcpyAsyncCheckLocation -> MemcpyKindAutoCorrect (EP): pageable->device with D2H is not an
    allowed kind -> 107000."""
    d = device(rt, 64)
    p, _ = pageable(64)
    assert code(rt.memcpy2d_async, d, 16, p, 16, 8, 2, D2H, 0) == 107000


def test_2a15_pageable_on_a_capturing_stream_is_107000(rt):
    """2A15, ApiErrorDecorator::MemCopy2DAsync: pageable memory on a capturing stream -> 107000."""
    s = rt.create_stream()
    rt.ri_capture_begin(s, RELAXED)
    d = device(rt, 64)
    p, _ = pageable(64)
    assert code(rt.memcpy2d_async, d, 16, p, 16, 8, 2, H2D, s) == 107000


def test_2a16_pageable_under_a_capture_mode_violation_is_107041(rt):
    """2A16, ApiErrorDecorator::MemCopy2DAsync: the sync copy's 107030 becomes 107041."""
    captured = rt.create_stream()
    d = device(rt, 64)
    p, _ = pageable(64)
    rt.ri_capture_begin(captured, GLOBAL)
    assert code(rt.memcpy2d_async, d, 16, p, 16, 8, 2, H2D, 0) == 107041


def test_2a17_stream_of_another_context_is_107003(rt):
    """2A17, api_impl.cc ApiImpl::MemCopy2DAsync: the stream must belong to the current context."""
    s = rt.create_stream()
    rt.set_device(1)
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert code(rt.memcpy2d_async, d, 16, h, 16, 8, 2, H2D, s) == 107003


@pytest.mark.parametrize("product", ["910", "310P"])
def test_2a18_d2d_runs_on_310p_and_910(product):
    """2A18, api_error.cc ApiErrorDecorator::MemCopy2DAsync (H2D, D2H and D2D pass) and api_impl.cc
    ApiImpl::MemCopy2DAsync (one task per row): no chip check, so D2D runs on cloud (910) and dc (310P) too. The
    API reference (aclrtMemcpy2dAsync in hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md) lists D2D for
    950, A3 and A2 only, with ACL_ERROR_INVALID_PARAM otherwise; the runtime is followed (the emulator used to
    give 100000 here)."""
    rt = on(product)
    s = rt.create_stream()
    a, b = device(rt, 64, 1), device(rt, 64, 2)
    assert code(rt.memcpy2d_async, b, 16, a, 16, 8, 2, D2D, s) == 0
    rt.synchronize_stream(s)
    got = peek(rt, b, 32)
    assert np.all(got[:8] == 1) and np.all(got[8:16] == 2) and np.all(got[16:24] == 1)


def test_2a18_d2d_is_one_task_per_row(rt):
    """2A18, api_impl.cc ApiImpl::MemCopy2DAsync: D2D is issued row by row. The model keeps one record that
    stands for the runtime's row tasks (its `tasks` column counts them), so a million-row copy costs one."""
    a, b = device(rt, 256, 1), device(rt, 256, 2)
    s = rt.create_stream()
    rt.memcpy2d_async(b, 32, a, 32, 16, 5, D2D, s)
    rt.synchronize_stream(s)
    rec = rt.records()
    rows = rec[rec["api"] == "aclrtMemcpy2dAsync"]
    assert len(rows) == 1 and rows["tasks"][0] == 5 and rows["bytes"][0] == 80
    got = peek(rt, b, 160)
    for r in range(5):
        assert np.all(got[r * 32:r * 32 + 16] == 1) and np.all(got[r * 32 + 16:r * 32 + 32] == 2)


# ---------------------------------------------------------------------------
# Batch copies (B)
# ---------------------------------------------------------------------------

def batch(rt, entries, attrs=(H2D_ATTR,), indexes=(0,), stream=None, v2=False):
    """Run a batch; (failIndex, code)."""
    dsts, maxs, srcs, sizes = (list(c) for c in zip(*entries)) if entries else ([], [], [], [])
    args = (dsts, maxs, srcs, sizes, len(sizes), list(attrs), list(indexes), len(attrs))
    fn = {(None, False): rt.memcpy_batch, (None, True): rt.memcpy_batch_v2}.get((stream, v2))
    try:
        if fn is None:
            fn = rt.memcpy_batch_async_v2 if v2 else rt.memcpy_batch_async
            fn(*args, stream)
        else:
            fn(*args)
        return SIZE_MAX, 0
    except BatchError as e:
        return e.fail_index, e.code


def test_b1_b2_sizes_null_or_count_zero_is_100000(rt):
    """B1-B2, memory.cpp MemcpyBatchImpl: sizes null, numBatches 0 -> 100000."""
    assert code(rt.memcpy_batch, [1], [1], [1], None, 1, [H2D_ATTR], [0], 1) == 100000
    assert code(rt.memcpy_batch, [], [], [], [], 0, [H2D_ATTR], [0], 1) == 100000


def test_b3_all_sizes_zero_is_0_with_nothing_else_checked():
    """B3, memory.cpp MemcpyBatchImpl: all sizes 0 -> 0, failIndex SIZE_MAX, even on a chip without batch
    copies and with a destroyed stream (UT aclrtMemcpyBatch_success_with_all_zero_sizes,
    aclrtMemcpyBatchV2_success)."""
    rt = on("910")
    s = destroyed_stream(rt)
    assert rt.memcpy_batch(None, None, None, [0, 0], 2, None, None, 0) == SIZE_MAX
    assert rt.memcpy_batch_async(None, None, None, [0], 1, None, None, 0, s) == SIZE_MAX


@pytest.mark.parametrize("missing", range(5))
def test_b4_null_array_is_100000(rt, missing):
    """B4, memory.cpp ValidateMemcpyBatchParams: dsts, destMaxs, srcs, attrs, attrsIndexes null -> 100000."""
    args = [[1 << 48], [16], [1], [16], 1, [H2D_ATTR], [0], 1]
    args[[0, 1, 2, 5, 6][missing]] = None
    assert code(rt.memcpy_batch, *args) == 100000


def test_b5_b6_dest_max_below_size_or_rsv_set_is_100000(rt):
    """B5-B6, ValidateMemcpyBatchParams: destMaxs[i] < sizes[i], then a non-zero rsv byte -> 100000."""
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert batch(rt, [(d, 8, h, 16)]) == (None, 100000)  # (the ACL layer writes no failIndex, not even i)
    bad = dict(H2D_ATTR, rsv=bytes([1]) + bytes(15))
    assert batch(rt, [(d, 16, h, 16)], attrs=[bad]) == (None, 100000)


def test_b7_chip_without_batch_copy_is_207000_before_the_stream_handle():
    """B7, api_c_memory.cc rtsMemcpyBatchAsync: the chip check comes before the handle validation: on 910
    a destroyed stream still gives 207000. The emulator used to validate the handle first. It comes before
    ApiErrorDecorator::MemcpyBatchAsync's SetFailIndex(failIdx, SIZE_MAX): failIndex is not written (None)."""
    rt = on("910")
    s = destroyed_stream(rt)
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert batch(rt, [(d, 16, h, 16)], stream=s) == (None, 207000)
    assert batch(rt, [(d, 16, h, 16)]) == (None, 207000)


def test_b8_destroyed_stream_is_107017(rt):
    """B8, rtsMemcpyBatchAsync: a bad handle -> 107017, before the attribute checks (numAttrs 0 -> 107000), and
    before ApiErrorDecorator::MemcpyBatchAsync writes failIndex (None: not written)."""
    s = destroyed_stream(rt)
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert batch(rt, [(d, 16, h, 16)], attrs=[], indexes=[], stream=s) == (None, 107017)


@pytest.mark.parametrize("stream", [None, "s"])
def test_b9_b10_num_attrs_zero_or_above_count_is_107000(rt, stream):
    """B9-B10, api_error.cc ApiErrorDecorator::MemcpyBatch / MemcpyBatchAsync: numAttrs 0, numAttrs >
    numBatches -> 107000."""
    s = rt.create_stream() if stream else None
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert batch(rt, [(d, 16, h, 16)], attrs=[], indexes=[], stream=s) == (SIZE_MAX, 107000)
    assert batch(rt, [(d, 16, h, 16)], attrs=[H2D_ATTR] * 2, indexes=[0, 1], stream=s) == (SIZE_MAX, 107000)


def test_b11_sync_batch_above_4096_entries_is_107000_async_is_not(rt):
    """B11, ApiErrorDecorator::MemcpyBatch: count > 4096 -> 107000 for the sync batch only."""
    d, (h, _) = device(rt, 8192), pinned(rt, 8192)
    entries = [(d + i, 1, h + i, 1) for i in range(4097)]
    assert batch(rt, entries) == (SIZE_MAX, 107000)
    s = rt.create_stream()
    assert batch(rt, entries, stream=s) == (SIZE_MAX, 0)


@pytest.mark.parametrize("indexes", [[1, 2], [0, 0], [0, 2]])
def test_b12_b13_attrs_indexes_must_start_at_0_increase_and_stay_below_count(rt, indexes):
    """B12-B13, ApiErrorDecorator::MemcpyBatch: attrsIndexes[0] != 0; not strictly increasing; >= count."""
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    entries = [(d, 16, h, 16), (d + 16, 16, h + 16, 16)]
    assert batch(rt, entries, attrs=[H2D_ATTR] * 2, indexes=indexes) == (SIZE_MAX, 107000)


def test_b14_async_batch_without_context_is_107002_sync_needs_none(rt):
    """B14, api_impl.cc ApiImpl::MemcpyBatchAsync: no context (no implicit device) -> 107002; ApiImpl::
    MemcpyBatch has no context check, so a sync batch on a thread without one copies."""
    s = rt.create_stream()
    d, (h, view) = device(rt, 64, 0), pinned(rt, 64)
    view[:] = 7
    args = ([d], [16], [h], [16], 1, [H2D_ATTR], [0], 1)
    assert in_thread(rt.memcpy_batch_async, *args, s) == 107002
    assert in_thread(rt.memcpy_batch, *args) == 0
    assert np.all(peek(rt, d, 16) == 7)


def test_b15_async_entry_size_0_or_above_dest_max_is_107000_at_its_index(rt):
    """B15, api_impl.cc ApiImpl::ValidateMemCpyParamsAndAttributes: size 0 (or > destMax) -> 107000 with
    failIndex = the entry; the entries before it are already enqueued (LoopMemcpyAsync)."""
    s = rt.create_stream()
    d, (h, view) = device(rt, 64, 0), pinned(rt, 64)
    view[:] = 9
    assert batch(rt, [(d, 16, h, 16), (d + 16, 16, h + 16, 0)], stream=s) == (1, 107000)
    rt.synchronize_stream(s)
    assert np.all(peek(rt, d, 16) == 9) and np.all(peek(rt, d + 16, 16) == 0)


@pytest.mark.parametrize("null", ["src", "dst"])
def test_b16_async_entry_null_pointer_is_107000_at_its_index(rt, null):
    """B16, ValidateMemCpyParamsAndAttributes: src null, then dst null -> 107000 at the entry."""
    s = rt.create_stream()
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    bad = (d + 16, 16, 0, 16) if null == "src" else (0, 16, h + 16, 16)
    assert batch(rt, [(d, 16, h, 16), bad], stream=s) == (1, 107000)


@pytest.mark.parametrize("stream", [None, "s"])
def test_b17_entry_location_not_matching_its_attr_is_107000(rt, stream):
    """B17, api_impl.cc ApiImpl::CheckMemCpyAttr: the dst, then the src location against the attribute
    (UNREGISTERED counts as HOST, HOST_NUMA in the attribute counts as HOST) -> 107000 at the entry."""
    s = rt.create_stream() if stream else None
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    numa = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": 4}}
    assert batch(rt, [(d, 16, h, 16)], attrs=[numa], stream=s) == (SIZE_MAX, 0)
    wrong = {"dst_loc": {"id": 1, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}}
    assert batch(rt, [(d, 16, h, 16), (d + 16, 16, h + 16, 16)], attrs=[H2D_ATTR, wrong], indexes=[0, 1],
                 stream=s) == (1, 107000)


@pytest.mark.parametrize("stream", [None, "s"])
def test_b18_entry_with_both_ends_on_one_side_is_107000(rt, stream):
    """B18, ApiImpl::MemcpyBatch / ValidateMemCpyParamsAndAttributes: device->device -> 107000."""
    s = rt.create_stream() if stream else None
    a, b = device(rt, 64), device(rt, 64)
    dd = {"dst_loc": {"id": 0, "type": DEVICE}, "src_loc": {"id": 0, "type": DEVICE}}
    assert batch(rt, [(b, 16, a, 16)], attrs=[dd], stream=s) == (0, 107000)


def test_b19_sync_batch_checks_every_entry_before_any_copy(rt):
    """B19, ApiImpl::MemcpyBatch: all entries are checked, then one driver call: nothing is copied."""
    d, (h, view) = device(rt, 64, 0), pinned(rt, 64)
    view[:] = 5
    assert batch(rt, [(d, 16, h, 16), (0x1234_0000, 16, h, 16)]) == (1, 100000)
    assert np.all(peek(rt, d, 16) == 0)


def test_b20_sync_batch_checks_the_attributes_of_a_zero_size_entry(rt):
    """B20, ApiImpl::MemcpyBatch: sizes are not checked per entry, but a size-0 entry still has its
    locations checked against its attribute (B17)."""
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    assert batch(rt, [(d, 16, h, 16), (h + 16, 16, d + 16, 0)]) == (1, 107000)


def test_b21_sync_batch_has_no_capture_mode_check(rt):
    """B21, ApiImpl::MemcpyBatch / NpuDriver::MemcpyBatch: no capture-mode check: a sync batch during a
    GLOBAL capture copies. The emulator used to refuse it with 107030."""
    s = rt.create_stream()
    d, (h, _) = device(rt, 64), pinned(rt, 64)
    rt.ri_capture_begin(s, GLOBAL)
    assert batch(rt, [(d, 16, h, 16)]) == (SIZE_MAX, 0)


def test_b22_async_pageable_entry_under_capture_mode_violation_is_107030(rt):
    """B22, ApiImpl::LoopMemcpyAsync -> MemCopySync: a pageable entry becomes stream sync + sync copy; a
    capture-mode violation is 107030 (not 107041), and there is no capturing-stream 107000."""
    s, captured = rt.create_stream(), rt.create_stream()
    d = device(rt, 64)
    p, _ = pageable(64)
    rt.ri_capture_begin(captured, GLOBAL)
    assert batch(rt, [(d, 16, p, 16)], stream=s) == (SIZE_MAX, 107030)


def test_b23_async_stream_of_another_context_is_107003_at_the_first_pinned_entry(rt):
    """B23, ApiImpl::LoopMemcpyAsync -> ApiImpl::MemcpyAsync: the stream's context is checked when the
    first pinned entry is enqueued: 107003 without a failIndex, after the earlier pageable entry ran."""
    s = rt.create_stream()
    rt.set_device(1)
    d, (h, _) = device(rt, 64, 0), pinned(rt, 64)
    p, arr = pageable(64)
    arr[:] = 3
    attrs = [{"dst_loc": {"id": 1, "type": DEVICE}, "src_loc": {"id": 0, "type": HOST}}]
    assert batch(rt, [(d, 16, p, 16), (d + 16, 16, h, 16)], attrs=attrs, stream=s) == (SIZE_MAX, 107003)
    assert np.all(peek(rt, d, 16) == 3)


def test_b24_ub_host_checks_the_stream_before_the_entries_and_refuses_pageable_capture():
    """B24, api_impl_david.cc ApiImplDavid::BatchMemcpyAsync (950, UB host link): the stream's context
    (107003) before any entry check; with a pageable entry on a capturing stream -> 107000; otherwise
    the entries are all checked before any is enqueued."""
    rt = on("950PR")
    s = rt.create_stream()
    rt.set_device(1)
    assert batch(rt, [(0, 16, 0, 16)], stream=s) == (SIZE_MAX, 107003)
    rt.set_device(0)
    d, (h, view) = device(rt, 64, 0), pinned(rt, 64)
    view[:] = 4
    assert batch(rt, [(d, 16, h, 16), (d + 16, 16, h, 0)], stream=s) == (1, 107000)
    rt.synchronize_stream(s)
    assert np.all(peek(rt, d, 16) == 0)
    p, _ = pageable(64)
    rt.ri_capture_begin(s, RELAXED)
    assert batch(rt, [(d, 16, p, 16)], stream=s) == (SIZE_MAX, 107000)


# ---------------------------------------------------------------------------
# aclrtGetMemcpyDescSize (GS)
# ---------------------------------------------------------------------------

def test_gs1_kind_8_or_more_is_100000(rt):
    """GS1, memory.cpp aclrtGetMemcpyDescSizeImpl: kind >= RT_MEMCPY_KIND_MAX (8) -> 100000."""
    assert code(rt.get_memcpy_desc_size, 8) == 100000


def test_gs2_chip_without_stars_is_207000_before_the_kind():
    """GS2, api_c_memory.cc rtsGetMemcpyDescSize: no STARS (910) -> 207000, whatever the kind."""
    assert code(on("910").get_memcpy_desc_size, 1) == 207000


def test_gs3_kind_other_than_inner_d2d_is_207000(rt):
    """GS3, rtsGetMemcpyDescSize: kind != INNER_DEVICE_TO_DEVICE -> 207000."""
    assert code(rt.get_memcpy_desc_size, D2D) == 207000


@pytest.mark.parametrize("product,size", [("910B", 32), ("950PR", 64)])
def test_gs4_size_is_the_chips_descriptor_size(product, size):
    """GS4, rtsGetMemcpyDescSize: DevProperties.memcpyDescriptorSize (V1 32, V2 64), no context needed."""
    rt = emu.configure(product=product, functional=True)
    assert rt.get_memcpy_desc_size(INNER_D2D) == size


# ---------------------------------------------------------------------------
# aclrtSetMemcpyDesc (SD)
# ---------------------------------------------------------------------------

def desc_args(rt):
    desc = rt.malloc(4096)
    a, b = device(rt, 64), device(rt, 64)
    return desc, a, b


@pytest.mark.parametrize("field", ["desc", "kind", "src", "dst", "count", "config"])
def test_sd1_acl_checks_are_100000(rt, field):
    """SD1, memory.cpp aclrtSetMemcpyDescImpl: desc null, kind >= 8, src null, dst null, count 0, config
    non-null -> 100000 each (UT aclrtSetMemcpyDesc_failed_with_invalid_args)."""
    desc, a, b = desc_args(rt)
    args = {"desc": desc, "kind": INNER_D2D, "src": a, "dst": b, "count": 16, "config": None}
    args[field] = {"kind": 8, "config": object()}.get(field, 0)
    assert code(rt.set_memcpy_desc, **args) == 100000


def test_sd2_chip_without_stars_is_207000():
    """SD2, api_c_memory.cc rtsSetMemcpyDesc: no STARS -> 207000."""
    rt = on("910")
    desc, a, b = desc_args(rt)
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, a, b, 16) == 207000


def test_sd3_kind_other_than_inner_d2d_is_207000(rt):
    """SD3, api_error.cc ApiErrorDecorator::SetMemcpyDesc: kind != 6 -> 207000."""
    desc, a, b = desc_args(rt)
    assert code(rt.set_memcpy_desc, desc, D2D, a, b, 16) == 207000


def test_sd4_count_above_4_gib_is_107000(rt):
    """SD4, ApiErrorDecorator::SetMemcpyDesc: count > MAX_MEMCPY_SIZE_OF_D2D (4 GiB) -> 107000."""
    desc, a, b = desc_args(rt)
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, a, b, (4 << 30) + 1) == 107000


def test_sd5_unaligned_desc_is_107000_before_the_lookups(rt):
    """SD5, ApiErrorDecorator::SetMemcpyDesc: desc not 64-byte aligned -> 107000 before its attribute
    query: an unaligned unknown address gives 107000, not the lookup's 100000. The alignment comes
    before the lookups in the source; the emulator used to look the descriptor up first."""
    _, a, b = desc_args(rt)
    assert code(rt.set_memcpy_desc, 0x1234_0008, INNER_D2D, a, b, 16) == 107000


def test_sd6_lookup_errors_propagate(rt):
    """SD6, ApiErrorDecorator::SetMemcpyDesc: the desc, dst and src attribute queries; unknown memory ->
    the emulator's 100000."""
    desc, a, _ = desc_args(rt)
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, a, 0x1234_0000, 16) == 100000


def test_sd7_desc_not_in_device_memory_is_107000(rt):
    """SD7, ApiErrorDecorator::SetMemcpyDesc: descAttributes.location.type != DEVICE -> 107000."""
    _, a, b = desc_args(rt)
    h = rt.malloc_host(4096)
    assert code(rt.set_memcpy_desc, h, INNER_D2D, a, b, 16) == 107000


def test_sd8_src_dst_not_device_memory_of_one_device_is_107000(rt):
    """SD8, ApiErrorDecorator::SetMemcpyDesc: src and dst both DEVICE with one device id, else 107000."""
    desc, a, _ = desc_args(rt)
    h, _ = pinned(rt, 64)
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, h, a, 16) == 107000
    rt.set_device(1)
    other = device(rt, 64)
    rt.set_device(0)
    assert code(rt.set_memcpy_desc, desc, INNER_D2D, other, a, 16) == 107000


def test_sd9_no_context_is_107002(rt):
    """SD9, api_impl.cc ApiImpl::SetMemcpyDesc (api_impl_david.cc likewise): after the parameter checks,
    no current context -> 107002; the descriptor is not written. The emulator used to return 0."""
    desc, a, b = desc_args(rt)
    rt.memset(desc, 64, 0xAB, 64)
    assert in_thread(rt.set_memcpy_desc, desc, INNER_D2D, a, b, 16) == 107002
    assert np.all(peek(rt, desc, 32) == 0xAB)
    assert in_thread(rt.set_memcpy_desc, desc + 8, INNER_D2D, a, b, 16) == 107000  # parameters first


def test_sd10_record_is_written_into_the_descriptor(rt):
    """SD10, context.cc Context::SetMemcpyDesc: {resv x3, len, src, dst} by a synchronous H2D copy."""
    desc, a, b = desc_args(rt)
    rt.set_memcpy_desc(desc, INNER_D2D, a, b, 16)
    rec = peek(rt, desc, 32)
    assert int(rec[12:16].view(np.uint32)[0]) == 16
    assert int(rec[16:24].view(np.uint64)[0]) == a and int(rec[24:32].view(np.uint64)[0]) == b


# ---------------------------------------------------------------------------
# aclrtMemcpyAsyncWithDesc (WD)
# ---------------------------------------------------------------------------

def test_wd1_acl_checks_are_100000(rt):
    """WD1, memory.cpp aclrtMemcpyAsyncWithDescImpl: desc null, kind >= 8, stream null -> 100000 (UT
    aclrtMemcpyAsyncWithDesc_failed_with_invalid_args)."""
    desc = rt.malloc(4096)
    s = rt.create_stream()
    assert code(rt.memcpy_async_with_desc, 0, INNER_D2D, s) == 100000
    assert code(rt.memcpy_async_with_desc, desc, 8, s) == 100000
    assert code(rt.memcpy_async_with_desc, desc, INNER_D2D, 0) == 100000


def test_wd2_chip_without_stars_is_207000_before_the_handle():
    """WD2, api_c_memory.cc rtsMemcpyAsyncWithDesc: no STARS -> 207000 before the stream handle."""
    rt = on("910")
    assert code(rt.memcpy_async_with_desc, rt.malloc(4096), INNER_D2D, destroyed_stream(rt)) == 207000


def test_wd3_destroyed_stream_is_107017_before_the_kind(rt):
    """WD3, rtsMemcpyAsyncWithDesc: a bad handle -> 107017, before the kind (207000)."""
    assert code(rt.memcpy_async_with_desc, rt.malloc(4096), D2D, destroyed_stream(rt)) == 107017


def test_wd4_kind_other_than_inner_d2d_is_207000(rt):
    """WD4, api_error.cc ApiErrorDecorator::MemcpyAsyncWithDesc: kind != 6 -> 207000."""
    assert code(rt.memcpy_async_with_desc, rt.malloc(4096), D2D, rt.create_stream()) == 207000


def test_wd5_desc_not_in_device_memory_is_107000(rt):
    """WD5, ApiErrorDecorator::MemcpyAsyncWithDesc: the desc lookup (unknown -> 100000), then not DEVICE
    -> 107000."""
    s = rt.create_stream()
    assert code(rt.memcpy_async_with_desc, 0x1234_0000, INNER_D2D, s) == 100000
    assert code(rt.memcpy_async_with_desc, rt.malloc_host(4096), INNER_D2D, s) == 107000


def test_wd6_unaligned_desc_is_107000_after_the_lookup(rt):
    """WD6, ApiErrorDecorator::MemcpyAsyncPtr: not 64-byte aligned -> 107000, after the location: an
    unaligned unknown address gives the lookup's 100000 (the opposite order of aclrtSetMemcpyDesc)."""
    s = rt.create_stream()
    assert code(rt.memcpy_async_with_desc, rt.malloc(4096) + 8, INNER_D2D, s) == 107000
    assert code(rt.memcpy_async_with_desc, 0x1234_0008, INNER_D2D, s) == 100000


def test_wd7_no_context_is_107002(rt):
    """WD7, api_impl.cc ApiImpl::MemcpyAsyncPtr: no current context -> 107002."""
    desc, s = rt.malloc(4096), rt.create_stream()
    assert in_thread(rt.memcpy_async_with_desc, desc, INNER_D2D, s) == 107002


def test_wd8_stream_of_another_context_is_107003(rt):
    """WD8, ApiImpl::MemcpyAsyncPtr: the stream must belong to the current context."""
    desc, s = rt.malloc(4096), rt.create_stream()
    rt.set_device(1)
    assert code(rt.memcpy_async_with_desc, desc, INNER_D2D, s) == 107003


# ---------------------------------------------------------------------------
# aclrtMemcpyAsyncWithOffset (WO)
# ---------------------------------------------------------------------------

def slots(rt):
    """Two 8-byte device slots holding the base addresses of two device buffers."""
    a, b = device(rt, 64, 1), device(rt, 64, 2)
    sd, ss = rt.malloc(64), rt.malloc(64)
    for slot, v in ((sd, b), (ss, a)):
        h, view = pinned(rt, 8)
        view[:] = np.frombuffer(np.uint64(v).tobytes(), dtype=np.uint8)
        rt.memcpy(slot, 8, h, 8, H2D)
    return sd, ss, a, b


def test_wo1_count_0_returns_0_first(rt):
    """WO1, memory.cpp aclrtMemcpyAsyncWithOffsetImpl: count 0 -> 0 (UT aclrtMemcpyAsyncWithOffset)."""
    assert code(rt.memcpy_async_with_offset, 0, 0, 0, 0, 0, 0, 0x7FFF, 0) == 0


def test_wo2_kind_other_than_inner_d2d_is_107000_before_the_chip():
    """WO2, api_c_standard_soc.cc rtMemcpyAsyncWithOffset: kind != 6 -> 107000, even on a chip without the
    feature."""
    rt = on("310P")
    assert code(rt.memcpy_async_with_offset, 0, 8, 0, 0, 8, 0, D2D, 0) == 107000


def test_wo3_chip_without_d2d_by_offset_is_207000():
    """WO3, rtMemcpyD2DAddrAsync: no RT_FEATURE_TASK_MEMCPY_D2D_BY_OFFSET (dc, 310P) -> 207000."""
    rt = on("310P")
    assert code(rt.memcpy_async_with_offset, 0, 8, 0, 0, 8, 0, INNER_D2D, 0) == 207000


def test_wo4_destroyed_stream_is_107017(rt):
    """WO4, rtMemcpyD2DAddrAsync: a bad handle -> 107017, before the null pointers."""
    assert code(rt.memcpy_async_with_offset, 0, 8, 0, 0, 8, 0, INNER_D2D, destroyed_stream(rt)) == 107017


@pytest.mark.parametrize("case,args", [
    ("dst null", (0, 64, 0, "s", 8, 0)),
    ("src null", ("d", 64, 0, 0, 8, 0)),
    ("count above destMax", ("d", 4, 0, "s", 8, 0)),
    ("src offset above 48 bits", ("d", 64, 0, "s", 8, 1 << 48)),
    ("dst offset above 48 bits", ("d", 2 ** 64 - 1, 1 << 48, "s", 8, 0)),
    ("dst offset at destMax", ("d", 64, 64, "s", 8, 0)),
    ("count above destMax minus dst offset", ("d", 64, 60, "s", 8, 0)),
])
def test_wo5_to_wo10_parameter_checks_are_107000(rt, case, args):
    """WO5-WO10, api_error.cc ApiErrorDecorator::MemcpyAsync / MemcpyAsyncCheckAddrCfg: dst null, src null,
    count > destMax, count > 4 GiB, srcOffset then dstOffset > 0xFFFFFFFFFFFF, dstOffset >= destMax,
    count > destMax - dstOffset -> 107000."""
    sd, ss, _, _ = slots(rt)
    args = tuple({"d": sd, "s": ss}.get(x, x) if isinstance(x, str) else x for x in args)
    assert code(rt.memcpy_async_with_offset, *args[:5], args[5], INNER_D2D, 0) == 107000


def test_wo11_no_context_is_107002_before_the_slot_lookups(rt):
    """WO11, ApiErrorDecorator::MemcpyAsync: Runtime::CurrentContext (no implicit device) -> 107002, before
    the locations: unknown slots still give 107002. The emulator used to look the slots up first."""
    s = rt.create_stream()
    assert in_thread(rt.memcpy_async_with_offset, 0x1234_0000, 64, 0, 0x1234_0040, 8, 0, INNER_D2D, s) == 107002


def test_wo12_slot_outside_device_memory_is_107000(rt):
    """WO12, emulator rule: the slots are read by the device, so a slot in host memory -> 107000 (the
    source reads their location but does not refuse it)."""
    sd, _, _, _ = slots(rt)
    h = rt.malloc_host(64)
    assert code(rt.memcpy_async_with_offset, sd, 64, 0, h, 8, 0, INNER_D2D, 0) == 107000


def test_wo13_stream_of_another_context_is_107003(rt):
    """WO13, api_impl.cc ApiImpl::MemcpyAsync: the stream must belong to the current context."""
    sd, ss, _, _ = slots(rt)
    s = rt.create_stream()
    rt.set_device(1)
    assert code(rt.memcpy_async_with_offset, sd, 64, 0, ss, 8, 0, INNER_D2D, s) == 107003


def test_wo14_copy_reads_the_slots_when_it_runs(rt):
    """WO14, aclrtMemcpyAsyncWithOffset in hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md: count bytes
    from *src + srcOffset to *dst + dstOffset."""
    sd, ss, a, b = slots(rt)
    rt.memcpy_async_with_offset(sd, 64, 8, ss, 16, 4, INNER_D2D, 0)
    rt.synchronize_stream(0)
    got = peek(rt, b, 64)
    assert np.all(got[8:24] == 1) and np.all(got[:8] == 2) and np.all(got[24:] == 2)
