"""Allocation with configs, and host memory registration (docs/conformance/memory_copies_fills.md for the
WithCfg allocators, docs/conformance/hostmem_peer_capture.md for registration).

Registering host memory pins it (it then counts as HOST, so its async copies
stay asynchronous) and may map it into a device's address window: the alias
is usable as a copy source or destination and by kernels, and its bytes are
the host's.
"""
from __future__ import annotations

from .. import constants as C
from ..errors import (ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED, ACL_ERROR_HOST_MEMORY_NOT_REGISTERED,
                      ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID)
from ..memory import Region, Registration
from . import transfer
from .core import Core, api, fail


_MAPPING = C.ACL_HOST_REG_MAPPED | C.ACL_HOST_REG_IOMEMORY | C.ACL_HOST_REG_READONLY  # flags that map into a device


# -- registration ------------------------------------------------------------------------
# The emulator follows the runtime's software registration mode (ApiImpl::HostRegisterV2 when the
# driver cannot pin): the runtime keeps the pinned and mapped ranges, and only a mapping reaches
# the driver, whose chip check (NpuDriver::HostRegister) is the product gate.
def _driver_host_register(rt: Core) -> None:
    """NpuDriver::HostRegister / HostUnregister: a chip without RT_FEATURE_MEM_HOST_REGISTER -> 207000 (for
    aclrtHostRegisterV2 and aclrtHostUnregister, only a mapping reaches the driver)."""
    rt.require_feature("host_register", "host memory mapping")


def _host_range(rt: Core, ptr: int, size: int) -> Region:
    host, _ = transfer.locate(rt, ptr, size)
    if host.is_device:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"ptr 0x{ptr:x} is device memory, not host memory")
    return host


def _check_not_registered(rt: Core, ptr: int, size: int) -> None:
    """CheckMemoryRangeRegistered (software mode) / the driver's BUSY: any overlap -> 507910."""
    if rt.space.registrations_overlapping(ptr, size):
        fail(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
             f"[0x{ptr:x}, 0x{ptr + size:x}) overlaps a registered host range")


def _record(rt: Core, ptr: int, size: int, host: Region, pinned: bool, mapped: bool, flags: int) -> Registration:
    alias = None
    if mapped and not host.va_flag:
        alias = rt.space.alloc_alias(rt.current_context().device.id, host, ptr - host.base, size)
    reg = Registration(ptr, size, flags, host, alias, pinned)
    rt.space.register(reg)
    rt.tick(rt.product.hardware.host.register_time(size))  # the driver pins and maps every page
    return reg


@api("aclrtHostRegister", gate=False, feature="host_register", sizes=("size",), pyacl="acl.rt.host_register",
     params="iii", outputs=(0,))
def host_register(rt: Core, ptr: int, size: int, type: int = C.ACL_HOST_REGISTER_MAPPED) -> int:
    """Register and map `size` bytes of host memory at `ptr` (aclrtHostRegister); returns the device address
    kernels use to reach it (the host address itself for VA-consistent memory). The range counts as
    page-locked from then on; it must not overlap a registration (507910). 207000 on products without
    host registration."""
    if ptr == 0 or size == 0:
        fail(ACL_ERROR_INVALID_PARAM, "ptr is null" if ptr == 0 else "size is 0")
    if type & ~0xC:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"register type 0x{type:x} is not supported")
    rt.current_context()
    rt.feature_gate()  # NpuDriver::HostRegister's chip check
    host = _host_range(rt, ptr, size)
    _check_not_registered(rt, ptr, size)
    reg = _record(rt, ptr, size, host, pinned=True, mapped=True, flags=C.ACL_HOST_REG_MAPPED | type)
    return reg.alias.base if reg.alias is not None else ptr


@api("aclrtHostRegisterV2", gate=False, sizes=("size",), pyacl="acl.rt.host_register_v2", params="iii")
def host_register_v2(rt: Core, ptr: int, size: int, flag: int) -> None:
    """Pin (PINNED) and/or map (MAPPED, IOMEMORY, READONLY) `size` bytes of host memory at `ptr`
    (aclrtHostRegisterV2); aclrtHostGetDevicePointer gives a mapping's device address. A mapping raises
    207000 on products without host registration; pinning alone works on every product."""
    if ptr == 0 or size == 0:
        fail(ACL_ERROR_INVALID_PARAM, "ptr is null" if ptr == 0 else "size is 0")
    known = _MAPPING | C.ACL_HOST_REG_PINNED
    if flag == 0 or flag & ~known:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"flag 0x{flag:x} is not a non-empty combination of PINNED, MAPPED, "
                                         f"IOMEMORY and READONLY")
    rt.current_context()
    host = _host_range(rt, ptr, size)
    _check_not_registered(rt, ptr, size)
    mapped = bool(flag & _MAPPING)
    if mapped:  # only a mapping reaches the driver (ApiImpl::HostRegisterV2, software mode)
        _driver_host_register(rt)
    _record(rt, ptr, size, host, pinned=bool(flag & C.ACL_HOST_REG_PINNED), mapped=mapped, flags=flag)


@api("aclrtHostGetDevicePointer", gate=False, pyacl="acl.rt.host_get_device_pointer", params="ii", outputs=(0,))
def host_get_device_pointer(rt: Core, host_ptr: int, flag: int = 0) -> int:
    """The device address of registered, mapped host memory at `host_ptr` (aclrtHostGetDevicePointer).

    No chip gate: the driver query (or the runtime's own mapping table) finds nothing on a chip that
    cannot register -> 107000."""
    if host_ptr == 0:
        fail(ACL_ERROR_INVALID_PARAM, "pHost is null")
    if flag != 0:
        fail(ACL_ERROR_INVALID_PARAM, f"flag must be 0, got {flag}")
    rt.current_context()
    reg = rt.space.registration(host_ptr)
    if reg is None or not (reg.alias is not None or reg.region.va_flag):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"pHost 0x{host_ptr:x} is not in a mapped host registration")
    if reg.alias is None:  # VA-consistent memory: the device sees it at the host address
        return host_ptr
    return reg.alias.base + (host_ptr - reg.base)


@api("aclrtHostUnregister", gate=False, pyacl="acl.rt.host_unregister", params="i")
def host_unregister(rt: Core, ptr: int) -> None:
    """Unregister the host range registered at `ptr`, its start (aclrtHostUnregister).

    ApiImpl::HostUnregister (software mode): context, then a mapped base goes to the driver
    (chip gate), a pinned base is dropped, anything else -> 507911."""
    if ptr == 0:
        fail(ACL_ERROR_INVALID_PARAM, "ptr is null")
    rt.current_context()
    reg = rt.space.registration(ptr)
    if reg is None or reg.base != ptr:
        fail(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, f"ptr 0x{ptr:x} is not the start of a registered host range")
    if reg.alias is not None or (reg.flags & _MAPPING):
        _driver_host_register(rt)
    rt.sanitize("unregistered", reg)
    rt.space.unregister(reg)
