"""The call sequences of Ascend/samples' public pyACL inference samples, run through `acl-emu run` on a declared model.

tests/samples/inference/ holds our own scripts that make the same pyACL calls, in the same order and with the same
checks, as three public ResNet-50 samples (each names the one it follows): synchronous
(resnet50_imagenet_classification), asynchronous with callbacks over several memory pools
(resnet50_async_imagenet_classification) and at an image-size gear (resnet50_imagenet_dynamic_hw). Their pictures
are generated (images.py) and their models are declarations (model/*.om.toml). On an Atlas A2 (910B), an Atlas
A3 and an Ascend 950PR each one:
- exits 0 and prints, for each picture, the top 5 of the bytes the declared model writes for that picture's bytes
  (`emu.runtime.inference.output_bytes`, computed here from the same inputs);
- makes the model API calls of its sample, and its executions show in the trace under the model's name;
- is clean under the sanitizer (a correct program: no finding).
The async sample's copies overlap the executions only where its streams allow it: in the public sample's sequence
every input is copied (blocking) before the first execution, so no copy runs under one; with --prefetch each
execution's input is copied on a second stream, the copy of one pool runs under another pool's execution, and
never under an execution of its own pool (`emu.records()`, in the process that ran the script).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from emu.runtime.inference import output_bytes

HERE = Path(__file__).parent / "samples" / "inference"
PRODUCTS = ("910B", "A3", "950PR")
COMPUTE_US = {"910B": 1800, "A3": 1500, "950PR": 1000}  # model/resnet50.om.toml
IMAGE_BYTES = 3 * 224 * 224 * 2  # the Caffe model's float16 NCHW input
GEAR_BYTES = 448 * 448 * 3  # the TF model's uint8 input at its largest gear
N_IMAGES = 2


def _images():
    spec = importlib.util.spec_from_file_location("inference_images", HERE / "images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


IMAGES = _images()


def _result_lines(text: str) -> list[str]:
    """The programs' result lines ("execution 3 top5: [...]"), wherever they are in the text: the async sample's
    callback thread prints them while the main thread prints its own lines, so a line may share its row with
    another thread's words."""
    return re.findall(r"(?:execution \d+|image \d+(?: at \d+x\d+)?) top5: \[[\d, ]*\]", text)


def _top5(name: str, inputs: list[bytes], classes: int, softmax: bool = False) -> list[int]:
    vals = np.frombuffer(output_bytes(name, 0, inputs, "float32", 4 * classes), np.float32).astype(np.float64)
    if softmax:
        vals = np.exp(vals) / np.sum(np.exp(vals))
    return [int(j) for j in vals.argsort()[-1:-6:-1]]


def _sync_lines() -> list[str]:
    return [f"image {s} top5: {_top5('resnet50', [IMAGES.caffe_input(s).tobytes()], 1000)}" for s in range(N_IMAGES)]


def _async_lines(executions: int, pools: int = 4) -> list[str]:
    """Execution n runs pool n % pools, which holds picture (n % pools) % N_IMAGES."""
    return [f"execution {n} top5: {_top5('resnet50', [IMAGES.caffe_input(n % pools % N_IMAGES).tobytes()], 1000)}"
            for n in range(executions)]


def _dynamic_hw_lines() -> list[str]:
    gear = np.array([224, 224], np.uint64).tobytes()  # what set_dynamic_hw_size writes to the gear input
    return [f"image {s} at 224x224 top5: "
            f"{_top5('tf_resnet50', [IMAGES.tf_input(s, 224, 224).tobytes(), gear], 1001, softmax=True)}"
            for s in range(N_IMAGES)]


@dataclass(frozen=True)
class Program:
    script: str
    args: tuple
    model: str  # the declared model's name
    executions: int
    counts: dict  # C API -> calls
    h2d_bytes: int
    lines: tuple = field(default=())  # the result lines, in order


PROGRAMS = {
    "sync": Program("resnet50_sync.py", (), "resnet50", N_IMAGES,
                    {"aclmdlLoadFromFile": 1, "aclmdlCreateDesc": 1, "aclmdlGetDesc": 1, "aclmdlGetNumInputs": 1,
                     "aclmdlGetInputSizeByIndex": 1, "aclmdlGetOutputSizeByIndex": 1, "aclmdlCreateDataset": 4,
                     "aclCreateDataBuffer": 4, "aclmdlAddDatasetBuffer": 4, "aclmdlExecute": N_IMAGES,
                     "aclmdlGetCurOutputDims": N_IMAGES, "aclmdlDestroyDataset": 4, "aclDestroyDataBuffer": 4,
                     "aclmdlUnload": 1, "aclmdlDestroyDesc": 1},
                    N_IMAGES * IMAGE_BYTES, tuple(_sync_lines())),
    "async": Program("resnet50_async.py", (), "resnet50", 4,
                     {"aclmdlLoadFromFile": 1, "aclmdlCreateDataset": 8, "aclmdlGetOutputSizeByIndex": 4,
                      "aclmdlExecuteAsync": 4, "aclrtSubscribeReport": 1, "aclrtLaunchCallback": 4,
                      "aclGetDataBufferSizeV2": 4, "aclmdlGetCurOutputDims": 4, "aclrtUnSubscribeReport": 1,
                      "aclrtMemcpy": 8, "aclmdlUnload": 1, "aclmdlDestroyDesc": 1, "aclmdlDestroyDataset": 8},
                     4 * IMAGE_BYTES, tuple(_async_lines(4))),
    "async_prefetch": Program("resnet50_async.py", ("--prefetch", "--execute_times", "8"), "resnet50", 8,
                              {"aclmdlExecuteAsync": 8, "aclrtLaunchCallback": 8, "aclrtMemcpyAsync": 8,
                               "aclrtStreamWaitEvent": 8 + 4, "aclrtRecordEvent": 16, "aclrtCreateStream": 2,
                               "aclGetDataBufferSizeV2": 8},
                              8 * IMAGE_BYTES, tuple(_async_lines(8))),
    "dynamic_hw": Program("resnet50_dynamic_hw.py", (), "tf_resnet50", N_IMAGES,
                          {"aclmdlLoadFromFile": 1, "aclmdlGetNumInputs": 1, "aclmdlGetInputSizeByIndex": 2,
                           "aclmdlGetInputIndexByName": N_IMAGES, "aclmdlGetDynamicHW": N_IMAGES,
                           "aclmdlSetDynamicHWSize": N_IMAGES, "aclmdlExecute": N_IMAGES, "aclmdlCreateDataset": 4,
                           "aclCreateDataBuffer": 6, "aclmdlGetCurOutputDims": N_IMAGES},
                          N_IMAGES * GEAR_BYTES, tuple(_dynamic_hw_lines())),
}


def _env():
    env = dict(os.environ)
    for name in ("ACL_EMU_PRODUCT", "ASCEND_RT_VISIBLE_DEVICES", "ACL_EMU_HOST_TIME", "PYTHONPATH", "ACL_EMU_MODELS"):
        env.pop(name, None)
    return env


def _run(program: Program, product: str, out: Path, sanitize: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "emu", "run", "--json", "--host-time", "calls", "--product", product,
                           *(["--sanitize"] if sanitize else []), "--out", str(out), str(HERE / program.script),
                           *program.args], capture_output=True, text=True, timeout=300, cwd=out.parent, env=_env())


CASES = [(name, p) for name in PROGRAMS for p in PRODUCTS]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every (program, product) run, plain and under the sanitizer, started together on a few workers."""
    base = tmp_path_factory.mktemp("inference_samples")
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    futures = {(n, p, s): pool.submit(_run, PROGRAMS[n], p, base / f"{n}-{p}-{s}", s)
               for n, p in CASES for s in (False, True)}
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


def _summary(res: subprocess.CompletedProcess) -> dict:
    assert res.stdout.startswith("{"), res.stderr
    return json.loads(res.stdout)  # --json: stdout is the summary alone, the script prints to stderr


@pytest.mark.parametrize("name,product", CASES)
def test_inference_sample_runs_and_prints_what_the_declared_model_computes(runs, name, product):
    program = PROGRAMS[name]
    res = runs[(name, product, False)].result()
    summary = _summary(res)
    assert res.returncode == 0 and summary["exit_code"] == 0 and summary["error"] is None, res.stderr
    assert summary["product"] == product
    results = _result_lines(res.stderr)
    assert results == list(program.lines), res.stderr
    for api, count in program.counts.items():
        assert summary["calls"].get(api) == count, (api, summary["calls"])
    assert summary["bytes_by_route"]["h2d"] == program.h2d_bytes


@pytest.mark.parametrize("name,product", CASES)
def test_inference_sample_executions_show_in_the_trace_under_the_models_name(runs, name, product):
    program = PROGRAMS[name]
    trace = json.loads(Path(_summary(runs[(name, product, False)].result())["trace"]).read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    slices = [e for e in events if e.get("ph") == "X" and e.get("name") == program.model]
    on_streams = [e for e in slices if tracks[(e["pid"], e["tid"])].startswith("stream")]
    assert len(on_streams) == program.executions
    if program.model == "resnet50":  # its declared time on this product
        assert all(e["dur"] == pytest.approx(COMPUTE_US[product]) for e in on_streams)


@pytest.mark.parametrize("name,product", CASES)
def test_inference_samples_are_clean_under_the_sanitizer(runs, name, product):
    """Correct programs: the race, host and init checks find nothing in them (and the result is the same)."""
    res = runs[(name, product, True)].result()
    summary = _summary(res)
    assert res.returncode == 0, res.stderr
    assert summary["sanitizer"]["findings"] == [], summary["sanitizer"]
    assert "SANITIZER SUMMARY: 0 findings" in res.stderr
    assert _result_lines(res.stderr) == list(PROGRAMS[name].lines)


RECORDS = r"""
import json, sys
import emu
from emu.cli import run_script
script, product, out, *args = sys.argv[1:]
code = run_script(script, args, product, out, as_json=True, host_time="calls")
rows = [{k: x[k].item() for k in ("api", "kind", "stream", "route", "start", "end")} for x in emu.records()]
with open(out + "/records.json", "w") as f:
    json.dump({"code": code, "records": rows}, f)
"""


def _records(program: Program, product: str, out: Path) -> list[dict]:
    """The run's device tasks, from `emu.records()` in the process that ran the script."""
    done = subprocess.run([sys.executable, "-c", RECORDS, str(HERE / program.script), product, str(out),
                           *program.args], capture_output=True, text=True, timeout=300, env=_env())
    assert done.returncode == 0, done.stderr
    got = json.loads((out / "records.json").read_text())
    assert got["code"] == 0, done.stderr
    return got["records"]


def _copies_and_executions(records: list[dict], model: str):
    copies = sorted((r for r in records if r["kind"] == "copy" and r["route"] == "h2d"), key=lambda r: r["start"])
    executions = sorted((r for r in records if r["api"] == model), key=lambda r: r["start"])
    return copies, executions


def _overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


ONE_CALLBACK = ("--execute_times", "8", "--mem_pools", "8", "--callback_interval", "8")  # the sample's arguments
PREFETCH = {"one callback, 8 pools": (ONE_CALLBACK + ("--prefetch",), 8),
            "a callback each, 4 pools": (PROGRAMS["async_prefetch"].args, 4)}


@pytest.mark.parametrize("product", PRODUCTS)
def test_async_sample_in_its_public_sequence_copies_nothing_under_an_execution(product, tmp_path):
    """The public sample's sequence copies every input (blocking) before the first execution."""
    public = Program("resnet50_async.py", ONE_CALLBACK, "resnet50", 8, {}, 0)
    copies, executions = _copies_and_executions(_records(public, product, tmp_path), "resnet50")
    assert len(copies) == len(executions) == 8
    assert max(c["end"] for c in copies) <= executions[0]["start"]
    assert not any(_overlap(c, e) for c in copies for e in executions)


@pytest.mark.parametrize("setting", PREFETCH)
@pytest.mark.parametrize("product", PRODUCTS)
def test_async_sample_with_a_copy_stream_copies_a_pool_under_another_pools_execution(product, setting, tmp_path):
    """--prefetch: each execution's input is copied on a second stream; the execution waits for it, a pool's input
    is copied again only once the pool's previous execution has ended, no copy runs under an execution of its own
    pool, and copies run under other pools' executions. (Which copies do varies from run to run: the callback
    thread's acl.rt.process_report lets the device run ahead of the main thread, and a copy the main thread queues
    afterwards starts late; only what the program's streams and events impose is asserted.)"""
    args, pools = PREFETCH[setting]
    program = Program("resnet50_async.py", args, "resnet50", 8, {}, 0)
    copies, executions = _copies_and_executions(_records(program, product, tmp_path), "resnet50")
    assert len(copies) == len(executions) == 8
    assert len({c["stream"] for c in copies}) == 1 and copies[0]["stream"] != executions[0]["stream"]
    for i, (copy, execution) in enumerate(zip(copies, executions)):
        assert copy["end"] <= execution["start"]
        if i >= pools:
            assert copy["start"] >= executions[i - pools]["end"]
    under = [(i, j) for i, c in enumerate(copies) for j, e in enumerate(executions) if _overlap(c, e)]
    assert all(i % pools != j % pools for i, j in under)
    if setting == "one callback, 8 pools":  # no callback thread runs before the last execution: the same timeline
        assert under  # every run, and copies under other pools' executions in it (a callback each: some runs none)


def test_dynamic_hw_sample_refuses_a_size_that_is_not_a_gear_with_its_own_check(tmp_path):
    """--h 100 --w 100 is not among the declared gears: get_dynamic_hw lists them and the sample's check fails
    with ACL_ERROR_GE_SHAPE_INVALID before any execution."""
    program = Program("resnet50_dynamic_hw.py", ("--", "--h", "100", "--w", "100"), "tf_resnet50", 0, {}, 0)
    res = _run(program, "910B", tmp_path / "out")
    summary = _summary(res)
    assert res.returncode == 1
    assert summary["error"] == ("Exception: [dynamic hw] [100, 100] is not in [[112, 112], [224, 224], [448, 448]] "
                                "failed ret=145021")
    assert summary["calls"].get("aclmdlGetDynamicHW") == 1 and "aclmdlExecute" not in summary["calls"]


def test_each_inference_sample_names_the_public_sample_it_follows():
    follows = {"resnet50_sync.py": "resnet50_imagenet_classification",
               "resnet50_async.py": "resnet50_async_imagenet_classification",
               "resnet50_dynamic_hw.py": "resnet50_imagenet_dynamic_hw"}
    assert sorted(p.name for p in HERE.glob("resnet50_*.py")) == sorted(follows)
    for script, sample in follows.items():
        doc = (HERE / script).read_text().split('"""')[1]
        assert f"Ascend/samples'\npython/level2_simple_inference/1_classification/{sample}/src/acl_net.py" in doc


def test_the_inference_notebook_runs_this_async_sample_unchanged():
    """notebooks/inference.ipynb uses installed package data only, so it carries the program it runs: its PROGRAM
    cell holds these files, byte for byte."""
    import ast

    cells = json.loads((HERE.parent.parent.parent / "notebooks" / "inference.ipynb").read_text())["cells"]
    source = next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith("PROGRAM = {"))
    program = ast.literal_eval(source.split("=", 1)[1].strip())
    assert sorted(program) == ["constant.py", "images.py", "model/resnet50.om.toml", "resnet50_async.py"]
    for name, text in program.items():
        assert text == (HERE / name).read_text(), name
