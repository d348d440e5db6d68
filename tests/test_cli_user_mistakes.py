"""A user's mistake never shows a traceback: a bad product (name, config file, $ACL_EMU_PRODUCT), a broken
config, an output path that cannot be written, a directory given to `run` -- every subcommand exits 2 with
one line `acl-emu <cmd>: error: ...` naming the argument, before doing any work."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import emu.runtime
from emu.cli import main

ROOT = Path(__file__).resolve().parent.parent

# every subcommand that takes a product, with the rest of a valid command line: (argv before, argv after,
# the option naming the product)
PRODUCT_COMMANDS = {
    "run": (["run"], [], "--product"),
    "bandwidth": (["bandwidth", "--sizes", "4K"], [], "--product"),
    "overlap": (["overlap", "--h2d", "1M", "--d2h", "1M", "--compute-us", "10"], [], "--product"),
    "calibrate": (["calibrate", "m.csv", "-o", "fit.toml"], [], "--product"),
    "validate": (["validate", "--targets"], [], "--config"),
    "compare": (["compare"], ["bandwidth", "--sizes", "4K"], "--products"),
    "products": (["products"], [], "--products"),
}

BROKEN_CONFIGS = {
    "syntax": ('inherit = "910B"\n[hardware\n', "<syntax>"),
    "unknown-field": ('inherit = "910B"\nbogus_field = 3\n', "bogus_field"),
    "negative-rate": ('inherit = "910B"\n[hardware]\nmemory_gbps = -5.0\n[hardware.source]\nmemory_gbps = "A: x"\n',
                      "hardware.memory_gbps"),
    "missing-source": ('inherit = "910B"\n[hardware]\nhost_memcpy_gbps = 5.0\n', "hardware.source.host_memcpy_gbps"),
    "not-toml-text": (b"\xff\xfe\x00garbage", "<file>"),
    "unknown-parent": ('inherit = "NoSuchChip"\n', "NoSuchChip"),
}

OUT_COMMANDS = {
    "run": (["run"], [], "--out"),
    "bandwidth": (["bandwidth", "--sizes", "4K"], [], "--out"),
    "overlap": (["overlap", "--h2d", "1M", "--d2h", "1M", "--compute-us", "10"], [], "--out"),
    "validate": (["validate", "--targets"], [], "--out"),
    "compare": (["compare"], ["bandwidth", "--sizes", "4K"], "--out"),
    "compare-study": (["compare", "bandwidth", "--sizes", "4K"], [], "--out"),
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch, tmp_path):
    for name in ("ACL_EMU_PRODUCT", "ASCEND_RT_VISIBLE_DEVICES", "ACL_EMU_HOST_TIME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.csv").write_text("size,direction,gbps\n1048576,h2d,20\n67108864,h2d,24\n")


def one_error_line(capsys, code, command: str, *needles: str) -> str:
    """The command exited 2 with one error line naming what it should; no traceback anywhere."""
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"acl-emu {command}: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def call(argv):
    try:
        return main(argv)
    except SystemExit as e:  # argparse's own errors
        return e.code


def _product_argv(command: str, value: str) -> list[str]:
    before, after, flag = PRODUCT_COMMANDS[command]
    return [*before, flag, value, *after]


# ------------------------------------------------------------------ a bad product, by name or file

@pytest.mark.parametrize("command", PRODUCT_COMMANDS)
def test_an_unknown_product_name_is_one_line_naming_the_option(capsys, command):
    code = call(_product_argv(command, "NoSuchChip"))
    one_error_line(capsys, code, command, f"argument {PRODUCT_COMMANDS[command][2]}", "NoSuchChip", "910B")


@pytest.mark.parametrize("command", PRODUCT_COMMANDS)
def test_a_missing_config_file_is_one_line_naming_the_option(capsys, command):
    code = call(_product_argv(command, "missing.toml"))
    one_error_line(capsys, code, command, f"argument {PRODUCT_COMMANDS[command][2]}", "missing.toml")


@pytest.mark.parametrize("command", PRODUCT_COMMANDS)
def test_a_directory_as_config_is_one_line(capsys, tmp_path, command):
    (tmp_path / "cfgdir").mkdir()
    code = call(_product_argv(command, "cfgdir"))
    one_error_line(capsys, code, command, f"argument {PRODUCT_COMMANDS[command][2]}", "cfgdir")


@pytest.mark.parametrize("broken", BROKEN_CONFIGS)
@pytest.mark.parametrize("command", PRODUCT_COMMANDS)
def test_a_broken_config_is_one_line_naming_the_file_and_the_field(capsys, tmp_path, command, broken):
    text, field = BROKEN_CONFIGS[broken]
    path = tmp_path / f"{broken}.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    code = call(_product_argv(command, str(path)))
    names_file = path.name if broken != "unknown-parent" else "NoSuchChip.toml"  # the parent's lookup
    one_error_line(capsys, code, command, f"argument {PRODUCT_COMMANDS[command][2]}", names_file, field)


@pytest.mark.parametrize("value", ["NoSuchChip", "broken.toml"])
@pytest.mark.parametrize("command", ["run", "bandwidth", "overlap"])
def test_a_bad_acl_emu_product_variable_is_one_line_naming_it(capsys, monkeypatch, tmp_path, command, value):
    (tmp_path / "broken.toml").write_text(BROKEN_CONFIGS["unknown-field"][0])
    monkeypatch.setenv("ACL_EMU_PRODUCT", value)
    monkeypatch.setattr(emu.runtime, "_current", None)  # a fresh process: run takes the product from the variable
    before, after, _ = PRODUCT_COMMANDS[command]
    code = call([*before, *after])
    one_error_line(capsys, code, command, "ACL_EMU_PRODUCT", value.split(".")[0])


def test_a_good_product_option_wins_over_a_bad_variable(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ACL_EMU_PRODUCT", "NoSuchChip")
    code = call(["overlap", "--product", "910B", "--h2d", "64K", "--d2h", "64K", "--compute-us", "1", "--streams",
                 "1", "--chunks", "1", "--out", str(tmp_path / "o"), "--json"])
    assert code == 0, capsys.readouterr().err


# ------------------------------------------------------------------ an output path that cannot be written

def _out_argv(command: str, value: str) -> list[str]:
    before, after, flag = OUT_COMMANDS[command]
    return [*before, flag, value, *after]


@pytest.mark.parametrize("command", OUT_COMMANDS)
def test_a_file_where_the_output_directory_should_be_is_one_line(capsys, tmp_path, command):
    (tmp_path / "afile").write_text("x")
    code = call(_out_argv(command, "afile"))
    one_error_line(capsys, code, command.split("-")[0], "argument --out", "afile", "not a directory")


@pytest.mark.parametrize("command", OUT_COMMANDS)
def test_an_output_directory_under_a_file_is_one_line(capsys, tmp_path, command):
    (tmp_path / "afile").write_text("x")
    code = call(_out_argv(command, "afile/sub/dir"))
    one_error_line(capsys, code, command.split("-")[0], "argument --out", "afile", "not a directory")


@pytest.mark.parametrize("command", OUT_COMMANDS)
def test_an_output_directory_that_cannot_be_written_is_one_line(capsys, command):
    code = call(_out_argv(command, "/sys/acl-emu-out"))  # not writable, even for root
    one_error_line(capsys, code, command.split("-")[0], "argument --out", "cannot write")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into a read-only directory")
@pytest.mark.parametrize("command", OUT_COMMANDS)
def test_a_read_only_output_directory_is_one_line(capsys, tmp_path, command):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        code = call(_out_argv(command, "ro/out"))
    finally:
        ro.chmod(0o755)
    one_error_line(capsys, code, command.split("-")[0], "argument --out", "cannot write")


@pytest.mark.parametrize("command", ["bandwidth", "overlap", "compare"])
def test_a_file_where_the_default_output_directory_should_be_is_one_line(capsys, tmp_path, command):
    (tmp_path / "acl-emu-out").write_text("x")
    before, after, _ = OUT_COMMANDS[command]
    code = call([*before, *after])
    one_error_line(capsys, code, command, "argument --out", "acl-emu-out", "not a directory")


@pytest.mark.parametrize("output, why", [("adir", "is a directory"), ("afile/fit.toml", "not a directory"),
                                         ("/sys/fit.toml", "cannot write")])
def test_calibrate_output_that_cannot_be_written_is_one_line(capsys, tmp_path, output, why):
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    code = call(["calibrate", "m.csv", "-o", output])
    one_error_line(capsys, code, "calibrate", "argument -o/--output", why)


# ------------------------------------------------------------------ run: the script and its --out

def test_run_refuses_a_directory_without_main(capsys, tmp_path):
    (tmp_path / "pkg").mkdir()
    code = call(["run", "pkg"])
    one_error_line(capsys, code, "run", "argument SCRIPT", "pkg", "__main__.py")


def test_run_bad_out_is_refused_before_the_script_runs(capsys, tmp_path):
    (tmp_path / "afile").write_text("x")
    script = tmp_path / "s.py"
    script.write_text("open('ran', 'w').close()\n")
    code = call(["run", "--out", "afile", str(script)])
    one_error_line(capsys, code, "run", "argument --out")
    assert not (tmp_path / "ran").exists()


def test_run_out_is_resolved_before_the_script_changes_directory(capsys, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent("""
        import os, acl
        os.chdir("elsewhere")
        assert acl.init() == 0 and acl.rt.set_device(0) == 0
        ptr, ret = acl.rt.malloc(64, 0)
        assert ret == 0
    """))
    code = call(["run", "--host-time", "calls", "--out", "trace-here", str(script)])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "trace-here" / "trace.json").is_file()
    assert not (tmp_path / "elsewhere" / "trace-here").exists()


def test_run_of_a_directory_with_main_still_runs(capsys, tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text("import acl\nassert acl.init() == 0\n")
    assert call(["run", "--host-time", "calls", "--out", "o", "app"]) == 0, capsys.readouterr().err


# ------------------------------------------------------------------ the same through a real process

def _acl_emu(*args, env=None, cwd=None):
    base = {k: v for k, v in os.environ.items() if k not in ("ACL_EMU_PRODUCT", "ASCEND_RT_VISIBLE_DEVICES")}
    return subprocess.run([sys.executable, "-m", "emu", *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env={**base, **(env or {})})


@pytest.mark.parametrize("args, env, command, needle", [
    (["bandwidth", "--product", "broken.toml"], None, "bandwidth", "argument --product"),
    (["overlap", "--h2d", "1M", "--d2h", "1M", "--compute-us", "1"], {"ACL_EMU_PRODUCT": "broken.toml"},
     "overlap", "ACL_EMU_PRODUCT"),
    (["run"], {"ACL_EMU_PRODUCT": "NoSuchChip"}, "run", "ACL_EMU_PRODUCT"),
    (["run", "--out", "afile"], None, "run", "argument --out"),
    (["run", "pkg"], None, "run", "argument SCRIPT"),
    (["validate", "--out", "afile/x"], None, "validate", "argument --out"),
    (["calibrate", "m.csv", "-o", "pkg"], None, "calibrate", "argument -o/--output"),
], ids=["bandwidth-broken-config", "overlap-broken-env", "run-unknown-env", "run-out-file", "run-dir",
        "validate-out-under-file", "calibrate-output-dir"])
def test_in_a_real_process_a_mistake_is_one_line_and_exit_code_2(tmp_path, args, env, command, needle):
    (tmp_path / "broken.toml").write_text(BROKEN_CONFIGS["negative-rate"][0])
    (tmp_path / "afile").write_text("x")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "m.csv").write_text("size,direction,gbps\n1048576,h2d,20\n")
    out = _acl_emu(*args, env=env, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"acl-emu {command}: error: ") and needle in lines[0], out.stderr


def test_version_comes_from_the_package_metadata(capsys):
    from importlib.metadata import version

    import emu
    from emu.cli import main as cli_main

    with pytest.raises(SystemExit) as e:
        cli_main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"acl-emu {version('acl-emu')}" == f"acl-emu {emu.__version__}"


def test_a_bare_acl_emu_prints_its_usage_and_exits_2(capsys):
    from emu.cli import main as cli_main

    assert cli_main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: acl-emu") and "validate" in err and "calibrate" in err
