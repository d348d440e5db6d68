"""aclrtMemsetD32 / aclrtMemsetD32Async (docs/conformance/memory_copies_fills.md#fills: "D32 row n" is row n of its
aclrtMemsetD32 table).

The ACL-layer checks (N 0, null, alignment, memSize, location), where the fill
happens (host targets at once, device targets through the stream), the value
as a little-endian 32-bit pattern, and the ACL layer turning the stub runtime's
207000 into success (row 7). "UT <name>" is the test <name> of
hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp.
"""
from __future__ import annotations

import numpy as np
import pytest

import emu.acl as acl
from emu import AclError
from helpers import code, device, peek, pinned, read_device

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

MiB = 1 << 20
H2D, D2H = 1, 2
NORMAL_ONLY = 2
NPY_UINT8 = 2
OLD = 0xEE
VALUE = 0x11223344
LE = bytes([0x44, 0x33, 0x22, 0x11])  # VALUE as stored: little-endian


def on(fresh, product):
    r = fresh(product)
    r.set_device(0)
    return r


def filled(n_words, value=VALUE):
    return np.frombuffer(value.to_bytes(4, "little") * n_words, dtype=np.uint8)


@pytest.fixture(params=["sync", "async"])
def d32(request, rt):
    """One of the two APIs as f(ptr, memSize, value, N), the async one on a created stream."""
    if request.param == "sync":
        return rt.memset_d32
    s = rt.create_stream()
    return lambda p, m, v, n: rt.memset_d32_async(p, m, v, n, s)


def test_d32_n_zero_with_null_is_0(rt):
    """D32 / UT aclrtMemsetD32_success_with_zero_N: aclrtMemsetD32(NULL,16,v,0) -> 0: N 0 returns before any check
    (both APIs)."""
    assert code(rt.memset_d32, 0, 16, VALUE, 0) == 0
    assert code(rt.memset_d32_async, 0, 16, VALUE, 0, 0) == 0
    assert acl.rt.memset_d32(0, 16, VALUE, 0) == 0
    assert acl.rt.memset_d32_async(0, 0, VALUE, 0, 0) == 0


def test_d32_null_is_invalid_param(d32):
    """D32 / UT aclrtMemsetD32_failed_with_nullptr: aclrtMemsetD32(NULL,16,v,4) -> 100000."""
    assert code(d32, 0, 16, VALUE, 4) == 100000


@pytest.mark.parametrize("skew", [1, 2, 3])
def test_d32_unaligned_ptr_is_invalid_param(rt, d32, skew):
    """D32 / UT aclrtMemsetD32_failed_with_unaligned_ptr: p % 4 != 0 (page-locked memory + skew) -> 100000; nothing is
    written."""
    h, view = pinned(rt, 64)
    assert code(d32, h + skew, 32, VALUE, 4) == 100000
    rt.synchronize_device()
    assert (view == OLD).all()


def test_d32_mem_size_below_4n_is_invalid_param(rt, d32):
    """D32 / UT aclrtMemsetD32_failed_with_insufficient_memSize: memSize < 4N (4N - 1) -> 100000; memSize == 4N is
    accepted."""
    h, view = pinned(rt, 64)
    assert code(d32, h, 4 * 8 - 1, VALUE, 8) == 100000
    assert (view == OLD).all()
    assert code(d32, h, 4 * 8, VALUE, 8) == 0


def test_d32_pageable_memory_is_invalid_param(rt, d32):
    """D32 / UT aclrtMemsetD32_failed_with_malloc_memory: memory not allocated by ACL (pageable, numpy_to_ptr ->
    UNREGISTERED) -> 100000, and nothing is written."""
    arr = np.full(64, OLD, dtype=np.uint8)
    p = acl.util.numpy_to_ptr(arr)
    assert rt.pointer_get_attributes(p).type == 2  # UNREGISTERED
    assert code(d32, p, 64, VALUE, 16) == 100000
    rt.synchronize_device()
    assert (arr == OLD).all()


def test_d32_page_locked_host_target_filled_immediately(rt):
    """D32 / UT aclrtMemsetD32Async_large_N_null_stream: a host target is filled at once; the Async variant ignores the
    stream: aclrtMemsetD32Async(pinned, ..., NULL stream) -> 0 and the words are there before any
    synchronize, even behind a long copy queued on the default stream."""
    n = 1 << 20  # 4 MiB, as the 'large N' unit test
    h, view = pinned(rt, 4 * n + 16)
    big_h, big_d = rt.malloc_host(16 * MiB), rt.malloc(16 * MiB, NORMAL_ONLY)
    rt.memcpy_async(big_d, 16 * MiB, big_h, 16 * MiB, H2D, 0)
    assert acl.rt.memset_d32_async(h, 4 * n, VALUE, n, 0) == 0
    assert (view[:4 * n] == filled(n)).all()
    assert (view[4 * n:] == OLD).all()
    assert rt.stream_query(0) == 1  # the default stream is still busy: the fill did not wait for it
    rt.synchronize_stream(0)


def test_d32_sync_device_target_filled_on_return(rt):
    """D32: device target, sync variant: the words are written when the call returns."""
    d = device(rt, 4 * 100 + 16)
    assert acl.rt.memset_d32(d, 4 * 100, VALUE, 100) == 0
    assert (peek(rt, d, 400) == filled(100)).all()
    out = read_device(rt, d, 416)
    assert (out[:400] == filled(100)).all()
    assert (out[400:] == OLD).all()


@pytest.mark.parametrize("product", ["910B", "950PR"])
def test_d32_async_device_target_is_stream_ordered(fresh, product):
    """D32: device target, async variant: the fill is a task on the stream (H2D blocks on A2, one
    memset task on 950). Queued after an H2D of other bytes into the same memory, it is not done when
    the call returns and, after synchronize, its words are the final bytes (it ran after the copy)."""
    r = on(fresh, product)
    n = 4096
    d = device(r, 4 * n)
    h, hv = pinned(r, 4 * n, 0x5A)
    s = r.create_stream()
    r.memcpy_async(d, 4 * n, h, 4 * n, H2D, s)
    assert acl.rt.memset_d32_async(d, 4 * n, VALUE, n, s) == 0
    assert (peek(r, d, 4 * n) == OLD).all()
    r.synchronize_stream(s)
    assert (read_device(r, d, 4 * n) == filled(n)).all()


@pytest.mark.parametrize("value", [0, 1, 0xDEADBEEF, 0xFFFFFFFF, 0x80000001])
def test_d32_value_is_little_endian_uint32_pattern(rt, value):
    """D32: each of the N words is the 32-bit value, stored little-endian (not a byte memset)."""
    d = device(rt, 64)
    rt.memset_d32(d, 64, value, 16)
    out = read_device(rt, d, 64)
    assert out.tobytes() == value.to_bytes(4, "little") * 16
    assert (out.view("<u4") == value).all()


def test_d32_runtime_207000_is_reported_as_0_and_nothing_written(fresh):
    """D32 row 7: the ACL layer turns the runtime's 207000 into 0, so both APIs report success and
    nothing is written; the emulator emits a RuntimeWarning saying so. Only the stub runtime returns that
    207000 (api_c_stub.cc rtMemsetD32 / Async, the tiny build): IPV350, whose config lists both APIs.
    This test used 310P and 910 before; the standard-SoC runtime has no chip gate for D32
    (docs/conformance/products.md, 2.12), so those products fill the memory once their configs stop listing the APIs
    (test_conformance_memory_copies_fills.py: test_d32_standard_soc_runtime_has_no_chip_gate)."""
    r = on(fresh, "IPV350")
    d = device(r, 64)
    for call in (lambda: acl.rt.memset_d32(d, 64, VALUE, 16),
                 lambda: acl.rt.memset_d32_async(d, 64, VALUE, 16, 0)):
        with pytest.warns(RuntimeWarning):
            assert call() == 0
    assert (read_device(r, d, 64) == OLD).all()


@pytest.mark.parametrize("product", ["310P", "910", "IPV350"])
def test_d32_acl_checks_still_apply_on_products_without_d32(fresh, product):
    """D32: the ACL-layer checks come before the runtime call, so a null pointer is still 100000 where
    the runtime would answer 207000 (IPV350) and on the products the docs mark unsupported (310P, 910)."""
    on(fresh, product)
    assert acl.rt.memset_d32(0, 16, VALUE, 4) == 100000


def test_d32_registered_pageable_memory_is_a_host_target(rt):
    """D32 row 6 / locations / registration: pageable memory inside a registered range (HostRegisterV2 PINNED) is HOST,
    so D32 accepts it (0) and fills it at once, the Async variant included."""
    arr = np.full(256, OLD, dtype=np.uint8)
    p = acl.util.numpy_to_ptr(arr)
    rt.host_register_v2(p, 256, 0x10000000)
    assert rt.pointer_get_attributes(p).type == 0  # HOST
    assert acl.rt.memset_d32_async(p, 128, VALUE, 32, 0) == 0
    assert arr[:128].tobytes() == LE * 32
    assert (arr[128:] == OLD).all()
    assert acl.rt.memset_d32(p + 128, 128, 0xA5A5A5A5, 32) == 0
    assert arr[128:].tobytes() == bytes([0xA5]) * 128
