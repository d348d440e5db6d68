"""Allocation APIs: device memory (aclrtMalloc, aclrtMallocWithCfg, acldvppMalloc), page-locked host memory
(aclrtMallocHost, aclrtMallocHostWithCfg), freeing, memory info and pointer attributes, and the helpers that
show memory to the program (register_host, host_array, device_array)."""
from __future__ import annotations

import numpy as np

from dataclasses import dataclass

from .. import constants as C
from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_INVALID_MEMORY_TYPE,
                      ACL_ERROR_RT_MEMORY_ALLOCATION, ACL_ERROR_RT_PARAM_INVALID, AclError)
from ..constants import Location
from ..memory import HOST_PAGE, HUGE_1G, HUGE_PAGE, Region, is_device_address, writable_view
from . import transfer
from .core import Core, api, fail
from .handles import DevicePointer, HostPointer


_DDR_ATTRS = frozenset({C.ACL_DDR_MEM, C.ACL_DDR_MEM_HUGE, C.ACL_DDR_MEM_NORMAL,
                        C.ACL_DDR_MEM_P2P_HUGE, C.ACL_DDR_MEM_P2P_NORMAL})


_HUGE1G_ATTRS = frozenset({C.ACL_HBM_MEM_HUGE1G, C.ACL_HBM_MEM_P2P_HUGE1G, C.ACL_MEM_HUGE1G, C.ACL_MEM_P2P_HUGE1G})


@dataclass(frozen=True)
class PointerAttributes:
    """aclrtPtrAttributes, what aclrtPointerGetAttributes returns: the location type (aclrtMemLocationType),
    the device id (0 for host memory) and the page size in bytes."""
    type: int  # aclrtMemLocationType
    id: int  # device id for DEVICE, 0 for host memory
    page_size: int


# -- allocation ----------------------------------------------------------------------
_P2P_2M_4K = (C.ACL_MEM_MALLOC_HUGE_FIRST_P2P, C.ACL_MEM_MALLOC_HUGE_ONLY_P2P, C.ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
_HUGE1G = (C.ACL_MEM_MALLOC_HUGE1G_ONLY, C.ACL_MEM_MALLOC_HUGE1G_ONLY_P2P)  # 1 GiB pages, no padding


def alloc_by_policy(rt: Core, device: int, nbytes: int, policy: int, origin: str = "malloc",
                    functional: bool | None = None) -> Region:
    """A device allocation of `nbytes` (rounded up to 32) on `device`, placed as the aclrtMemMallocPolicy
    `policy` says (an unknown one is the default, HUGE_FIRST): the P2P and 1 GiB policies need their chip
    feature; out of memory raises 207001. The sanitizer is told. What aclrtMalloc and its kin allocate, after
    their own checks and padding; `origin` names the API in the allocation's description."""
    p = policy if 0 <= policy <= 7 else C.ACL_MEM_MALLOC_HUGE_FIRST  # unknown -> default
    # npu_driver.cc NpuDriver::transMemAttribute gates only the three 2 MiB / 4 KiB P2P policies on the
    # chip's P2P flag; HUGE1G_ONLY_P2P (7) is gated by the 1 GiB page flag alone (below)
    if p in _P2P_2M_4K:
        rt.require_feature("p2p", f"P2P malloc policy {p}")
    nbytes = transfer.roundup(nbytes, 32)
    r = _device_region(rt, device, nbytes, p, origin, functional)
    rt.sanitize("allocated", r)
    return r


def _device_region(rt: Core, device: int, nbytes: int, p: int, origin: str, functional: bool | None) -> Region:
    space = rt.space
    if p in _HUGE1G:
        rt.require_feature("huge1g", f"malloc policy {p} (1 GiB pages)")
        return space.alloc_device(device, transfer.roundup(nbytes, HUGE_1G), HUGE_1G, HUGE_1G, origin, functional)
    if p in (C.ACL_MEM_MALLOC_HUGE_ONLY, C.ACL_MEM_MALLOC_HUGE_ONLY_P2P):
        return space.alloc_device(device, transfer.roundup(nbytes, HUGE_PAGE), HUGE_PAGE, HUGE_PAGE, origin, functional)
    if p in (C.ACL_MEM_MALLOC_HUGE_FIRST, C.ACL_MEM_MALLOC_HUGE_FIRST_P2P) and nbytes > (1 << 20):
        try:
            return space.alloc_device(device, transfer.roundup(nbytes, HUGE_PAGE), HUGE_PAGE, HUGE_PAGE, origin, functional)
        except AclError as e:
            if e.code != ACL_ERROR_RT_MEMORY_ALLOCATION:
                raise  # otherwise fall back to normal pages
    return space.alloc_device(device, nbytes, 64, HOST_PAGE, origin, functional)


@api("aclrtMalloc", sizes=("size",), pyacl="acl.rt.malloc", params="ii", outputs=(0,))
def malloc(rt: Core, size: int, policy: int = C.ACL_MEM_MALLOC_HUGE_FIRST, *,
           functional: bool | None = None) -> int:
    """Allocate `size` bytes of device memory on the current device (aclrtMalloc); returns the address.

    policy (aclrtMemMallocPolicy): by default huge pages above 1 MiB, else normal ones; an unknown value is
    the default. The allocation is `size` rounded up to 32 plus the product's padding; out of memory
    raises 207001. functional=False: an address range without bytes (timing-only); None: the runtime's
    (`configure(functional=...)`)."""
    if size == 0:
        fail(ACL_ERROR_INVALID_PARAM, "size is 0")
    pad = 0 if policy in _HUGE1G else rt.product.malloc_padding
    if size < 0 or size + 32 + pad > C.SIZE_MAX:
        fail(ACL_ERROR_INVALID_PARAM, f"size {size} overflows once rounded and padded")
    ctx = rt.current_context()
    r = alloc_by_policy(rt, ctx.device.id, transfer.roundup(size, 32) + pad, policy, functional=functional)
    r.asked = size
    return DevicePointer(r.base, rt)


def _driver_allocation(rt: Core, ptr: int, what: str) -> Region:
    """The device allocation the driver's halMemFree releases at `ptr` (npu_driver_mem.cc
    NpuDriver::DevMemFree, the end of both aclrtFree and acldvppFree), else 107000 with nothing freed:
    an address in no allocation, inside one but not at its start, host memory (page-locked, pageable, or
    RC page-locked memory: aclrtFreeHost's), or the device address of a mapped host registration (its
    pages are the host's: aclrtHostUnregister releases it, and the registration stays intact)."""
    r = rt.space.find(ptr)
    if r is None:
        rt.space.stale(ptr)  # freed before: the sanitizer reports a double free
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{what}: 0x{ptr:x} is in no device allocation")
    if r.origin == "alias":
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{what}: 0x{ptr:x} is the device address of a mapped host "
                                         f"registration, not a device allocation: release it with "
                                         f"aclrtHostUnregister")
    if not r.is_device or r.origin == "malloc_host":
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{what}: 0x{ptr:x} is host memory ({r.describe()}), not a device "
                                         f"allocation" + (": free it with aclrtFreeHost"
                                                          if r.origin == "malloc_host" else ""))
    if r.base != ptr:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{what}: 0x{ptr:x} is {ptr - r.base} bytes inside {r.describe()}, "
                                         f"not its start")
    return r


@api("aclrtFree", pyacl="acl.rt.free", params="i")
def free(rt: Core, ptr: int) -> None:
    """Free the device allocation that starts at `ptr` (aclrtFree), whether aclrtMalloc, aclrtMallocWithCfg or
    acldvppMalloc made it, at once: tasks still queued on it drop their bytes, with a warning. Any other
    address (host memory, inside an allocation, a mapped registration's device address) raises 107000."""
    if ptr == 0:
        fail(ACL_ERROR_INVALID_PARAM, "devPtr is null")
    rt.runtime_layer()
    r = _driver_allocation(rt, ptr, "aclrtFree")
    rt.sanitize("freed", r, "aclrtFree")
    rt.space.free_device(r)


@api("aclrtMallocHost", sizes=("size",), pyacl="acl.rt.malloc_host", params="i", outputs=(0,))
def malloc_host(rt: Core, size: int, *, functional: bool | None = None) -> int:
    """Allocate `size` bytes of page-locked host memory (aclrtMallocHost); returns the address.

    Needs a current context (107002). In RC and control-CPU deployments it is device memory, as on the
    board. functional=False: an address range without bytes (timing-only); None: the runtime's."""
    if size == 0:
        fail(ACL_ERROR_INVALID_PARAM, "size is 0")
    if size < 0 or size > C.SIZE_MAX - 32:
        fail(ACL_ERROR_INVALID_PARAM, f"size {size} is out of range")
    rt.current_context()
    return HostPointer(_alloc_host(rt, transfer.roundup(size, 32), functional).base, rt)


def _alloc_host(rt: Core, nbytes: int, functional: bool | None = None) -> Region:
    """Page-locked host memory; in RC mode host memory is device memory (normal pages)
    (hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md, aclrtMallocHost)."""
    if not rt.product.ep_mode:
        r = rt.space.alloc_device(rt.current_context().device.id, nbytes, 64, HOST_PAGE,
                                  origin="malloc_host", functional=functional)
    else:  # (more than the host can give: 207001 from the address space's budget or `emu.memory.host_bytes`)
        r = rt.space.alloc_pinned(nbytes, functional=functional)
    rt.sanitize("allocated", r)
    return r


@api("aclrtFreeHost", pyacl="acl.rt.free_host", params="i")
def free_host(rt: Core, ptr: int) -> None:
    """Free memory of aclrtMallocHost, and the host registrations inside it, at once (aclrtFreeHost). Device
    memory, or an address that is not the start of such an allocation, raises 107000."""
    if ptr == 0:
        fail(ACL_ERROR_INVALID_PARAM, "hostPtr is null")
    rt.runtime_layer()
    r = rt.space.find(ptr)
    if r is not None and r.is_device and r.origin != "malloc_host":
        fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{ptr:x} is device memory: free it with aclrtFree")
    if r is None:
        rt.space.stale(ptr)  # freed before: the sanitizer reports a double free
    if r is None or r.origin != "malloc_host" or r.base != ptr:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{ptr:x} is not the start of an aclrtMallocHost allocation")
    rt.sanitize("freed", r, "aclrtFreeHost")
    for reg in rt.space.registrations_overlapping(r.base, r.size):
        if reg.alias is not None:
            rt.sanitize("freed", reg.alias, "aclrtFreeHost")
        rt.space.unregister(reg)
    if r.is_device:
        rt.space.free_device(r)
    else:
        rt.space.free_pinned(r)


@api("aclrtGetMemInfo", pyacl="acl.rt.get_mem_info", params="i", outputs=(0, 0))
def get_mem_info(rt: Core, attr: int) -> tuple[int, int]:
    """(free, total) bytes of the current device's memory of kind `attr` (aclrtMemAttr 0..17, else 107016)
    (aclrtGetMemInfo). A DDR attribute on an HBM product is (0, 0)."""
    if not 0 <= attr <= 17:
        fail(ACL_ERROR_RT_INVALID_MEMORY_TYPE, f"memory attribute {attr} is not one of 0..17")
    dev = rt.current_context().device.id
    if rt.product.memory_kind == "HBM" and attr in _DDR_ATTRS:
        return 0, 0  # no DDR device memory on an HBM product
    # npu_driver_mem.cc NpuDriver::MemGetInfoEx: a 1 GiB page attribute on a chip without 1 GiB pages is
    # FEATURE_NOT_SUPPORT, except on the DDR chips (dc, mini_v3), whose driver first maps every attribute
    # its table lacks (the 1 GiB ones included) to DDR: there the query reports the whole memory
    if attr in _HUGE1G_ATTRS and rt.product.memory_kind == "HBM":
        rt.require_feature("huge1g", f"memory attribute {attr} (1 GiB pages)")
    total = rt.space.capacity
    return total - rt.space.used[dev], total


@api("aclrtPointerGetAttributes", pyacl="acl.rt.pointer_get_attributes", params="i", outputs=({},), by_hand=True)
def pointer_get_attributes(rt: Core, ptr: int) -> PointerAttributes:
    """Where `ptr` is (aclrtPointerGetAttributes): a PointerAttributes(type, id, page_size) whose type is
    DEVICE (id: the device), HOST (page-locked or registered memory) or UNREGISTERED (other host memory).
    An address in the device range that no allocation holds raises 107000."""
    if ptr == 0:
        fail(ACL_ERROR_INVALID_PARAM, "ptr is null")
    rt.runtime_layer()
    r = rt.space.find(ptr)
    if r is None:
        if is_device_address(ptr):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{ptr:x} is in no device allocation: unknown memory type")
        return PointerAttributes(Location.UNREGISTERED, 0, HOST_PAGE)
    if r.is_device:
        return PointerAttributes(Location.DEVICE, rt.visible.index(r.device), r.page_size)
    return PointerAttributes(rt.space.location(r, ptr), 0, r.page_size)


# -- host memory shown by the program ---------------------------------------------------
def register_host(rt: Core, obj) -> int:
    """Make a numpy array's or bytes-like object's memory usable as pageable host memory; returns its
    address (what acl.util.bytes_to_ptr and numpy_to_ptr give). Not an ACL API."""
    with rt.lock:
        return rt.space.register_host(obj)[0]


def host_array(rt: Core, ptr: int, nbytes: int) -> np.ndarray:
    """A uint8 array over `nbytes` of known host memory at `ptr` (acl.util): writable, except over memory
    the program showed read-only, where a write through the array raises instead of changing it. Device
    memory raises ValueError, memory the emulator does not know AclError. Not an ACL API."""
    with rt.lock:
        r = rt.space.find(ptr)
        if r is not None and r.is_device and r.origin != "malloc_host":
            raise ValueError(f"0x{ptr:x} is device memory: the host cannot read it directly; "
                             f"copy it to the host with aclrtMemcpy first")
        r, off = rt.space.resolve(ptr, max(nbytes, 1))
        rt.sanitize_host_span("host_array", r, off, nbytes, "r")  # the program reads what it asked for
        if r.kind != Region.PAGEABLE:
            return r.buffer()[off:off + nbytes]
        # memory the program showed read-only (a read-only array, a one-byte bytes object) stays read-only
        return writable_view(ptr, nbytes, keep=r.owner, readonly=r.readonly)


def device_array(rt: Core, ptr: int, shape, dtype, *, writable: bool = False) -> np.ndarray:
    """A numpy view of device memory at `ptr` as an array of `shape` and `dtype`, for inspection in a
    notebook or a test: the bytes as they are now (work still queued has not run: synchronize first).
    Read-only unless writable=True (a write through it changes device memory outside the timing model).

    Functional memory only: a timing-only allocation has no bytes and raises ValueError, as do host
    memory (see `host_array`), an address in no device allocation, a freed one, and a shape that does not
    fit between `ptr` and the allocation's end. Not an ACL API."""
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise TypeError(f"dtype {dtype} holds Python objects, not bytes: use a numeric dtype")
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in dims):
        raise ValueError(f"shape {shape!r} is not a tuple of sizes >= 0")
    nbytes = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    with rt.lock:
        r = rt.space.find(ptr)
        if r is None or r.freed:
            raise ValueError(f"0x{int(ptr):x} is in no device allocation")
        if not r.is_device or r.origin == "malloc_host":
            raise ValueError(f"0x{int(ptr):x} is host memory ({r.describe()}): use host_array(ptr, nbytes) "
                             f"and .view(dtype)")
        if r.virtual:
            raise ValueError(f"{r.describe()} is timing-only: it has no bytes to show (allocate it in functional "
                             f"mode: emu.configure(functional=True) or malloc(..., functional=True))")
        off = ptr - r.base
        if off + nbytes > r.size:
            raise ValueError(f"{dims} x {dtype} is {nbytes} bytes from 0x{int(ptr):x}: {off + nbytes - r.size} "
                             f"bytes past the end of {r.describe()}")
        rt.sanitize_host_span("emu.runtime.device_array", r, off, nbytes, "rw" if writable else "r")
        view = r.buffer()[off:off + nbytes].view(dtype).reshape(dims)
    if not writable:
        view.flags.writeable = False
    return view


# -- DVPP memory (acl.media) --------------------------------------------------------------------
@api("acldvppMalloc", sizes=("size",), pyacl="acl.media.dvpp_malloc", params="i", outputs=(0,))
def dvpp_malloc(rt: Core, size: int) -> int:
    """Allocate `size` bytes of device memory for DVPP on the current device (acldvppMalloc); returns the
    address. As aclrtMalloc with the default policy; acldvppFree or aclrtFree releases it."""
    if size == 0:
        fail(ACL_ERROR_INVALID_PARAM, "size is 0")
    ctx = rt.current_context()
    return alloc_by_policy(rt, ctx.device.id, transfer.roundup(size, 32) + rt.product.malloc_padding,
                           C.ACL_MEM_MALLOC_HUGE_FIRST, origin="dvpp").base


@api("acldvppFree", pyacl="acl.media.dvpp_free", params="i")
def dvpp_free(rt: Core, ptr: int) -> None:
    """Free device memory at the start of a device allocation, whichever API made it (acldvppFree).

    api_impl.cc ApiImpl::DevDvppFree: the pointer's location must be DEVICE (107000 otherwise, host
    memory and a mapped registration's device address included), then the driver's halMemFree, which
    releases a device allocation at its start, whichever API made it (see `_driver_allocation`)."""
    if ptr == 0:
        fail(ACL_ERROR_INVALID_PARAM, "devPtr is null")
    rt.runtime_layer()
    r = _driver_allocation(rt, ptr, "acldvppFree")
    rt.sanitize("freed", r, "acldvppFree")
    rt.space.free_device(r)




def _attributes(cfg) -> list[tuple[int, int]]:
    """[(attr, value)] from a malloc config: a list of {"attr": int, "value": int} (None = no config)."""
    if not isinstance(cfg, (list, tuple)):
        fail(ACL_ERROR_INVALID_PARAM, f"malloc config must be a list of {{'attr', 'value'}} dicts, got {cfg!r}")
    out = []
    for i, a in enumerate(cfg):
        try:
            out.append((int(a["attr"]), int(a.get("value", 0))))
        except (TypeError, KeyError, ValueError, OverflowError):  # OverflowError: int(inf); ValueError: int(nan)
            fail(ACL_ERROR_INVALID_PARAM, f"malloc config entry {i} ({a!r}) is not {{'attr': int, 'value': int}}")
    return out


@api("aclrtMallocWithCfg", sizes=("size",), pyacl="acl.rt.malloc_with_cfg", params="iio", outputs=(0,))
def malloc_with_cfg(rt: Core, size: int, policy: int, cfg=None) -> int:
    """Allocate `size` bytes of device memory on the current device with a policy and a config
    (aclrtMallocWithCfg); returns the address.

    cfg: None or a non-empty list of {"attr": aclrtMallocAttrType, "value": int}: RSV and MODULE_ID are
    ignored, DEVICE_ID must be the current device, any other attribute raises 107000. The low byte of
    `policy` is the page policy, as aclrtMalloc's; unlike aclrtMalloc, no padding is added."""
    if size == 0:
        fail(ACL_ERROR_INVALID_PARAM, "size is 0")
    attrs = None if cfg is None else _attributes(cfg)
    if attrs is not None and not attrs:
        fail(ACL_ERROR_RT_PARAM_INVALID, "malloc config has no attributes")
    ctx = rt.current_context()
    device_id = None
    for attr, value in attrs or ():  # parse them all first: the last duplicate wins
        if attr in (C.ACL_RT_MEM_ATTR_RSV, C.ACL_RT_MEM_ATTR_MODULE_ID):
            continue
        if attr == C.ACL_RT_MEM_ATTR_DEVICE_ID:
            device_id = value
            continue
        fail(ACL_ERROR_RT_PARAM_INVALID, f"malloc attribute {attr} is not accepted by aclrtMallocWithCfg")
    if device_id is not None and device_id != rt.visible.index(ctx.device.id):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"DEVICE_ID {device_id} is not the current device")
    return DevicePointer(alloc_by_policy(rt, ctx.device.id, transfer.roundup(size, 32), policy & 0xFF).base, rt)


@api("aclrtMallocHostWithCfg", sizes=("size",), pyacl="acl.rt.malloc_host_with_cfg", params="io", outputs=(0,))
def malloc_host_with_cfg(rt: Core, size: int, cfg=None) -> int:
    """Allocate `size` bytes of page-locked host memory with a config (aclrtMallocHostWithCfg); returns the
    address. cfg: None or a non-empty list of {"attr", "value"}, MODULE_ID and VA_FLAG only; VA_FLAG 1 asks
    for memory the device reaches at the host address (207000 on products without it).

    ACL: size 0 -> 100000. Runtime (ApiImpl::HostMallocWithCfg): the configuration (107000) is
    checked before the context (107002), then the driver's VA_FLAG support (207000)."""
    if size == 0:
        fail(ACL_ERROR_INVALID_PARAM, "size is 0")
    rt.runtime_layer()
    va_flag = _host_malloc_va_flag(cfg) == 1  # NpuDriver::HostMemAlloc asks for host UVA on 1 only
    rt.current_context()
    if va_flag:
        rt.require_feature("va_flag", "VA_FLAG")
    r = _alloc_host(rt, transfer.roundup(size, 32))
    r.va_flag = va_flag
    return HostPointer(r.base, rt)


def _host_malloc_va_flag(cfg) -> int:
    """The VA_FLAG of a host malloc config (ApiImpl::GetMallocHostConfigInfo): attributes in order,
    the first one neither MODULE_ID nor VA_FLAG -> 107000; the last VA_FLAG wins."""
    attrs = None if cfg is None else _attributes(cfg)
    if attrs is not None and not attrs:
        fail(ACL_ERROR_RT_PARAM_INVALID, "malloc config has no attributes")
    va_flag = 0
    for attr, value in attrs or ():
        if attr == C.ACL_RT_MEM_ATTR_VA_FLAG:
            va_flag = value
        elif attr != C.ACL_RT_MEM_ATTR_MODULE_ID:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"malloc attribute {attr} is not accepted by aclrtMallocHostWithCfg")
    return va_flag
