"""`acl-emu run ./prog`: how a C program ended, an exit status or a death by signal, as waitpid tells them apart.

Rule (POSIX <sys/wait.h>, waitpid: WIFEXITED / WEXITSTATUS against WIFSIGNALED / WTERMSIG; Python's
subprocess gives the first as returncode >= 0 and the second as -N): an exit status is 0-255 and is never a
signal, whatever its value. Samples `return` an aclError from main, so a program exits with the error's low
byte (507033 & 0xFF = 153, 100000 & 0xFF = 160): 129-159 used to be reported as signals, and 160-255 crashed
the summary. A program killed by a signal is reported as that signal, and `acl-emu run` exits 128 + the signal
as a shell does (emu/capi/commands.py Ended, _wait; emu/cli.py _run_native).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from emu.capi import commands

CC = shutil.which(os.environ.get("CC", "cc"))
needs_cc = pytest.mark.skipif(not CC or not sysconfig.get_config_var("Py_ENABLE_SHARED"),
                              reason="needs a C compiler and a shared libpython")

PROGRAM = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "acl/acl.h"
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    aclInit(NULL);
    aclrtSetDevice(0);
    if (strcmp(argv[1], "exit") == 0)
        return atoi(argv[2]);
    if (strcmp(argv[1], "segv") == 0) {
        volatile int *nowhere = (volatile int *)(uintptr_t)16;
        return *nowhere;
    }
    raise(atoi(argv[2]));
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("exits")
    src = folder / "ends.c"
    src.write_text(PROGRAM.replace("#include <stdlib.h>", "#include <stdlib.h>\n#include <stdint.h>"))
    assert commands.compile_command("cc", [str(src), "-o", str(folder / "ends")]) == 0
    return folder / "ends"


def _run(program: Path, *args: str, as_json: bool = True) -> tuple[subprocess.CompletedProcess, dict | None]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    done = subprocess.run([sys.executable, "-m", "emu", "run", *(["--json"] if as_json else []), "--host-time",
                           "calls", "--out", str(program.parent / "out"), str(program), *args], capture_output=True,
                          text=True, timeout=180, env=env, cwd=program.parent)
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(done.stdout) if as_json else None


@pytest.mark.parametrize("returncode,status,sig", [(0, 0, None), (1, 1, None), (160, 160, None), (-11, None, 11),
                                                   (-9, None, 9)])
def test_ended_tells_an_exit_from_a_signal(returncode, status, sig):
    """waitpid's two outcomes as subprocess gives them: returncode >= 0 is WEXITSTATUS, -N is WTERMSIG N."""
    ended = commands.Ended.of(returncode)
    assert (ended.status, ended.signal) == (status, sig)
    assert ended.code == (status if sig is None else 128 + sig)
    assert ended.signal_name == (None if sig is None else signal.Signals(sig).name)


def test_a_signal_python_does_not_name_is_said_by_number():
    """A real-time signal (SIGRTMIN + n) has no name in Python's Signals: it is "signal N", not a ValueError."""
    unnamed = next(n for n in range(1, 65) if n not in {s.value for s in signal.Signals})
    assert commands.Ended(signal=unnamed).signal_name == f"signal {unnamed}"


@needs_cc
@pytest.mark.parametrize("status", [0, 1, 129, 143, 160, 255])
def test_an_exit_status_is_an_exit_whatever_its_value(program, status):
    """WIFEXITED: exit statuses 0, 1, 129, 143, 160 and 255 are exits: the summary is written, says the program
    exited with that code (or nothing for 0), names no signal, and `acl-emu run` exits with the same status."""
    done, result = _run(program, "exit", str(status))
    assert done.returncode == status
    assert result["exit_code"] == status and result["signal"] is None and result["error"] is None
    assert result["calls"]["aclrtSetDevice"] == 1  # the summary was written


@needs_cc
@pytest.mark.parametrize("status", [143, 160])
def test_the_summary_says_exited_with_code(program, status):
    """The summary's last line for an exit status a signal number could be mistaken for (128 + SIGTERM; 160, past
    every signal Python names): "the program exited with code N", no signal."""
    done, _ = _run(program, "exit", str(status), as_json=False)
    assert done.returncode == status
    assert f"the program exited with code {status}" in done.stderr
    assert "signal" not in done.stderr


@needs_cc
@pytest.mark.parametrize("how,sig", [("segv", signal.SIGSEGV), ("raise", signal.SIGTERM),
                                     ("raise", signal.SIGKILL)])
def test_a_death_by_signal_is_that_signal(program, how, sig):
    """WIFSIGNALED: a program killed by SIGSEGV (a fault), SIGTERM or SIGKILL is reported as that signal, and
    `acl-emu run` exits 128 + the signal. SIGTERM leaves the summary (the library writes it before the program
    dies of it: native.c on_stop); SIGSEGV outside an ACL call and SIGKILL leave none, and the reason says which
    signal."""
    done, result = _run(program, how, str(int(sig)))
    assert done.returncode == 128 + sig
    assert result["exit_code"] == 128 + sig and result["signal"] == sig.name
    if sig == signal.SIGTERM:
        assert result["calls"]["aclrtSetDevice"] == 1 and result["error"] == "signal SIGTERM"
        text, _ = _run(program, how, str(int(sig)), as_json=False)
        assert text.returncode == 128 + sig
        assert "the program ended by signal SIGTERM (exit code 143)" in text.stderr
    else:
        assert result["summary"] is False and result["error"].startswith(f"it ended by signal {sig.name}")
