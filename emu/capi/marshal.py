"""Reading and writing the C side of a call: output parameters, strings, the code of a null output.

Shared by the generic handlers (bridge.py) and the hand-written ones (special.py).
"""
from __future__ import annotations

import ctypes
import sys

from ..errors import ACL_ERROR_INVALID_PARAM, set_recent_error
from . import build

# The C types the generator knows (build.KNOWN_TYPES) as ctypes types of their width and signedness ("char" is
# missing: a `char *` is a string or a buffer, never one char written).
_CTYPES = {"int": ctypes.c_int, "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16, "int32_t": ctypes.c_int32,
           "int64_t": ctypes.c_int64, "long": ctypes.c_long, "long long": ctypes.c_longlong, "short": ctypes.c_short,
           "signed char": ctypes.c_byte, "aclError": ctypes.c_int,
           "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint, "uint8_t": ctypes.c_uint8,
           "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
           "size_t": ctypes.c_size_t, "uintptr_t": ctypes.c_size_t, "unsigned long": ctypes.c_ulong,
           "unsigned long long": ctypes.c_ulonglong, "unsigned short": ctypes.c_ushort,
           "unsigned char": ctypes.c_ubyte, "float": ctypes.c_float, "double": ctypes.c_double}


class Output:
    """An output parameter: the address the program gave and the C type written there."""

    __slots__ = ("index", "ctype")

    def __init__(self, index: int, ctype):
        self.index, self.ctype = index, ctype


def pointee(param: build.Param, types: dict[str, str]):
    """The ctypes type an output parameter points to, or None when the parameter is no output (a value, a
    buffer, a const pointer, a string, an array of structs). A typedef (`types`: build.typedefs) is written as
    the type the headers declare it to be: `typedef uint64_t x;` 8 bytes, an enum an int, a handle a pointer."""
    words = param.ctype.split()
    if "const" in words or param.ctype.count("*") == 0:
        return None
    base = " ".join(w for w in words if w != "*").replace("*", "").strip()
    stars = param.ctype.count("*")
    if stars == 2:
        return ctypes.c_void_p if base == "void" else None
    if stars != 1 or base == "void" or base == "char":
        return None
    target = types.get(base, base)
    return ctypes.c_void_p if target == "void *" else _CTYPES.get(target)


def write(address: int, ctype, value) -> None:
    ctype.from_address(address).value = int(value) if ctype not in (ctypes.c_float, ctypes.c_double) else value


def double_bits(value: float) -> int:
    """A function's floating-point result as native.c takes it back: the 64 bits of the double, as an int (the
    generated function turns them into the double, then into its return type)."""
    return int.from_bytes(ctypes.c_double(value), sys.byteorder)


def string(address: int) -> str | None:
    return None if address == 0 else ctypes.string_at(address).decode("utf-8", "surrogateescape")


def null_output(api: str, name: str) -> int:
    set_recent_error(f"{api}: {name} is null")
    return ACL_ERROR_INVALID_PARAM


_interned: dict[str, ctypes.Array] = {}


def c_string(text: str | None) -> int:
    """The address of `text` as a C string the program may keep (each distinct string is made once and kept:
    model and tensor names, SoC names, messages); 0 for None."""
    if text is None:
        return 0
    buf = _interned.get(text)
    if buf is None:
        buf = _interned.setdefault(text, ctypes.create_string_buffer(text.encode("utf-8", "replace")))
    return ctypes.addressof(buf)
