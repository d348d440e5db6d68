"""`python -m emu run` / `acl-emu run`: unchanged pyACL scripts under the emulator."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""\
    import acl
    import sys

    ACL_MEMCPY_HOST_TO_DEVICE = 1
    ACL_MEMCPY_DEVICE_TO_HOST = 2

    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    count, ret = acl.rt.get_device_count()
    print("devices", count, ret)
    payload = " ".join(sys.argv[1:]).encode() or b"empty"
    n = len(payload)
    dev, ret = acl.rt.malloc(n, 0)
    assert ret == 0
    ret = acl.rt.memcpy(dev, n, acl.util.bytes_to_ptr(payload), n, ACL_MEMCPY_HOST_TO_DEVICE)
    assert ret == 0
    out = bytes(n)
    ret = acl.rt.memcpy(acl.util.bytes_to_ptr(out), n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST)
    assert ret == 0
    print("argv", sys.argv[1:])
    print("bytes", out)
    assert acl.rt.free(dev) == 0
    assert acl.rt.reset_device(0) == 0
    assert acl.finalize() == 0
    if "--exit" in sys.argv:
        sys.exit(int(sys.argv[sys.argv.index("--exit") + 1]))
    """)


def _env():
    env = dict(os.environ)
    env.pop("ACL_EMU_PRODUCT", None)
    env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
    return env


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "emu", "run", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=_env())


@pytest.fixture
def script(tmp_path) -> Path:
    p = tmp_path / "copy_script.py"
    p.write_text(SCRIPT)
    return p


def test_run_script_with_import_acl_passes_argv_and_exits_0(script, tmp_path):
    res = run(str(script), "hello", "npu", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "devices 8 0" in lines  # default product 910B
    assert "argv ['hello', 'npu']" in lines
    assert "bytes b'hello npu'" in lines


def test_run_propagates_the_scripts_exit_code(script, tmp_path):
    res = run(str(script), "x", "--exit", "3", cwd=tmp_path)
    assert res.returncode == 3, res.stderr
    assert "bytes b'x --exit 3'" in res.stdout.splitlines()


def test_run_script_failure_is_a_nonzero_exit(tmp_path):
    p = tmp_path / "boom.py"
    p.write_text("import acl\nraise RuntimeError('boom')\n")
    res = run(str(p), cwd=tmp_path)
    assert res.returncode != 0
    assert "boom" in res.stderr


def test_run_with_product_A3(script, tmp_path):
    res = run("--product", "A3", str(script), "a3", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "devices 16 0" in res.stdout.splitlines()
    assert "bytes b'a3'" in res.stdout.splitlines()


def test_run_without_script_runs_the_bundled_example(tmp_path):
    res = run(cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "run success!" in res.stdout
    assert "after synchronize:  output equals input: True" in res.stdout


def test_acl_emu_console_script_is_installed():
    bindir = Path(sys.executable).parent
    exe = shutil.which("acl-emu", path=str(bindir)) or shutil.which("acl-emu")
    assert exe is not None
    res = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60, env=_env())
    assert res.returncode == 0
    assert "run" in res.stdout
