"""How the sanitizer names an aclrtLaunchCallback: by the program's own function, or where it has none to give, by
the program's call site, never by a function of the emulator's.

A pyACL script's callback is its own Python function: the report says `aclrtLaunchCallback (on_done)` (a closure
keeps its qualified name, `main.<locals>.on_done`). A C program's callback runs through a Python function of the
library (emu.capi), whose name means nothing to the program: the report says `aclrtLaunchCallback at cb.c:LINE in
main()`, the program's own call.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

# Destroys a stream whose blocking callback the host never waited for: one finding, whose first call is the
# aclrtLaunchCallback.
CB_C = r'''#include <pthread.h>
#include "acl/acl.h"

static aclrtContext context;
static volatile int stop = 0;

static void *reporter(void *arg)
{
    (void)arg;
    aclrtSetCurrentContext(context);
    while (!stop)
        (void)aclrtProcessReport(10);
    return NULL;
}

static void on_done(void *userData) { (void)userData; }

int main(void)
{
    pthread_t report;
    aclrtStream stream;
    if (aclInit(NULL) || aclrtSetDevice(0) || aclrtCreateContext(&context, 0))
        return 2;
    pthread_create(&report, NULL, reporter, NULL);
    aclrtCreateStream(&stream);
    aclrtSubscribeReport((uint64_t)report, stream);
    aclrtLaunchCallback(on_done, NULL, ACL_CALLBACK_BLOCK, stream); /* launch */
    aclrtDestroyStream(stream);
    stop = 1;
    pthread_join(report, NULL);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
'''

CB_PY = '''import threading
import acl

def main():
    acl.init(); acl.rt.set_device(0)
    context, _ = acl.rt.create_context(0)
    stream, _ = acl.rt.create_stream()
    stop = []

    def reporter():
        acl.rt.set_context(context)
        while not stop:
            acl.rt.process_report(10)

    def on_done(data):
        pass

    t = threading.Thread(target=reporter)
    t.start()
    acl.rt.subscribe_report(t.ident, stream)
    acl.rt.launch_callback(on_done, None, 1, stream)  # launch
    acl.rt.destroy_stream(stream)
    stop.append(1)
    t.join()

main()
'''


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env.pop("PYTHONPATH", None)
    return env


def _line(source: str, marker: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if marker in line)


def _sanitized(tmp_path, target: str) -> str:
    done = subprocess.run([sys.executable, "-m", "emu", "run", "--sanitize", "--host-time", "calls", "--out",
                           str(tmp_path), target], capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          timeout=300)
    assert done.returncode == 1, done.stderr
    assert "Stream destroyed with work the host has not waited for" in done.stderr, done.stderr
    return done.stderr


@pytest.mark.skipif(not shutil.which(os.environ.get("CC", "cc")) or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                    reason="needs a C compiler and a shared libpython")
def test_a_c_programs_callback_is_named_by_its_call_site_not_the_librarys_function(tmp_path):
    from emu.capi import commands

    (tmp_path / "cb.c").write_text(CB_C)
    assert commands.compile_command("cc", ["-g", str(tmp_path / "cb.c"), "-o", str(tmp_path / "cb"),
                                           "-lpthread"]) == 0
    err = _sanitized(tmp_path, "./cb")
    line = _line(CB_C, "/* launch */")
    assert f"Last queued: aclrtLaunchCallback at cb.c:{line} in main()" in err
    assert f"the host never waited for the aclrtLaunchCallback at cb.c:{line}" in err
    assert "<locals>" not in err and "_launch_callback" not in err and "handler" not in err


def test_a_scripts_callback_keeps_its_own_name(tmp_path):
    (tmp_path / "cb.py").write_text(CB_PY)
    err = _sanitized(tmp_path, "cb.py")
    assert f"Last queued: aclrtLaunchCallback (main.<locals>.on_done) at cb.py:{_line(CB_PY, '# launch')}" in err
