"""Conformance of allocation, copies and fills to the reference runtime (hicann/runtime 681ef7610).

One test per row of docs/conformance/memory_copies_fills.md, named after the rule; each docstring
cites the source function that makes it and any disagreement with the API reference
(hicann/runtime docs/zh/api_ref/); "UT <name>" is the test <name> of the runtime's own unit tests
(hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp; rts* and MemcpyKindAutoCorrect_01:
hicann/runtime tests/ut/runtime/runtime/test/platform/910B/rt_utest_api_memory.cc and
hicann/runtime tests/ut/runtime/runtime/test/rt_utest_api_impl.cc). Rows whose fix belongs to hostmem.py or to a
product config are marked xfail(strict=True) with the reason.
"""
from __future__ import annotations

import dataclasses
import json
import threading
import warnings

import pytest

from emu import constants as C
from emu.memory import DEVICE_BASE, DEVICE_WINDOW
from helpers import OLD, code, device, pageable, peek, pinned, read_device

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

MiB = 1 << 20
H2H, H2D, D2H, D2D, DEFAULT, H2B2D = 0, 1, 2, 3, 4, 5
HUGE_FIRST, NORMAL_ONLY = 0, 2
ATTR_MODULE_ID, ATTR_DEVICE_ID, ATTR_VA_FLAG = 1, 2, 3
GLOBAL = 0
VALUE = 0x11223344
COPIES = ["memcpy_async", "memcpy_async_with_condition"]
HUGE1G_ATTRS = [C.ACL_HBM_MEM_HUGE1G, C.ACL_HBM_MEM_P2P_HUGE1G, C.ACL_MEM_HUGE1G, C.ACL_MEM_P2P_HUGE1G]


def on(fresh, product="910B"):
    r = fresh(product)
    r.set_device(0)
    return r


def in_new_thread(fn, *args) -> int:
    """The code of fn(*args) called from a host thread with no current context."""
    out = []
    t = threading.Thread(target=lambda: out.append(code(fn, *args)))
    t.start()
    t.join()
    return out[0]


def with_default_device(fresh, tmp_path, product="910B"):
    """A runtime with no device set and aclInit's JSON naming default device 0."""
    r = fresh(product)
    cfg = tmp_path / "acl.json"
    cfg.write_text(json.dumps({"defaultDevice": {"default_device": "0"}}))
    r.init(str(cfg))
    return r


def hole(rt) -> int:
    """An address in device 0's window that no allocation covers."""
    return DEVICE_BASE + DEVICE_WINDOW - 4096


# ================================================================== allocation: aclrtMalloc

def test_malloc_size_0_is_100000(rt):
    """memory.cpp:aclMallocMemInner: ACL_REQUIRES_POSITIVE(size)."""
    assert code(rt.malloc, 0, HUGE_FIRST) == 100000


def test_malloc_size_overflow_with_padding_is_100000(rt):
    """memory.cpp:GetAlignedAndPaddingSize: size + 32 + padding wrapping around -> 100000."""
    assert code(rt.malloc, C.SIZE_MAX - 40, HUGE_FIRST) == 100000


def test_malloc_unknown_policy_is_default_policy(rt):
    """memory.cpp:aclMallocMemInner: a policy outside 0..7 becomes RT_MEMORY_DEFAULT, which the driver
    treats as HUGE_FIRST (npu_driver_mem.cc:DevMemAllocOnline): 4 MiB gets 2 MiB pages. (The docs say
    "huge if >= 2 MiB": aclrtMalloc in hicann/runtime docs/zh/api_ref/11-01_device_memory_malloc_and_free.md.)"""
    p = rt.malloc(4 * MiB, 99)
    assert rt.pointer_get_attributes(p).page_size == 2 * MiB


def test_malloc_without_context_is_107002(fresh):
    """api_impl.cc:ApiImpl::DevMalloc: CHECK_CONTEXT_VALID_WITH_RETURN after the ACL checks."""
    r = fresh()
    assert code(r.malloc, 0, HUGE_FIRST) == 100000
    assert code(r.malloc, 64, HUGE_FIRST) == 107002


def test_malloc_opens_the_default_device(fresh, tmp_path):
    """api_impl.cc:ApiImpl::DevMalloc: CurrentContext() opens aclInit's default device (spec G7)."""
    r = with_default_device(fresh, tmp_path)
    assert code(r.malloc, 64, HUGE_FIRST) == 0


@pytest.mark.parametrize("policy", [3, 4, 5])
def test_malloc_p2p_policy_without_p2p_flag_is_207000(fresh, policy):
    """npu_driver.cc:NpuDriver::transMemAttribute: HUGE_FIRST_P2P, HUGE_ONLY_P2P and NORMAL_ONLY_P2P need
    RT_FEATURE_DEVICE_P2P (IPV350 has no feature flag)."""
    r = on(fresh, "IPV350")
    assert code(r.malloc, 64, policy) == 207000


@pytest.mark.parametrize("policy", [6, 7])
def test_malloc_huge1g_policy_without_1g_pages_is_207000(fresh, policy):
    """npu_driver_mem.cc:NpuDriver::DevMemAlloc1GHugePage -> CheckIfSupport1GHugePage: cloud (910) lacks
    RT_FEATURE_MEM_1G_HUGE_PAGE."""
    r = on(fresh, "910")
    assert code(r.malloc, 64, policy) == 207000


def test_malloc_huge1g_p2p_needs_1g_pages_not_p2p_flag(rt):
    """npu_driver.cc:NpuDriver::transMemAttribute lists only policies 3, 4, 5 under the P2P flag:
    HUGE1G_ONLY_P2P (7) on a chip with 1 GiB pages and no P2P flag is allocated (the emulator used to
    refuse it with 207000)."""
    rt.product = dataclasses.replace(rt.product, features=frozenset({"huge1g"}))
    assert code(rt.malloc, 64, 7) == 0
    assert code(rt.malloc, 64, 3) == 207000


def test_malloc_out_of_memory_is_207001(rt):
    """api_impl.cc:ApiImpl::DevMalloc: the driver's out-of-memory after the pool-trim retry -> 207001."""
    assert code(rt.malloc, 2 * rt.space.capacity, NORMAL_ONLY) == 207001


# ========================================================== allocation: aclrtMallocWithCfg

def test_malloc_with_cfg_size_0_is_100000(rt):
    """memory.cpp:aclrtMallocInnerWithCfg: ACL_REQUIRES_POSITIVE(size)."""
    assert code(rt.malloc_with_cfg, 0, HUGE_FIRST, None) == 100000


def test_malloc_with_cfg_empty_attrs_is_107000(fresh):
    """api_error.cc:ApiErrorDecorator::DevMalloc: cfg with attrs null -> 107000, before the context check
    (UT aclrtMallocWithCfg_with_invalid_cfg_num accepts {NULL, 0} only because the runtime is mocked there)."""
    r = fresh()
    assert code(r.malloc_with_cfg, 64, HUGE_FIRST, []) == 107000


def test_malloc_with_cfg_without_context_is_107002(fresh):
    """api_impl.cc:ApiImpl::DevMalloc (policy/advise/cfg): the context comes before ParseMallocCfg."""
    r = fresh()
    assert code(r.malloc_with_cfg, 64, HUGE_FIRST, [{"attr": ATTR_VA_FLAG, "value": 1}]) == 107002


def test_malloc_with_cfg_unknown_attr_is_107000(rt):
    """api_impl.cc:ApiImpl::DevMalloc -> ParseMallocCfg: VA_FLAG is not an aclrtMallocWithCfg attribute."""
    assert code(rt.malloc_with_cfg, 64, HUGE_FIRST, [{"attr": ATTR_VA_FLAG, "value": 1}]) == 107000


def test_malloc_with_cfg_device_id_not_current_is_107000(rt):
    """api_impl.cc:ApiImpl::DevMalloc: DEVICE_ID must be the current device."""
    assert code(rt.malloc_with_cfg, 64, HUGE_FIRST, [{"attr": ATTR_DEVICE_ID, "value": 1}]) == 107000
    assert code(rt.malloc_with_cfg, 64, HUGE_FIRST, [{"attr": ATTR_DEVICE_ID, "value": 0}]) == 0


# ====================================================================== allocation: aclrtFree

def test_free_null_is_100000(rt):
    """memory.cpp:aclrtFreeImpl: ACL_REQUIRES_NOT_NULL(devPtr)."""
    assert code(rt.free, 0) == 100000


def test_free_needs_no_context(rt):
    """api_impl.cc:ApiImpl::DevFree: CurrentContext(false), the NPU driver when there is none."""
    d = rt.malloc(64, NORMAL_ONLY)
    assert in_new_thread(rt.free, d) == 0


def test_free_not_allocation_start_is_107000(rt):
    """npu_driver_mem.cc:NpuDriver::DevMemFree: the driver refuses an interior or host pointer
    (DRV_INPUT -> 107000, inferred: the driver is not in the snapshot)."""
    d = rt.malloc(4096, NORMAL_ONLY)
    h = rt.malloc_host(64)
    assert code(rt.free, d + 64) == 107000
    assert code(rt.free, h) == 107000
    assert code(rt.free, d) == 0


# ===================================================== allocation: aclrtMallocHost / FreeHost

def test_malloc_host_size_0_is_100000(rt):
    """memory.cpp:aclrtMallocHostImpl: ACL_REQUIRES_POSITIVE(size)."""
    assert code(rt.malloc_host, 0) == 100000


def test_malloc_host_without_context_is_107002(fresh):
    """api_impl.cc:ApiImpl::HostMalloc: CHECK_CONTEXT_VALID_WITH_RETURN."""
    assert code(fresh().malloc_host, 64) == 107002


def test_free_host_null_is_100000(rt):
    """memory.cpp:aclrtFreeHostImpl: ACL_REQUIRES_NOT_NULL(hostPtr)."""
    assert code(rt.free_host, 0) == 100000


def test_free_host_device_memory_is_107000(rt):
    """api_impl.cc:ApiImpl::HostFree: a location other than HOST / UNREGISTERED -> 107000."""
    d = rt.malloc(64, NORMAL_ONLY)
    assert code(rt.free_host, d) == 107000


def test_free_host_not_allocation_start_is_107000(rt):
    """npu_driver_mem.cc:NpuDriver::HostMemFree: halMemFree refuses an interior pointer or user memory
    (inferred 107000: the driver is not in the snapshot)."""
    h = rt.malloc_host(4096)
    p, _ = pageable(64)
    assert code(rt.free_host, h + 64) == 107000
    assert code(rt.free_host, p) == 107000


def test_free_host_needs_no_context(rt):
    """api_impl.cc:ApiImpl::HostFree: without a context it uses the NPU driver."""
    h = rt.malloc_host(64)
    assert in_new_thread(rt.free_host, h) == 0


# ================================================== allocation: aclrtMallocHostWithCfg (hostmem.py)

def test_malloc_host_with_cfg_size_0_is_100000(rt):
    """memory.cpp:aclrtMallocHostWithCfgImpl: ACL_REQUIRES_POSITIVE(size)."""
    assert code(rt.malloc_host_with_cfg, 0, None) == 100000


@pytest.mark.parametrize("attr", [0, ATTR_DEVICE_ID, 7])
def test_malloc_host_with_cfg_unknown_attr_is_107000(rt, attr):
    """api_impl.cc:ApiImpl::GetMallocHostConfigAttr: only MODULE_ID and VA_FLAG (UT rtsMallocHost_002)."""
    assert code(rt.malloc_host_with_cfg, 64, [{"attr": attr, "value": 0}]) == 107000


def test_malloc_host_with_cfg_config_checks_before_context(fresh):
    """api_impl.cc:ApiImpl::HostMallocWithCfg: attrs null and a bad attribute (107000) come before
    CurrentContext (107002)."""
    r = fresh()
    assert code(r.malloc_host_with_cfg, 64, []) == 107000
    assert code(r.malloc_host_with_cfg, 64, [{"attr": ATTR_DEVICE_ID, "value": 0}]) == 107000


def test_malloc_host_with_cfg_va_flag_1_without_uva_is_207000(fresh):
    """npu_driver_mem.cc:NpuDriver::HostMemAlloc: vaFlag == 1 and no FEATURE_SVM_MEM_HOST_UVA ->
    DRV_NOT_SUPPORT, which api_c_memory.cc:rtsMallocHost turns into 207000 (910 has no va_flag)."""
    r = on(fresh, "910")
    assert code(r.malloc_host_with_cfg, 64, [{"attr": ATTR_VA_FLAG, "value": 1}]) == 207000


def test_malloc_host_with_cfg_va_flag_other_than_1_is_plain_memory(fresh):
    """npu_driver_mem.cc:NpuDriver::HostMemAlloc tests vaFlag == 1U only: VA_FLAG 2 allocates plain
    page-locked memory, even where the driver has no host UVA."""
    r = on(fresh, "910")
    ptr = r.malloc_host_with_cfg(64, [{"attr": ATTR_VA_FLAG, "value": 2}])
    assert not r.space.find(ptr).va_flag


# ===================================================================== aclrtGetMemInfo

@pytest.mark.parametrize("attr", [-1, 18, 100])
def test_get_mem_info_attr_outside_0_17_is_107016(rt, attr):
    """api_error.cc:ApiErrorDecorator::MemGetInfoEx: memInfoType outside [DDR, P2P_HUGE1G] ->
    RT_ERROR_INVALID_MEMORY_TYPE (107016)."""
    assert code(rt.get_mem_info, attr) == 107016


def test_get_mem_info_without_context_is_107002(fresh):
    """api_impl.cc:ApiImpl::MemGetInfoEx: after the attribute check."""
    r = fresh()
    assert code(r.get_mem_info, 18) == 107016
    assert code(r.get_mem_info, C.ACL_HBM_MEM) == 107002


@pytest.mark.parametrize("attr", HUGE1G_ATTRS)
def test_get_mem_info_huge1g_attr_without_1g_pages_is_207000(fresh, attr):
    """npu_driver_mem.cc:NpuDriver::MemGetInfoEx -> CheckIfSupport1GHugePage: cloud (910) has no
    RT_FEATURE_MEM_1G_HUGE_PAGE -> 207000. (The docs, aclrtGetMemInfo in
    hicann/runtime docs/zh/api_ref/11-01_device_memory_malloc_and_free.md: "an unsupported attribute returns 0/0"; the
    emulator used to.)"""
    r = on(fresh, "910")
    assert code(r.get_mem_info, attr) == 207000


@pytest.mark.parametrize("attr", HUGE1G_ATTRS)
def test_get_mem_info_huge1g_attr_with_1g_pages_is_0(rt, attr):
    """npu_driver_mem.cc:NpuDriver::MemGetInfoEx: 910_B_93 has 1 GiB pages."""
    free, total = rt.get_mem_info(attr)
    assert total == rt.space.capacity


@pytest.mark.parametrize("attr", HUGE1G_ATTRS)
def test_get_mem_info_ddr_chip_maps_unlisted_attr_to_ddr(fresh, attr):
    """npu_driver_mem.cc:NpuDriver::MemGetInfoEx: dc (310P) sets MAP_WHEN_GET_INFO; g_memInfoTypeMap has
    no entry for the 1 GiB attributes, so its operator[] reads them as DDR: the whole memory, no 207000."""
    r = on(fresh, "310P")
    free, total = r.get_mem_info(attr)
    assert total == r.space.capacity


def test_get_mem_info_ddr_attr_on_hbm_chip_is_0_0(rt):
    """npu_driver_mem.cc:NpuDriver::MemGetInfoEx: an HBM chip's driver has no DDR pool (0, 0; inferred)."""
    assert rt.get_mem_info(C.ACL_DDR_MEM) == (0, 0)


# ============================================================ aclrtPointerGetAttributes

def test_pointer_get_attributes_null_is_100000(rt):
    """memory.cpp:aclrtPointerGetAttributesImpl: ACL_REQUIRES_NOT_NULL(ptr)."""
    assert code(rt.pointer_get_attributes, 0) == 100000


def test_pointer_get_attributes_needs_no_context(rt):
    """api_impl.cc:ApiImpl::PtrGetAttributes: the NPU driver when there is no context."""
    d = rt.malloc(64, NORMAL_ONLY)
    assert in_new_thread(rt.pointer_get_attributes, d) == 0


def test_pointer_get_attributes_unknown_device_address_is_107000(rt):
    """npu_driver_mem.cc:NpuDriver::PtrGetAttributes: no memory type -> RT_ERROR_INVALID_VALUE (107000)."""
    assert code(rt.pointer_get_attributes, hole(rt)) == 107000


def test_pointer_get_attributes_locations(rt):
    """npu_driver_mem.cc:NpuDriver::PtrGetAttributes: device memory DEVICE (id = user device id), page-locked
    HOST (id 0), user memory UNREGISTERED unless registered."""
    d = rt.malloc(64, NORMAL_ONLY)
    h = rt.malloc_host(64)
    p, _ = pageable(64)
    assert (rt.pointer_get_attributes(d).type, rt.pointer_get_attributes(d).id) == (1, 0)
    assert (rt.pointer_get_attributes(h).type, rt.pointer_get_attributes(h).id) == (0, 0)
    assert rt.pointer_get_attributes(p).type == 2


# ===================================================================== DVPP memory

def test_dvpp_malloc_size_0_is_100000(rt):
    """ACL generic rule G2 (the acldvpp layer is not in the snapshot)."""
    assert code(rt.dvpp_malloc, 0) == 100000


def test_dvpp_malloc_without_context_is_107002(fresh):
    """api_impl.cc:ApiImpl::DevDvppMalloc: CHECK_CONTEXT_VALID_WITH_RETURN."""
    assert code(fresh().dvpp_malloc, 64) == 107002


def test_dvpp_free_null_is_100000(rt):
    """api_error.cc:ApiErrorDecorator::DevDvppFree: devPtr null."""
    assert code(rt.dvpp_free, 0) == 100000


def test_dvpp_free_not_device_memory_is_107000(rt):
    """api_impl.cc:ApiImpl::DevDvppFree: a location other than DEVICE / MANAGED, or an address the
    driver does not know -> 107000."""
    h = rt.malloc_host(64)
    assert code(rt.dvpp_free, h) == 107000
    assert code(rt.dvpp_free, hole(rt)) == 107000


def test_dvpp_free_needs_no_context(rt):
    """api_impl.cc:ApiImpl::DevDvppFree: the NPU driver when there is no context."""
    d = rt.dvpp_malloc(64)
    assert in_new_thread(rt.dvpp_free, d) == 0


# ======================================================================= aclrtMemcpy

def test_memcpy_count_0_before_every_check(fresh):
    """memory.cpp:aclrtMemcpyImpl: count 0 returns first (nulls, a bad kind, no context; UT memory_memcpy)."""
    assert code(fresh().memcpy, 0, 0, 0, 0, 0x7FFFFFFF) == 0


@pytest.mark.parametrize("dst,src,kind", [(0, 0x1000, H2H), (0x1000, 0, H2H), (0x1000, 0x2000, 6),
                                          (0x1000, 0x2000, -1)])
def test_memcpy_null_or_bad_kind_is_100000(fresh, dst, src, kind):
    """memory.cpp:aclrtMemcpyImpl / MemcpyKindTranslate: dst, src, then kind outside 0..5, before any
    runtime check (no context needed to get 100000)."""
    assert code(fresh().memcpy, dst, 1, src, 1, kind) == 100000


def test_memcpy_dest_max_0_is_107000(fresh):
    """api_error.cc:ApiErrorDecorator::MemCopySync: ZERO_RETURN(destMax), before the context."""
    assert code(fresh().memcpy, 0x1000, 0, 0x2000, 1, H2H) == 107000


def test_memcpy_count_over_dest_max_is_107000(fresh):
    """api_error.cc:ApiErrorDecorator::MemCopySync: cnt > destMax, before the context."""
    assert code(fresh().memcpy, 0x1000, 1, 0x2000, 2, H2H) == 107000


def test_memcpy_dst_equal_src_is_0_before_context(fresh):
    """api_error.cc:ApiErrorDecorator::MemCopySync: dst == src returns success before ApiImpl (no context
    needed, nothing dereferenced)."""
    assert code(fresh().memcpy, 0x1000, 8, 0x1000, 8, H2H) == 0


def test_memcpy_without_context_is_107002(fresh):
    """api_impl.cc:ApiImpl::MemCopySync: CHECK_CONTEXT_VALID_WITH_RETURN."""
    a, _ = pageable(8)
    b, _ = pageable(8)
    assert code(fresh().memcpy, a, 8, b, 8, H2H) == 107002


def test_memcpy_unsafe_under_capture_is_107030(rt):
    """api_impl.cc:ApiImpl::MemCopySync: CHECK_CAPTURE_MODE_SUPPORT while a GLOBAL capture is active."""
    s = rt.create_stream()
    d = rt.malloc(64, NORMAL_ONLY)
    h = rt.malloc_host(64)
    rt.ri_capture_begin(s, GLOBAL)
    try:
        assert code(rt.memcpy, d, 64, h, 64, H2D) == 107030
    finally:
        rt.ri_capture_end(s)


def test_memcpy_across_devices_without_peer_access_is_507899(rt):
    """npu_driver_mem.cc:NpuDriver::MemCopySync: the driver refuses a copy between devices that did not
    enable peer access on 910B (docs/conformance/hostmem_peer_capture.md#peer-access)."""
    a = rt.malloc(64, NORMAL_ONLY)
    rt.set_device(1)
    b = rt.malloc(64, NORMAL_ONLY)
    assert code(rt.memcpy, b, 64, a, 64, D2D) == 507899


# ================================================ aclrtMemcpyAsync / aclrtMemcpyAsyncWithCondition

@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_count_0_before_every_check(fresh, api):
    """memory.cpp:aclrtMemcpyAsyncImpl / WithConditionImpl: count 0 returns first (UT
    zero_size_memory_ops_return_before_runtime_call, memory_memcpyAsyncWithCondition)."""
    assert code(getattr(fresh(), api), 0, 1, 0, 0, 0x7FFFFFFF, 0x5A5A5A50) == 0


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_acl_checks_before_stream_handle(rt, api):
    """memory.cpp: null dst / bad kind -> 100000 even with a dead stream handle (the runtime is not called)."""
    assert code(getattr(rt, api), 0, 8, 0x1000, 8, H2D, 0x5A5A5A50) == 100000
    assert code(getattr(rt, api), 0x1000, 8, 0x2000, 8, 9, 0x5A5A5A50) == 100000


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_dead_stream_handle_is_107017(rt, api):
    """api_c.cc:rtMemcpyAsync / rtMemcpyAsyncEx: RT_VALIDATE_AND_UNWRAP_OBJECT before the parameter checks
    (so before count > destMax)."""
    s = rt.create_stream()
    rt.destroy_stream(s)
    assert code(getattr(rt, api), 0x1000, 1, 0x2000, 8, H2D, s) == 107017


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_count_over_dest_max_is_107000_before_context(fresh, api):
    """api_error.cc:ApiErrorDecorator::MemcpyAsync: cnt > destMax before the context check."""
    assert code(getattr(fresh(), api), 0x1000, 1, 0x2000, 8, H2D, 0) == 107000


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_without_context_is_107002_never_implicit(fresh, tmp_path, api):
    """api_error.cc:ApiErrorDecorator::MemcpyAsync: Runtime::CurrentContext() never opens the default
    device (spec G7)."""
    r = with_default_device(fresh, tmp_path)
    a, _ = pageable(8)
    b, _ = pageable(8)
    assert code(getattr(r, api), a, 8, b, 8, H2D, 0) == 107002


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_buf_to_device_needs_host_src_and_device_dst(rt, api):
    """api_error.cc:ApiErrorDecorator::MemcpyAsyncCheckExLocation: HOST_TO_BUF_TO_DEVICE with a device
    source or a host destination -> 107000; pageable host to device is fine (staged during the call)."""
    d, d2 = rt.malloc(64, NORMAL_ONLY), rt.malloc(64, NORMAL_ONLY)
    p, _ = pageable(64)
    assert code(getattr(rt, api), d2, 64, d, 64, H2B2D, 0) == 107000
    assert code(getattr(rt, api), p, 64, p + 0, 64, H2B2D, 0) == 107000
    assert code(getattr(rt, api), d, 64, p, 64, H2B2D, 0) == 0
    rt.synchronize_stream(0)


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_kind_the_locations_forbid_is_107000(rt, api):
    """api_error.cc:ApiErrorDecorator::MemcpyKindAutoCorrect: UNREGISTERED -> DEVICE with H2H (UT
    MemcpyKindAutoCorrect_01)."""
    d = rt.malloc(64, NORMAL_ONLY)
    p, _ = pageable(64)
    assert code(getattr(rt, api), d, 64, p, 64, H2H, 0) == 107000


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_host_to_host_in_ep_is_207000_before_same_address(rt, api):
    """api_error.cc:ApiErrorDecorator::MemcpyAsync: EP with final kind H2H (DEFAULT between page-locked
    buffers) -> 207000, checked before dst == src."""
    a, b = rt.malloc_host(64), rt.malloc_host(64)
    assert code(getattr(rt, api), a, 64, b, 64, DEFAULT, 0) == 207000
    assert code(getattr(rt, api), a, 64, a, 64, DEFAULT, 0) == 207000


def test_memcpy_async_host_to_host_in_rc_is_accepted(fresh):
    """api_error.cc:ApiErrorDecorator::MemcpyAsync: the H2H refusal is for RT_RUN_MODE_ONLINE only."""
    r = on(fresh, "200I_A2")
    a, b = r.malloc_host(64), r.malloc_host(64)
    assert code(r.memcpy_async, a, 64, b, 64, H2H, 0) == 0
    r.synchronize_stream(0)


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_same_address_is_0(rt, api):
    """api_error.cc:ApiErrorDecorator::MemcpyAsync: dst == src after the kind checks -> no task."""
    d = device(rt, 64)
    assert code(getattr(rt, api), d, 64, d, 64, D2D, 0) == 0
    assert rt.stream_query(0) == 0


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_pageable_on_capturing_stream_is_107000(rt, api):
    """api_error.cc:ApiErrorDecorator::MemcpyAsync: pageable memory cannot be captured (row 12 of the aclrtMemcpyAsync
    table)."""
    s = rt.create_stream()
    d = rt.malloc(64, NORMAL_ONLY)
    p, _ = pageable(64)
    rt.ri_capture_begin(s, GLOBAL)
    try:
        assert code(getattr(rt, api), d, 64, p, 64, H2D, s) == 107000
    finally:
        rt.ri_capture_end(s)


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_pageable_unsafe_under_capture_is_107041(rt, api):
    """api_error.cc:ApiErrorDecorator::MemcpyAsync: the converted sync copy's 107030 becomes 107041."""
    s = rt.create_stream()
    d = rt.malloc(64, NORMAL_ONLY)
    p, _ = pageable(64)
    rt.ri_capture_begin(s, GLOBAL)
    try:
        assert code(getattr(rt, api), d, 64, p, 64, H2D, 0) == 107041
    finally:
        rt.ri_capture_end(s)


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_pageable_is_done_on_return(rt, api):
    """api_error.cc:ApiErrorDecorator::MemcpyAsync: StreamSynchronize, then a synchronous copy."""
    d = device(rt, 64)
    p, arr = pageable(64, 0x5A)
    assert code(getattr(rt, api), d, 64, p, 64, H2D, 0) == 0
    assert (peek(rt, d, 64) == 0x5A).all()


@pytest.mark.parametrize("api", COPIES)
def test_memcpy_async_stream_of_other_context_is_107003(rt, api):
    """api_impl.cc:ApiImpl::MemcpyAsync: the stream must belong to the current context."""
    s = rt.create_stream()
    d = rt.malloc(64, NORMAL_ONLY)
    h = rt.malloc_host(64)
    rt.set_device(1)
    assert code(getattr(rt, api), d, 64, h, 64, H2D, s) == 107003


# ======================================================================== aclrtMemset

def test_memset_count_0_before_null(fresh):
    """memory.cpp:aclrtMemsetImpl: count 0 -> 0 with a null pointer and no context."""
    assert code(fresh().memset, 0, 1, 1, 0) == 0


def test_memset_null_is_100000(fresh):
    """memory.cpp:aclrtMemsetImpl: ACL_REQUIRES_NOT_NULL(devPtr) (UT memory_memset)."""
    assert code(fresh().memset, 0, 1, 1, 1) == 100000


def test_memset_without_context_is_107002_before_count_check(fresh):
    """api_impl.cc:ApiImpl::MemSetSync: the context comes first; count > maxCount is the driver's."""
    assert code(fresh().memset, 0x1000, 1, 0, 8) == 107002


def test_memset_unsafe_under_capture_is_107030(rt):
    """api_impl.cc:ApiImpl::MemSetSync: CHECK_CAPTURE_MODE_SUPPORT."""
    s = rt.create_stream()
    d = rt.malloc(64, NORMAL_ONLY)
    rt.ri_capture_begin(s, GLOBAL)
    try:
        assert code(rt.memset, d, 64, 0, 64) == 107030
    finally:
        rt.ri_capture_end(s)


def test_memset_count_over_max_count_is_107000(rt):
    """npu_driver_mem.cc:NpuDriver::MemSetSync: drvMemsetD8 refuses count > destMax (inferred 107000)."""
    d = device(rt, 64)
    assert code(rt.memset, d, 32, 0, 64) == 107000
    assert (read_device(rt, d, 64) == OLD).all()


def test_memset_fills_value_low_byte(rt):
    """npu_driver_mem.cc:NpuDriver::MemSetSync: drvMemsetD8 with (UINT8)value."""
    d = device(rt, 64)
    rt.memset(d, 64, 0x1A5, 64)
    assert (read_device(rt, d, 64) == 0xA5).all()


# =================================================================== aclrtMemsetAsync

def test_memset_async_count_0_before_null(fresh):
    """memory.cpp:aclrtMemsetAsyncImpl: count 0 -> 0 (UT zero_size_memory_ops_return_before_runtime_call)."""
    assert code(fresh().memset_async, 0, 1, 0, 0, 0x5A5A5A50) == 0


def test_memset_async_null_is_100000(rt):
    """memory.cpp:aclrtMemsetAsyncImpl: devPtr null, before the stream handle."""
    assert code(rt.memset_async, 0, 1, 1, 1, 0x5A5A5A50) == 100000


def test_memset_async_dead_stream_handle_is_107017(rt):
    """api_c.cc:rtMemsetAsync: RT_VALIDATE_AND_UNWRAP_OBJECT before count > maxCount."""
    s = rt.create_stream()
    rt.destroy_stream(s)
    assert code(rt.memset_async, 0x1000, 1, 0, 8, s) == 107017


def test_memset_async_count_over_max_count_is_107000_before_context(fresh):
    """api_error.cc:ApiErrorDecorator::MemsetAsync: cnt > destMax before ApiImpl's context check."""
    assert code(fresh().memset_async, 0x1000, 1, 0, 8, 0) == 107000


def test_memset_async_without_context_is_107002(fresh):
    """api_impl.cc:ApiImpl::MemsetAsync: CHECK_CONTEXT_VALID_WITH_RETURN."""
    assert code(fresh().memset_async, 0x1000, 8, 0, 8, 0) == 107002


def test_memset_async_opens_the_default_device(fresh, tmp_path):
    """api_impl.cc:ApiImpl::MemsetAsync: CurrentContext() with isNeedSetDevice = true opens aclInit's
    default device (the emulator used to refuse with 107002, as on the async copy path, spec G7)."""
    r = with_default_device(fresh, tmp_path)
    p, arr = pageable(64)
    assert code(r.memset_async, p, 64, 0x5A, 64, 0) == 0
    assert (arr == 0x5A).all()


def test_memset_async_stream_of_other_context_is_107003(rt):
    """api_impl.cc:ApiImpl::MemsetAsync: COND_RETURN_AND_MSG_INVALID_CONTEXT_STREAM."""
    s = rt.create_stream()
    d = rt.malloc(64, NORMAL_ONLY)
    rt.set_device(1)
    assert code(rt.memset_async, d, 64, 0, 64, s) == 107003


def test_memset_async_host_target_filled_at_once(rt):
    """memory_common.cc:MemSetAsync: HOST / UNREGISTERED targets are memset_s on the calling thread."""
    h, view = pinned(rt, 64)
    assert code(rt.memset_async, h, 64, 0x77, 64, 0) == 0
    assert (view == 0x77).all()


def test_memset_async_device_target_is_stream_ordered(rt):
    """memory_common.cc:MemSetAsync -> DevMemSetAsyncByMemcpy: a device fill is a task on the stream."""
    s = rt.create_stream()
    d = device(rt, 64)
    rt.memset_async(d, 64, 0x33, 64, s)
    assert (peek(rt, d, 64) == OLD).all()
    rt.synchronize_stream(s)
    assert (read_device(rt, d, 64) == 0x33).all()


# ==================================================================== aclrtMemsetD32 / Async

def d32_call(r, variant, stream=0):
    return r.memset_d32 if variant == "sync" else (lambda p, m, v, n: r.memset_d32_async(p, m, v, n, stream))


@pytest.mark.parametrize("variant", ["sync", "async"])
def test_d32_unknown_device_address_is_107000(rt, variant):
    """memory.cpp:IsAclPinnedMemory -> aclrtPointerGetAttributesImpl: the attribute query's 107000 is
    returned as is (the emulator used to say 100000, its own "unknown memory")."""
    assert code(d32_call(rt, variant), hole(rt), 64, VALUE, 16) == 107000


def test_d32_async_dead_stream_is_107017_even_for_host_target(rt):
    """api_c_standard_soc.cc:rtMemsetD32Async: RT_VALIDATE_AND_UNWRAP_OBJECT before ApiImpl's host/device
    split, so a dead stream fails for a page-locked target too and nothing is written (the
    emulator used to fill the host memory and succeed)."""
    s = rt.create_stream()
    rt.destroy_stream(s)
    h, view = pinned(rt, 64)
    assert code(rt.memset_d32_async, h, 64, VALUE, 16, s) == 107017
    assert (view == OLD).all()


@pytest.mark.parametrize("variant", ["sync", "async"])
def test_d32_without_context_is_107002(rt, variant):
    """api_impl_standard_soc.cc:ApiImpl::MemsetD32 / MemsetD32Async: CHECK_CONTEXT_VALID_WITH_RETURN."""
    h, view = pinned(rt, 64)
    assert in_new_thread(d32_call(rt, variant), h, 64, VALUE, 16) == 107002
    assert (view == OLD).all()


@pytest.mark.parametrize("variant", ["sync", "async"])
def test_d32_opens_the_default_device(fresh, tmp_path, variant):
    """api_impl_standard_soc.cc: ApiImpl::CurrentContext() opens aclInit's default device, so a host thread
    with no context fills the memory (the emulator used to refuse the Async variant with 107002)."""
    r = with_default_device(fresh, tmp_path)
    h, view = pinned(r, 64)  # aclrtMallocHost opens the default device on this thread only
    assert in_new_thread(d32_call(r, variant), h, 64, VALUE, 16) == 0
    assert view.tobytes() == VALUE.to_bytes(4, "little") * 16


def test_d32_async_device_target_stream_of_other_context_is_107003(rt):
    """api_impl_standard_soc.cc:ApiImpl::MemsetD32Async: COND_RETURN_AND_MSG_INVALID_CONTEXT_STREAM for a
    device target."""
    s = rt.create_stream()
    d = rt.malloc(64, NORMAL_ONLY)
    rt.set_device(1)
    assert code(rt.memset_d32_async, d, 64, VALUE, 16, s) == 107003


def test_d32_async_host_target_ignores_stream_context(rt):
    """api_impl_standard_soc.cc:ApiImpl::MemsetD32Async: a HOST target is filled before the stream is
    resolved, so a live stream of another context is no error."""
    s = rt.create_stream()
    h, view = pinned(rt, 64)
    rt.set_device(1)
    assert code(rt.memset_d32_async, h, 64, VALUE, 16, s) == 0
    assert view.tobytes() == VALUE.to_bytes(4, "little") * 16


def test_d32_stub_runtime_207000_is_0_and_nothing_written(fresh):
    """memory.cpp:aclrtMemsetD32Impl / AsyncImpl turn the runtime's 207000 into 0; the stub runtime
    (api_c_stub.cc:rtMemsetD32 / Async) returns it before validating the stream. IPV350's config lists
    both APIs."""
    r = on(fresh, "IPV350")
    d = device(r, 64)
    with pytest.warns(RuntimeWarning):
        assert code(r.memset_d32, d, 64, VALUE, 16) == 0
    with pytest.warns(RuntimeWarning):
        assert code(r.memset_d32_async, d, 64, VALUE, 16, 0x5A5A5A50) == 0
    assert (read_device(r, d, 64) == OLD).all()


@pytest.mark.parametrize("product", ["910", "310P", "200I_A2", "910B", "A3", "950PR"])
@pytest.mark.parametrize("variant", ["sync", "async"])
def test_d32_standard_soc_runtime_has_no_chip_gate(fresh, product, variant):
    """api_c_standard_soc.cc:rtMemsetD32 / Async, api_impl_standard_soc.cc:ApiImpl::MemsetD32 / Async: no
    chip gate, so 910 (cloud) and 310P (dc) fill the memory like A2. (The API reference, aclrtMemsetD32 in
    hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md, marks D32 unsupported there; the emulator follows the
    source: docs/conformance/products.md, 2.12.)"""
    r = on(fresh, product)
    d = device(r, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "reports success and nothing is written"
        assert code(d32_call(r, variant), d, 64, VALUE, 16) == 0
    r.synchronize_device()
    assert read_device(r, d, 64).tobytes() == VALUE.to_bytes(4, "little") * 16
