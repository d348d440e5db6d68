"""2D copies: aclrtMemcpy2d and aclrtMemcpy2dAsync.

The rules are the rows of docs/conformance/copy2d_batch_descriptors.md: 2S1-2S15 for aclrtMemcpy2d (#aclrtmemcpy2d),
2A1-2A18 for aclrtMemcpy2dAsync (#aclrtmemcpy2dasync); "kind correction" is the table of
ApiErrorDecorator::MemcpyKindAutoCorrect (docs/conformance/memory_copies_fills.md#copies), "capture" the unsafe-API
rule of docs/conformance/hostmem_peer_capture.md#capture, "per row" docs/hardware.md#staged-and-converted-copies, the
products those of docs/conformance/products.md and the RC rule the aclrtMemcpy2d notes of
hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md. The size limits are
hicann/runtime src/runtime/core/inc/common/internal_error_define.hpp:27-28. "UT <name>" is the test <name> of
hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp. Whether an async copy already ran is observed without
any API call in between (API calls advance simulated time): pinned host buffers through their numpy views, device
memory through the emulator's address space.

Out-of-range regions: the reference runtime hands the region to the driver; the emulator checks
that every row lies inside one allocation and rejects the call with ACL_ERROR_INVALID_PARAM
(emu.memory) before any byte moves. The tests hold it to that.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import emu
import emu.acl as acl
from emu import AclError
from helpers import code, pageable, peek, pinned, read_device

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

H2H, H2D, D2H, D2D, DEFAULT, H2B2D, INNER_D2D, INTER_D2D = range(8)
BAD_KIND = 0x7FFFFFFF
# hicann/runtime src/runtime/core/inc/common/internal_error_define.hpp:27-28
MAX_WIDTH, MAX_HEIGHT = 5_000_000, 5_242_880
NORMAL_ONLY = 2
NPY_UINT8 = 2
OLD = 0xEE
LABEL = "aclrtMemcpy2dAsync"


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def in_thread(fn, *args):
    """code(fn, *args) on a new host thread, which has no current context."""
    out = {}

    def run():
        out["code"] = code(fn, *args)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out["code"]


def pattern(n, seed=0):
    """n bytes of a period-251 pattern (no power-of-two period, so row seams would show)."""
    period = ((np.arange(251) * 7 + seed) % 251).astype(np.uint8)
    return np.resize(period, n)


def roundup(n, unit):
    return (n + unit - 1) // unit * unit


def dev_extent(rt, n):
    """Bytes aclrtMalloc(n) really allocates: roundup(n, 32) + the SoC padding
    (docs/conformance/memory_copies_fills.md#allocation)."""
    return roundup(n, 32) + rt.product.malloc_padding


def device(rt, n, fill=OLD, device_id=None):
    """A device buffer whose whole allocation (dev_extent bytes) holds `fill`."""
    d = rt.malloc(n, NORMAL_ONLY)
    ext = dev_extent(rt, n)
    rt.memset(d, ext, fill, ext)
    return d


def write_device(rt, ptr, data):
    src = np.ascontiguousarray(data, dtype=np.uint8)
    rt.memcpy(ptr, src.nbytes, acl.util.numpy_to_ptr(src), src.nbytes, H2D)


def ref_2d(dst, doff, dpitch, src, soff, spitch, width, height):
    """numpy reference of a pitched copy: a copy of `dst` with `height` rows of `width` bytes copied."""
    out = dst.copy()
    for r in range(height):
        out[doff + r * dpitch: doff + r * dpitch + width] = src[soff + r * spitch: soff + r * spitch + width]
    return out


def tasks(rt, label=LABEL):
    return [t for t in rt.machine.records if t.label == label]


@pytest.fixture
def h2d_args(rt):
    """Valid H2D arguments (dst device, src pinned) for checks that must not depend on the pointers."""
    dst = device(rt, 1024)
    src, _ = pinned(rt, 1024, 0x11)
    return dst, src


# ---------------------------------------------------------------------------
# The runtime's own unit tests (UT)
# ---------------------------------------------------------------------------

def test_case20_memcpy2d_width_3_greater_than_pitch_2_is_100000(rt, h2d_args):
    """UT aclrtMemcpy2dTest / 2S1-2S5: aclrtMemcpy2d(width 3 > pitch 2, H2D) -> 100000; nothing is copied."""
    dst, src = h2d_args
    before = peek(rt, dst, 64)
    assert code(rt.memcpy2d, dst, 2, src, 2, 3, 2, H2D) == 100000
    assert np.array_equal(peek(rt, dst, 64), before)


def test_case21_memcpy2d_height_0_is_0_and_copies_nothing(rt, h2d_args):
    """UT aclrtMemcpy2dTest / 2S1-2S5: aclrtMemcpy2d(..., height 0) -> 0, nothing is copied."""
    dst, src = h2d_args
    assert code(rt.memcpy2d, dst, 16, src, 16, 8, 0, H2D) == 0
    assert np.all(peek(rt, dst, 64) == OLD)


def test_case22_memcpy2d_kind_h2h_is_100000(rt):
    """UT aclrtMemcpy2dTest / 2S1-2S5: aclrtMemcpy2d(..., H2H) -> 100000 even between two host buffers."""
    dp, dst = pageable(64, 0)
    sp, _ = pageable(64, 0x5A)
    assert code(rt.memcpy2d, dp, 16, sp, 16, 8, 2, H2H) == 100000
    assert np.all(dst == 0)


def test_case23_memcpy2d_zero_width_with_nulls_and_bad_kind_is_0(fresh):
    """UT aclrtMemcpy2d_zero_size_return_before_param_check / 2S1-2S5: aclrtMemcpy2d(NULL,0,NULL,0,0,1,kind
    0x7FFFFFFF) -> 0: width 0 is checked first, before the null pointers, the pitches, the kind and the context (no
    device is set here)."""
    rt = fresh("910B")
    assert code(rt.memcpy2d, 0, 0, 0, 0, 0, 1, BAD_KIND) == 0


def test_case24_memcpy2d_async_null_dst_is_100000(rt):
    """UT aclrtMemcpy2d_zero_size_return_before_param_check / 2A1-2A5: aclrtMemcpy2dAsync(NULL,1,a,1,1,1,H2D,s) ->
    100000."""
    s = rt.create_stream()
    src, _ = pinned(rt, 64)
    assert code(rt.memcpy2d_async, 0, 1, src, 1, 1, 1, H2D, s) == 100000


def test_case25_memcpy2d_async_host_to_buf_to_device_is_100000(rt, h2d_args):
    """UT aclrtMemcpy2dAsyncTest / 2A1-2A5: aclrtMemcpy2dAsync(..., HOST_TO_BUF_TO_DEVICE) -> 100000 (kind outside
    {H2D, D2H, D2D, DEFAULT}); nothing is enqueued or copied."""
    dst, src = h2d_args
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst, 16, src, 16, 8, 2, H2B2D, s) == 100000
    rt.synchronize_stream(s)
    assert tasks(rt) == []
    assert np.all(peek(rt, dst, 64) == OLD)


def test_case23_24_through_the_facade(acl):
    """UT aclrtMemcpy2d_zero_size_return_before_param_check through acl.rt (pyACL returns the code): 0 and 100000."""
    assert acl.rt.set_device(0) == 0
    assert acl.rt.memcpy2d(0, 0, 0, 0, 0, 1, BAD_KIND) == 0
    h, ret = acl.rt.malloc_host(64)
    s, ret = acl.rt.create_stream()
    assert acl.rt.memcpy2d_async(0, 1, h, 1, 1, 1, H2D, s) == 100000


# ---------------------------------------------------------------------------
# aclrtMemcpy2d: ACL chain (docs/conformance/copy2d_batch_descriptors.md#aclrtmemcpy2d)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("width,height", [(0, 1), (1, 0), (0, 0), (0, MAX_HEIGHT + 1), (MAX_WIDTH + 1, 0)])
def test_memcpy2d_width_or_height_zero_is_0_before_any_check(fresh, width, height):
    """2S1-2S5: width 0 or height 0 -> 0 first: null pointers, zero pitches, a bad kind, sizes over the
    runtime limits and the missing context are never looked at."""
    rt = fresh("910B")
    assert code(rt.memcpy2d, 0, 0, 0, 0, width, height, BAD_KIND) == 0


def test_memcpy2d_null_dst_is_100000(rt, h2d_args):
    """2S1-2S5: dst null -> 100000."""
    _, src = h2d_args
    assert code(rt.memcpy2d, 0, 16, src, 16, 8, 2, H2D) == 100000


def test_memcpy2d_null_src_is_100000(rt, h2d_args):
    """2S1-2S5: src null -> 100000; the destination is untouched."""
    dst, _ = h2d_args
    assert code(rt.memcpy2d, dst, 16, 0, 16, 8, 2, H2D) == 100000
    assert np.all(peek(rt, dst, 64) == OLD)


@pytest.mark.parametrize("dpitch,spitch", [(16, 7), (7, 16), (7, 7)])
def test_memcpy2d_width_greater_than_a_pitch_is_100000(rt, h2d_args, dpitch, spitch):
    """2S1-2S5 (UT aclrtMemcpy2dTest): width > spitch or width > dpitch -> 100000; nothing is copied."""
    dst, src = h2d_args
    assert code(rt.memcpy2d, dst, dpitch, src, spitch, 8, 2, H2D) == 100000
    assert np.all(peek(rt, dst, 64) == OLD)


@pytest.mark.parametrize("kind", [H2H, H2B2D, INNER_D2D, INTER_D2D, 8, BAD_KIND, -1])
def test_memcpy2d_kind_outside_h2d_d2h_d2d_default_is_100000(rt, h2d_args, kind):
    """2S1-2S5 (UT aclrtMemcpy2dTest): kind outside {H2D, D2H, D2D, DEFAULT} (H2H, HOST_TO_BUF_TO_DEVICE, INNER/INTER
    D2D, out of range) -> 100000, on valid H2D pointers; nothing is copied."""
    dst, src = h2d_args
    assert code(rt.memcpy2d, dst, 16, src, 16, 8, 2, kind) == 100000
    assert np.all(peek(rt, dst, 64) == OLD)


@pytest.mark.parametrize("args", [
    (0, 1, 0x1000, 1, 1, MAX_HEIGHT + 1, H2D),  # null dst
    (0x1000, 1, 0x1000, 1, 2, MAX_HEIGHT + 1, H2D),  # width > pitch
    (0x1000, 1, 0x1000, 1, 1, MAX_HEIGHT + 1, H2H),  # bad kind
])
def test_memcpy2d_acl_checks_come_before_the_runtime_size_limits(rt, args):
    """aclrtMemcpy2d / call chain: the ACL chain runs before the runtime chain: with height over 5,242,880 as well, a
    null pointer, width > pitch or a bad kind still gives 100000, not 107000."""
    assert code(rt.memcpy2d, *args) == 100000


# ---------------------------------------------------------------------------
# aclrtMemcpy2d: runtime chain (docs/conformance/copy2d_batch_descriptors.md#aclrtmemcpy2d)
# ---------------------------------------------------------------------------

def test_memcpy2d_height_over_5242880_is_107000(rt, h2d_args):
    """2S7-2S8: height > 5,242,880 -> 107000. The limit is checked before any location lookup
    (2S12), so small buffers that the region would overrun still give 107000."""
    dst, src = h2d_args
    assert code(rt.memcpy2d, dst, 1, src, 1, 1, MAX_HEIGHT + 1, H2D) == 107000
    assert np.all(peek(rt, dst, 64) == OLD)


def test_memcpy2d_width_over_5000000_is_107000(rt, h2d_args):
    """2S7-2S8: width > 5,000,000 -> 107000, before any location lookup."""
    dst, src = h2d_args
    w = MAX_WIDTH + 1
    assert code(rt.memcpy2d, dst, w, src, w, w, 1, H2D) == 107000


def test_memcpy2d_height_exactly_5242880_is_allowed(rt):
    """2S7-2S8 / limits: the limit is height > 5,242,880, so height 5,242,880 (1-byte rows, pitch 2)
    copies; every other byte of the destination keeps its old value."""
    h = MAX_HEIGHT
    n = 2 * h
    src, sview = pinned(rt, n)
    sview[:] = pattern(n)
    dst = device(rt, n, 0)
    assert code(rt.memcpy2d, dst, 2, src, 2, 1, h, H2D) == 0
    got = peek(rt, dst, n)
    assert np.array_equal(got[0::2], sview[0::2])
    assert np.all(got[1::2] == 0)


def test_memcpy2d_width_exactly_5000000_is_allowed(rt):
    """2S7-2S8 / limits: width 5,000,000 (one row) copies."""
    w = MAX_WIDTH
    src, sview = pinned(rt, w)
    sview[:] = pattern(w, 3)
    dst = device(rt, w, 0)
    assert code(rt.memcpy2d, dst, w, src, w, w, 1, H2D) == 0
    assert np.array_equal(peek(rt, dst, w), sview)


def test_memcpy2d_d2d_is_207000(rt):
    """2S9: a synchronous 2D copy with kind D2D -> 207000 (sync 2D is H2D/D2H only); the
    destination device buffer is untouched."""
    a = device(rt, 256, 0x11)
    b = device(rt, 256)
    assert code(rt.memcpy2d, b, 16, a, 16, 8, 4, D2D) == 207000
    assert np.all(peek(rt, b, 256) == OLD)


def test_memcpy2d_d2d_is_207000_before_location_checks(rt):
    """2S9 before 2S13: kind D2D is refused on the kind alone, even for host pointers whose
    corrected kind would be H2D."""
    dst = device(rt, 256)
    src, _ = pinned(rt, 256)
    assert code(rt.memcpy2d, dst, 16, src, 16, 8, 4, D2D) == 207000


def test_memcpy2d_size_limit_comes_before_the_d2d_refusal(rt):
    """2S7 before 2S9: D2D with height over the limit -> 107000, not 207000."""
    a, b = device(rt, 64), device(rt, 64)
    assert code(rt.memcpy2d, b, 1, a, 1, 1, MAX_HEIGHT + 1, D2D) == 107000


def test_memcpy2d_default_between_two_device_buffers_is_107000(rt):
    """2S13 / kind correction: DEFAULT between device and device corrects to D2D, which is not H2D or
    D2H -> 107000; nothing is copied."""
    a = device(rt, 256, 0x11)
    b = device(rt, 256)
    assert code(rt.memcpy2d, b, 16, a, 16, 8, 4, DEFAULT) == 107000
    assert np.all(peek(rt, b, 256) == OLD)


@pytest.mark.parametrize("kind", [H2D, D2H, DEFAULT])
def test_memcpy2d_between_two_page_locked_buffers_is_107000(rt, kind):
    """2S13 / kind correction: HOST -> HOST is forced to H2H, which is not H2D or D2H -> 107000."""
    dst, dview = pinned(rt, 64, 0)
    src, _ = pinned(rt, 64, 0x5A)
    assert code(rt.memcpy2d, dst, 16, src, 16, 8, 2, kind) == 107000
    assert np.all(dview == 0)


def test_memcpy2d_pageable_to_device_with_d2h_is_107000(rt):
    """2S13 / kind correction: UNREGISTERED -> DEVICE allows only H2D or D2D; kind D2H fails the correction
    -> 107000."""
    dst = device(rt, 64)
    sp, _ = pageable(64, 0x5A)
    assert code(rt.memcpy2d, dst, 16, sp, 16, 8, 2, D2H) == 107000
    assert np.all(peek(rt, dst, 64) == OLD)


@pytest.mark.parametrize("kind", [D2H, DEFAULT])
def test_memcpy2d_page_locked_to_device_is_forced_to_h2d(rt, kind):
    """2S13 / kind correction: HOST -> DEVICE is silently forced to H2D, whatever kind (D2H, DEFAULT)."""
    dst = device(rt, 64, 0)
    src, sview = pinned(rt, 64)
    sview[:] = pattern(64)
    assert code(rt.memcpy2d, dst, 16, src, 16, 8, 4, kind) == 0
    assert np.array_equal(peek(rt, dst, 64), ref_2d(np.zeros(64, np.uint8), 0, 16, sview, 0, 16, 8, 4))


@pytest.mark.parametrize("asynchronous", [False, True])
def test_memcpy2d_between_two_pageable_buffers_with_h2d_copies(rt, asynchronous):
    """2S13 / 2A14 / kind correction: UNREGISTERED -> UNREGISTERED allows all four kinds unchanged, so
    kind H2D stays H2D and passes the check; the copy happens (the async one is pageable, so it is a
    synchronous copy too) and returns 0."""
    dp, dst = pageable(64, 0)
    sp, src = pageable(64, 0)
    src[:] = pattern(64)
    if asynchronous:
        ret = code(rt.memcpy2d_async, dp, 16, sp, 16, 8, 4, H2D, 0)
    else:
        ret = code(rt.memcpy2d, dp, 16, sp, 16, 8, 4, H2D)
    assert ret == 0
    assert np.array_equal(dst, ref_2d(np.zeros(64, np.uint8), 0, 16, src, 0, 16, 8, 4))


def test_memcpy2d_between_two_pageable_buffers_with_default_is_107000(rt):
    """2S13 / kind correction: UNREGISTERED -> UNREGISTERED with DEFAULT becomes H2H -> 107000."""
    dp, dst = pageable(64, 0)
    sp, _ = pageable(64, 0x5A)
    assert code(rt.memcpy2d, dp, 16, sp, 16, 8, 2, DEFAULT) == 107000
    assert np.all(dst == 0)


def test_memcpy2d_without_context_is_107002(rt, h2d_args):
    """2S10 / no context: valid H2D arguments on a thread with no aclrtSetDevice (and no default device)
    -> 107002; nothing is copied."""
    dst, src = h2d_args
    assert in_thread(rt.memcpy2d, dst, 16, src, 16, 8, 2, H2D) == 107002
    assert np.all(peek(rt, dst, 64) == OLD)


def test_memcpy2d_context_comes_before_the_kind_correction(rt):
    """api_error.cc ApiErrorDecorator::MemCopy2DSync: the D2D refusal (207000) comes before the context,
    the context (GetLocationType -> 107002) before the locations and the kind correction. Without a
    context, D2D still gives 207000, but DEFAULT device->device gives 107002. This test used to expect
    107000 for the latter (the correction before the context); the source checks the context first."""
    a, b = device(rt, 64), device(rt, 64)
    assert in_thread(rt.memcpy2d, b, 16, a, 16, 8, 2, D2D) == 207000
    assert in_thread(rt.memcpy2d, b, 16, a, 16, 8, 2, DEFAULT) == 107002


@pytest.mark.parametrize("src_kind", ["pinned", "pageable"])
def test_memcpy2d_h2d_bytes_land_by_pitch(rt, src_kind):
    """2S15: H2D copies `height` rows of `width` bytes from src + r*spitch to dst + r*dpitch;
    the pitch gaps and everything past the last row keep their old bytes."""
    w, h, sp_, dp_ = 13, 7, 20, 29
    n_src, n_dst = 256, 256
    if src_kind == "pinned":
        src, sview = pinned(rt, n_src)
    else:
        src, sview = pageable(n_src)
    sview[:] = pattern(n_src, 5)
    dst = device(rt, n_dst)
    soff, doff = 3, 5
    assert code(rt.memcpy2d, dst + doff, dp_, src + soff, sp_, w, h, H2D) == 0
    expected = ref_2d(np.full(n_dst, OLD, np.uint8), doff, dp_, sview, soff, sp_, w, h)
    assert np.array_equal(peek(rt, dst, n_dst), expected)


@pytest.mark.parametrize("dst_kind", ["pinned", "pageable"])
def test_memcpy2d_d2h_bytes_land_by_pitch(rt, dst_kind):
    """2S15: D2H with spitch 31 > dpitch 17 > width 11; the gaps between destination rows keep
    their old bytes."""
    w, h, sp_, dp_ = 11, 9, 31, 17
    dev = device(rt, 512)
    data = pattern(dev_extent(rt, 512), 9)
    write_device(rt, dev, data)
    if dst_kind == "pinned":
        dst, dview = pinned(rt, 256)
    else:
        dst, dview = pageable(256)
    assert code(rt.memcpy2d, dst + 1, dp_, dev + 7, sp_, w, h, D2H) == 0
    expected = ref_2d(np.full(256, OLD, np.uint8), 1, dp_, data, 7, sp_, w, h)
    assert np.array_equal(dview, expected)


def test_memcpy2d_default_infers_the_direction(rt):
    """2S13 / kind correction: DEFAULT becomes H2D for host -> device and D2H for device -> host."""
    src, sview = pinned(rt, 128)
    sview[:] = pattern(128, 1)
    dev = device(rt, 128, 0)
    assert code(rt.memcpy2d, dev, 16, src, 16, 16, 8, DEFAULT) == 0
    dp, back = pageable(128, 0)
    assert code(rt.memcpy2d, dp, 16, dev, 16, 16, 8, DEFAULT) == 0
    assert np.array_equal(back, sview)


@pytest.mark.parametrize("side", ["dst", "src"])
def test_memcpy2d_region_past_the_allocation_is_100000_and_changes_nothing(rt, side):
    """aclrtMemcpy2d with the emulator's bounds rule: a 2D region whose last row runs one byte past its
    allocation -> 100000; no byte of either buffer changes (the first rows are not copied either)."""
    n = 256
    src, sview = pinned(rt, n)  # exactly 256 bytes (aclrtMallocHost sizes)
    sview[:] = pattern(n)
    dst = device(rt, n)
    ext = dev_extent(rt, n)
    w, pitch, h = 16, 32, 4
    last = (h - 1) * pitch + w  # bytes the region spans
    if side == "dst":
        doff, soff = ext - last + 1, 0
    else:
        doff, soff = 0, n - last + 1
    assert code(rt.memcpy2d, dst + doff, pitch, src + soff, pitch, w, h, H2D) == 100000
    assert np.all(peek(rt, dst, ext) == OLD)
    assert np.array_equal(sview, pattern(n))
    # one byte less fits
    if side == "dst":
        doff -= 1
    else:
        soff -= 1
    assert code(rt.memcpy2d, dst + doff, pitch, src + soff, pitch, w, h, H2D) == 0


@pytest.mark.parametrize("product", ["950PR", "A3", "910B", "310P", "910"])
def test_memcpy2d_h2d_d2h_on_every_supporting_ep_product(fresh, product):
    """support / products: all products but IPV350 have aclrtMemcpy2d; on EP products H2D and D2H work."""
    rt = fresh(product)
    rt.set_device(0)
    src, sview = pinned(rt, 128)
    sview[:] = pattern(128, 2)
    dev = device(rt, 128, 0)
    assert code(rt.memcpy2d, dev, 16, src, 16, 10, 8, H2D) == 0
    dst, dview = pinned(rt, 128, 0)
    assert code(rt.memcpy2d, dst, 16, dev, 16, 10, 8, D2H) == 0
    assert np.array_equal(dview, ref_2d(np.zeros(128, np.uint8), 0, 16, sview, 0, 16, 10, 8))


def test_memcpy2d_on_200i_a2_rc_mode_is_207000(fresh):
    """RC mode / 2S11 (aclrtMemcpy2d in hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md): no 2D copy on
    Atlas 200I/500 A2 in RC mode -> 207000, before the location query; nothing is copied."""
    rt = fresh("200I_A2")
    rt.set_device(0)
    dev = device(rt, 128)
    src, _ = pageable(128, 0x5A)
    assert code(rt.memcpy2d, dev, 16, src, 16, 8, 2, H2D) == 207000
    assert np.all(peek(rt, dev, 128) == OLD)


def test_memcpy2d_on_ipv350_is_207000(fresh):
    """products / product gate: aclrtMemcpy2d is unsupported on IPV350 -> 207000."""
    rt = fresh("IPV350")
    rt.set_device(0)
    dev = device(rt, 128)
    src, _ = pageable(128, 0x5A)
    assert code(rt.memcpy2d, dev, 16, src, 16, 8, 2, H2D) == 207000
    assert np.all(peek(rt, dev, 128) == OLD)


# ---------------------------------------------------------------------------
# aclrtMemcpy2dAsync: parameter checks (2A1-2A14, as aclrtMemcpy2d's)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("width,height", [(0, 1), (1, 0), (0, MAX_HEIGHT + 1)])
def test_memcpy2d_async_width_or_height_zero_is_0_before_any_check(rt, width, height):
    """2A1-2A5 = 2S1-2S5: width 0 or height 0 -> 0 first, even with null pointers, a bad kind and a
    destroyed stream (the ACL layer runs before the runtime's handle validation, 1)."""
    s = rt.create_stream()
    rt.destroy_stream(s)
    assert code(rt.memcpy2d_async, 0, 0, 0, 0, width, height, BAD_KIND, s) == 0


def test_memcpy2d_async_null_src_is_100000(rt, h2d_args):
    """2A1-2A5: src null -> 100000."""
    dst, _ = h2d_args
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst, 16, 0, 16, 8, 2, H2D, s) == 100000


@pytest.mark.parametrize("dpitch,spitch", [(16, 7), (7, 16)])
def test_memcpy2d_async_width_greater_than_a_pitch_is_100000(rt, h2d_args, dpitch, spitch):
    """2A1-2A5 (UT aclrtMemcpy2dTest): width > spitch or width > dpitch -> 100000; nothing is enqueued."""
    dst, src = h2d_args
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst, dpitch, src, spitch, 8, 2, H2D, s) == 100000
    rt.synchronize_stream(s)
    assert tasks(rt) == []
    assert np.all(peek(rt, dst, 64) == OLD)


@pytest.mark.parametrize("kind", [H2H, H2B2D, INNER_D2D, INTER_D2D, BAD_KIND])
def test_memcpy2d_async_kind_outside_h2d_d2h_d2d_default_is_100000(rt, h2d_args, kind):
    """2A1-2A5 (UT aclrtMemcpy2dTest, aclrtMemcpy2dAsyncTest): H2H, HOST_TO_BUF_TO_DEVICE, INNER/INTER D2D and
    out-of-range kinds -> 100000."""
    dst, src = h2d_args
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst, 16, src, 16, 8, 2, kind, s) == 100000


def test_memcpy2d_async_height_over_5242880_is_107000(rt, h2d_args):
    """2A10-2A11 (as 2S7-2S8): height > 5,242,880 -> 107000, before any location lookup."""
    dst, src = h2d_args
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst, 1, src, 1, 1, MAX_HEIGHT + 1, H2D, s) == 107000


def test_memcpy2d_async_width_over_5000000_is_107000(rt, h2d_args):
    """2A10-2A11 (as 2S7-2S8): width > 5,000,000 -> 107000."""
    dst, src = h2d_args
    s = rt.create_stream()
    w = MAX_WIDTH + 1
    assert code(rt.memcpy2d_async, dst, w, src, w, w, 1, H2D, s) == 107000


def test_memcpy2d_async_destroyed_stream_is_107017(rt, h2d_args):
    """bad handle / aclrtMemcpy2dAsync: a destroyed stream handle -> 107017; nothing is copied."""
    dst, src = h2d_args
    s = rt.create_stream()
    rt.destroy_stream(s)
    assert code(rt.memcpy2d_async, dst, 16, src, 16, 8, 2, H2D, s) == 107017
    assert np.all(peek(rt, dst, 64) == OLD)


def test_memcpy2d_async_unknown_stream_handle_is_107017(rt, h2d_args):
    """bad handle: a value that was never a stream handle -> 107017."""
    dst, src = h2d_args
    assert code(rt.memcpy2d_async, dst, 16, src, 16, 8, 2, H2D, 0x1234) == 107017


def test_memcpy2d_async_destroyed_stream_is_reported_before_the_size_limits(rt, h2d_args):
    """call chain (C entry handle validation -> ApiErrorDecorator parameter checks), bad handle, 2A7-2A11:
    a destroyed stream together with height > 5,242,880 -> 107017, not the parameter check's 107000."""
    dst, src = h2d_args
    s = rt.create_stream()
    rt.destroy_stream(s)
    assert code(rt.memcpy2d_async, dst, 1, src, 1, 1, MAX_HEIGHT + 1, H2D, s) == 107017


def test_memcpy2d_async_without_context_is_107002(rt, h2d_args):
    """aclrtMemcpy2dAsync / no context: on a thread without a context, with an explicit stream -> 107002
    (MemcpyAsyncCheckLocation, no implicit default device); with a null stream -> 107000 (runtime.cc
    Runtime::GetCurStream finds no context to take the default stream from). This test used to expect 107002 for the
    null stream too; the source resolves a null stream first. Nothing moves."""
    dst, src = h2d_args
    s = rt.create_stream()
    assert in_thread(rt.memcpy2d_async, dst, 16, src, 16, 8, 2, H2D, s) == 107002
    assert in_thread(rt.memcpy2d_async, dst, 16, src, 16, 8, 2, H2D, 0) == 107000
    assert np.all(peek(rt, dst, 64) == OLD)


def test_memcpy2d_async_stream_of_another_device_is_107003(rt):
    """stream context: a stream created on device 0, used after switching the thread to device 1 -> 107003."""
    s = rt.create_stream()
    rt.set_device(1)
    dst = device(rt, 64)
    src, _ = pinned(rt, 64)
    assert code(rt.memcpy2d_async, dst, 16, src, 16, 8, 2, H2D, s) == 107003


@pytest.mark.parametrize("kind", [H2D, DEFAULT])
def test_memcpy2d_async_between_two_page_locked_buffers_is_107000(rt, kind):
    """2A14 / kind correction: HOST -> HOST is forced to H2H, not in {H2D, D2H, D2D} -> 107000."""
    dst, dview = pinned(rt, 64, 0)
    src, _ = pinned(rt, 64, 0x5A)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst, 16, src, 16, 8, 2, kind, s) == 107000
    rt.synchronize_stream(s)
    assert np.all(dview == 0)


@pytest.mark.parametrize("side", ["dst", "src"])
def test_memcpy2d_async_region_past_the_allocation_is_100000(rt, side):
    """aclrtMemcpy2dAsync with the emulator's bounds rule: the last row runs past the allocation -> 100000; nothing is
    enqueued and no byte changes."""
    n = 256
    src, sview = pinned(rt, n)
    sview[:] = pattern(n)
    dst = device(rt, n)
    ext = dev_extent(rt, n)
    w, pitch, h = 16, 32, 4
    last = (h - 1) * pitch + w
    doff, soff = (ext - last + 1, 0) if side == "dst" else (0, n - last + 1)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst + doff, pitch, src + soff, pitch, w, h, H2D, s) == 100000
    rt.synchronize_stream(s)
    assert tasks(rt) == []
    assert np.all(peek(rt, dst, ext) == OLD)


# ---------------------------------------------------------------------------
# aclrtMemcpy2dAsync: D2D per row, products (2A18)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("product", ["910B", "A3", "950PR"])
def test_memcpy2d_async_d2d_is_one_task_per_row(fresh, product):
    """2A18 / per row (docs/hardware.md#staged-and-converted-copies): on A2, A3 and 950 an async 2D D2D copy is issued
    as one task per row (width bytes each), and the bytes land by pitch. The model runs the rows as one task split into
    row-sized DMA tasks: one record standing for `h` tasks of `w` bytes."""
    rt = fresh(product)
    rt.set_device(0)
    w, h, sp_, dp_ = 24, 9, 40, 33
    a = device(rt, 512)
    data = pattern(dev_extent(rt, 512), 4)
    write_device(rt, a, data)
    b = device(rt, 512)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, b + 2, dp_, a + 5, sp_, w, h, D2D, s) == 0
    rt.synchronize_stream(s)
    (copy,) = tasks(rt)
    assert copy.chunks == h and copy.chunk_sizes() == [w] * h
    ext = dev_extent(rt, 512)
    expected = ref_2d(np.full(ext, OLD, np.uint8), 2, dp_, data, 5, sp_, w, h)
    assert np.array_equal(peek(rt, b, ext), expected)


def test_memcpy2d_async_default_between_devices_is_d2d_per_row(rt):
    """2A14 / kind correction: DEFAULT device -> device corrects to D2D, allowed for 2D async on A2: one task per
    row (one model task standing for 5 row tasks)."""
    a = device(rt, 256, 0x11)
    b = device(rt, 256, 0)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, b, 32, a, 32, 16, 5, DEFAULT, s) == 0
    rt.synchronize_stream(s)
    assert [t.chunks for t in tasks(rt)] == [5]
    assert np.array_equal(peek(rt, b, 160), ref_2d(np.zeros(160, np.uint8), 0, 32,
                                                   np.full(160, 0x11, np.uint8), 0, 32, 16, 5))


@pytest.mark.parametrize("product", ["310P", "910"])
@pytest.mark.parametrize("kind", [D2D, DEFAULT])
def test_memcpy2d_async_d2d_on_310p_and_910_runs_per_row(fresh, product, kind):
    """2A18: 2D async DEVICE_TO_DEVICE (asked, or DEFAULT corrected to it) runs on 310P and 910 as on A2, one task
    per row: the source has no chip check (api_error.cc ApiErrorDecorator::MemCopy2DAsync, api_impl.cc
    ApiImpl::MemCopy2DAsync). The API reference (aclrtMemcpy2dAsync in hicann/runtime
    docs/zh/api_ref/11-03_memory_copy_and_set.md) lists D2D for 950/A3/A2 only (ACL_ERROR_INVALID_PARAM elsewhere);
    the runtime is followed."""
    rt = fresh(product)
    rt.set_device(0)
    a = device(rt, 256, 0x11)
    b = device(rt, 256)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, b, 16, a, 16, 8, 4, kind, s) == 0
    rt.synchronize_stream(s)
    assert [t.chunks for t in tasks(rt)] == [4]
    assert np.array_equal(peek(rt, b, 256), ref_2d(np.full(256, OLD, np.uint8), 0, 16,
                                                   np.full(256, 0x11, np.uint8), 0, 16, 8, 4))


@pytest.mark.parametrize("product", ["310P", "910"])
def test_memcpy2d_async_h2d_d2h_work_on_310p_and_910(fresh, product):
    """support / products: H2D and D2H 2D async copies are available on 310P and 910."""
    rt = fresh(product)
    rt.set_device(0)
    src, sview = pinned(rt, 128)
    sview[:] = pattern(128, 8)
    dev = device(rt, 128, 0)
    dst, dview = pinned(rt, 128, 0)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dev, 16, src, 16, 12, 8, H2D, s) == 0
    assert code(rt.memcpy2d_async, dst, 16, dev, 16, 12, 8, D2H, s) == 0
    rt.synchronize_stream(s)
    assert np.array_equal(dview, ref_2d(np.zeros(128, np.uint8), 0, 16, sview, 0, 16, 12, 8))


def test_memcpy2d_async_on_200i_a2_rc_mode_is_207000(fresh):
    """RC mode / 2A13 (aclrtMemcpy2dAsync in hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md): 200I/500 A2
    in RC mode refuses 2D copies on an explicit stream -> 207000; a null stream is refused first (2A8, 107000: the
    chip has no default stream for 2D copies). Nothing is copied."""
    rt = fresh("200I_A2")
    rt.set_device(0)
    a = device(rt, 128, 0x11)
    b = device(rt, 128)
    src, _ = pageable(128, 0x5A)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, b, 16, src, 16, 8, 2, H2D, s) == 207000
    assert code(rt.memcpy2d_async, b, 16, a, 16, 8, 2, D2D, s) == 207000
    assert code(rt.memcpy2d_async, b, 16, a, 16, 8, 2, D2D, 0) == 107000
    rt.synchronize_stream(s)
    assert tasks(rt) == []
    assert np.all(peek(rt, b, 128) == OLD)


def test_memcpy2d_async_on_ipv350_is_207000(fresh):
    """products / product gate: aclrtMemcpy2dAsync is unsupported on IPV350 -> 207000."""
    rt = fresh("IPV350")
    rt.set_device(0)
    dev = device(rt, 128)
    src, _ = pageable(128, 0x5A)
    assert code(rt.memcpy2d_async, dev, 16, src, 16, 8, 2, H2D, 0) == 207000
    assert np.all(peek(rt, dev, 128) == OLD)


# ---------------------------------------------------------------------------
# aclrtMemcpy2dAsync: pinned vs pageable host memory (2A15-2A18)
# ---------------------------------------------------------------------------

def test_memcpy2d_async_h2d_page_locked_is_asynchronous(rt):
    """2A18 : with page-locked memory the call only enqueues: the device keeps its old
    bytes until the stream is synchronized, then holds the pitched rows; the tasks cover width*height
    bytes."""
    w, h = 20, 6
    src, sview = pinned(rt, 256)
    sview[:] = pattern(256, 6)
    dst = device(rt, 256)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst, 40, src, 24, w, h, H2D, s) == 0
    assert np.all(peek(rt, dst, 256) == OLD)
    rt.synchronize_stream(s)
    expected = ref_2d(np.full(256, OLD, np.uint8), 0, 40, sview, 0, 24, w, h)
    assert np.array_equal(peek(rt, dst, 256), expected)
    assert sum(t.nbytes for t in tasks(rt)) == w * h


def test_memcpy2d_async_d2h_page_locked_is_asynchronous(rt):
    """2A18 : D2H into page-locked memory: old bytes before synchronize, rows after."""
    w, h = 9, 5
    dev = device(rt, 256)
    data = pattern(dev_extent(rt, 256), 2)
    write_device(rt, dev, data)
    dst, dview = pinned(rt, 128, 0)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst, 12, dev, 30, w, h, D2H, s) == 0
    assert np.all(dview == 0)
    rt.synchronize_stream(s)
    assert np.array_equal(dview, ref_2d(np.zeros(128, np.uint8), 0, 12, data, 0, 30, w, h))


def test_memcpy2d_async_h2d_pageable_is_done_on_return(rt):
    """2A15-2A16 : pageable host memory turns the call synchronous: the bytes are on the
    device when it returns, before any synchronize."""
    w, h = 20, 6
    sp, src = pageable(256)
    src[:] = pattern(256, 7)
    dst = device(rt, 256)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dst, 40, sp, 24, w, h, H2D, s) == 0
    expected = ref_2d(np.full(256, OLD, np.uint8), 0, 40, src, 0, 24, w, h)
    assert np.array_equal(peek(rt, dst, 256), expected)


def test_memcpy2d_async_d2h_pageable_is_done_on_return(rt):
    """2A15-2A16: D2H into pageable memory is complete when the call returns."""
    w, h = 9, 5
    dev = device(rt, 256)
    data = pattern(dev_extent(rt, 256), 3)
    write_device(rt, dev, data)
    dp, dst = pageable(128, 0)
    s = rt.create_stream()
    assert code(rt.memcpy2d_async, dp, 12, dev, 30, w, h, D2H, s) == 0
    assert np.array_equal(dst, ref_2d(np.zeros(128, np.uint8), 0, 12, data, 0, 30, w, h))


def test_memcpy2d_async_pageable_synchronizes_the_stream_first(rt):
    """2A15-2A16: a pageable 2D copy first synchronizes its stream: a page-locked copy queued before it
    on the same stream is complete when the pageable call returns."""
    s = rt.create_stream()
    src, sview = pinned(rt, 256)
    sview[:] = 0x42
    first = device(rt, 256)
    assert code(rt.memcpy2d_async, first, 16, src, 16, 16, 16, H2D, s) == 0
    assert np.all(peek(rt, first, 256) == OLD)
    sp, _ = pageable(64, 0x5A)
    second = device(rt, 64)
    assert code(rt.memcpy2d_async, second, 16, sp, 16, 8, 2, H2D, s) == 0
    assert np.all(peek(rt, first, 256) == 0x42)


def test_memcpy2d_async_pageable_on_capturing_stream_is_107000(rt):
    """2A15-2A16 / capture: pageable memory on a capturing stream -> 107000; nothing copied."""
    s = rt.create_stream()
    rt.ri_capture_begin(s, 2)  # RELAXED
    sp, _ = pageable(64, 0x5A)
    dst = device(rt, 64)
    assert code(rt.memcpy2d_async, dst, 16, sp, 16, 8, 2, H2D, s) == 107000
    rt.ri_capture_end(s)
    assert np.all(peek(rt, dst, 64) == OLD)


def test_memcpy2d_during_a_global_capture_is_107030(rt, h2d_args):
    """2S14 / capture: aclrtMemcpy2d is an unsafe API; while a GLOBAL-mode capture is active in the
    context (default exchange mode GLOBAL) it is rejected with 107030; nothing is copied."""
    dst, src = h2d_args
    s = rt.create_stream()
    rt.ri_capture_begin(s, 0)  # GLOBAL
    assert code(rt.memcpy2d, dst, 16, src, 16, 8, 2, H2D) == 107030
    rt.ri_capture_end(s)
    assert np.all(peek(rt, dst, 64) == OLD)
    assert code(rt.memcpy2d, dst, 16, src, 16, 8, 2, H2D) == 0


def test_memcpy2d_async_pageable_during_a_global_capture_is_107041(rt):
    """2A15-2A16 / capture: a pageable 2D async copy on a stream that is not captured becomes a sync copy,
    which a GLOBAL capture elsewhere in the context rejects with 107041; nothing is copied."""
    captured, other = rt.create_stream(), rt.create_stream()
    sp, _ = pageable(64, 0x5A)
    dst = device(rt, 64)
    rt.ri_capture_begin(captured, 0)  # GLOBAL
    assert code(rt.memcpy2d_async, dst, 16, sp, 16, 8, 2, H2D, other) == 107041
    rt.ri_capture_end(captured)
    assert np.all(peek(rt, dst, 64) == OLD)


def test_memcpy2d_async_null_stream_is_the_default_stream(rt):
    """default stream / 2A8-2A9: stream 0 means the current context's default stream."""
    src, sview = pinned(rt, 64)
    sview[:] = pattern(64)
    dst = device(rt, 64, 0)
    assert code(rt.memcpy2d_async, dst, 16, src, 16, 16, 4, H2D, 0) == 0
    rt.synchronize_stream(0)
    assert np.array_equal(peek(rt, dst, 64), sview)


def test_memcpy2d_async_facade_returns_ret(acl):
    """facade (emu/acl/rt.py): acl.rt.memcpy2d_async(dst, dpitch, src, spitch, width, height, kind, stream) -> ret."""
    assert acl.rt.set_device(0) == 0
    h, _ = acl.rt.malloc_host(64)
    acl.util.ptr_to_numpy(h, (64,), NPY_UINT8)[:] = pattern(64)
    d, _ = acl.rt.malloc(64, NORMAL_ONLY)
    s, _ = acl.rt.create_stream()
    assert acl.rt.memcpy2d_async(d, 16, h, 16, 16, 4, H2D, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    back = np.zeros(64, np.uint8)
    assert acl.rt.memcpy2d(acl.util.numpy_to_ptr(back), 16, d, 16, 16, 4, D2H) == 0
    assert np.array_equal(back, pattern(64))


# ---------------------------------------------------------------------------
# Property-based: every call copies what the numpy reference says, or fails and changes nothing
# ---------------------------------------------------------------------------

HOST_N = 2048  # multiple of 32: aclrtMallocHost allocates exactly this (aclrtMallocHost sizes)
DEV_N = 2048


@st.composite
def regions(draw):
    width = draw(st.integers(1, 96))
    height = draw(st.integers(1, 12))
    # pitches are mostly >= width; sometimes below it (an invalid call)
    spitch = draw(st.integers(max(1, width - 3), width + 40))
    dpitch = draw(st.integers(max(1, width - 3), width + 40))
    # offsets start inside the buffers; the last row may run past the end (an invalid call)
    soff = draw(st.integers(0, HOST_N - 1))
    doff = draw(st.integers(0, HOST_N - 1))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return width, height, spitch, dpitch, soff, doff, seed


def _check_2d_call(mode, width, height, spitch, dpitch, soff, doff, seed, product="910B"):
    rt = emu.configure(product=product, functional=True)
    rt.set_device(0)
    rng = np.random.default_rng(seed)
    kind = {"h2d": H2D, "d2h": D2H, "d2d": D2D}[mode[:3]]
    asynchronous = mode.endswith("async")

    def make(where):
        if where == "host":
            p, view = pinned(rt, HOST_N)
            view[:] = rng.integers(0, 256, HOST_N, dtype=np.uint8)
            return p, HOST_N
        p = rt.malloc(DEV_N, NORMAL_ONLY)
        ext = dev_extent(rt, DEV_N)
        write_device(rt, p, rng.integers(0, 256, ext, dtype=np.uint8))
        return p, ext

    def read(p, n):
        r, _ = rt.space.resolve(p, n)
        return read_device(rt, p, n) if r.is_device else acl.util.ptr_to_numpy(p, (n,), NPY_UINT8).copy()

    src_where, dst_where = {H2D: ("host", "dev"), D2H: ("dev", "host"), D2D: ("dev", "dev")}[kind]
    src, sn = make(src_where)
    dst, dn = make(dst_where)
    src_before, dst_before = read(src, sn), read(dst, dn)

    valid = (width <= spitch and width <= dpitch
             and soff + (height - 1) * spitch + width <= sn
             and doff + (height - 1) * dpitch + width <= dn)
    event("valid" if valid else "invalid")
    if asynchronous:
        s = rt.create_stream()
        ret = code(rt.memcpy2d_async, dst + doff, dpitch, src + soff, spitch, width, height, kind, s)
        rt.synchronize_stream(s)
    else:
        ret = code(rt.memcpy2d, dst + doff, dpitch, src + soff, spitch, width, height, kind)
    src_after, dst_after = read(src, sn), read(dst, dn)
    assert np.array_equal(src_after, src_before)
    if valid:
        assert ret == 0
        assert np.array_equal(dst_after, ref_2d(dst_before, doff, dpitch, src_before, soff, spitch,
                                                width, height))
    else:
        assert ret == 100000  # width > pitch (2S1-2S5) or a row outside the allocation
        assert np.array_equal(dst_after, dst_before)


PROPERTY = settings(max_examples=45, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("mode", ["h2d", "d2h", "h2d_async", "d2h_async", "d2d_async"])
@PROPERTY
@given(region=regions())
def test_memcpy2d_property_matches_numpy_reference(mode, region):
    """aclrtMemcpy2d, aclrtMemcpy2dAsync: random width, height, pitches and offsets between page-locked host memory
    and device memory (H2D and D2H sync, H2D/D2H async + synchronize, D2D async on A2): either the rows land exactly
    where the numpy reference puts them and every other byte, pitch gaps included, is unchanged; or the
    call returns 100000 (width > pitch, or a row outside its allocation) and neither buffer changes."""
    _check_2d_call(mode, *region)


@PROPERTY
@given(region=regions())
def test_memcpy2d_property_d2d_async_on_950pr(region):
    """aclrtMemcpy2dAsync / aclrtMalloc padding: D2D async on 950PR, where aclrtMalloc adds no padding (allocation =
    roundup(n, 32))."""
    _check_2d_call("d2d_async", *region, product="950PR")


def test_a_blocking_2d_copy_pays_the_driver_round_trip_as_memcpy_does(rt):
    """aclrtMemcpy2d, like aclrtMemcpy, is one synchronous driver call (ApiImpl::MemCopy2DSync calls the
    driver's MemCopy2D with DEVMM_MEMCPY2D_SYNC as MemCopySync calls its MemCopySync, hicann/runtime
    src/runtime/api/impl/api_impl.cc): the host pays `hardware.sync_copy` for both. One row of w bytes then
    costs the host what a w-byte aclrtMemcpy costs, but for the row's descriptor."""
    w = 4096
    host, dev = rt.malloc_host(w), rt.malloc(w)
    hw = rt.product.hardware
    assert hw.sync_copy > 10 * hw.row_overhead
    t0 = rt.clock
    rt.memcpy(dev, w, host, w, H2D)
    one_d = rt.clock - t0
    t0 = rt.clock
    rt.memcpy2d(dev, w, host, w, w, 1, H2D)
    two_d = rt.clock - t0
    assert two_d == pytest.approx(one_d + hw.row_overhead, abs=hw.sync_copy / 10)
