"""The call sequences of Ascend/samples' public pyACL scripts, run through `acl-emu run` on every product.

tests/samples/ holds our own scripts that make the same pyACL calls, in the same order and with the
same checks, as the public samples (docs/samples.md lists them and what each public sample does
under the emulator). Each runs in a subprocess on every product config:
- where the product supports every API the script calls, the script succeeds and the bytes it
  checks are right;
- where it does not, the first unsupported call returns ACL_ERROR_RT_FEATURE_NOT_SUPPORT and the
  script takes its own error path (what it prints is asserted);
- the operator script stops at the first API acl-emu does not emulate, and the emulator names it (a clear
  AttributeError and a summary line, not a crash); the model-inference script runs on the model's
  declaration (tests/samples/model/resnet50.om.toml).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from emu import config
from emu.errors import ACL_ERROR_RT_FEATURE_NOT_SUPPORT

SAMPLES_DIR = Path(__file__).parent / "samples"
PRODUCTS = config.available()
SIZE = 4096
NOT_EMULATED = None  # in a call list: a pyACL function acl-emu does not provide at all


@dataclass(frozen=True)
class Sample:
    script: str  # under tests/samples
    args: tuple
    calls: tuple  # (C API, pyACL name) in the order the script first calls them
    success: tuple  # lines of a successful run, the last one last
    counts: dict = field(default_factory=dict)  # C API -> calls in a successful run
    h2d_bytes: int = 0  # bytes a successful run copies host to device on an EP product
    raises: bool = False  # its error path raises Exception("<name> failed ret=<code>")
    products: tuple = ()  # the products to run it on (default: all)


CYCLES, RELEASES = 2, 2
SYNC_CALLS = (("aclInit", "acl.init"), ("aclrtSetDevice", "acl.rt.set_device"),
              ("aclrtCreateContext", "acl.rt.create_context"), ("aclrtGetMemInfo", "acl.rt.get_mem_info"),
              ("aclrtMallocHost", "acl.rt.malloc_host"))
COMMON_ARGS = ("--memory_size", str(SIZE), "--number_of_cycles", str(CYCLES), "--release_cycle", str(RELEASES))
N = CYCLES * RELEASES

SAMPLES = {
    "memcpy_host_device": Sample(
        "memcpy_host_device.py", COMMON_ARGS + ("--write_back_host",),
        SYNC_CALLS + (("aclrtMalloc", "acl.rt.malloc"), ("aclrtMemset", "acl.rt.memset"),
                      ("aclrtMemcpy", "acl.rt.memcpy"), ("aclrtFreeHost", "acl.rt.free_host"),
                      ("aclrtFree", "acl.rt.free"), ("aclrtDestroyContext", "acl.rt.destroy_context"),
                      ("aclrtResetDevice", "acl.rt.reset_device"), ("aclFinalize", "acl.finalize")),
        (f"host buffer after memset: {SIZE} bytes, all 7: True", f"device buffer: {SIZE} bytes, all 7: True",
         f"written back to the host: {SIZE} bytes, all 7: True", "run success!"),
        {"aclrtMemcpy": 5 * N, "aclrtMallocHost": 2 * N, "aclrtFreeHost": 2 * N, "aclrtMalloc": N,
         "aclrtFree": N, "aclrtMemset": N, "aclrtGetMemInfo": 2 * (1 + N + CYCLES)},
        h2d_bytes=N * SIZE),
    "memcpy_host_device_reuse": Sample(
        "memcpy_host_device.py", COMMON_ARGS + ("--memory_reuse",),
        SYNC_CALLS + (("aclrtMalloc", "acl.rt.malloc"), ("aclrtMemset", "acl.rt.memset"),
                      ("aclrtMemcpy", "acl.rt.memcpy"), ("aclrtFreeHost", "acl.rt.free_host"),
                      ("aclrtFree", "acl.rt.free"), ("aclrtDestroyContext", "acl.rt.destroy_context"),
                      ("aclrtResetDevice", "acl.rt.reset_device"), ("aclFinalize", "acl.finalize")),
        (f"host buffer after memset: {SIZE} bytes, all 7: True", f"device buffer: {SIZE} bytes, all 7: True",
         "run success!"),
        {"aclrtMemcpy": 3 * N, "aclrtMallocHost": CYCLES, "aclrtMalloc": CYCLES, "aclrtFree": CYCLES},
        h2d_bytes=N * SIZE, products=("910B", "200I_A2", "IPV350")),  # a variant: an EP, an RC, a lacking one
    "memcpy_host_device_async": Sample(
        "memcpy_host_device_async.py", COMMON_ARGS,
        (("aclInit", "acl.init"), ("aclrtSetDevice", "acl.rt.set_device"),
         ("aclrtCreateContext", "acl.rt.create_context"), ("aclrtCreateStream", "acl.rt.create_stream"),
         ("aclrtGetMemInfo", "acl.rt.get_mem_info"), ("aclrtMallocHost", "acl.rt.malloc_host"),
         ("aclrtMemsetAsync", "acl.rt.memset_async"), ("acldvppMalloc", "acl.media.dvpp_malloc"),
         ("aclrtSynchronizeStream", "acl.rt.synchronize_stream"), ("aclrtMemcpy", "acl.rt.memcpy"),
         ("aclrtMemcpyAsync", "acl.rt.memcpy_async"), ("aclrtFreeHost", "acl.rt.free_host"),
         ("acldvppFree", "acl.media.dvpp_free"), ("aclrtDestroyContext", "acl.rt.destroy_context"),
         ("aclrtResetDevice", "acl.rt.reset_device"), ("aclFinalize", "acl.finalize")),
        (f"host buffer after memset_async: {SIZE} bytes, all 7: True",
         f"host buffer read with kind DEVICE_TO_HOST: {SIZE} bytes, all 7: True",
         f"second host buffer after the async D2H: {SIZE} bytes, all 7: True", "run success!"),
        {"aclrtCreateStream": 2, "aclrtMemcpyAsync": 2 * N, "aclrtMemsetAsync": N, "aclrtMallocHost": 2 * N,
         "aclrtFreeHost": 2 * N, "aclrtSynchronizeStream": 3 * N, "aclrtMemcpy": 3 * N},
        h2d_bytes=N * SIZE),
    "memcpy_host_dvpp": Sample(
        "memcpy_host_dvpp.py", COMMON_ARGS,
        SYNC_CALLS + (("acldvppMalloc", "acl.media.dvpp_malloc"), ("aclrtMemset", "acl.rt.memset"),
                      ("aclrtMemcpy", "acl.rt.memcpy"), ("aclrtFreeHost", "acl.rt.free_host"),
                      ("acldvppFree", "acl.media.dvpp_free"), ("aclrtDestroyContext", "acl.rt.destroy_context"),
                      ("aclrtResetDevice", "acl.rt.reset_device"), ("aclFinalize", "acl.finalize")),
        (f"host buffer after memset: {SIZE} bytes, all 7: True",
         f"host buffer read with kind DEVICE_TO_HOST: {SIZE} bytes, all 7: True",
         f"DVPP buffer: {SIZE} bytes, all 7: True", "run success!"),
        {"aclrtMemcpy": 4 * N, "aclrtMallocHost": N, "aclrtFreeHost": N, "aclrtMemset": N},
        h2d_bytes=N * SIZE),
    "op_add": Sample(
        "op_add/acl_op_add.py", (),
        (("aclInit", "acl.init"), ("aclrtSetDevice", "acl.rt.set_device"),
         ("aclrtCreateContext", "acl.rt.create_context"), ("aclrtCreateStream", "acl.rt.create_stream"),
         (NOT_EMULATED, "acl.op.create_attr")),
        ("init resource stage:",), raises=True, products=("910B", "IPV350")),  # none has acl.op
    "model_inference": Sample(
        "model_inference/acl_net.py", ("--model_path", "../model/resnet50.om"),
        (("aclInit", "acl.init"), ("aclrtSetDevice", "acl.rt.set_device"),
         ("aclrtCreateContext", "acl.rt.create_context"), ("aclrtCreateStream", "acl.rt.create_stream"),
         ("aclrtGetRunMode", "acl.rt.get_run_mode"), ("aclmdlLoadFromFile", "acl.mdl.load_from_file"),
         ("aclmdlCreateDesc", "acl.mdl.create_desc"), ("aclmdlGetDesc", "acl.mdl.get_desc")),
        ("init resource stage:", "model loaded: 1 2"), {"aclmdlLoadFromFile": 1, "aclmdlGetInputSizeByIndex": 1},
        h2d_bytes=3 * 8 * 8 * 2, raises=True, products=("910B", "200I_A2", "IPV350")),  # the declared model
}


def first_unsupported(sample: Sample, product: str):
    """(C API, pyACL name) of the first call the product lacks or the emulator does not provide, or None."""
    p = config.load(product)
    for api, name in sample.calls:
        if api is NOT_EMULATED or not p.supports(api):
            return api, name
    return None


def _env():
    env = dict(os.environ)
    for name in ("ACL_EMU_PRODUCT", "ASCEND_RT_VISIBLE_DEVICES", "ACL_EMU_HOST_TIME", "PYTHONPATH"):
        env.pop(name, None)
    return env


def _run(sample: Sample, product: str, out: Path) -> subprocess.CompletedProcess:
    script = SAMPLES_DIR / sample.script
    return subprocess.run([sys.executable, "-m", "emu", "run", "--json", "--host-time", "calls", "--product",
                           product, "--out", str(out), str(script), *sample.args],
                          capture_output=True, text=True, timeout=300, cwd=script.parent, env=_env())


CASES = [(s, p) for s in sorted(SAMPLES) for p in (SAMPLES[s].products or PRODUCTS)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every (sample, product) run, started together on a few workers; each test waits for its own."""
    base = tmp_path_factory.mktemp("public_samples")
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    futures = {(s, p): pool.submit(_run, SAMPLES[s], p, base / f"{s}-{p}") for s, p in CASES}
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("name,product", CASES)
def test_public_sample_call_sequence_on_every_product(runs, name, product):
    sample = SAMPLES[name]
    res = runs[(name, product)].result()
    assert res.stdout.startswith("{"), res.stderr
    summary = json.loads(res.stdout)  # --json: stdout is the summary alone, the script prints to stderr
    lines = res.stderr.splitlines()
    assert summary["product"] == product and summary["trace"] and Path(summary["trace"]).exists()
    stop = first_unsupported(sample, product)
    if stop is None:  # the product has every API: the script's own checks pass
        assert res.returncode == 0, res.stderr
        assert summary["exit_code"] == 0 and summary["error"] is None
        for line in sample.success:
            assert line in lines, res.stderr
        assert lines[-1] == sample.success[-1]
        assert "WRONG" not in res.stderr and "failed" not in res.stderr and "Traceback" not in res.stderr
        for api, count in sample.counts.items():
            assert summary["calls"].get(api) == count, (api, summary["calls"])
        if config.load(product).ep_mode:
            assert summary["bytes_by_route"]["h2d"] == sample.h2d_bytes
        return
    api, pyacl_name = stop
    assert res.returncode == 1
    assert "run success!" not in lines
    if sample.raises:
        assert lines[0] == sample.success[0]
    if api is NOT_EMULATED:  # the emulator names what it lacks
        assert summary["not_emulated"] == pyacl_name
        assert f"AttributeError: {pyacl_name} is not emulated by acl-emu" in res.stderr
        assert "Traceback (most recent call last):" in res.stderr
        return
    # the product lacks the API: its runtime code, then the script's own error path
    assert summary["calls"].get(api) == 1, (api, summary["calls"])
    code = ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    if sample.raises:
        assert f"Exception: {pyacl_name} failed ret={code}" in lines
        assert summary["error"] == f"Exception: {pyacl_name} failed ret={code}"
    else:
        assert lines[-1] == f"{pyacl_name} failed ret = {code}"
        assert summary["error"] == "SystemExit: 1"


def test_every_product_runs_the_memory_samples_or_names_its_missing_api():
    """The matrix the parametrized test covers: which product stops which memory sample, and where."""
    memory = [n for n in SAMPLES if not SAMPLES[n].raises]
    stops = {(n, p): first_unsupported(SAMPLES[n], p) for n in memory for p in PRODUCTS}
    assert all(stops[(n, p)] is None for n in memory for p in PRODUCTS if p != "IPV350")
    assert stops[("memcpy_host_device", "IPV350")] == ("aclrtMallocHost", "acl.rt.malloc_host")
    assert stops[("memcpy_host_device_async", "IPV350")] == ("aclrtCreateStream", "acl.rt.create_stream")


def test_a_sample_with_a_sibling_module_imports_it_from_its_own_folder(tmp_path):
    """acl_execute_add.py-style: `from constant import ...` works when run from another directory."""
    script = SAMPLES_DIR / "op_add" / "acl_op_add.py"
    res = subprocess.run([sys.executable, "-m", "emu", "run", "--host-time", "calls", "--out", str(tmp_path),
                          str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_env())
    assert "ModuleNotFoundError" not in res.stderr
    assert res.stdout.splitlines() == ["init resource stage:"]
    assert "[acl-emu] the script stopped at acl.op.create_attr, which acl-emu does not emulate" in res.stderr
    assert res.returncode == 1
