"""`acl-emu sweep`: the overlap pipeline over a grid, one tidy table, serial or on Dask."""
from __future__ import annotations

import csv
import io
import json

import pytest

from emu.cli import main
from emu.studies import overlap, sweep
from emu.studies.common import Progress

MIB = 1 << 20
SMALL = dict(products=("910B", "A3"), h2d=(4 * MIB,), d2h=(MIB,), compute_us=(100.0, 400.0), streams=(1, 2),
             chunks=(1, 2, 4))


def test_the_grid_runs_every_combination_with_streams_at_most_chunks_in_order():
    grid = sweep.Grid(**SMALL)
    runs = grid.runs()
    assert len(runs) == len(grid) == 2 * 2 * 5  # chunks 1: s1; 2: s1,2; 4: s1,2
    assert runs[0] == {"product": "910B", "h2d_bytes": 4 * MIB, "d2h_bytes": MIB, "compute_us": 100.0,
                       "streams": 1, "chunks": 1, "pageable": False}
    assert all(r["streams"] <= r["chunks"] for r in runs)
    assert [r["product"] for r in runs] == ["910B"] * 10 + ["A3"] * 10


def test_a_row_carries_every_swept_parameter_and_metric_with_units():
    rows = sweep.run(sweep.Grid(products=("910B",), h2d=(4 * MIB,), d2h=(MIB,), compute_us=(100.0,),
                                streams=(2,), chunks=(4,)))
    (row,) = rows
    assert tuple(row) == sweep.COLUMNS
    ref = overlap.simulate("910B", 4 * MIB, MIB, 100.0, 2, 4)
    assert row["iteration_ms"] == ref["iteration_ms"] and row["vs_floor"] == ref["vs_floor"]
    assert row["floor_ms"] == overlap.limits("910B", 4 * MIB, MIB, 100.0)["floor_ms"]
    assert row["binding"] in overlap.limits("910B", 4 * MIB, MIB, 100.0)["resources_ms"]


def test_a_parallel_sweep_gives_exactly_the_serial_table(monkeypatch):
    """Forced onto the cluster (threshold 0), after two runs timed here: the rest in batched Dask tasks."""
    monkeypatch.setattr(sweep, "PROBE_RUNS", 2)
    grid = sweep.Grid(**SMALL)
    serial = sweep.run(grid)
    done = sweep.run_planned(grid, workers=2, threshold_s=0)
    assert done.rows == serial
    plan = done.plan
    assert plan.where == "on a local Dask cluster of 2 workers" and plan.probed == 2
    assert plan.batch > 1 and plan.tasks == -(-(len(serial) - 2) // plan.batch)


def test_dask_tasks_carry_batches_of_about_task_s_of_work():
    """A 5 ms run travels 80 to a task (0.4 s); a short grid still leaves each worker several tasks; a run
    longer than TASK_S goes alone."""
    assert sweep.TASK_S == 0.4
    assert sweep.batch_size(0.005, 1400, 2) == 80
    assert sweep.batch_size(0.005, 100, 2) == 17  # 100 runs / (3 tasks x 2 workers)
    assert sweep.batch_size(2.0, 10, 2) == 1
    assert sweep.batch_size(0.0001, 10**6, 8) == 4000
    # the probe spreads over the grid at random, the same on every sweep, not in step with its fields
    probe = sweep._probe_indices(1000)
    assert probe == sweep._probe_indices(1000) and len(set(probe)) == sweep.PROBE_RUNS and max(probe) > 500
    assert len({i % 7 for i in probe}) > 3  # not all at one value of a 7-valued innermost field
    assert sweep._probe_indices(3) == [0, 1, 2]


def test_a_grid_too_small_to_gain_skips_the_cluster_and_says_so(monkeypatch, tmp_path, capsys):
    def no_dask():
        raise AssertionError("the cluster was started")

    monkeypatch.setattr(sweep, "dask_distributed", no_dask)
    grid = sweep.Grid(**SMALL)
    done = sweep.run_planned(grid, workers=2)
    assert done.rows == sweep.run(grid)
    assert done.plan.where == "in this process" and done.plan.batch == 0
    assert "local Dask cluster of 2 workers not used" in done.plan.why
    monkeypatch.setattr(sweep, "PROBE_RUNS", 3)
    done = sweep.run_planned(grid, scheduler="tcp://127.0.0.1:1", threshold_s=1e9)
    assert "the Dask cluster at tcp://127.0.0.1:1 not used" in done.plan.line
    args = ["sweep", "--products", "910B", "--h2d", "2M", "--d2h", "1M", "--streams", "1", "--chunks", "1,2",
            "--workers", "2", "--out", str(tmp_path / "o")]
    monkeypatch.setattr(sweep, "dask_distributed", lambda: None)  # the command's own check that Dask is installed
    assert main(args) == 0
    assert "2 runs in this process; a local Dask cluster of 2 workers not used" in capsys.readouterr().out


def test_the_tables_are_csv_and_parquet_with_the_same_rows(tmp_path):
    import pyarrow.parquet as pq

    rows = sweep.run(sweep.Grid(products=("910B",), h2d=(2 * MIB,), d2h=(MIB,), compute_us=(50.0,),
                                streams=(1, 2), chunks=(2,)))
    files = sweep.write(rows, tmp_path / "out")
    with open(files["csv"]) as f:
        back = list(csv.DictReader(f))
    assert [r["streams"] for r in back] == ["1", "2"] and list(back[0]) == list(sweep.COLUMNS)
    table = pq.read_table(files["parquet"]).to_pylist()
    assert table == rows


def test_a_toml_grid_and_the_command_line_over_it(tmp_path, capsys):
    cfg = tmp_path / "grid.toml"
    cfg.write_text('[sweep]\nproducts = ["910B"]\nh2d = ["2M", "4M"]\nd2h = "1M"\ncompute_us = [100]\n'
                   'streams = [1, 2]\nchunks = [2]\n')
    grid = sweep.Grid.from_toml(cfg)
    assert grid.h2d == (2 * MIB, 4 * MIB) and grid.d2h == (MIB,) and len(grid) == 4
    out = tmp_path / "out"
    assert main(["sweep", "--config", str(cfg), "--streams", "1", "--out", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["streams"] for r in data["rows"]] == [1, 1]  # the command line overrides the file
    assert (out / "sweep.csv").exists() and (out / "sweep.parquet").exists()


def test_unknown_keys_and_impossible_grids_are_one_line_errors(tmp_path, capsys):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[sweep]\nproduct = ['910B']\n")
    assert main(["sweep", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    assert "unknown sweep keys ['product']" in capsys.readouterr().err
    assert main(["sweep", "--h2d", "1M", "--d2h", "4", "--chunks", "8", "--out", str(tmp_path / "o")]) == 2
    assert "more chunks than bytes" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no combination"):
        sweep.Grid(streams=(4,), chunks=(2,))


def test_the_progress_bar_shows_the_time_left():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    bar = Progress(4, "sweep", stream=out)
    bar.advance(1, "a")
    bar.advance(1, "b")
    assert "2/4" in out.getvalue() and "ETA" in out.getvalue()
    quiet = io.StringIO()
    Progress(4, "sweep", stream=quiet).advance(1)
    assert quiet.getvalue() == ""  # not a terminal: silent


def test_a_traffic_grid_runs_through_the_same_executor_serial_or_parallel(monkeypatch):
    """The multi-device traffic study's runs go through `sweep.execute` like the overlap grid's: the table is
    the same serially and on two Dask workers."""
    from emu.studies import traffic

    runs = [dict(product="910B", devices=n, block_bytes=MIB, blocks=4, peer_bytes=8 * MIB, streams=s)
            for n in (2, 4) for s in (1, 2)]
    serial = sweep.execute(traffic.run_one, runs)
    monkeypatch.setattr(sweep, "PROBE_RUNS", 1)
    parallel = sweep.execute_planned(traffic.run_one, runs, workers=2, threshold_s=0)
    assert parallel.rows == serial and parallel.plan.tasks >= 1
    for row, params in zip(serial, runs):
        assert {k: row[k] for k in params} == params
        assert row["step_ms"] >= row["issue_ms"] > 0 and 0 < row["busiest_util"] <= 1 + 1e-9


def test_small_blocks_make_the_host_the_bottleneck():
    """Many small copies: the one host thread issuing them takes most of the step (each call costs the
    product's call overhead), so the step is at least the issue time."""
    from emu import config
    from emu.studies import traffic

    r = traffic.run_one(dict(product="A3", devices=16, block_bytes=256 << 10, blocks=64, peer_bytes=0, streams=4))
    calls = 16 * 64 * 2
    assert r["issue_ms"] >= calls * config.load("A3").hardware.call_overhead * 1e3 * 0.99
    assert r["step_ms"] >= r["issue_ms"]


def test_without_pyarrow_the_table_is_csv_and_asking_for_parquet_fails_before_any_run(tmp_path, capsys,
                                                                                        monkeypatch):
    monkeypatch.setattr(sweep, "can_write_parquet", lambda: False)
    ran = []
    monkeypatch.setattr(sweep, "run_one", lambda params: ran.append(params) or {})
    args = ["sweep", "--h2d", "2M", "--d2h", "1M", "--streams", "1", "--chunks", "1", "--out", str(tmp_path / "o")]
    assert main([*args, "--format", "parquet"]) == 2
    assert "Parquet needs pyarrow" in capsys.readouterr().err and not ran
    monkeypatch.undo()
    monkeypatch.setattr(sweep, "can_write_parquet", lambda: False)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "pip install 'acl-emu[sweep]'" in out
    assert (tmp_path / "o" / "sweep.csv").exists() and not (tmp_path / "o" / "sweep.parquet").exists()


def test_parquet_carries_the_acl_emu_version_and_the_grid_as_schema_metadata(tmp_path):
    import pyarrow.parquet as pq

    import emu

    grid = sweep.Grid(products=("910B",), h2d=("2M",), d2h=(MIB,), compute_us=(50.0,), streams=(1, 2), chunks=(2,))
    files = sweep.write(sweep.run(grid), tmp_path / "out", ("parquet",), grid)
    meta = pq.read_schema(files["parquet"]).metadata
    assert meta[b"acl-emu version"].decode() == emu.__version__
    back = json.loads(meta[b"acl-emu grid"])
    assert back == sweep.grid_dict(grid) and back["h2d"] == [2 * MIB] and back["streams"] == [1, 2]
    assert sweep.Grid(**back) == grid  # the grid the table came from, rebuilt from its metadata


def test_sweep_names_the_best_setting_per_workload_not_one_fastest_run(tmp_path, capsys):
    """One best streams x chunks for each product x sizes x compute time: a fast product's run does not stand
    for a slow product's workload."""
    rows = sweep.run(sweep.Grid(**SMALL))
    best = sweep.best_per_workload(rows)
    assert [(b["product"], b["compute_us"]) for b in best] == [("910B", 100.0), ("910B", 400.0), ("A3", 100.0),
                                                               ("A3", 400.0)]
    for b in best:
        mine = [r for r in rows if all(r[k] == b[k] for k in sweep.WORKLOAD)]
        assert b["runs"] == len(mine) == 5
        assert b["iteration_ms"] == min(r["iteration_ms"] for r in mine)
        one = next(r for r in mine if r["streams"] == 1 and r["chunks"] == 1)
        assert b["speedup_vs_1x1"] == pytest.approx(one["iteration_ms"] / b["iteration_ms"])
    out = tmp_path / "o"
    assert main(["sweep", "--products", "910B,A3", "--h2d", "4M", "--d2h", "1M", "--compute-us", "100,400",
                 "--streams", "1,2", "--chunks", "1,2,4", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "fastest:" not in text and "best setting per workload" in text
    table = text.split("best setting per workload")[1].split("unvalidated")[0]
    assert sum(line.startswith(("910B ", "A3 ")) for line in table.splitlines()) == 4
    assert main(["sweep", "--products", "910B,A3", "--h2d", "4M", "--d2h", "1M", "--compute-us", "100,400",
                 "--streams", "1,2", "--chunks", "1,2,4", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["best"] == best


def test_the_progress_note_names_sizes_as_people_write_them():
    """The progress bar's note for a run shows its product and sizes as `64 MiB`, not a byte count."""
    from emu.studies.sweep import _note
    assert _note({"product": "910B", "h2d_bytes": 64 << 20, "d2h_bytes": 16 << 20, "compute_us": 5000.0}) == \
        "910B 64 MiB 16 MiB"
