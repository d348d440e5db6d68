"""Allocation with configs, and host memory registration (spec 7.2, 7.4, 7.7).

Registering host memory pins it (it then counts as HOST, so its async copies
stay asynchronous) and may map it into a device's address window: the alias
is usable as a copy source or destination and by kernels, and its bytes are
the host's.
"""
from __future__ import annotations

from ..errors import (ACL_ERROR_FEATURE_UNSUPPORTED, ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                      ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_CONTEXT_NULL, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                      ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID)
from ..memory import Region, Registration
from .core import Core, api, fail
from .memops import roundup

ATTR_RSV, ATTR_MODULE_ID, ATTR_DEVICE_ID, ATTR_VA_FLAG = 0, 1, 2, 3  # aclrtMallocAttrType
REG_MAPPED, REG_IOMEMORY, REG_READONLY, REG_PINNED = 0x2, 0x4, 0x8, 0x10000000  # aclrtHostRegisterV2 flags
HOST_REGISTER_MAPPED = 0  # aclrtHostRegisterType


def _attributes(cfg) -> list[tuple[int, int]]:
    """[(attr, value)] from a malloc config: a list of {"attr": int, "value": int} (None = no config)."""
    if not isinstance(cfg, (list, tuple)):
        fail(ACL_ERROR_INVALID_PARAM, f"malloc config must be a list of {{'attr', 'value'}} dicts, got {cfg!r}")
    out = []
    for i, a in enumerate(cfg):
        try:
            out.append((int(a["attr"]), int(a.get("value", 0))))
        except (TypeError, KeyError, ValueError):
            fail(ACL_ERROR_INVALID_PARAM, f"malloc config entry {i} ({a!r}) is not {{'attr': int, 'value': int}}")
    return out


class HostMemoryOps:
    """Mixed into `Runtime`."""

    @api("aclrtMallocWithCfg")
    def malloc_with_cfg(self: Core, size: int, policy: int, cfg=None) -> int:
        if size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "size is 0")
        attrs = None if cfg is None else _attributes(cfg)
        if attrs is not None and not attrs:
            fail(ACL_ERROR_RT_PARAM_INVALID, "malloc config has no attributes")
        ctx = self.current_context()
        device_id = None
        for attr, value in attrs or ():  # parse them all first: the last duplicate wins
            if attr in (ATTR_RSV, ATTR_MODULE_ID):
                continue
            if attr == ATTR_DEVICE_ID:
                device_id = value
                continue
            fail(ACL_ERROR_RT_PARAM_INVALID, f"malloc attribute {attr} is not accepted by aclrtMallocWithCfg")
        if device_id is not None and device_id != self.visible.index(ctx.device.id):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"DEVICE_ID {device_id} is not the current device")
        return self._alloc_device(ctx.device.id, roundup(size, 32), policy & 0xFF).base

    @api("aclrtMallocHostWithCfg")
    def malloc_host_with_cfg(self: Core, size: int, cfg=None) -> int:
        if size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "size is 0")
        self.current_context()
        attrs = None if cfg is None else _attributes(cfg)
        if attrs is not None and not attrs:
            fail(ACL_ERROR_RT_PARAM_INVALID, "malloc config has no attributes")
        va_flag = 0
        for attr, value in attrs or ():
            if attr == ATTR_MODULE_ID:
                continue
            if attr == ATTR_VA_FLAG:
                va_flag = value  # the last duplicate wins
                continue
            fail(ACL_ERROR_RT_PARAM_INVALID, f"malloc attribute {attr} is not accepted by aclrtMallocHostWithCfg")
        if va_flag and not self.product.has("va_flag"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"VA_FLAG is not supported on {self.product.name}")
        r = self._alloc_host(roundup(size, 32))
        r.va_flag = bool(va_flag)
        return r.base

    # -- registration ------------------------------------------------------------------------
    def _register(self: Core, ptr: int, size: int, pinned: bool, mapped: bool, flags: int) -> Registration:
        host, off = self.locate(ptr, size)
        if host.is_device:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{ptr:x} is device memory, not host memory")
        if self.space.registrations_overlapping(ptr, size):
            fail(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                 f"[0x{ptr:x}, 0x{ptr + size:x}) overlaps a registered host range")
        alias = None
        if mapped and not host.va_flag:
            alias = self.space.alloc_alias(self.current_context().device.id, host, off, size)
        reg = Registration(ptr, size, flags, host, alias, pinned)
        self.space.register(reg)
        self.tick(self.product.hardware.host.register_time(size))  # the driver pins and maps every page
        return reg

    @api("aclrtHostRegister")
    def host_register(self: Core, ptr: int, size: int, type: int = HOST_REGISTER_MAPPED) -> int:
        """Register and map host memory; returns the device address kernels use to reach it."""
        if ptr == 0 or size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "ptr is null" if ptr == 0 else "size is 0")
        if type & ~0xC:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"register type 0x{type:x} is not supported")
        self.current_context()
        if not self.product.has("host_register"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"host memory registration is not supported on {self.product.name}")
        reg = self._register(ptr, size, pinned=True, mapped=True, flags=REG_MAPPED | type)
        return reg.alias.base if reg.alias is not None else ptr

    @api("aclrtHostRegisterV2")
    def host_register_v2(self: Core, ptr: int, size: int, flag: int) -> None:
        """Pin (PINNED) and/or map (MAPPED, IOMEMORY, READONLY) host memory."""
        if ptr == 0 or size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "ptr is null" if ptr == 0 else "size is 0")
        known = REG_MAPPED | REG_IOMEMORY | REG_READONLY | REG_PINNED
        if flag == 0 or flag & ~known:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"flag 0x{flag:x} is not a non-empty combination of PINNED, MAPPED, "
                                             f"IOMEMORY and READONLY")
        self.current_context()
        if not self.product.has("host_register"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"host memory registration is not supported on {self.product.name}")
        self._register(ptr, size, pinned=bool(flag & REG_PINNED),
                       mapped=bool(flag & (REG_MAPPED | REG_IOMEMORY | REG_READONLY)), flags=flag)

    @api("aclrtHostGetDevicePointer")
    def host_get_device_pointer(self: Core, host_ptr: int, flag: int = 0) -> int:
        if host_ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "pHost is null")
        if flag != 0:
            fail(ACL_ERROR_INVALID_PARAM, f"flag must be 0, got {flag}")
        self.current_context()
        reg = self.space.registration(host_ptr)
        if reg is None or not (reg.alias is not None or reg.region.va_flag):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{host_ptr:x} is not in a mapped host registration")
        if reg.alias is None:  # VA-consistent memory: the device sees it at the host address
            return host_ptr
        return reg.alias.base + (host_ptr - reg.base)

    @api("aclrtHostUnregister")
    def host_unregister(self: Core, ptr: int) -> None:
        if ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "ptr is null")
        self.runtime_layer()
        reg = self.space.registration(ptr)
        if reg is None or reg.base != ptr:
            fail(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, f"0x{ptr:x} is not the start of a registered host range")
        self.space.unregister(reg)


class PeerOps:
    """Peer access between devices (spec 7.8), mixed into `Runtime`."""

    def _peer_checks(self: Core, dev: int, peer: int) -> None:
        self.physical(dev)
        self.physical(peer)
        if not self.product.has("p2p"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"peer access is not supported on {self.product.name}")

    def can_access(self: Core, dev: int, peer: int) -> bool:
        a, b = self.visible[dev], self.visible[peer]
        return any(a in g and b in g for g in self.product.peer_groups)

    @api("aclrtDeviceCanAccessPeer")
    def device_can_access_peer(self: Core, device_id: int, peer_device_id: int) -> int:
        if device_id == peer_device_id:
            fail(ACL_ERROR_INVALID_PARAM, "a device and its peer must differ")
        self.physical(peer_device_id)
        self._peer_checks(device_id, peer_device_id)
        if not self.product.ep_mode:  # offline (RC) mode, or the control CPU (no P2P on 310P there)
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"peer access cannot be queried in {self.product.deployment} mode")
        return int(self.can_access(device_id, peer_device_id))

    def _current_and_peer(self: Core, peer: int) -> int:
        ctx = self.ctx  # the ACL layer asks for the current device (aclrtGetDevice)
        if ctx is None:
            fail(ACL_ERROR_RT_CONTEXT_NULL, "no current device: call aclrtSetDevice first")
        cur = self.visible.index(ctx.device.id)
        if cur == peer:
            fail(ACL_ERROR_INVALID_PARAM, "the peer is the current device")
        self._peer_checks(cur, peer)
        if self.product.deployment == "CTRL_CPU" and self.product.family == "310P":
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "no peer access with the control CPU open on 310P")
        return cur

    @api("aclrtDeviceEnablePeerAccess")
    def device_enable_peer_access(self: Core, peer_device_id: int, flags: int = 0) -> None:
        """Let the current device access `peer_device_id` (one direction)."""
        if flags != 0:
            fail(ACL_ERROR_FEATURE_UNSUPPORTED, f"flags must be 0, got {flags}")
        cur = self._current_and_peer(peer_device_id)
        if not self.can_access(cur, peer_device_id):
            fail(ACL_ERROR_RT_DRV_INTERNAL_ERROR, f"devices {cur} and {peer_device_id} share no interconnect on {self.product.name}")
        self.peers.add((self.visible[cur], self.visible[peer_device_id]))

    @api("aclrtDeviceDisablePeerAccess")
    def device_disable_peer_access(self: Core, peer_device_id: int) -> None:
        cur = self._current_and_peer(peer_device_id)
        self.peers.discard((self.visible[cur], self.visible[peer_device_id]))

    @api("aclrtDevicePeerAccessStatus")
    def device_peer_access_status(self: Core, device_id: int, peer_device_id: int) -> int:
        for d in (device_id, peer_device_id):
            if d >= 64:
                fail(ACL_ERROR_RT_PARAM_INVALID, f"device id {d} >= 64")
        self.physical(device_id)
        self.physical(peer_device_id)
        if not self.product.has("p2p"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"peer access is not supported on {self.product.name}")
        return int((self.visible[device_id], self.visible[peer_device_id]) in self.peers)

    def check_peer_copy(self: Core, src: Region, dst: Region) -> None:
        """A cross-device copy needs peer access enabled in one direction on most products (spec 7.8)."""
        if not (src.is_device and dst.is_device) or src.device == dst.device:
            return
        if "alias" in (src.origin, dst.origin) or not self.product.has("peer_copy_needs_enable"):
            return
        if (src.device, dst.device) not in self.peers and (dst.device, src.device) not in self.peers:
            fail(ACL_ERROR_RT_DRV_INTERNAL_ERROR, f"copy between device {src.device} and device {dst.device} needs "
                         f"aclrtDeviceEnablePeerAccess first on {self.product.name}")
