"""Every timing figure a user reads names the routes it rests on that no independent measurement checks
(`product.unvalidated`, emu.routes): bandwidth tables, CSV, JSON and plots; compare; overlap; sweep rows; the
`acl-emu run` summary. Each check runs with routes marked unvalidated and with none marked, so it does not
depend on what the configs list."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from types import SimpleNamespace

import pytest

import emu
from emu import config
from emu import constants as C
from emu.cli import bandwidth_command
from emu.studies import (bandwidth, bandwidth_report, compare, compare_report, overlap, overlap_report, runsummary,
                         sweep)

K, M = 1 << 10, 1 << 20


@pytest.fixture
def mark(monkeypatch):
    """mark(*routes): from now on every loaded product has exactly these routes unvalidated."""
    real = config.load

    def marked(*routes):
        made: dict = {}

        def load(name=config.DEFAULT_PRODUCT):
            key = str(name)
            if key not in made:
                made[key] = dataclasses.replace(real(name), unvalidated=frozenset(routes))
            return made[key]

        monkeypatch.setattr(config, "load", load)

    return marked


def _bandwidth():
    return bandwidth.measure("910B", [4 * K, M], peer_sizes=[M], repetitions=2, peer_repetitions=1)


def _row(result, test, memory, n):
    return next(r for r in result["rows"] if (r["test"], r["memory"], r["bytes"]) == (test, memory, n))


def _table(result, start):
    return next(text for title, text in bandwidth_report.tables(result) if title.startswith(start))


def _line(text, start):
    return next(line for line in text.splitlines() if line.startswith(start))


# -- acl-emu bandwidth --------------------------------------------------------------------------------------
def test_bandwidth_rows_name_their_route_and_whether_it_is_validated(mark):
    mark("h2d", "async-small")
    result = _bandwidth()
    assert result["unvalidated_routes"] == ["h2d", "async-small"]
    assert {"h2d", "d2h", "h2d-pageable", "d2h-pageable", "async-small", "d2d", "p2p-hccs"} <= set(result["routes"])
    expect = {("h2d", "pinned", M): ("h2d", False), ("d2h", "pinned", M): ("d2h", True),
              ("h2d", "registered", M): ("h2d", False), ("h2d", "pageable", M): ("h2d-pageable", True),
              ("h2d", "pinned", 4 * K): ("async-small", False), ("d2d", "device", M): ("d2d", True),
              ("p2p", "device", M): ("p2p-hccs", True)}
    for key, want in expect.items():
        row = _row(result, *key)
        assert (row["timing_route"], row["validated"]) == want, key
    assert _row(result, "h2d", "pageable", M)["route"] == "staged h2d"  # the hardware path stays as it was
    assert "h2d, async-small" in result["routes_note"]


def test_bandwidth_with_nothing_marked_says_every_route_is_checked(mark):
    mark()
    result = _bandwidth()
    assert result["unvalidated_routes"] == [] and all(r["validated"] for r in result["rows"])
    assert result["routes_note"].startswith("every route")
    text = bandwidth_report.report({**result, "files": {}})
    assert "UNVALIDATED" not in text
    assert _line(_table(result, "H2D / D2H, device 0, page-locked"), "1 MiB").rstrip().endswith("yes")
    axes = bandwidth_report.bandwidth_figure(result).axes
    labels = [t.get_text() for ax in axes for t in ax.get_legend().get_texts()]
    assert not any("unvalidated" in t for t in labels)


def test_bandwidth_tables_mark_the_rows_of_unvalidated_routes(mark):
    mark("d2h", "p2p-hccs")
    result = _bandwidth()
    pinned = _table(result, "H2D / D2H, device 0, page-locked")
    assert "checked" in pinned.splitlines()[0]
    assert _line(pinned, "1 MiB").rstrip().endswith("UNVALIDATED (d2h)")
    assert _line(pinned, "4 KiB").rstrip().endswith("yes")  # async-small is not marked
    assert _line(_table(result, "D2D"), "1 MiB").rstrip().endswith("yes")
    assert _line(_table(result, "device to device by route"), "1 MiB").rstrip().endswith("UNVALIDATED (p2p-hccs)")
    matrix = _table(result, "device-to-device matrix, unidirectional")
    assert all(line.rstrip().endswith("UNVALIDATED (p2p-hccs)") for line in matrix.splitlines()[2:])
    text = bandwidth_report.report({**result, "files": {}})
    assert "checked: unvalidated on 910B" in text and re.search(r"validate\): d2h, p2p-hccs$", _line(text, "checked:"))


def test_bandwidth_plots_mark_unvalidated_curves_and_cells(mark):
    mark("d2h", "p2p-hccs")
    result = _bandwidth()
    fig = bandwidth_report.bandwidth_figure(result)
    left, right = fig.axes[:2]
    labels = [t.get_text() for t in left.get_legend().get_texts()]
    # D2H: its 1 MiB point (d2h) is unvalidated, its 4 KiB one (async-small) is not
    assert any(t.startswith("D2H pinned") and t.endswith("(partly unvalidated)") for t in labels), labels
    assert any(t.startswith("H2D pinned") and "unvalidated" not in t for t in labels), labels
    assert any(t.startswith("HCCS") and t.endswith("(unvalidated)") for t in
               [t.get_text() for t in right.get_legend().get_texts()])
    assert "d2h, p2p-hccs" in fig.get_supxlabel() and "hollow markers" in fig.get_supxlabel()
    hollow = [line for ax in (left, right) for line in ax.get_lines() if line.get_markerfacecolor() == "white"]
    assert hollow
    p2p = bandwidth_report.p2p_figure(result)
    cells = [t.get_text() for t in p2p.axes[0].texts]
    assert sum(t.endswith("*") for t in cells) == 56  # every measured pair of the 8 devices
    assert p2p.get_supxlabel().endswith("p2p-hccs")


def test_bandwidth_files_and_command_json_carry_the_routes(mark, tmp_path, capsys):
    mark("h2d")
    args = SimpleNamespace(product="910B", sizes=[4 * K, M], peer_size=M, reps=1, out=str(tmp_path), json=True)
    assert bandwidth_command(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["unvalidated_routes"] == ["h2d"]
    assert all({"timing_route", "validated"} <= set(r) for r in printed["rows"])
    with open(tmp_path / "bandwidth.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    big_h2d = [r for r in rows if r["test"] == "h2d" and r["memory"] == "pinned" and r["bytes"] == str(M)]
    assert big_h2d[0]["timing_route"] == "h2d" and big_h2d[0]["checked"] == "UNVALIDATED"
    assert {r["checked"] for r in rows if r["test"] == "d2d"} == {"yes"}
    assert json.loads((tmp_path / "bandwidth.json").read_text())["unvalidated_routes"] == ["h2d"]


# -- acl-emu compare ----------------------------------------------------------------------------------------
def test_compare_bandwidth_rows_say_which_headline_routes_are_unvalidated(mark, tmp_path):
    mark("p2p-sio")
    result = compare.compare_bandwidth(["910B", "A3"], [4 * K, M], peer_sizes=[M], repetitions=1)
    rows = {r["product"]: r for r in result["rows"]}
    assert rows["A3"]["unvalidated_routes"] == ["p2p-sio"] and rows["A3"]["validated"] is False
    assert rows["910B"]["unvalidated_routes"] == [] and rows["910B"]["validated"] is True
    assert {"h2d", "d2h", "d2d", "p2p-hccs"} <= set(rows["910B"]["routes"])
    assert result["unvalidated_routes"] == {"910B": [], "A3": ["p2p-sio"]}
    compare_report.write_outputs(result, tmp_path)
    text = compare_report.report(result)
    assert _line(text, "910B").rstrip().endswith("yes") and _line(text, "A3").rstrip().endswith("UNVALIDATED")
    assert "checked: unvalidated on A3 (no independent measurement; see acl-emu validate): p2p-sio" in text
    with open(tmp_path / "compare.csv", newline="") as f:
        csv_rows = {r["product"]: r for r in csv.DictReader(f)}
    assert csv_rows["A3"]["checked"] == "UNVALIDATED" and csv_rows["A3"]["unvalidated_routes"] == "p2p-sio"


def test_compare_overlap_rows_carry_the_routes_of_each_plan(mark):
    mark("event")
    result = compare.compare_overlap(["910B"], 4 * M, M, 100.0, [1, 2], [1, 2], extend=False)
    row = result["rows"][0]
    assert row["unvalidated_routes"] == ["event"] and row["validated"] is False
    assert "checked" in compare_report.table(result).splitlines()[0]


# -- acl-emu overlap ----------------------------------------------------------------------------------------
def test_overlap_routes_follow_what_the_schedule_issues(mark):
    mark()
    one = overlap.simulate("910B", 4 * M, M, 100.0, 1, 1)
    assert one["routes"] == ["h2d", "d2h", "launch"] and one["unvalidated_routes"] == []
    two = overlap.simulate("910B", 4 * M, M, 100.0, 2, 2)
    assert two["routes"] == ["h2d", "d2h", "launch", "event"]  # the streams wait for each other's events
    small = overlap.simulate("910B", 4 * M, M, 100.0, 1, 32)  # 32 KiB D2H chunks
    assert small["routes"] == ["h2d", "async-small", "launch"]
    pageable = overlap.simulate("910B", 4 * M, M, 100.0, 1, 1, pageable=True)
    assert pageable["routes"] == ["h2d-pageable", "d2h-pageable", "launch"]
    rc = overlap.simulate("200I_A2", 4 * M, M, 100.0, 1, 1)  # RC: page-locked host memory is device memory
    assert rc["routes"] == ["d2d", "launch"]


def test_overlap_plan_names_its_unvalidated_routes_in_json_and_text(mark, tmp_path):
    mark("event", "h2d-pageable")
    result = overlap.plan("910B", 4 * M, M, 100.0, [1, 2], [1, 2], extend=False)
    assert result["routes"] == ["h2d", "d2h", "launch", "event"] and result["unvalidated_routes"] == ["event"]
    only_one = overlap.plan("910B", 4 * M, M, 100.0, [1], [1, 2], extend=False)
    assert only_one["unvalidated_routes"] == []  # one stream: no cross-stream waits
    assert "checked: every route" in overlap_report.summary(only_one)
    overlap_report.write_outputs(tmp_path, result, overlap.timelines("910B", result))
    assert json.loads((tmp_path / "overlap.json").read_text())["unvalidated_routes"] == ["event"]
    assert ("checked: unvalidated on 910B (no independent measurement; see acl-emu validate): event"
            in overlap_report.report(result))


# -- acl-emu sweep ------------------------------------------------------------------------------------------
def test_sweep_rows_carry_the_unvalidated_routes_of_their_run(mark, tmp_path):
    mark("launch", "h2d", "event")
    grid = sweep.Grid(products=("910B",), h2d=(4 * M,), d2h=(M,), compute_us=(100.0,), streams=(1, 2), chunks=(2,))
    rows = sweep.run(grid)
    assert sweep.COLUMNS[-1] == "unvalidated"
    assert [r["unvalidated"] for r in rows] == ["h2d;launch", "h2d;launch;event"]
    files = sweep.write(rows, tmp_path, ("csv",))
    with open(files["csv"], newline="") as f:
        assert [r["unvalidated"] for r in csv.DictReader(f)] == ["h2d;launch", "h2d;launch;event"]
    assert sweep.unvalidated_line(rows).endswith("910B: h2d, launch, event")
    mark()
    rows = sweep.run(grid)
    assert [r["unvalidated"] for r in rows] == ["", ""]
    assert sweep.unvalidated_line(rows).startswith("every route")


def test_sweep_parquet_has_the_column(mark, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    mark("d2h")
    rows = sweep.run(sweep.Grid(products=("910B",), h2d=(4 * M,), d2h=(M,), compute_us=(100.0,), streams=(1,),
                                chunks=(1,)))
    files = sweep.write(rows, tmp_path, ("parquet",))
    assert pq.read_table(files["parquet"]).column("unvalidated").to_pylist() == ["d2h"]


# -- acl-emu run --------------------------------------------------------------------------------------------
def _script_summary():
    rt = emu.configure("910B", functional=False)
    rt.init()
    rt.set_device(0)
    dev, host = rt.malloc(M), rt.malloc_host(M)
    rt.memcpy(dev, M, host, M, C.ACL_MEMCPY_HOST_TO_DEVICE)
    rt.memset(dev, M, 0, M)
    return runsummary.summary(rt, None)


def test_run_summary_names_the_unvalidated_routes_the_script_used(mark):
    mark("memset", "d2h")
    result = _script_summary()
    assert result["routes"] == ["h2d", "memset"] and result["unvalidated_routes"] == ["memset"]
    stream = io.StringIO()
    runsummary.print_summary(result, stream=stream)
    assert "[acl-emu] by the links the copies crossed, unvalidated on 910B" in stream.getvalue()
    assert stream.getvalue().rstrip().splitlines()[-1].endswith("see acl-emu validate): memset")
    mark("d2h")
    result = _script_summary()
    assert result["unvalidated_routes"] == []
    stream = io.StringIO()
    runsummary.print_summary(result, stream=stream)
    assert "unvalidated" not in stream.getvalue()
