"""C and C++ ACL programs on the emulator: a drop-in libascendcl.so and the headers to build against it.

A program that includes "acl/acl.h" and links -lascendcl builds against `include_dir()` and
`library_dir()` (`acl-emu cc`, `acl-emu c++`, `acl-emu config --cflags --libs`), and runs unchanged: its
ACL calls are the emulator's, with pyACL's return codes and bytes (`emu.capi.bridge`), and `acl-emu run
./prog` times it like a script (`emu.capi.session`). The library is built on first use (`emu.capi.build`).
"""
from __future__ import annotations

from .build import INCLUDE, BuildError, library_dir

__all__ = ["BuildError", "include_dir", "library_dir", "cflags", "libs"]


def include_dir():
    """The folder holding acl/acl.h."""
    return INCLUDE


def cflags() -> list[str]:
    """The compiler flags of a program built against the emulator."""
    return [f"-I{INCLUDE}"]


def libs(where=None) -> list[str]:
    """The linker flags of a program built against the emulator: the library, and where to find it at run time
    (`where`, the library's folder, when the caller has looked it up already)."""
    where = library_dir() if where is None else where
    return [f"-L{where}", f"-Wl,-rpath,{where}", "-lascendcl"]
