"""Peer access between devices and cross-device copies (docs/conformance/hostmem_peer_capture.md#peer-access,
docs/conformance/products.md; the peer-access APIs in hicann/runtime docs/zh/api_ref/04_device_management.md).

aclrtDeviceCanAccessPeer, aclrtDeviceEnablePeerAccess, aclrtDeviceDisablePeerAccess
and aclrtDevicePeerAccessStatus: their chains with exact codes (UT <name>: the test <name> of
hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp), the
topology (configs/910.toml: two HCCS groups of four), the one-direction rule,
the RC-mode rejection, and what peer access means for copies between devices.
"""
from __future__ import annotations

import numpy as np
import pytest

import emu.acl as acl
from emu import AclError
from helpers import code, read_device

H2D, D2H, D2D = 1, 2, 3
NORMAL_ONLY, HUGE_FIRST_P2P = 2, 3
OLD = 0xEE


def on(fresh, product):
    r = fresh(product)
    r.set_device(0)
    return r


def pattern(n, seed=0):
    return np.resize(((np.arange(251) * 7 + seed * 31 + 1) % 251).astype(np.uint8), n)


def write_device(rt, ptr, data):
    src = np.ascontiguousarray(data, dtype=np.uint8)
    rt.memcpy(ptr, src.nbytes, rt.register_host(src), src.nbytes, H2D)


def buffers(rt, n=256):
    """(src on device 0 holding pattern(n), dst on device 1 holding OLD); device 0 is current after."""
    rt.set_device(1)
    dst = rt.malloc(n, NORMAL_ONLY)
    rt.memset(dst, n, OLD, n)
    rt.set_device(0)
    src = rt.malloc(n, NORMAL_ONLY)
    write_device(rt, src, pattern(n))
    return src, dst


def rc_config(tmp_path, keep_doc_gates):
    """A 200I/500A2 (RC mode) config with 2 devices; optionally without the docs' P2P API gates, so
    that only the runtime's offline-mode check can reject CanAccessPeer."""
    text = ('inherit = "200I_A2"\n\n[product]\nname = "200I_A2_x2"\n\n'
            '[devices]\ncount = 2\n\n[devices.source]\n'
            'count = "A: two devices in RC mode, a test configuration (one SoC per board in reality)"\n')
    if not keep_doc_gates:
        text += '\n[api]\nunsupported = []\n'
    path = tmp_path / "200I_A2_x2.toml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------
# aclrtDeviceCanAccessPeer (docs/conformance/hostmem_peer_capture.md#peer-access)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dev", [0, 3])
def test_can_access_peer_same_device_is_invalid_param(rt, dev):
    """peer access / UT aclDeviceCanAccessPeerTest: aclrtDeviceCanAccessPeer(&c, 0, 0) -> 100000 (dev == peer)."""
    assert code(rt.device_can_access_peer, dev, dev) == 100000
    assert acl.rt.device_can_access_peer(dev, dev) == (0, 100000)


@pytest.mark.parametrize("dev,peer", [(0, 8), (0, -1), (0, 64), (8, 0)])
def test_can_access_peer_bad_device_id_is_107001(rt, dev, peer):
    """peer access: a peer (ACL layer) or device (runtime) outside the visible devices -> 107001."""
    assert acl.rt.device_can_access_peer(dev, peer) == (0, 107001)


@pytest.mark.parametrize("dev,peer", [(0, 1), (1, 0), (0, 7), (5, 2)])
def test_can_access_peer_910b_any_pair_is_1(rt, dev, peer):
    """peer access / configs/910B.toml: A2 devices share one interconnect: any pair -> 1."""
    assert acl.rt.device_can_access_peer(dev, peer) == (1, 0)


@pytest.mark.parametrize("dev,peer,can", [(0, 1, 1), (0, 3, 1), (5, 6, 1), (0, 4, 0), (4, 0, 0), (3, 7, 0)])
def test_can_access_peer_910_follows_hccs_groups(fresh, dev, peer, can):
    """peer access / configs/910.toml: 910 has two HCCS groups {0..3} and {4..7}: a pair inside one group -> 1,
    across the groups -> 0 (return code 0 both ways)."""
    on(fresh, "910")
    assert acl.rt.device_can_access_peer(dev, peer) == (can, 0)


def test_can_access_peer_rc_mode_is_207000(fresh, tmp_path):
    """peer access / RC mode: in RC (offline) mode CanAccessPeer -> 207000, even with the P2P flag set (mini_v3).
    Checked on a 2-device 200I/500A2 config without the docs' API gates, so the RC check answers."""
    r = fresh(rc_config(tmp_path, keep_doc_gates=False))
    r.set_device(0)
    assert r.product.has("p2p") and not r.product.ep_mode
    assert acl.rt.device_can_access_peer(0, 1) == (0, 207000)


def test_can_access_peer_200i_a2_docs_unsupported_is_207000(fresh, tmp_path):
    """products: CanAccessPeer is N for 200I/500A2 in the docs -> 207000 (2-device config inheriting 200I_A2)."""
    on(fresh, rc_config(tmp_path, keep_doc_gates=True))
    assert acl.rt.device_can_access_peer(0, 1) == (0, 207000)


def two_devices(tmp_path, product):
    """A config inheriting `product` with 2 devices, so that a peer id passes the ACL layer's check."""
    path = tmp_path / f"{product}_x2.toml"
    path.write_text(f'inherit = "{product}"\n\n[product]\nname = "{product}_x2"\n\n[devices]\ncount = 2\n\n'
                    f'[devices.source]\ncount = "A: two devices, a test configuration"\n')
    return path


def test_can_access_peer_unsupported_on_ipv350_is_207000(fresh, tmp_path):
    """products: no P2P flag on IPV350 -> 207000 (ApiImpl::DeviceCanAccessPeer). On the one-device IPV350
    the peer 1 fails the ACL layer's physical-id conversion first (107001), so a 2-device IPV350 is
    used. Changed: the gate is the runtime's P2P flag, after the ACL checks, not the docs' matrix."""
    on(fresh, two_devices(tmp_path, "IPV350"))
    assert acl.rt.device_can_access_peer(0, 1)[1] == 207000
    on(fresh, "IPV350")
    assert acl.rt.device_can_access_peer(0, 1)[1] == 107001


# ---------------------------------------------------------------------------
# aclrtDeviceEnablePeerAccess / aclrtDeviceDisablePeerAccess (docs/conformance/hostmem_peer_capture.md#peer-access)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("flags", [1, 2, 0x80000000])
def test_enable_peer_access_nonzero_flags_is_200006(rt, flags):
    """peer access / UT aclEnablePeerAccessTest: aclrtDeviceEnablePeerAccess(0, flags 1) -> 200006, before any other
    check (here peer 0 is even the current device)."""
    assert acl.rt.device_enable_peer_access(0, flags) == 200006
    assert acl.rt.device_enable_peer_access(1, flags) == 200006
    assert rt.device_peer_access_status(0, 1) == 0


def test_enable_peer_access_no_current_device_is_107002(fresh):
    """peer access / no context: no current device (no aclrtSetDevice on this thread) -> 107002."""
    fresh("910B")
    assert acl.rt.device_enable_peer_access(1, 0) == 107002


def test_enable_peer_access_peer_is_current_device_is_invalid_param(rt):
    """peer access: current == peer -> 100000."""
    rt.set_device(2)
    assert acl.rt.device_enable_peer_access(2, 0) == 100000


@pytest.mark.parametrize("peer", [8, -1, 64])
def test_enable_peer_access_bad_peer_is_107001(rt, peer):
    """peer access: the peer's physical-ID conversion fails -> 107001."""
    assert acl.rt.device_enable_peer_access(peer, 0) == 107001


def test_enable_peer_access_enables_one_direction(rt):
    """peer access (aclrtDeviceEnablePeerAccess in hicann/runtime docs/zh/api_ref/04_device_management.md): Enable
    from device 0 toward 1 enables 0 -> 1 only: DevicePeerAccessStatus(0, 1) = 1, (1, 0) = 0."""
    assert acl.rt.device_enable_peer_access(1, 0) == 0
    assert acl.rt.device_peer_access_status(0, 1) == (1, 0)
    assert acl.rt.device_peer_access_status(1, 0) == (0, 0)
    assert acl.rt.device_peer_access_status(0, 2) == (0, 0)


def test_enable_disable_peer_access_unsupported_is_207000(fresh, tmp_path):
    """products: no P2P flag (IPV350) -> 207000 from NpuDriver::Enable/DisableP2P, after the ACL layer's
    peer conversion. Changed: on the one-device 200I/500A2 and IPV350 the peer 1 is refused first
    by that conversion (107001); the docs' N for 200I is not a runtime gate (mini_v3 has the P2P flag)."""
    on(fresh, two_devices(tmp_path, "IPV350"))
    assert acl.rt.device_enable_peer_access(1, 0) == 207000
    assert acl.rt.device_disable_peer_access(1) == 207000
    for product in ("200I_A2", "IPV350"):
        on(fresh, product)
        assert acl.rt.device_enable_peer_access(1, 0) == 107001
        assert acl.rt.device_disable_peer_access(1) == 107001


def test_disable_peer_access_current_device_is_invalid_param(rt):
    """peer access / UT aclDisablePeerAccessTest: aclrtDeviceDisablePeerAccess(current device) -> 100000."""
    assert acl.rt.device_disable_peer_access(0) == 100000


def test_disable_peer_access_removes_the_direction(rt):
    """peer access: Disable removes current -> peer: the status goes back to 0, the other direction stays."""
    rt.device_enable_peer_access(1, 0)
    rt.set_device(1)
    rt.device_enable_peer_access(0, 0)
    rt.set_device(0)
    assert acl.rt.device_disable_peer_access(1) == 0
    assert acl.rt.device_peer_access_status(0, 1) == (0, 0)
    assert acl.rt.device_peer_access_status(1, 0) == (1, 0)


def test_disable_peer_access_bad_peer_is_107001(rt):
    """peer access: Disable checks the peer like Enable: outside the visible devices -> 107001."""
    assert acl.rt.device_disable_peer_access(8) == 107001


# ---------------------------------------------------------------------------
# aclrtDevicePeerAccessStatus (docs/conformance/hostmem_peer_capture.md#peer-access)
# ---------------------------------------------------------------------------

def test_peer_access_status_on_200i_a2_is_0(fresh):
    """peer access / products: DevicePeerAccessStatus is supported on 200I/500A2 per the docs (the runtime's P2P flag
    is set for mini_v3): it answers 0 with return code 0."""
    on(fresh, "200I_A2")
    assert acl.rt.device_peer_access_status(0, 0) == (0, 0)


def test_peer_access_status_unsupported_on_ipv350_is_207000(fresh):
    """products: not supported on IPV350 -> 207000."""
    on(fresh, "IPV350")
    assert acl.rt.device_peer_access_status(0, 0)[1] == 207000


# ---------------------------------------------------------------------------
# Cross-device copies (docs/conformance/hostmem_peer_capture.md#peer-access;
# docs/conformance/memory_copies_fills.md#copies)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("api", ["memcpy", "memcpy_async"])
def test_cross_device_copy_without_peer_access_is_507899_on_910b(rt, api):
    """peer access (emulator rule; 507899 is the emulator's choice, the driver's code not being visible): on A2 a copy
    between devices needs EnablePeerAccess in one direction; with neither enabled the copy fails and nothing moves."""
    src, dst = buffers(rt)
    s = rt.create_stream()
    if api == "memcpy":
        assert acl.rt.memcpy(dst, 256, src, 256, D2D) == 507899
    else:
        assert acl.rt.memcpy_async(dst, 256, src, 256, D2D, s) == 507899
        rt.synchronize_stream(s)
    rt.set_device(1)
    assert (read_device(rt, dst, 256) == OLD).all()


@pytest.mark.parametrize("direction", ["0->1", "1->0"])
@pytest.mark.parametrize("api", ["memcpy", "memcpy_async"])
def test_cross_device_copy_after_enable_moves_bytes_on_910b(rt, api, direction):
    """peer access: once peer access is enabled in either direction (source toward destination,
    or destination toward source as Huawei's P2P copy sample does), a device 0 -> device 1 copy moves the bytes."""
    src, dst = buffers(rt)
    if direction == "0->1":
        rt.device_enable_peer_access(1, 0)
    else:
        rt.set_device(1)
        rt.device_enable_peer_access(0, 0)
        rt.set_device(0)
    if api == "memcpy":
        assert acl.rt.memcpy(dst, 256, src, 256, D2D) == 0
    else:
        s = rt.create_stream()
        assert acl.rt.memcpy_async(dst, 256, src, 256, D2D, s) == 0
        assert acl.rt.synchronize_stream(s) == 0
    assert (read_device(rt, dst, 256) == pattern(256)).all()


def test_cross_device_copy_after_disable_fails_again_on_910b(rt):
    """peer access: disabling the only enabled direction makes the copy fail again (507899)."""
    src, dst = buffers(rt)
    rt.device_enable_peer_access(1, 0)
    rt.device_disable_peer_access(1)
    assert acl.rt.memcpy(dst, 256, src, 256, D2D) == 507899


@pytest.mark.parametrize("api", ["memcpy", "memcpy_async"])
def test_cross_device_copy_on_a3_needs_no_enable(fresh, api):
    """peer access: A3 is not among the products whose cross-device copy needs EnablePeerAccess: the copy works
    with peer access never enabled."""
    r = on(fresh, "A3")
    src, dst = buffers(r)
    assert r.device_peer_access_status(0, 1) == 0 and r.device_peer_access_status(1, 0) == 0
    if api == "memcpy":
        assert acl.rt.memcpy(dst, 256, src, 256, D2D) == 0
    else:
        s = r.create_stream()
        assert acl.rt.memcpy_async(dst, 256, src, 256, D2D, s) == 0
        r.synchronize_stream(s)
    assert (read_device(r, dst, 256) == pattern(256)).all()


# ---------------------------------------------------------------------------
# Huawei's P2P copy sample (the example the aclrtDeviceEnablePeerAccess reference points to)
# ---------------------------------------------------------------------------

def test_seed002_p2p_copy_sample(acl):
    """The cross-device sample
    (https://www.hiascend.com/document/detail/en/canncommercial/850/API/appdevgapi/aclcppdevg_03_0052.html, "Data
    Transfer Between Devices"), call for call, on 910B: CanAccessPeer(0, 1), SetDevice(0), Enable(1), Malloc(P2P),
    SetDevice(1), Enable(0), Malloc(P2P), Memcpy device 0 -> device 1, Disable(0), Free, ResetDevice(1), SetDevice(0),
    Disable(1), Free, ResetDeviceForce(0). Every return code is 0, and the 10 bytes arrive (filled on device 0 before,
    read on device 1 after)."""
    rt = acl.rt
    assert acl.init() == 0
    can, ret = rt.device_can_access_peer(0, 1)
    assert (can, ret) == (1, 0)
    assert rt.set_device(0) == 0
    assert rt.device_enable_peer_access(1, 0) == 0
    dev0, ret = rt.malloc(10, HUGE_FIRST_P2P)
    assert ret == 0
    data = pattern(10)
    assert rt.memcpy(dev0, 10, acl.util.bytes_to_ptr(data.tobytes()), 10, H2D) == 0
    assert rt.set_device(1) == 0
    assert rt.device_enable_peer_access(0, 0) == 0
    dev1, ret = rt.malloc(10, HUGE_FIRST_P2P)
    assert ret == 0
    assert rt.memcpy(dev1, 10, dev0, 10, D2D) == 0
    out = bytes(10)
    assert rt.memcpy(acl.util.bytes_to_ptr(out), 10, dev1, 10, D2H) == 0
    assert out == data.tobytes()
    assert rt.device_disable_peer_access(0) == 0
    assert rt.free(dev1) == 0
    assert rt.reset_device(1) == 0
    assert rt.set_device(0) == 0
    assert rt.device_disable_peer_access(1) == 0
    assert rt.free(dev0) == 0
    assert rt.reset_device_force(0) == 0
    assert acl.finalize() == 0


# ---------------------------------------------------------------------------
# Order: the ACL layer's checks come before the runtime's product gate
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("call,expected", [("can_access_same_device", 100000), ("enable_flags_1", 200006),
                                           ("disable_current", 100000)])
def test_peer_acl_checks_come_before_product_gate(fresh, call, expected):
    """call chain / product gate / peer access / UT aclDeviceCanAccessPeerTest, aclEnablePeerAccessTest,
    aclDisablePeerAccessTest: ACL checks run before the runtime (and its gates), so on 200I/500A2, where the docs mark
    the peer APIs N, CanAccessPeer(0, 0) is still 100000, Enable(flags 1) 200006 and Disable(current device) 100000."""
    on(fresh, "200I_A2")
    result = {"can_access_same_device": lambda: acl.rt.device_can_access_peer(0, 0)[1],
              "enable_flags_1": lambda: acl.rt.device_enable_peer_access(0, 1),
              "disable_current": lambda: acl.rt.device_disable_peer_access(0)}[call]()
    assert result == expected
