"""Kernels in the reports (issue 44, item 5): the run summary and the msprof export show each kernel by name, with
its blockDim and how its time was found; the overlap planner and sweeps take a kernel's measured time from a run's
summary (`--compute-from RUN.json[:KERNEL]`), and the iteration they plan adds up from the copies and that kernel.
The compiled-kernel tests build with `acl-emu c++` as tests/test_device_code.py does."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import emu
from emu.cli import main
from emu.models.aicore import kernel_label
from emu.models.msprof import build as msprof_build
from emu.models.trace import RECORD
from emu.studies import overlap, overlap_report
from emu.studies.runsummary import GIVEN, summary, summary_text
from test_device_code import EASY_DECLS, EASY_KERNELS, build

MIB = 1 << 20


# -- the label ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("label, name, block_dim, how", [
    ("add_custom<<<8>>> [estimated: vector-bound, 8 blocks on 8 cores in 1 wave(s)]", "add_custom", 8,
     "estimated: vector-bound, 8 blocks on 8 cores in 1 wave(s)"),
    ("EasyOPf<<<16>>> [declared in kernels.toml: 250 us]", "EasyOPf", 16, "declared in kernels.toml: 250 us"),
    ("EasyOPf<<<8>>> [estimated: scalar-bound,", "EasyOPf", 8, "estimated: scalar-bound..."),  # a record's, cut
    ("EasyOPf<<<8>>>", "EasyOPf", 8, None),  # its blocks did not run: no time found
    ("compute[3]", "compute[3]", None, None),  # a Python kernel's own name
])
def test_a_kernel_label_reads_back_as_its_name_blockdim_and_how(label, name, block_dim, how):
    assert kernel_label(label) == (name, block_dim, how)


# -- the run summary ---------------------------------------------------------------------------------------------
def _python_kernels(rt, durations: dict[str, list[float]]) -> None:
    s = rt.create_stream()
    for name, us in durations.items():
        for d in us:
            rt.launch_kernel(lambda: None, (), s, duration_us=d, name=name)
    rt.synchronize_stream(s)


def test_the_summary_lists_each_kernel_with_its_launches_and_time_the_most_time_first():
    rt = emu.configure(product="910B", functional=True)
    rt.set_device(0)
    _python_kernels(rt, {"small": [3.0], "big": [10.0, 20.0, 30.0]})
    result = summary(rt, None)
    assert [k["name"] for k in result["kernels"]] == ["big", "small"]
    big = result["kernels"][0]
    assert big["launches"] == 3 and big["block_dim"] is None and big["how"] == GIVEN
    assert big["total_us"] == pytest.approx(60.0) and big["mean_us"] == pytest.approx(20.0)
    text = summary_text(result)
    assert "kernel  blockDim  launches  total us  mean us  time found" in text
    assert any(line.split()[:5] == ["big", "-", "3", "60.000", "20.000"] for line in text.splitlines())
    assert json.loads(json.dumps(result))["kernels"] == result["kernels"]  # (the --json object carries it)


def test_a_run_without_kernels_has_none_and_no_table():
    rt = emu.configure(product="910B", functional=True)
    rt.set_device(0)
    dev = rt.malloc(64)
    rt.memset(dev, 64, 0, 64)
    result = summary(rt, None)
    assert result["kernels"] == []
    assert "time found" not in summary_text(result)


def test_kernels_are_not_known_when_the_run_kept_only_some_records():
    rt = emu.configure(product="910B", functional=True, records=1)
    rt.set_device(0)
    _python_kernels(rt, {"k": [1.0, 2.0, 3.0]})
    result = summary(rt, None)
    assert result["kernels"] is None and result["device_busy_ms"] is None
    assert "[acl-emu] kernels: not known (the run kept only some of its task records)" in summary_text(result)


# -- the msprof export -------------------------------------------------------------------------------------------
def test_msprof_names_a_kernel_by_its_name_with_block_dim_and_how_its_time_was_found():
    records = np.zeros(2, dtype=RECORD)
    records[0] = ("Easy<<<16>>> [declared in k.toml: 5 us]", "kernel", "s", 0, -1, "", "", 0, 1, 0.0, 1e-6,
                  6e-6, -1, -1)
    records[1] = ("my_python_kernel", "kernel", "s", 0, -1, "", "", 0, 1, 6e-6, 7e-6, 9e-6, -1, -1)
    events = [e for e in msprof_build(records, [], [(None, None, False)] * 2) if e.get("ph") == "X"]
    assert [e["name"] for e in events] == ["Easy", "my_python_kernel"]
    assert all(e["args"]["Task Type"] == "AI_CORE" for e in events)
    assert events[0]["args"]["Block Dim"] == 16
    assert events[0]["args"]["acl-emu time"] == "declared in k.toml: 5 us"
    assert "Block Dim" not in events[1]["args"] and "acl-emu time" not in events[1]["args"]


# -- the overlap planner and sweeps: a kernel's measured time ---------------------------------------------------
def _run_json(tmp_path: Path, kernels) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"product": "910B", "kernels": kernels}))
    return path


KERNELS = [
    {"name": "add_custom", "block_dim": 8, "launches": 4, "total_us": 40.0, "mean_us": 10.0,
     "how": "estimated: vector-bound, 8 blocks on 8 cores in 1 wave(s)"},
    {"name": "add_custom", "block_dim": 2, "launches": 1, "total_us": 15.0, "mean_us": 15.0, "how": "estimated: x"},
    {"name": "scale", "block_dim": 8, "launches": 2, "total_us": 5.0, "mean_us": 2.5,
     "how": "declared in kernels.toml: 2.5 us"},
]


def test_compute_from_takes_the_kernels_mean_per_launch_times_the_launches(tmp_path):
    path = _run_json(tmp_path, KERNELS)
    source = overlap.compute_from_run(str(path))  # the kernel with the most time: add_custom at blockDim 8
    assert (source["kernel"], source["block_dim"], source["compute_us"]) == ("add_custom", 8, 10.0)
    assert source["line"] == ("compute 10.000 us: kernel add_custom's mean of 4 launches in run.json (blockDim 8, "
                              "also launched with blockDim 2; estimated: vector-bound, 8 blocks on 8 cores in 1 "
                              "wave(s))")
    source = overlap.compute_from_run(f"{path}:scale", launches=3)
    assert source["compute_us"] == pytest.approx(7.5) and source["launches"] == 3
    assert source["line"].startswith("compute 7.500 us: 3 x kernel scale's mean of 2 launches in run.json")


@pytest.mark.parametrize("content, says", [
    ("not json", "not JSON"),
    ('{"product": "910B"}', 'it has no "kernels"'),
    ('[1, 2]', 'it has no "kernels"'),
    ('{"kernels": null}', "the run's kernels are not known"),
    ('{"kernels": []}', "the run launched no kernel"),
    ('{"kernels": [1]}', 'its "kernels" are not those of'),
])
def test_a_file_that_is_not_a_runs_summary_is_one_line_naming_it(tmp_path, content, says):
    path = tmp_path / "r.json"
    path.write_text(content)
    with pytest.raises(ValueError) as e:
        overlap.compute_from_run(str(path))
    assert says in str(e.value) and str(e.value).startswith(str(path)) and "\n" not in str(e.value)


def test_overlap_and_sweep_refuse_a_wrong_compute_from_with_exit_code_2(tmp_path, capsys):
    path = _run_json(tmp_path, KERNELS)
    base = ["--h2d", "1M", "--d2h", "1M", "--out", str(tmp_path / "o")]
    assert main(["overlap", *base, "--compute-from", f"{path}:nope"]) == 2
    err = capsys.readouterr().err
    assert err == (f"acl-emu overlap: error: argument --compute-from: {path}: no kernel 'nope'; the run launched "
                   f"add_custom, scale\n")
    assert main(["sweep", *base, "--compute-from", str(tmp_path / "missing.json")]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err
    assert main(["overlap", *base, "--compute-from", str(path), "--compute-us", "5"]) == 2
    assert "give --compute-us or --compute-from, not both" in capsys.readouterr().err
    assert main(["overlap", *base]) == 2
    assert "--compute-us (or --compute-from)" in capsys.readouterr().err
    assert main(["overlap", *base, "--compute-us", "5", "--launches", "2"]) == 2
    assert "--launches: only with --compute-from" in capsys.readouterr().err


def test_the_overlap_plan_and_its_report_say_where_the_compute_time_came_from(tmp_path, capsys):
    path = _run_json(tmp_path, KERNELS)
    assert main(["overlap", "--h2d", "1M", "--d2h", "1M", "--compute-from", f"{path}:add_custom", "--launches",
                 "2", "--streams", "1,2", "--chunks", "1,2", "--grid-only", "--out", str(tmp_path / "o"),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["compute_us"] == 20.0 and result["compute_from"]["kernel"] == "add_custom"
    assert result["compute_from"]["line"] in overlap_report.summary(result)
    assert json.loads((tmp_path / "o" / "overlap.json").read_text())["compute_from"]["mean_us"] == 10.0
    assert main(["sweep", "--h2d", "1M", "--d2h", "1M", "--compute-from", f"{path}:scale", "--streams", "1",
                 "--chunks", "1", "--format", "csv", "--out", str(tmp_path / "s"), "--json"]) == 0
    swept = json.loads(capsys.readouterr().out)
    assert [r["compute_us"] for r in swept["rows"]] == [2.5]
    assert swept["compute_from"]["line"].startswith("compute 2.500 us: kernel scale's mean of 2 launches")


def _iteration_sum(compute_us: float, h2d: int, d2h: int) -> tuple[float, float]:
    """(the naive schedule's iteration, in us; the sum of its parts: the H2D and D2H each alone on the link, the
    kernel's time and what stands between them - the host issuing the first copy after the start event, and the
    kernel's dispatch on the AI core)."""
    result = overlap.plan("910B", h2d, d2h, compute_us, [1], [1], extend=False)
    run = overlap.Schedule("910B", h2d, d2h, compute_us, 1, 1, False)
    first = min(t["start"] for t in overlap.queries.completed_tasks(run.rt) if t["kind"] == "copy")
    parts = (result["copy_h2d_ms"] * 1e3 + compute_us + result["copy_d2h_ms"] * 1e3
             + (first - run.t0) * 1e6 + run.product.hardware.kernel_dispatch * 1e6)
    assert result["naive"]["iteration_ms"] == pytest.approx(run.iteration * 1e3, rel=1e-12)
    return result["naive"]["iteration_ms"] * 1e3, parts


# -- a compiled kernel, end to end -------------------------------------------------------------------------------
def _acl_emu_run(exe: Path, *args: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    return subprocess.run([sys.executable, "-m", "emu", "run", *args, str(exe)], capture_output=True, text=True,
                          timeout=300, env=clean, cwd=exe.parent)


COPY_KERNEL_COPY = EASY_DECLS + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    const size_t bytes = 1 << 20;
    void *host, *dev;
    CHECK(aclrtMallocHost(&host, bytes)); memset(host, 0, bytes);
    CHECK(aclrtMalloc(&dev, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    for (int i = 0; i < 4; i++) {
        CHECK(aclrtMemcpyAsync(dev, bytes, host, bytes, ACL_MEMCPY_HOST_TO_DEVICE, s));
        EasyOP(16, s, (uint32_t *)dev);
        CHECK(aclrtMemcpyAsync(host, bytes, dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST, s));
    }
    EasyOP(2, s, (uint32_t *)dev);
    CHECK(aclrtSynchronizeStream(s));
    return ((uint32_t *)host)[15] == 4 ? 0 : 3;
}
'''


def test_a_compiled_kernels_declared_time_feeds_the_overlap_plan_and_the_iteration_adds_up(tmp_path, capsys):
    """A program copies 1 MiB in, runs EasyOPf over 16 blocks (its time declared in kernels.toml: 250 us) and copies
    it out, 4 times, then EasyOPf once over 2 blocks: the run's summary lists EasyOPf at blockDim 16 (4 launches,
    declared) and at 2, the msprof export names it with its Block Dim, the trace's row names it; the overlap plan
    of its 1 MiB in and out with --compute-from takes 250 us, and its 1 stream x 1 chunk iteration is the H2D,
    the kernel and the D2H one after the other."""
    exe = build(tmp_path, "ckc", COPY_KERNEL_COPY, EASY_KERNELS)
    (tmp_path / "kernels.toml").write_text('[EasyOPf]\n910B = "250 * min(blockDim, 16) / 16"\n')
    done = _acl_emu_run(exe, "--json", "--msprof", str(tmp_path / "msprof.json"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    (tmp_path / "run.json").write_text(done.stdout)
    kernels = json.loads(done.stdout)["kernels"]
    assert [(k["name"], k["block_dim"], k["launches"]) for k in kernels] == [("EasyOPf", 16, 4), ("EasyOPf", 2, 1)]
    assert kernels[0]["total_us"] == pytest.approx(1000, abs=1e-6)
    assert kernels[0]["how"] == "declared in kernels.toml: 250 us"
    assert kernels[1]["how"] == "declared in kernels.toml: 31.25 us"
    events = [e for e in json.loads((tmp_path / "msprof.json").read_text())
              if e.get("args", {}).get("Task Type") == "AI_CORE"]
    assert [(e["name"], e["args"]["Block Dim"]) for e in events] == [("EasyOPf", 16)] * 4 + [("EasyOPf", 2)]
    trace = json.loads((tmp_path / "out" / "trace.json").read_text())
    assert any(e.get("name", "").startswith("EasyOPf<<<16>>> [declared") for e in trace["traceEvents"])

    assert main(["overlap", "--h2d", "1M", "--d2h", "1M", "--compute-from", str(tmp_path / "run.json"),
                 "--streams", "1", "--chunks", "1", "--grid-only", "--out", str(tmp_path / "o"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["compute_us"] == pytest.approx(250, abs=1e-6)
    assert result["compute_from"]["line"] == ("compute 250.000 us: kernel EasyOPf's mean of 4 launches in run.json "
                                              "(blockDim 16, also launched with blockDim 2; declared in "
                                              "kernels.toml: 250 us)")
    iteration, parts = _iteration_sum(result["compute_us"], MIB, MIB)
    assert iteration == pytest.approx(result["naive"]["iteration_ms"] * 1e3, rel=1e-12)
    assert iteration == pytest.approx(parts, abs=1e-6)  # within rounding: nothing else in the iteration
    assert iteration > result["compute_us"] + (result["copy_h2d_ms"] + result["copy_d2h_ms"]) * 1e3


def test_an_estimated_vector_kernels_time_feeds_the_sweep(tmp_path, capsys):
    """A vector kernel (add over 8 blocks, DataCopy in and out) timed by the AI Core's estimate: the summary says
    so, and the sweep's rows take its mean time per launch; a 1 x 1 iteration is its copies and its kernel."""
    exe = build(tmp_path, "vadd", EASY_DECLS.replace("void WildOP", "void VAdd(void* stream, void* x, void* y);\n"
                                                     "void WildOP") + r'''
int main() {
    CHECK(aclInit(nullptr)); CHECK(aclrtSetDevice(0));
    aclrtStream s; CHECK(aclrtCreateStream(&s));
    const size_t bytes = 8 * 4096 * 2;
    void *x, *y;
    CHECK(aclrtMalloc(&x, bytes, ACL_MEM_MALLOC_HUGE_FIRST)); CHECK(aclrtMalloc(&y, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(x, bytes, 0, bytes)); CHECK(aclrtMemset(y, bytes, 0, bytes));
    for (int i = 0; i < 3; i++) VAdd(s, x, y);
    CHECK(aclrtSynchronizeStream(s));
    return 0;
}
''', EASY_KERNELS + r'''
constexpr int32_t N = 4096;
extern "C" __global__ __aicore__ void vadd(GM_ADDR x, GM_ADDR y)
{
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, N * sizeof(half));
    pipe.InitBuffer(b, N * sizeof(half));
    AscendC::GlobalTensor<half> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ half *)x + N * AscendC::GetBlockIdx(), N);
    yGm.SetGlobalBuffer((__gm__ half *)y + N * AscendC::GetBlockIdx(), N);
    AscendC::LocalTensor<half> la = a.Get<half>(), lb = b.Get<half>();
    AscendC::DataCopy(la, xGm, N);
    AscendC::DataCopy(lb, yGm, N);
    AscendC::Add(la, la, lb, N);
    AscendC::DataCopy(xGm, la, N);
}
void VAdd(void* stream, void* x, void* y) { vadd<<<8, nullptr, stream>>>(x, y); }
''')
    done = _acl_emu_run(exe, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (tmp_path / "run.json").write_text(done.stdout)
    [k] = json.loads(done.stdout)["kernels"]
    assert (k["name"], k["block_dim"], k["launches"]) == ("vadd", 8, 3)
    assert k["how"].startswith("estimated: ") and k["mean_us"] > 0

    assert main(["sweep", "--h2d", "2M", "--d2h", "1M", "--compute-from", f"{tmp_path / 'run.json'}:vadd",
                 "--streams", "1", "--chunks", "1,2", "--format", "csv", "--out", str(tmp_path / "s"), "--json"]) == 0
    swept = json.loads(capsys.readouterr().out)
    assert [r["compute_us"] for r in swept["rows"]] == [pytest.approx(k["mean_us"], rel=1e-12)] * 2
    iteration, parts = _iteration_sum(k["mean_us"], 2 * MIB, MIB)
    assert swept["rows"][0]["iteration_ms"] * 1e3 == pytest.approx(iteration, rel=1e-12)
    assert iteration == pytest.approx(parts, abs=1e-6)
