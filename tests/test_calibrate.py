"""`acl-emu calibrate`: measurements from a server whose config we hide are fitted back to that config."""
from __future__ import annotations

import json

import pytest

from emu import config
from emu.cli import main
from emu.studies import calibrate as C
from emu.studies import validate as V

SIZES = [1 << k for k in range(12, 29, 2)]  # 4 KiB .. 256 MiB


def _truth(tmp_path, body: str) -> str:
    """A hidden server: 910B with some fields changed."""
    path = tmp_path / "truth.toml"
    path.write_text('inherit = "910B"\n[product]\nname = "truth"\n' + body)
    return str(path)


def _measure(truth: str, direction: str, memory: str, pattern: str, sizes=SIZES, count: int = 10) -> list:
    out = []
    for n in sizes:
        row = {"id": "m", "product": "truth", "pattern": pattern, "streams": 1, "count": count, "devices": 1,
               "size_bytes": n, "memory": memory, "direction": direction, "value": 1.0, "unit": "GB/s",
               "calibration": True, "source": "s"}
        out.append((n, V.predict(row, truth)))
    return out


def _dmi_table(path, direction: str, points) -> str:
    """What ascend-dmi --bw prints: a heading naming the direction, a header, one line per size."""
    lines = ["-" * 60, "Device: 0", f"Type: {direction.upper()}", "-" * 60,
             "    Size(Bytes)        Execute Times        Bandwidth(GB/s)"]
    lines += [f"    {n:<18} 10                   {gbps:.3f}" for n, gbps in points]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_fits_the_host_link_back_from_an_ascend_dmi_table(tmp_path, capsys):
    """An H2D table sets the share DMA reads reach (read_efficiency: 910B's H2D and D2H differ)."""
    truth = _truth(tmp_path, "[hardware.host_link]\nread_efficiency = 0.85\nlatency_us = 3.0\n"
                             '[hardware.host_link.source]\nread_efficiency = "A: t"\nlatency_us = "A: t"\n')
    dmi = _dmi_table(tmp_path / "dmi.txt", "h2d", _measure(truth, "h2d", "pinned", "async"))
    out = tmp_path / "mine.toml"
    assert main(["calibrate", dmi, "--product", "910B", "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fields"]["hardware.host_link.read_efficiency"] == pytest.approx(0.85, rel=0.01)
    assert report["fields"]["hardware.host_link.latency_us"] == pytest.approx(3.0, rel=0.05)
    assert max(abs(r["error_pct"]) for r in report["rows"]) < 2.0
    mine = config.load(out)
    assert mine.name == "mine" and mine.family == "A2"
    assert mine.sources["hardware.host_link.read_efficiency"].startswith("fit: dmi.txt, residual ")
    assert mine.sources["hardware.host_link.gen"] == config.load("910B").sources["hardware.host_link.gen"]
    assert (tmp_path / "mine.png").stat().st_size > 0


def test_fits_pageable_peer_and_blocking_costs_from_a_csv(tmp_path):
    truth = _truth(tmp_path, "[hardware]\nsync_copy_us = 6.0\nhost_memcpy_gbps = 7.0\ncall_overhead_us = 3.0\n"
                             "[hardware.source]\nsync_copy_us = \"A: t\"\nhost_memcpy_gbps = \"A: t\"\n"
                             "call_overhead_us = \"A: t\"\n"
                             "[hardware.staging]\ncopy_gbps = 12.0\n[hardware.staging.source]\ncopy_gbps = \"A: t\"\n"
                             "[hardware.peer_link]\ngbps = 40.0\n[hardware.peer_link.source]\ngbps = \"A: t\"\n")
    lines = ["size,direction,memory,pattern,gbps"]
    for direction, memory, pattern in (("h2d", "pageable", "sync"), ("p2p", "device", "async"),
                                       ("d2h", "pinned", "sync"), ("h2h", "pageable", "sync")):
        lines += [f"{n},{direction},{memory},{pattern},{g:.5f}" for n, g in _measure(truth, direction, memory, pattern)]
    csv = tmp_path / "mine.csv"
    csv.write_text("\n".join(lines) + "\n")
    result = C.calibrate(C.read(csv), "910B", str(csv))
    f = result["fields"]
    assert f["hardware.staging.copy_gbps"] == pytest.approx(12.0, rel=0.03)
    assert f["hardware.host_memcpy_gbps"] == pytest.approx(7.0, rel=0.01)
    assert f["hardware.call_overhead_us"] == pytest.approx(3.0, rel=0.05)
    assert f["hardware.peer_link.gbps"] == pytest.approx(40.0, rel=0.01)
    assert f["hardware.sync_copy_us"] == pytest.approx(6.0, rel=0.05)
    assert f["hardware.peer_link.latency_us"] == pytest.approx(2.0, rel=0.05)


def _p2p(product: str, n: int, **fields) -> dict:
    """A row of peer copies of `n` bytes from device 0 (to device 1 unless `dst_device` says otherwise)."""
    return {"id": "m", "product": product, "pattern": "async", "streams": 1, "count": 10, "devices": 1,
            "size_bytes": n, "memory": "device", "direction": "p2p", "value": 1.0, "unit": "GB/s",
            "calibration": True, "source": "s", "use": "independent", **fields}


def test_fits_a3_peer_links_and_small_copy_costs_from_a_csv(tmp_path):
    """Issue 28: peer rows fit the link they cross (dst_device 1: the other die of the package, SIO; 2: the
    next package), host-timed small copies fit the submit of each copy (stream-sync) and a synchronize's
    wake (copy-sync)."""
    truth = tmp_path / "a3truth.toml"
    truth.write_text('inherit = "A3"\n[product]\nname = "a3truth"\n'
                     "[hardware]\nsync_wait_us = 5.0\ncopy_submit_us = 2.0\n"
                     '[hardware.source]\nsync_wait_us = "A: t"\ncopy_submit_us = "A: t"\n'
                     '[hardware.pair_link]\ngbps = 150.0\n[hardware.pair_link.source]\ngbps = "A: t"\n'
                     '[hardware.peer_link]\ngbps = 100.0\n[hardware.peer_link.source]\ngbps = "A: t"\n')
    lines = ["size,direction,memory,pattern,count,dst_device,gbps"]
    for pattern, dst, sizes, count in (("stream-sync", 1, SIZES[4:], 32), ("stream-sync", 2, SIZES[4:], 32),
                                       ("stream-sync", 1, SIZES[:3], 32), ("copy-sync", 1, SIZES[:3], 1)):
        for n in sizes:
            row = _p2p("a3truth", n, pattern=pattern, count=count, dst_device=dst)
            lines.append(f"{n},p2p,device,{pattern},{count},{dst},{V.predict(row, str(truth)):.6f}")
    csv = tmp_path / "a3.csv"
    csv.write_text("\n".join(lines) + "\n")
    f = C.calibrate(C.read(csv), "A3", str(csv))["fields"]
    assert f["hardware.pair_link.gbps"] == pytest.approx(150.0, rel=0.03)
    assert f["hardware.peer_link.gbps"] == pytest.approx(100.0, rel=0.03)
    assert f["hardware.copy_submit_us"] == pytest.approx(2.0, rel=0.1)
    assert f["hardware.sync_wait_us"] == pytest.approx(5.0, rel=0.1)


def test_a_both_ways_peer_figure_fits_the_one_way_link_rate(tmp_path):
    """ascend-dmi's default p2p figure counts both directions (validation/measurements.toml row
    flagperf-910b-p2p-default): a CSV row marked both_ways fits the link's one-way rate, not their sum."""
    truth = _truth(tmp_path, '[hardware.peer_link]\ngbps = 30.0\n[hardware.peer_link.source]\ngbps = "A: t"\n')
    lines = ["size,direction,memory,pattern,both_ways,gbps"]
    for n in SIZES[3:]:
        lines.append(f"{n},p2p,device,async,true,{V.predict(_p2p('truth', n, both_ways=True), truth):.6f}")
    csv = tmp_path / "bidir.csv"
    csv.write_text("\n".join(lines) + "\n")
    f = C.calibrate(C.read(csv), "910B", str(csv))["fields"]
    assert f["hardware.peer_link.gbps"] == pytest.approx(30.0, rel=0.02)


def test_a_field_the_data_cannot_determine_is_kept_and_refused_when_asked_for(tmp_path, capsys):
    big = [n for n in SIZES if n >= 64 << 20]  # the fixed cost is lost in the noise at these sizes
    dmi = _dmi_table(tmp_path / "big.txt", "h2d", _measure("910B", "h2d", "pinned", "async", big))
    result = C.calibrate(C.read(dmi), "910B", dmi)
    assert "hardware.host_link.read_efficiency" in result["fields"]
    assert "hardware.host_link.latency_us" in result["kept"]
    assert main(["calibrate", dmi, "-o", str(tmp_path / "x.toml"), "--fit", "hardware.host_link.latency_us"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hardware.host_link.latency_us" in err and "smaller sizes" in err


def test_asking_for_a_field_calibrate_does_not_fit_names_the_ones_it_does(tmp_path, capsys):
    dmi = _dmi_table(tmp_path / "d.txt", "h2d", _measure("910B", "h2d", "pinned", "async"))
    assert main(["calibrate", dmi, "-o", str(tmp_path / "x.toml"), "--fit", "hardware.bogus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hardware.bogus: not a field" in err and "hardware.host_link.efficiency" in err


def test_a_fit_faster_than_the_link_is_refused(tmp_path, capsys):
    dmi = _dmi_table(tmp_path / "fast.txt", "h2d", [(n, 45.0) for n in (64 << 20, 256 << 20)])  # Gen4 x16 < 28
    assert main(["calibrate", dmi, "--product", "910B", "-o", str(tmp_path / "x.toml")]) == 2
    err = capsys.readouterr().err
    assert "hardware.host_link.read_efficiency" in err and "Gen4" in err
    assert not (tmp_path / "x.toml").exists()


@pytest.mark.parametrize("text, message", [("hello\n", "no measurements"),
                                           ("size,gbps\n4096,1.0\n", "no direction"),
                                           ("size,direction,speed\n4096,h2d,3\n", "gbps")])
def test_unreadable_input_is_refused_in_one_line(tmp_path, capsys, text, message):
    path = tmp_path / "m.txt"
    path.write_text(text)
    assert main(["calibrate", str(path), "-o", str(tmp_path / "x.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_the_calibrated_config_drives_the_emulator(tmp_path):
    import emu

    truth = _truth(tmp_path, "[hardware.host_link]\nread_efficiency = 0.8\n[hardware.host_link.source]\n"
                             "read_efficiency = \"A\"\n")
    dmi = _dmi_table(tmp_path / "d.txt", "h2d", _measure(truth, "h2d", "pinned", "async"))
    out = tmp_path / "srv.toml"
    assert main(["calibrate", dmi, "-o", str(out)]) == 0
    rt = emu.configure(product=out, functional=False)
    assert rt.product.hardware.host_link.read_efficiency == pytest.approx(0.8, rel=0.01)
