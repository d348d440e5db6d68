"""pyACL-compatible facade: `import emu.acl as acl` (or `emu.install()` and `import acl`).

Same module tree, names, argument order and return convention as pyACL:
ints in, a return code (or `(outputs..., ret)`) out. What the emulator does not
provide raises AttributeError saying so.

`init`, `finalize` and the data-buffer functions come from their APIs' declarations (`@api(..., pyacl="acl.init",
...)` in emu/runtime/devices.py and inference.py, `emu.runtime.APIS`), bound by `declared(__name__)` (or, for the
C functions that return a value and no code, `emu.acl._bind.value_entry`); `get_soc_name` is declared `by_hand`
and written here.
"""
from __future__ import annotations

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


def _empty(name: str) -> types.ModuleType:
    mod = types.ModuleType(f"{__name__}.{name}", f"acl.{name}: not emulated by acl-emu.")
    mod.__getattr__ = lambda attr: (_ for _ in ()).throw(
        AttributeError(f"acl.{name}.{attr} is not emulated by acl-emu"))
    return mod


op = _empty("op")

__all__ = ["init", "finalize", "get_soc_name", "get_recent_err_msg", "create_data_buffer", "destroy_data_buffer",
           "get_data_buffer_addr", "get_data_buffer_size", "get_data_buffer_size_v2", "update_data_buffer",
           "data_type_size", "rt", "util", "media", "mdl", "op"]

_install_missing(__name__)
