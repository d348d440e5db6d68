"""`acl-emu products` and the summary of `acl-emu run` (issue: the main job's subcommands)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from emu import config
from emu.cli import main

SCRIPT = """import acl
acl.rt.set_device(0)
h, ret = acl.rt.malloc_host(1 << 20)
d, ret = acl.rt.malloc(1 << 20, 0)
s, ret = acl.rt.create_stream()
assert acl.rt.memcpy_async(d, 1 << 20, h, 1 << 20, 1, s) == 0
assert acl.rt.memcpy_async(h, 1 << 20, d, 1 << 20, 2, s) == 0
assert acl.rt.synchronize_stream(s) == 0
print("done")
"""


def emu_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "emu", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_products_table_lists_every_config_with_its_links(capsys):
    assert main(["products"]) == 0
    out = capsys.readouterr().out
    for name in config.available():
        assert name in out
    assert "PCIe Gen4 x16" in out and "HCCS mesh 27.34 GB/s" in out  # 910B: a Kunpeng 920 host
    assert "PCIe Gen5 x16" in out  # 910B-Gen5
    assert "Kunpeng 920, 2 dev/CPU, 100 GB/s pooled" in out  # 910B's host side
    assert "HCCS 102.0 GB/s, up 57.0, 57 per engine" in out and "4 dev/CPU, 160 GB/s pooled" in out  # A3
    assert "does not support" in out  # IPV350's gaps are listed


def test_products_json_carries_the_source_of_every_number(capsys):
    assert main(["products", "--json", "--products", "910B,310P"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["product"] for r in rows] == ["910B", "310P"]
    b = rows[0]
    assert b["devices"] == 8 and b["engines"] == config.load("910B").hardware.engines_per_device
    assert b["sources"]["devices.memory_bytes"].startswith("C:")
    assert all(isinstance(v, str) and v for v in b["sources"].values())
    assert b["values"]["devices.memory_bytes"] == 68_719_476_736 and set(b["values"]) == set(b["sources"])
    assert rows[1]["host_link"].endswith("(shared by 2)")


def test_products_sources_lists_fields_and_tags(capsys):
    assert main(["products", "--sources", "--products", "A3"]) == 0
    out = capsys.readouterr().out
    assert "hardware.pair_link.gbps" in out and "A:" in out and "3P:" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("hardware.pair_link.gbps"))
    assert line.split()[1] == "189.4" and "fit:" in line  # field, value, source
    assert next(ln for ln in out.splitlines() if ln.startswith("devices.memory_bytes")).split()[1:3] == ["64", "GiB"]


def test_run_prints_calls_bytes_by_route_time_and_writes_a_trace(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    res = emu_cli("run", "--out", str(tmp_path / "out"), str(script), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "done"
    err = res.stderr
    assert "simulated time" in err and "aclrtMemcpyAsync" in err
    assert "h2d" in err and "d2h" in err and "1 MiB" in err
    trace = json.loads((tmp_path / "out" / "trace.json").read_text())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert any(n.startswith("host thread") for n in names)
    assert any(n.startswith("stream ") for n in names)
    assert "SDMA 0" in names and "pcie down" in names and "pcie up" in names
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)


def test_run_json_summary_parses(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    res = emu_cli("run", "--json", "--out", str(tmp_path / "out"), str(script), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "done" in res.stderr  # with --json the script's own output goes to stderr: stdout is the JSON alone
    summary = json.loads(res.stdout)
    assert summary["calls"]["aclrtMemcpyAsync"] == 2
    assert summary["bytes_by_route"] == {"h2d": 1 << 20, "d2h": 1 << 20}
    assert summary["simulated_ms"] > 0 and Path(summary["trace"]).exists()


@pytest.mark.parametrize("args,argument", [
    (["run", "--product", "nope"], "--product"),
    (["run", "/no/such/script.py"], "SCRIPT"),
    (["products", "--bogus"], "--bogus"),
    (["bandwidth", "--sizes", "4K..1X"], "--sizes"),
    (["overlap", "--h2d", "0", "--d2h", "1M", "--compute-us", "10"], "--h2d"),
])
def test_bad_arguments_exit_2_with_one_line_naming_the_argument(args, argument, tmp_path):
    res = emu_cli(*args, cwd=tmp_path)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and argument in lines[0], res.stderr
