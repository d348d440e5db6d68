"""`acl-emu replay` on hostile or broken profile files (issue 30, item 2): every one is one line on stderr
naming the file, exit code 2, no traceback and no hang."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from emu.cli import main
from emu.studies import profiles

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch, tmp_path):
    monkeypatch.delenv("ACL_EMU_PRODUCT", raising=False)
    monkeypatch.chdir(tmp_path)


def _refused(capsys, path, *words) -> str:
    rc = main(["replay", str(path), "--product", "910B", "--out", "out"])
    captured = capsys.readouterr()
    assert rc == 2, captured
    err = captured.err
    assert err.endswith("\n") and err.count("\n") == 1, err[:2000]
    assert len(err) < 1000, err[:2000]
    assert err.startswith("acl-emu replay: error: ") and str(path) in err, err
    assert "Traceback" not in err
    for w in words:
        assert w in err, err
    assert not (Path("out")).exists()
    return err


def test_deeply_nested_json_unclosed(tmp_path, capsys):
    p = tmp_path / "msprof_deep.json"
    p.write_text("[" * 100000)
    _refused(capsys, p, "nested too deeply")


def test_deeply_nested_json_closed(tmp_path, capsys):
    p = tmp_path / "msprof_deep.json"
    p.write_text("[" * 100000 + "]" * 100000)
    _refused(capsys, p, "nested too deeply")


def test_deeply_nested_json_lines(tmp_path, capsys):
    p = tmp_path / "records.jsonl"
    p.write_text('{"kind": "MEMCPY"}\n{"a": ' + "[" * 100000 + "\n")
    _refused(capsys, p, "row 2", "nested too deeply")


def test_json_integer_of_thousands_of_digits(tmp_path, capsys):
    p = tmp_path / "msprof_big.json"
    p.write_text('[{"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": ' + "7" * 5000 + ', "dur": 1}]')
    _refused(capsys, p, "digits")


def test_json_integer_too_large_for_a_float(tmp_path, capsys):
    # under int_max_str_digits, so json reads it; too large for a float all the same
    p = tmp_path / "mspti.json"
    p.write_text('[{"kind": "MEMCPY", "copyKind": 1, "bytes": 4096, "start": ' + "9" * 1000 +
                 ', "end": 2000, "deviceId": 0, "streamId": 1, "correlationId": 1}]')
    _refused(capsys, p)


def test_task_time_cell_of_thousands_of_digits(tmp_path, capsys):
    p = tmp_path / "task_time_big.csv"
    p.write_text("Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)\n"
                 f"0,k,KERNEL_AICORE,{'1' * 5000},1,1,10,11\n")
    _refused(capsys, p, "row 2", "stream_id")


def test_csv_field_over_the_csv_module_limit(tmp_path, capsys):
    p = tmp_path / "task_time_wide.csv"
    p.write_text("Device_id,kernel_name,kernel_type,stream_id,task_id,task_time(us),task_start(us),task_stop(us)\n"
                 "0,k,KERNEL_AICORE,1,1,1,10,11\n"
                 f"0,{'x' * (200 * 1024)},KERNEL_AICORE,1,2,1,12,13\n")
    _refused(capsys, p, "row 3", "field larger than field limit")


def test_mspti_csv_field_over_the_csv_module_limit(tmp_path, capsys):
    p = tmp_path / "mspti.csv"
    p.write_text("kind,copyKind,bytes,start,end,deviceId,streamId,correlationId\n"
                 f"MEMCPY,HTOD,{'4' * (200 * 1024)},1000,2000,0,1,1\n")
    _refused(capsys, p, "field larger than field limit")


def test_mspti_log_number_of_thousands_of_digits(tmp_path, capsys):
    p = tmp_path / "mspti.log"
    p.write_text(f"[MEMCPY] copyKind: {'1' * 5000}, bytes: {'4' * 5000}, start: 1000, end: 2000, deviceId: 0, "
                 "streamId: 3, correlationId: 12, isAsync: 1\n")
    _refused(capsys, p)


def test_msprof_process_label_of_thousands_of_digits(tmp_path, capsys):
    text = (DATA / "msprof_step.json").read_text()
    assert "NPU 0" in text or "NPU" in text
    p = tmp_path / "msprof_label.json"
    p.write_text(text.replace("NPU 0", "NPU " + "1" * 5000))
    rc = main(["replay", str(p), "--product", "910B", "--out", "out"])
    err = capsys.readouterr().err
    assert rc in (0, 2) and "Traceback" not in err and err.count("\n") <= 1


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_dev_zero_is_refused(capsys):
    _refused(capsys, "/dev/zero", "character device")


def _does_not_hang(fifo: Path, capsys, *words):
    result = {}

    def run():
        try:
            result["err"] = _refused(capsys, fifo, *words)
        except BaseException as e:  # noqa: BLE001 - reported below
            result["exc"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():  # blocked opening the FIFO: a writer lets it go, then fail
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(5)
        pytest.fail("acl-emu replay blocked on a FIFO")
    if "exc" in result:
        raise result["exc"]


def test_fifo_is_refused_without_hanging(tmp_path, capsys):
    fifo = tmp_path / "msprof_pipe.json"
    os.mkfifo(fifo)
    _does_not_hang(fifo, capsys, "FIFO")


def test_fifo_found_in_a_profile_directory_is_refused(tmp_path, capsys):
    prof = tmp_path / "PROF_000001"
    prof.mkdir()
    os.mkfifo(prof / "msprof_20250101000000.json")
    rc_box = {}

    def run():
        rc_box["rc"] = main(["replay", str(prof), "--product", "910B", "--out", "out"])

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():
        os.close(os.open(prof / "msprof_20250101000000.json", os.O_WRONLY | os.O_NONBLOCK))
        t.join(5)
        pytest.fail("acl-emu replay blocked on a FIFO in a profile directory")
    err = capsys.readouterr().err
    assert rc_box["rc"] == 2 and err.count("\n") == 1 and "FIFO" in err, err


def test_huge_file_is_refused_before_reading(tmp_path, capsys):
    p = tmp_path / "msprof_huge.json"
    with open(p, "wb") as f:  # sparse: no disk used
        f.truncate(profiles.MAX_PROFILE_BYTES + 1)
    _refused(capsys, p, "MiB")


def test_out_of_memory_while_parsing(tmp_path, capsys, monkeypatch):
    p = tmp_path / "msprof_step.json"
    p.write_text((DATA / "msprof_step.json").read_text())

    def no_memory(*a, **k):
        raise MemoryError

    monkeypatch.setattr(profiles.json, "loads", no_memory)
    _refused(capsys, p, "out of memory")


def test_not_utf8(tmp_path, capsys):
    p = tmp_path / "msprof_bin.json"
    p.write_bytes(b"[\xff\xfe\x00]")
    _refused(capsys, p, "UTF-8")


def test_directory_without_profile_and_missing_file(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    _refused(capsys, tmp_path / "empty")
    _refused(capsys, tmp_path / "nope.json", "no such file")
