"""The sanitizer on real programs: tests/sanitize_cases/ (a buggy program per hazard and its fixed twin, and
clean controls), the project's own examples and the Ascend/samples memory scripts, under `acl-emu run
--sanitize`, on 910B and A3.

Each buggy program is caught with the right report: one finding, of the right kind, naming the two calls
the script marks (`# hazard: first` / `# hazard: second`, or `# hazard: first, second` for one call) by file
and line, the missing edge, and (EXTRA) the exact bytes. Each fixed twin and each clean control
(`*_clean.py`) is clean and exits 0."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import emu
from emu.cli import run_script

CASES = Path(__file__).parent / "sanitize_cases"
EXAMPLES = Path(emu.__file__).parent / "examples"
SAMPLES = Path(__file__).parent / "samples"

# case -> (tool, kind, the missing edge's words)
EXPECTED = {
    "missing_event": ("race", "race", "no event orders stream 2 of device 0 after stream 1 of device 0 here"),
    "wrong_stream": ("race", "race", "no event orders stream 2 of device 0 after stream 1 of device 0 here"),
    "early_free": ("host", "free-while-in-use", "synchronize stream 1 of device 0 (aclrtSynchronizeStream"),
    "host_write_after_enqueue": ("host", "source-changed", "the host wrote the buffer without waiting for stream 1"),
    "read_before_sync": ("host", "read-before-complete", "the host did not wait for stream 1 of device 0"),
    "uninitialized_read": ("init", "uninitialized-read", "nothing wrote these bytes"),
    "capture_replay_live_buffer": ("race", "race", "no event orders stream 3 of device 0 after stream 2 of device 0"),
    "thread_free_before_join": ("host", "free-while-in-use", "or join host thread 2, which queued it, after it "
                                "synchronized (threading.Thread.join"),
    "thread_write_after_start": ("race", "race", "host thread 1 must wait for stream 1 of device 0 itself"),
    "pool_free_before_result": ("host", "free-while-in-use", "or join host thread 2, which queued it, after it "
                                "synchronized (threading.Thread.join, or Future.result of its pool task)"),
    "host_write_after_unrelated_sync": ("host", "source-changed", "the host wrote the buffer without waiting for "
                                        "stream 1"),
    "host_write_fresh_view": ("host", "source-changed", "the host wrote the buffer without waiting for stream 1"),
    "batch_overlapping_destinations": ("race", "batch-overlap", "entries 1 and 2 of the aclrtMemcpyBatchAsync"),
    "batch_destination_overlaps_source": ("race", "batch-overlap", "entries 0 and 1 of the aclrtMemcpyBatchAsync"),
    "band_copies_overlap": ("race", "race", "no event orders stream 2 of device 0 after stream 1 of device 0 here"),
    "uninitialized_2d": ("init", "uninitialized-read", "nothing wrote these bytes"),
    "undeclared_kernel_wrong_stream": ("race", "race", "was launched without access=, so its arguments may be read "
                                       "or written"),
    "use_after_free_host": ("host", "use-after-free", "the memory was freed by the aclrtFreeHost"),
    "read_through_fresh_view_caught": ("host", "read-before-complete", "the host did not wait for stream 1 of "
                                       "device 0"),
}

# case -> the finding's memory as exact as it must be: bytes (not their span), pieces (a 2-D copy's rows), offset
EXTRA = {
    "uninitialized_read": {"offset": 1 << 19, "bytes": 1 << 19, "pieces": 1},  # the half never written
    "uninitialized_2d": {"offset": 512, "bytes": 32768, "pieces": 64},  # the right half of each of 64 rows
    "band_copies_overlap": {"offset": 448, "bytes": 64 * 512, "pieces": 512},  # 64 columns of 512 rows
    "batch_overlapping_destinations": {"offset": 3 * (1 << 15), "bytes": 1 << 15, "pieces": 1},
    "undeclared_kernel_wrong_stream": {"offset": 0, "bytes": 1 << 20, "pieces": 1},
}
CLEAN = sorted(p.stem for p in CASES.glob("*_clean.py"))
PRODUCTS = ["910B", "A3"]


def marked(script: Path) -> dict[str, int]:
    """The lines the script marks `# hazard: first` / `# hazard: second`."""
    out = {}
    for no, line in enumerate(script.read_text().splitlines(), 1):
        if "# hazard: " in line:
            for key in line.split("# hazard: ")[1].split(","):
                out[key.strip()] = no
    return out


@pytest.fixture
def restore_acl_modules():
    saved = {k: v for k, v in sys.modules.items() if k == "acl" or k.startswith("acl.")}
    yield
    for k in [k for k in sys.modules if k == "acl" or k.startswith("acl.")]:
        del sys.modules[k]
    sys.modules.update(saved)


def sanitized(script: Path, tmp_path, *args, product="910B") -> tuple[int, dict, str]:
    """(exit code, the findings' JSON, stderr) of `acl-emu run --sanitize script` in this process."""
    out = tmp_path / "findings.json"
    code = run_script(str(script), list(args), product, str(tmp_path / "out"), host_time="calls", sanitize="all",
                      sanitize_json=str(out))
    return code, json.loads(out.read_text()), ""


@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_each_buggy_program_is_caught_with_the_right_report(case, product, tmp_path, restore_acl_modules, capsys):
    script = CASES / f"{case}.py"
    tool, kind, edge = EXPECTED[case]
    code, report, _ = sanitized(script, tmp_path, product=product)
    err = capsys.readouterr().err
    assert code == 1, err
    findings = report["findings"]
    assert len(findings) == 1, [f["title"] for f in findings]
    f = findings[0]
    assert (f["tool"], f["kind"]) == (tool, kind)
    lines = marked(script)
    if kind == "uninitialized-read":  # the read, and the allocation it reads from
        (call,) = f["calls"]
        assert (Path(call["file"]).resolve(), call["line"]) == (script.resolve(), lines["second"])
        assert f["memory"]["allocated_by"]["site"].endswith(f"{script.name}:{lines['first']}")
    else:
        first, second = f["calls"]
        assert (Path(first["file"]).resolve(), first["line"]) == (script.resolve(), lines["first"])
        assert (Path(second["file"]).resolve(), second["line"]) == (script.resolve(), lines["second"])
        if not first["host"]:  # the queued side names its stream and device (a free is the host's own call)
            assert first["stream"] is not None
            assert first["device"] == 0
    for key, value in EXTRA.get(case, {}).items():
        assert f["memory"][key] == value, (key, f["memory"])
    assert edge in f["missing_edge"]
    # the report a person reads: the title, both file:line, the missing edge, on stderr
    assert f["title"] in err
    assert "Missing edge:" in err
    assert f"{script.name}:{lines['second']}" in err
    assert "SANITIZER SUMMARY: 1 finding" in err


@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_each_fixed_program_is_clean(case, product, tmp_path, restore_acl_modules, capsys):
    code, report, _ = sanitized(CASES / f"{case}_fixed.py", tmp_path, product=product)
    err = capsys.readouterr().err
    assert report["findings"] == [], err
    assert code == 0, err
    assert "SANITIZER SUMMARY: 0 findings" in err


@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize("case", CLEAN)
def test_each_clean_control_is_clean(case, product, tmp_path, restore_acl_modules, capsys):
    """Correct programs of each class the sanitizer checks: double buffering, disjoint batch tiles, interleaved
    2-D bands of 512 rows, read-only kernels of undeclared use, freed and reallocated staging buffers."""
    code, report, _ = sanitized(CASES / f"{case}.py", tmp_path, product=product)
    err = capsys.readouterr().err
    assert report["findings"] == [], err
    assert code == 0, err


def test_every_case_has_its_twin_and_the_readme_lists_it():
    readme = (CASES / "README.md").read_text()
    for case in [*EXPECTED, *CLEAN, "read_through_early_view"]:
        assert f"| {case} |" in readme, case
    for case in EXPECTED:
        assert (CASES / f"{case}_fixed.py").exists(), case
    assert len(CLEAN) >= 5


def test_undeclared_kernel_arguments_that_only_read_are_a_possible_hazard_not_a_finding(tmp_path,
                                                                                          restore_acl_modules,
                                                                                          capsys):
    _, report, _ = sanitized(CASES / "undeclared_kernels_read_only_clean.py", tmp_path)
    (p,) = report["possible"]
    assert [c["access"] for c in p["calls"]] == ["undeclared use (read or write)"] * 2  # not labelled "write"
    assert "declare them (access='r', 'w' or 'rw' per buffer)" in p["missing_edge"]
    assert any("possible hazard" in n for n in report["notes"])


def test_a_read_through_a_view_made_before_the_copy_is_said_to_be_unseen(tmp_path, restore_acl_modules, capsys):
    """The documented limit: a read through a numpy view made before the copy cannot be seen; the report says
    which view (its file:line), and the twin that makes its view after the wait has no such note."""
    script = CASES / "read_through_early_view.py"
    code, report, _ = sanitized(script, tmp_path)
    assert report["findings"] == [] and code == 0
    (note,) = [n for n in report["notes"] if n.startswith("Host reads not seen")]
    assert f"{script.name}:{marked(script)['view']}" in note
    _, fixed, _ = sanitized(CASES / "read_through_early_view_fixed.py", tmp_path)
    assert not [n for n in fixed["notes"] if n.startswith("Host reads not seen")]


def test_the_capture_case_names_the_captured_call(tmp_path, restore_acl_modules, capsys):
    script = CASES / "capture_replay_live_buffer.py"
    _, report, _ = sanitized(script, tmp_path)
    first, second = report["findings"][0]["calls"]
    assert first["api"] == second["api"] == "aclmdlRIExecuteAsync"
    assert first["captured"]["api"] == "aclrtMemcpyAsync"
    assert first["stream"] != second["stream"]


def test_the_host_write_case_says_when_the_copy_ran(tmp_path, restore_acl_modules, capsys):
    _, report, _ = sanitized(CASES / "host_write_after_enqueue.py", tmp_path)
    (f,) = report["findings"]
    assert f["count"] == 2  # both batches' copies moved bytes the host had changed
    assert f["calls"][1]["api"] == "aclrtSynchronizeStream"
    assert f["memory"]["bytes"] > 0


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "__init__.py"))
def test_the_projects_examples_run_clean(example, tmp_path, restore_acl_modules, capsys):
    """Every example in emu/examples (copy_pipeline.py asks the stream whether its copies are done instead of
    reading the output before synchronizing)."""
    code, report, _ = sanitized(EXAMPLES / example, tmp_path)
    assert report["findings"] == [], capsys.readouterr().err
    assert code == 0


SAMPLE_RUNS = [
    ("memcpy_host_device.py", ("--write_back_host",)),
    ("memcpy_host_device.py", ("--memory_reuse",)),
    ("memcpy_host_device_async.py", ()),
    ("memcpy_host_dvpp.py", ()),
]


@pytest.mark.parametrize("product", ["910B", "A3", "950PR", "200I_A2"])
@pytest.mark.parametrize("script,args", SAMPLE_RUNS, ids=[f"{s}{''.join(a)}" for s, a in SAMPLE_RUNS])
def test_the_ascend_samples_memory_scripts_run_clean(script, args, product, tmp_path, restore_acl_modules, capsys):
    common = ("--memory_size", "4096", "--number_of_cycles", "2", "--release_cycle", "2")
    code, report, _ = sanitized(SAMPLES / script, tmp_path, *common, *args, product=product)
    assert report["findings"] == [], capsys.readouterr().err


def test_the_command_line_a_user_runs(tmp_path):
    """`acl-emu run --sanitize script.py` as a user runs it: the report on stderr, exit code 1; the script's
    own arguments still reach it; --sanitize=CHECKS narrows the checks; --sanitize-json writes the findings."""
    env = {k: v for k, v in os.environ.items() if k != "ACL_EMU_PRODUCT"}
    cli = [sys.executable, "-m", "emu", "run", "--out", str(tmp_path)]
    buggy = subprocess.run([*cli, "--sanitize", str(CASES / "read_before_sync.py")], capture_output=True,
                           text=True, env=env, timeout=300)
    assert buggy.returncode == 1, buggy.stderr
    assert "========= Host read of bytes a queued task writes, before it completed" in buggy.stderr
    assert "read_before_sync.py:23" in buggy.stderr
    assert "Missing edge: the host did not wait for stream 1 of device 0" in buggy.stderr
    narrowed = subprocess.run([*cli, "--sanitize=race,init", "--sanitize-json", str(tmp_path / "f.json"),
                               str(CASES / "read_before_sync.py")], capture_output=True, text=True, env=env,
                              timeout=300)
    assert narrowed.returncode == 0, narrowed.stderr  # a host hazard, and the host check is off
    assert json.loads((tmp_path / "f.json").read_text())["tools"] == ["init", "race"]
    with_args = subprocess.run([*cli, "--sanitize", str(SAMPLES / "memcpy_host_device_async.py"), "--memory_size",
                                "4096", "--number_of_cycles", "1"], capture_output=True, text=True, env=env,
                               timeout=300)
    assert with_args.returncode == 0, with_args.stderr
    assert "SANITIZER SUMMARY: 0 findings" in with_args.stderr
    bad = subprocess.run([*cli, "--sanitize=races", "x.py"], capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2
    assert "argument --sanitize: 'races' is not a sanitizer check" in bad.stderr
