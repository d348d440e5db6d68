"""`acl-emu run` runs a script the way `python script.py` (or `python -m module`) does.

One test per rule: the script's folder first on sys.path, -m, sys.argv and __file__, exceptions and
exit codes (the summary and the trace still written), --json with a chatty script, the
interpreter's state put back after an in-process run, an API the emulator lacks named clearly.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import emu
from emu.cli import main, run_script

COPY = textwrap.dedent("""\
    import acl
    assert acl.rt.set_device(0) == 0
    dev, ret = acl.rt.malloc(64, 0)
    payload = bytes(range(64))
    assert acl.rt.memcpy(dev, 64, acl.util.bytes_to_ptr(payload), 64, 1) == 0
    """)


def _env():
    env = dict(os.environ)
    for name in ("ACL_EMU_PRODUCT", "ASCEND_RT_VISIBLE_DEVICES", "ACL_EMU_HOST_TIME", "PYTHONPATH"):
        env.pop(name, None)
    return env


def emu_run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "emu", "run", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=_env())


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def two_files(tmp_path) -> Path:
    """A sample in its own folder that imports a sibling module, as Ascend's acl_execute_add.py does."""
    write(tmp_path / "sample" / "constant.py", "ACL_SUCCESS = 0\nACL_MEMCPY_HOST_TO_DEVICE = 1\n")
    return write(tmp_path / "sample" / "main.py", """\
        import acl
        from constant import ACL_SUCCESS, ACL_MEMCPY_HOST_TO_DEVICE
        assert acl.rt.set_device(0) == ACL_SUCCESS
        print("sibling import ok", ACL_MEMCPY_HOST_TO_DEVICE)
        """)


def test_the_scripts_folder_is_first_on_sys_path_so_a_sibling_module_imports(two_files, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = emu_run(str(two_files), cwd=elsewhere)  # run from another folder, as `python sample/main.py`
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["sibling import ok 1"]


def test_dash_m_runs_a_module_as_python_dash_m(tmp_path):
    write(tmp_path / "tools" / "__init__.py", "")
    write(tmp_path / "helper.py", "GREETING = 'from the working directory'\n")
    write(tmp_path / "tools" / "copy.py", COPY + textwrap.dedent("""\
        import sys
        import helper
        print(__name__, helper.GREETING)
        print(sys.argv)
        """))
    res = emu_run("-m", "tools.copy", "--flag", "x", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    name_line, argv_line = res.stdout.splitlines()
    assert name_line == "__main__ from the working directory"
    assert eval(argv_line) == [str(tmp_path / "tools" / "copy.py"), "--flag", "x"]  # python -m's argv
    assert "aclrtMemcpy" in res.stderr


def test_dash_m_with_an_unknown_module_is_a_bad_argument(tmp_path):
    res = emu_run("-m", "no_such_module_here", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == ["acl-emu run: error: argument -m: no module named "
                                               "'no_such_module_here'"]


def test_argv_file_and_name_are_what_python_gives(tmp_path):
    write(tmp_path / "sub" / "show.py", """\
        import sys
        print(repr(sys.argv))
        print(__file__)
        print(__name__)
        """)
    res = emu_run("sub/show.py", "--device_id", "0", "two words", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    argv, file, name = res.stdout.splitlines()
    assert eval(argv) == ["sub/show.py", "--device_id", "0", "two words"]  # argv[0] as typed
    assert file == str(tmp_path / "sub" / "show.py")  # absolute, as python >= 3.9
    assert name == "__main__"


def test_a_scripts_short_options_are_its_own_not_abbreviations_of_runs(tmp_path):
    """`acl-emu run s.py --h 448` gives the script `--h 448`: run's options are never matched by a prefix
    (argparse would take --h for --help / --host-time and stop)."""
    write(tmp_path / "show.py", """\
        import sys
        print(repr(sys.argv[1:]))
        """)
    res = emu_run("show.py", "--h", "448", "--pro", "x", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert eval(res.stdout.splitlines()[0]) == ["--h", "448", "--pro", "x"]


def test_an_exception_prints_the_traceback_exits_1_and_still_writes_summary_and_trace(tmp_path):
    script = write(tmp_path / "boom.py", COPY + textwrap.dedent("""\
        def fail():
            raise RuntimeError("boom after a copy")
        fail()
        """))
    res = emu_run("--out", "out", str(script), cwd=tmp_path)
    assert res.returncode == 1
    err = res.stderr
    tb = err[err.index("Traceback (most recent call last):"):]
    assert f'File "{script}", line 8, in <module>' in tb and "in fail" in tb
    assert "emu/cli.py" not in tb and "runpy" not in tb  # the script's frames only, as python prints
    assert "RuntimeError: boom after a copy" in tb
    assert "aclrtMemcpy" in err  # the summary, after the traceback
    assert "[acl-emu] the script exited with code 1: RuntimeError: boom after a copy" in err
    assert json.loads((tmp_path / "out" / "trace.json").read_text())["traceEvents"]


@pytest.mark.parametrize("ending,code,message", [
    ("sys.exit(7)", 7, None),
    ("sys.exit(0)", 0, None),
    ("sys.exit()", 0, None),
    ("sys.exit('fatal: no device')", 1, "fatal: no device"),
    ("exit(4)", 4, None),  # the site builtin the Ascend samples call
])
def test_sys_exit_code_is_the_exit_code_and_the_summary_is_still_written(tmp_path, ending, code, message):
    script = write(tmp_path / "ends.py", COPY + "import sys\n" + ending + "\nprint('not reached')\n")
    res = emu_run("--out", "out", str(script), cwd=tmp_path)
    assert res.returncode == code, res.stderr
    assert "not reached" not in res.stdout
    assert "aclrtMemcpy" in res.stderr and (tmp_path / "out" / "trace.json").exists()
    if message:
        assert res.stderr.splitlines()[0] == message  # printed to stderr, as python does
    assert "Traceback" not in res.stderr


def test_json_mode_prints_only_json_on_stdout_even_for_a_chatty_script(tmp_path):
    script = write(tmp_path / "chatty.py", COPY + textwrap.dedent("""\
        import os, subprocess, sys
        print("hello from print")
        sys.stdout.write("partial line without newline")
        os.write(1, b"raw bytes on fd 1\\n")
        subprocess.run([sys.executable, "-c", "print('from a child process')"], check=True)
        print("{not json")
        sys.exit(5)
        """))
    res = emu_run("--json", "--out", "out", str(script), cwd=tmp_path)
    assert res.returncode == 5
    summary = json.loads(res.stdout)  # the whole of stdout is the JSON
    assert summary["exit_code"] == 5 and summary["error"] == "SystemExit: 5"
    assert summary["calls"]["aclrtMemcpy"] == 1 and summary["bytes_by_route"] == {"h2d": 64}
    assert summary["script"] == str(script)
    for chatter in ("hello from print", "partial line without newline", "raw bytes on fd 1",
                    "from a child process", "{not json"):
        assert chatter in res.stderr


def test_json_mode_reports_an_exception(tmp_path):
    script = write(tmp_path / "raises.py", COPY + "raise ValueError('bad shape')\n")
    res = emu_run("--json", "--out", "out", str(script), cwd=tmp_path)
    assert res.returncode == 1
    summary = json.loads(res.stdout)
    assert (summary["exit_code"], summary["error"]) == (1, "ValueError: bad shape")
    assert "Traceback (most recent call last):" in res.stderr


def test_an_api_the_emulator_lacks_stops_the_script_with_a_message_naming_it(tmp_path):
    script = write(tmp_path / "op.py", COPY + "attr = acl.op.create_attr()\n")
    res = emu_run("--out", "out", str(script), cwd=tmp_path)
    assert res.returncode == 1
    assert "AttributeError: acl.op.create_attr is not emulated by acl-emu" in res.stderr
    assert "[acl-emu] the script stopped at acl.op.create_attr, which acl-emu does not emulate" in res.stderr
    res = emu_run("--json", "--out", "out", str(script), cwd=tmp_path)
    assert json.loads(res.stdout)["not_emulated"] == "acl.op.create_attr"


@pytest.fixture
def keep_acl_modules():
    saved = {k: v for k, v in sys.modules.items() if k == "acl" or k.startswith("acl.")}
    yield saved
    for k in [k for k in sys.modules if k == "acl" or k.startswith("acl.")]:
        del sys.modules[k]
    sys.modules.update(saved)


def test_an_in_process_run_puts_path_argv_main_and_modules_back(two_files, tmp_path, capsys, keep_acl_modules):
    emu.configure(product="910B", host_time="calls")
    path, path_items = sys.path, list(sys.path)
    argv, argv_items = sys.argv, list(sys.argv)
    main_module = sys.modules["__main__"]
    write(two_files.parent / "tamper.py", """\
        import sys
        sys.path.append("/added/by/the/script")
        sys.argv.append("--added")
        """)
    with open(two_files, "a") as f:
        f.write("import tamper\nprint(__name__, sys.modules['__main__'].__file__)\n")
    with open(two_files) as f:
        text = f.read()
    two_files.write_text("import sys\n" + text)

    assert run_script(str(two_files), ["a"], out=str(tmp_path / "out")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["sibling import ok 1", f"__main__ {two_files}"]
    assert sys.path is path and sys.path == path_items
    assert sys.argv is argv and sys.argv == argv_items
    assert sys.modules["__main__"] is main_module
    assert "constant" not in sys.modules and "tamper" not in sys.modules  # the script's own modules
    assert {k: v for k, v in sys.modules.items() if k == "acl" or k.startswith("acl.")} == keep_acl_modules


def test_two_in_process_runs_each_import_their_own_sibling(tmp_path, capsys, keep_acl_modules):
    emu.configure(product="910B", host_time="calls")
    for name in ("first", "second"):
        write(tmp_path / name / "constant.py", f"NAME = {name!r}\n")
        write(tmp_path / name / "main.py", "import acl\nfrom constant import NAME\nprint(NAME)\n")
        assert run_script(str(tmp_path / name / "main.py"), [], out=None) == 0
    assert capsys.readouterr().out.splitlines() == ["first", "second"]


def test_in_process_exception_returns_1_and_json_goes_to_stdout_alone(tmp_path, capsys, keep_acl_modules):
    emu.configure(product="910B", host_time="calls")
    script = write(tmp_path / "s.py", COPY + "print('chatter')\nraise KeyError('k')\n")
    assert main(["run", "--json", "--out", str(tmp_path / "out"), str(script)]) == 1
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["error"] == "KeyError: 'k'" and summary["calls"]["aclrtMemcpy"] == 1
    assert "chatter" in captured.err and "Traceback" in captured.err
    assert sys.stdout is not sys.stderr
