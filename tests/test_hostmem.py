"""Allocation with configs and host memory registration (docs/conformance/memory_copies_fills.md#allocation,
docs/conformance/hostmem_peer_capture.md#host-registration;
hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md).

aclrtMallocWithCfg, aclrtMallocHostWithCfg, aclrtHostRegister, aclrtHostRegisterV2,
aclrtHostGetDevicePointer and aclrtHostUnregister: their check chains with exact
codes, what a registration changes (the device alias shares the host bytes; registered pageable memory counts as
HOST so its async copies stay asynchronous), and product support (docs/conformance/products.md, with the runtime's
host-register flag on 910). "⚠ docs" marks where the API reference and the source disagree. "UT <name>" is the
test <name> of the runtime's own unit tests: hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp, or for
host_register_*, host_unregister_* and rtsMallocHost_*
hicann/runtime tests/ut/runtime/runtime/test/platform/910B/rt_utest_api_memory.cc.
"""
from __future__ import annotations

import numpy as np
import pytest

import emu.acl as acl
from emu import AclError
from helpers import code, device, peek, pinned, read_device

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

KiB = 1 << 10
H2D, D2H, D2D = 1, 2, 3
HUGE_FIRST, NORMAL_ONLY = 0, 2
HBM_MEM = 1
NPY_UINT8 = 2
OLD = 0xEE
ATTR_RSV, ATTR_MODULE_ID, ATTR_DEVICE_ID, ATTR_VA_FLAG = 0, 1, 2, 3
HOST_REGISTER_MAPPED, HOST_REGISTER_IOMEMORY, HOST_REGISTER_READONLY = 0, 0x4, 0x8
REG_MAPPED, REG_IOMEMORY, REG_READONLY, REG_PINNED = 0x2, 0x4, 0x8, 0x10000000
LOC_HOST, LOC_DEVICE, LOC_UNREGISTERED = 0, 1, 2


def on(fresh, product):
    r = fresh(product)
    r.set_device(0)
    return r


def pattern(n, seed=0):
    return np.resize(((np.arange(251) * 7 + seed * 31 + 1) % 251).astype(np.uint8), n)


def attr(a, value=0):
    return {"attr": a, "value": value}


def pinned_with_va(rt, n):
    """Page-locked memory from aclrtMallocHostWithCfg with VA_FLAG = 1, and its numpy view."""
    h = rt.malloc_host_with_cfg(n, [attr(ATTR_VA_FLAG, 1)])
    return h, acl.util.ptr_to_numpy(h, (n,), NPY_UINT8)


def pageable(n, fill=OLD):
    """Pageable host memory (a numpy array shown with numpy_to_ptr) and the array."""
    arr = np.full(n, fill, dtype=np.uint8)
    return acl.util.numpy_to_ptr(arr), arr


def used(rt):
    free, total = rt.get_mem_info(HBM_MEM)
    return total - free


# ---------------------------------------------------------------------------
# aclrtMallocWithCfg (docs/conformance/memory_copies_fills.md#allocation)
# ---------------------------------------------------------------------------

def test_malloc_with_cfg_size_zero_is_invalid_param(rt):
    """aclrtMallocWithCfg: ACL layer: size 0 -> 100000."""
    assert code(rt.malloc_with_cfg, 0, HUGE_FIRST, None) == 100000
    assert acl.rt.malloc_with_cfg(0, HUGE_FIRST, None) == (0, 100000)


def test_malloc_with_cfg_empty_config_is_107000(rt):
    """aclrtMallocWithCfg / ⚠ docs: cfg = {attrs NULL, numAttrs 0} (pyACL: []) passes the ACL layer (UT
    aclrtMallocWithCfg_with_invalid_cfg_num accepts it only because the runtime is mocked) but the runtime returns
    107000. Following the runtime."""
    assert code(rt.malloc_with_cfg, 1024, HUGE_FIRST, []) == 107000


def test_malloc_with_cfg_no_config_is_ok(rt):
    """aclrtMallocWithCfg: a null cfg is no configuration: the allocation is device memory of the current device."""
    p = rt.malloc_with_cfg(1024, HUGE_FIRST, None)
    a = rt.pointer_get_attributes(p)
    assert (a.type, a.id) == (LOC_DEVICE, 0)


def test_malloc_with_cfg_device_id_must_be_current_device(rt):
    """aclrtMallocWithCfg: DEVICE_ID must equal the current device, else 107000 (checked on device 1)."""
    rt.set_device(1)
    assert code(rt.malloc_with_cfg, 1024, HUGE_FIRST, [attr(ATTR_DEVICE_ID, 0)]) == 107000
    assert code(rt.malloc_with_cfg, 1024, HUGE_FIRST, [attr(ATTR_DEVICE_ID, 2)]) == 107000
    p, ret = acl.rt.malloc_with_cfg(1024, HUGE_FIRST, [attr(ATTR_DEVICE_ID, 1)])
    assert ret == 0
    a = rt.pointer_get_attributes(p)
    assert (a.type, a.id) == (LOC_DEVICE, 1)


def test_malloc_with_cfg_duplicate_device_id_mismatch_last_is_107000(rt):
    """aclrtMallocWithCfg: the last duplicate wins: [DEVICE_ID 0, DEVICE_ID 1] on device 0 ends with 1 -> 107000."""
    cfg = [attr(ATTR_DEVICE_ID, 0), attr(ATTR_DEVICE_ID, 1)]
    assert code(rt.malloc_with_cfg, 1024, HUGE_FIRST, cfg) == 107000


def test_malloc_with_cfg_duplicate_device_id_last_wins(rt):
    """aclrtMallocWithCfg (hicann/runtime src/runtime/api/impl/api_impl.cc ParseMallocCfg): attributes are parsed
    first, the last duplicate winning, and the device check is made on the result: [DEVICE_ID 1, DEVICE_ID 0] on
    device 0 is device 0 -> ok."""
    p, ret = acl.rt.malloc_with_cfg(1024, HUGE_FIRST, [attr(ATTR_DEVICE_ID, 1), attr(ATTR_DEVICE_ID, 0)])
    assert ret == 0
    assert rt.pointer_get_attributes(p).id == 0


@pytest.mark.parametrize("value", [0, 1])
def test_malloc_with_cfg_va_flag_is_107000(rt, value):
    """aclrtMallocWithCfg: any attribute other than RSV, MODULE_ID, DEVICE_ID -- including VA_FLAG -- -> 107000."""
    assert code(rt.malloc_with_cfg, 1024, HUGE_FIRST, [attr(ATTR_VA_FLAG, value)]) == 107000


def test_malloc_with_cfg_rsv_is_ignored(rt):
    """aclrtMallocWithCfg: RSV is ignored, whatever its value."""
    p, ret = acl.rt.malloc_with_cfg(1024, HUGE_FIRST, [attr(ATTR_RSV, 0xFFFF)])
    assert ret == 0 and rt.pointer_get_attributes(p).type == LOC_DEVICE


def test_malloc_with_cfg_module_id_is_accepted(rt):
    """aclrtMallocWithCfg / attributes: MODULE_ID is accepted (33 = APP recommended; larger values are clamped to
    APP)."""
    for module in (33, 0xFFFF):
        p, ret = acl.rt.malloc_with_cfg(1024, HUGE_FIRST, [attr(ATTR_MODULE_ID, module)])
        assert ret == 0 and p != 0


@pytest.mark.parametrize("size,expected", [(1, 32), (32, 32), (100, 128), (1000, 1024)])
def test_malloc_with_cfg_adds_no_padding(rt, size, expected):
    """aclrtMallocWithCfg: bytes = roundup(size, 32), no padding (aclrtMalloc adds 32 more on A2): the
    aclrtGetMemInfo delta of a small NORMAL_ONLY allocation."""
    before = used(rt)
    rt.malloc_with_cfg(size, NORMAL_ONLY, [attr(ATTR_MODULE_ID, 33)])
    assert used(rt) - before == expected
    before = used(rt)
    rt.malloc(size, NORMAL_ONLY)
    assert used(rt) - before == expected + 32


def test_malloc_with_cfg_unsupported_on_ipv350_is_207000(fresh):
    """aclrtMallocWithCfg / products: aclrtMallocWithCfg is not supported on IPV350 -> 207000."""
    on(fresh, "IPV350")
    assert acl.rt.malloc_with_cfg(1024, HUGE_FIRST, None) == (0, 207000)


# ---------------------------------------------------------------------------
# aclrtMallocHostWithCfg (docs/conformance/memory_copies_fills.md#allocation)
# ---------------------------------------------------------------------------

def test_malloc_host_with_cfg_size_zero_is_invalid_param(rt):
    """aclrtMallocHostWithCfg / UT aclrtMallocHostWithCfg_fail_with_invalid_0_size: aclrtMallocHostWithCfg(&p, 0,
    NULL) -> 100000."""
    assert code(rt.malloc_host_with_cfg, 0, None) == 100000
    assert acl.rt.malloc_host_with_cfg(0, None) == (0, 100000)


@pytest.mark.parametrize("a", [ATTR_RSV, ATTR_DEVICE_ID, 4])
def test_malloc_host_with_cfg_rsv_or_device_id_is_107000(rt, a):
    """aclrtMallocHostWithCfg / UT rtsMallocHost_001: only MODULE_ID and VA_FLAG are accepted; RSV or DEVICE_ID (or an
    unknown attribute 4) -> 107000."""
    assert code(rt.malloc_host_with_cfg, 1024, [attr(a, 0)]) == 107000


def test_malloc_host_with_cfg_empty_config_is_107000(rt):
    """aclrtMallocHostWithCfg / UT rtsMallocHost_001: cfg non-null with attrs NULL (pyACL: []) -> 107000."""
    assert code(rt.malloc_host_with_cfg, 1024, []) == 107000


@pytest.mark.parametrize("product", ["910B", "A3"])
def test_malloc_host_with_cfg_va_flag_ok_on_a2_a3(fresh, product):
    """aclrtMallocHostWithCfg / attributes: VA_FLAG = 1 is supported on A2 and A3: page-locked HOST memory, 64-byte
    aligned."""
    r = on(fresh, product)
    h, ret = acl.rt.malloc_host_with_cfg(1000, [attr(ATTR_VA_FLAG, 1)])
    assert ret == 0
    assert h % 64 == 0
    assert r.pointer_get_attributes(h).type == LOC_HOST


def test_malloc_host_with_cfg_va_flag_on_950_is_207000(fresh):
    """aclrtMallocHostWithCfg / attributes: VA_FLAG is A2/A3 only; on 950 the driver lacks it -> 207000."""
    on(fresh, "950PR")
    assert acl.rt.malloc_host_with_cfg(1024, [attr(ATTR_VA_FLAG, 1)]) == (0, 207000)


def test_malloc_host_with_cfg_module_id_is_accepted(rt):
    """aclrtMallocHostWithCfg: MODULE_ID is accepted."""
    h, ret = acl.rt.malloc_host_with_cfg(1024, [attr(ATTR_MODULE_ID, 33)])
    assert ret == 0 and rt.pointer_get_attributes(h).type == LOC_HOST


def test_malloc_host_with_cfg_unsupported_on_ipv350_is_207000(fresh):
    """aclrtMallocHostWithCfg / products: not supported on IPV350 -> 207000."""
    on(fresh, "IPV350")
    assert acl.rt.malloc_host_with_cfg(1024, None) == (0, 207000)


# ---------------------------------------------------------------------------
# aclrtHostRegister (docs/conformance/hostmem_peer_capture.md#host-registration)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("ptr_null,size", [(True, 64), (False, 0)])
def test_host_register_null_or_size_zero_is_invalid_param(rt, ptr_null, size):
    """registration / UT aclrtHostRegister_failed02: ACL layer: ptr null or size 0 -> 100000."""
    p, _ = pageable(64)
    assert acl.rt.host_register(0 if ptr_null else p, size, HOST_REGISTER_MAPPED) == (0, 100000)


@pytest.mark.parametrize("type_", [0x1, 0x2, 0x10, 0x100, 0x10000000])
def test_host_register_type_bits_outside_0xc_is_207000(rt, type_):
    """registration: type & ~0xC != 0 -> 207000."""
    p, _ = pageable(64)
    assert code(rt.host_register, p, 64, type_) == 207000


@pytest.mark.parametrize("type_", [HOST_REGISTER_MAPPED, HOST_REGISTER_IOMEMORY, HOST_REGISTER_READONLY,
                                   HOST_REGISTER_IOMEMORY | HOST_REGISTER_READONLY])
def test_host_register_type_within_0xc_is_accepted(rt, type_):
    """registration / flags: MAPPED 0, IOMEMORY 0x4, READONLY 0x8 pass the type check."""
    p, _ = pageable(64)
    d, ret = acl.rt.host_register(p, 64, type_)
    assert ret == 0 and d != 0


@pytest.mark.parametrize("product", ["910B", "910"])
def test_host_register_returns_device_alias_sharing_host_bytes(fresh, product):
    """registration / hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md: *devPtr is a device alias
    (pointer_get_attributes: DEVICE; hicann/runtime docs/zh/api_ref/11-05_unified_addressing.md calls that query
    undefined, the emulator answers DEVICE) whose bytes are the host bytes: an H2D from another page-locked buffer or
    a D2D from device memory into the alias changes the host array; host writes are read back through it; a kernel
    reads and writes them. On 910 too: the runtime sets the host-register flag for cloud although the docs say N (⚠
    docs)."""
    r = on(fresh, product)
    n = 256
    p, arr = pageable(n, 0)
    d, ret = acl.rt.host_register(p, n, HOST_REGISTER_MAPPED)
    assert ret == 0 and d != p
    a = r.pointer_get_attributes(d)
    assert (a.type, a.id) == (LOC_DEVICE, 0)
    h, hv = pinned(r, n)
    hv[:] = pattern(n, 1)
    r.memcpy(d, n, h, n, H2D)
    assert (arr == pattern(n, 1)).all()
    src = device(r, 64, 0)
    r.memcpy(src, 64, r.register_host(pattern(64, 2).copy()), 64, H2D)
    r.memcpy(d + 64, 64, src, 64, D2D)
    assert (arr[64:128] == pattern(64, 2)).all()
    arr[:] = pattern(n, 3)
    assert (read_device(r, d, n) == pattern(n, 3)).all()
    seen = []

    def kernel(view):
        seen.append(view.copy())
        view[:] ^= 0xFF

    s = r.create_stream()
    r.launch_kernel(kernel, [(d, n)], s, duration_us=5)
    r.synchronize_stream(s)
    assert (seen[0] == pattern(n, 3)).all()
    assert (arr == pattern(n, 3) ^ 0xFF).all()


def test_host_register_same_range_twice_is_507910(rt):
    """registration / UT host_register_duplicate_drv: registering a range already registered (MAPPED twice) ->
    507910."""
    p, _ = pageable(4 * KiB)
    rt.host_register(p, 4 * KiB, HOST_REGISTER_MAPPED)
    assert code(rt.host_register, p, 4 * KiB, HOST_REGISTER_MAPPED) == 507910
    assert acl.rt.host_register(p, 4 * KiB, HOST_REGISTER_MAPPED) == (0, 507910)


@pytest.mark.parametrize("product", ["310P", "200I_A2"])
def test_host_register_unsupported_product_is_207000(fresh, product):
    """registration / products: not supported on 310P and 200I/500A2 -> 207000."""
    on(fresh, product)
    p, _ = pageable(64)
    assert acl.rt.host_register(p, 64, HOST_REGISTER_MAPPED) == (0, 207000)


# ---------------------------------------------------------------------------
# aclrtHostRegisterV2 (docs/conformance/hostmem_peer_capture.md#host-registration)
# ---------------------------------------------------------------------------

def test_host_register_v2_iomemory_readonly_accepted(rt):
    """registration / UT aclrtHostRegisterV2_succ / ⚠ docs: aclrtHostRegisterV2(p, 1024, IOMEMORY|READONLY) -> 0. The
    doc calls these flags 'reserved, not supported'; the runtime accepts them, and so does the emulator."""
    p, _ = pageable(1024)
    assert acl.rt.host_register_v2(p, 1024, REG_IOMEMORY | REG_READONLY) == 0


@pytest.mark.parametrize("flag", [0, 0x1, 0x20, 0x20000000, REG_PINNED | 0x1, 0xFFFFFFFF])
def test_host_register_v2_flag_zero_or_unknown_bits_is_107000(rt, flag):
    """registration: flag must be a non-empty subset of {0x2, 0x4, 0x8, 0x10000000}, else 107000."""
    p, _ = pageable(1024)
    assert acl.rt.host_register_v2(p, 1024, flag) == 107000


@pytest.mark.parametrize("ptr_null,size", [(True, 64), (False, 0)])
def test_host_register_v2_null_or_size_zero_is_invalid_param(rt, ptr_null, size):
    """registration: ACL layer: ptr null or size 0 -> 100000."""
    p, _ = pageable(64)
    assert acl.rt.host_register_v2(0 if ptr_null else p, size, REG_PINNED) == 100000


@pytest.mark.parametrize("flag", [REG_PINNED, REG_MAPPED, REG_PINNED | REG_MAPPED])
def test_host_register_v2_same_ptr_twice_is_507910(rt, flag):
    """registration / UT host_register_v2_drv_already_registered: registering the same ptr twice -> 507910."""
    p, _ = pageable(1024)
    assert acl.rt.host_register_v2(p, 1024, flag) == 0
    assert acl.rt.host_register_v2(p, 1024, flag) == 507910


@pytest.mark.parametrize("offset", [0, 1])
def test_host_register_v2_pinned_then_pinned_mapped_is_507910(rt, offset):
    """registration / UT host_register_v2_sw_pin_then_pin_mapped_duplicate: PINNED, then MAPPED|PINNED at ptr and at
    ptr+1 (overlapping) -> 507910."""
    p, _ = pageable(1024)
    assert acl.rt.host_register_v2(p, 1024, REG_PINNED) == 0
    assert acl.rt.host_register_v2(p + offset, 1024 - offset, REG_PINNED | REG_MAPPED) == 507910


def test_host_register_v2_pageable_counts_as_host_until_unregistered(rt):
    """registration, effect on copies / locations / aclrtMemcpyAsync: registered pageable memory is HOST, so
    aclrtMemcpyAsync from it stays asynchronous (the destination still has its old bytes when the call returns). After
    aclrtHostUnregister it is UNREGISTERED again and the same async copy is synchronous."""
    n = 4 * KiB
    p, arr = pageable(n, 0)
    arr[:] = pattern(n, 1)
    assert rt.pointer_get_attributes(p).type == LOC_UNREGISTERED
    rt.host_register_v2(p, n, REG_PINNED)
    assert rt.pointer_get_attributes(p).type == LOC_HOST
    assert rt.pointer_get_attributes(p + 100).type == LOC_HOST
    d = device(rt, n)
    s = rt.create_stream()
    rt.memcpy_async(d, n, p, n, H2D, s)
    assert (peek(rt, d, n) == OLD).all()
    rt.synchronize_stream(s)
    assert (peek(rt, d, n) == pattern(n, 1)).all()
    rt.host_unregister(p)
    assert rt.pointer_get_attributes(p).type == LOC_UNREGISTERED
    arr[:] = pattern(n, 2)
    rt.memcpy_async(d, n, p, n, H2D, s)
    assert (peek(rt, d, n) == pattern(n, 2)).all()


@pytest.mark.parametrize("product", ["310P", "200I_A2", "IPV350"])
def test_host_register_v2_unsupported_product_is_207000(fresh, product):
    """registration / products: a mapping on 310P, 200I/500A2 and IPV350 -> 207000 (NpuDriver::HostRegister's chip
    check; PINNED alone never reaches the driver, see test_conformance_hostmem_peer_capture)."""
    on(fresh, product)
    p, _ = pageable(1024)
    assert acl.rt.host_register_v2(p, 1024, REG_PINNED | REG_MAPPED) == 207000


def test_host_register_v2_works_on_910(fresh):
    """registration / products / ⚠ docs: the docs mark host registration unsupported on 910 (Atlas training), but the
    runtime's host-register flag is set for cloud (910); following the runtime, V2 works there."""
    r = on(fresh, "910")
    p, arr = pageable(1024, 0)
    assert acl.rt.host_register_v2(p, 1024, REG_PINNED | REG_MAPPED) == 0
    assert r.pointer_get_attributes(p).type == LOC_HOST
    d, ret = acl.rt.host_get_device_pointer(p, 0)
    assert ret == 0
    arr[:] = pattern(1024)
    assert (read_device(r, d, 1024) == pattern(1024)).all()
    assert acl.rt.host_unregister(p) == 0


# ---------------------------------------------------------------------------
# aclrtHostGetDevicePointer (docs/conformance/hostmem_peer_capture.md#host-registration)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("flag", [1, 2, 0x80000000])
def test_host_get_device_pointer_flag_nonzero_is_invalid_param(rt, flag):
    """registration / UT aclrtHostGetDevicePointer_failed02: aclrtHostGetDevicePointer(p, &d, 1) -> 100000 (flag !=
    0), even for a mapped registration."""
    p, _ = pageable(1024)
    rt.host_register_v2(p, 1024, REG_MAPPED)
    assert acl.rt.host_get_device_pointer(p, flag) == (0, 100000)


def test_host_get_device_pointer_null_is_invalid_param(rt):
    """registration: ACL layer: pHost null -> 100000."""
    assert acl.rt.host_get_device_pointer(0, 0) == (0, 100000)


def test_host_get_device_pointer_not_registered_is_107000(rt):
    """registration: a pointer that is not registered -> 107000 (pageable memory and page-locked memory)."""
    p, _ = pageable(1024)
    assert acl.rt.host_get_device_pointer(p, 0) == (0, 107000)
    h, _ = pinned(rt, 1024)
    assert acl.rt.host_get_device_pointer(h, 0) == (0, 107000)


def test_host_get_device_pointer_after_v2_mapped_returns_alias(rt):
    """registration: after HostRegisterV2(MAPPED) the device pointer is the mapping's alias (DEVICE memory whose
    bytes are the host's); an interior host pointer gives alias + offset."""
    n = 1024
    p, arr = pageable(n, 0)
    arr[:] = pattern(n)
    rt.host_register_v2(p, n, REG_PINNED | REG_MAPPED)
    d, ret = acl.rt.host_get_device_pointer(p, 0)
    assert ret == 0 and d != p
    assert rt.pointer_get_attributes(d).type == LOC_DEVICE
    assert acl.rt.host_get_device_pointer(p + 100, 0) == (d + 100, 0)
    assert acl.rt.host_get_device_pointer(p + n - 1, 0) == (d + n - 1, 0)
    assert (read_device(rt, d + 100, 50) == pattern(n)[100:150]).all()


def test_host_get_device_pointer_after_host_register_is_its_alias(rt):
    """registration: aclrtHostRegister maps the range; HostGetDevicePointer returns the same device address
    (and alias + offset inside it)."""
    p, _ = pageable(1024)
    d = rt.host_register(p, 1024, HOST_REGISTER_MAPPED)
    assert acl.rt.host_get_device_pointer(p, 0) == (d, 0)
    assert acl.rt.host_get_device_pointer(p + 512, 0) == (d + 512, 0)


@pytest.mark.parametrize("product", ["910B", "A3"])
def test_host_get_device_pointer_va_flag_memory_equals_host_pointer(fresh, product):
    """aclrtMallocHostWithCfg / attributes / hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md: memory from
    aclrtMallocHostWithCfg with VA_FLAG = 1, registered with aclrtHostRegister, is VA-consistent: the device pointer
    equals the host pointer (from HostRegister and from HostGetDevicePointer). Without VA_FLAG the two differ."""
    on(fresh, product)
    h, ret = acl.rt.malloc_host_with_cfg(4 * KiB, [attr(ATTR_VA_FLAG, 1)])
    assert ret == 0
    assert acl.rt.host_register(h, 4 * KiB, HOST_REGISTER_MAPPED) == (h, 0)
    assert acl.rt.host_get_device_pointer(h, 0) == (h, 0)
    h2, _ = acl.rt.malloc_host_with_cfg(4 * KiB, [attr(ATTR_VA_FLAG, 0)])
    d2, ret = acl.rt.host_register(h2, 4 * KiB, HOST_REGISTER_MAPPED)
    assert ret == 0 and d2 != h2


def test_host_register_va_flag_device_pointer_usable_by_kernel(rt):
    """hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md / registration
    (hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md: *devPtr is for kernels): with VA_FLAG memory the
    device pointer is the host pointer, and a device task given it reads the host data."""
    n = 256
    h, view = pinned_with_va(rt, n)
    view[:] = pattern(n)
    d = rt.host_register(h, n, HOST_REGISTER_MAPPED)
    assert d == h
    seen = []
    s = rt.create_stream()
    rt.launch_kernel(lambda v: seen.append(v.copy()), [(d, n)], s, duration_us=5)
    rt.synchronize_stream(s)
    assert (seen[0] == pattern(n)).all()


def test_host_get_device_pointer_on_product_without_registration_is_107000(fresh):
    """registration / products: on 310P (no host registration) the answer is 107000, not 207000. Changed from 207000:
    the runtime has no chip gate on this path (ApiImpl::HostGetDevicePointer -> NpuDriver::HostGetDevPointer,
    falling back to the runtime's mapping table), so an unregistrable pointer is simply not mapped.
    The docs' N for 310P disagrees; the source wins."""
    on(fresh, "310P")
    p, _ = pageable(64)
    assert acl.rt.host_get_device_pointer(p, 0) == (0, 107000)


# ---------------------------------------------------------------------------
# aclrtHostUnregister (docs/conformance/hostmem_peer_capture.md#host-registration)
# ---------------------------------------------------------------------------

def test_host_unregister_null_is_invalid_param(rt):
    """registration: ACL layer: ptr null -> 100000."""
    assert acl.rt.host_unregister(0) == 100000


def test_host_unregister_never_registered_is_507911(rt):
    """registration / UT host_unregister_v2_drv_unregistered: unregistering a never-registered pointer -> 507911."""
    p, _ = pageable(1024)
    assert acl.rt.host_unregister(p) == 507911


def test_host_unregister_interior_pointer_is_507911(rt):
    """registration: software mode: ptr must be the exact base of a record, else 507911; the registration stays."""
    p, _ = pageable(1024)
    rt.host_register_v2(p, 1024, REG_PINNED | REG_MAPPED)
    assert acl.rt.host_unregister(p + 64) == 507911
    assert rt.pointer_get_attributes(p).type == LOC_HOST
    assert acl.rt.host_get_device_pointer(p, 0)[1] == 0


@pytest.mark.parametrize("how", ["v2_pinned", "v2_mapped", "register"])
def test_host_unregister_exact_base_is_0(rt, how):
    """registration: the exact base unregisters (0): the memory is UNREGISTERED again, it has no device pointer,
    a second unregister is 507911, and it can be registered again."""
    p, _ = pageable(1024)
    if how == "register":
        rt.host_register(p, 1024, HOST_REGISTER_MAPPED)
    else:
        rt.host_register_v2(p, 1024, REG_PINNED | (REG_MAPPED if how == "v2_mapped" else 0))
    assert acl.rt.host_unregister(p) == 0
    assert rt.pointer_get_attributes(p).type == LOC_UNREGISTERED
    assert acl.rt.host_get_device_pointer(p, 0) == (0, 107000)
    assert acl.rt.host_unregister(p) == 507911
    assert acl.rt.host_register_v2(p, 1024, REG_PINNED) == 0


def test_host_unregister_on_product_without_registration(fresh):
    """registration / products: on 310P an unregistered pointer is 507911 and a V2 PINNED-only range unregisters (0).
    Changed from 207000: in the runtime's software mode (ApiImpl::HostUnregister) only a mapped base
    reaches NpuDriver::HostUnregister, whose chip check is the only gate; the docs' N
    disagrees, the source wins."""
    on(fresh, "310P")
    p, _ = pageable(64)
    assert acl.rt.host_unregister(p) == 507911
    assert acl.rt.host_register_v2(p, 64, REG_PINNED) == 0
    assert acl.rt.host_unregister(p) == 0


# ---------------------------------------------------------------------------
# hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md: registered pageable memory used by a device task
# ---------------------------------------------------------------------------

def test_seed004_registered_memory_sample(acl):
    """hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md: malloc'd (pageable) memory registered with
    aclrtHostRegisterV2(PINNED|MAPPED), its device address from aclrtHostGetDevicePointer, a device task reading the
    host data through that address, then aclrtHostUnregister. Every call returns 0."""
    import emu.runtime as rt
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    size = 64 * KiB
    host = np.zeros(size, dtype=np.uint8)
    host_ptr = acl.util.numpy_to_ptr(host)
    assert acl.rt.host_register_v2(host_ptr, size, REG_PINNED | REG_MAPPED) == 0
    dev_ptr, ret = acl.rt.host_get_device_pointer(host_ptr, 0)
    assert ret == 0 and dev_ptr != host_ptr
    host[:] = pattern(size)
    seen = []
    assert acl.rt.launch_kernel(lambda v: seen.append(v.copy()), [(dev_ptr, size)], stream,
                                duration_us=20) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert len(seen) == 1 and (seen[0] == pattern(size)).all()
    assert acl.rt.host_unregister(host_ptr) == 0
    assert rt.pointer_get_attributes(host_ptr).type == LOC_UNREGISTERED
    assert acl.rt.destroy_stream(stream) == 0
    assert acl.rt.reset_device(0) == 0
    assert acl.finalize() == 0


# ---------------------------------------------------------------------------
# Order: the ACL layer's checks come before the runtime's product gate
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("call", ["register_size_0", "register_v2_null", "get_device_pointer_flag_1",
                                  "unregister_null"])
def test_host_register_acl_checks_come_before_product_gate(fresh, call):
    """call chain / product gate / registration / UT aclrtHostRegister_failed02, aclrtHostGetDevicePointer_failed02:
    ACL checks run before the runtime's chip-feature gate, so on 310P (no host registration) HostRegister(p, 0),
    HostRegisterV2(NULL), HostGetDevicePointer(p, flag 1) and HostUnregister(NULL) still return the ACL code 100000."""
    on(fresh, "310P")
    p, _ = pageable(64)
    result = {"register_size_0": lambda: acl.rt.host_register(p, 0, HOST_REGISTER_MAPPED)[1],
              "register_v2_null": lambda: acl.rt.host_register_v2(0, 64, REG_PINNED),
              "get_device_pointer_flag_1": lambda: acl.rt.host_get_device_pointer(p, 1)[1],
              "unregister_null": lambda: acl.rt.host_unregister(0)}[call]()
    assert result == 100000
