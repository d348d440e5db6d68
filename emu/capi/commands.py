"""The command line's C side: `acl-emu cc` / `acl-emu c++` (compiler wrappers, as mpicc), `acl-emu config`
(pkg-config style flags and the toolkit variables), and `acl-emu run ./prog` for a native program.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import capi, files
from . import build, session, toolkit

_COMPILE_ONLY = ("-c", "-E", "-S", "-M", "-MM", "-fsyntax-only")


def compile_command(language: str, argv: list[str]) -> int:
    """`acl-emu cc ARGS` / `acl-emu c++ ARGS`: the compiler ($CC / $CXX, else cc / c++) with every argument
    passed through, the emulator's include folder added, and (unless only compiling) its library and an rpath
    to it, so the program runs without LD_LIBRARY_PATH. --show prints the command instead of running it."""
    show = "--show" in argv
    argv = [a for a in argv if a != "--show"]
    variable = "CXX" if language == "c++" else "CC"
    compiler = shlex.split(os.environ.get(variable) or language)
    try:
        command = [*compiler, *capi.cflags(), *argv]
        if argv and not any(a in _COMPILE_ONLY for a in argv):
            command += capi.libs()
    except build.BuildError as e:
        sys.stderr.write(f"acl-emu {language}: error: {e}\n")
        return 2
    if show:
        print(shlex.join(command))
        return 0
    try:
        return subprocess.call(command)
    except FileNotFoundError:
        sys.stderr.write(f"acl-emu {language}: error: no compiler {compiler[0]!r} (install it, or set {variable})\n")
        return 2


def config_command(cflags: bool, libs: bool, env: bool, prefix: bool) -> int:
    """`acl-emu config`: --cflags and --libs as pkg-config prints them (on one line), --env the `export`
    lines of the toolkit variables Ascend's build files read (`eval "$(acl-emu config --env)"`), --prefix
    the toolkit folder. With no option: all of it, explained."""
    try:
        root = toolkit.tree()
        where = build.library_dir()
    except build.BuildError as e:
        sys.stderr.write(f"acl-emu config: error: {e}\n")
        return 2
    flags = {"cflags": capi.cflags(), "libs": capi.libs(where)}
    if not (cflags or libs or env or prefix):
        print(f"# C and C++ programs on acl-emu: headers {build.INCLUDE}, library {where / build.LIBRARY}\n"
              f"# compile: acl-emu cc prog.c -o prog  (or: cc prog.c $(acl-emu config --cflags --libs))\n"
              f"# CMake samples: eval \"$(acl-emu config --env)\", then build them as their README says\n"
              f"# --cflags: {shlex.join(flags['cflags'])}\n# --libs: {shlex.join(flags['libs'])}\n"
              f"# --prefix: {root}\n# --env:")
        print(toolkit.shell_lines(root), end="")
        return 0
    words = (flags["cflags"] if cflags else []) + (flags["libs"] if libs else [])
    if words:
        print(shlex.join(words))
    if prefix:
        print(root)
    if env:
        print(toolkit.shell_lines(root), end="")
    return 0


def is_native(path: str) -> bool:
    """Whether `path` is a program to execute rather than a Python script: an ELF file, or an executable
    file whose #! line names no Python."""
    try:
        head = files.head(path, 128)
    except files.FileRefused:  # missing, a FIFO, a device, a directory: no program
        return False
    if head.startswith(b"\x7fELF"):
        return True
    if head.startswith(b"#!") and os.access(path, os.X_OK):
        return b"python" not in head.split(b"\n", 1)[0]
    return False


def run_native(program: str, args: list[str], spec: dict, as_json: bool) -> tuple[int, dict | None]:
    """Run `program args` on the emulator: its library configured from `spec` (session.settings), its
    standard output on our stderr when `as_json`. Returns (its exit code, 128 + the signal when one ended it;
    the run's summary from the library, None when the program made no ACL call or died before its exit)."""
    root = toolkit.tree()
    with tempfile.TemporaryDirectory(prefix="acl-emu-run-") as tmp:
        result_path = Path(tmp) / "result.json"
        env = dict(os.environ)
        env[session.ENV] = json.dumps({**spec, "result": str(result_path)})
        env["LD_LIBRARY_PATH"] = toolkit.library_path(root, env.get("LD_LIBRARY_PATH", ""))
        command = [program if os.sep in program else os.path.join(".", program), *args]
        code = _wait(subprocess.Popen(command, env=env, stdout=sys.stderr.fileno() if as_json else None))
        try:
            result = json.loads(files.read_text(result_path, files.TABLE_BYTES, "a run's summary"))
        except (OSError, ValueError):
            result = None
    return code, result


def _wait(child: subprocess.Popen) -> int:
    """The child's exit code. SIGTERM is passed on to it; SIGINT is not, as a terminal's Ctrl-C reaches the
    child already (one process group) and a second one would interrupt its handler."""
    def forward(signum, frame):
        child.send_signal(signum)

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.SIG_IGN),
                signal.SIGTERM: signal.signal(signal.SIGTERM, forward)}
    try:
        code = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 128 - code if code < 0 else code
