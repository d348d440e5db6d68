"""Moving the bytes of many copies in one call: a batch copy's entries, at the instant the batch completes.

The caller resolves every entry to raw addresses of buffers it holds (each range checked to lie inside its
buffer) and passes them as int64 arrays: one compiled loop then does a memmove (or a memset to zero) per
entry, where one kernel call per entry would cost a Python call each.

Importing this module is cheap: Numba is imported, and the loops compiled (or loaded from Numba's on-disk
cache), the first time one of them is called (`_load`); `import emu` never imports Numba.
"""
from __future__ import annotations

import threading

import numpy as np

__all__ = ["copy_many", "zero_many"]

_JIT = dict(cache=True, boundscheck=False)
_load_lock = threading.Lock()
_ready = False


def _memmove(dst, src, n):  # rebound by _load to an intrinsic: memmove(dst, src, n) on raw addresses
    raise NotImplementedError


def _memzero(dst, n):  # rebound by _load to an intrinsic: memset(dst, 0, n) on a raw address
    raise NotImplementedError


def _copy_loop(dst, src, sizes):
    """memmove(dst[j], src[j], sizes[j]) for each j, in order."""
    for j in range(sizes.shape[0]):
        _memmove(dst[j], src[j], sizes[j])


def _zero_loop(dst, sizes):
    """memset(dst[j], 0, sizes[j]) for each j, in order."""
    for j in range(sizes.shape[0]):
        _memzero(dst[j], sizes[j])


def _intrinsics():
    """The two raw-address primitives, as Numba intrinsics over the C library's memmove and memset."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    i8p = ir.IntType(8).as_pointer()

    @intrinsic
    def memmove(typingctx, dst, src, n):
        def codegen(context, builder, signature, args):
            d, s, count = args
            cgutils.raw_memmove(builder, builder.inttoptr(d, i8p), builder.inttoptr(s, i8p), count,
                                ir.IntType(64)(1))
            return context.get_dummy_value()

        return types.none(types.int64, types.int64, types.int64), codegen

    @intrinsic
    def memzero(typingctx, dst, n):
        def codegen(context, builder, signature, args):
            d, count = args
            cgutils.memset(builder, builder.inttoptr(d, i8p), count, 0)
            return context.get_dummy_value()

        return types.none(types.int64, types.int64), codegen

    return memmove, memzero


def _load() -> None:
    """Import Numba and compile the loops (or load them from the on-disk cache); once per process."""
    global _ready, _memmove, _memzero, _copy_loop, _zero_loop
    with _load_lock:
        if _ready:
            return
        from numba import njit, types

        _memmove, _memzero = _intrinsics()
        i64s = types.Array(types.int64, 1, "C", readonly=True)
        _copy_loop = njit([types.none(i64s, i64s, i64s)], nogil=True, **_JIT)(_copy_loop)  # (raw memmoves only)
        _zero_loop = njit([types.none(i64s, i64s)], **_JIT)(_zero_loop)
        _ready = True


def _addresses(values) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.int64)


def copy_many(dst, src, sizes, owners=None) -> None:
    """Copy sizes[j] bytes from raw address src[j] to raw address dst[j], for each j in order (memmove: a
    range may overlap its own source), the GIL released. The caller vouches for every address: nothing is
    checked. owners: what holds the memory (its arrays): an argument, so kept alive until the bytes have moved
    (for a copy the runtime runs once its lock is released)."""
    if not _ready:
        _load()
    _copy_loop(_addresses(dst), _addresses(src), _addresses(sizes))


def zero_many(dst, sizes) -> None:
    """Set sizes[j] bytes at raw address dst[j] to zero, for each j. Nothing is checked."""
    if not _ready:
        _load()
    _zero_loop(_addresses(dst), _addresses(sizes))
