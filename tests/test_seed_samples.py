"""Published code samples as pyACL scripts (emu/examples/seed_*.py), run as programs and in-process.

The call sequences of Huawei's published examples: a host-device copy with a kernel between (the data-copy
guide of the CANN documentation; the copies of hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md), a P2P
copy (the example the aclrtDeviceEnablePeerAccess reference points to,
https://www.hiascend.com/document/detail/en/canncommercial/850/API/appdevgapi/aclcppdevg_03_0052.html), and
page-locked, registered and VA-consistent host memory (hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md).
Plus the host-device pattern written directly against emu.runtime, to check its stream ordering.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import emu
from emu import runtime as R
from emu.cli import run_script

EXAMPLES = Path(emu.__file__).parent / "examples"
H2D, D2H = 1, 2

# script name -> lines it must print (the last one is the sample's final message)
SAMPLES = {
    "seed_host_device_kernel.py": ["before synchronize: hostOut still zero: True",
                                   "after synchronize:  hostOut == myKernel(hostIn): True",
                                   "run success!"],
    "seed_p2p_copy.py": ["device 1 holds device 0's bytes: True [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
                         "P2P copy success"],
    "seed_pinned_registered.py": ["page-locked memory, async H2D: bytes verified",
                                  "registered memory read by a kernel: bytes verified",
                                  "VA-consistent memory, async H2D: bytes verified",
                                  "run success!"],
}


def _env():
    env = dict(os.environ)
    env.pop("ACL_EMU_PRODUCT", None)
    env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
    return env


def endpoints(task):
    """(source device, destination device) of a copy task, None for host memory."""
    if hasattr(task, "src"):
        return task.src, task.dst
    dev = task.device
    return {"h2d": (None, dev), "d2h": (dev, None), "d2d": (dev, dev), "h2h": (None, None)}.get(task.route,
                                                                                               (dev, -1))


@pytest.fixture
def restore_acl_modules():
    """run_script installs the emulator as `acl`; put sys.modules back afterwards."""
    saved = {k: v for k, v in sys.modules.items() if k == "acl" or k.startswith("acl.")}
    yield
    for k in [k for k in sys.modules if k == "acl" or k.startswith("acl.")]:
        del sys.modules[k]
    sys.modules.update(saved)


def run_in_process(name, capsys, product="910B"):
    emu.configure(product=product, functional=True)
    code = run_script(str(EXAMPLES / name), [], None)
    out = capsys.readouterr().out
    return code, out.splitlines(), emu.current()


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_runs_with_python_m_emu_run(name, tmp_path):
    res = subprocess.run([sys.executable, "-m", "emu", "run", str(EXAMPLES / name)], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path, env=_env())
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    for expected in SAMPLES[name]:
        assert expected in lines, res.stdout
    assert lines[-1] == SAMPLES[name][-1]
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_starts_with_import_acl_and_defines_its_own_constants(name):
    text = (EXAMPLES / name).read_text()
    assert text.splitlines()[0].startswith("import acl")
    assert "from emu" not in text and "import emu" not in text
    assert "ACL_SUCCESS = 0" in text


def test_seed000_in_process_copies_and_kernel_run_in_stream_order(capsys, restore_acl_modules):
    code, lines, rt = run_in_process("seed_host_device_kernel.py", capsys)
    assert code == 0
    assert lines[-1] == "run success!"
    tasks = [t for t in rt.machine.records if t.kind in ("copy", "kernel") and t.label != "aclrtMemcpy"]
    h2d, kernel, d2h = tasks
    assert (endpoints(h2d), kernel.kind, endpoints(d2h)) == ((None, 0), "kernel", (0, None))
    assert h2d.stream is kernel.stream is d2h.stream
    assert h2d.end <= kernel.start and kernel.end <= d2h.start
    assert kernel.end - kernel.start == pytest.approx(50e-6, rel=1e-9)  # the work; the dispatch precedes it


def test_seed002_in_process_copies_over_the_peer_link_and_disables_it(capsys, restore_acl_modules):
    code, lines, rt = run_in_process("seed_p2p_copy.py", capsys)
    assert code == 0
    assert lines[-1] == "P2P copy success"
    copies = [endpoints(t) for t in rt.machine.records if t.kind == "copy" and t.label == "aclrtMemcpy"]
    assert any(s is not None and d is not None and s != d for s, d in copies)  # device to device
    assert rt.peers == set()  # both directions disabled again
    for name in ("aclrtDeviceCanAccessPeer", "aclrtDeviceEnablePeerAccess", "aclrtDeviceDisablePeerAccess",
                 "aclrtResetDeviceForce"):
        assert rt.calls.get(name, 0) >= 1, name
    assert rt.calls["aclrtDeviceEnablePeerAccess"] == 2


def test_seed002_fails_loudly_where_peer_access_is_unsupported(capsys, restore_acl_modules):
    # 200I/500 A2 (RC, one device): aclrtDeviceCanAccessPeer(0, 1) -> 107001 (the runtime checks the peer id
    # before its RC-mode gate), and the script checks every code
    code, lines, _ = run_in_process("seed_p2p_copy.py", capsys, product="200I_A2")
    assert code == 1
    assert lines[-1].startswith("device_can_access_peer failed: ret = 107001")


def test_seed004_in_process_uses_every_api_of_the_sample(capsys, restore_acl_modules):
    code, lines, rt = run_in_process("seed_pinned_registered.py", capsys)
    assert code == 0
    assert lines[-1] == "run success!"
    for name in ("aclrtMallocHost", "aclrtMemcpyAsync", "aclrtSynchronizeStream", "aclrtHostRegisterV2",
                 "aclrtHostGetDevicePointer", "aclrtHostUnregister", "aclrtMallocHostWithCfg",
                 "aclrtHostRegister", "aclrtFreeHost", "aclrtLaunchKernel"):
        assert rt.calls.get(name, 0) >= 1, name
    assert rt.space.registrations_overlapping(0, 1 << 62) == []  # everything unregistered
    kernels = [t for t in rt.machine.records if t.kind == "kernel"]
    assert len(kernels) == 1
    va_line = next(l for l in lines if l.startswith("VA_FLAG host memory"))
    assert va_line.endswith("same address: True")


def test_seed004_registration_is_refused_where_unsupported(capsys, restore_acl_modules):
    # host registration is N for 310P (docs/conformance/products.md): the script stops at aclrtHostRegisterV2
    code, lines, _ = run_in_process("seed_pinned_registered.py", capsys, product="310P")
    assert code == 1
    assert "page-locked memory, async H2D: bytes verified" in lines
    assert lines[-1].startswith("host_register_v2 failed: ret = 207000")


def test_seed000_pattern_with_emu_runtime_orders_h2d_kernel_d2h(rt):
    """H2D, kernel, D2H on one stream, then synchronize: each step sees the previous one's bytes."""
    n = 1 << 20
    data = (np.arange(n) % 251).astype(np.uint8)
    s = R.create_stream()
    h_in, h_out = R.malloc_host(n), R.malloc_host(n)
    d_in, d_out = R.malloc(n), R.malloc(n)
    R.host_array(h_in, n)[:] = data
    out = R.host_array(h_out, n)
    out[:] = 0
    seen = {}

    def kernel(src, dst):
        seen["input"] = src.copy()
        np.bitwise_xor(src, 0xFF, out=dst)

    R.memcpy_async(d_in, n, h_in, n, H2D, s)
    R.launch_kernel(kernel, [(d_in, n), (d_out, n)], s, duration_us=30)
    R.memcpy_async(h_out, n, d_out, n, D2H, s)
    assert not out.any()  # before synchronize: the host output is unchanged
    assert "input" not in seen  # and the kernel has not run yet
    R.synchronize_stream(s)
    np.testing.assert_array_equal(seen["input"], data)  # the kernel saw the H2D's bytes
    np.testing.assert_array_equal(out, data ^ 0xFF)  # the D2H saw the kernel's output
