"""pyACL-compatible facade: `import emu.acl as acl` (or `emu.install()` and `import acl`).

Same module tree, names, argument order and return convention as pyACL:
ints in, a return code (or `(outputs..., ret)`) out. What the emulator does not
provide raises AttributeError saying so.
"""
from __future__ import annotations

import types

from .. import runtime as _rt
from ..errors import AclError, recent_error as _recent_error
from . import mdl, media, rt, util
from ._bind import bind as _bind, install_missing as _install_missing

init = _bind("acl.init", _rt.init, "s", optional=1)
finalize = _bind("acl.finalize", _rt.finalize)


def get_soc_name(*args) -> str | None:
    """name = acl.get_soc_name(): the SoC name (aclrtGetSocName), None if it cannot be had."""
    if args:
        raise TypeError("acl.get_soc_name args parse failed")
    try:
        return _rt.get_soc_name()
    except AclError:
        return None


def get_recent_err_msg(*args) -> str | None:
    """The message of the last failed ACL call on this thread (None if none failed)."""
    if args:
        raise TypeError("acl.get_recent_err_msg args parse failed")
    return _recent_error()


def _empty(name: str) -> types.ModuleType:
    mod = types.ModuleType(f"{__name__}.{name}", f"acl.{name}: not emulated by acl-emu.")
    mod.__getattr__ = lambda attr: (_ for _ in ()).throw(
        AttributeError(f"acl.{name}.{attr} is not emulated by acl-emu"))
    return mod


op = _empty("op")

__all__ = ["init", "finalize", "get_soc_name", "get_recent_err_msg", "rt", "util", "media", "mdl", "op"]

_install_missing(__name__)
