"""Output files appear whole or not at all, and partial files of a killed run are swept (issue 30, item 6)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from emu.models import msprof, trace
from emu.models.atomic import atomic_write, sweep_stale
from emu.studies import common


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".partial-"))


def test_a_write_that_raises_midway_keeps_the_previous_file_and_no_temporary(tmp_path):
    target = tmp_path / "trace.json"
    target.write_text('{"old": true}')
    with pytest.raises(RuntimeError):
        with atomic_write(target, "w") as f:
            f.write('{"new": ')
            raise RuntimeError("killed midway")
    assert target.read_text() == '{"old": true}'
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("writer", ["chrome", "msprof", "json", "csv"])
def test_the_writers_keep_the_previous_file_when_serialising_fails(tmp_path, monkeypatch, writer):
    target = tmp_path / f"out.{'csv' if writer == 'csv' else 'json'}"
    target.write_text("previous")

    def boom(*a, **k):
        raise RuntimeError("midway")

    with pytest.raises((RuntimeError, TypeError)):
        if writer == "chrome":
            monkeypatch.setattr(trace.json, "dump", boom)
            trace.write_chrome_trace(target, trace.to_array([]))
        elif writer == "msprof":
            monkeypatch.setattr(msprof.json, "dump", boom)
            msprof.write(target, trace.to_array([]), [], {})
        elif writer == "json":
            common.write_json(target, {"a": object()})
        else:
            monkeypatch.setattr(common.csv.DictWriter, "writerows", boom)
            common.write_csv(target, [{"a": 1}])
    assert target.read_text() == "previous"
    assert _leftovers(tmp_path) == []


def test_a_complete_write_replaces_the_file(tmp_path):
    target = tmp_path / "trace.json"
    target.write_text("old")
    trace.write_chrome_trace(target, trace.to_array([]))
    assert isinstance(json.loads(target.read_text()), (dict, list))
    assert _leftovers(tmp_path) == []


def test_stale_partials_of_a_dead_process_are_swept_and_live_ones_kept(tmp_path):
    dead = tmp_path / f".partial-{_dead_pid()}-trace.json"
    live = tmp_path / f".partial-{os.getpid()}-table.csv"
    other = tmp_path / "keep.json"
    for p in (dead, live, other):
        p.write_text("x")
    assert sweep_stale(tmp_path) == [dead]
    assert dead.exists() is False and live.exists() and other.exists()


def test_landing_and_writers_sweep_the_folder_they_write_in(tmp_path):
    dead = tmp_path / f".partial-{_dead_pid()}-0-trace.json"
    dead.write_text("x")
    trace.write_chrome_trace(tmp_path / "trace.json", trace.to_array([]))
    assert not dead.exists()

    dead.write_text("x")
    live = tmp_path / f".partial-{os.getpid()}-other.csv"
    live.write_text("x")
    with common.Landing(tmp_path) as land:
        assert not dead.exists() and live.exists()
        common.write_csv(land("table.csv"), [{"a": 1}])
    assert (tmp_path / "table.csv").read_text().splitlines() == ["a", "1"]
    assert _leftovers(tmp_path) == [live.name]
