"""A study's files land together: an interrupted run leaves the previous run's files and no partial file."""
from __future__ import annotations

import json

import pytest

from emu.cli import main
from emu.studies import bandwidth_report
from emu.studies.common import Landing, write_csv, write_json


def test_files_appear_only_when_every_one_is_written(tmp_path):
    with Landing(tmp_path) as land:
        write_csv(land("a.csv"), [{"x": 1}])
        assert not (tmp_path / "a.csv").exists()  # not yet in place
        write_json(land("b.json"), {"y": 2})
    assert (tmp_path / "a.csv").read_text().startswith("x")
    assert json.loads((tmp_path / "b.json").read_text()) == {"y": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.json"]


def test_an_interrupted_run_keeps_the_previous_files_and_leaves_no_partial_one(tmp_path):
    with Landing(tmp_path) as land:
        write_json(land("r.json"), {"run": 1})
        write_csv(land("r.csv"), [{"run": 1}])
    with pytest.raises(KeyboardInterrupt):
        with Landing(tmp_path) as land:
            write_json(land("r.json"), {"run": 2})
            raise KeyboardInterrupt  # Ctrl-C between two files of the second run
    assert json.loads((tmp_path / "r.json").read_text()) == {"run": 1}
    assert (tmp_path / "r.csv").read_text().splitlines()[1] == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.json"]


def test_a_study_interrupted_while_plotting_keeps_the_last_complete_run(tmp_path, monkeypatch, capsys):
    out = tmp_path / "bw"
    assert main(["bandwidth", "--sizes", "4K,64K", "--reps", "1", "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def interrupted(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(bandwidth_report, "plot_p2p", interrupted)
    with pytest.raises(KeyboardInterrupt):
        main(["bandwidth", "--sizes", "4K,1M", "--reps", "1", "--out", str(out)])
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
