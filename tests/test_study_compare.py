"""`acl-emu compare`: one row per product, headline numbers that match the per-product studies, the files."""
from __future__ import annotations

import csv
import json

import pytest

from emu.cli import Parser, add_compare
from emu.studies import compare, overlap

PRODUCTS = "910B,A3,950PR"


def cli(argv: list[str]) -> int:
    """The study through its own parser, as `acl-emu compare ...` runs it."""
    parser = Parser(prog="acl-emu")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    add_compare(sub)
    args = parser.parse_args(argv)
    return args.func(args)


def _files_ok(out, products: list[str]) -> dict:
    """compare.csv has a header and a row per product, compare.json loads, compare.png opens."""
    with open(out / "compare.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["product"] for r in rows] == products
    data = json.loads((out / "compare.json").read_text())
    assert [r["product"] for r in data["rows"]] == products

    import matplotlib.image

    img = matplotlib.image.imread(out / "compare.png")
    assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 400
    return data


def test_overlap_side_by_side(tmp_path, capsys):
    out = tmp_path / "cmp"
    argv = ["compare", "--products", PRODUCTS, "overlap", "--h2d", "2M", "--d2h", "1M", "--compute-us", "300",
            "--streams", "1,2", "--chunks", "1,2,4", "--out", str(out)]
    assert cli(argv) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert "best ms" in lines[0]
    assert [ln.split()[0] for ln in lines[2:5]] == PRODUCTS.split(",")
    data = _files_ok(out, PRODUCTS.split(","))
    assert data["study"] == "overlap" and data["products"] == PRODUCTS.split(",")
    for row in data["rows"]:
        plan = overlap.plan(row["product"], 2 << 20, 1 << 20, 300.0, [1, 2], [1, 2, 4])
        assert row["best_ms"] == pytest.approx(plan["best"]["iteration_ms"])
        assert row["naive_ms"] == pytest.approx(plan["naive"]["iteration_ms"])
        assert row["floor_ms"] == pytest.approx(plan["floor_ms"])
        assert row["binding"] == plan["binding"]
        assert row["best_ms"] >= row["floor_ms"] * (1 - 1e-9)
        assert row["best"] == f"{plan['best']['streams']}x{plan['best']['chunks']}"
        assert row["best_ms"] <= row["naive_ms"]


def test_bandwidth_side_by_side(tmp_path, capsys):
    out = tmp_path / "cmp"
    argv = ["compare", "--products", PRODUCTS, "bandwidth", "--sizes", "64K,4M", "--peer-size", "4M",
            "--reps", "1", "--out", str(out)]
    assert cli(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "H2D pinned" in lines[0] and "peer bi" in lines[0]
    assert [ln.split()[0] for ln in lines[2:5]] == PRODUCTS.split(",")
    data = _files_ok(out, PRODUCTS.split(","))
    assert data["study"] == "bandwidth"
    for row in data["rows"]:
        full = data["results"][row["product"]]
        pinned = [p["gbps"] for p in full["host"]["pinned"]["h2d"]]
        assert row["h2d_pinned_gbps"] == pytest.approx(max(pinned))
        for key in ("h2d_pinned_gbps", "d2h_pinned_gbps", "h2d_pageable_gbps", "d2d_gbps", "peer_uni_gbps"):
            assert row[key] > 0, key
        # both directions at once carry at least what one does
        assert row["peer_bi_gbps"] >= row["peer_uni_gbps"] * 0.99
        # page-locked memory is never slower than pageable
        assert row["h2d_pinned_gbps"] >= row["h2d_pageable_gbps"]
    assert set(data["curves"]) == set(PRODUCTS.split(","))


def test_single_device_product_has_no_peer_numbers(tmp_path, capsys):
    assert cli(["compare", "--products", "910B,200I_A2", "bandwidth", "--sizes", "1M", "--reps", "1",
                "--out", str(tmp_path)]) == 0
    assert "n/a" in capsys.readouterr().out
    data = json.loads((tmp_path / "compare.json").read_text())
    rc = next(r for r in data["rows"] if r["product"] == "200I_A2")
    assert rc["peer_uni_gbps"] is None and rc["peer_bi_gbps"] is None


@pytest.mark.parametrize("where", ["before", "after"])
def test_json_output_parses(tmp_path, capsys, where):
    opts = ["--json", "--out", str(tmp_path)]
    study = ["overlap", "--h2d", "1M", "--d2h", "1M", "--compute-us", "50", "--streams", "1,2", "--chunks", "2"]
    argv = ["compare", "--products", "910B,A3", *(opts + study if where == "before" else study + opts)]
    assert cli(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["product"] for r in data["rows"]] == ["910B", "A3"]
    assert (tmp_path / "compare.png").exists()


def test_products_after_the_study_name_and_default_out(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli(["compare", "overlap", "--products", "A3", "--h2d", "64K", "--d2h", "64K", "--compute-us", "10",
                "--streams", "1", "--chunks", "1"]) == 0
    data = json.loads((tmp_path / "acl-emu-out" / "compare-overlap" / "compare.json").read_text())
    assert data["products"] == ["A3"]


@pytest.mark.parametrize("argv, name", [
    (["compare", "--products", "910B,H100", "bandwidth"], "--products"),
    (["compare", "bandwidth", "--products", "nope"], "--products"),
    (["compare", "--products", ",", "overlap", "--h2d", "1M", "--d2h", "1M", "--compute-us", "1"], "--products"),
    (["compare", "--products", "910B", "latency"], "latency"),
    (["compare", "--products", "910B", "overlap", "--h2d", "1M", "--d2h", "1M", "--compute-us", "-5"],
     "--compute-us"),
    (["compare", "--products", "910B", "bandwidth", "--sizes", "0"], "--sizes"),
])
def test_bad_arguments_exit_2_with_one_line(argv, name, capsys):
    with pytest.raises(SystemExit) as e:
        cli(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err, err


def test_sizes_too_big_for_a_product_exit_2(tmp_path, capsys):
    assert cli(["compare", "--products", "910B", "bandwidth", "--sizes", "1T", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--sizes" in err, err


def test_overlap_on_a_product_without_streams_exits_2_naming_products(tmp_path, capsys):
    assert cli(["compare", "--products", "910B,IPV350", "overlap", "--h2d", "1M", "--d2h", "1M", "--compute-us",
                "1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--products" in err and "IPV350" in err, err
