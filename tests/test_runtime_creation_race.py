"""The process runtime is created once, however many threads make the first ACL call at the same time.

Each check runs in a fresh interpreter, so no runtime exists before the threads start.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent("""
    import json, threading, time
    import emu.runtime as runtime
    import emu.acl as acl

    built = []
    init = runtime.Runtime.__init__

    def slow_init(self, *args, **kwargs):  # widen the window in which a second thread could build another
        built.append(threading.get_ident())
        time.sleep(0.05)
        init(self, *args, **kwargs)

    runtime.Runtime.__init__ = slow_init
    N = 8
    start = threading.Barrier(N)
    results = [None] * N

    def worker(i):
        start.wait()
        ret = acl.rt.set_device(0)  # the first call of the process, from every thread at once
        ptr, ret_malloc = acl.rt.malloc(4096, 0)
        ret_free = acl.rt.free(ptr) if ret_malloc == 0 else None
        results[i] = [ret, ret_malloc, ret_free, id(runtime.current())]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(N)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"built": len(built), "results": results}))
""")


def _fresh_process(script: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ACL_EMU_PRODUCT", "ASCEND_RT_VISIBLE_DEVICES")}
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_eight_threads_making_the_first_call_at_once_share_one_runtime():
    got = _fresh_process(SCRIPT)
    assert got["built"] == 1
    assert [r[:3] for r in got["results"]] == [[0, 0, 0]] * 8  # no thread sees 107002 afterwards
    assert len({r[3] for r in got["results"]}) == 1


def test_eight_threads_asking_for_the_runtime_at_once_get_the_same_one():
    script = SCRIPT.replace("ret = acl.rt.set_device(0)", "runtime.current(); ret = acl.rt.set_device(0)")
    got = _fresh_process(script)
    assert got["built"] == 1
    assert len({r[3] for r in got["results"]}) == 1


def test_configure_after_first_use_still_replaces_the_runtime():
    script = textwrap.dedent("""
        import emu.runtime as runtime
        first = runtime.current()
        again = runtime.current()
        second = runtime.configure("A3")
        assert first is again and second is not first and runtime.current() is second
        print("{}")
    """)
    assert _fresh_process(script) == {}
