"""Conformance: host registration, peer access and graph capture, check by check, in the reference
runtime's order (docs/conformance/hostmem_peer_capture.md; hicann/runtime 681ef7610).

Each test is one row of that document (its family letter and number in the name's docstring).
Source paths are relative to src/; ACLMEM = acl/aclrt_impl/memory.cpp, ACLMRI =
acl/aclrt_impl/model_ri.cpp, ERR = runtime/api/impl/api_error.cc, IMPL = runtime/api/impl/api_impl.cc,
DRV = runtime/driver/npu_driver_mem.cc, DRVN = runtime/driver/npu_driver.cc, RTCS =
runtime/api/api_c_standard_soc.cc, RTC = runtime/api/api_c.cc, ERRG / IMPLG / CTXG =
runtime/feature/aclgraph/{api_error_aclgraph.cc, v100/api_impl_aclgraph.cc, context_aclgraph.cc}.
"""
from __future__ import annotations

import json
import threading

import pytest

import emu
from emu import AclError
from helpers import code, device, pageable, pinned

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

KiB = 1 << 10
ATTR_RSV, ATTR_MODULE_ID, ATTR_VA_FLAG = 0, 1, 3
HOST_REGISTER_MAPPED = 0
REG_MAPPED, REG_PINNED = 0x2, 0x10000000
GLOBAL, THREAD_LOCAL, RELAXED = 0, 1, 2
NONE, ACTIVE = 0, 1
DEVICE_USE_ONLY = 0x20


def in_thread(fn):
    """fn() on a new host thread (no current context there): its value or AclError code."""
    out = {}

    def body():
        try:
            out["v"] = fn()
        except AclError as e:
            out["v"] = e.code

    t = threading.Thread(target=body)
    t.start()
    t.join(30)
    return out["v"]


def on(product="910B", device_id=0):
    r = emu.configure(product=product, functional=True)
    if device_id is not None:
        r.set_device(device_id)
    return r


def config(tmp_path, product, count=2):
    """A config inheriting `product` with `count` devices."""
    path = tmp_path / f"{product}_x{count}.toml"
    path.write_text(f'inherit = "{product}"\n\n[product]\nname = "{product}_x{count}"\n\n[devices]\ncount = {count}\n'
                    f'\n[devices.source]\ncount = "A: a test configuration"\n')
    return str(path)


def with_default_device(tmp_path, dev=0):
    r = on(device_id=None)
    cfg = tmp_path / "acl.json"
    cfg.write_text(json.dumps({"defaultDevice": {"default_device": str(dev)}}))
    r.init(str(cfg))
    return r


# ---------------------------------------------------------------------------
# Host registration (HR)
# ---------------------------------------------------------------------------

def test_hr1_malloc_host_with_cfg_size_zero_is_100000():
    """HR1: ACLMEM aclrtMallocHostWithCfgImpl: ACL_REQUIRES_POSITIVE(size) -> 100000."""
    assert code(on().malloc_host_with_cfg, 0, None) == 100000


@pytest.mark.parametrize("cfg", [[], [{"attr": ATTR_RSV, "value": 0}]])
def test_hr2_malloc_host_with_cfg_config_is_checked_before_the_context(cfg):
    """HR2-3: IMPL ApiImpl::HostMallocWithCfg / GetMallocHostConfigAttr: a config without attributes
    or with an attribute other than MODULE_ID / VA_FLAG -> 107000, before the context check (here
    there is none). The emulator used to check the context first (107002)."""
    assert code(on(device_id=None).malloc_host_with_cfg, 64, cfg) == 107000


def test_hr4_malloc_host_with_cfg_no_context_is_107002():
    """HR4: IMPL ApiImpl::HostMallocWithCfg: CHECK_CONTEXT_VALID -> 107002."""
    assert code(on(device_id=None).malloc_host_with_cfg, 64, [{"attr": ATTR_MODULE_ID, "value": 1}]) == 107002


def test_hr5_malloc_host_with_cfg_va_flag_without_driver_support_is_207000():
    """HR5: RTCM rtsMallocHost: the driver's RT_ERROR_DRV_NOT_SUPPORT for VA_FLAG -> 207000 (950)."""
    assert code(on("950PR").malloc_host_with_cfg, 64, [{"attr": ATTR_VA_FLAG, "value": 1}]) == 207000


@pytest.mark.parametrize("args", [(0, 64), (None, 0)])
def test_hr6_host_register_null_or_size_zero_is_100000(args):
    """HR6: ACLMEM aclrtHostRegisterImpl: ptr null, size 0 -> 100000."""
    r = on()
    p, _ = pageable(64)
    assert code(r.host_register, p if args[0] is None else 0, args[1]) == 100000


def test_hr7_host_register_type_is_checked_before_the_context():
    """HR7: ERR ApiErrorDecorator::HostRegister: type & ~(IOMEMORY|READONLY) -> 207000, before the
    context (ApiImpl)."""
    r = on(device_id=None)
    p, _ = pageable(64)
    assert code(r.host_register, p, 64, 0x1) == 207000


@pytest.mark.parametrize("product", ["910B", "310P"])
def test_hr8_host_register_no_context_is_107002_even_without_the_feature(product):
    """HR8: IMPL ApiImpl::HostRegister: no context -> 107002, before the driver's chip check, so 310P
    answers 107002 too (the emulator used to answer 207000 on 310P)."""
    r = on(product, None)
    p, _ = pageable(64)
    assert code(r.host_register, p, 64) == 107002


def test_hr9_host_register_chip_without_host_register_is_207000():
    """HR9: DRV NpuDriver::HostRegister: no RT_FEATURE_MEM_HOST_REGISTER -> 207000."""
    r = on("310P")
    p, _ = pageable(64)
    assert code(r.host_register, p, 64) == 207000


def test_hr10_host_register_device_memory_is_107000():
    """HR10: the driver refuses a device address (inferred: halHostRegister DRV_ERROR_INVALID_VALUE)."""
    r = on()
    assert code(r.host_register, device(r, 64), 64) == 107000


def test_hr11_host_register_overlap_is_507910():
    """HR11: DRV NpuDriver::HostRegister: DRV_ERROR_BUSY -> 507910 (already registered)."""
    r = on()
    p, _ = pageable(4 * KiB)
    r.host_register(p, 4 * KiB)
    assert code(r.host_register, p + 1, 64) == 507910


@pytest.mark.parametrize("args", [(0, 64), (None, 0)])
def test_hr12_host_register_v2_null_or_size_zero_is_100000(args):
    """HR12: ACLMEM aclrtHostRegisterV2Impl: ptr null, size 0 -> 100000."""
    r = on()
    p, _ = pageable(64)
    assert code(r.host_register_v2, p if args[0] is None else 0, args[1], REG_PINNED) == 100000


def test_hr13_host_register_v2_flag_is_checked_before_the_context():
    """HR13: ERR ApiErrorDecorator::HostRegisterV2: flag not a non-empty subset -> 107000, no context needed."""
    r = on(device_id=None)
    p, _ = pageable(64)
    assert code(r.host_register_v2, p, 64, 0) == 107000


def test_hr14_host_register_v2_no_context_is_107002():
    """HR14: IMPL ApiImpl::HostRegisterV2: no context -> 107002."""
    r = on(device_id=None)
    p, _ = pageable(64)
    assert code(r.host_register_v2, p, 64, REG_PINNED) == 107002


def test_hr15_host_register_v2_overlap_is_checked_before_the_chip():
    """HR15: IMPL ApiImpl::HostRegisterV2 (software mode): CheckMemoryRangeRegistered -> 507910 comes
    before the driver call, so on 310P an overlapping MAPPED request is 507910, not 207000."""
    r = on("310P")
    p, _ = pageable(4 * KiB)
    r.host_register_v2(p, 4 * KiB, REG_PINNED)
    assert code(r.host_register_v2, p + 1, 64, REG_MAPPED) == 507910


def test_hr16_host_register_v2_mapping_on_chip_without_host_register_is_207000():
    """HR16: IMPL ApiImpl::HostRegisterV2 -> DRV NpuDriver::HostRegister: a mapping on 310P -> 207000."""
    r = on("310P")
    p, _ = pageable(64)
    assert code(r.host_register_v2, p, 64, REG_MAPPED | REG_PINNED) == 207000


def test_hr17_host_register_v2_pinned_only_never_reaches_the_driver():
    """HR17: IMPL ApiImpl::HostRegisterV2 (software mode): PINNED alone is recorded by the runtime
    with no driver call, so no chip check: 0 on 310P. ⚠ The docs (aclrtHostRegisterV2 in
    hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md) mark V2 unsupported on
    310P; the source wins. With a driver that pins (driver mode) the driver's check would apply."""
    r = on("310P")
    p, _ = pageable(64)
    r.host_register_v2(p, 64, REG_PINNED)
    assert r.pointer_get_attributes(p).type == 0  # HOST


@pytest.mark.parametrize("args", [(0, 0), (None, 1)])
def test_hr18_host_get_device_pointer_null_or_flag_is_100000(args):
    """HR18: ACLMEM aclrtHostGetDevicePointerImpl: pHost null, flag != 0 -> 100000."""
    r = on()
    p, _ = pageable(64)
    assert code(r.host_get_device_pointer, p if args[0] is None else 0, args[1]) == 100000


def test_hr19_host_get_device_pointer_no_context_is_107002():
    """HR19: IMPL ApiImpl::HostGetDevicePointer: no context -> 107002."""
    r = on(device_id=None)
    p, _ = pageable(64)
    assert code(r.host_get_device_pointer, p, 0) == 107002


@pytest.mark.parametrize("product", ["910B", "310P"])
def test_hr20_host_get_device_pointer_not_mapped_is_107000(product):
    """HR20: IMPL ApiImpl::HostGetDevicePointer: not in a mapping (here PINNED only) -> 107000. No
    chip check on this path, so 310P answers 107000 (the emulator used to answer 207000)."""
    r = on(product)
    p, _ = pageable(64)
    r.host_register_v2(p, 64, REG_PINNED)
    assert code(r.host_get_device_pointer, p, 0) == 107000


def test_hr21_host_unregister_null_is_100000():
    """HR21: ACLMEM aclrtHostUnregisterImpl: ptr null -> 100000."""
    assert code(on().host_unregister, 0) == 100000


def test_hr22_host_unregister_no_context_is_107002():
    """HR22: IMPL ApiImpl::HostUnregister: no context -> 107002, and the registration stays. The
    emulator used to unregister without a context (0)."""
    r = on()
    p, _ = pageable(64)
    r.host_register_v2(p, 64, REG_PINNED)
    assert in_thread(lambda: r.host_unregister(p)) == 107002
    assert r.pointer_get_attributes(p).type == 0
    r.host_unregister(p)


def test_hr23_host_unregister_not_a_registered_base_is_507911():
    """HR23: IMPL ApiImpl::HostUnregister (software mode): neither a mapped nor a pinned base -> 507911."""
    r = on()
    p, _ = pageable(64)
    r.host_register_v2(p, 64, REG_PINNED)
    assert code(r.host_unregister, p + 1) == 507911


# ---------------------------------------------------------------------------
# Peer access (P)
# ---------------------------------------------------------------------------

def test_p1_can_access_peer_same_device_is_100000():
    """P1: ACLMEM aclrtDeviceCanAccessPeerImpl: deviceId == peerDeviceId -> 100000."""
    assert code(on().device_can_access_peer, 3, 3) == 100000


@pytest.mark.parametrize("peer", [8, -1, 64])
def test_p2_can_access_peer_bad_peer_is_107001(peer):
    """P2: ACLMEM: rtGetDevicePhyIdByIndex(peer): no such device -> 107001."""
    assert code(on().device_can_access_peer, 0, peer) == 107001


@pytest.mark.parametrize("dev", [64, -1])
def test_p3_can_access_peer_device_not_below_64_is_107000(dev):
    """P3: ERR ApiErrorDecorator::DeviceCanAccessPeer: driver id >= RT_MAX_DEV_NUM -> 107000 (-1 is
    0xFFFFFFFF as uint32). The emulator used to answer 107001."""
    assert code(on().device_can_access_peer, dev, 1) == 107000


def test_p4_can_access_peer_without_p2p_flag_is_207000(tmp_path):
    """P4: IMPL ApiImpl::DeviceCanAccessPeer: no RT_FEATURE_DEVICE_P2P -> 207000 (2-device IPV350)."""
    assert code(on(config(tmp_path, "IPV350")).device_can_access_peer, 0, 1) == 207000


def test_p5_can_access_peer_offline_mode_is_207000(tmp_path):
    """P5: IMPL ApiImpl::DeviceCanAccessPeer: RT_RUN_MODE_OFFLINE -> 207000 (2-device 200I/500A2, RC)."""
    assert code(on(config(tmp_path, "200I_A2")).device_can_access_peer, 0, 1) == 207000


def test_p6_can_access_peer_default_device_context(tmp_path):
    """P6: IMPL ApiImpl::CheckCurCtxValid: with an aclInit default device and no context, a device
    other than the default -> 107002; the default device itself is opened implicitly."""
    r = with_default_device(tmp_path, 0)
    assert code(r.device_can_access_peer, 1, 0) == 107002
    assert r.device_can_access_peer(0, 1) == 1
    assert r.get_device() == 0


def test_p7_can_access_peer_no_such_device_is_107001_from_the_driver():
    """P7: DRVN NpuDriver::DeviceCanAccessPeer: an id below 64 that names no device -> 107001
    (inferred: DRV_ERROR_INVALID_DEVICE)."""
    assert code(on().device_can_access_peer, 9, 0) == 107001


def test_p8_can_access_peer_needs_no_context():
    """P8: no context check without a default device: CanAccessPeer works before aclrtSetDevice."""
    assert on(device_id=None).device_can_access_peer(0, 1) == 1


def test_p9_enable_peer_access_flags_come_first():
    """P9: ACLMEM aclrtDeviceEnablePeerAccessImpl: flags != 0 -> 200006, before rtGetDevice."""
    assert code(on(device_id=None).device_enable_peer_access, 1, 1) == 200006


@pytest.mark.parametrize("api", ["device_enable_peer_access", "device_disable_peer_access"])
def test_p10_enable_disable_no_current_device_is_107002(api):
    """P10: ACLMEM: rtGetDevice -> 107002 with no context and no default device."""
    assert code(getattr(on(device_id=None), api), 1) == 107002


def test_p11_enable_peer_access_uses_the_default_device(tmp_path):
    """P11: IMPL ApiImpl::GetDevice: with an aclInit default device and no context, the current
    device is the default one (no 107002, no context opened)."""
    r = with_default_device(tmp_path, 0)
    r.device_enable_peer_access(1)
    assert r.device_peer_access_status(0, 1) == 1


@pytest.mark.parametrize("api", ["device_enable_peer_access", "device_disable_peer_access"])
def test_p12_enable_disable_peer_is_current_device_is_100000(api):
    """P12: ACLMEM: deviceId == peerDeviceId -> 100000."""
    assert code(getattr(on(device_id=2), api), 2) == 100000


@pytest.mark.parametrize("api", ["device_enable_peer_access", "device_disable_peer_access"])
def test_p13_enable_disable_bad_peer_is_107001(api):
    """P13: ACLMEM: rtGetDevicePhyIdByIndex(peer) -> 107001."""
    assert code(getattr(on(), api), 8) == 107001


@pytest.mark.parametrize("api", ["device_enable_peer_access", "device_disable_peer_access"])
def test_p14_enable_disable_without_p2p_flag_is_207000(tmp_path, api):
    """P14: DRVN NpuDriver::EnableP2P / DisableP2P: no RT_FEATURE_DEVICE_P2P -> 207000."""
    assert code(getattr(on(config(tmp_path, "IPV350")), api), 1) == 207000


def test_p15_enable_peer_access_without_a_link_is_507899():
    """P15: DRVN halDeviceEnableP2P fails between devices with no interconnect (910: two HCCS groups);
    the driver's code is not visible, 507899 is the emulator's choice."""
    assert code(on("910").device_enable_peer_access, 4) == 507899


@pytest.mark.parametrize("dev,peer", [(64, 0), (-1, 0), (0, 64), (0, -1)])
def test_p16_peer_access_status_ids_not_below_64_are_107000(dev, peer):
    """P16: ERR ApiErrorDecorator::GetP2PStatus: devIdDes or phyIdSrc >= 64 (uint32) -> 107000."""
    assert code(on().device_peer_access_status, dev, peer) == 107000


def test_p17_peer_access_status_without_p2p_flag_is_207000():
    """P17: DRVN NpuDriver::GetP2PStatus: no RT_FEATURE_DEVICE_P2P -> 207000 (IPV350)."""
    assert code(on("IPV350").device_peer_access_status, 0, 0) == 207000


@pytest.mark.parametrize("dev,peer", [(9, 0), (0, 9)])
def test_p18_peer_access_status_no_such_device_is_107001(dev, peer):
    """P18: DRVN drvGetP2PStatus: an id below 64 that names no device -> 107001 (inferred)."""
    assert code(on().device_peer_access_status, dev, peer) == 107001


def test_p19_peer_access_status_needs_no_context():
    """P19: IMPL ApiImpl::GetP2PStatus: no context check without a default device."""
    assert on(device_id=None).device_peer_access_status(0, 1) == 0


def test_p20_peer_access_status_peer_is_a_physical_id(monkeypatch):
    """P20: ACLMEM aclrtDevicePeerAccessStatusImpl passes the peer unconverted (a physical id), while
    the device goes through ChgUserDevIdToDeviceId (not visible -> 107001). The emulator used to
    convert the peer as a user id."""
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "2,3")
    r = on()
    r.device_enable_peer_access(1)  # user 0 -> user 1 = physical 2 -> physical 3
    assert r.device_peer_access_status(0, 3) == 1
    assert r.device_peer_access_status(0, 1) == 0
    assert code(r.device_peer_access_status, 2, 3) == 107001


# ---------------------------------------------------------------------------
# Capture (C)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("api,args", [("ri_capture_begin", (0, GLOBAL)), ("ri_capture_get_info", (0,)),
                                      ("ri_capture_end", (0,))])
def test_c1_capture_null_stream_is_100000(api, args):
    """C1: ACLMRI aclmdlRICaptureBegin/GetInfo/EndImpl: stream null -> 100000, on every product."""
    assert code(getattr(on("910"), api), *args) == 100000


@pytest.mark.parametrize("api,args", [("ri_capture_begin", (GLOBAL,)), ("ri_capture_get_info", ()),
                                      ("ri_capture_end", ())])
def test_c2_capture_chip_without_acl_graph_is_207000_before_the_handle(api, args):
    """C2: RTCS rtStreamBegin/EndCapture, rtStreamGetCaptureInfo: no RT_FEATURE_MODEL_ACL_GRAPH -> 207000,
    before the handle is validated (910, a bogus handle). GetInfo used to have no chip check."""
    assert code(getattr(on("910"), api), 0x7777, *args) == 207000


@pytest.mark.parametrize("api,args", [("ri_capture_begin", (GLOBAL,)), ("ri_capture_get_info", ()),
                                      ("ri_capture_end", ())])
def test_c3_capture_bad_stream_handle_is_107017(api, args):
    """C3: RTCS: RT_VALIDATE_AND_UNWRAP_OBJECT(stream) -> 107017."""
    assert code(getattr(on(), api), 0x7777, *args) == 107017


@pytest.mark.parametrize("mode", [3, -1])
def test_c4_capture_begin_mode_is_checked_before_the_context(mode):
    """C4: ERRG ApiErrorDecorator::StreamBeginCapture: mode outside [GLOBAL, MAX) -> 107000, before ApiImpl."""
    r = on()
    s = r.create_stream()
    assert in_thread(lambda: r.ri_capture_begin(s, mode)) == 107000


@pytest.mark.parametrize("api", ["ri_capture_begin", "ri_capture_end"])
def test_c5_capture_device_only_stream_is_507000(api):
    """C5: ERRG StreamFlagIsSupportCapture: ACL_STREAM_DEVICE_USE_ONLY (RT_STREAM_CP_PROCESS_USE) ->
    RT_ERROR_STREAM_INVALID -> 507000."""
    r = on()
    s = r.create_stream_with_config(0, DEVICE_USE_ONLY)
    args = (s, GLOBAL) if api == "ri_capture_begin" else (s,)
    assert code(getattr(r, api), *args) == 507000


@pytest.mark.parametrize("api", ["ri_capture_begin", "ri_capture_end"])
def test_c6_capture_no_context_is_107002(api):
    """C6: IMPLG ApiImpl::StreamBegin/EndCapture: no context -> 107002. The emulator used to answer 0
    (the known disagreement). A failed End leaves the capture on."""
    r = on()
    s = r.create_stream()
    if api == "ri_capture_end":
        r.ri_capture_begin(s, RELAXED)
    args = (s, GLOBAL) if api == "ri_capture_begin" else (s,)
    assert in_thread(lambda: getattr(r, api)(*args)) == 107002
    assert r.ri_capture_get_info(s)[0] == (ACTIVE if api == "ri_capture_end" else NONE)


@pytest.mark.parametrize("api", ["ri_capture_begin", "ri_capture_end"])
def test_c7_capture_stream_of_another_context_is_107003(api):
    """C7: IMPLG: the stream is not in the current context -> 107003."""
    r = on(device_id=1)
    s = r.create_stream()
    if api == "ri_capture_end":
        r.ri_capture_begin(s, GLOBAL)
    r.set_device(0)
    args = (s, GLOBAL) if api == "ri_capture_begin" else (s,)
    assert code(getattr(r, api), *args) == 107003


def test_c8_capture_begin_already_capturing_is_107027():
    """C8: CTXG Context::StreamBeginCapture: status not NONE -> 107027."""
    r = on()
    s = r.create_stream()
    r.ri_capture_begin(s, GLOBAL)
    assert code(r.ri_capture_begin, s, RELAXED) == 107027


def test_c9_capture_get_info_needs_no_context():
    """C9: IMPLG ApiImpl::StreamGetCaptureInfo has no context check: another thread without a context
    reads the status."""
    r = on()
    s = r.create_stream()
    r.ri_capture_begin(s, RELAXED)
    assert in_thread(lambda: r.ri_capture_get_info(s))[0] == ACTIVE


def test_c10_capture_end_not_capturing_is_107029():
    """C10: CTXG Context::StreamEndCapture: status NONE -> 107029."""
    r = on()
    assert code(r.ri_capture_end, r.create_stream()) == 107029


def test_c11_capture_end_wrong_thread_is_107038_and_ends_the_capture():
    """C11: CTXG Context::StreamEndCapture: CheckCaptureStreamThreadIsMatch -> 107038, after
    CaptureModeExit and ClearCaptureModel: the capture is over (a later End -> 107029) and unsafe
    APIs work again. The emulator used to leave the capture active."""
    r = on()
    s = r.create_stream()
    r.ri_capture_begin(s, GLOBAL)
    assert in_thread(lambda: (r.set_device(0), r.ri_capture_end(s))[1]) == 107038
    assert r.ri_capture_get_info(s) == (NONE, 0)
    assert code(r.ri_capture_end, s) == 107029
    d = device(r, 64)
    r.memset(d, 64, 0, 64)


def test_c12_exchange_mode_chip_without_acl_graph_is_207000():
    """C12: RTCS rtThreadExchangeCaptureMode: no RT_FEATURE_MODEL_ACL_GRAPH -> 207000."""
    assert code(on("910").ri_capture_thread_exchange_mode, RELAXED) == 207000


@pytest.mark.parametrize("mode", [3, -1])
def test_c13_exchange_mode_out_of_range_is_107000(mode):
    """C13: ERRG ApiErrorDecorator::ThreadExchangeCaptureMode: (uint32)mode >= MAX -> 107000, before
    the context."""
    assert code(on(device_id=None).ri_capture_thread_exchange_mode, mode) == 107000


def test_c14_exchange_mode_no_context_is_107002():
    """C14: IMPLG ApiImpl::ThreadExchangeCaptureMode: no context -> 107002."""
    assert code(on(device_id=None).ri_capture_thread_exchange_mode, RELAXED) == 107002


def test_c15_exchange_mode_returns_the_old_mode_and_relaxes_the_thread():
    """C15: CTXG Context::ThreadExchangeCaptureMode: sets this thread's mode, returns the old one; a
    RELAXED thread may call unsafe APIs during a GLOBAL capture (CTXG IsCaptureModeSupport)."""
    r = on()
    s = r.create_stream()
    d = device(r, 64)
    r.ri_capture_begin(s, GLOBAL)
    assert code(r.memset, d, 64, 0, 64) == 107030
    assert r.ri_capture_thread_exchange_mode(RELAXED) == GLOBAL
    r.memset(d, 64, 0, 64)
    assert r.ri_capture_thread_exchange_mode(GLOBAL) == RELAXED
    r.ri_capture_end(s)


def _model(r, dev_stream=None):
    s = dev_stream or r.create_stream()
    h, _ = pinned(r, 64)
    d = device(r, 64)
    r.ri_capture_begin(s, GLOBAL)
    r.memcpy_async(d, 64, h, 64, 1, s)
    return r.ri_capture_end(s), s


@pytest.mark.parametrize("api", ["ri_execute_async", "ri_destroy"])
def test_c16_model_null_is_100000(api):
    """C16: ACLMRI aclmdlRIExecuteAsync/DestroyImpl: modelRI null -> 100000."""
    assert code(getattr(on(), api), 0) == 100000


@pytest.mark.parametrize("api", ["ri_execute_async", "ri_destroy"])
def test_c17_model_bad_handle_is_107017(api):
    """C17: RTC rtModelExecute / rtModelDestroy: RT_VALIDATE_AND_UNWRAP_OBJECT(model) -> 107017
    (a destroyed model too)."""
    r = on()
    ri, _ = _model(r)
    r.ri_destroy(ri)
    assert code(getattr(r, api), ri) == 107017


def test_c18_execute_bad_stream_handle_is_107017():
    """C18: RTC rtModelExecute: RT_VALIDATE_AND_UNWRAP_OBJECT(stream) -> 107017."""
    r = on()
    ri, _ = _model(r)
    assert code(r.ri_execute_async, ri, 0x7777) == 107017


def test_c19_execute_on_capturing_stream_is_107027_before_the_context():
    """C19: ERR ApiErrorDecorator::ModelExecute: the stream is capturing -> 107027, before ApiImpl's
    context check (a thread without a context gets 107027)."""
    r = on()
    ri, _ = _model(r)
    s2 = r.create_stream()
    r.ri_capture_begin(s2, RELAXED)
    assert in_thread(lambda: r.ri_execute_async(ri, s2)) == 107027


@pytest.mark.parametrize("api", ["ri_execute_async", "ri_destroy"])
def test_c20_model_no_context_is_107002(api):
    """C20: IMPL ApiImpl::ModelExecute / ModelDestroy: no context -> 107002. The emulator used to run
    them without a context (0)."""
    r = on()
    ri, _ = _model(r)
    assert in_thread(lambda: getattr(r, api)(ri)) == 107002


@pytest.mark.parametrize("api", ["ri_execute_async", "ri_destroy"])
def test_c21_model_of_another_context_is_107004(api):
    """C21: IMPL ApiImpl::ModelExecute / ModelDestroy: the model is not in the current context ->
    RT_ERROR_MODEL_CONTEXT (107004)."""
    r = on()
    ri, _ = _model(r)
    r.set_device(1)
    assert code(getattr(r, api), ri) == 107004


def test_c22_execute_on_a_stream_of_another_context_is_107003():
    """C22: feature/model/model.cc Model::Execute: the stream's context is not the model's -> 107003."""
    r = on(device_id=1)
    other = r.create_stream()
    r.set_device(0)
    ri, _ = _model(r)
    assert code(r.ri_execute_async, ri, other) == 107003
