"""Where in a C program an ACL call was made: file:line from the return address, for the sanitizer's reports.

Each exported function records its return address (native.c, `acl_emu_last_caller`). `site()` maps it to
(file, line, function) with dladdr (which object, where it is loaded) and addr2line (the program's debug
information; one addr2line process per object, answering on a pipe, each address asked once). A program
built without -g gives its function name, or the object and offset.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading

_lock = threading.Lock()
_cache: dict[int, tuple[str, int, str]] = {}
_readers: dict[str, subprocess.Popen | None] = {}


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p), ("dli_sname", ctypes.c_char_p),
                ("dli_saddr", ctypes.c_void_p)]


def _last_caller():
    try:
        fn = ctypes.CDLL(None).acl_emu_last_caller
    except (AttributeError, OSError):
        return None
    fn.restype = ctypes.c_void_p
    return fn


_caller = None
_dladdr = None


def _forked() -> None:
    """In a forked child: a lock of its own, and addr2line processes of its own (the parent's pipes stay the
    parent's; a thread the child does not have may have held the lock)."""
    global _lock
    _lock = threading.Lock()
    _readers.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def site() -> tuple[str, int, str] | None:
    """(file, line, function) of the C call this thread is making, None outside a C program."""
    global _caller, _dladdr
    if _caller is None:
        with _lock:  # (set up once; _dladdr before _caller, which the test above reads)
            if _caller is None:
                dladdr = ctypes.CDLL(None).dladdr
                dladdr.argtypes = (ctypes.c_void_p, ctypes.POINTER(_DlInfo))
                _dladdr = dladdr
                _caller = _last_caller() or (lambda: None)
    address = _caller()
    if not address:
        return None
    found = _cache.get(address)
    if found is None:
        with _lock:
            found = _cache.setdefault(address, _resolve(address - 1))  # -1: inside the call instruction
    return found


def _resolve(address: int) -> tuple[str, int, str]:
    info = _DlInfo()
    if not _dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return ("<native>", 0, f"0x{address:x}")
    obj = os.fsdecode(info.dli_fname) or "/proc/self/exe"
    base = info.dli_fbase or 0
    symbol = info.dli_sname.decode(errors="replace") if info.dli_sname else None
    offset = address - base if _is_relocatable(obj) else address
    answer = _addr2line(obj, offset)
    if answer is None or answer[0] == "??":
        return (os.path.basename(obj), 0, symbol or f"+0x{offset:x}")
    file, line, function = answer
    return (file, line, function if function != "??" else (symbol or f"+0x{offset:x}"))


def _is_relocatable(obj: str) -> bool:
    """Whether the ELF file is position-independent (a shared object or a PIE): addresses are offsets."""
    try:
        with open(obj, "rb") as f:
            head = f.read(18)
    except OSError:
        return True
    return len(head) < 18 or int.from_bytes(head[16:18], "little") != 2  # e_type ET_EXEC = 2


def _addr2line(obj: str, offset: int) -> tuple[str, int, str] | None:
    reader = _readers.get(obj, False)
    if reader is False:
        tool = shutil.which("addr2line")
        reader = subprocess.Popen([tool, "-f", "-C", "-e", obj], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True) if tool else None
        _readers[obj] = reader
    if reader is None:
        return None
    try:
        reader.stdin.write(f"0x{offset:x}\n")
        reader.stdin.flush()
        function = reader.stdout.readline().strip()
        where = reader.stdout.readline().strip()
    except (OSError, ValueError):
        _readers[obj] = None
        return None
    file, _, line = where.partition(":")
    line = line.split()[0] if line else "0"
    return (file, int(line) if line.isdigit() else 0, function)
