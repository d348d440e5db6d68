"""A C program's run on the emulator: set up at its first ACL call, summarised at its exit.

`acl-emu run ./prog` passes its options in the environment ($ACL_EMU_NATIVE_RUN, JSON: `settings`); the
program's library configures the runtime from them (as `acl-emu run script.py` does for a script) and, when
the program exits, writes the summary, the trace, the msprof timeline and the sanitizer's findings, and
leaves the summary as JSON where `acl-emu run` reads it to print. A program started without `acl-emu run`
runs on the product of $ACL_EMU_PRODUCT (default 910B), functional, and writes nothing at its exit.

Either way the runtime takes the program's own memory as pageable host memory at its real addresses, and
threads Python does not know yet as the program's.

Under `acl-emu run` the library also tells the run what the summary cannot: on a datagram socket the run made
(`status_fd`), "started" at the first ACL call, "unwritten<TAB>why" when the summary was not written, and
(from native.c's fault handler) "crash<TAB>call<TAB>what" when the program dies of a fault inside an ACL call.

Only the process whose first ACL call started the library writes the run's files and status: a child it forked
(fork() without exec) that makes ACL calls has a working runtime of its own (the parent's state at the fork) but
writes nothing at its exit, neither the parent's summary, trace and msprof timeline nor files of its own, and
prints nothing (`finish`). A program executed later by one of them (exec) is configured as the run asked but
writes nothing either: it has no status socket.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import stat
import sys
import threading
from pathlib import Path

from ..sanitize import sites as sanitize_sites
from . import sites as c_sites

ENV = "ACL_EMU_NATIVE_RUN"
# Wall seconds a run stopped by SIGTERM or SIGINT waits for its summary to be written (the runtime may be inside a
# call of another thread): a summary takes far less; a program stuck inside a call is not waited for forever.
STOP_WAIT_S = 10.0
_started: dict = {}
_finishing = threading.Lock()


def settings() -> dict | None:
    """What `acl-emu run` asked for: product, host_time, host_time_scale, sanitize, out, msprof, result (the
    path of the summary JSON), program, status ({"fd", "ino"}: the status socket); None when the program was not
    started by it."""
    text = os.environ.get(ENV)
    if not text:
        return None
    try:
        spec = json.loads(text)
    except ValueError:
        print(f"acl-emu: ${ENV} is not JSON; running with the defaults", file=sys.stderr)
        return None
    return spec if isinstance(spec, dict) else None


def start() -> None:
    """Configure the runtime for the program (once)."""
    if _started:
        return
    import emu

    spec = settings()
    _started["spec"] = spec
    _started["pid"] = os.getpid()
    if spec is not None:  # what `acl-emu run` resolved: the product's path, the host time, the checks
        _started["status"] = _status_socket(spec.get("status"))
        # The run's files are written by the process `acl-emu run` started (through a wrapper script, say), which
        # has its status socket; not by a program it executed later, which has not (the socket is not inherited).
        _started["writes"] = "status" not in spec or _started["status"] is not None
        emu.configure(product=spec.get("product"), host_time=spec.get("host_time"),
                      host_time_scale=spec.get("host_time_scale"), sanitize=spec.get("sanitize"))
        tell("started")
    rt = emu.current()
    rt.space.adopt_raw_host = True  # the program's own memory is pageable host memory at its addresses
    rt.foreign_threads = True  # its pthreads are Python's from their first call
    sanitize_sites.foreign = c_sites.site  # the sanitizer's reports name the program's file:line


def _status_socket(given) -> socket.socket | None:
    """The status socket `acl-emu run` passed (its fd, checked to be that socket by its inode: a program may have
    closed it and opened a file of its own under the same number), kept from the programs it executes."""
    try:
        fd, ino = int(given["fd"]), int(given["ino"])
        found = os.fstat(fd)
    except (TypeError, KeyError, ValueError, OSError):
        return None
    if not stat.S_ISSOCK(found.st_mode) or found.st_ino != ino:
        return None
    os.set_inheritable(fd, False)
    return socket.socket(fileno=fd)


def status_fd() -> int:
    """The status socket's fd, for native.c's fault handler; -1 without `acl-emu run` (or its socket)."""
    sock = _started.get("status")
    return sock.fileno() if sock is not None else -1


def tell(line: str) -> bool:
    """One line to `acl-emu run` on the status socket, by the process that started the library only; never
    blocks, never raises (the run may be gone). Whether it was sent."""
    sock = _started.get("status")
    if sock is None or os.getpid() != _started.get("pid"):
        return False
    try:
        sock.send(line.encode("utf-8", "replace")[:4000], socket.MSG_NOSIGNAL | socket.MSG_DONTWAIT)
    except OSError:
        return False
    return True


def finish(signum: int = 0) -> None:
    """The run's results, when `acl-emu run` started the program: at its exit (signum 0) or, from the library's
    stop thread, once SIGTERM or SIGINT came (signum), whichever comes first; once. A forked child writes nothing.
    A file that cannot be written is one line: in the summary (`acl-emu run` prints it) or, for the summary itself,
    on stderr and to the run; it never changes the program's exit."""
    with _finishing:
        if _started.get("finished") or _started.get("pid") != os.getpid():
            return
        _started["finished"] = True
        spec = _started.get("spec")
        if spec is None or not _started.get("writes"):
            return
        if not signum:
            _write(spec)
            return
        # Stopped: the program's other threads run on meanwhile, and one may be inside a call that does not end;
        # the files are written by a thread of their own, waited for STOP_WAIT_S at most.
        writer = threading.Thread(target=_write, args=(spec,), name="acl-emu-summary", daemon=True)
        writer.start()
        writer.join(STOP_WAIT_S)
        if writer.is_alive():
            _unwritten(f"it was not written within {STOP_WAIT_S:g} s of {_signal_name(signum)} (a call of the "
                       f"program's held the runtime)")


def _write(spec: dict) -> None:
    """The run's summary (and what it writes: the trace, the msprof timeline) where `acl-emu run` reads it."""
    import emu
    from ..studies.runsummary import run_result

    rt = emu.current()
    out = spec.get("out")
    result = run_result(rt, Path(out) if out else None, spec.get("program"), msprof=spec.get("msprof"))
    if rt.sanitizer is not None:  # (the report as text: `acl-emu run` prints it, with no sanitizer of its own)
        result["sanitizer_report"] = rt.sanitizer.report()
        result["sanitizer_findings"] = len(rt.sanitizer.findings)
    if spec.get("result"):
        from emu.models.atomic import atomic_write
        try:
            with atomic_write(spec["result"]) as f:
                json.dump(result, f)
        except OSError as e:
            _unwritten(f"it could not be written to {spec['result']}: {_os_error(e)}")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _unwritten(why: str) -> None:
    """The run's summary is lost, `why` ("it could not be written to PATH: the reason"): `acl-emu run` is told,
    and says so; without it (or when it is gone), one line on the program's stderr."""
    if not tell(f"unwritten\t{why}"):
        print(f"acl-emu: no summary of the run: {why}", file=sys.stderr, flush=True)


def _os_error(e: OSError) -> str:
    return e.strerror or str(e)
