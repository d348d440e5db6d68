"""`acl-emu calibrate` on hostile input (issue 30, item 4): each bad input is one line on stderr and exit 2,
never a traceback; names cannot inject TOML fields; a failed run leaves nothing (and nothing changed) at -o."""
from __future__ import annotations

import tomllib

import pytest

from emu import cli, config
from emu.cli import main
from emu.studies import calibrate as C
from emu.studies import validate as V

SIZES = [1 << k for k in range(12, 29, 2)]  # 4 KiB .. 256 MiB


def _dmi(path, sizes=SIZES) -> str:
    """An ascend-dmi --bw H2D table measured on 910B itself."""
    lines = ["Type: H2D", "    Size(Bytes)        Execute Times        Bandwidth(GB/s)"]
    for n in sizes:
        row = {"id": "m", "product": "910B", "pattern": "async", "streams": 1, "count": 10, "devices": 1,
               "size_bytes": n, "memory": "pinned", "direction": "h2d", "value": 1.0, "unit": "GB/s",
               "calibration": True, "source": "s"}
        lines.append(f"    {n:<18} 10                   {V.predict(row, '910B'):.3f}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


EVIL = 'evil" \\ x\nhardware = 1\n[product]\nname = "x\t\x00\x1b\x7f'


@pytest.mark.parametrize("text", ["", "plain", EVIL, "\\u0041", '"""', "é ünïcode"])
def test_toml_string_round_trips_through_tomllib(text):
    assert tomllib.loads(f"k = {C.toml_string(text)}\n") == {"k": text}


def test_a_name_and_file_name_with_quotes_and_newlines_inject_nothing():
    result = {"base": "910B", "source": 'dir/m"e\nname = "x".csv',
              "fields": {"hardware.host_link.latency_us": 2.5}}
    text = C.config_text(result, EVIL, {"hardware.host_link.latency_us": 1.0}, "910B")
    doc = tomllib.loads(text)
    assert set(doc) == {"inherit", "product", "hardware"}
    assert set(doc["product"]) == {"name", "title"} and doc["product"]["name"] == EVIL
    assert doc["product"]["title"].endswith('calibrated to m"e\nname = "x".csv')
    assert doc["hardware"] == {"host_link": {"latency_us": 2.5, "source": {
        "latency_us": 'fit: m"e\nname = "x".csv, residual 1.0%'}}}
    assert tomllib.loads(C.override("910B", {"hardware.host_link.latency_us": 2.0}))["inherit"] == "910B"


def test_the_cli_writes_a_hostile_name_as_one_string(tmp_path, capsys):
    out = tmp_path / "mine.toml"
    name = 'my "server"\n[hardware]\nmemory_gbps = 1'
    code = main(["calibrate", _dmi(tmp_path / "dmi.txt"), "--product", "910B", "-o", str(out), "--name", name])
    err = capsys.readouterr().err
    if code == 0:  # written: the name is the name, nothing more
        doc = tomllib.loads(out.read_text())
        assert doc["product"]["name"] == name and "memory_gbps" not in doc["hardware"]
    else:  # or the config refuses such a name: in one line, leaving nothing behind
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err and not out.exists()


BIG = str(1 << 70)
CASES = {
    "nan GB/s": ("size,direction,gbps\n4096,h2d,1\n65536,h2d,nan\n", "nan"),
    "inf GB/s": ("size,direction,gbps\n4096,h2d,inf\n65536,h2d,2\n", "inf"),
    "1e308 GB/s": ("size,direction,gbps\n4096,h2d,1e308\n65536,h2d,2\n", "1e308"),
    "-inf us": ("size,direction,us\n4096,h2d,-inf\n65536,h2d,2\n", "-inf"),
    "nan us": ("size,direction,us\n4096,h2d,NaN\n65536,h2d,2\n", "NaN"),
    "1e308 us": ("size,direction,us\n4096,h2d,3\n65536,h2d,1e308\n", "line 3"),
    "2^70 bytes": (f"size,direction,gbps\n{BIG},h2d,1\n", "1 TiB"),
    "5000 digits": ("size,direction,gbps\n" + "9" * 5000 + ",h2d,1\n", "CSV line 2"),
    "5000-digit count": ("size,direction,gbps,count\n4096,h2d,1," + "9" * 5000 + "\n", "CSV line 2"),
    "long count": ("size,direction,gbps,count\n4096,h2d,1," + "9" * 50 + "\n", "count"),
    "fractional count": ("size,direction,gbps,count\n4096,h2d,1,1.5\n", "count"),
    "huge dst_device": ("size,direction,gbps,dst_device\n4096,p2p,1,99999999999999\n", "dst_device"),
    "300 KB field": ("size,direction,gbps\n4096,h2d," + "1" * 300_000 + "\n", "line 2"),
    "2 KB cell": ("size,direction,gbps\n4096,h2d," + "1" * 2000 + "\n", "CSV line 2"),
    "300 KB quoted field": ('size,direction,gbps\n"' + "x" * 300_000 + '",h2d,1\n', "line 2"),
    "300 KB multi-line field": ('size,direction,gbps\n"' + "x\n" * 150_000 + '",h2d,1\n', "CSV near line"),
    "dmi 400-digit GB/s": ("Type: H2D\nSize(Bytes)    Bandwidth(GB/s)\n4096    " + "9" * 400 + "\n", "line 3"),
    "dmi 2^70 bytes": (f"Type: H2D\nSize(Bytes)    Bandwidth(GB/s)\n{BIG}    3.0\n", "1 TiB"),
    "dmi zero size": ("Type: H2D\nSize(Bytes)    Bandwidth(GB/s)\n0    3.0\n", "line 3"),
    "dmi short line": ("Type: H2D\nSize(Bytes)    Execute Times    Bandwidth(GB/s)\n4096    3.0\n", "line 3"),
    "dmi fractional count": ("Type: H2D\nSize(Bytes)    Execute Times    Bandwidth(GB/s)\n4096    1.5    3.0\n",
                             "count"),
    "dmi 300 KB line": ("Type: H2D\n" + "1" * 300_000 + "\n", "line 2"),
    "dmi 12 KB line": ("Type: H2D\n" + "1  " * 4000 + "\n", "line 2"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_rows_are_refused_in_one_line_naming_the_row(tmp_path, capsys, case):
    text, where = CASES[case]
    path = tmp_path / "m.txt"
    path.write_text(text)
    out = tmp_path / "x.toml"
    assert main(["calibrate", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and where in err and len(err) < 600, err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["m.txt"]


@pytest.mark.parametrize("data, message", [(bytes(range(256)) * 4, "not a text file"),
                                           (b"size,direction,gbps\n4096,h2d,1\x00\n", "NUL"),
                                           (b"\x89PNG\r\n\x1a\n" + b"\xff" * 100, "not a text file"),
                                           (b"size,gbps\n" + b"4096,1\n" * (3 << 20), "16 MiB")])
def test_binary_and_huge_files_are_refused_in_one_line(tmp_path, capsys, data, message):
    path = tmp_path / "m.bin"
    path.write_bytes(data)
    assert main(["calibrate", str(path), "-o", str(tmp_path / "x.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_a_missing_file_is_refused_in_one_line(tmp_path, capsys):
    assert main(["calibrate", str(tmp_path / "none.txt"), "-o", str(tmp_path / "x.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none.txt" in err


def _fail_late(monkeypatch):
    """Fail after the draft config was written and replayed (its final check refuses it)."""
    def refuse(path):
        raise C.CalibrationError(f"{path}: refused for the test")
    monkeypatch.setattr(cli, "load", refuse)


def test_a_failing_run_leaves_no_file_at_the_output(tmp_path, capsys, monkeypatch):
    _fail_late(monkeypatch)
    dmi = _dmi(tmp_path / "dmi.txt")
    out = tmp_path / "sub" / "mine.toml"
    assert main(["calibrate", dmi, "--product", "910B", "-o", str(out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not out.exists() and not out.with_suffix(".png").exists()
    assert list(out.parent.iterdir()) == []  # no temporary left either


def test_a_failing_run_leaves_an_existing_output_untouched(tmp_path, capsys, monkeypatch):
    dmi = _dmi(tmp_path / "dmi.txt")
    out = tmp_path / "mine.toml"
    out.write_text("# mine, by hand\n")
    out.with_suffix(".png").write_bytes(b"old plot")
    _fail_late(monkeypatch)
    assert main(["calibrate", dmi, "--product", "910B", "-o", str(out)]) == 2
    assert out.read_text() == "# mine, by hand\n" and out.with_suffix(".png").read_bytes() == b"old plot"
    bad = tmp_path / "bad.csv"
    bad.write_text("size,direction,gbps\n4096,h2d,nan\n")
    assert main(["calibrate", str(bad), "--product", "910B", "-o", str(out)]) == 2
    assert out.read_text() == "# mine, by hand\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "dmi.txt", "mine.png", "mine.toml"]


def test_a_successful_run_replaces_the_output_and_leaves_no_temporary(tmp_path, capsys):
    dmi = _dmi(tmp_path / "dmi.txt")
    out = tmp_path / "mine.toml"
    out.write_text("# old\n")
    assert main(["calibrate", dmi, "--product", "910B", "-o", str(out)]) == 0
    assert config.load(out).name == "mine" and out.with_suffix(".png").stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dmi.txt", "mine.png", "mine.toml"]
