"""Turning runtime methods into pyACL functions: ints in, `(outputs..., ret)` out.

pyACL parses its arguments with fixed C formats: the wrong number or type of
arguments, or an int that no 64-bit C integer holds (outside [-2**63, 2**64)), raises
TypeError("acl.<module>.<name> args parse failed"); an ACL failure is a return code, never an exception.
(pyACL's bindings call PyArg_ParseTuple inside CHECK_NULL(..., "acl.rt.memcpy args parse failed"), which
replaces the parser's OverflowError by that TypeError.)

Each facade entry of an ACL API comes from the API's one declaration (`@api(..., pyacl=..., params=...,
outputs=...)` on its family function in emu/runtime, listed in `emu.runtime.APIS`): a facade module takes
its share with `globals().update(declared(__name__))`, and writes by hand only the entries declared
`by_hand`, from the same declaration (`bind_declared`, `by_hand`; `value_entry` for a C function that returns
its value and no code).
"""
from __future__ import annotations

import inspect
import operator
import sys
import textwrap
import types
import warnings

from ..errors import ACL_ERROR_RT_MEMORY_ALLOCATION, AclError
from ..runtime.batch import RSV_BYTES

INT, STR, OBJ, INTS, ATTRS = "i", "s", "o", "l", "a"
INT_MIN, INT_END = -(1 << 63), 1 << 64  # the ints some 64-bit C integer type holds: [INT_MIN, INT_END)
_PLAIN_INT = {int}  # (a set to compare the types of an array's items with)


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


def _int(value) -> int:
    """An int argument as a C integer reads it: int, bool, numpy integers (not float or str), within 64 bits;
    else TypeError (pyACL's CHECK_NULL turns the parser's OverflowError into its "args parse failed")."""
    value = operator.index(value)
    if not INT_MIN <= value < INT_END:
        raise TypeError
    return value


def _parse(kind: str, value):
    if kind == INT:
        return _int(value)
    if kind == INTS:  # a list of ints (a C array), or None (a null pointer)
        if value is None:
            return None
        if not isinstance(value, (list, tuple)):
            raise TypeError
        if set(map(type, value)) <= _PLAIN_INT:  # (the usual array: plain ints, each its own index)
            return list(value)
        return [operator.index(v) for v in value]
    if kind == ATTRS:
        return _attrs(value)
    if kind == STR:
        if value is not None and not isinstance(value, str):
            raise TypeError
        return value
    return value


def _plain(value):
    """pyACL gives plain ints: the runtime's handles and addresses (int subclasses that are also context
    managers) are given as the int."""
    return int(value) if isinstance(value, int) and type(value) is not int and not isinstance(value, bool) else value


def _parsed(qualname: str, params: str, ints_only: bool, args: tuple) -> list:
    """The arguments as the C formats read them, or TypeError("<qualname> args parse failed")."""
    try:
        return list(map(_int, args)) if ints_only else [_parse(k, a) for k, a in zip(params, args)]
    except (TypeError, ValueError):
        raise TypeError(f"{qualname} args parse failed") from None


def bind(qualname: str, fn, params: str = "", outputs: tuple = (), optional: int = 0, convert=None):
    """A pyACL function calling `fn`.

    params: one letter per argument (i int, l list of ints, s str, a batch attributes, o object); the last `optional`
    may be omitted. outputs: the values returned on failure, one per output.
    """
    lo, hi = len(params) - optional, len(params)
    ints_only = set(params) <= {INT}  # most APIs: every argument an int, read in one pass

    def call(*args):
        if not lo <= len(args) <= hi:
            raise TypeError(f"{qualname} args parse failed")
        if ints_only:
            parsed = args  # plain 64-bit ints (no bool, no subclass) pass as they are: _int gives each back
            for a in args:  # (`type(a) is int` tests cost less than _int calls and a new list)
                if type(a) is not int or not INT_MIN <= a < INT_END:
                    parsed = _parsed(qualname, params, ints_only, args)
                    break
        else:
            parsed = _parsed(qualname, params, ints_only, args)
        try:
            result = fn(*parsed)
            if not outputs:
                return 0
            if convert is not None:
                result = convert(result)
        except AclError as err:
            return failure(err, outputs)
        except MemoryError:  # the last guard (the runtime's API wrapper turns its own into 207001 first)
            return failure(AclError(ACL_ERROR_RT_MEMORY_ALLOCATION, f"{qualname} ran out of host memory"), outputs)
        if len(outputs) > 1:
            return (*map(_plain, result), 0)
        return _plain(result), 0

    call.__name__ = qualname.rsplit(".", 1)[-1]
    call.__qualname__ = qualname
    call.__doc__ = _doc(qualname, fn, params, outputs, optional, convert)
    return call


def failure(err: AclError, outputs: tuple):
    """What a pyACL function returns for `err`: its code, after the failure values of the outputs (a batch
    copy's failIndex where it names one). An error that says `warns` (a call that would hang on the board,
    such as `emu.runtime.CallbackDeadlock`) is also a RuntimeWarning with its message, pointing at the
    caller's line: the code alone would not tell why."""
    if err.warns:
        warnings.warn(str(err), RuntimeWarning, stacklevel=3)
    if outputs and hasattr(err, "fail_index"):  # batch copies report the entry concerned
        return err.fail_index, err.code
    return (*outputs, err.code) if outputs else err.code


def declaration(fn):
    """The `emu.runtime.core.Declaration` of a runtime API (its method, or the module function calling it)."""
    return getattr(fn, "__wrapped__", fn).api


def bind_declared(fn, convert=None):
    """`bind` with the pyACL name, formats, outputs and optional arguments of `fn`'s declaration; the entry
    carries the declaration as `.api`."""
    d = declaration(fn)
    if d.pyacl is None:
        raise ValueError(f"{d.acl} declares no pyACL entry")
    call = bind(d.pyacl, fn, d.params, d.outputs, d.optional, convert)
    call.api = d
    return call


def value_entry(fn):
    """The pyACL entry of a runtime API whose C function returns its value and no code (aclmdlGetNumInputs,
    aclCreateDataBuffer, ...), declared `by_hand` with one output: the value alone; the declared output's value
    if the runtime refuses the call (the C function's null). Its arguments parse as the declaration says
    (TypeError "<name> args parse failed")."""
    d = declaration(fn)
    inner, missing = bind_declared(fn), d.outputs[0]

    def entry(*args):
        return inner(*args)[0]

    entry.__name__, entry.__qualname__, entry.api = d.name, d.pyacl, d
    call = inner.__doc__.partition("\n")[0].replace("value, ret = ", "value = ")
    runtime_doc = inner.__doc__[inner.__doc__.index("\nemu.runtime."):]
    text = (f"pyACL's form of emu.runtime.{d.name} ({d.acl}): ints in, the value out (no return code), never an "
            f"AclError; {missing!r} if the runtime refuses the call. Arguments of the wrong number or type raise "
            f"TypeError(\"{d.pyacl} args parse failed\").")
    entry.__doc__ = f"{call}\n\n{textwrap.fill(text, 100)}\n{runtime_doc}"
    return entry


def by_hand(fn):
    """Decorator of a facade entry written by hand for the API of `fn` (declared `by_hand=True`): it gets the
    declared pyACL name as its __qualname__ and the declaration as `.api`."""
    d = declaration(fn)

    def mark(entry):
        if not d.by_hand:
            raise ValueError(f"{d.pyacl} is written by hand but {d.acl} is not declared by_hand=True")
        entry.__qualname__, entry.api = d.pyacl, d
        return entry

    return mark


def declared(module_name: str) -> dict:
    """{name: facade entry} for every API whose declaration puts its pyACL entry in the facade module
    `module_name` (emu.acl.rt: "acl.rt.*"), but those declared `by_hand`; in the order of `emu.runtime.APIS`."""
    from .. import runtime
    where = "acl" + module_name[len("emu.acl"):]
    return {d.name: bind_declared(getattr(runtime, d.name)) for d in runtime.APIS
            if d.facade_module == where and not d.by_hand}


def _runtime_signature(fn) -> tuple[list[str], str]:
    """(positional parameter names, "name(params)") of a runtime function, without annotations nor the runtime
    itself (`self` of a Runtime method, `rt` of a function taking the runtime first)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], f"{getattr(fn, '__name__', fn)}(...)"
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()
              if p.name not in ("self", "rt")]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    plain = sig.replace(parameters=params, return_annotation=inspect.Signature.empty)
    return names, f"{getattr(fn, '__name__', fn)}{plain}"


def _doc(qualname: str, fn, params: str, outputs: tuple, optional: int, convert) -> str:
    """A pyACL function's help: its call form and return convention, then the runtime function's docstring."""
    names, runtime_call = _runtime_signature(fn)
    names = names[:len(params)] if len(names) >= len(params) else [f"arg{i}" for i in range(len(params))]
    required = len(params) - optional
    args = ", ".join(names[:required])
    for name in names[required:]:
        args += f"[, {name}" if args else f"[{name}"
    args += "]" * optional
    values = ["value"] if len(outputs) == 1 else [f"value{i + 1}" for i in range(len(outputs))]
    acl_name = getattr(getattr(fn, "__wrapped__", fn), "acl_name", None)
    what = f"emu.runtime.{getattr(fn, '__name__', fn)}" + (f" ({acl_name})" if acl_name else "")
    if outputs:
        got = " and ".join(values) + (" are" if len(values) > 1 else " is")
        on_fail = ", ".join(f"{v} {'SIZE_MAX' if o == (1 << 64) - 1 else repr(o)}" for v, o in zip(values, outputs))
        result = (f"On success ret is 0 and {got} what the runtime returns"
                  + (" (in pyACL's form)" if convert is not None else "")
                  + f"; on failure ret is the ACL error code and {on_fail}"
                  + (" (a batch copy's failIndex: the failing entry, if one is)" if "Batch" in (acl_name or "") else "")
                  + ".")
    else:
        result = "ret is 0 on success, else the ACL error code."
    text = (f"pyACL's form of {what}: ints in, return codes out, never an AclError. {result} Arguments of the "
            f"wrong number or type raise TypeError(\"{qualname} args parse failed\").")
    lines = [f"{', '.join([*values, 'ret'])} = {qualname}({args})", "", *textwrap.wrap(text, 100), ""]
    doc = inspect.cleandoc(getattr(fn, "__doc__", None) or "")
    lines.append(f"emu.runtime.{runtime_call}:")
    lines.extend(f"    {line}" if line else "" for line in doc.splitlines())
    return "\n".join(lines)


def not_emulated(module: types.ModuleType):
    """Module __getattr__: a pyACL function the emulator lacks fails loudly and says so."""

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"{module.__name__.replace('emu.acl', 'acl')}.{name} is not emulated by acl-emu "
                             f"(the emulator covers the memory, stream, event and callback APIs, declared models and "
                             f"device code)")

    return __getattr__


def install_missing(module_name: str) -> None:
    """Give the module the __getattr__ of `not_emulated`. It defines no name: it only answers for the names the
    module does not define, so that a pyACL function the emulator lacks says so."""
    mod = sys.modules[module_name]
    mod.__getattr__ = not_emulated(mod)
