"""`acl-emu bandwidth`: event-timed copies in timing-only mode agree with the model's closed forms, and the
command writes well-formed CSV, JSON and PNG files and fails on bad arguments with exit code 2."""
from __future__ import annotations

import csv
import json
import math
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

import emu
from emu import config
from emu.cli import Parser, add_bandwidth, bandwidth_command
from emu.studies import bandwidth, bandwidth_report

K, M, G = 1 << 10, 1 << 20, 1 << 30
SIZES = [4 * K, 64 * K, 1 * M, 64 * M, 256 * M]


def close(a: float, b: float, rel: float = 0.01) -> bool:
    return a is not None and b is not None and abs(a - b) <= rel * abs(b)


@pytest.fixture(scope="module")
def b910():
    return bandwidth.measure("910B", SIZES, peer_sizes=[64 * K, 16 * M])


def host(result, memory, test):
    return {pt["bytes"]: pt for pt in result["host"][memory][test]}


# -- the numbers against the closed forms -----------------------------------------------------------------
def test_pinned_h2d_and_d2h_match_the_closed_form(b910):
    hw = config.load("910B").hardware
    for n in SIZES:
        assert close(host(b910, "pinned", "h2d")[n]["gbps"], n / hw.alone(None, 0, n) / 1e9), n
        assert close(host(b910, "pinned", "d2h")[n]["gbps"], n / hw.alone(0, None, n) / 1e9), n
        # the model column counts the latency once per runtime task (64 MiB over PCIe)
        assert close(host(b910, "pinned", "h2d")[n]["model_gbps"], n / hw.alone(None, 0, n, 64 * M) / 1e9, 1e-9)


def test_d2d_matches_the_closed_form(b910):
    hw = config.load("910B").hardware
    d2d = {pt["bytes"]: pt["gbps"] for pt in b910["d2d"]}
    assert sorted(d2d) == SIZES
    for n in SIZES:
        assert close(d2d[n], n / hw.alone(0, 0, n) / 1e9), n


def test_registered_memory_is_as_fast_as_page_locked(b910):
    for test in ("h2d", "d2h"):
        pinned, registered = host(b910, "pinned", test), host(b910, "registered", test)
        for n in SIZES:
            assert close(registered[n]["gbps"], pinned[n]["gbps"], 1e-6)


def test_pageable_is_far_below_pinned_small_and_approaches_the_memcpy_or_link_ceiling_large(b910):
    hw = config.load("910B").hardware
    for test in ("h2d", "d2h"):
        pageable, pinned = host(b910, "pageable", test), host(b910, "pinned", test)
        assert pageable[4 * K]["gbps"] < pinned[4 * K]["gbps"] / 4
        ceiling = min(hw.staging.copy_bandwidth, hw.host_link.capacity) / 1e9
        big = pageable[256 * M]
        assert 0.97 * ceiling < big["gbps"] <= ceiling * 1.0001
        assert big["model"].startswith("ceiling")
        gbps = [pageable[n]["gbps"] for n in SIZES]
        assert gbps == sorted(gbps)  # grows with the size


def test_peer_matrix_matches_the_closed_form_and_bidirectional_doubles_on_full_duplex_hccs(b910):
    hw = config.load("910B").hardware
    p2p = b910["p2p"]
    n = p2p["bytes"]
    assert n == 16 * M and p2p["devices"] == 8
    for i in range(8):
        assert p2p["unidirectional"][i][i] is None
        for j in range(8):
            if i != j:
                assert p2p["routes"][i][j] == "hccs"
                assert close(p2p["unidirectional"][i][j], n / hw.alone(i, j, n) / 1e9)
                assert close(p2p["bidirectional"][i][j] / p2p["unidirectional"][i][j], 2.0, 0.02)
                assert close(p2p["bidirectional"][i][j], p2p["model_bidirectional"][i][j])
    curve = p2p["curves"][0]
    assert (curve["route"], curve["src"], curve["dst"]) == ("hccs", 0, 1)
    assert [pt["bytes"] for pt in curve["unidirectional"]] == [64 * K, 16 * M]


def test_910_two_hccs_groups_have_no_peer_access_across(tmp_path):
    r = bandwidth.measure("910", [64 * K], peer_sizes=[1 * M])
    p2p = r["p2p"]
    groups = [{0, 1, 2, 3}, {4, 5, 6, 7}]
    for i in range(8):
        for j in range(8):
            if i == j:
                continue
            same = any(i in g and j in g for g in groups)
            assert p2p["access"][i][j] is same
            for which in ("unidirectional", "bidirectional"):
                v = p2p[which][i][j]
                assert (v is not None and v > 0) if same else v is None, (which, i, j)
    missing = [row for row in r["rows"] if row["test"] == "p2p" and row["gbps"] is None]
    assert len(missing) == 32 and all("no peer access" in row["status"] for row in missing)
    bandwidth_report.write(r, tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "bandwidth.csv")))
    cross = [row for row in rows if row["test"] == "p2p" and (row["src"], row["dst"]) == ("0", "4")]
    assert cross[0]["gbps"] == "" and "no peer access" in cross[0]["status"]
    assert json.loads((tmp_path / "bandwidth.json").read_text())["p2p"]["unidirectional"][0][4] is None


def test_310p_chips_share_one_pcie_link_and_pin_registered_memory_in_software():
    """310P's driver cannot register host memory, but aclrtHostRegisterV2 with PINNED alone never reaches the
    driver (the runtime records the range itself: api_impl.cc HostRegisterV2), so the study measures it."""
    r = bandwidth.measure("310P", [1 * M], peer_sizes=[64 * M])
    hw = config.load("310P").hardware
    p2p = r["p2p"]
    n = p2p["bytes"]
    assert p2p["routes"][0][1] == "pcie-p2p"
    uni, bi = p2p["unidirectional"][0][1], p2p["bidirectional"][0][1]
    assert close(uni, n / hw.alone(0, 1, n) / 1e9)
    assert close(bi, uni, 0.02)  # both directions cross the card's one link: no doubling
    assert "registered" not in r["skipped"] and "registered" in r["host"]


def test_a3_runs_all_240_pairs_in_seconds():
    t0 = time.perf_counter()
    r = bandwidth.measure("A3", [64 * K], peer_sizes=[32 * M])
    assert time.perf_counter() - t0 < 15
    hw = config.load("A3").hardware
    p2p = r["p2p"]
    n = p2p["bytes"]
    pairs = [(i, j) for i in range(16) for j in range(16) if i != j]
    assert len(pairs) == 240
    for i, j in pairs:
        assert close(p2p["unidirectional"][i][j], n / hw.alone(i, j, n) / 1e9)
        assert close(p2p["bidirectional"][i][j] / p2p["unidirectional"][i][j], 2.0, 0.02)
    assert p2p["routes"][0][1] == "sio" and p2p["routes"][0][2] == "ub"
    assert {c["route"] for c in p2p["curves"]} == {"sio", "ub"}
    rows = [row for row in r["rows"] if row["test"] in ("p2p", "p2p_bidir") and row["bytes"] == n]
    assert len(rows) == 240 + 120


def test_rc_and_eventless_products_say_what_they_skip():
    r = bandwidth.measure("IPV350", [4 * K, 1 * M])
    assert "aclrtMallocHost" in r["skipped"]["pinned"]
    assert r["timer"].startswith("host clock")
    assert r["host"]["pageable"]["h2d"][0]["gbps"] > 0
    assert "one device" in r["p2p"]["status"]
    r = bandwidth.measure("200I_A2", [1 * M])
    assert r["mode"] == "RC" and any("RC mode" in note for note in r["notes"])
    hw = config.load("200I_A2").hardware
    pinned = r["host"]["pinned"]["h2d"][0]
    assert close(pinned["gbps"], pinned["model_gbps"])  # the closed form of the route the copy really takes
    assert close(pinned["model_gbps"], (1 * M) / hw.alone(0, 0, 1 * M) / 1e9, 1e-9)


def test_a_1_gib_sweep_costs_no_ram():
    statm = "/proc/self/statm"
    if not os.path.exists(statm):
        pytest.skip("needs /proc to read the resident set size")
    page = os.sysconf("SC_PAGE_SIZE")
    before = int(open(statm).read().split()[1]) * page
    r = bandwidth.measure("910B", [G], peer_sizes=[4 * K])
    after = int(open(statm).read().split()[1]) * page
    assert r["host"]["pageable"]["h2d"][0]["bytes"] == G
    assert after - before < 256 * M


def test_measure_leaves_the_next_configure_functional():
    bandwidth.measure("910B", [4 * K], peer_sizes=[4 * K])
    assert emu.current().functional is False  # the study's run stays current, for its records
    assert emu.configure(product="910B").functional is True


def test_measure_rejects_sizes_that_cannot_run():
    with pytest.raises(ValueError, match="sizes"):
        bandwidth.measure("910B", [])
    with pytest.raises(ValueError, match="does not fit"):
        bandwidth.measure("IPV350", [4 * G])


# -- the command ----------------------------------------------------------------------------------------
def parser() -> Parser:
    p = Parser(prog="acl-emu")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_bandwidth(sub)
    return p


def run_main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return args.func(args)


def test_command_prints_tables_and_writes_csv_json_and_pngs(tmp_path, capsys):
    from matplotlib.image import imread

    out = tmp_path / "bw"
    assert run_main(["bandwidth", "--product", "910", "--sizes", "4K,16K,64K", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "page-locked host memory" in captured.out and "device-to-device matrix, unidirectional" in captured.out
    assert "n/a" in captured.out  # 910's two groups
    assert captured.err == ""  # no progress bar when stderr is not a terminal
    with open(out / "bandwidth.csv", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames == list(bandwidth_report.COLUMNS)
    data = json.loads((out / "bandwidth.json").read_text())
    assert len(rows) == len(data["rows"])
    # one row per measurement: 3 sizes x (3 memory kinds x 2 directions + D2D), one pair per route kind at the
    # sizes below the matrix's (x2 for bidirectional), 56 ordered pairs and 28 unordered bidirectional pairs
    assert len(rows) == 3 * 7 + 2 * 2 + 56 + 28
    assert data["product"] == "910" and data["p2p"]["bytes"] == 64 * K
    for png in ("bandwidth.png", "p2p.png"):
        image = imread(out / png)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100


def test_command_json_prints_valid_json(tmp_path, capsys):
    assert run_main(["bandwidth", "--product", "A3", "--sizes", "4K,1M", "--out", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["product"] == "A3" and data["devices"] == 16
    assert data["files"]["csv"].endswith("bandwidth.csv")
    assert math.isclose(data["p2p"]["bytes"], 1 * M)


def test_command_defaults_to_4k_to_1g_and_its_own_out_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ACL_EMU_PRODUCT", raising=False)
    t0 = time.perf_counter()
    assert run_main(["bandwidth", "--json"]) == 0
    assert time.perf_counter() - t0 < 20
    data = json.loads(capsys.readouterr().out)
    assert data["product"] == "910B" and data["sizes"][0] == 4 * K and data["sizes"][-1] == G
    assert data["p2p"]["bytes"] == 256 * M
    assert (tmp_path / "acl-emu-out" / "bandwidth-910B" / "bandwidth.json").exists()


@pytest.mark.parametrize("argv, name", [
    (["--product", "H100"], "--product"),
    (["--sizes", "4K..1X"], "--sizes"),
    (["--sizes", "0"], "--sizes"),
    (["--sizes", "1M..4K"], "--sizes"),
    (["--peer-size", "lots"], "--peer-size"),
    (["--reps", "0"], "--reps"),
])
def test_bad_arguments_exit_2_with_one_line_naming_the_argument(argv, name, capsys):
    with pytest.raises(SystemExit) as e:
        parser().parse_args(["bandwidth", *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and name in err


def test_sizes_too_big_for_the_product_exit_2(tmp_path, capsys):
    args = SimpleNamespace(product="IPV350", sizes=[4 * G], peer_size=None, reps=2, out=str(tmp_path), json=False)
    assert bandwidth_command(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--sizes" in err and "does not fit" in err


# -- through `python -m emu`, once the CLI lists the study -------------------------------------------------
def _cli(*argv, cwd=None):
    env = {k: v for k, v in os.environ.items() if k not in ("ACL_EMU_PRODUCT", "ASCEND_RT_VISIBLE_DEVICES")}
    return subprocess.run([sys.executable, "-m", "emu", *argv], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env)


@pytest.fixture(scope="module")
def registered():
    if "bandwidth" not in _cli("--help").stdout:
        pytest.skip("`bandwidth` is not yet among the subcommands of emu/cli.py (`python -m emu --help`)")


def test_python_m_emu_bandwidth(registered, tmp_path):
    res = _cli("bandwidth", "--product", "310P", "--sizes", "4K,1M", "--out", str(tmp_path / "o"), "--json",
               cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["product"] == "310P"
    assert (tmp_path / "o" / "p2p.png").exists()
    for argv, name in ((["--sizes", "4K..1X"], "--sizes"), (["--product", "nope"], "--product"),
                       (["--sizes", "0"], "--sizes")):
        res = _cli("bandwidth", *argv, cwd=tmp_path)
        assert res.returncode == 2
        assert res.stderr.count("\n") == 1 and name in res.stderr, res.stderr


def test_check_says_which_sizes_cannot_run(capsys):
    with pytest.raises(bandwidth.SizeError) as e:
        bandwidth.check("910B", [4 * K], [1 << 40])
    assert e.value.argument == "peer_sizes"
    with pytest.raises(bandwidth.SizeError) as e:
        bandwidth.check("IPV350", [4 * G])
    assert e.value.argument == "sizes"
    assert run_main(["bandwidth", "--sizes", "4K", "--peer-size", "1T"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--peer-size" in err and "does not fit" in err
