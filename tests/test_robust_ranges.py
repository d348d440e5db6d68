"""Issue 30, item 3: huge ranges, huge counts, huge sizes and malformed sweep grids are one line on stderr and
exit code 2 -- never a traceback, a MemoryError, an overflow or an unbounded run."""
from __future__ import annotations

import pytest

from emu.cli import main

OVERLAP = ["overlap", "--h2d", "1M", "--d2h", "1M", "--compute-us", "10"]


def _refused(capsys, argv, *words):
    with pytest.raises(SystemExit) as e:  # argparse refuses a bad argument by exiting
        code = main(argv)
        raise SystemExit(code)
    assert e.value.code == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("value", ["1..1000000000", "1..99999999999999999999", "99999999999999999999",
                                   "1," + "9" * 5000, "1..8" + "0" * 30])
@pytest.mark.parametrize("option", ["--streams", "--chunks"])
def test_overlap_huge_ranges_refused_before_building(capsys, option, value):
    _refused(capsys, OVERLAP + [option, value], option, "at most")


@pytest.mark.parametrize("value", ["8..1", "a..b", "1..x"])
def test_overlap_malformed_ranges(capsys, value):
    _refused(capsys, OVERLAP + ["--streams", value], "--streams")


@pytest.mark.parametrize("argv", [["bandwidth", "--sizes", "4K"], ["compare", "bandwidth", "--sizes", "4K"]])
@pytest.mark.parametrize("value", ["1000000000", "99999999999999999999999999", "10001"])
def test_reps_has_a_maximum(capsys, argv, value):
    _refused(capsys, argv + ["--reps", value], "--reps", "more than 10000")


@pytest.mark.parametrize("value", ["99999999999999999999T", "9" * 400, "2T", "1K..4T"])
def test_sizes_beyond_a_terabyte(capsys, value):
    _refused(capsys, ["bandwidth", "--sizes", value], "--sizes", "TiB")


def _sweep(capsys, tmp_path, text, *words):
    cfg = tmp_path / "grid.toml"
    cfg.write_text(text)
    return _refused(capsys, ["sweep", "--config", str(cfg), "--out", str(tmp_path / "out"), "--format", "csv"],
                    *words)


@pytest.mark.parametrize("text,field", [
    ("[sweep]\ncompute_us = [nan]\n", "compute_us"),
    ("[sweep]\ncompute_us = [inf]\n", "compute_us"),
    ("[sweep]\ncompute_us = -inf\n", "compute_us"),
    ("[sweep]\ncompute_us = 'fast'\n", "compute_us"),
    ("[sweep]\ncompute_us = true\n", "compute_us"),
    ("[sweep]\nh2d = 9223372036854775807\n", "h2d"),
    ("[sweep]\nd2h = ['9999999T']\n", "d2h"),
    ("[sweep]\nh2d = 1.5\n", "h2d"),
    ("[sweep]\nh2d = {a = 1}\n", "h2d"),
    ("[sweep]\nh2d = [[1]]\n", "h2d"),
    ("[sweep]\nstreams = [9223372036854775807]\n", "streams"),
    ("[sweep]\nstreams = ['2']\n", "streams"),
    ("[sweep]\nchunks = [0]\n", "chunks"),
    ("[sweep]\nchunks = 2.5\n", "chunks"),
    ("[sweep]\npageable = 'yes'\n", "pageable"),
    ("[sweep]\nproducts = [1]\n", "products"),
    ("[sweep]\nproducts = []\n", "products"),
])
def test_sweep_grid_bad_values_name_the_field(capsys, tmp_path, text, field):
    _sweep(capsys, tmp_path, text, field)


def test_sweep_grid_deeply_nested_arrays(capsys, tmp_path):
    _sweep(capsys, tmp_path, "[sweep]\nstreams = " + "[" * 3000 + "1" + "]" * 3000 + "\n", "nested")


def test_sweep_grid_not_a_table(capsys, tmp_path):
    _sweep(capsys, tmp_path, "sweep = 3\n", "sweep")


def test_sweep_grid_too_many_runs_counted_not_listed(capsys, tmp_path):
    chunks = ", ".join(str(c) for c in range(1, 4097))
    _sweep(capsys, tmp_path, f"[sweep]\nh2d = [{', '.join(str(1 << 20 + i % 8) for i in range(1000))}]\n"
                             f"chunks = [{chunks}]\nstreams = [1, 2, 4, 8]\n", "runs")


def test_sweep_grid_still_runs(tmp_path):
    cfg = tmp_path / "grid.toml"
    cfg.write_text("[sweep]\nproducts = ['910B']\nh2d = ['1M']\nd2h = [65536]\ncompute_us = [10, 20.5]\n"
                   "streams = [1, 2]\nchunks = [2]\npageable = [false]\n")
    assert main(["sweep", "--config", str(cfg), "--out", str(tmp_path / "out"), "--format", "csv"]) == 0
    assert len((tmp_path / "out" / "sweep.csv").read_text().splitlines()) == 1 + 4
