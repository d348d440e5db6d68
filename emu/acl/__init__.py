"""pyACL-compatible facade: `import emu.acl as acl` (or `emu.install()` and `import acl`).

Same module tree, names, argument order and return convention as pyACL:
ints in, a return code (or `(outputs..., ret)`) out. What the emulator does not
provide raises AttributeError saying so.

`init`, `finalize` and the data-buffer functions come from their APIs' declarations (`@api(..., pyacl="acl.init",
...)` in emu/runtime/devices.py and inference.py, `emu.runtime.APIS`), bound by `declared(__name__)` (or, for the
C functions that return a value and no code, `emu.acl._bind.value_entry`); `get_soc_name` is declared `by_hand`
and written here, as are `get_recent_err_msg` and `app_log`, which are no runtime API.
"""
from __future__ import annotations

import sys
import types

from .. import runtime as _rt
from ..errors import AclError, recent_error as _recent_error
from . import mdl, media, rt, util
from ._bind import by_hand as _by_hand, declared as _declared, install_missing as _install_missing, \
    value_entry as _value_entry

# init, finalize, destroy_data_buffer, update_data_buffer: the APIs declared pyacl="acl.<name>" but those by_hand
globals().update(_declared(__name__))

# the C functions that return their value and no code (see emu.acl.mdl): the value alone, as pyACL gives it
create_data_buffer = _value_entry(_rt.create_data_buffer)
get_data_buffer_addr = _value_entry(_rt.get_data_buffer_addr)
get_data_buffer_size_v2 = _value_entry(_rt.get_data_buffer_size_v2)
get_data_buffer_size = _value_entry(_rt.get_data_buffer_size)
data_type_size = _value_entry(_rt.data_type_size)


@_by_hand(_rt.get_soc_name)
def get_soc_name(*args) -> str | None:
    """name = acl.get_soc_name(): the SoC name (aclrtGetSocName), None if it cannot be had."""
    if args:
        raise TypeError(f"{get_soc_name.__qualname__} args parse failed")
    try:
        return _rt.get_soc_name()
    except AclError:
        return None


def get_recent_err_msg(*args) -> str | None:
    """The message of the last failed ACL call on this thread (None if none failed)."""
    if args:
        raise TypeError("acl.get_recent_err_msg args parse failed")
    return _recent_error()


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")  # aclLogLevel: ACL_DEBUG 0 ... ACL_ERROR 3
_C_INT = (-(1 << 31), 1 << 31)


def app_log(*args) -> None:
    """acl.app_log(log_level, message): the application's log line (pyACL's WrapAclAppLog, ACL_APP_LOG; acllite's
    logger calls it for each line). Written on stderr as the C library's aclAppLog writes it, "[LEVEL]
    file:line function: message", naming the Python caller; a level outside 0..3 is "LOG". Returns None. Not an
    int and a str: TypeError("acl.app_log args parse failed"), as pyACL's "is" format."""
    if (len(args) != 2 or not isinstance(args[1], str) or not isinstance(args[0], int)
            or not _C_INT[0] <= args[0] < _C_INT[1]):
        raise TypeError("acl.app_log args parse failed")
    level, message = args
    frame = sys._getframe(1)
    where = f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}"
    name = _LOG_LEVELS[level] if 0 <= level < len(_LOG_LEVELS) else "LOG"
    print(f"[{name}] {where}: {message}", file=sys.stderr, flush=True)


def _empty(name: str) -> types.ModuleType:
    mod = types.ModuleType(f"{__name__}.{name}", f"acl.{name}: not emulated by acl-emu.")
    mod.__getattr__ = lambda attr: (_ for _ in ()).throw(
        AttributeError(f"acl.{name}.{attr} is not emulated by acl-emu"))
    return mod


op = _empty("op")

__all__ = ["init", "finalize", "get_soc_name", "get_recent_err_msg", "create_data_buffer", "destroy_data_buffer",
           "get_data_buffer_addr", "get_data_buffer_size", "get_data_buffer_size_v2", "update_data_buffer",
           "data_type_size", "app_log", "rt", "util", "media", "mdl", "op"]

_install_missing(__name__)
