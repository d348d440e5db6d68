"""What a new user meets first (issue 34, "Packaging and first contact"): a progress bar that fits the terminal,
-q / -v, product names in any case with a suggestion for a near miss, sizes that are read one way only,
`acl-emu run` under SIGTERM, the device and host times of a run's summary, a Gantt chart that stays readable, and
tables and a README that say what is there."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emu import config
from emu.cli import build_parser, main, set_verbosity
from emu.studies import bandwidth, overlap, overlap_report, validate, validate_report
from emu.studies.args import product_arg, product_list
from emu.studies.common import Progress, human_bytes, parse_size

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _default_verbosity():
    yield
    set_verbosity()  # a test's -q must not quiet the next one's in-process run


class Terminal:
    """A stream that says it is a terminal and keeps what was written."""

    def __init__(self):
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass


# -- the progress bar ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("columns", [80, 40, 200])
def test_the_progress_bar_is_clipped_to_the_terminal_and_never_wraps_at_80_columns(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    term = Terminal()
    with Progress(512, "compare overlap 910B-Gen5,A3,950PR", stream=term) as bar:
        for i in range(512):
            bar.advance(1, f"{i % 8 + 1} streams x {i + 1} chunks, and a note far longer than any terminal line")
    drawn = [line for line in term.text.split("\r") if line.strip()]
    assert len(drawn) == 512
    assert all(len(line.rstrip("\n")) <= columns - 1 for line in drawn)
    assert "512/512" in drawn[-1]


def test_the_progress_notes_print_sizes_as_binary_units():
    notes = []

    class Recorder:
        def advance(self, n=1, note=""):
            notes.append(note)

    bandwidth.measure("910B", [64 << 20], peer_sizes=[], progress=Recorder())
    assert any("64 MiB" in n for n in notes) and not any(re.search(r"\d{5,}", n) for n in notes)
    assert human_bytes(64 << 20) == "64 MiB" and human_bytes(1536) == "1.5 KiB"


# -- -q / -v ---------------------------------------------------------------------------------------------------
def test_quiet_and_verbose_set_the_emu_logger(tmp_path, capsys):
    assert main(["run", "--host-time", "calls", "--out", str(tmp_path / "a")]) == 0
    assert "[acl-emu] 910B: simulated time" in capsys.readouterr().err
    assert main(["-q", "run", "--host-time", "calls", "--out", str(tmp_path / "b")]) == 0
    out = capsys.readouterr()
    assert "[acl-emu]" not in out.err and "run success!" in out.out  # the script's own output stays
    assert Path(tmp_path / "b" / "trace.json").is_file()
    assert main(["-v", "overlap", "--h2d", "1M", "--d2h", "1M", "--compute-us", "10", "--streams", "1",
                 "--chunks", "1,2", "--out", str(tmp_path / "c")]) == 0
    err = capsys.readouterr().err
    assert "overlap: 2 of 2 steps in" in err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["-q", "-v", "products"])  # one or the other


def test_quiet_turns_the_progress_bar_off():
    set_verbosity(quiet=True)
    assert not Progress(3, stream=Terminal()).enabled
    set_verbosity()
    assert Progress(3, stream=Terminal()).enabled


# -- product names and sizes -----------------------------------------------------------------------------------
def test_product_names_match_in_any_case_and_a_near_miss_gets_a_suggestion(capsys):
    assert config.load("910b").name == "910B" and config.load("a3") is config.load("A3")
    assert product_arg("910b") == "910B" and product_list("a3, 950pr") == ["A3", "950PR"]
    with pytest.raises(SystemExit):
        main(["overlap", "--product", "91OB", "--h2d", "1M", "--d2h", "1M", "--compute-us", "10"])
    err = capsys.readouterr().err
    assert "unknown product '91OB' (did you mean 910B?" in err and "names match in any case" in err
    with pytest.raises(config.ConfigError, match="unknown product 'nope'; known"):
        config.load("nope")


ACCEPTED = {"4096": 4096, "4096B": 4096, "4K": 4096, "4k": 4096, "4KiB": 4096, "64M": 64 << 20, "64m": 64 << 20,
            "64MiB": 64 << 20, "64MIB": 64 << 20, "1.5M": 3 << 19, "1G": 1 << 30, "1GiB": 1 << 30, "1T": 1 << 40}
REFUSED = {"64MB": "ambiguous", "4KB": "ambiguous", "1GB": "ambiguous", "64Mb": "bits", "64mb": "bits",
           "64Mib": "bits", "64b": "bits", "64X": "not a size"}


def test_sizes_accept_the_unambiguous_forms_and_refuse_the_ambiguous_ones_naming_the_accepted():
    assert {text: parse_size(text) for text in ACCEPTED} == ACCEPTED
    for text, why in REFUSED.items():
        with pytest.raises(ValueError) as e:
            parse_size(text)
        assert why in str(e.value) and "64M or 64MiB" in str(e.value) and "binary" in str(e.value), text
    with pytest.raises(ValueError, match="write 64M or 64MiB for binary"):
        parse_size("64MB")


def test_the_help_says_k_m_g_are_binary(capsys):
    for argv in (["--help"], ["overlap", "--help"], ["bandwidth", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "binary (1K = 1024 bytes" in " ".join(capsys.readouterr().out.split()), argv


def test_a_refused_size_is_one_line_naming_the_accepted_forms(capsys):
    with pytest.raises(SystemExit) as e:
        main(["overlap", "--h2d", "64MB", "--d2h", "1M", "--compute-us", "10"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "argument --h2d" in err and "64M or 64MiB" in err


# -- acl-emu run under SIGTERM ---------------------------------------------------------------------------------
SLOW_SCRIPT = """import sys, time
import acl
acl.rt.set_device(0)
d, ret = acl.rt.malloc(1 << 20, 0)
h, ret = acl.rt.malloc_host(1 << 20)
assert acl.rt.memcpy(d, 1 << 20, h, 1 << 20, 1) == 0
open(sys.argv[1], "w").write("ready")
try:
    time.sleep(60)
finally:
    print("cleaned up", flush=True)
"""


def test_acl_emu_run_under_sigterm_writes_its_summary_and_trace_as_under_sigint(tmp_path):
    script, ready, out = tmp_path / "slow.py", tmp_path / "ready", tmp_path / "out"
    script.write_text(SLOW_SCRIPT)
    child = subprocess.Popen([sys.executable, "-m", "emu", "run", "--out", str(out), str(script), str(ready)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGTERM)
    stdout, stderr = child.communicate(timeout=120)
    assert child.returncode == 128 + signal.SIGTERM, stderr
    assert "cleaned up" in stdout  # the script's own finally ran
    assert "[acl-emu] 910B: simulated time" in stderr and "SIGTERM" in stderr
    assert json.loads((out / "trace.json").read_text())["traceEvents"]


def test_the_sigterm_handler_is_the_previous_one_after_the_script(tmp_path):
    script = tmp_path / "quick.py"
    script.write_text("import acl\nacl.rt.set_device(0)\n")
    before = signal.getsignal(signal.SIGTERM)
    assert main(["-q", "run", "--host-time", "calls", "--out", str(tmp_path / "out"), str(script)]) == 0
    assert signal.getsignal(signal.SIGTERM) is before


# -- the run's summary: device time and host time ----------------------------------------------------------------
def test_the_run_summary_shows_device_time_and_host_time_apart_saying_which_to_read(tmp_path, capsys):
    busy = {}
    for mode in ("calls", "wall"):
        assert main(["run", "--json", "--host-time", mode, "--out", str(tmp_path / mode)]) == 0
        result = json.loads(capsys.readouterr().out)
        for key in ("simulated_ms", "host_ms", "host_time", "device_tasks", "calls", "trace"):  # as before
            assert key in result
        assert 0 < result["device_busy_ms"] <= result["device_end_ms"] <= result["simulated_ms"] + 1e-9
        busy[mode] = result["device_busy_ms"]
    assert busy["wall"] == pytest.approx(busy["calls"], rel=0.05)  # the host's speed hardly moves it
    assert main(["run", "--host-time", "wall", "--out", str(tmp_path / "text")]) == 0
    err = capsys.readouterr().err
    assert "device busy" in err and "read it for what the device work costs" in err
    assert "use --host-time calls for an end-to-end time that repeats" in err


def test_the_device_busy_time_is_the_union_of_the_tasks_spans():
    import numpy as np

    from emu.studies.runsummary import device_busy_ms

    rec = np.zeros(4, dtype=[("start", "f8"), ("end", "f8")])
    rec["start"], rec["end"] = [0.0, 1e-3, 5e-3, 6e-3], [2e-3, 3e-3, 6e-3, 7e-3]  # 0-3 ms, then 5-7 ms
    assert device_busy_ms(rec, 4) == pytest.approx(5.0)
    assert device_busy_ms(rec, 5) is None  # fewer records kept than tasks run


# -- the overlap Gantt chart -----------------------------------------------------------------------------------
def test_the_overlap_gantt_draws_a_readable_schedule_when_the_best_has_hundreds_of_chunks(tmp_path):
    from emu.cli import overlap_runs

    result = overlap.plan("910B", 256 << 20, 64 << 20, 5000, [1, 2, 4, 8], [1, 4, 16])
    best, near = result["best"], result["near_best"]
    assert best["chunks"] >= 256 and near["chunks"] < best["chunks"]
    runs = overlap_runs("910B", result)
    assert (runs["near_best"]["streams"], runs["near_best"]["chunks"]) == (near["streams"], near["chunks"])
    drawn = overlap_report.panels(result, runs)
    (naive, _, _), (title, shown, _), (zoom, same, window) = drawn
    assert shown is runs["near_best"] and "within 1% of the best" in title and "too dense to draw" in title
    assert same is shown and 0 < window < shown["iteration_ms"] and "enlarged" in zoom
    files = overlap_report.write_outputs(tmp_path, result, runs)
    assert Path(files["gantt"]).read_bytes().startswith(b"\x89PNG")


def test_a_schedule_of_few_chunks_is_drawn_as_the_best_with_no_zoom():
    result = overlap.plan("910B", 16 << 20, 4 << 20, 500, [1, 2], [1, 4], extend=False)
    runs = overlap.timelines("910B", result)
    assert [t.split(":")[0] for t, _, _ in overlap_report.panels(result, runs)] == ["naive", "best"]


# -- what the tables and the README say --------------------------------------------------------------------------
def test_the_validate_tables_print_no_none():
    text = validate_report.tables(validate.validate(validate.load(None)))
    assert "None" not in text


def test_the_readme_lists_every_notebook():
    readme = (ROOT / "README.md").read_text()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"](notebooks/{path.name})" in readme, f"README.md does not list {path.name}"
