"""The command line's C side: `acl-emu cc` / `acl-emu c++` (compiler wrappers, as mpicc), `acl-emu config`
(pkg-config style flags and the toolkit variables), and `acl-emu run ./prog` for a native program.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from .. import capi, files
from ..device import rewrite
from . import build, session, toolkit

_COMPILE_ONLY = ("-c", "-E", "-S", "-M", "-MM", "-fsyntax-only")


def compile_command(language: str, argv: list[str]) -> int:
    """`acl-emu cc ARGS` / `acl-emu c++ ARGS`: the compiler ($CC / $CXX, else cc / c++) with every argument
    passed through, the emulator's include folder added, and (unless only compiling) its library and an rpath
    to it, so the program runs without LD_LIBRARY_PATH. --show prints the command instead of running it.
    `acl-emu c++` compiles kernel sources too (emu.device.rewrite.compile_args)."""
    if language != "c++":
        return _compile(language, argv)
    with tempfile.TemporaryDirectory(prefix="acl-emu-kernels-") as work:
        try:
            argv = rewrite.compile_args(argv, Path(work))
        except rewrite.NotEmulated as e:
            sys.stderr.write(f"acl-emu c++: error: {e}\n")
            return 1
        return _compile(language, argv)


def _compile(language: str, argv: list[str]) -> int:
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


class Ended(NamedTuple):
    """How the program ended, as waitpid tells it: it exited with `status` (0-255; `signal` None), or a signal
    killed it (`signal`; `status` None). An exit status of 129-255 is an exit like any other (a sample that
    returns an aclError from main exits with its low byte), never a signal."""
    status: int | None = None
    signal: int | None = None

    @classmethod
    def of(cls, returncode: int) -> "Ended":
        """From subprocess's returncode: -N when signal N killed the child, else its exit status."""
        return cls(signal=-returncode) if returncode < 0 else cls(status=returncode)

    @property
    def code(self) -> int:
        """`acl-emu run`'s own exit code for it: the program's exit status, or 128 + the signal, as a shell gives."""
        return self.status if self.signal is None else 128 + self.signal

    @property
    def signal_name(self) -> str | None:
        """The signal's name ("SIGSEGV"; "signal N" for a number Python does not name); None for an exit."""
        if self.signal is None:
            return None
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"


class Status(NamedTuple):
    """What the program's library told the run on the status socket (emu.capi.session): whether it made an ACL
    call, why its summary was not written (None: no such trouble), and the call a fault killed it in with what
    the call touched (None: no such fault)."""
    started: bool = False
    unwritten: str | None = None
    crash: tuple[str, str] | None = None


def run_native(program: str, args: list[str], spec: dict, as_json: bool) -> tuple[Ended, dict | None, Status]:
    """Run `program args` on the emulator: its library configured from `spec` (session.settings), its
    standard output on our stderr when `as_json`. Returns (how it ended: its exit status or the signal that
    killed it; the run's summary from the library, None when the program made no ACL call, died before its exit
    or could not write it; what the library told the run)."""
    root = toolkit.tree()
    with tempfile.TemporaryDirectory(prefix="acl-emu-run-", ignore_cleanup_errors=True) as tmp:
        result_path = Path(tmp) / "result.json"
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        with ours, theirs:
            env = dict(os.environ)
            status = {"fd": theirs.fileno(), "ino": os.fstat(theirs.fileno()).st_ino}
            env[session.ENV] = json.dumps({**spec, "result": str(result_path), "status": status})
            env["LD_LIBRARY_PATH"] = toolkit.library_path(root, env.get("LD_LIBRARY_PATH", ""))
            command = [program if os.sep in program else os.path.join(".", program), *args]
            child = subprocess.Popen(command, env=env, stdout=sys.stderr.fileno() if as_json else None,
                                     pass_fds=(theirs.fileno(),))
            theirs.close()
            ended = _wait(child)
            told = _told(ours)
        try:
            result = json.loads(files.read_text(result_path, files.TABLE_BYTES, "a run's summary"))
        except (OSError, ValueError):
            result = None
    return ended, result, told


def _told(sock: socket.socket) -> Status:
    """The lines the library sent, read without waiting (a child the program forked may hold its end open)."""
    sock.setblocking(False)
    started, unwritten, crash = False, None, None
    while True:
        try:
            line = sock.recv(8192).decode("utf-8", "replace")
        except (BlockingIOError, OSError):
            break
        kind, _, rest = line.partition("\t")
        if kind == "started":
            started = True
        elif kind == "unwritten":
            unwritten = rest
        elif kind == "crash":
            api, _, what = rest.partition("\t")
            crash = (api, what)
    return Status(started or crash is not None or unwritten is not None, unwritten, crash)


# SIGINT sent to `acl-emu run` by a process (kill, timeout, a CI runner) waits this long for the program to end
# on its own before it is passed on: sent to the whole process group (kill -INT -PGID), the program got its own
# and a second one would run its handler twice; sent to `acl-emu run` alone, the program ends this much later.
SIGINT_GRACE_S = 0.2
_SI_KERNEL = 0x80  # si_code of a signal the kernel sent: a terminal's Ctrl-C, sent to the whole foreground group


def _wait(child: subprocess.Popen) -> Ended:
    """How the child ended: its exit status, or the signal that killed it (waitpid tells the two apart; an exit
    status of 129-255 is no signal). SIGTERM sent to `acl-emu run` is passed on to it.
    SIGINT is passed on too, unless it came from the terminal (Ctrl-C signals the whole foreground group: the
    program has its own), or the program ends within SIGINT_GRACE_S (the sender signalled the whole group)."""
    def forward(signum, frame):  # (a signal that comes before `_sorted_wait` blocks it, or where it cannot)
        child.send_signal(signum)

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, forward),
                signal.SIGTERM: signal.signal(signal.SIGTERM, forward)}
    try:
        code = _sorted_wait(child) if hasattr(signal, "sigtimedwait") else child.wait()  # (macOS: no siginfo)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return Ended.of(code)


def _sorted_wait(child: subprocess.Popen) -> int:
    """Wait for the child, SIGINT, SIGTERM and SIGCHLD blocked and taken with what sent them (sigtimedwait):
    SIGTERM passed on at once, SIGINT as `_wait` says. The child's returncode."""
    watched = {signal.SIGINT, signal.SIGTERM, signal.SIGCHLD}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, watched)  # (after the child started: masks are inherited)
    try:
        interrupt_at = None
        while child.poll() is None:
            wait = 1.0 if interrupt_at is None else max(0.0, interrupt_at - time.monotonic())
            info = signal.sigtimedwait(watched, wait)
            if interrupt_at is not None and time.monotonic() >= interrupt_at:
                interrupt_at = None
                if child.poll() is None:
                    child.send_signal(signal.SIGINT)
            if info is None or info.si_signo == signal.SIGCHLD:
                continue
            if info.si_signo == signal.SIGTERM:
                child.send_signal(signal.SIGTERM)
            elif info.si_code != _SI_KERNEL and interrupt_at is None:
                interrupt_at = time.monotonic() + SIGINT_GRACE_S
        return child.returncode
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
