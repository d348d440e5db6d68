"""`acl-emu overlap`: the pipeline's timing against closed forms, the sweep's choice, and the files it writes."""
from __future__ import annotations

import csv
import json

import pytest

from emu import config
from emu.cli import Parser, add_overlap
from hypothesis import given, settings
from hypothesis import strategies as st

from emu.studies import overlap, overlap_report

MIB = 1 << 20
HW = config.load("910B").hardware
OVERHEAD_S = HW.call_overhead


def cli(argv: list[str]) -> int:
    """The study through its own parser, as `acl-emu overlap ...` runs it."""
    parser = Parser(prog="acl-emu")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_overlap(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def closed_form_serial(h2d: int, d2h: int, compute_us: float) -> float:
    """H2D alone, then the kernel, then D2H alone: seconds."""
    return HW.alone(None, 0, h2d) + compute_us * 1e-6 + HW.alone(0, None, d2h)


def test_naive_matches_the_closed_form():
    h2d, d2h, compute_us = 4 * MIB, 1 * MIB, 300.0
    r = overlap.simulate("910B", h2d, d2h, compute_us, 1, 1)
    expect = closed_form_serial(h2d, d2h, compute_us)
    assert r["iteration_ms"] * 1e-3 == pytest.approx(expect, abs=3 * OVERHEAD_S)
    assert r["exposed_copy_ms"] == pytest.approx(r["iteration_ms"] - compute_us / 1e3)


@pytest.mark.parametrize("chunks", [2, 4, 8])
def test_one_stream_is_serial_whatever_the_chunking(chunks):
    """Stream order: chunk i+1's H2D waits for chunk i's D2H, so nothing overlaps."""
    h2d, d2h, compute_us = 2 * MIB, 2 * MIB, 400.0
    r = overlap.simulate("910B", h2d, d2h, compute_us, 1, chunks)
    serial = closed_form_serial(h2d, d2h, compute_us)
    # each extra chunk adds one transfer latency per direction and a few API calls
    slack = chunks * (2 * HW.host_link.latency + 3 * OVERHEAD_S)
    assert serial <= r["iteration_ms"] * 1e-3 <= serial + slack


def test_compute_bound_best_approaches_the_floor_and_beats_naive():
    h2d, d2h, compute_us = 2 * MIB, 1 * MIB, 3000.0
    res = overlap.plan("910B", h2d, d2h, compute_us, [1, 2, 4], [1, 2, 4, 8, 16])
    assert res["floor_ms"] == pytest.approx(3.0)  # compute >> copy
    assert res["binding"].startswith("compute")
    assert "faster kernels" in res["advice"]
    best, naive = res["best"], res["naive"]
    assert best["iteration_ms"] <= 1.10 * res["floor_ms"]
    assert best["iteration_ms"] < naive["iteration_ms"]
    assert best["streams"] > 1 and best["chunks"] > 1
    assert best["vs_floor"] == pytest.approx(best["iteration_ms"] / res["floor_ms"])
    assert (naive["streams"], naive["chunks"]) == (1, 1)
    # no setting beats compute alone
    assert min(r["iteration_ms"] for r in res["rows"]) >= res["compute_ms"]


def test_best_breaks_ties_towards_fewer_streams_then_chunks():
    rows = [{"streams": 4, "chunks": 8, "iteration_ms": 1.0}, {"streams": 2, "chunks": 8, "iteration_ms": 1.0},
            {"streams": 2, "chunks": 4, "iteration_ms": 1.0}, {"streams": 1, "chunks": 1, "iteration_ms": 2.0}]
    assert overlap.best_of(rows) == rows[2]


def test_utilisations_are_fractions_and_match_the_naive_schedule():
    h2d, d2h, compute_us = 8 * MIB, 2 * MIB, 500.0
    r = overlap.simulate("910B", h2d, d2h, compute_us, 1, 1)
    it = r["iteration_ms"] * 1e-3
    # each direction carries its copy's wire bytes (latency is not on the wire)
    lat = HW.host_link.latency
    assert r["link_h2d_util"] == pytest.approx((HW.alone(None, 0, h2d) - lat) / it, rel=1e-3)
    assert r["link_d2h_util"] == pytest.approx((HW.alone(0, None, d2h) - lat) / it, rel=1e-3)
    # a kernel's span is its work (its dispatch, hardware.kernel_dispatch, comes before it, as in a profile)
    assert r["compute_util"] == pytest.approx(compute_us * 1e-6 / it, rel=1e-6)
    copies = HW.alone(None, 0, h2d) + HW.alone(0, None, d2h)
    assert r["engine_util"] == pytest.approx(copies / (HW.engines_per_device * it), rel=1e-3)
    res = overlap.plan("910B", h2d, d2h, compute_us, [1, 2, 4], [1, 4])
    for row in res["rows"]:
        for k in ("link_h2d_util", "link_d2h_util", "engine_util", "compute_util"):
            assert 0.0 <= row[k] <= 1.0 + 1e-9


def test_pageable_makes_it_worse():
    h2d, d2h, compute_us = 4 * MIB, 1 * MIB, 500.0
    pinned = overlap.plan("910B", h2d, d2h, compute_us, [1, 2], [1, 2, 4])
    pageable = overlap.plan("910B", h2d, d2h, compute_us, [1, 2], [1, 2, 4], pageable=True)
    assert pageable["pageable"] and pageable["memory"] == "pageable"
    assert pageable["naive"]["iteration_ms"] > pinned["naive"]["iteration_ms"]
    assert pageable["best"]["iteration_ms"] > pinned["best"]["iteration_ms"]
    # the floor is the page-locked one: what pinning the buffers would buy
    assert pageable["floor_ms"] == pinned["floor_ms"]
    assert pageable["search"]["converged"] is None  # synchronous copies: no search past the grid


def test_settings_with_more_streams_than_chunks_are_skipped_and_naive_always_runs():
    res = overlap.plan("910B", MIB, MIB, 100.0, [2, 4], [2, 4], extend=False)
    assert {(r["streams"], r["chunks"]) for r in res["rows"]} == {(2, 2), (2, 4), (4, 4)}
    assert res["skipped"] == 1
    assert (res["naive"]["streams"], res["naive"]["chunks"]) == (1, 1)


def test_simulate_refuses_impossible_schedules():
    with pytest.raises(ValueError):
        overlap.simulate("910B", 0, MIB, 1.0, 1, 1)
    with pytest.raises(ValueError):
        overlap.simulate("910B", MIB, MIB, -1.0, 1, 1)
    with pytest.raises(ValueError):
        overlap.simulate("910B", 4, MIB, 1.0, 1, 8)


def test_the_process_runtime_is_left_alone():
    import emu

    before = emu.current()
    overlap.simulate("A3", MIB, MIB, 10.0, 2, 2)
    assert emu.current() is before


def test_rc_product_copies_through_device_memory():
    res = overlap.plan("200I_A2", 2 * MIB, MIB, 200.0, [1, 2], [1, 2, 4])
    assert res["best"]["iteration_ms"] <= res["naive"]["iteration_ms"]
    assert res["floor_ms"] > 0
    # RC: host memory is on-chip, one link carries both directions
    assert [k for k in res["resources_ms"] if k.endswith("(H2D + D2H)")]


# -- the planner: the search past the grid's edge, the floor and what sets it ------------------------
def test_the_search_goes_past_the_grids_edge_until_the_time_stops_improving():
    """A link-bound pipeline whose best setting on a small grid is its most chunks: the search doubles the
    chunks while that improves the best, and says it converged; the best it reports is no worse than the
    grid's, and every setting it tried is in the rows."""
    grid = overlap.plan("910B", 64 * MIB, 16 * MIB, 1500, [1, 2, 4], [1, 2, 4], extend=False)
    assert grid["best"]["chunks"] == 4  # on the edge
    res = overlap.plan("910B", 64 * MIB, 16 * MIB, 1500, [1, 2, 4], [1, 2, 4])
    search = res["search"]
    assert search["extended"] and search["converged"] is True
    assert res["best"]["iteration_ms"] < grid["best"]["iteration_ms"]
    assert res["best"]["chunks"] > 4
    tried = {(r["streams"], r["chunks"]) for r in res["rows"]}
    assert set(map(tuple, search["extended"])) <= tried
    last = [r for r in res["rows"] if (r["streams"], r["chunks"]) == tuple(search["extended"][-1])][0]
    assert last["iteration_ms"] > res["best"]["iteration_ms"] * (1 - overlap.IMPROVES)  # why it stopped


def test_the_search_says_when_a_cap_stopped_it(monkeypatch):
    monkeypatch.setattr(overlap, "SEARCH_MAX_CHUNKS", 8)
    res = overlap.plan("910B", 64 * MIB, 16 * MIB, 1500, [1, 2, 4], [1, 2, 4])
    assert res["search"]["converged"] is False
    assert "cap" in res["search"]["reason"]
    assert "NOT converged" in overlap_report.summary(res)


def test_the_floor_is_the_busiest_resource_and_names_it():
    """Floor = the busiest resource's time: H2D over the host link's down direction, D2H over its up
    direction (both on every engine at once), compute. A large H2D binds the down direction."""
    res = overlap.plan("910B", 64 * MIB, 4 * MIB, 100.0, [1, 2], [1, 2], extend=False)
    busy = res["resources_ms"]
    assert res["floor_ms"] == max(busy.values())
    assert res["binding"] == max(busy, key=busy.get) and "down" in res["binding"]
    alone = HW.alone(None, 0, 64 * MIB, engines=HW.engines_per_device) * 1e3
    assert res["floor_ms"] == pytest.approx(alone)
    assert "faster link" in res["advice"] and "cannot" in res["advice"]


@settings(max_examples=25, deadline=None)
@given(product=st.sampled_from(["910B", "A3", "950PR", "200I_A2"]),
       h2d=st.integers(4 << 10, 32 * MIB), d2h=st.integers(4 << 10, 32 * MIB),
       compute_us=st.floats(0.0, 5000.0), streams=st.integers(1, 6), chunks=st.integers(1, 48))
def test_no_schedule_beats_the_floor(product, h2d, d2h, compute_us, streams, chunks):
    """The floor is a real lower limit: whatever the sizes, compute, streams and chunks, no simulated
    iteration is shorter."""
    streams = min(streams, chunks)
    r = overlap.simulate(product, h2d, d2h, compute_us, streams, chunks)
    assert r["vs_floor"] >= 1 - 1e-9, r


# -- the command ---------------------------------------------------------------------------------

ARGS = ["overlap", "--h2d", "2M", "--d2h", "1M", "--compute-us", "800", "--streams", "1..3", "--chunks", "1,2,4"]


def test_command_writes_table_files_gantt_and_traces(tmp_path, capsys):
    out = tmp_path / "ov"
    assert cli([*ARGS, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "iteration ms" in text and "best:" in text and "naive (1 stream, 1 chunk)" in text
    with open(out / "overlap.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and {"streams", "chunks", "iteration_ms", "exposed_copy_ms", "vs_floor"} <= set(rows[0])
    data = json.loads((out / "overlap.json").read_text())
    # the grid (chunks 1: s1; 2: s1,2; 4: s1..3), then the settings tried past its edge
    assert len(rows) == 1 + 2 + 3 + len(data["search"]["extended"])
    data = json.loads((out / "overlap.json").read_text())
    assert data["product"] == "910B" and data["best"]["iteration_ms"] > 0 and len(data["rows"]) == len(rows)

    import matplotlib.image

    img = matplotlib.image.imread(out / "gantt.png")
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 400

    for name in ("trace-naive.json", "trace-best.json"):
        trace = json.loads((out / name).read_text())
        tracks = [e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"]
        assert "stream 1" in tracks and "host thread 1" in tracks, tracks
        assert "SDMA 0" in tracks and "AI core 0" in tracks, tracks
        assert any(t.startswith("pcie down") for t in tracks) and any(t.startswith("pcie up") for t in tracks)
    best = json.loads((out / "trace-best.json").read_text())
    streams = {t for e in best["traceEvents"] if e.get("name") == "thread_name" for t in [e["args"]["name"]]
               if t.startswith("stream ")}
    assert len(streams) == data["best"]["streams"]


def test_command_json_output_parses(tmp_path, capsys):
    assert cli([*ARGS, "--out", str(tmp_path), "--json", "--product", "A3"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["product"] == "A3"
    assert {"best", "naive", "rows", "floor_ms", "binding", "advice", "search", "files"} <= set(data)
    assert (tmp_path / "gantt.png").exists()


def test_command_default_out_dir_names_the_product(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACL_EMU_PRODUCT", raising=False)
    assert cli(["overlap", "--h2d", "64K", "--d2h", "64K", "--compute-us", "10", "--streams", "1",
                "--chunks", "1"]) == 0
    assert (tmp_path / "acl-emu-out" / "overlap-910B" / "overlap.csv").exists()


@pytest.mark.parametrize("argv, name", [
    (["--h2d", "0", "--d2h", "1M", "--compute-us", "1"], "--h2d"),
    (["--h2d", "1M", "--d2h", "lots", "--compute-us", "1"], "--d2h"),
    (["--h2d", "1M", "--d2h", "1M", "--compute-us", "-1"], "--compute-us"),
    (["--h2d", "1M", "--d2h", "1M", "--compute-us", "1", "--streams", "0..3"], "--streams"),
    (["--h2d", "1M", "--d2h", "1M", "--compute-us", "1", "--chunks", "0"], "--chunks"),
    (["--h2d", "1M", "--d2h", "1M", "--compute-us", "1", "--product", "H100"], "--product"),
    (["--d2h", "1M", "--compute-us", "1"], "--h2d"),
])
def test_bad_arguments_exit_2_with_one_line_naming_the_argument(argv, name, capsys):
    with pytest.raises(SystemExit) as e:
        cli(["overlap", *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err, err


@pytest.mark.parametrize("argv, name", [
    (["--h2d", "8", "--d2h", "1M", "--compute-us", "1", "--chunks", "16"], "--chunks"),
    (["--h2d", "1M", "--d2h", "1M", "--compute-us", "1", "--streams", "4", "--chunks", "1,2"], "--streams"),
])
def test_inconsistent_arguments_exit_2_with_one_line(argv, name, tmp_path, capsys):
    assert cli(["overlap", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err, err


def test_a_product_without_streams_or_events_is_refused_up_front(tmp_path, capsys):
    with pytest.raises(ValueError, match="aclrtCreateStream"):
        overlap.plan("IPV350", MIB, MIB, 10.0, [1], [1])
    assert cli(["overlap", "--product", "IPV350", "--h2d", "1M", "--d2h", "1M", "--compute-us", "1",
                "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--product" in err and "IPV350" in err, err


def test_timelines_are_plain_data_for_the_report():
    res = overlap.plan("910B", 2 * MIB, MIB, 300.0, [1, 2], [1, 2, 4])
    runs = overlap.timelines("910B", res)
    assert list(runs) == ["naive", "best"]
    for name, setting in (("naive", res["naive"]), ("best", res["best"])):
        run = runs[name]
        assert (run["streams"], run["chunks"]) == (setting["streams"], setting["chunks"])
        assert run["iteration_ms"] == pytest.approx(setting["iteration_ms"])
        assert {s["kind"] for s in run["segments"]} == {"H2D", "kernel", "D2H"}
        assert any(e.get("name") == "thread_name" for e in run["trace"]["traceEvents"])
    json.dumps(runs)  # nothing but dicts, lists, strings and numbers


def test_a_config_file_as_product_writes_every_file(tmp_path, capsys):
    """The naive and best schedules run again on the config planned, not on a product of its name."""
    path = tmp_path / "mine.toml"
    path.write_text('inherit = "910B"\n[product]\nname = "mine"\n')
    out = tmp_path / "ov"
    assert cli(["overlap", "--product", str(path), "--h2d", "1M", "--d2h", "1M", "--compute-us", "10",
                "--streams", "1", "--chunks", "1,2", "--out", str(out)]) == 0
    assert json.loads((out / "overlap.json").read_text())["product"] == "mine"
    assert (out / "gantt.png").exists() and (out / "trace-best.json").exists()
