"""Allocation, freeing, memory info, pointer attributes and pageable host memory.

The rules are those of docs/conformance/memory_copies_fills.md#allocation (aclrtMalloc, aclrtFree, aclrtMallocHost,
aclrtFreeHost, aclrtGetMemInfo, aclrtPointerGetAttributes) and the address locations of its copy rules (#copies);
the products' notes are docs/conformance/products.md. "⚠ docs" marks where the API reference
(hicann/runtime docs/zh/api_ref/11-01_device_memory_malloc_and_free.md) and the source disagree: the documents
switch HUGE_FIRST to huge pages at 2 MiB, the source (hicann/runtime src/acl/aclrt_impl/memory.cpp) when the padded
size exceeds 1 MiB. pyACL names (acl.rt, acl.util) are those of Huawei's Python API, as the facade (emu/acl)
implements them.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import emu.acl as acl
from emu import AclError
from emu.memory import DEVICE_BASE, DEVICE_WINDOW
from helpers import code, read_device

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SIZE_MAX = (1 << 64) - 1

HUGE_FIRST, HUGE_ONLY, NORMAL_ONLY = 0, 1, 2
HUGE_FIRST_P2P, HUGE_ONLY_P2P, NORMAL_ONLY_P2P = 3, 4, 5
HUGE1G_ONLY, HUGE1G_ONLY_P2P = 6, 7

DDR_MEM, HBM_MEM = 0, 1
H2H, H2D, D2H, D2D = 0, 1, 2, 3
LOC_HOST, LOC_DEVICE, LOC_UNREGISTERED = 0, 1, 2
NPY_UINT8 = 2


def free_bytes(rt, attr=HBM_MEM):
    return rt.get_mem_info(attr)[0]


def used_by(rt, size, policy, attr=HBM_MEM):
    """How many bytes of get_mem_info's free one aclrtMalloc(size, policy) takes; returns (ptr, bytes)."""
    before = free_bytes(rt, attr)
    p = rt.malloc(size, policy)
    return p, before - free_bytes(rt, attr)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def host_ptr(rt, arr):
    """Show a numpy array to the runtime as pageable memory; returns its address."""
    return acl.util.numpy_to_ptr(arr)


# ---------------------------------------------------------------------------
# aclrtMalloc (docs/conformance/memory_copies_fills.md#allocation)
# ---------------------------------------------------------------------------

def test_malloc_size_zero_is_invalid_param(rt):
    """aclrtMalloc ACL chain: size 0 -> 100000."""
    assert code(rt.malloc, 0, HUGE_FIRST) == 100000


@pytest.mark.parametrize("size", [SIZE_MAX, SIZE_MAX - 63, SIZE_MAX - 32])
def test_malloc_size_plus_32_plus_padding_overflow_is_invalid_param(rt, size):
    """aclrtMalloc ACL chain: size + 32 + P (P = 32 on 910B) overflows size_t -> 100000."""
    assert code(rt.malloc, size, HUGE_FIRST) == 100000


def test_malloc_largest_size_without_overflow_passes_acl_check(rt):
    """aclrtMalloc: size + 32 + 32 == SIZE_MAX does not overflow, so the ACL check passes and the runtime
    fails for lack of memory (207001) instead of 100000."""
    assert code(rt.malloc, SIZE_MAX - 64, HUGE_FIRST) == 207001


def test_malloc_overflow_uses_no_padding_on_950(fresh):
    """aclrtMalloc: P = 0 on 950, so size + 32 == SIZE_MAX + 1 overflows but SIZE_MAX - 32 does not."""
    rt = fresh("950PR")
    rt.set_device(0)
    assert code(rt.malloc, SIZE_MAX - 31, HUGE_FIRST) == 100000
    assert code(rt.malloc, SIZE_MAX - 32, HUGE_FIRST) == 207001


def test_malloc_without_context_is_107002(fresh):
    """aclrtMalloc runtime / no context: no aclrtSetDevice on this thread -> 107002."""
    rt = fresh("910B")
    assert code(rt.malloc, 1024, HUGE_FIRST) == 107002


def test_malloc_size_zero_checked_before_context(fresh):
    """call chain / aclrtMalloc: the ACL-layer size check comes before the runtime's context check."""
    rt = fresh("910B")
    assert code(rt.malloc, 0, HUGE_FIRST) == 100000


@pytest.mark.parametrize("size,expected", [(1, 64), (32, 64), (33, 96), (1000, 1056), (4096, 4128)])
def test_malloc_requested_bytes_are_roundup_32_plus_padding_on_910b(rt, size, expected):
    """aclrtMalloc: requested bytes = roundup(size, 32) + 32 on 910B (size 1 -> 64), seen as get_mem_info's
    free decreasing by exactly that amount (NORMAL_ONLY, so no huge-page rounding)."""
    _, used = used_by(rt, size, NORMAL_ONLY)
    assert used == expected


@pytest.mark.parametrize("size,expected", [(1, 32), (32, 32), (33, 64), (4096, 4096)])
def test_malloc_requested_bytes_have_no_padding_on_950pr(fresh, size, expected):
    """aclrtMalloc: padding P is 0 on 950, so requested bytes = roundup(size, 32)."""
    rt = fresh("950PR")
    rt.set_device(0)
    _, used = used_by(rt, size, NORMAL_ONLY)
    assert used == expected


def test_malloc_huge_first_1mib_is_huge_because_of_padding(rt):
    """aclrtMalloc / ⚠ docs: HUGE_FIRST takes huge pages when the padded bytes exceed 1 MiB. A 1 MiB request
    is 1 MiB + 32 padded bytes on 910B, so it gets huge pages and rounds up to 2 MiB (the
    1 MiB + padding > 1 MiB quirk, ⚠ docs)."""
    p, used = used_by(rt, MiB, HUGE_FIRST)
    assert used == 2 * MiB
    assert rt.pointer_get_attributes(p).page_size == 2 * MiB


def test_malloc_huge_first_at_threshold_uses_normal_pages(rt):
    """aclrtMalloc: HUGE_FIRST uses huge pages only if bytes > 1 MiB: 1 MiB - 32 pads to exactly 1 MiB,
    which stays on normal pages and is not rounded to 2 MiB."""
    p, used = used_by(rt, MiB - 32, HUGE_FIRST)
    assert used == MiB
    assert rt.pointer_get_attributes(p).page_size == 4096


def test_malloc_huge_first_1mib_is_normal_on_950pr(fresh):
    """aclrtMalloc / ⚠ docs: without padding (950) a 1 MiB request is exactly 1 MiB, not > 1 MiB: normal pages."""
    rt = fresh("950PR")
    rt.set_device(0)
    p, used = used_by(rt, MiB, HUGE_FIRST)
    assert used == MiB
    assert rt.pointer_get_attributes(p).page_size == 4096


@pytest.mark.parametrize("size,expected", [(1, 2 * MiB), (3 * MiB, 4 * MiB), (2 * MiB - 64, 2 * MiB)])
def test_malloc_huge_only_rounds_to_2mib(rt, size, expected):
    """aclrtMalloc: HUGE_ONLY uses huge pages whatever the size; huge pages round up to 2 MiB."""
    p, used = used_by(rt, size, HUGE_ONLY)
    assert used == expected
    assert rt.pointer_get_attributes(p).page_size == 2 * MiB


def test_malloc_normal_only_does_not_round_to_2mib(rt):
    """aclrtMalloc: NORMAL_ONLY uses normal pages even above 1 MiB: 3 MiB -> 3 MiB + 32 bytes."""
    p, used = used_by(rt, 3 * MiB, NORMAL_ONLY)
    assert used == 3 * MiB + 32
    assert rt.pointer_get_attributes(p).page_size == 4096


@pytest.mark.parametrize("policy", [8, 99, 0x7FFF])
def test_malloc_unknown_policy_behaves_as_huge_first(rt, policy):
    """aclrtMalloc: any policy outside 0..7 becomes "default", which behaves like HUGE_FIRST (huge if the
    padded bytes exceed 1 MiB). ⚠ The doc says "huge if >= 2 MiB"; this follows the runtime."""
    p, used = used_by(rt, MiB, policy)
    assert used == 2 * MiB
    assert rt.pointer_get_attributes(p).page_size == 2 * MiB
    q, used = used_by(rt, 1000, policy)
    assert used == 1056  # small: normal pages, padding kept
    assert rt.pointer_get_attributes(q).page_size == 4096


@pytest.mark.parametrize("size,expected", [(1, GiB), (GiB, GiB), (GiB + 1, 2 * GiB)])
def test_malloc_huge1g_rounds_to_1gib_without_padding(rt, size, expected):
    """aclrtMalloc: HUGE1G policies skip the padding (P = 0) and round up to 1 GiB on 910B: a 1 GiB request
    takes exactly 1 GiB (with padding it would take 2 GiB)."""
    p, used = used_by(rt, size, HUGE1G_ONLY)
    assert used == expected
    assert rt.pointer_get_attributes(p).page_size == GiB


def test_malloc_huge1g_p2p_rounds_to_1gib_without_padding(rt):
    """aclrtMalloc: HUGE1G_ONLY_P2P (7) also skips the padding and rounds to 1 GiB (910B has p2p and huge1g)."""
    _, used = used_by(rt, GiB, HUGE1G_ONLY_P2P)
    assert used == GiB


@pytest.mark.parametrize("policy", [HUGE1G_ONLY, HUGE1G_ONLY_P2P])
def test_malloc_huge1g_on_product_without_huge1g_is_207000(fresh, policy):
    """aclrtMalloc / product gate: HUGE1G is A2/A3 only; on 310P the HUGE1G policies -> 207000."""
    rt = fresh("310P")
    rt.set_device(0)
    before = free_bytes(rt, DDR_MEM)
    assert code(rt.malloc, 1024, policy) == 207000
    assert free_bytes(rt, DDR_MEM) == before


@pytest.mark.parametrize("product,policy", [
    ("200I_A2", HUGE1G_ONLY_P2P),
    *[("IPV350", p) for p in (HUGE_FIRST_P2P, HUGE_ONLY_P2P, NORMAL_ONLY_P2P, HUGE1G_ONLY_P2P)],
])
def test_malloc_p2p_policy_on_product_without_p2p_is_207000(fresh, product, policy):
    """aclrtMalloc: P2P policies on a chip without P2P -> 207000 (IPV350). HUGE1G_ONLY_P2P (7) fails on both for lack
    of 1 GiB pages, not of P2P: npu_driver.cc NpuDriver::transMemAttribute gates only policies 3-5 on the
    P2P flag (test_conformance_memory_copies_fills.py). set_device(0) first: both are RC products."""
    rt = fresh(product)
    rt.set_device(0)
    before = rt.get_mem_info(DDR_MEM)
    assert code(rt.malloc, 1024, policy) == 207000
    assert rt.get_mem_info(DDR_MEM) == before


@pytest.mark.parametrize("policy", [HUGE_FIRST_P2P, HUGE_ONLY_P2P, NORMAL_ONLY_P2P])
def test_malloc_p2p_policy_on_200I_A2_follows_the_runtime_flag(fresh, policy):
    """aclrtMalloc with the products' notes: the docs say P2P memory is not available on 200I/500 A2, but the runtime's
    mini_v3 config sets the P2P flag that the P2P malloc check reads (peer access itself stays blocked by the
    offline-mode check). The emulator follows the runtime: these policies allocate."""
    rt = fresh("200I_A2")
    rt.set_device(0)
    free0, _ = rt.get_mem_info(DDR_MEM)
    p = rt.malloc(1024, policy)
    assert p != 0 and rt.get_mem_info(DDR_MEM)[0] < free0


def test_malloc_non_p2p_policy_works_on_product_without_p2p(fresh):
    """aclrtMalloc: the P2P gate only concerns policies 3, 4, 5, 7: NORMAL_ONLY works on 200I_A2."""
    rt = fresh("200I_A2")
    rt.set_device(0)
    assert rt.malloc(1024, NORMAL_ONLY) != 0


def test_malloc_more_than_device_memory_is_207001(rt):
    """aclrtMalloc: out of memory -> 207001 (more than the device's 64 GiB on 910B)."""
    assert code(rt.malloc, rt.product.memory_bytes + 1, HUGE_FIRST) == 207001
    assert code(rt.malloc, rt.product.memory_bytes, NORMAL_ONLY) == 207001


def test_malloc_failure_leaves_mem_info_unchanged(rt):
    """aclrtMalloc / aclrtGetMemInfo: a failed allocation takes no memory: get_mem_info reports the same free bytes."""
    rt.malloc(5 * MiB, HUGE_FIRST)
    before = rt.get_mem_info(HBM_MEM)
    for policy in (HUGE_FIRST, HUGE_ONLY, NORMAL_ONLY, HUGE1G_ONLY):
        assert code(rt.malloc, rt.product.memory_bytes, policy) == 207001
    assert rt.get_mem_info(HBM_MEM) == before


def test_malloc_exact_fit_then_out_of_memory(rt):
    """aclrtMalloc / aclrtGetMemInfo: capacity is exact: roundup(size, 32) + 32 == total fits, after which free is 0
    and even 1 more byte -> 207001."""
    total = rt.product.memory_bytes
    rt.malloc(total - 32, NORMAL_ONLY)
    assert rt.get_mem_info(HBM_MEM) == (0, total)
    assert code(rt.malloc, 1, NORMAL_ONLY) == 207001


def test_malloc_huge_first_falls_back_to_normal_pages(rt):
    """aclrtMalloc: HUGE_FIRST: huge pages fall back to normal pages. With 1 MiB taken, a request whose
    2 MiB-rounded size no longer fits but whose exact size does succeeds on normal pages;
    HUGE_ONLY fails with 207001 for the same request."""
    total = rt.product.memory_bytes
    rt.malloc(MiB - 32, NORMAL_ONLY)  # takes exactly 1 MiB
    size = total - MiB - 32  # padded: total - 1 MiB; huge-rounded: total
    assert code(rt.malloc, size, HUGE_ONLY) == 207001
    p = rt.malloc(size, HUGE_FIRST)
    assert rt.pointer_get_attributes(p).page_size == 4096
    assert free_bytes(rt) == 0


@pytest.mark.parametrize("size", [1, 33, 100, 4000, 4097, 65])
def test_malloc_base_is_64_byte_aligned(rt, size):
    """aclrtMalloc: the base is 64-byte aligned, also after allocations whose sizes are odd multiples of 32."""
    ptrs = [rt.malloc(size, NORMAL_ONLY) for _ in range(5)]
    assert len(set(ptrs)) == 5
    assert all(p % 64 == 0 for p in ptrs)


@pytest.mark.parametrize("policy", [HUGE_ONLY, HUGE_FIRST])
def test_malloc_huge_base_is_2mib_aligned(rt, policy):
    """aclrtMalloc: huge-page allocations start on a 2 MiB boundary (after a small normal allocation)."""
    rt.malloc(100, NORMAL_ONLY)
    p = rt.malloc(3 * MiB, policy)
    assert p % (2 * MiB) == 0


def test_malloc_huge1g_base_is_1gib_aligned(rt):
    """aclrtMalloc: 1 GiB-page allocations start on a 1 GiB boundary."""
    rt.malloc(100, NORMAL_ONLY)
    p = rt.malloc(1, HUGE1G_ONLY)
    assert p % GiB == 0


def test_malloc_device_windows_differ_per_device(rt):
    """address windows / aclrtPointerGetAttributes: each device has its own address window; pointer_get_attributes
    reports the device."""
    p0 = rt.malloc(4096, NORMAL_ONLY)
    rt.set_device(1)
    p1 = rt.malloc(4096, NORMAL_ONLY)
    rt.set_device(0)
    assert (p0 - DEVICE_BASE) // DEVICE_WINDOW == 0
    assert (p1 - DEVICE_BASE) // DEVICE_WINDOW == 1
    assert rt.pointer_get_attributes(p0).id == 0
    assert rt.pointer_get_attributes(p1).id == 1
    # each device's memory is accounted separately
    assert rt.get_mem_info(HBM_MEM)[0] == rt.product.memory_bytes - 4128


def test_malloc_60gib_untouched_costs_no_ram_and_can_be_freed(rt):
    """address windows / aclrtMalloc: device memory is backed on first touch, so an untouched 60 GiB allocation costs
    (almost) no host RAM; it is accounted in get_mem_info and frees cleanly."""
    free0, total = rt.get_mem_info(HBM_MEM)
    rss0 = rss_bytes()
    p = rt.malloc(60 * GiB, HUGE_FIRST)
    assert rss_bytes() - rss0 < 200 * MiB
    assert free0 - rt.get_mem_info(HBM_MEM)[0] == 60 * GiB + 2 * MiB  # padded, 2 MiB-rounded
    assert rt.pointer_get_attributes(p + 59 * GiB).type == LOC_DEVICE
    rt.free(p)
    assert rss_bytes() - rss0 < 200 * MiB
    assert rt.get_mem_info(HBM_MEM) == (free0, total)


# ---------------------------------------------------------------------------
# aclrtFree (docs/conformance/memory_copies_fills.md#allocation)
# ---------------------------------------------------------------------------

def test_free_null_is_invalid_param(rt):
    """free: aclrtFree(NULL) -> 100000."""
    assert code(rt.free, 0) == 100000


def test_free_non_base_pointer_is_107000(rt):
    """free: a pointer that is not the start of an allocation is foreign -> 107000 (suggested)."""
    p = rt.malloc(4096, NORMAL_ONLY)
    assert code(rt.free, p + 64) == 107000
    rt.free(p)  # the allocation itself is untouched


def test_free_host_pointer_is_107000(rt):
    """free: aclrtFree of page-locked host memory or of pageable host memory -> 107000."""
    h = rt.malloc_host(4096)
    arr = np.zeros(64, dtype=np.uint8)
    assert code(rt.free, h) == 107000
    assert code(rt.free, host_ptr(rt, arr)) == 107000


def test_free_returns_memory_to_mem_info(rt):
    """free / aclrtGetMemInfo: freed memory is free again at once."""
    before = rt.get_mem_info(HBM_MEM)
    p = rt.malloc(5 * MiB, HUGE_FIRST)
    q = rt.malloc(1000, NORMAL_ONLY)
    assert rt.get_mem_info(HBM_MEM)[0] < before[0]
    rt.free(p)
    rt.free(q)
    assert rt.get_mem_info(HBM_MEM) == before


def test_free_twice_is_107000(rt):
    """free: the second aclrtFree of a pointer is a foreign pointer -> 107000."""
    p = rt.malloc(4096, NORMAL_ONLY)
    rt.free(p)
    before = rt.get_mem_info(HBM_MEM)
    assert code(rt.free, p) == 107000
    assert rt.get_mem_info(HBM_MEM) == before


def test_freed_address_can_be_reused(rt):
    """free: freeing makes the address range available again; allocate the whole device twice."""
    total = rt.product.memory_bytes
    p = rt.malloc(total - 32, NORMAL_ONLY)
    rt.free(p)
    q = rt.malloc(total - 32, NORMAL_ONLY)
    assert q != 0


# ---------------------------------------------------------------------------
# aclrtMallocHost / aclrtFreeHost (docs/conformance/memory_copies_fills.md#allocation)
# ---------------------------------------------------------------------------

def test_malloc_host_size_zero_is_invalid_param(rt):
    """aclrtMallocHost ACL chain: size 0 -> 100000."""
    assert code(rt.malloc_host, 0) == 100000


def test_malloc_host_without_context_is_107002(fresh):
    """aclrtMallocHost runtime: no context -> 107002."""
    rt = fresh("910B")
    assert code(rt.malloc_host, 4096) == 107002


@pytest.mark.parametrize("size", [1, 33, 100, 4096, 5000])
def test_malloc_host_is_64_byte_aligned(rt, size):
    """aclrtMallocHost: page-locked memory is 64-byte aligned, reported as HOST."""
    ptrs = [rt.malloc_host(size) for _ in range(4)]
    assert all(p % 64 == 0 for p in ptrs)
    assert all(rt.pointer_get_attributes(p).type == LOC_HOST for p in ptrs)


def test_malloc_host_does_not_use_device_memory(rt):
    """aclrtMallocHost / aclrtGetMemInfo: page-locked host memory is not device memory: get_mem_info does not move."""
    before = rt.get_mem_info(HBM_MEM)
    rt.malloc_host(4 * MiB)
    assert rt.get_mem_info(HBM_MEM) == before


def test_malloc_host_is_zero_copy_through_ptr_to_numpy(rt):
    """aclrtMallocHost / pyACL acl.util.ptr_to_numpy: the array views the page-locked memory itself: writing the
    array is seen by a memcpy from the pointer, and a memcpy into the pointer is seen by the array."""
    n = 256
    h = rt.malloc_host(n)
    view = acl.util.ptr_to_numpy(h, (n,), NPY_UINT8)
    view[:] = np.arange(n, dtype=np.uint8)
    out = np.zeros(n, dtype=np.uint8)
    rt.memcpy(host_ptr(rt, out), n, h, n, H2H)
    assert np.array_equal(out, np.arange(n, dtype=np.uint8))
    src = np.full(n, 0xA5, dtype=np.uint8)
    rt.memcpy(h, n, host_ptr(rt, src), n, H2H)
    assert (view == 0xA5).all()


def test_free_host_device_pointer_is_107000(rt):
    """free: aclrtFreeHost of a DEVICE pointer -> 107000; the device memory stays allocated."""
    p = rt.malloc(4096, NORMAL_ONLY)
    before = rt.get_mem_info(HBM_MEM)
    assert code(rt.free_host, p) == 107000
    assert rt.get_mem_info(HBM_MEM) == before
    assert rt.pointer_get_attributes(p).type == LOC_DEVICE


def test_free_host_null_is_invalid_param(rt):
    """free: aclrtFreeHost(NULL) -> 100000."""
    assert code(rt.free_host, 0) == 100000


def test_free_host_then_pointer_is_no_longer_host_memory(rt):
    """free: freeing page-locked memory forgets it: a second FreeHost fails and the address no longer
    reports HOST."""
    h = rt.malloc_host(4096)
    rt.free_host(h)
    assert rt.pointer_get_attributes(h).type != LOC_HOST
    assert code(rt.free_host, h) == 107000


# ---------------------------------------------------------------------------
# aclrtGetMemInfo (docs/conformance/memory_copies_fills.md#allocation)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("attr", [18, 19, 100, -1])
def test_get_mem_info_attr_out_of_range_is_107016(rt, attr):
    """aclrtGetMemInfo: attr outside 0..17 -> 107016 (INVALID_MEMORY_TYPE)."""
    assert code(rt.get_mem_info, attr) == 107016


def test_get_mem_info_without_context_is_107002(fresh):
    """aclrtGetMemInfo: no context -> 107002 (after the attribute check)."""
    rt = fresh("910B")
    assert code(rt.get_mem_info, HBM_MEM) == 107002
    assert code(rt.get_mem_info, 18) == 107016


def test_get_mem_info_free_and_total_move_with_allocations(rt):
    """aclrtGetMemInfo: free drops by what aclrtMalloc takes and comes back on aclrtFree; total stays."""
    free0, total0 = rt.get_mem_info(HBM_MEM)
    p = rt.malloc(10 * MiB, HUGE_FIRST)
    free1, total1 = rt.get_mem_info(HBM_MEM)
    assert total1 == total0
    assert free0 - free1 == 10 * MiB + 2 * MiB  # 10 MiB + 32 rounded to 2 MiB
    rt.free(p)
    assert rt.get_mem_info(HBM_MEM) == (free0, total0)


def test_get_mem_info_hbm_product_ddr_attribute_is_zero(rt):
    """aclrtGetMemInfo: on 910B (HBM) the DDR attribute is unsupported: 0/0; HBM reports the device memory."""
    assert rt.get_mem_info(DDR_MEM) == (0, 0)
    assert rt.get_mem_info(HBM_MEM) == (rt.product.memory_bytes, rt.product.memory_bytes)


def test_get_mem_info_ddr_product_hbm_attribute_returns_ddr_values(fresh):
    """aclrtGetMemInfo: on hardware without HBM (310P, DDR) HBM queries return the DDR values."""
    rt = fresh("310P")
    rt.set_device(0)
    rt.malloc(3 * MiB, NORMAL_ONLY)
    ddr = rt.get_mem_info(DDR_MEM)
    assert ddr == (rt.product.memory_bytes - (3 * MiB + 32), rt.product.memory_bytes)
    assert rt.get_mem_info(HBM_MEM) == ddr


@pytest.mark.parametrize("product", ["910B", "310P", "950PR", "A3"])
def test_get_mem_info_total_equals_config_memory_bytes(fresh, product):
    """aclrtGetMemInfo: total is the device memory of the product config."""
    rt = fresh(product)
    rt.set_device(0)
    assert rt.get_mem_info(HBM_MEM)[1] == rt.product.memory_bytes


def test_get_mem_info_is_per_device(rt):
    """aclrtGetMemInfo: get_mem_info reports the current device; allocating on device 1 does not move device 0."""
    before = rt.get_mem_info(HBM_MEM)
    rt.set_device(1)
    rt.malloc(4 * MiB, HUGE_ONLY)  # 4 MiB + 32 padded -> 6 MiB of huge pages
    assert rt.get_mem_info(HBM_MEM)[0] == before[0] - 6 * MiB
    rt.set_device(0)
    assert rt.get_mem_info(HBM_MEM) == before


def test_get_mem_info_facade_returns_free_total_ret(acl):
    """pyACL: free, total, ret = acl.rt.get_mem_info(attr); a failure keeps the tuple shape."""
    assert acl.rt.set_device(0) == 0
    free, total, ret = acl.rt.get_mem_info(HBM_MEM)
    assert ret == 0 and free == total > 0
    *_, ret = acl.rt.get_mem_info(18)
    assert ret == 107016


# ---------------------------------------------------------------------------
# aclrtPointerGetAttributes (docs/conformance/memory_copies_fills.md#allocation;
# docs/conformance/memory_copies_fills.md#copies)
# ---------------------------------------------------------------------------

def test_pointer_get_attributes_null_is_invalid_param(rt):
    """aclrtPointerGetAttributes: ptr null -> 100000 (UT aclrtPointerGetAttributes_failed01 of
    hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp)."""
    assert code(rt.pointer_get_attributes, 0) == 100000


def test_pointer_get_attributes_device_normal_pages(rt):
    """aclrtPointerGetAttributes / locations: aclrtMalloc memory is DEVICE(1) with the device id and 4 KiB pages, at any
    address inside the allocation."""
    p = rt.malloc(8192, NORMAL_ONLY)
    for addr in (p, p + 100, p + 8191):
        a = rt.pointer_get_attributes(addr)
        assert (a.type, a.id, a.page_size) == (LOC_DEVICE, 0, 4096)


def test_pointer_get_attributes_device_huge_pages(rt):
    """aclrtPointerGetAttributes: a huge-page allocation reports a 2 MiB page size."""
    p = rt.malloc(4 * MiB, HUGE_FIRST)
    a = rt.pointer_get_attributes(p)
    assert (a.type, a.id, a.page_size) == (LOC_DEVICE, 0, 2 * MiB)


def test_pointer_get_attributes_device_id_of_device_1(rt):
    """aclrtPointerGetAttributes: id is the user-visible device id of the memory, whatever the current device."""
    rt.set_device(1)
    p = rt.malloc(4096, NORMAL_ONLY)
    rt.set_device(0)
    a = rt.pointer_get_attributes(p)
    assert (a.type, a.id) == (LOC_DEVICE, 1)


def test_pointer_get_attributes_id_is_user_visible_device_id(fresh, monkeypatch):
    """aclrtPointerGetAttributes: id is the user-visible device id: with ASCEND_RT_VISIBLE_DEVICES=3,5, memory
    allocated on visible device 1 (physical 5) reports id 1."""
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "3,5")
    rt = fresh("910B")
    rt.set_device(1)
    p = rt.malloc(4096, NORMAL_ONLY)
    assert rt.pointer_get_attributes(p).id == 1


def test_pointer_get_attributes_needs_no_context(fresh):
    """aclrtPointerGetAttributes: no context is needed (a pageable pointer in a runtime without any device set)."""
    rt = fresh("910B")
    arr = np.zeros(16, dtype=np.uint8)
    assert rt.pointer_get_attributes(host_ptr(rt, arr)).type == LOC_UNREGISTERED


def test_pointer_get_attributes_malloc_host_is_host_id_0(rt):
    """aclrtPointerGetAttributes / locations: aclrtMallocHost memory is HOST(0), id 0."""
    rt.set_device(1)
    h = rt.malloc_host(4096)
    a = rt.pointer_get_attributes(h + 10)
    assert (a.type, a.id) == (LOC_HOST, 0)


def test_pointer_get_attributes_pageable_is_unregistered(rt):
    """locations: malloc/new memory (numpy_to_ptr, bytes_to_ptr) is UNREGISTERED(2)."""
    arr = np.zeros(4096, dtype=np.uint8)
    data = bytes(128)
    for p in (acl.util.numpy_to_ptr(arr), acl.util.bytes_to_ptr(data)):
        a = rt.pointer_get_attributes(p)
        assert (a.type, a.id) == (LOC_UNREGISTERED, 0)


@pytest.mark.parametrize("where", ["freed", "gap", "other_window"])
def test_pointer_get_attributes_device_window_outside_allocations_is_107000(rt, where):
    """aclrtPointerGetAttributes: an address in a device window but in no allocation is an unknown memory type ->
    107000."""
    p = rt.malloc(4096, NORMAL_ONLY)
    if where == "freed":
        rt.free(p)
        addr = p
    elif where == "gap":
        addr = p + 1 * GiB
    else:
        addr = DEVICE_BASE + 5 * DEVICE_WINDOW + 4096
    assert code(rt.pointer_get_attributes, addr) == 107000


def test_pointer_get_attributes_facade_dict_shape(acl):
    """pyACL: rt.pointer_get_attributes(ptr) -> ({"location": {"id", "type"}, "page_size", "rsv"}, ret)."""
    acl.rt.set_device(0)
    p, ret = acl.rt.malloc(4 * MiB, HUGE_FIRST)
    assert ret == 0
    attrs, ret = acl.rt.pointer_get_attributes(p)
    assert ret == 0
    assert set(attrs) == {"location", "page_size", "rsv"}
    assert attrs["location"] == {"id": 0, "type": LOC_DEVICE}
    assert attrs["page_size"] == 2 * MiB
    h, ret = acl.rt.malloc_host(64)
    attrs, ret = acl.rt.pointer_get_attributes(h)
    assert ret == 0 and attrs["location"] == {"id": 0, "type": LOC_HOST}
    _, ret = acl.rt.pointer_get_attributes(0)
    assert ret == 100000


# ---------------------------------------------------------------------------
# Pageable host memory and acl.util (pyACL; docs/conformance/memory_copies_fills.md#copies)
# ---------------------------------------------------------------------------

def test_numpy_to_ptr_returns_the_array_address(rt):
    """pyACL numpy_to_ptr: the array's own data address, no copy."""
    arr = np.arange(100, dtype=np.int32)
    assert acl.util.numpy_to_ptr(arr) == arr.ctypes.data


def test_bytes_to_ptr_returns_the_bytes_buffer_address(rt):
    """pyACL bytes_to_ptr: the address of the bytes object's internal buffer."""
    data = b"\x01\x02\x03\x04" * 16
    assert acl.util.bytes_to_ptr(data) == ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value


def test_bytes_to_ptr_runtime_writes_into_bytes_object(rt):
    """pyACL copy_data_as_numpy pattern: D2H into the buffer of a bytes object obtained by
    bytes_to_ptr, then read the bytes object back."""
    n = 4096
    dev = rt.malloc(n, NORMAL_ONLY)
    src = np.arange(n // 4, dtype=np.int32)
    rt.memcpy(dev, n, acl.util.numpy_to_ptr(src), n, H2D)
    data = bytes(n)
    ret = acl.rt.memcpy(acl.util.bytes_to_ptr(data), n, dev, n, D2H)
    assert ret == 0
    assert np.array_equal(np.frombuffer(data, dtype=np.int32), src)


def test_numpy_to_ptr_is_no_copy(rt):
    """pyACL numpy_to_ptr: a copy into the pointer lands in the array itself."""
    n = 512
    arr = np.zeros(n, dtype=np.uint8)
    dev = rt.malloc(n, NORMAL_ONLY)
    rt.memset(dev, n, 0x3C, n)
    rt.memcpy(acl.util.numpy_to_ptr(arr), n, dev, n, D2H)
    assert (arr == 0x3C).all()


def test_ptr_to_numpy_is_writable_zero_copy_view(rt):
    """pyACL ptr_to_numpy: a writable ndarray over ptr, no copy (pageable memory)."""
    arr = np.zeros(64, dtype=np.float32)
    p = acl.util.numpy_to_ptr(arr)
    view = acl.util.ptr_to_numpy(p, (8, 8), 11)
    assert view.shape == (8, 8) and view.dtype == np.float32 and view.flags.writeable
    view[2, 3] = 1.5
    assert arr[2 * 8 + 3] == 1.5
    arr[0] = -7.0
    assert view[0, 0] == -7.0


def test_ptr_to_bytes_copies(rt):
    """pyACL ptr_to_bytes: a new bytes object copied from ptr; later writes do not change it."""
    h = rt.malloc_host(16)
    view = acl.util.ptr_to_numpy(h, (16,), NPY_UINT8)
    view[:] = np.arange(16, dtype=np.uint8)
    b = acl.util.ptr_to_bytes(h, 16)
    assert isinstance(b, bytes) and b == bytes(range(16))
    view[:] = 0
    assert b == bytes(range(16))


@pytest.mark.parametrize("obj", [bytearray(16), memoryview(b"abc"), "text", np.zeros(4, np.uint8)])
def test_bytes_to_ptr_of_non_bytes_raises_value_error(rt, obj):
    """pyACL bytes_to_ptr: anything but bytes raises ValueError."""
    with pytest.raises(ValueError):
        acl.util.bytes_to_ptr(obj)


@pytest.mark.parametrize("obj", [[1, 2, 3], b"abc", 12345, None])
def test_numpy_to_ptr_of_non_array_raises_type_error(rt, obj):
    """pyACL numpy_to_ptr: a non-ndarray cannot be parsed -> TypeError."""
    with pytest.raises(TypeError):
        acl.util.numpy_to_ptr(obj)


def test_memcpy_from_unknown_ctypes_buffer_is_invalid_param(rt):
    """Pageable memory: a host address inside no known region (a ctypes buffer never shown to the
    runtime) is refused with 100000, the error message names the address in hex, and the runtime
    keeps working."""
    buf = ctypes.create_string_buffer(b"x" * 64, 64)
    addr = ctypes.addressof(buf)
    dev = rt.malloc(64, NORMAL_ONLY)
    assert acl.rt.memcpy(dev, 64, addr, 64, H2D) == 100000
    assert f"0x{addr:x}" in acl.get_recent_err_msg()
    assert acl.rt.memcpy(addr, 64, dev, 64, D2H) == 100000
    assert buf.raw == b"x" * 64
    # still alive: a valid copy works afterwards
    src = np.full(64, 9, dtype=np.uint8)
    rt.memcpy(dev, 64, acl.util.numpy_to_ptr(src), 64, H2D)
    assert (read_device(rt, dev, 64) == 9).all()


def test_memcpy_from_address_past_known_array_is_invalid_param(rt):
    """Pageable memory: arr.ctypes.data + arr.nbytes + 4096 is inside no region: 100000, the message
    names the address, nothing is dereferenced."""
    arr = np.ones(256, dtype=np.uint8)
    acl.util.numpy_to_ptr(arr)
    addr = arr.ctypes.data + arr.nbytes + 4096
    dev = rt.malloc(256, NORMAL_ONLY)
    rt.memset(dev, 256, 0x11, 256)
    assert acl.rt.memcpy(dev, 256, addr, 256, H2D) == 100000
    assert f"0x{addr:x}" in acl.get_recent_err_msg()
    assert acl.rt.memcpy_async(addr, 256, dev, 256, D2H, 0) == 100000
    assert acl.rt.synchronize_stream(0) == 0
    assert (read_device(rt, dev, 256) == 0x11).all()


def test_memcpy_past_end_of_device_allocation_is_invalid_param(rt):
    """Pageable memory / aclrtMalloc: a copy running past the end of a device allocation -> 100000, and
    neither the device memory nor the host buffer changes."""
    dev = rt.malloc(4096, NORMAL_ONLY)  # 4096 + 32 bytes
    rt.memset(dev, 4096, 0x22, 4096)
    src = np.full(8192, 0x77, dtype=np.uint8)
    p = acl.util.numpy_to_ptr(src)
    assert code(rt.memcpy, dev, 8192, p, 8192, H2D) == 100000
    assert code(rt.memcpy, dev + 4000, 8192, p, 200, H2D) == 100000
    assert code(rt.memcpy_async, dev, 8192, p, 8192, H2D, 0) == 100000
    rt.synchronize_stream(0)
    assert (read_device(rt, dev, 4096) == 0x22).all()
    assert (src == 0x77).all()


def test_memcpy_past_end_of_host_allocation_is_invalid_param(rt):
    """Pageable memory / aclrtMallocHost: a copy running past the end of a page-locked or pageable host buffer
    -> 100000, and neither buffer changes."""
    dev = rt.malloc(8192, NORMAL_ONLY)
    rt.memset(dev, 8192, 0x55, 8192)
    h = rt.malloc_host(4096)
    hview = acl.util.ptr_to_numpy(h, (4096,), NPY_UINT8)
    hview[:] = 1
    arr = np.full(100, 2, dtype=np.uint8)
    assert code(rt.memcpy, h, 8192, dev, 8192, D2H) == 100000
    assert code(rt.memcpy, acl.util.numpy_to_ptr(arr), 200, dev, 200, D2H) == 100000
    assert code(rt.memcpy, dev, 8192, h, 5000, H2D) == 100000
    assert (hview == 1).all()
    assert (arr == 2).all()
    assert (read_device(rt, dev, 8192) == 0x55).all()


def test_views_of_one_array_resolve_inside_the_same_region(rt):
    """Pageable memory: numpy_to_ptr of a view (arr[10:]) is an address inside the array's region:
    a copy into it lands in the array, a copy across the view's end but inside the array works."""
    arr = np.zeros(100, dtype=np.uint8)
    whole = acl.util.numpy_to_ptr(arr)
    part = acl.util.numpy_to_ptr(arr[10:])
    assert part == whole + 10
    assert rt.space.find(part) is rt.space.find(whole)
    src = np.arange(1, 91, dtype=np.uint8)
    rt.memcpy(part, 90, acl.util.numpy_to_ptr(src), 90, H2H)
    assert np.array_equal(arr[10:], src) and (arr[:10] == 0).all()


def test_view_shown_before_its_array_registers_the_whole_array(rt):
    """Pageable memory: showing a view first makes the whole underlying buffer known, so the array's
    own address (before the view's start) is usable too."""
    arr = np.zeros(64, dtype=np.uint8)
    part = acl.util.numpy_to_ptr(arr[32:])
    src = np.full(64, 4, dtype=np.uint8)
    rt.memcpy(arr.ctypes.data, 64, acl.util.numpy_to_ptr(src), 64, H2H)
    assert (arr == 4).all()
    assert part == arr.ctypes.data + 32


def test_malloc_host_beyond_what_the_host_can_hold_is_207001(rt):
    """aclrtMallocHost: an allocation the host cannot back fails with ACL_ERROR_RT_MEMORY_ALLOCATION, not a Python
    error."""
    assert code(rt.malloc_host, 1 << 63) == 207001
    assert code(rt.malloc_host, (1 << 64) - 64) == 207001
