"""Numba is imported only when bytes first move: importing emu, `acl-emu --help` and timing-only runs never
import it; the first functional copy does, and moves the right bytes.  Each case runs in a fresh interpreter,
since this test process may have imported Numba already."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

JIT_MODULES = ("numba", "llvmlite")


def run_python(*args, code=None, timeout=240):
    """Run the interpreter in a fresh process from the repository root; the CompletedProcess."""
    argv = [sys.executable, *args] + (["-c", code] if code is not None else [])
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc


def last_json(proc):
    return json.loads(proc.stdout.strip().splitlines()[-1])


LOADED = "import json, sys; print(json.dumps({m: m in sys.modules for m in %r}))" % (JIT_MODULES,)


def test_import_emu_does_not_import_numba():
    proc = run_python(code="import emu, sys; print('numba' in sys.modules)")
    assert proc.stdout.strip() == "False"


def test_importing_every_public_module_does_not_import_numba():
    code = "import emu, emu.acl, emu.kernels, emu.runtime, emu.cli; " + LOADED
    assert last_json(run_python(code=code)) == {m: False for m in JIT_MODULES}


def test_cli_help_does_not_import_numba():
    # In process: run the CLI's __main__ as `python -m emu --help` would, then look at sys.modules.
    driver = ("import json, runpy, sys\n"
              "sys.argv = ['acl-emu', '--help']\n"
              "try:\n"
              "    runpy.run_module('emu', run_name='__main__', alter_sys=True)\n"
              "except SystemExit as e:\n"
              "    assert e.code in (0, None), e.code\n"
              + LOADED.replace("; ", "\n"))
    assert last_json(run_python(code=driver)) == {m: False for m in JIT_MODULES}
    # And the real command line: the import-time log names every module it imported.
    proc = run_python("-X", "importtime", "-m", "emu", "--help")
    assert "usage" in proc.stdout.lower()
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "emu.cli" in imported
    assert not {m for m in imported if m.split(".")[0] in JIT_MODULES}


TIMING_ONLY = """
import json, sys
import emu
emu.configure("910B", functional=False)
import emu.acl as acl
n = 1 << 20
rets = [acl.init(), acl.rt.set_device(0)]
dev, ret = acl.rt.malloc(n, 0); rets.append(ret)
host, ret = acl.rt.malloc_host(n); rets.append(ret)
rets.append(acl.rt.memcpy(dev, n, host, n, 1))   # host to device
rets.append(acl.rt.memcpy(host, n, dev, n, 2))   # device to host
rets.append(acl.rt.memset(dev, n, 7, n))
stream, ret = acl.rt.create_stream(); rets.append(ret)
rets.append(acl.rt.memcpy_async(dev, n, host, n, 1, stream))
rets.append(acl.rt.synchronize_stream(stream))
print(json.dumps({"rets": rets, "numba": "numba" in sys.modules}))
"""


def test_timing_only_run_does_not_import_numba():
    res = last_json(run_python(code=TIMING_ONLY))
    assert res["rets"] == [0] * len(res["rets"])
    assert res["numba"] is False


FUNCTIONAL = """
import json, sys
import numpy as np
import emu
emu.configure("910B")
import emu.acl as acl
NPY_UINT8 = 2
n = 3 * 4096 + 5
rets = [acl.init(), acl.rt.set_device(0)]
host_in, ret = acl.rt.malloc_host(n); rets.append(ret)
host_out, ret = acl.rt.malloc_host(n); rets.append(ret)
dev, ret = acl.rt.malloc(n, 0); rets.append(ret)
data = acl.util.ptr_to_numpy(host_in, (n,), NPY_UINT8)
data[:] = (np.arange(n) * 7 % 251).astype(np.uint8)
before = "numba" in sys.modules
rets.append(acl.rt.memcpy(dev, n, host_in, n, 1))      # host to device
rets.append(acl.rt.memcpy(host_out, n, dev, n, 2))     # device to host
out = acl.util.ptr_to_numpy(host_out, (n,), NPY_UINT8)
print(json.dumps({"rets": rets, "before": before, "after": "numba" in sys.modules,
                  "equal": bool(np.array_equal(out, data)), "nonzero": bool(out.any())}))
"""


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="JIT disabled")
def test_first_functional_copy_imports_numba_and_moves_the_bytes():
    res = last_json(run_python(code=FUNCTIONAL))
    assert res["rets"] == [0] * len(res["rets"])
    assert res["before"] is False
    assert res["after"] is True
    assert res["equal"] and res["nonzero"]


FIRST_CALLS_RACE = """
import json, sys, threading
import numpy as np
from emu import kernels
n = 100_003
src = (np.arange(n) % 253).astype(np.uint8)
outs = [np.zeros(n, np.uint8) for _ in range(6)]
go = threading.Barrier(len(outs))
def work(i):
    go.wait()
    if i % 3 == 0:
        kernels.copy(outs[i], src)
    elif i % 3 == 1:
        kernels.copy_2d(outs[i], 1000, src, 1000, 1000, n // 1000)
        kernels.copy(outs[i][-(n % 1000):], src[-(n % 1000):])
    else:
        kernels.fill(outs[i], 9)
threads = [threading.Thread(target=work, args=(i,)) for i in range(len(outs))]
for t in threads: t.start()
for t in threads: t.join()
ok = [bool(np.array_equal(o, src)) if i % 3 != 2 else bool((o == 9).all()) for i, o in enumerate(outs)]
print(json.dumps({"ok": ok, "overloads": {k: len(d.overloads) for k, d in kernels.KERNELS.items()}}))
"""


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="JIT disabled")
def test_threads_racing_to_the_first_call_all_get_compiled_kernels():
    res = last_json(run_python(code=FIRST_CALLS_RACE))
    assert all(res["ok"]), res
    assert res["overloads"] == {"copy": 1, "copy_2d": 1, "fill": 1}
