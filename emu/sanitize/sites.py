"""Where in the user's code an API call was made: the first frame outside the emulator.

The stack of an ACL call runs user code -> the pyACL facade (emu/acl) -> the runtime (emu/runtime) -> a
sanitizer hook. Walking up from the hook, the first frame whose file is not the emulator's own (emu/, the
timing model, the Python runtime's plumbing) is the user's line. emu/examples are user scripts: their frames
count as the user's. Each file's verdict is cached, so a walk costs a few dictionary lookups per frame.
"""
from __future__ import annotations

import os
import sys

import simpy as _simpy

from emu import models as _models

_EMU = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../emu
_MODELS = os.path.dirname(os.path.abspath(_models.__file__))  # the timing model (models/, installed as emu.models)
_SIMPY = os.path.dirname(os.path.abspath(_simpy.__file__))  # the timing model's event loop
_INTERNAL_DIRS = (os.path.join(_EMU, ""), os.path.join(_MODELS, ""), os.path.join(_SIMPY, ""))
_USER_DIRS = (os.path.join(_EMU, "examples", ""),)
_PLUMBING = ("<frozen runpy>", "<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")

_verdicts: dict[str, bool] = {}
_interned: dict[tuple, tuple] = {}

UNKNOWN = ("<unknown>", 0, "")

# Where a C program made the current call, when one runs on the emulator (emu.capi.session sets it to
# emu.capi.sites.site): the Python stack of its calls holds no frame of the program's.
foreign = None


def _internal(filename: str) -> bool:
    verdict = _verdicts.get(filename)
    if verdict is None:
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        verdict = (path in _PLUMBING or (path.startswith(_INTERNAL_DIRS) and not path.startswith(_USER_DIRS))
                   or os.path.basename(path) in ("functools.py", "threading.py", "contextlib.py"))
        _verdicts[filename] = verdict
    return verdict


def user_site(depth: int = 2) -> tuple[str, int, str]:
    """(file, line, function) of the innermost frame of user code calling the emulator."""
    f = sys._getframe(depth)
    while f is not None:
        code = f.f_code
        if not _internal(code.co_filename):
            key = (code.co_filename, f.f_lineno, code.co_name)
            return _interned.setdefault(key, key)
        f = f.f_back
    site = foreign() if foreign is not None else None
    return UNKNOWN if site is None else _interned.setdefault(site, site)


def helper_name(depth: int = 2) -> str | None:
    """The pyACL helper (acl.util.<name>) on the stack, if the call came through one."""
    f = sys._getframe(depth)
    util = os.path.join(_EMU, "acl", "util.py")
    name = None
    while f is not None and _internal(f.f_code.co_filename):
        if f.f_code.co_filename == util and f.f_code.co_name in ("ptr_to_numpy", "ptr_to_bytes"):
            name = f"acl.util.{f.f_code.co_name}"
        f = f.f_back
    return name


def short(site: tuple[str, int, str]) -> str:
    """file:line, the file relative to the working directory when it is under it."""
    path, line, _ = site
    if path.startswith("<"):
        return f"{path}:{line}"
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    return f"{rel if not rel.startswith('..') else path}:{line}"


_CORE = os.path.join(_EMU, "runtime", "core.py")


def current_api(depth: int = 2) -> str | None:
    """The ACL API being called (the innermost `core.api` wrapper on the stack), if any."""
    f = sys._getframe(depth)
    while f is not None:
        code = f.f_code
        if code.co_name == "call" and code.co_filename == _CORE and "name" in code.co_freevars:
            return f.f_locals.get("name")
        f = f.f_back
    return None
