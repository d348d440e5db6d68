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

INT, STR, OBJ, INTS, ATTRS = "i", "s", "o", "l", "a"
RSV_BYTES = 16  # aclrtMemcpyBatchAttr.rsv: uint8_t[16]


def _rsv(value):
    """A batch attribute's rsv as the C struct holds it: 16 bytes, from bytes or a list of ints 0..255 (a
    shorter one zero-filled, as a C initializer); None is passed on for the runtime to refuse."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    elif isinstance(value, (list, tuple)):
        data = [operator.index(b) for b in value]
        if not all(0 <= b <= 255 for b in data):
            raise TypeError
        data = bytes(data)
    else:
        raise TypeError
    if len(data) > RSV_BYTES:
        raise TypeError
    return data.ljust(RSV_BYTES, b"\0")


def _attrs(value):
    """Batch-copy attributes (a C array of aclrtMemcpyBatchAttr): None (a null pointer) or a list; each
    dict's rsv read into its 16 bytes. Entries and locations are the runtime's to judge."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise TypeError
    return [dict(a, rsv=_rsv(a["rsv"])) if isinstance(a, dict) and "rsv" in a else a for a in value]


def _parse(kind: str, value):
    if kind == INT:
        return operator.index(value)  # int, bool, numpy integers; not float or str
    if kind == INTS:  # a list of ints (a C array), or None (a null pointer)
        if value is None:
            return None
        if not isinstance(value, (list, tuple)):
            raise TypeError
        return [operator.index(v) for v in value]
    if kind == ATTRS:
        return _attrs(value)
    if kind == STR:
        if value is not None and not isinstance(value, str):
            raise TypeError
        return value
    return value


def bind(qualname: str, fn, params: str = "", outputs: tuple = (), optional: int = 0, convert=None):
    """A pyACL function calling `fn`.

    params: one letter per argument (i int, l list of ints, s str, a batch attributes, o object); the last `optional`
    may be omitted. outputs: the values returned on failure, one per output.
    """
    lo, hi = len(params) - optional, len(params)

    def call(*args):
        if not lo <= len(args) <= hi:
            raise TypeError(f"{qualname} args parse failed")
        try:
            parsed = [_parse(k, a) for k, a in zip(params, args)]
        except (TypeError, ValueError):
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
