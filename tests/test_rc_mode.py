"""Deployment modes (the RC and control-CPU notes of hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md):
Ascend RC on Atlas 200I/500 A2 against EP on Atlas A2 (910B).

In RC the application runs on the board: host memory is device memory (aclrtMallocHost in
hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md), async
H2D/D2H/H2H run as on-device copies with neither kind auto-correction nor the EP-mode
rejection of async H2H, there are no 2D copies on 200I/500 A2, and peer access cannot be queried.
"""
from __future__ import annotations

import numpy as np
import pytest

import emu
import emu.acl as acl
from emu import AclError
from helpers import code

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

H2H, H2D, D2H, D2D, DEFAULT = 0, 1, 2, 3, 4
ACL_DEVICE, ACL_HOST = 0, 1  # aclrtRunMode
LOC_HOST, LOC_DEVICE = 0, 1  # aclrtMemLocationType
HBM_MEM, DDR_MEM = 1, 0
NORMAL_ONLY = 2
NPY_UINT8 = 2
N = 4096

INVALID_PARAM = 100000
RT_PARAM_INVALID = 107000
FEATURE_NOT_SUPPORT = 207000


def pattern(n=N, seed=0):
    return ((np.arange(n) * 7 + seed) % 251).astype(np.uint8)


def endpoints(task):
    """(source device, destination device) of a copy task, None for host memory."""
    if hasattr(task, "src"):
        return task.src, task.dst
    dev = task.device
    return {"h2d": (None, dev), "d2h": (dev, None), "d2d": (dev, dev), "h2h": (None, None)}.get(task.route,
                                                                                               (dev, -1))


@pytest.fixture
def rc(fresh):
    rt = fresh("200I_A2")
    rt.set_device(0)
    return rt


def host_buffer(rt, fill=0):
    h = rt.malloc_host(N)
    view = acl.util.ptr_to_numpy(h, (N,), NPY_UINT8)
    view[:] = fill
    return h, view


# ---------------------------------------------------------------------------
# Run mode and host memory
# ---------------------------------------------------------------------------

def test_run_mode_is_acl_device_on_200I_A2(rc):
    assert acl.rt.get_run_mode() == (ACL_DEVICE, 0)


def test_run_mode_is_acl_host_on_910B(rt):
    assert acl.rt.get_run_mode() == (ACL_HOST, 0)


def test_malloc_host_is_device_memory_in_rc(rc):
    h, _ = host_buffer(rc)
    a = rc.pointer_get_attributes(h)
    assert (int(a.type), a.id) == (LOC_DEVICE, 0)
    attrs, ret = acl.rt.pointer_get_attributes(h)
    assert ret == 0 and attrs["location"] == {"id": 0, "type": LOC_DEVICE}


def test_malloc_host_is_host_memory_in_ep(rt):
    h = rt.malloc_host(N)
    assert int(rt.pointer_get_attributes(h).type) == LOC_HOST


def test_malloc_host_uses_and_free_host_returns_board_memory(rc):
    free0, total = rc.get_mem_info(DDR_MEM)
    h, view = host_buffer(rc, 0x5A)
    free1, _ = rc.get_mem_info(DDR_MEM)
    assert free1 <= free0 - N  # taken from the board's memory
    assert (view == 0x5A).all()  # and the application reads it directly
    rc.free_host(h)
    assert rc.get_mem_info(DDR_MEM) == (free0, total)
    assert code(rc.free_host, h) != 0  # gone
    assert code(rc.pointer_get_attributes, h) == RT_PARAM_INVALID


def test_free_does_not_free_malloc_host_memory_in_rc(rc):
    h, _ = host_buffer(rc)
    assert code(rc.free, h) == RT_PARAM_INVALID
    rc.free_host(h)


# ---------------------------------------------------------------------------
# Async copies run as on-device copies
# ---------------------------------------------------------------------------

def test_async_h2h_between_malloc_host_buffers_moves_bytes_in_rc(rc):
    s = rc.create_stream()
    src, sv = host_buffer(rc)
    dst, dv = host_buffer(rc, 0xEE)
    sv[:] = pattern()
    rc.memcpy_async(dst, N, src, N, H2H, s)
    assert (dv == 0xEE).all()  # queued on the stream, not done yet
    rc.synchronize_stream(s)
    np.testing.assert_array_equal(dv, pattern())
    (task,) = [t for t in rc.machine.records if t.label == "aclrtMemcpyAsync"]
    assert endpoints(task) == (0, 0)  # an on-device copy


def test_async_h2h_between_malloc_host_buffers_is_refused_in_ep(rt):
    s = rt.create_stream()
    src, dst = rt.malloc_host(N), rt.malloc_host(N)
    assert code(rt.memcpy_async, dst, N, src, N, H2H, s) == FEATURE_NOT_SUPPORT
    assert code(rt.memcpy_async, dst, N, src, N, DEFAULT, s) == FEATURE_NOT_SUPPORT


def test_async_h2d_and_d2h_run_as_d2d_in_rc(rc):
    s = rc.create_stream()
    h, hv = host_buffer(rc)
    d = rc.malloc(N, NORMAL_ONLY)
    hv[:] = pattern(seed=1)
    rc.memcpy_async(d, N, h, N, H2D, s)
    back, bv = host_buffer(rc, 0xEE)
    rc.memcpy_async(back, N, d, N, D2H, s)
    rc.synchronize_stream(s)
    np.testing.assert_array_equal(bv, pattern(seed=1))
    copies = [endpoints(t) for t in rc.machine.records if t.label == "aclrtMemcpyAsync"]
    assert copies == [(0, 0), (0, 0)]  # both on-device copies


def test_async_copies_keep_the_given_kind_in_rc(rc):
    """No auto-correction: a kind that contradicts the addresses is neither corrected nor refused."""
    s = rc.create_stream()
    h, hv = host_buffer(rc)
    d = rc.malloc(N, NORMAL_ONLY)
    hv[:] = pattern(seed=5)
    rc.memcpy_async(d, N, h, N, D2H, s)  # really host -> device
    back, bv = host_buffer(rc, 0xEE)
    rc.memcpy_async(back, N, d, N, H2D, s)  # really device -> host
    rc.synchronize_stream(s)
    np.testing.assert_array_equal(bv, pattern(seed=5))


def test_application_memory_with_a_contradicting_kind_in_rc_and_ep(fresh):
    """Kind correction refuses UNREGISTERED -> DEVICE with D2H in EP (docs/conformance/memory_copies_fills.md#copies);
    RC has no correction."""
    results = {}
    for product in ("200I_A2", "910B"):
        rt = fresh(product)
        rt.set_device(0)
        s = rt.create_stream()
        arr = pattern(seed=9)
        d = rt.malloc(N, NORMAL_ONLY)
        results[product] = code(rt.memcpy_async, d, N, acl.util.numpy_to_ptr(arr), N, D2H, s)
        if results[product] == 0:
            rt.synchronize_stream(s)
            out = np.zeros(N, dtype=np.uint8)
            rt.memcpy(acl.util.numpy_to_ptr(out), N, d, N, D2H)
            np.testing.assert_array_equal(out, arr)
    assert results == {"200I_A2": 0, "910B": RT_PARAM_INVALID}


def test_sync_copies_work_in_rc(rc):
    h, hv = host_buffer(rc)
    d = rc.malloc(N, NORMAL_ONLY)
    hv[:] = pattern(seed=2)
    rc.memcpy(d, N, h, N, H2D)
    back, bv = host_buffer(rc)
    rc.memcpy(back, N, d, N, D2H)
    np.testing.assert_array_equal(bv, pattern(seed=2))


# ---------------------------------------------------------------------------
# No 2D copies on 200I/500 A2; no peer access query in RC
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", [H2D, D2H])
def test_memcpy2d_is_not_supported_on_200I_A2(rc, kind):
    h, _ = host_buffer(rc)
    d = rc.malloc(N, NORMAL_ONLY)
    dst, src = (d, h) if kind == H2D else (h, d)
    assert code(rc.memcpy2d, dst, 64, src, 64, 64, N // 64, kind) == FEATURE_NOT_SUPPORT


@pytest.mark.parametrize("kind", [H2D, D2H, D2D])
def test_memcpy2d_async_is_not_supported_on_200I_A2(rc, kind):
    s = rc.create_stream()
    h, _ = host_buffer(rc)
    d, d2 = rc.malloc(N, NORMAL_ONLY), rc.malloc(N, NORMAL_ONLY)
    dst, src = {H2D: (d, h), D2H: (h, d), D2D: (d2, d)}[kind]
    assert code(rc.memcpy2d_async, dst, 64, src, 64, 64, N // 64, kind, s) == FEATURE_NOT_SUPPORT


def test_memcpy2d_works_on_910B(rt):
    h = rt.malloc_host(N)
    acl.util.ptr_to_numpy(h, (N,), NPY_UINT8)[:] = pattern()
    d = rt.malloc(N, NORMAL_ONLY)
    assert code(rt.memcpy2d, d, 64, h, 64, 64, N // 64, H2D) == 0


def test_memcpy2d_zero_size_still_returns_0_on_200I_A2(rc):
    # before any check (the runtime's unit test aclrtMemcpy2d_zero_size_return_before_param_check of
    # hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp)
    assert code(rc.memcpy2d, 0, 0, 0, 0, 0, 1, 0x7FFFFFFF) == 0


def test_device_can_access_peer_checks_the_peer_id_before_the_rc_mode_gate(rc):
    """aclrtDeviceCanAccessPeer validates both device ids first (107001 for a peer the one-device board does
    not have), then refuses RC / offline mode (207000): api_impl.cc ApiImpl::DeviceCanAccessPeer."""
    assert code(rc.device_can_access_peer, 0, 1) == 107001
    assert acl.rt.device_can_access_peer(0, 1) == (0, 107001)


def test_device_can_access_peer_is_not_supported_in_rc_mode(tmp_path):
    """With a second device for the ids to pass, RC mode is refused: 207000 (offline-mode check)."""
    cfg = tmp_path / "200I-two.toml"
    cfg.write_text('inherit = "200I_A2"\n[product]\nname = "200I-two"\n[devices]\ncount = 2\n'
                   '[devices.source]\ncount = "A: a two-device board, for the peer id to be valid"\n')
    r = emu.configure(product=cfg)
    r.set_device(0)
    assert code(r.device_can_access_peer, 0, 1) == FEATURE_NOT_SUPPORT


def test_device_can_access_peer_works_on_910B(rt):
    assert rt.device_can_access_peer(0, 1) == 1  # 910B: 8 devices, HCCS full mesh


# ---------------------------------------------------------------- control-CPU mode
# (the control-CPU notes of hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md)

def _ctrl_cpu_310p(tmp_path):
    cfg = tmp_path / "310P-ctrl.toml"
    cfg.write_text('inherit = "310P"\n[product]\nname = "310P-ctrl"\ndeployment = "CTRL_CPU"\n')
    rt = emu.configure(product=cfg)
    rt.set_device(0)
    return rt


def test_ctrl_cpu_310p_refuses_2d_copies(tmp_path):
    """Control-CPU mode (aclrtMemcpy2d in hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md): with the
    control CPU open, 310P has no 2D copy (207000). A null stream is refused before that (107000: dc has no default
    stream for 2D copies, runtime.cc Runtime::GetCurStream)."""
    rt = _ctrl_cpu_310p(tmp_path)
    h, d, s = rt.malloc_host(4096), rt.malloc(4096), rt.create_stream()
    for call in (lambda: rt.memcpy2d(d, 64, h, 64, 32, 4, 1), lambda: rt.memcpy2d_async(d, 64, h, 64, 32, 4, 1, s)):
        with pytest.raises(emu.AclError) as ei:
            call()
        assert ei.value.code == 207000
    assert code(rt.memcpy2d_async, d, 64, h, 64, 32, 4, 1, 0) == RT_PARAM_INVALID


def test_ctrl_cpu_310p_refuses_peer_access(tmp_path):
    """Control-CPU mode (aclrtDeviceCanAccessPeer in hicann/runtime docs/zh/api_ref/04_device_management.md): no P2P
    on 310P with the control CPU open (207000), where EP 310P allows it."""
    rt = _ctrl_cpu_310p(tmp_path)
    for call in (lambda: rt.device_can_access_peer(0, 1), lambda: rt.device_enable_peer_access(1, 0)):
        with pytest.raises(emu.AclError) as ei:
            call()
        assert ei.value.code == 207000
    ep = emu.configure(product="310P")
    ep.set_device(0)
    assert ep.device_can_access_peer(0, 1) == 1


def test_ctrl_cpu_async_copies_follow_the_rc_rule(tmp_path):
    """12: the control CPU follows RC's copy rule: no kind correction and no EP H2H rejection; the run mode is
    ACL_DEVICE."""
    rt = _ctrl_cpu_310p(tmp_path)
    assert rt.get_run_mode() == 0
    a, b = rt.malloc_host(256), rt.malloc_host(256)
    rt.host_array(a, 256)[:] = 5
    rt.memcpy_async(b, 256, a, 256, 0, 0)  # HOST_TO_HOST async: refused in EP mode
    rt.synchronize_stream(0)
    assert (rt.host_array(b, 256) == 5).all()
