"""Copies and memsets: aclrtMemcpy, aclrtMemcpyAsync(+WithCondition), aclrtMemset(+Async).

The rules are the rows of docs/conformance/memory_copies_fills.md ("aclrtMemcpyAsync row 7" is row 7 of its
aclrtMemcpyAsync table; "kind correction" the table of ApiErrorDecorator::MemcpyKindAutoCorrect behind row 9),
task sizes and routes those of docs/hardware.md#what-the-runtime-does-with-a-copy, RC mode the notes of
hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md. "UT <name>" is the test <name> of the runtime's
own unit tests, hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp (MemcpyKindAutoCorrect_01:
hicann/runtime tests/ut/runtime/runtime/test/rt_utest_api_impl.cc). "pyACL sample" is what Huawei's public
pyACL samples rely on.

Whether an async copy ran asynchronously is observed without any API call in between (API calls
advance simulated time): host buffers are read through their numpy views, device memory through
the emulator's address space.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import emu.acl as acl
from emu import AclError
from emu.memory import Location
from emu.runtime import correct_kind
from helpers import code, device, pageable, peek, pinned, read_device

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

KiB, MiB = 1 << 10, 1 << 20
H2H, H2D, D2H, D2D, DEFAULT, H2B2D = 0, 1, 2, 3, 4, 5
KINDS = (H2H, H2D, D2H, D2D, DEFAULT)
NORMAL_ONLY = 2
NPY_UINT8 = 2
BAD_KIND = 0x7FFFFFFF
OLD = 0xEE


def pattern(n, seed=0):
    """n bytes of a period-251 pattern (no power-of-two period, so chunk seams would show)."""
    period = ((np.arange(251) * 7 + seed) % 251).astype(np.uint8)
    return np.resize(period, n)


def write_device(rt, ptr, data):
    src = np.ascontiguousarray(data, dtype=np.uint8)
    rt.memcpy(ptr, src.nbytes, acl.util.numpy_to_ptr(src), src.nbytes, H2D)


def copy_tasks(rt, label="aclrtMemcpyAsync"):
    return [t for t in rt.machine.records if t.label == label]


# ---------------------------------------------------------------------------
# The runtime's own unit tests (UT), which mock the runtime: calls that pass or fail the ACL-layer checks
# ---------------------------------------------------------------------------

@pytest.fixture
def facade(acl):
    assert acl.rt.set_device(0) == 0
    return acl


def test_case01_memcpy_one_byte_h2h_is_0(facade):
    """UT memory_memcpy: aclrtMemcpy(dst,1,src,1,H2H) -> 0, and the byte is copied."""
    dp, dst = pageable(1, 0)
    sp, src = pageable(1, 0x5A)
    assert facade.rt.memcpy(dp, 1, sp, 1, H2H) == 0
    assert dst[0] == 0x5A


def test_case02_memcpy_all_null_zero_count_bad_kind_is_0(facade):
    """UT memory_memcpy: aclrtMemcpy(NULL,0,NULL,0,kind 0x7FFFFFFF) -> 0 (count 0 first)."""
    assert facade.rt.memcpy(0, 0, 0, 0, BAD_KIND) == 0


def test_case03_memcpy_null_dst_is_invalid_param(facade):
    """UT memory_memcpy: aclrtMemcpy(NULL,1,src,1,H2H) -> 100000."""
    sp, _ = pageable(1)
    assert facade.rt.memcpy(0, 1, sp, 1, H2H) == 100000


def test_case04_memcpy_null_src_is_invalid_param(facade):
    """UT memory_memcpy: aclrtMemcpy(dst,1,NULL,1,H2H) -> 100000."""
    dp, _ = pageable(1)
    assert facade.rt.memcpy(dp, 1, 0, 1, H2H) == 100000


def test_case05_memcpy_bad_kind_is_invalid_param(facade):
    """UT memory_memcpy: aclrtMemcpy(dst,1,src,1,kind 0x7FFFFFFF) -> 100000; nothing is copied."""
    dp, dst = pageable(1, 0)
    sp, _ = pageable(1, 0x5A)
    assert facade.rt.memcpy(dp, 1, sp, 1, BAD_KIND) == 100000
    assert dst[0] == 0


def test_case06_memcpy_host_to_buf_to_device_is_0(facade):
    """UT memory_memcpy: aclrtMemcpy(dst,1,src,1,HOST_TO_BUF_TO_DEVICE) -> 0: kind 5 is in 0..5 and the sync copy
    infers the direction (host source, device destination here)."""
    rt = facade.rt
    dev, ret = rt.malloc(64, NORMAL_ONLY)
    assert ret == 0
    sp, _ = pageable(1, 0x5A)
    assert rt.memcpy(dev, 1, sp, 1, H2B2D) == 0
    dp, dst = pageable(1, 0)
    assert rt.memcpy(dp, 1, dev, 1, D2H) == 0
    assert dst[0] == 0x5A


def test_case07_memcpy_async_null_zero_count_bad_kind_is_0(facade):
    """UT zero_size_memory_ops_return_before_runtime_call: aclrtMemcpyAsync(NULL,1,NULL,0,bad kind,s) -> 0 (count 0
    first)."""
    s, ret = facade.rt.create_stream()
    assert ret == 0
    assert facade.rt.memcpy_async(0, 1, 0, 0, BAD_KIND, s) == 0


def test_case08_memcpy_async_h2d_null_stream_is_0(facade):
    """UT memory_memcpyAsync: aclrtMemcpyAsync(dst,1,src,1,H2D,NULL stream) -> 0; the default stream carries it."""
    rt = facade.rt
    dev, _ = rt.malloc(64, NORMAL_ONLY)
    h, _ = rt.malloc_host(64)
    acl.util.ptr_to_numpy(h, (64,), NPY_UINT8)[0] = 0x5A
    assert rt.memcpy_async(dev, 1, h, 1, H2D, 0) == 0
    assert rt.synchronize_stream(0) == 0
    dp, dst = pageable(1, 0)
    assert rt.memcpy(dp, 1, dev, 1, D2H) == 0
    assert dst[0] == 0x5A


def test_case09_memcpy_async_null_dst_is_invalid_param(facade):
    """UT memory_memcpyAsync: aclrtMemcpyAsync(NULL,1,src,1,H2H,s) -> 100000."""
    s, _ = facade.rt.create_stream()
    sp, _ = pageable(1)
    assert facade.rt.memcpy_async(0, 1, sp, 1, H2H, s) == 100000


def test_case10_memcpy_async_with_condition_zero_count_is_0(facade):
    """UT memory_memcpyAsyncWithCondition: aclrtMemcpyAsyncWithCondition(NULL,0,NULL,0,bad kind,NULL) -> 0."""
    assert facade.rt.memcpy_async_with_condition(0, 0, 0, 0, BAD_KIND, 0) == 0


def test_case11_memset_null_is_invalid_param(facade):
    """UT memory_memset: aclrtMemset(NULL,1,1,1) -> 100000."""
    assert facade.rt.memset(0, 1, 1, 1) == 100000


def test_case12_memset_async_null_zero_count_is_0(facade):
    """UT zero_size_memory_ops_return_before_runtime_call: aclrtMemsetAsync(NULL,1,0,0,s) -> 0 (count 0 first, p may
    be null)."""
    s, _ = facade.rt.create_stream()
    assert facade.rt.memset_async(0, 1, 0, 0, s) == 0


def test_case13_memset_async_null_is_invalid_param(facade):
    """UT aclrtMemsetAsyncFailedTest: aclrtMemsetAsync(NULL,1,1,1,s) -> 100000."""
    s, _ = facade.rt.create_stream()
    assert facade.rt.memset_async(0, 1, 1, 1, s) == 100000


# ---------------------------------------------------------------------------
# aclrtMemcpy chain (docs/conformance/memory_copies_fills.md#copies)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(0, 0, 0, 0, BAD_KIND), (0, 10, 0, 0, 7), (0, 0, 0x1234, 0, -1)])
def test_memcpy_count_zero_is_0_before_any_check(fresh, args):
    """aclrtMemcpy: count 0 -> 0 before any other check: null pointers, bad kind, even without a context."""
    rt = fresh("910B")
    assert code(rt.memcpy, *args) == 0


def test_memcpy_null_dst_is_invalid_param(rt):
    """aclrtMemcpy ACL chain: dst null -> 100000."""
    dev = rt.malloc(64, NORMAL_ONLY)
    assert code(rt.memcpy, 0, 64, dev, 64, D2H) == 100000


def test_memcpy_null_src_is_invalid_param(rt):
    """aclrtMemcpy ACL chain: src null -> 100000."""
    dev = rt.malloc(64, NORMAL_ONLY)
    assert code(rt.memcpy, dev, 64, 0, 64, H2D) == 100000


def test_memcpy_null_dst_checked_before_null_src_and_kind(fresh):
    """aclrtMemcpy: the ACL checks run before the runtime's (no context, destMax 0 -> still 100000)."""
    rt = fresh("910B")
    assert code(rt.memcpy, 0, 0, 0, 16, BAD_KIND) == 100000


@pytest.mark.parametrize("kind", [6, 7, 8, BAD_KIND, -1])
def test_memcpy_kind_outside_0_to_5_is_invalid_param(rt, kind):
    """aclrtMemcpy / kind values: kind not in 0..5 -> 100000 (INNER/INTER_DEVICE_TO_DEVICE included), although the
    sync copy otherwise ignores the kind (as the API reference says)."""
    dev = rt.malloc(64, NORMAL_ONLY)
    dev2 = device(rt, 64, 1)
    assert code(rt.memcpy, dev, 64, dev2, 64, kind) == 100000
    assert (read_device(rt, dev, 64) == 0).all()


def test_memcpy_dest_max_zero_is_107000(rt):
    """aclrtMemcpy runtime: destMax 0 -> 107000."""
    dev = rt.malloc(64, NORMAL_ONLY)
    sp, _ = pageable(64)
    assert code(rt.memcpy, dev, 0, sp, 64, H2D) == 107000


def test_memcpy_count_greater_than_dest_max_is_107000(rt):
    """aclrtMemcpy runtime: count > destMax -> 107000; nothing is copied."""
    dev = device(rt, 64, 0)
    sp, _ = pageable(64, 1)
    assert code(rt.memcpy, dev, 32, sp, 33, H2D) == 107000
    assert (read_device(rt, dev, 64) == 0).all()


def test_memcpy_count_greater_than_dest_max_checked_before_dst_equals_src(rt):
    """aclrtMemcpy: count > destMax (107000) comes before the dst == src shortcut."""
    dev = rt.malloc(64, NORMAL_ONLY)
    assert code(rt.memcpy, dev, 8, dev, 16, D2D) == 107000


def test_memcpy_dst_equals_src_is_0(rt):
    """aclrtMemcpy: dst == src -> 0, no copy (not even an address lookup: an unknown address passes)."""
    dev = device(rt, 64, 3)
    n = len(rt.machine.records)
    assert code(rt.memcpy, dev, 64, dev, 64, D2D) == 0
    assert len(rt.machine.records) == n
    assert code(rt.memcpy, 0xDEAD000, 64, 0xDEAD000, 64, H2H) == 0


def test_memcpy_dst_equals_src_needs_no_context(fresh):
    """aclrtMemcpy: dst == src returns 0 before the context check."""
    rt = fresh("910B")
    sp, _ = pageable(64)
    assert code(rt.memcpy, sp, 64, sp, 64, H2H) == 0


def test_memcpy_without_context_is_107002(fresh):
    """aclrtMemcpy runtime: no context -> 107002 (host buffers, so nothing else is wrong); destMax 0 still
    comes first (107000)."""
    rt = fresh("910B")
    dp, dst = pageable(64, 0)
    sp, _ = pageable(64, 1)
    assert code(rt.memcpy, dp, 64, sp, 64, H2H) == 107002
    assert code(rt.memcpy, dp, 0, sp, 64, H2H) == 107000
    assert (dst == 0).all()


def test_memcpy_sync_ignores_kind_d2h_between_host_buffers(facade):
    """aclrtMemcpy / pyACL sample: sync memcpy treats kind as reserved and infers the direction, so
    DEVICE_TO_HOST with a host source and a host destination succeeds and copies
    (copy_data_as_numpy pattern: into a bytes object's buffer)."""
    src = pattern(256)
    data = bytes(256)
    ret = facade.rt.memcpy(facade.util.bytes_to_ptr(data), 256, facade.util.numpy_to_ptr(src), 256, D2H)
    assert ret == 0
    assert np.array_equal(np.frombuffer(data, dtype=np.uint8), src)


@pytest.mark.parametrize("kind", [H2H, H2D, D2H, D2D, DEFAULT, H2B2D])
def test_memcpy_sync_ignores_kind_for_device_to_host(rt, kind):
    """aclrtMemcpy: the sync copy infers the direction from the addresses whatever kind in 0..5 says."""
    n = 1024
    dev = rt.malloc(n, NORMAL_ONLY)
    write_device(rt, dev, pattern(n, kind))
    h, view = pinned(rt, n)
    rt.memcpy(h, n, dev, n, kind)
    assert np.array_equal(view, pattern(n, kind))


def test_memcpy_h2d_moves_bytes(rt):
    """aclrtMemcpy: host (page-locked) -> device."""
    n = 64 * KiB
    h, view = pinned(rt, n)
    view[:] = pattern(n)
    dev = rt.malloc(n, NORMAL_ONLY)
    rt.memcpy(dev, n, h, n, H2D)
    assert np.array_equal(read_device(rt, dev, n), pattern(n))


def test_memcpy_d2h_moves_bytes(rt):
    """aclrtMemcpy: device -> host (pageable), into the middle of a destination with a larger destMax."""
    n = 64 * KiB
    dev = rt.malloc(n, NORMAL_ONLY)
    write_device(rt, dev, pattern(n))
    dp, dst = pageable(n + 100, 0)
    rt.memcpy(dp + 50, n + 50, dev, n, D2H)
    assert np.array_equal(dst[50:50 + n], pattern(n))
    assert (dst[:50] == 0).all() and (dst[50 + n:] == 0).all()


def test_memcpy_d2d_same_device_moves_bytes(rt):
    """aclrtMemcpy: device -> device on one device, at offsets inside both allocations."""
    n = 64 * KiB
    a = rt.malloc(n, NORMAL_ONLY)
    b = device(rt, n, 0)
    write_device(rt, a, pattern(n))
    rt.memcpy(b + 64, n - 64, a + 128, n - 128, D2D)
    out = read_device(rt, b, n)
    assert np.array_equal(out[64:n - 64], pattern(n)[128:])
    assert (out[:64] == 0).all()


def test_memcpy_h2h_pinned_to_pageable_and_back(rt):
    """aclrtMemcpy: page-locked <-> pageable host copies (sync memcpy accepts H2H)."""
    n = 4096
    h, view = pinned(rt, n, 0)
    sp, src = pageable(n)
    src[:] = pattern(n)
    rt.memcpy(h, n, sp, n, H2H)
    assert np.array_equal(view, pattern(n))
    view[:] = pattern(n, 5)
    dp, dst = pageable(n, 0)
    rt.memcpy(dp, n, h, n, H2H)
    assert np.array_equal(dst, pattern(n, 5))


def test_memcpy_device0_to_device1_moves_bytes(rt):
    """aclrtMemcpy / peer access: a copy between devices (set_device(1) to allocate on device 1, then back to 0);
    on 910B (A2) a cross-device copy needs peer access, enabled here from device 0 toward device 1."""
    n = 64 * KiB
    rt.set_device(1)
    d1 = device(rt, n, 0)
    rt.set_device(0)
    d0 = rt.malloc(n, NORMAL_ONLY)
    write_device(rt, d0, pattern(n))
    rt.device_enable_peer_access(1, 0)
    rt.memcpy(d1, n, d0, n, D2D)
    assert np.array_equal(read_device(rt, d1, n), pattern(n))
    assert rt.pointer_get_attributes(d1).id == 1


@pytest.mark.parametrize("fn", ["memcpy", "memcpy_async"])
def test_memcpy_device0_to_device1_without_peer_access_fails_on_910b(rt, fn):
    """peer access (emulator rule, inferred): on A2 a cross-device copy with peer access enabled in neither
    direction fails; 507899 is the suggested code. Device 1 keeps its bytes."""
    n = 4096
    rt.set_device(1)
    d1 = device(rt, n, 0)
    rt.set_device(0)
    d0 = device(rt, n, 7)
    assert code(getattr(rt, fn), d1, n, d0, n, D2D) == 507899
    rt.synchronize_stream(0)
    assert (read_device(rt, d1, n) == 0).all()


# ---------------------------------------------------------------------------
# aclrtMemcpyAsync chain (docs/conformance/memory_copies_fills.md#copies)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["memcpy_async", "memcpy_async_with_condition"])
def test_memcpy_async_count_zero_is_0_before_any_check(fresh, fn):
    """aclrtMemcpyAsync (ACL chain as aclrtMemcpy): count 0 -> 0 before any check: null pointers, bad kind, a stream
    handle that is not a stream, no context."""
    rt = fresh("910B")
    assert code(getattr(rt, fn), 0, 0, 0, 0, BAD_KIND, 0xBAD0) == 0


def test_memcpy_async_null_src_is_invalid_param(rt):
    """aclrtMemcpyAsync ACL chain: src null -> 100000."""
    dev = rt.malloc(64, NORMAL_ONLY)
    assert code(rt.memcpy_async, dev, 64, 0, 64, H2D, 0) == 100000


@pytest.mark.parametrize("kind", [6, 7, BAD_KIND])
def test_memcpy_async_kind_outside_0_to_5_is_invalid_param(rt, kind):
    """aclrtMemcpyAsync ACL chain: kind not in 0..5 -> 100000."""
    h, _ = pinned(rt, 64)
    dev = rt.malloc(64, NORMAL_ONLY)
    assert code(rt.memcpy_async, dev, 64, h, 64, kind, 0) == 100000


def test_memcpy_async_destroyed_stream_is_107017(rt):
    """aclrtMemcpyAsync row 5 / bad handle: a destroyed stream handle -> 107017, before count > destMax."""
    h, _ = pinned(rt, 64)
    dev = rt.malloc(64, NORMAL_ONLY)
    s = rt.create_stream()
    rt.destroy_stream(s)
    assert code(rt.memcpy_async, dev, 64, h, 64, H2D, s) == 107017
    assert code(rt.memcpy_async, dev, 8, h, 64, H2D, s) == 107017


def test_memcpy_async_unknown_stream_handle_is_107017(rt):
    """bad handle: a handle that is no stream (an event handle, a made-up value) -> 107017."""
    h, _ = pinned(rt, 64)
    dev = rt.malloc(64, NORMAL_ONLY)
    ev = rt.create_event()
    assert code(rt.memcpy_async, dev, 64, h, 64, H2D, ev) == 107017
    assert code(rt.memcpy_async, dev, 64, h, 64, H2D, 0x12345670) == 107017


def test_memcpy_async_count_greater_than_dest_max_is_107000(rt):
    """aclrtMemcpyAsync row 6: count > destMax -> 107000; no task is queued."""
    h, _ = pinned(rt, 64)
    dev = rt.malloc(64, NORMAL_ONLY)
    assert code(rt.memcpy_async, dev, 63, h, 64, H2D, 0) == 107000
    rt.synchronize_stream(0)
    assert copy_tasks(rt) == []


def test_memcpy_async_without_context_is_107002(fresh):
    """aclrtMemcpyAsync row 7: no context -> 107002; count > destMax (row 6) comes first."""
    rt = fresh("910B")
    dp, dst = pageable(64, 0)
    sp, _ = pageable(64, 1)
    assert code(rt.memcpy_async, dp, 64, sp, 64, H2D, 0) == 107002
    assert code(rt.memcpy_async, dp, 32, sp, 64, H2D, 0) == 107000
    assert (dst == 0).all()


def test_memcpy_async_does_not_open_the_default_device(fresh, tmp_path):
    """no context / aclrtMemcpyAsync row 7: the async path never sets the aclInit "defaultDevice" implicitly ->
    107002."""
    rt = fresh("910B")
    cfg = tmp_path / "acl.json"
    cfg.write_text(json.dumps({"defaultDevice": {"default_device": "0"}}))
    rt.init(str(cfg))
    dp, _ = pageable(64, 0)
    sp, _ = pageable(64, 1)
    assert code(rt.memcpy_async, dp, 64, sp, 64, H2D, 0) == 107002


def _endpoint(rt, loc, n, fill):
    """(ptr, read-now) of a buffer of n bytes at location loc, filled with `fill`."""
    if loc == "HOST":
        h, view = pinned(rt, n)
        view[:] = fill
        return h, view.copy
    if loc == "UNREG":
        p, arr = pageable(n)
        arr[:] = fill
        return p, arr.copy
    d = rt.malloc(n, NORMAL_ONLY)
    write_device(rt, d, np.broadcast_to(np.asarray(fill, dtype=np.uint8), (n,)))
    return d, lambda: peek(rt, d, n)


def _check_async_copy(rt, src_loc, dst_loc, kind, expected):
    """Run memcpy_async(kind) from src_loc to dst_loc on the default stream and check the outcome:
    "async" (bytes arrive only after synchronize), "sync" (bytes there when the call returns),
    or an error code (nothing changes)."""
    n = 4096
    data = pattern(n, kind)
    sp, _ = _endpoint(rt, src_loc, n, data)
    dp, read_dst = _endpoint(rt, dst_loc, n, OLD)
    got = code(rt.memcpy_async, dp, n, sp, n, kind, 0)
    if expected in ("async", "sync"):
        assert got == 0
        now = read_dst()
        if expected == "async":
            assert (now == OLD).all(), "the copy completed before synchronize: it ran synchronously"
        else:
            assert np.array_equal(now, data), "the copy had not completed when the call returned"
        rt.synchronize_stream(0)
        assert np.array_equal(read_dst(), data)
    else:
        assert got == expected
        rt.synchronize_stream(0)
        assert (read_dst() == OLD).all()


@pytest.mark.parametrize("kind", KINDS)
def test_memcpy_async_kind_correction_host_to_dev_forced_h2d(rt, kind):
    """kind correction row HOST->DEV: every kind is silently forced to H2D (UT MemcpyKindAutoCorrect_01: D2H); pinned
    memory, so the copy is asynchronous."""
    _check_async_copy(rt, "HOST", "DEV", kind, "async")


@pytest.mark.parametrize("kind", KINDS)
def test_memcpy_async_kind_correction_dev_to_host_forced_d2h(rt, kind):
    """kind correction row DEV->HOST: every kind is forced to D2H; asynchronous."""
    _check_async_copy(rt, "DEV", "HOST", kind, "async")


@pytest.mark.parametrize("kind", KINDS)
def test_memcpy_async_kind_correction_host_to_host_forced_h2h_is_207000(rt, kind):
    """kind correction row HOST->HOST: forced to H2H, which EP mode rejects (aclrtMemcpyAsync row 10) -> 207000 for
    every kind, DEFAULT included."""
    _check_async_copy(rt, "HOST", "HOST", kind, 207000)


@pytest.mark.parametrize("kind", KINDS)
def test_memcpy_async_kind_correction_dev_to_dev_forced_d2d(rt, kind):
    """kind correction row DEV->DEV: every kind is forced to D2D; asynchronous."""
    _check_async_copy(rt, "DEV", "DEV", kind, "async")


@pytest.mark.parametrize("kind,expected", [(H2H, 107000), (H2D, "sync"), (D2H, 107000), (D2D, "async"),
                                           (DEFAULT, "sync")])
def test_memcpy_async_kind_correction_unreg_to_dev(rt, kind, expected):
    """kind correction row UNREG->DEV: H2D and D2D allowed, DEFAULT becomes H2D, H2H/D2H -> 107000 (UT
    MemcpyKindAutoCorrect_01). H2D is pageable (synchronous); D2D is not pageable and stays asynchronous (the quirk)."""
    _check_async_copy(rt, "UNREG", "DEV", kind, expected)


@pytest.mark.parametrize("kind,expected", [(H2H, 107000), (H2D, 107000), (D2H, "sync"), (D2D, "async"),
                                           (DEFAULT, "sync")])
def test_memcpy_async_kind_correction_dev_to_unreg(rt, kind, expected):
    """kind correction row DEV->UNREG: D2H and D2D allowed, DEFAULT becomes D2H, H2H/H2D -> 107000 (UT
    MemcpyKindAutoCorrect_01). D2H is pageable (synchronous); D2D is excluded from the pageable rule, so it stays
    asynchronous."""
    _check_async_copy(rt, "DEV", "UNREG", kind, expected)


@pytest.mark.parametrize("kind,expected", [(H2H, 207000), (H2D, "sync"), (D2H, 107000), (D2D, 107000),
                                           (DEFAULT, 207000)])
def test_memcpy_async_kind_correction_host_to_unreg(rt, kind, expected):
    """kind correction row HOST->UNREG: H2H and H2D allowed, DEFAULT becomes H2H, D2H/D2D -> 107000 (UT
    MemcpyKindAutoCorrect_01). H2H (and DEFAULT) then fail EP mode's async-H2H rule (207000); H2D is pageable:
    synchronous."""
    _check_async_copy(rt, "HOST", "UNREG", kind, expected)


@pytest.mark.parametrize("kind,expected", [(H2H, 207000), (H2D, 107000), (D2H, "sync"), (D2D, 107000),
                                           (DEFAULT, 207000)])
def test_memcpy_async_kind_correction_unreg_to_host(rt, kind, expected):
    """kind correction row UNREG->HOST: H2H and D2H allowed, DEFAULT becomes H2H, H2D/D2D -> 107000 (UT
    MemcpyKindAutoCorrect_01). H2H and DEFAULT -> 207000 (EP); D2H is pageable: synchronous."""
    _check_async_copy(rt, "UNREG", "HOST", kind, expected)


@pytest.mark.parametrize("kind,expected", [(H2H, 207000), (H2D, "sync"), (D2H, "sync"), (D2D, "async"),
                                           (DEFAULT, 207000)])
def test_memcpy_async_kind_correction_unreg_to_unreg(rt, kind, expected):
    """kind correction row UNREG->UNREG: all four kinds allowed, DEFAULT becomes H2H (-> 207000 in EP mode).
    H2D/D2H are pageable (synchronous); D2D is not pageable by the rule, so it is queued."""
    _check_async_copy(rt, "UNREG", "UNREG", kind, expected)


@pytest.mark.parametrize("src,dst", [(Location.MANAGED, Location.DEVICE), (Location.DEVICE, Location.MANAGED),
                                     (Location.HOST_NUMA, Location.UNREGISTERED),
                                     (Location.UNREGISTERED, Location.HOST_NUMA),
                                     (Location.MANAGED, Location.HOST_NUMA)])
@pytest.mark.parametrize("kind", KINDS)
def test_memcpy_async_kind_correction_pairs_not_in_table_pass_unchanged(src, dst, kind):
    """kind correction / ⚠ docs: pairs with MANAGED or HOST_NUMA are not in the table: the kind passes unchanged,
    no error (⚠ doc vs source: the runtime accepts them). No API yields such pointers, so the rule is
    checked on the correction function itself."""
    assert correct_kind(src, dst, kind) == kind


@pytest.mark.parametrize("kind", [H2B2D, 6])
def test_memcpy_async_kind_correction_only_applies_to_kinds_0_to_4(kind):
    """kind correction: correction applies only to H2H, H2D, D2H, D2D and DEFAULT; other kinds pass unchanged."""
    assert correct_kind(Location.HOST, Location.HOST, kind) == kind


def _correction_rule(src, dst, kind):
    """The correction as the runtime states it (api_error.cc ApiErrorDecorator::MemcpyKindAutoCorrect), for the
    test below: (src, dst) -> (forced kind, allowed kinds, what DEFAULT becomes); None: a kind it forbids."""
    host, dev, unreg = Location.HOST, Location.DEVICE, Location.UNREGISTERED
    rules = {(host, dev): (H2D, None, H2D), (dev, host): (D2H, None, D2H), (host, host): (H2H, None, H2H),
             (dev, dev): (D2D, None, D2D), (unreg, dev): (None, {H2D, D2D}, H2D),
             (dev, unreg): (None, {D2H, D2D}, D2H), (host, unreg): (None, {H2H, H2D}, H2H),
             (unreg, host): (None, {H2H, D2H}, H2H), (unreg, unreg): (None, {H2H, H2D, D2H, D2D}, H2H)}
    rule = rules.get((src, dst))
    if kind not in KINDS or rule is None:
        return kind
    forced, allowed, default = rule
    if forced is not None:
        return forced
    if kind == DEFAULT:
        return default
    return kind if any(kind == k for k in allowed) else None


@pytest.mark.parametrize("src", list(Location))
@pytest.mark.parametrize("dst", list(Location))
def test_memcpy_async_kind_correction_follows_the_rule_for_every_pair_and_kind(src, dst):
    """kind correction: for every pair of locations and every kind a program may pass (plain ints -1..8 as pyACL
    scripts pass them, and 0-d arrays), the kind used is the rule's, and a kind it forbids raises 107000."""
    for kind in [*range(-1, 9), *(np.array(k) for k in range(-1, 9))]:
        want = _correction_rule(src, dst, kind)
        if want is None:
            with pytest.raises(AclError) as err:
                correct_kind(src, dst, kind)
            assert err.value.code == 107000
        else:
            assert correct_kind(src, dst, kind) == want


def test_memcpy_async_unreg_to_dev_d2d_is_not_pageable_and_stays_async(rt):
    """kind correction quirk: UNREG->DEV with kind D2D is not pageable: it is queued on the stream (a task
    labelled aclrtMemcpyAsync) instead of draining the stream and copying synchronously, and the
    bytes arrive at synchronize."""
    n = 64 * KiB
    sp, src = pageable(n)
    src[:] = pattern(n)
    dev = device(rt, n, 0)
    rt.memcpy_async(dev, n, sp, n, D2D, 0)
    assert (peek(rt, dev, n) == 0).all()
    assert rt.stream_query(0) == 1  # NOT_READY: a task is pending
    rt.synchronize_stream(0)
    tasks = copy_tasks(rt)
    assert len(tasks) == 1 and tasks[0].nbytes == n
    assert tasks[0].stream is rt.current_context().default_stream.m
    assert np.array_equal(read_device(rt, dev, n), pattern(n))


def test_memcpy_async_pageable_h2d_completes_before_return(rt):
    """aclrtMemcpyAsync rows 12-14: a pageable copy (UNREG source, H2D) is a synchronous copy: the bytes are on the
    device when the call returns and no task is queued on the stream."""
    n = 64 * KiB
    sp, src = pageable(n)
    src[:] = pattern(n)
    dev = device(rt, n, 0)
    rt.memcpy_async(dev, n, sp, n, H2D, 0)
    assert np.array_equal(peek(rt, dev, n), pattern(n))
    assert rt.stream_query(0) == 0  # COMPLETE: nothing queued
    default = rt.current_context().default_stream.m
    assert all(t.stream is not default for t in copy_tasks(rt))


def test_memcpy_async_pageable_d2h_completes_before_return(rt):
    """aclrtMemcpyAsync rows 12-14: D2H into pageable memory has completed when the call returns."""
    n = 64 * KiB
    dev = rt.malloc(n, NORMAL_ONLY)
    write_device(rt, dev, pattern(n))
    dp, dst = pageable(n, 0)
    rt.memcpy_async(dp, n, dev, n, D2H, 0)
    assert np.array_equal(dst, pattern(n))


def test_memcpy_async_pageable_synchronizes_the_stream_first(rt):
    """aclrtMemcpyAsync rows 12-14: a pageable copy first synchronizes its stream: a D2H into pageable memory queued
    behind a large pinned H2D of the same buffer sees the H2D's bytes."""
    n = 8 * MiB
    h, view = pinned(rt, n)
    view[:] = pattern(n)
    dev = device(rt, n, 0)
    s = rt.create_stream()
    rt.memcpy_async(dev, n, h, n, H2D, s)
    dp, dst = pageable(4096, OLD)
    rt.memcpy_async(dp, 4096, dev, 4096, D2H, s)
    assert np.array_equal(dst, pattern(n)[:4096])
    assert rt.stream_query(s) == 0


def test_memcpy_async_with_condition_pageable_is_still_synchronous(rt):
    """aclrtMemcpyAsync: WithCondition differs only by the "check pinned" bit: pageable memory still becomes a
    synchronous copy; pinned memory is asynchronous."""
    n = 4096
    sp, src = pageable(n)
    src[:] = pattern(n)
    dev = device(rt, n, 0)
    rt.memcpy_async_with_condition(dev, n, sp, n, H2D, 0)
    assert np.array_equal(peek(rt, dev, n), pattern(n))
    h, view = pinned(rt, n)
    rt.memcpy_async_with_condition(h, n, dev, n, D2H, 0)
    assert (view == OLD).all()
    rt.synchronize_stream(0)
    assert np.array_equal(view, pattern(n))


@pytest.mark.parametrize("kind", [H2H, DEFAULT])
def test_memcpy_async_h2h_in_ep_mode_is_207000(rt, kind):
    """aclrtMemcpyAsync row 10 / EP mode: final kind H2H -> 207000; this includes DEFAULT between two host
    buffers (page-locked here); nothing is copied."""
    a, va = pinned(rt, 64, 1)
    b, vb = pinned(rt, 64, 2)
    assert code(rt.memcpy_async, b, 64, a, 64, kind, 0) == 207000
    rt.synchronize_stream(0)
    assert (vb == 2).all()


def test_memcpy_async_h2h_rejected_before_dst_equals_src(rt):
    """aclrtMemcpyAsync: row 10 (EP async H2H -> 207000) comes before row 11 (dst == src -> 0)."""
    a, _ = pinned(rt, 64)
    assert code(rt.memcpy_async, a, 64, a, 64, H2H, 0) == 207000


def test_memcpy_async_h2h_is_accepted_in_rc_mode(fresh):
    """RC mode (200I/500 A2): there is no correction and no async H2H rejection: an async H2H
    between page-locked buffers is queued and lands at synchronize."""
    rt = fresh("200I_A2")
    rt.set_device(0)
    a, va = pinned(rt, 256)
    va[:] = pattern(256)
    b, vb = pinned(rt, 256)
    assert code(rt.memcpy_async, b, 256, a, 256, H2H, 0) == 0
    rt.synchronize_stream(0)
    assert np.array_equal(vb, pattern(256))


def test_memcpy_async_dst_equals_src_is_0(rt):
    """aclrtMemcpyAsync row 11: dst == src -> 0 and no task."""
    dev = device(rt, 4096, 3)
    assert code(rt.memcpy_async, dev, 4096, dev, 4096, D2D, 0) == 0
    assert rt.stream_query(0) == 0
    rt.synchronize_stream(0)
    assert copy_tasks(rt) == []
    assert (read_device(rt, dev, 4096) == 3).all()


def test_memcpy_async_host_to_buf_to_device_source_may_change_after_return(rt):
    """aclrtMemcpyAsync rows 8-9 / staging: HOST_TO_BUF_TO_DEVICE stages the host data during the call, so the
    page-locked source may be overwritten and freed right after the call returns; the device gets the original."""
    n = 256 * KiB
    h, view = pinned(rt, n)
    view[:] = pattern(n)
    dev = device(rt, n, 0)
    assert code(rt.memcpy_async, dev, n, h, n, H2B2D, 0) == 0
    view[:] = 0x99
    rt.free_host(h)
    assert (peek(rt, dev, n) == 0).all()  # still queued
    rt.synchronize_stream(0)
    assert np.array_equal(read_device(rt, dev, n), pattern(n))


def test_memcpy_async_host_to_buf_to_device_pageable_source(rt):
    """aclrtMemcpyAsync rows 8-9: HOST_TO_BUF_TO_DEVICE from pageable memory: no pageable detection, the copy is
    queued; the source array may change after the call without changing what lands on the device."""
    n = 64 * KiB
    sp, src = pageable(n)
    src[:] = pattern(n)
    dev = device(rt, n, 0)
    assert code(rt.memcpy_async, dev, n, sp, n, H2B2D, 0) == 0
    src[:] = 0x42
    assert (peek(rt, dev, n) == 0).all()
    rt.synchronize_stream(0)
    assert np.array_equal(read_device(rt, dev, n), pattern(n))


def test_memcpy_async_host_to_buf_to_device_device_source_is_107000(rt):
    """aclrtMemcpyAsync rows 8-9: HOST_TO_BUF_TO_DEVICE with a device source -> 107000 (no correction)."""
    a = device(rt, 64, 1)
    b = device(rt, 64, 2)
    assert code(rt.memcpy_async, b, 64, a, 64, H2B2D, 0) == 107000
    rt.synchronize_stream(0)
    assert (read_device(rt, b, 64) == 2).all()


@pytest.mark.parametrize("dst_kind", ["HOST", "UNREG"])
def test_memcpy_async_host_to_buf_to_device_host_destination_is_107000(rt, dst_kind):
    """aclrtMemcpyAsync rows 8-9: HOST_TO_BUF_TO_DEVICE with a host destination (page-locked or pageable) -> 107000."""
    h, _ = pinned(rt, 64, 1)
    dp, read = _endpoint(rt, dst_kind, 64, 2)
    assert code(rt.memcpy_async, dp, 64, h, 64, H2B2D, 0) == 107000
    assert (read() == 2).all()


@pytest.mark.parametrize("same_device", [False, True])
def test_memcpy_async_stream_of_another_context_is_107003(rt, same_device):
    """aclrtMemcpyAsync row 15 / stream context: a stream created in one context, used while another context is current
    (create_context on device 1, or a second context on device 0) -> 107003."""
    h, _ = pinned(rt, 64, 1)
    dev = device(rt, 64, 2)
    s = rt.create_stream()
    rt.create_context(0 if same_device else 1)
    assert code(rt.memcpy_async, dev, 64, h, 64, H2D, s) == 107003
    assert (read_device(rt, dev, 64) == 2).all()


def test_memcpy_async_null_stream_is_default_stream(rt):
    """default stream: a null stream is the current context's default stream: the task goes there and
    synchronize_stream(0) waits for it."""
    n = 1 * MiB
    h, view = pinned(rt, n)
    view[:] = pattern(n)
    dev = device(rt, n, 0)
    rt.memcpy_async(dev, n, h, n, H2D, 0)
    assert rt.stream_query(0) == 1
    rt.synchronize_stream(0)
    assert rt.stream_query(0) == 0
    (task,) = copy_tasks(rt)
    assert task.stream is rt.current_context().default_stream.m
    assert np.array_equal(read_device(rt, dev, n), pattern(n))


# ---------------------------------------------------------------------------
# Async semantics (aclrtMemcpyAsync, streams, events)
# ---------------------------------------------------------------------------

def test_memcpy_async_destination_old_before_synchronize_new_after(rt):
    """aclrtMemcpyAsync: pinned copies are truly asynchronous: the destination shows the old bytes until the stream
    is synchronized, then the new ones."""
    n = 64 * KiB
    dev = rt.malloc(n, NORMAL_ONLY)
    write_device(rt, dev, pattern(n))
    h, view = pinned(rt, n, OLD)
    s = rt.create_stream()
    rt.memcpy_async(h, n, dev, n, D2H, s)
    assert (view == OLD).all()
    rt.synchronize_stream(s)
    assert np.array_equal(view, pattern(n))


def test_memcpy_async_two_streams_ordered_by_event(rt):
    """events: stream B waits for an event recorded on A after a large H2D; a small D2H on B then reads
    the H2D's bytes (without the wait it would finish long before the H2D)."""
    n = 32 * MiB
    h, view = pinned(rt, n)
    view[:] = pattern(n)
    dev = device(rt, n, 0)
    a, b = rt.create_stream(), rt.create_stream()
    ev = rt.create_event()
    out, oview = pinned(rt, 4096, OLD)
    rt.memcpy_async(dev, n, h, n, H2D, a)
    rt.record_event(ev, a)
    rt.stream_wait_event(b, ev)
    rt.memcpy_async(out, 4096, dev, 4096, D2H, b)
    rt.synchronize_stream(b)
    assert np.array_equal(oview, pattern(n)[:4096])
    h2d = [t for t in copy_tasks(rt) if t.route == "h2d"]
    d2h = [t for t in copy_tasks(rt) if t.route == "d2h"]
    assert d2h[0].start >= max(t.end for t in h2d)


def test_memcpy_async_two_streams_without_event_are_not_ordered(rt):
    """streams: without an event wait, a small D2H on stream B runs beside a large H2D on stream A and reads
    the device memory before the H2D lands (the counterpart of the event test)."""
    n = 32 * MiB
    h, view = pinned(rt, n)
    view[:] = pattern(n)
    dev = device(rt, n, 0)
    a, b = rt.create_stream(), rt.create_stream()
    out, oview = pinned(rt, 4096, OLD)
    rt.memcpy_async(dev, n, h, n, H2D, a)
    rt.memcpy_async(out, 4096, dev, 4096, D2H, b)
    rt.synchronize_stream(b)
    assert (oview == 0).all()
    rt.synchronize_stream(a)


def test_memcpy_async_stream_order_on_one_stream(rt):
    """task sizes / streams: tasks of one stream run in order: H2D then D2H of the same buffer returns the
    H2D's bytes."""
    n = 8 * MiB
    h, view = pinned(rt, n)
    view[:] = pattern(n)
    dev = device(rt, n, 0)
    out, oview = pinned(rt, n, OLD)
    s = rt.create_stream()
    rt.memcpy_async(dev, n, h, n, H2D, s)
    rt.memcpy_async(out, n, dev, n, D2H, s)
    assert (oview == OLD).all()
    rt.synchronize_stream(s)
    assert np.array_equal(oview, pattern(n))


def test_free_host_of_another_buffer_while_d2h_is_queued(rt):
    """pyACL sample / aclrtFree: freeing one page-locked buffer (immediately, no synchronization) while a D2H
    into another host buffer is queued does not disturb that copy."""
    n = 1 * MiB
    dev = rt.malloc(n, NORMAL_ONLY)
    write_device(rt, dev, pattern(n))
    other, _ = pinned(rt, n)
    out, oview = pinned(rt, n)
    rt.memcpy_async(out, n, dev, n, D2H, 0)
    rt.free_host(other)
    assert (oview == OLD).all()
    rt.synchronize_stream(0)
    assert np.array_equal(oview, pattern(n))


def test_memcpy_async_device0_to_device1_moves_bytes(rt):
    """aclrtMemcpyAsync / D2D route / peer access: an async copy from device 0 to device 1 (peer access enabled),
    queued on device 0's default stream: the bytes land at synchronize."""
    n = 256 * KiB
    rt.set_device(1)
    d1 = device(rt, n, 0)
    rt.set_device(0)
    d0 = rt.malloc(n, NORMAL_ONLY)
    write_device(rt, d0, pattern(n))
    rt.device_enable_peer_access(1, 0)
    rt.memcpy_async(d1, n, d0, n, D2D, 0)
    assert (peek(rt, d1, n) == 0).all()
    rt.synchronize_stream(0)
    assert np.array_equal(read_device(rt, d1, n), pattern(n))


# ---------------------------------------------------------------------------
# Memset (docs/conformance/memory_copies_fills.md#fills)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["memset", "memset_async"])
def test_memset_count_zero_is_0_with_null_pointer(fresh, fn):
    """memset ACL chain: count 0 -> 0 (p may be null), before the context check."""
    rt = fresh("910B")
    assert code(getattr(rt, fn), 0, 1, 7, 0) == 0


@pytest.mark.parametrize("value,byte", [(0x1FF, 0xFF), (-1, 0xFF), (0x100, 0x00), (0x12345678, 0x78),
                                        (0x7F, 0x7F)])
def test_memset_value_is_masked_to_low_byte(rt, value, byte):
    """memset: the fill byte is value & 0xFF (0x1FF and -1 write 0xFF)."""
    n = 4096
    dev = device(rt, n, 0x33)
    rt.memset(dev, n, value, n)
    assert (read_device(rt, dev, n) == byte).all()


@pytest.mark.parametrize("value,byte", [(0x1FF, 0xFF), (-1, 0xFF), (0x100, 0x00)])
def test_memset_async_value_is_masked_to_low_byte(rt, value, byte):
    """memset: MemsetAsync fills value & 0xFF too, on device and host targets."""
    n = 4096
    dev = device(rt, n, 0x33)
    h, view = pinned(rt, n, 0x33)
    rt.memset_async(dev, n, value, n, 0)
    rt.memset_async(h, n, value, n, 0)
    rt.synchronize_stream(0)
    assert (read_device(rt, dev, n) == byte).all()
    assert (view == byte).all()


def test_memset_fills_only_count_bytes(rt):
    """memset: the fill covers `count` bytes from p, within maxCount; the rest is untouched."""
    dev = device(rt, 4096, 0)
    rt.memset(dev + 100, 1000, 0x5C, 500)
    out = read_device(rt, dev, 4096)
    assert (out[100:600] == 0x5C).all()
    assert (out[:100] == 0).all() and (out[600:] == 0).all()


@pytest.mark.parametrize("fn", ["memset", "memset_async"])
def test_memset_count_greater_than_max_count_is_107000(rt, fn):
    """memset: count > maxCount -> 107000 (sync: a driver error, 107000 inferred); nothing is filled."""
    dev = device(rt, 4096, 0)
    assert code(getattr(rt, fn), dev, 100, 1, 101) == 107000
    rt.synchronize_stream(0)
    assert (read_device(rt, dev, 4096) == 0).all()


@pytest.mark.parametrize("fn", ["memset", "memset_async"])
def test_memset_device_past_end_is_invalid_param(rt, fn):
    """memset / pageable-memory rule: a fill that runs past the end of a device allocation -> 100000 and
    the allocation is unchanged."""
    dev = device(rt, 4096, 0x21)  # 4096 + 32 bytes
    assert code(getattr(rt, fn), dev, 8192, 1, 8192) == 100000
    assert code(getattr(rt, fn), dev + 4000, 200, 1, 200) == 100000
    rt.synchronize_stream(0)
    assert (read_device(rt, dev, 4096) == 0x21).all()


def test_memset_without_context_is_107002(fresh):
    """memset sync runtime: no context -> 107002."""
    rt = fresh("910B")
    p, arr = pageable(64, 0)
    assert code(rt.memset, p, 64, 1, 64) == 107002
    assert (arr == 0).all()


def test_memset_host_target_fills(rt):
    """memset: aclrtMemset of page-locked host memory fills it."""
    h, view = pinned(rt, 4096, 0)
    rt.memset(h, 4096, 0xAB, 4096)
    assert (view == 0xAB).all()


@pytest.mark.parametrize("target", ["HOST", "UNREG"])
def test_memset_async_host_target_fills_immediately(rt, target):
    """memset: a HOST/UNREGISTERED target is filled immediately on the calling thread, not stream-ordered:
    the bytes are there before synchronize even though the stream is still busy with a large copy."""
    n = 32 * MiB
    src, _ = pinned(rt, n, 1)
    dev = rt.malloc(n, NORMAL_ONLY)
    s = rt.create_stream()
    rt.memcpy_async(dev, n, src, n, H2D, s)
    p, read = _endpoint(rt, target, 4096, 0)
    rt.memset_async(p, 4096, 0x6D, 4096, s)
    assert (read() == 0x6D).all()
    assert rt.stream_query(s) == 1  # the H2D is still running
    rt.synchronize_stream(s)


def test_memset_async_device_target_fills_after_synchronize(rt):
    """memset: a device target is filled by tasks on the stream: old bytes before synchronize, the
    fill after."""
    n = 1 * MiB
    dev = device(rt, n, 0)
    s = rt.create_stream()
    rt.memset_async(dev, n, 0x4E, n, s)
    assert (peek(rt, dev, n) == 0).all()
    rt.synchronize_stream(s)
    assert (read_device(rt, dev, n) == 0x4E).all()


def test_memset_async_is_stream_ordered_after_a_copy(rt):
    """memset / streams: on a device target, MemsetAsync runs after the copy queued before it on the stream."""
    n = 4 * MiB
    h, _ = pinned(rt, n, 0x10)
    dev = device(rt, n, 0)
    s = rt.create_stream()
    rt.memcpy_async(dev, n, h, n, H2D, s)
    rt.memset_async(dev, n, 0x20, 4096, s)
    rt.synchronize_stream(s)
    out = read_device(rt, dev, n)
    assert (out[:4096] == 0x20).all() and (out[4096:] == 0x10).all()


@pytest.mark.parametrize("same_device", [False, True])
def test_memset_async_stream_of_another_context_is_107003(rt, same_device):
    """memset async runtime: stream context -> 107003."""
    dev = device(rt, 64, 0)
    s = rt.create_stream()
    rt.create_context(0 if same_device else 1)
    assert code(rt.memset_async, dev, 64, 1, 64, s) == 107003


# ---------------------------------------------------------------------------
# Task splitting (docs/hardware.md#task-sizes)
# ---------------------------------------------------------------------------

def _h2d_tasks(rt, n):
    h = rt.malloc_host(n)
    dev = rt.malloc(n, NORMAL_ONLY)
    rt.memcpy_async(dev, n, h, n, H2D, 0)
    rt.synchronize_stream(0)
    return copy_tasks(rt)


def test_async_h2d_is_split_into_64mib_tasks_on_910b(rt):
    """task sizes: H2D over PCIe is split into 64 MiB tasks: 200 MiB -> ceil(200/64) = 4 tasks, the last one
    8 MiB, enqueued back to back on the stream."""
    tasks = _h2d_tasks(rt, 200 * MiB)
    assert sum(t.chunks for t in tasks) == math.ceil(200 / 64) == 4
    assert [n for t in tasks for n in t.chunk_sizes()] == [64 * MiB] * 3 + [8 * MiB]
    assert all(t.route == "h2d" for t in tasks)
    assert rt.records()["tasks"].sum() >= 4


def test_async_h2d_is_one_task_on_950pr(fresh):
    """task sizes: host over UB (950PR) uses 256 MiB units: a 200 MiB H2D is 1 task."""
    rt = fresh("950PR")
    rt.set_device(0)
    tasks = _h2d_tasks(rt, 200 * MiB)
    assert [n for t in tasks for n in t.chunk_sizes()] == [200 * MiB]


def test_async_d2h_is_split_into_64mib_tasks_on_910b(rt):
    """task sizes: D2H uses the same 64 MiB unit: 130 MiB -> 3 tasks."""
    n = 130 * MiB
    dev = rt.malloc(n, NORMAL_ONLY)
    h = rt.malloc_host(n)
    rt.memcpy_async(h, n, dev, n, D2H, 0)
    rt.synchronize_stream(0)
    assert [n for t in copy_tasks(rt) for n in t.chunk_sizes()] == [64 * MiB, 64 * MiB, 2 * MiB]


def test_async_d2d_200mib_is_one_task(rt):
    """task sizes: an on-chip D2D task may be up to 4 GiB: a 200 MiB D2D is 1 task."""
    n = 200 * MiB
    a = rt.malloc(n, NORMAL_ONLY)
    b = rt.malloc(n, NORMAL_ONLY)
    rt.memcpy_async(b, n, a, n, D2D, 0)
    rt.synchronize_stream(0)
    tasks = copy_tasks(rt)
    assert len(tasks) == 1 and tasks[0].chunk_sizes() == [n] and tasks[0].route == "sdma"


def test_async_split_copy_moves_all_bytes(rt):
    """task sizes: the chunks together move every byte (a 130 MiB H2D, 3 tasks, checked at chunk seams)."""
    n = 130 * MiB
    h, view = pinned(rt, n, 0)
    view[:] = pattern(n)
    dev = rt.malloc(n, NORMAL_ONLY)
    rt.memcpy_async(dev, n, h, n, H2D, 0)
    rt.synchronize_stream(0)
    assert sum(t.chunks for t in copy_tasks(rt)) == 3
    for off in (0, 64 * MiB - 100, 128 * MiB - 100, n - 4096):
        assert np.array_equal(read_device(rt, dev + off, 4096)[:min(4096, n - off)],
                              pattern(n)[off:off + 4096])
