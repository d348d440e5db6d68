"""Turning runtime methods into pyACL functions: ints in, `(outputs..., ret)` out.

pyACL parses its arguments with fixed C formats: the wrong number or type of
arguments raises TypeError("acl.<module>.<name> args parse failed"); an ACL
failure is a return code, never an exception.
"""
from __future__ import annotations

import operator
import sys
import types

from ..errors import AclError

INT, STR, OBJ, INTS = "i", "s", "o", "l"


def _parse(kind: str, value):
    if kind == INT:
        return operator.index(value)  # int, bool, numpy integers; not float or str
    if kind == INTS:  # a list of ints (a C array), or None (a null pointer)
        if value is None:
            return None
        if not isinstance(value, (list, tuple)):
            raise TypeError
        return [operator.index(v) for v in value]
    if kind == STR:
        if value is not None and not isinstance(value, str):
            raise TypeError
        return value
    return value


def bind(qualname: str, fn, params: str = "", outputs: tuple = (), optional: int = 0, convert=None):
    """A pyACL function calling `fn`.

    params: one letter per argument (i int, l list of ints, s str, o object); the last `optional`
    may be omitted. outputs: the values returned on failure, one per output.
    """
    lo, hi = len(params) - optional, len(params)

    def call(*args):
        if not lo <= len(args) <= hi:
            raise TypeError(f"{qualname} args parse failed")
        try:
            parsed = [_parse(k, a) for k, a in zip(params, args)]
        except TypeError:
            raise TypeError(f"{qualname} args parse failed") from None
        try:
            result = fn(*parsed)
        except AclError as err:
            if outputs and hasattr(err, "fail_index"):  # batch copies report the entry concerned
                return err.fail_index, err.code
            return (*outputs, err.code) if outputs else err.code
        if not outputs:
            return 0
        if convert is not None:
            result = convert(result)
        return (*result, 0) if len(outputs) > 1 else (result, 0)

    call.__name__ = qualname.rsplit(".", 1)[-1]
    call.__qualname__ = qualname
    call.__doc__ = f"{qualname}: pyACL binding of {getattr(fn, '__name__', fn)}."
    return call


def not_emulated(module: types.ModuleType):
    """Module __getattr__: a pyACL function the emulator lacks fails loudly and says so."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"{module.__name__.replace('emu.acl', 'acl')}.{name} is not emulated by acl-emu "
                             f"(the emulator covers the memory, stream and event APIs)")

    return __getattr__


def install_missing(module_name: str) -> None:
    mod = sys.modules[module_name]
    mod.__getattr__ = not_emulated(mod)
