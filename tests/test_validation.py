"""The model against public hardware measurements (validation/measurements.toml, `acl-emu validate`)."""
from __future__ import annotations

import json

import pytest

from emu import config
from emu.cli import main
from emu.studies import validate as V

ROWS = V.load()
TARGETS = [r for r in ROWS if r["calibration"]]


def test_the_table_covers_what_the_model_claims():
    """At least 15 rows across 910B, A3 and another product; large and small copies, pinned and pageable,
    H2D, D2H and peer."""
    assert len(ROWS) >= 15
    products = {r["product"] for r in ROWS}
    assert {"910B", "A3"} <= products and len(products) >= 3
    assert {r["memory"] for r in ROWS} >= {"pinned", "pageable", "registered", "device"}
    assert {r["direction"] for r in ROWS} >= {"h2d", "d2h", "p2p"}
    sizes = [r["size_bytes"] for r in ROWS]
    assert min(sizes) <= 64 and max(sizes) >= 1 << 30


def test_every_row_cites_a_public_source_with_its_text():
    for r in ROWS:
        assert r["url"].startswith("https://"), r["id"]
        assert r["quote"].strip() and r["source"].strip(), r["id"]
        assert r["product"] in config.available(), r["id"]


def test_calibration_targets_cover_both_main_products():
    assert {r["product"] for r in TARGETS} >= {"910B", "A3"}
    assert len(TARGETS) >= 10


@pytest.mark.parametrize("row", TARGETS, ids=[r["id"] for r in TARGETS])
def test_calibration_target_within_15_percent(row):
    model = V.predict(row)
    assert model == pytest.approx(row["value"], rel=V.BAND), f"{row['id']}: model {model:.4g} {row['unit']}"


def test_fitted_rows_name_a_field_their_product_cites_as_a_fit():
    for r in ROWS:
        if "fitted" in r:
            tag = config.load(r["product"]).sources[r["fitted"]]
            assert tag.startswith("fit:"), (r["id"], tag)


def test_rows_that_are_not_targets_say_why(tmp_path):
    bad = tmp_path / "m.toml"
    bad.write_text('[[row]]\nid = "x"\nproduct = "910B"\npattern = "sync"\nstreams = 1\ncount = 1\ndevices = 1\n'
                   'size_bytes = 4096\nmemory = "pinned"\ndirection = "h2d"\nvalue = 1.0\nunit = "GB/s"\n'
                   'calibration = false\nsource = "s"\n')
    with pytest.raises(V.MeasurementError, match="'why'"):
        V.load(bad)


@pytest.mark.parametrize("field, value, message", [
    ("direction", '"sideways"', "'direction'"), ("size_bytes", "-4", "'size_bytes'"), ("unit", '"mph"', "'unit'"),
    ("count", '"ten"', "'count'")])
def test_a_bad_row_is_refused_naming_its_field(tmp_path, field, value, message):
    text = {"id": '"x"', "product": '"910B"', "pattern": '"sync"', "streams": "1", "count": "1", "devices": "1",
            "size_bytes": "4096", "memory": '"pinned"', "direction": '"h2d"', "value": "1.0", "unit": '"GB/s"',
            "calibration": "true", "source": '"s"'}
    text[field] = value
    path = tmp_path / "m.toml"
    path.write_text("[[row]]\n" + "".join(f"{k} = {v}\n" for k, v in text.items()))
    with pytest.raises(V.MeasurementError, match=message):
        V.load(path)


def test_replay_uses_the_rows_pattern():
    """A sync row is timed on the host clock (each copy pays the call and the driver round trip); an async
    row between events (back-to-back copies pay only the per-transfer latency)."""
    row = dict(next(r for r in TARGETS if r["id"] == "deepspeed-910b4-h2d-registered-4m"))
    hw = config.load("910B").hardware
    n = row["size_bytes"]
    per_async = V.replay(row) / row["count"]
    assert per_async == pytest.approx(hw.alone(None, 0, n), rel=1e-3)
    row["pattern"] = "sync"
    per_sync = V.replay(row) / row["count"]
    assert per_sync == pytest.approx(hw.alone(None, 0, n) + hw.call_overhead + hw.sync_copy, rel=1e-6)


def test_validate_command_writes_table_json_and_plot(tmp_path, capsys):
    assert main(["validate", "--product", "910B", "--out", str(tmp_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {r["product"] for r in result["rows"]} == {"910B"}
    s = next(x for x in result["summary"] if x["product"] == "910B")
    assert s["within"] == s["targets"] > 0
    for f in ("validation.csv", "validation.json", "validation.png"):
        assert (tmp_path / f).stat().st_size > 0


def test_validate_command_refuses_a_bad_file_in_one_line(tmp_path, capsys):
    bad = tmp_path / "m.toml"
    bad.write_text("[[row]]\nid = 3\n")
    assert main(["validate", "--measurements", str(bad), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--measurements" in err and "'id'" in err
