"""Peer access APIs: aclrtDeviceCanAccessPeer, aclrtDeviceEnablePeerAccess, aclrtDeviceDisablePeerAccess,
aclrtDevicePeerAccessStatus, and the check every copy between devices makes."""
from __future__ import annotations

from ..errors import (ACL_ERROR_FEATURE_UNSUPPORTED, ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_CONTEXT_NULL,
                      ACL_ERROR_RT_DRV_INTERNAL_ERROR, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                      ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_PARAM_INVALID)
from ..memory import Region
from .core import Core, api, fail


MAX_DEV_NUM = 64  # RT_MAX_DEV_NUM


def can_access(rt: Core, dev: int, peer: int) -> bool:
    a, b = rt.visible[dev], rt.visible[peer]
    return any(a in g and b in g for g in rt.product.peer_groups)


def _visible_env(rt: Core) -> bool:
    return rt.visible != list(range(rt.product.device_count))


def _driver_id(rt: Core, dev: int, what: str) -> int:
    """ChgUserDevIdToDeviceId, then the RT_MAX_DEV_NUM check (ApiErrorDecorator)."""
    if _visible_env(rt) and not 0 <= dev < len(rt.visible):
        fail(ACL_ERROR_RT_INVALID_DEVICEID, f"{what} {dev} is not one of the {len(rt.visible)} visible devices")
    return _below_max(dev, what)


def _below_max(dev: int, what: str) -> int:
    if not 0 <= dev < MAX_DEV_NUM:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{what} {dev} (as uint32 {dev & 0xFFFFFFFF}) is not below {MAX_DEV_NUM}")
    return dev


def _driver_device(rt: Core, dev: int, what: str) -> None:
    """The driver refuses an id that names no device (DRV_ERROR_INVALID_DEVICE -> 107001)."""
    if dev >= len(rt.visible):
        fail(ACL_ERROR_RT_INVALID_DEVICEID, f"{what} {dev}: no such device ({len(rt.visible)} devices on "
                                           f"{rt.product.name})")


def _p2p_feature(rt: Core) -> None:
    """The chip's peer access: the declared feature "p2p" of the peer-access APIs."""
    rt.feature_gate()


def _default_device_context(rt: Core, dev: int) -> None:
    """ApiImpl::CheckCurCtxValid: only with a default device (aclInit) and no context: opens it
    when `dev` is the default device, else 107002."""
    if rt.default_device is None or rt.ctx is not None:
        return
    if dev != rt.default_device:
        fail(ACL_ERROR_RT_CONTEXT_NULL, f"no current context, and device {dev} is not the default device")
    rt.current_context()


def _current_device(rt: Core) -> int:
    """rtGetDevice: the current context's device, else the default device, else 107002."""
    ctx = rt.ctx
    if ctx is not None:
        return rt.visible.index(ctx.device.id)
    if rt.default_device is not None:
        return rt.default_device
    fail(ACL_ERROR_RT_CONTEXT_NULL, "no current device: call aclrtSetDevice first")


@api("aclrtDeviceCanAccessPeer", gate=False, feature="p2p", pyacl="acl.rt.device_can_access_peer", params="ii",
     outputs=(0,))
def device_can_access_peer(rt: Core, device_id: int, peer_device_id: int) -> int:
    """1 if device `device_id` can access the memory of `peer_device_id` on this product's topology, else 0
    (aclrtDeviceCanAccessPeer). The two must differ (100000); products without peer access and RC
    deployments raise 207000."""
    if device_id == peer_device_id:
        fail(ACL_ERROR_INVALID_PARAM, "deviceId and peerDeviceId must differ")
    rt.physical(peer_device_id)
    _driver_id(rt, device_id, "deviceId")
    _p2p_feature(rt)
    if not rt.product.ep_mode:  # ApiImpl::DeviceCanAccessPeer: RT_RUN_MODE_OFFLINE
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"peer access cannot be queried in {rt.product.deployment} mode")
    _default_device_context(rt, device_id)
    _driver_device(rt, device_id, "deviceId")
    return int(can_access(rt, device_id, peer_device_id))


def _current_and_peer(rt: Core, peer: int) -> int:
    """aclrtDeviceEnable/DisablePeerAccessImpl, then NpuDriver::Enable/DisableP2P's chip check."""
    cur = _current_device(rt)
    if cur == peer:
        fail(ACL_ERROR_INVALID_PARAM, f"peerDeviceId {peer} is the current device")
    rt.physical(peer)
    _p2p_feature(rt)
    if rt.product.deployment == "CTRL_CPU" and rt.product.family == "310P":
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "no peer access with the control CPU open on 310P")
    return cur


@api("aclrtDeviceEnablePeerAccess", gate=False, feature="p2p", pyacl="acl.rt.device_enable_peer_access", params="ii")
def device_enable_peer_access(rt: Core, peer_device_id: int, flags: int = 0) -> None:
    """Let the current device access the memory of `peer_device_id`, one direction
    (aclrtDeviceEnablePeerAccess). flags must be 0 (200006); devices that share no interconnect raise
    507899."""
    if flags != 0:
        fail(ACL_ERROR_FEATURE_UNSUPPORTED, f"flags must be 0, got {flags}")
    cur = _current_and_peer(rt, peer_device_id)
    if not can_access(rt, cur, peer_device_id):
        fail(ACL_ERROR_RT_DRV_INTERNAL_ERROR, f"devices {cur} and {peer_device_id} share no interconnect on {rt.product.name}")
    rt.peers.add((rt.visible[cur], rt.visible[peer_device_id]))


@api("aclrtDeviceDisablePeerAccess", gate=False, feature="p2p", pyacl="acl.rt.device_disable_peer_access", params="i")
def device_disable_peer_access(rt: Core, peer_device_id: int) -> None:
    """Withdraw the current device's access to the memory of `peer_device_id` (aclrtDeviceDisablePeerAccess)."""
    cur = _current_and_peer(rt, peer_device_id)
    rt.peers.discard((rt.visible[cur], rt.visible[peer_device_id]))


@api("aclrtDevicePeerAccessStatus", gate=False, feature="p2p", pyacl="acl.rt.device_peer_access_status", params="ii",
     outputs=(0,))
def device_peer_access_status(rt: Core, device_id: int, peer_device_id: int) -> int:
    """1 when `device_id` may access `peer_device_id`, as aclrtDeviceEnablePeerAccess allows, else 0
    (aclrtDevicePeerAccessStatus). The peer is a physical id: the ACL layer does not convert it
    (aclrtDevicePeerAccessStatusImpl)."""
    _driver_id(rt, device_id, "deviceId")
    _below_max(peer_device_id, "peerDeviceId")
    _default_device_context(rt, device_id)
    _p2p_feature(rt)
    _driver_device(rt, device_id, "deviceId")
    if peer_device_id >= rt.product.device_count:
        fail(ACL_ERROR_RT_INVALID_DEVICEID, f"peerDeviceId {peer_device_id}: no such physical device")
    return int((rt.visible[device_id], peer_device_id) in rt.peers)


def check_peer_copy(rt: Core, src: Region, dst: Region) -> None:
    """A cross-device copy needs peer access enabled in one direction on most products
    (docs/conformance/memory_copies_fills.md, aclrtMemcpy row 10): else 507899."""
    if not (src.is_device and dst.is_device) or src.device == dst.device:
        return
    if "alias" in (src.origin, dst.origin) or not rt.product.has("peer_copy_needs_enable"):
        return
    if (src.device, dst.device) not in rt.peers and (dst.device, src.device) not in rt.peers:
        fail(ACL_ERROR_RT_DRV_INTERNAL_ERROR, f"copy between device {src.device} and device {dst.device} needs "
                     f"aclrtDeviceEnablePeerAccess first on {rt.product.name}")
