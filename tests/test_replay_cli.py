"""`acl-emu replay` end to end: the table, the files (JSON, CSV, calibration rows, the Gantt chart), a list of
products and a what-if config side by side, and every user mistake as one line with exit code 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emu.cli import main

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
STEP = DATA / "msprof_step.json"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("ACL_EMU_PRODUCT", raising=False)
    monkeypatch.chdir(tmp_path)


def test_replay_on_three_products_prints_the_table_and_writes_the_files(tmp_path, capsys):
    assert main(["replay", str(STEP), "--product", "910B,A3,950PR", "--out", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.lstrip().startswith("measured"))
    assert header.split() == ["measured", "910B", "A3", "950PR"]
    for what in ("step ms", "host link H2D busy ms", "host link D2H busy ms", "peer links busy ms", "SDMA busy ms",
                 "compute busy ms", "copies faster / slower / same"):
        assert any(line.startswith(what) for line in out.splitlines()), what
    assert "copies that moved most on A3:" in out and "bandwidth" in out
    assert "model on 910B (the measured product) vs the profile: 4 copies" in out
    assert "3 event waits name no event" in out  # what was inferred is said
    files = {p.name for p in (tmp_path / "r").iterdir()}
    assert files == {"replay.json", "replay.csv", "calibration.csv", "replay.png"}
    assert (tmp_path / "r" / "replay.png").read_bytes().startswith(b"\x89PNG")
    data = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert [r["product"] for r in data["runs"]] == ["910B", "A3", "950PR"]
    csv_rows = (tmp_path / "r" / "replay.csv").read_text().splitlines()
    assert csv_rows[0].startswith("product,task,row,name,device,stream,direction,bytes,measured_us,replayed_us")
    assert len(csv_rows) == 1 + 3 * 4
    assert f"acl-emu calibrate {tmp_path / 'r' / 'calibration.csv'} --product 910B" in out


def test_json_output_and_a_what_if_config(tmp_path, capsys):
    gen5 = tmp_path / "910B-gen5-x16.toml"
    gen5.write_text('inherit = "910B"\n[product]\nname = "910B-g5"\n[hardware.host_link]\ngen = 5\n'
                    '[hardware.host_link.source]\ngen = "A: a PCIe 5.0 host"\n')
    assert main(["replay", str(STEP), "--product", f"910B,{gen5}", "--json", "--out", str(tmp_path / "r")]) == 0
    result = json.loads(capsys.readouterr().out)
    base, what_if = result["runs"]
    assert what_if["product"] == "910B-g5" and what_if["config"] == str(gen5)
    assert what_if["step_ms"] < base["step_ms"]
    assert what_if["resources_ms"]["host link H2D"] < base["resources_ms"]["host link H2D"] / 1.5
    assert result["files"]["gantt"].endswith("replay.png")


def test_msprof_and_json_take_the_profile_timed_once(tmp_path, capsys, monkeypatch):
    """--msprof writes the first product's run of the replay itself (no second re-timing), the same file
    `write_msprof_replay` writes; --json prints what replay.json holds."""
    from emu.studies import replay

    timed = []
    retime = replay.retime
    monkeypatch.setattr(replay, "retime", lambda graph, product, *a: timed.append(product) or retime(graph, product, *a))
    out = tmp_path / "timeline.json"
    assert main(["replay", str(STEP), "--product", "A3,950PR", "--msprof", str(out), "--json",
                 "--out", str(tmp_path / "r")]) == 0
    assert len(timed) == 3  # the measured product (910B), A3, 950PR: once each
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((tmp_path / "r" / "replay.json").read_text())
    assert printed["files"]["msprof"] == str(out)
    alone = tmp_path / "alone.json"
    replay.write_msprof_replay(STEP, "A3", alone)
    assert out.read_bytes() == alone.read_bytes()


def test_the_other_formats_and_the_inferred_dependencies_from_the_command_line(tmp_path, capsys):
    assert main(["replay", str(DATA / "msprof_no_events.json"), "--product", "A3", "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    assert "3 inferred from the timeline" in out
    assert out.count("    inferred: row ") == 3
    for name in ("task_time_step.csv", "mspti_step.log", "mspti_step.jsonl"):
        assert main(["replay", str(DATA / name), "--product", "A3", "--out", str(tmp_path / name)]) == 0
    assert "copy without a size: MEMCPY_ASYNC x4" in capsys.readouterr().out


def test_unknown_task_types_are_listed(tmp_path, capsys):
    assert main(["replay", str(DATA / "msprof_unknown.json"), "--out", str(tmp_path / "u")]) == 0
    out = capsys.readouterr().out
    assert "unknown task types, replayed with their measured duration: DVPP_VPC x2" in out


def test_the_replay_itself_in_the_msprof_layout(tmp_path, capsys):
    target = tmp_path / "a3.json"
    assert main(["replay", str(STEP), "--product", "A3", "--msprof", str(target), "--out", str(tmp_path / "r")]) == 0
    assert str(target) in capsys.readouterr().out
    events = json.loads(target.read_text())
    assert any(e.get("name") == "MEMCPY_ASYNC" for e in events)


def error_line(capsys, code: int, *needles: str) -> str:
    assert code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err + captured.out
    assert lines[0].startswith("acl-emu replay: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_a_missing_file(tmp_path, capsys):
    error_line(capsys, main(["replay", str(tmp_path / "none.json")]), "none.json", "no such file or directory")


def test_a_malformed_profile_names_file_row_and_field(tmp_path, capsys):
    events = json.loads(STEP.read_text())
    i = next(i for i, e in enumerate(events) if e.get("name") == "MEMCPY_ASYNC" and e["ph"] == "X")
    del events[i]["dur"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(events))
    error_line(capsys, main(["replay", str(bad)]), f"{bad}: row {i}: field 'dur': missing")
    bad.write_text("[{]")
    error_line(capsys, main(["replay", str(bad)]), str(bad), "not JSON")


def test_an_unknown_product_or_too_few_devices(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:  # argparse's own error, before any work
        main(["replay", str(STEP), "--product", "910B,Nope"])
    error_line(capsys, exit_.value.code, "argument --product", "unknown product 'Nope'")
    one = tmp_path / "one.toml"
    one.write_text('inherit = "910B"\n[devices]\ncount = 1\n[devices.source]\ncount = "A: one card"\n')
    events = json.loads(STEP.read_text())
    for e in events:
        if e.get("name") == "process_labels" and e["args"]["labels"] == "NPU 0":
            e["args"]["labels"] = "NPU 3"
    dev3 = tmp_path / "dev3.json"
    dev3.write_text(json.dumps(events))
    error_line(capsys, main(["replay", str(dev3), "--product", str(one)]), "dev3.json: row", "field 'device'",
               "the profile uses device 3", "has 1 device")


def test_the_installed_command_runs_it(tmp_path):
    done = subprocess.run([sys.executable, "-m", "emu", "replay", str(STEP), "--product", "910B,A3,950PR",
                           "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr
    assert "950PR" in done.stdout
