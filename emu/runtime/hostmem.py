"""Allocation with configs, and host memory registration (docs/conformance/memory_copies_fills.md for the
WithCfg allocators, docs/conformance/hostmem_peer_capture.md for registration).

Registering host memory pins it (it then counts as HOST, so its async copies
stay asynchronous) and may map it into a device's address window: the alias
is usable as a copy source or destination and by kernels, and its bytes are
the host's.
"""
from __future__ import annotations

from ..errors import (ACL_ERROR_FEATURE_UNSUPPORTED, ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                      ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_CONTEXT_NULL, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                      ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_PARAM_INVALID)
from ..memory import Region, Registration
from .core import Core, api, fail
from .handles import DevicePointer, HostPointer
from .memops import roundup

ATTR_RSV, ATTR_MODULE_ID, ATTR_DEVICE_ID, ATTR_VA_FLAG = 0, 1, 2, 3  # aclrtMallocAttrType
REG_MAPPED, REG_IOMEMORY, REG_READONLY, REG_PINNED = 0x2, 0x4, 0x8, 0x10000000  # aclrtHostRegisterV2 flags
HOST_REGISTER_MAPPED = 0  # aclrtHostRegisterType
MAX_DEV_NUM = 64  # RT_MAX_DEV_NUM


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

    @api("aclrtMallocWithCfg", sizes=("size",))
    def malloc_with_cfg(self: Core, size: int, policy: int, cfg=None) -> int:
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
        return DevicePointer(self._alloc_device(ctx.device.id, roundup(size, 32), policy & 0xFF).base, self)

    @api("aclrtMallocHostWithCfg", sizes=("size",))
    def malloc_host_with_cfg(self: Core, size: int, cfg=None) -> int:
        """Allocate `size` bytes of page-locked host memory with a config (aclrtMallocHostWithCfg); returns the
        address. cfg: None or a non-empty list of {"attr", "value"}, MODULE_ID and VA_FLAG only; VA_FLAG 1 asks
        for memory the device reaches at the host address (207000 on products without it).

        ACL: size 0 -> 100000. Runtime (ApiImpl::HostMallocWithCfg): the configuration (107000) is
        checked before the context (107002), then the driver's VA_FLAG support (207000)."""
        if size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "size is 0")
        self.runtime_layer()
        va_flag = self._host_malloc_va_flag(cfg) == 1  # NpuDriver::HostMemAlloc asks for host UVA on 1 only
        self.current_context()
        if va_flag and not self.product.has("va_flag"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"VA_FLAG is not supported on {self.product.name}")
        r = self._alloc_host(roundup(size, 32))
        r.va_flag = va_flag
        return HostPointer(r.base, self)

    @staticmethod
    def _host_malloc_va_flag(cfg) -> int:
        """The VA_FLAG of a host malloc config (ApiImpl::GetMallocHostConfigInfo): attributes in order,
        the first one neither MODULE_ID nor VA_FLAG -> 107000; the last VA_FLAG wins."""
        attrs = None if cfg is None else _attributes(cfg)
        if attrs is not None and not attrs:
            fail(ACL_ERROR_RT_PARAM_INVALID, "malloc config has no attributes")
        va_flag = 0
        for attr, value in attrs or ():
            if attr == ATTR_VA_FLAG:
                va_flag = value
            elif attr != ATTR_MODULE_ID:
                fail(ACL_ERROR_RT_PARAM_INVALID, f"malloc attribute {attr} is not accepted by aclrtMallocHostWithCfg")
        return va_flag

    # -- registration ------------------------------------------------------------------------
    # The emulator follows the runtime's software registration mode (ApiImpl::HostRegisterV2 when the
    # driver cannot pin): the runtime keeps the pinned and mapped ranges, and only a mapping reaches
    # the driver, whose chip check (NpuDriver::HostRegister) is the product gate.
    def _driver_host_register(self: Core) -> None:
        """NpuDriver::HostRegister / HostUnregister: a chip without RT_FEATURE_MEM_HOST_REGISTER -> 207000."""
        if not self.product.has("host_register"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"host memory registration is not supported on {self.product.name}")

    def _host_range(self: Core, ptr: int, size: int) -> Region:
        host, _ = self.locate(ptr, size)
        if host.is_device:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"ptr 0x{ptr:x} is device memory, not host memory")
        return host

    def _check_not_registered(self: Core, ptr: int, size: int) -> None:
        """CheckMemoryRangeRegistered (software mode) / the driver's BUSY: any overlap -> 507910."""
        if self.space.registrations_overlapping(ptr, size):
            fail(ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                 f"[0x{ptr:x}, 0x{ptr + size:x}) overlaps a registered host range")

    def _record(self: Core, ptr: int, size: int, host: Region, pinned: bool, mapped: bool, flags: int) -> Registration:
        alias = None
        if mapped and not host.va_flag:
            alias = self.space.alloc_alias(self.current_context().device.id, host, ptr - host.base, size)
        reg = Registration(ptr, size, flags, host, alias, pinned)
        self.space.register(reg)
        self.tick(self.product.hardware.host.register_time(size))  # the driver pins and maps every page
        return reg

    @api("aclrtHostRegister", gate=False, sizes=("size",))
    def host_register(self: Core, ptr: int, size: int, type: int = HOST_REGISTER_MAPPED) -> int:
        """Register and map `size` bytes of host memory at `ptr` (aclrtHostRegister); returns the device address
        kernels use to reach it (the host address itself for VA-consistent memory). The range counts as
        page-locked from then on; it must not overlap a registration (507910). 207000 on products without
        host registration."""
        if ptr == 0 or size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "ptr is null" if ptr == 0 else "size is 0")
        if type & ~0xC:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"register type 0x{type:x} is not supported")
        self.current_context()
        self._driver_host_register()
        host = self._host_range(ptr, size)
        self._check_not_registered(ptr, size)
        reg = self._record(ptr, size, host, pinned=True, mapped=True, flags=REG_MAPPED | type)
        return reg.alias.base if reg.alias is not None else ptr

    @api("aclrtHostRegisterV2", gate=False, sizes=("size",))
    def host_register_v2(self: Core, ptr: int, size: int, flag: int) -> None:
        """Pin (PINNED) and/or map (MAPPED, IOMEMORY, READONLY) `size` bytes of host memory at `ptr`
        (aclrtHostRegisterV2); aclrtHostGetDevicePointer gives a mapping's device address. A mapping raises
        207000 on products without host registration; pinning alone works on every product."""
        if ptr == 0 or size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "ptr is null" if ptr == 0 else "size is 0")
        known = REG_MAPPED | REG_IOMEMORY | REG_READONLY | REG_PINNED
        if flag == 0 or flag & ~known:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"flag 0x{flag:x} is not a non-empty combination of PINNED, MAPPED, "
                                             f"IOMEMORY and READONLY")
        self.current_context()
        host = self._host_range(ptr, size)
        self._check_not_registered(ptr, size)
        mapped = bool(flag & (REG_MAPPED | REG_IOMEMORY | REG_READONLY))
        if mapped:  # only a mapping reaches the driver (ApiImpl::HostRegisterV2, software mode)
            self._driver_host_register()
        self._record(ptr, size, host, pinned=bool(flag & REG_PINNED), mapped=mapped, flags=flag)

    @api("aclrtHostGetDevicePointer", gate=False)
    def host_get_device_pointer(self: Core, host_ptr: int, flag: int = 0) -> int:
        """The device address of registered, mapped host memory at `host_ptr` (aclrtHostGetDevicePointer).

        No chip gate: the driver query (or the runtime's own mapping table) finds nothing on a chip that
        cannot register -> 107000."""
        if host_ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "pHost is null")
        if flag != 0:
            fail(ACL_ERROR_INVALID_PARAM, f"flag must be 0, got {flag}")
        self.current_context()
        reg = self.space.registration(host_ptr)
        if reg is None or not (reg.alias is not None or reg.region.va_flag):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"pHost 0x{host_ptr:x} is not in a mapped host registration")
        if reg.alias is None:  # VA-consistent memory: the device sees it at the host address
            return host_ptr
        return reg.alias.base + (host_ptr - reg.base)

    @api("aclrtHostUnregister", gate=False)
    def host_unregister(self: Core, ptr: int) -> None:
        """Unregister the host range registered at `ptr`, its start (aclrtHostUnregister).

        ApiImpl::HostUnregister (software mode): context, then a mapped base goes to the driver
        (chip gate), a pinned base is dropped, anything else -> 507911."""
        if ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "ptr is null")
        self.current_context()
        reg = self.space.registration(ptr)
        if reg is None or reg.base != ptr:
            fail(ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, f"ptr 0x{ptr:x} is not the start of a registered host range")
        if reg.alias is not None or (reg.flags & (REG_MAPPED | REG_IOMEMORY | REG_READONLY)):
            self._driver_host_register()
        self.space.unregister(reg)


class PeerOps:
    """Peer access between devices (docs/conformance/hostmem_peer_capture.md), mixed into `Runtime`.

    Device ids: the ACL layer turns the peer into a physical id (rtGetDevicePhyIdByIndex: not a
    visible device -> 107001); the runtime maps the other id to a driver id only when
    ASCEND_RT_VISIBLE_DEVICES is set (not visible -> 107001), refuses ids >= RT_MAX_DEV_NUM (64,
    negative ints wrap to uint32) with 107000, and leaves any other bad id to the driver (107001).
    """

    def can_access(self: Core, dev: int, peer: int) -> bool:
        a, b = self.visible[dev], self.visible[peer]
        return any(a in g and b in g for g in self.product.peer_groups)

    def _visible_env(self: Core) -> bool:
        return self.visible != list(range(self.product.device_count))

    def _driver_id(self: Core, dev: int, what: str) -> int:
        """ChgUserDevIdToDeviceId, then the RT_MAX_DEV_NUM check (ApiErrorDecorator)."""
        if self._visible_env() and not 0 <= dev < len(self.visible):
            fail(ACL_ERROR_RT_INVALID_DEVICEID, f"{what} {dev} is not one of the {len(self.visible)} visible devices")
        return self._below_max(dev, what)

    @staticmethod
    def _below_max(dev: int, what: str) -> int:
        if not 0 <= dev < MAX_DEV_NUM:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{what} {dev} (as uint32 {dev & 0xFFFFFFFF}) is not below {MAX_DEV_NUM}")
        return dev

    def _driver_device(self: Core, dev: int, what: str) -> None:
        """The driver refuses an id that names no device (DRV_ERROR_INVALID_DEVICE -> 107001)."""
        if dev >= len(self.visible):
            fail(ACL_ERROR_RT_INVALID_DEVICEID, f"{what} {dev}: no such device ({len(self.visible)} devices on "
                                               f"{self.product.name})")

    def _p2p_feature(self: Core) -> None:
        if not self.product.has("p2p"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"peer access is not supported on {self.product.name}")

    def _default_device_context(self: Core, dev: int) -> None:
        """ApiImpl::CheckCurCtxValid: only with a default device (aclInit) and no context: opens it
        when `dev` is the default device, else 107002."""
        if self.default_device is None or self.ctx is not None:
            return
        if dev != self.default_device:
            fail(ACL_ERROR_RT_CONTEXT_NULL, f"no current context, and device {dev} is not the default device")
        self.current_context()

    def _current_device(self: Core) -> int:
        """rtGetDevice: the current context's device, else the default device, else 107002."""
        ctx = self.ctx
        if ctx is not None:
            return self.visible.index(ctx.device.id)
        if self.default_device is not None:
            return self.default_device
        fail(ACL_ERROR_RT_CONTEXT_NULL, "no current device: call aclrtSetDevice first")

    @api("aclrtDeviceCanAccessPeer", gate=False)
    def device_can_access_peer(self: Core, device_id: int, peer_device_id: int) -> int:
        """1 if device `device_id` can access the memory of `peer_device_id` on this product's topology, else 0
        (aclrtDeviceCanAccessPeer). The two must differ (100000); products without peer access and RC
        deployments raise 207000."""
        if device_id == peer_device_id:
            fail(ACL_ERROR_INVALID_PARAM, "deviceId and peerDeviceId must differ")
        self.physical(peer_device_id)
        self._driver_id(device_id, "deviceId")
        self._p2p_feature()
        if not self.product.ep_mode:  # ApiImpl::DeviceCanAccessPeer: RT_RUN_MODE_OFFLINE
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"peer access cannot be queried in {self.product.deployment} mode")
        self._default_device_context(device_id)
        self._driver_device(device_id, "deviceId")
        return int(self.can_access(device_id, peer_device_id))

    def _current_and_peer(self: Core, peer: int) -> int:
        """aclrtDeviceEnable/DisablePeerAccessImpl, then NpuDriver::Enable/DisableP2P's chip check."""
        cur = self._current_device()
        if cur == peer:
            fail(ACL_ERROR_INVALID_PARAM, f"peerDeviceId {peer} is the current device")
        self.physical(peer)
        self._p2p_feature()
        if self.product.deployment == "CTRL_CPU" and self.product.family == "310P":
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "no peer access with the control CPU open on 310P")
        return cur

    @api("aclrtDeviceEnablePeerAccess", gate=False)
    def device_enable_peer_access(self: Core, peer_device_id: int, flags: int = 0) -> None:
        """Let the current device access the memory of `peer_device_id`, one direction
        (aclrtDeviceEnablePeerAccess). flags must be 0 (200006); devices that share no interconnect raise
        507899."""
        if flags != 0:
            fail(ACL_ERROR_FEATURE_UNSUPPORTED, f"flags must be 0, got {flags}")
        cur = self._current_and_peer(peer_device_id)
        if not self.can_access(cur, peer_device_id):
            fail(ACL_ERROR_RT_DRV_INTERNAL_ERROR, f"devices {cur} and {peer_device_id} share no interconnect on {self.product.name}")
        self.peers.add((self.visible[cur], self.visible[peer_device_id]))

    @api("aclrtDeviceDisablePeerAccess", gate=False)
    def device_disable_peer_access(self: Core, peer_device_id: int) -> None:
        """Withdraw the current device's access to the memory of `peer_device_id` (aclrtDeviceDisablePeerAccess)."""
        cur = self._current_and_peer(peer_device_id)
        self.peers.discard((self.visible[cur], self.visible[peer_device_id]))

    @api("aclrtDevicePeerAccessStatus", gate=False)
    def device_peer_access_status(self: Core, device_id: int, peer_device_id: int) -> int:
        """1 when `device_id` may access `peer_device_id`, as aclrtDeviceEnablePeerAccess allows, else 0
        (aclrtDevicePeerAccessStatus). The peer is a physical id: the ACL layer does not convert it
        (aclrtDevicePeerAccessStatusImpl)."""
        self._driver_id(device_id, "deviceId")
        self._below_max(peer_device_id, "peerDeviceId")
        self._default_device_context(device_id)
        self._p2p_feature()
        self._driver_device(device_id, "deviceId")
        if peer_device_id >= self.product.device_count:
            fail(ACL_ERROR_RT_INVALID_DEVICEID, f"peerDeviceId {peer_device_id}: no such physical device")
        return int((self.visible[device_id], peer_device_id) in self.peers)

    def check_peer_copy(self: Core, src: Region, dst: Region) -> None:
        """A cross-device copy needs peer access enabled in one direction on most products
        (docs/conformance/memory_copies_fills.md, aclrtMemcpy row 10): else 507899."""
        if not (src.is_device and dst.is_device) or src.device == dst.device:
            return
        if "alias" in (src.origin, dst.origin) or not self.product.has("peer_copy_needs_enable"):
            return
        if (src.device, dst.device) not in self.peers and (dst.device, src.device) not in self.peers:
            fail(ACL_ERROR_RT_DRV_INTERNAL_ERROR, f"copy between device {src.device} and device {dst.device} needs "
                         f"aclrtDeviceEnablePeerAccess first on {self.product.name}")
