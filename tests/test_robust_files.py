"""Files a user names, hostile or broken (issue 42, items 5 and 7): a product config, a sweep config, a measurements
file (validate's TOML table, calibrate's ascend-dmi output or CSV), a model declaration, a profile, aclInit's JSON
and a script are each read through `emu.files`:

- only a regular file is read: a FIFO, a device (/dev/zero, /dev/urandom), a directory or a socket is refused at
  once, in one line naming the path and what it is, never waited on or read without end;
- at most a stated bound is read (4 MiB for configs and declarations, 16 MiB for measurements, 256 MiB for
  profiles, 64 MiB for scripts): a larger file is refused by its size, the bound in the message;
- TOML nested past the recursion limit, an integer of thousands of digits or bytes that are not text are the
  reader's one-line error, never a traceback.

From the command line each is one line on stderr and exit code 2. A test that reads a FIFO runs the read in a
thread and lets it go (opening the FIFO's other end) when it has not returned in time, then fails; one that reads
/dev/zero or a huge file runs in a child process under an address-space limit and a timeout.
"""
from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import emu
from emu import config, files, modeldecl
from emu.cli import main
from emu.config import ConfigError
from emu.studies import calibrate, profiles, sweep, validate

WAIT = 20  # seconds a read of a FIFO may take before the test lets it go and fails
ROOT = Path(emu.__file__).resolve().parent


@pytest.fixture(autouse=True)
def _clean(monkeypatch, tmp_path):
    monkeypatch.delenv("ACL_EMU_PRODUCT", raising=False)
    monkeypatch.delenv(modeldecl.MODELS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    yield
    modeldecl.forget_models()


def _returns(fifo: Path, fn):
    """fn() run in a thread: what it returned, or the exception it raised; the test fails if it is still reading
    the FIFO after WAIT seconds (a writer is opened then, so the thread ends)."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - given to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(WAIT)
    if t.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(5)
        pytest.fail(f"blocked reading the FIFO {fifo}")
    return box


def _said(e: BaseException) -> str:
    """What an error says in one line: a model declaration's problem (its message goes on with the template)."""
    return getattr(e, "problem", None) or str(e)


def _raised(fifo: Path, fn, error) -> str:
    box = _returns(fifo, fn)
    assert isinstance(box.get("error"), error), box
    return _said(box["error"])


def _one_line(message: str, path, *words) -> None:
    assert "\n" not in message and len(message) < 600, message
    assert str(path) in message, message
    for w in words:
        assert w in message, message


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.toml"
    os.mkfifo(path)
    return path


DECLARATION = ('name = "m"\ncompute_us = 5\n[[input]]\nname = "a"\ndtype = "int8"\nshape = [4]\n'
               '[[output]]\nname = "b"\ndtype = "int8"\nshape = [4]\n')

# reader name -> (call on a path, the error type it raises)
READERS = {
    "product config": (config.load, ConfigError),
    "sweep config": (sweep.Grid.from_toml, ValueError),
    "validate measurements": (validate.load, validate.MeasurementError),
    "calibrate measurements": (calibrate.read, calibrate.CalibrationError),
    "profile": (profiles.load, profiles.ProfileError),
    "model declaration": (lambda p: modeldecl.declare_model(Path(p).parent / "x.om", str(p)),
                          modeldecl.ModelDeclarationError),
}
BOUNDS = {"product config": files.CONFIG_BYTES, "sweep config": files.CONFIG_BYTES,
          "validate measurements": files.TABLE_BYTES, "calibrate measurements": files.TABLE_BYTES,
          "profile": files.PROFILE_BYTES, "model declaration": files.CONFIG_BYTES}


# -- a FIFO, a device, a directory, a socket: refused at once -----------------------------------------------------
@pytest.mark.parametrize("reader", READERS)
def test_a_fifo_is_refused_at_once_by_every_reader(fifo, reader):
    """Rule: a FIFO is opened without blocking and refused as not a regular file, in one line naming it."""
    read, error = READERS[reader]
    _one_line(_raised(fifo, lambda: read(fifo), error), fifo, "FIFO", "not a regular file")


@pytest.mark.parametrize("reader", READERS)
def test_a_directory_is_refused_by_every_reader(tmp_path, reader):
    """Rule: a directory is refused in one line (a profile directory is searched for its files first)."""
    read, error = READERS[reader]
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(error) as e:
        read(folder)
    _one_line(_said(e.value), folder, "directory")


@pytest.mark.parametrize("reader", READERS)
def test_a_socket_is_refused_by_every_reader(reader):
    """Rule: a socket is refused as not a regular file (it is never connected to)."""
    read, error = READERS[reader]
    path = Path("sock.toml")  # (relative: a socket's path is short; the test runs in its tmp_path)
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(error) as e:
            read(path)
    _one_line(_said(e.value), path, "socket")


def _child(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`code` run by a child Python whose address space is limited to 1 GiB: reading without end fails there
    instead of taking this machine's memory."""
    def limit():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limit, env=env)


CHILD_READERS = {
    "product config": "from emu import config as m; read = m.load",
    "sweep config": "from emu.studies import sweep as m; read = m.Grid.from_toml",
    "validate measurements": "from emu.studies import validate as m; read = m.load",
    "calibrate measurements": "from emu.studies import calibrate as m; read = m.read",
    "profile": "from emu.studies import profiles as m; read = m.load",
    "model declaration": "from emu import modeldecl as m; read = lambda p: m.declare_model('/tmp/x.om', p)",
}


def _refused_in_a_child(reader: str, path: str) -> str:
    code = (f"{CHILD_READERS[reader]}\n"
            f"try:\n    read({path!r})\nexcept ValueError as e:\n    print('REFUSED', getattr(e, 'problem', None) or e)\nelse:\n    print('READ')\n")
    done = _child(code)
    assert done.returncode == 0 and done.stdout.startswith("REFUSED "), (done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    message = done.stdout[len("REFUSED "):].rstrip("\n")
    assert "\n" not in message and len(message) < 600, message
    return message


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("reader", READERS)
def test_dev_zero_is_refused_by_every_reader(reader):
    """Rule: a device is refused before it is read: /dev/zero would give bytes until memory runs out."""
    assert "character device" in _refused_in_a_child(reader, "/dev/zero")


@pytest.mark.skipif(not os.path.exists("/dev/urandom"), reason="no /dev/urandom")
@pytest.mark.parametrize("reader", ["product config", "model declaration"])
def test_dev_urandom_is_refused(reader):
    assert "character device" in _refused_in_a_child(reader, "/dev/urandom")


# -- the bounds --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reader", READERS)
def test_a_file_over_the_bound_is_refused_naming_the_bound(tmp_path, reader):
    """Rule: a file larger than its reader's bound is refused by its size; the message says the bound."""
    read, error = READERS[reader]
    path = tmp_path / "big.toml"
    with open(path, "wb") as f:
        f.truncate(BOUNDS[reader] + 1)  # (sparse: no disk)
    with pytest.raises(error) as e:
        read(path)
    _one_line(_said(e.value), path, files.size_text(BOUNDS[reader]))


@pytest.mark.parametrize("reader", READERS)
def test_a_huge_file_is_refused_without_being_read(tmp_path, reader):
    """Rule: the size is checked before a byte is read: a 64 GiB (sparse) file is refused by a process that
    could not even hold 1 GiB of it."""
    path = tmp_path / "huge.toml"
    with open(path, "wb") as f:
        f.truncate(64 << 30)
    assert files.size_text(BOUNDS[reader]) in _refused_in_a_child(reader, str(path))


def test_the_reader_reads_at_most_the_bound_of_a_file_that_grows(tmp_path):
    """A file whose size said little but which gives more (it grew, or /proc says 0) is refused at bound + 1."""
    path = Path("/proc/self/maps")
    if not path.exists():
        pytest.skip("no /proc")
    with pytest.raises(files.FileRefused) as e:
        files.read_bytes(path, 16, "a test file")
    assert e.value.reason == files.TOO_LARGE and "over the 16 bytes a test file may have" in str(e.value)


# -- what is read and is not what it should be (item 7) ----------------------------------------------------------
DEEP = "a = " + "[" * 10000 + "\n"


@pytest.mark.parametrize("reader", ["product config", "sweep config", "validate measurements", "model declaration"])
def test_toml_nested_too_deeply_is_one_line(tmp_path, reader):
    """Rule: TOML nested past Python's recursion limit is the reader's error, not a RecursionError."""
    read, error = READERS[reader]
    path = tmp_path / "deep.toml"
    path.write_text(DEEP)
    with pytest.raises(error) as e:
        read(path)
    _one_line(_said(e.value), path, "nested too deeply")


@pytest.mark.parametrize("reader", ["product config", "sweep config", "validate measurements", "model declaration"])
def test_a_toml_integer_of_thousands_of_digits_is_one_line(tmp_path, reader):
    """Rule: an integer over Python's digit limit is the reader's error, not a bare ValueError."""
    read, error = READERS[reader]
    path = tmp_path / "digits.toml"
    path.write_text("a = " + "7" * 5000 + "\n")
    with pytest.raises(error) as e:
        read(path)
    _one_line(_said(e.value), path, "digits")


BINARIES = {"random": bytes((i * 167 + 13) % 256 for i in range(4096)),
            "png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
            "gzip": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + bytes(range(255, 0, -1))}


@pytest.mark.parametrize("kind", BINARIES)
@pytest.mark.parametrize("reader", READERS)
def test_a_binary_file_is_one_line(tmp_path, reader, kind):
    """Rule: bytes that are not UTF-8 text (a PNG, a gzip, random bytes) are refused as not text, in one line."""
    read, error = READERS[reader]
    path = tmp_path / f"binary.{kind}"
    path.write_bytes(BINARIES[kind])
    with pytest.raises(error) as e:
        read(path)
    _one_line(_said(e.value), path)
    assert "UTF-8" in str(e.value) or "not a text file" in str(e.value), str(e.value)


def test_the_messages_a_user_reads(tmp_path, fifo):
    """What each reader says, whole: the path, what it is, what is read."""
    def said(read, path, error):
        with pytest.raises(error) as e:
            read(path)
        return str(e.value)

    assert _raised(fifo, lambda: config.load(fifo), ConfigError) == (
        f"{fifo}: field '<file>': a FIFO (named pipe), not a regular file: a product config is read from a "
        f"regular file")
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(files.CONFIG_BYTES + 1)
    assert said(config.load, big, ConfigError) == (
        f"{big}: field '<file>': 4194305 bytes, over the 4 MiB a product config may have")
    deep = tmp_path / "deep.toml"
    deep.write_text(DEEP)
    assert said(config.load, deep, ConfigError) == (
        f"{deep}: field '<syntax>': not TOML: arrays or tables nested too deeply to read")
    png = tmp_path / "pic.png"
    png.write_bytes(BINARIES["png"])
    assert said(validate.load, png, validate.MeasurementError) == (
        f"{png}: not UTF-8 text (byte 0): a measurements table is a text file")
    assert said(sweep.Grid.from_toml, deep, ValueError) == (
        f"{deep}: not a TOML file: arrays or tables nested too deeply to read")


# -- aclInit's JSON ----------------------------------------------------------------------------------------------
def test_acl_init_refuses_a_fifo_and_dev_zero_with_100003(fifo):
    """aclInit(configPath): a path that is no regular file is ACL_ERROR_INVALID_FILE (100003: hicann/runtime
    src/acl/common/json_parser.cpp JsonParser::IsValidFileName, "config file is not a regular file"), with a
    one-line message, at once (the reference would block opening a FIFO, and read /dev/zero without end)."""
    emu.configure("910B", functional=True)
    import emu.acl as acl
    box = _returns(fifo, lambda: (acl.init(str(fifo)), acl.get_recent_err_msg()))
    code, message = box["value"]
    assert code == 100003 and "FIFO" in message and "\n" not in message, message
    if os.path.exists("/dev/zero"):
        done = _child("import emu.acl as acl\nprint(acl.init('/dev/zero'), acl.get_recent_err_msg())")
        assert done.stdout.startswith("100003 ") and "character device" in done.stdout, done.stdout + done.stderr


# -- the command line --------------------------------------------------------------------------------------------
def _exit_code(argv) -> int:
    try:
        return main(list(argv))
    except SystemExit as e:  # (an argument's type refused it: argparse exits)
        return e.code


def _cli(fifo: Path, capsys, *argv) -> str:
    box = _returns(fifo, lambda: _exit_code(argv))
    err = capsys.readouterr().err
    assert box.get("value") == 2, (box, err)
    assert err.count("\n") == 1 and "Traceback" not in err and str(fifo) in err, err
    return err


COMMANDS = {
    "run --product": lambda p: ["run", "--product", str(p), "--out", "out"],
    "bandwidth --product": lambda p: ["bandwidth", "--product", str(p), "--out", "out"],
    "overlap --product": lambda p: ["overlap", "--product", str(p), "--h2d", "1M", "--d2h", "1M", "--compute-us",
                                    "10", "--out", "out"],
    "sweep --config": lambda p: ["sweep", "--config", str(p), "--out", "out"],
    "validate --measurements": lambda p: ["validate", "--measurements", str(p), "--out", "out"],
    "validate --config": lambda p: ["validate", "--config", str(p), "--out", "out"],
    "calibrate": lambda p: ["calibrate", str(p), "-o", "out/x.toml"],
    "calibrate --product": lambda p: ["calibrate", "m.csv", "--product", str(p), "-o", "out/x.toml"],
    "replay": lambda p: ["replay", str(p), "--out", "out"],
    "run SCRIPT": lambda p: ["run", "--out", "out", str(p)],
    "run --model": lambda p: ["run", "--model", f"x.om={p}", "--out", "out"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_refuses_a_fifo_in_one_line(fifo, capsys, command):
    """Rule: from the command line, a FIFO given for any file is one line on stderr and exit code 2."""
    err = _cli(fifo, capsys, *COMMANDS[command](fifo))
    assert "FIFO" in err, err


@pytest.mark.parametrize("command", ["run --product", "bandwidth --product"])
def test_a_product_config_nested_too_deeply_or_binary_is_one_line(tmp_path, capsys, command):
    """Rule: `acl-emu run --product f.toml` and `acl-emu bandwidth --product f.toml` with a config that cannot be
    read: one line naming it, exit code 2."""
    for body, says in ((DEEP.encode(), "nested too deeply"), (BINARIES["png"], "not UTF-8 text"),
                       (("a = " + "9" * 5000).encode(), "digits")):
        path = tmp_path / "bad.toml"
        path.write_bytes(body)
        assert _exit_code(COMMANDS[command](path)) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and str(path) in err and says in err, err


@pytest.mark.parametrize("kind", BINARIES)
def test_a_binary_measurements_file_is_one_line_from_validate_and_calibrate(tmp_path, capsys, kind):
    path = tmp_path / f"m.{kind}"
    path.write_bytes(BINARIES[kind])
    for argv in (["validate", "--measurements", str(path), "--out", "out"], ["calibrate", str(path), "-o", "x.toml"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and str(path) in err, err
        assert "UTF-8" in err or "not a text file" in err, err


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("command", ["run --product", "sweep --config", "validate --measurements", "calibrate",
                                     "run SCRIPT", "run --model"])
def test_every_command_refuses_dev_zero_in_one_line(tmp_path, command):
    argv = [str(tmp_path / a) if a == "out" or a.startswith("out/") else a for a in COMMANDS[command]("/dev/zero")]
    done = _child(f"import sys\nfrom emu.cli import main\nsys.exit(main({argv!r}))")
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "/dev/zero" in done.stderr and "character device" in done.stderr, \
        done.stderr[-2000:]


# -- one reader ---------------------------------------------------------------------------------------------------
def _reads_files(path: Path) -> list[str]:
    """Where a module reads a file by itself: open(...) / io.open / os.open for reading, Path.read_text or
    read_bytes, tomllib.load."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
        mode = ast.unparse(n.args[1]) if len(n.args) > 1 else "".join(ast.unparse(k.value) for k in n.keywords
                                                                        if k.arg == "mode")
        writes = any(c in mode for c in "wax+") if owner != "os" else ("O_WRONLY" in mode or "O_RDWR" in mode)
        opens = name == "open" and (isinstance(f, ast.Name) or owner in ("io", "os")) and not writes
        if opens or (name in ("read_text", "read_bytes") and owner != "files") or (owner, name) == ("tomllib", "load"):
            out.append(f"{path.relative_to(ROOT.parent)}:{n.lineno}: {ast.unparse(n)[:80]}")
    return out


# Files of our own (headers, the bundled kernels' source, /proc, a run's own result file), never a user's.
OWN = ("emu/files.py", "emu/kernels.py", "emu/memory.py", "emu/capi/build.py", "emu/capi/toolkit.py",
       "emu/capi/sites.py", "emu/apidoc.py", "emu/device/native.py")


def test_every_file_a_user_names_is_read_through_emu_files():
    """Rule: one reader (emu.files) reads every file a user names; the modules listed in OWN read only files of
    the emulator's own."""
    found = [line for p in sorted(ROOT.rglob("*.py")) if str(p.relative_to(ROOT.parent)) not in OWN
             for line in _reads_files(p)]
    assert found == []
