"""Byte-moving kernels behind the emulated ACL memory APIs.

Simulated copy/memset tasks only model time; the bytes actually move when a
task completes, through the functions here (Numba-compiled; the GIL is
released while anything but a small buffer moves).

Importing this module is cheap: Numba is imported, and the kernels compiled
(or loaded from Numba's on-disk cache), the first time one of them is called
(`_load`).  A timing-only run never moves bytes, so it never pays for that.

Each public function is a thin wrapper around one compiled kernel, which checks
the arrays' types (through the dispatcher's exact signature), their bounds and
overlap, and picks the way to move the bytes:

* small sizes: the C library's memmove / memset (what numpy itself calls), or
  a vector loop for 32-bit patterns;
* large sizes: non-temporal stores: the data would not stay in cache anyway,
  and skipping the read-for-ownership of destination lines nearly doubles
  bandwidth;
* between them, whichever has been faster here (`Crossover`, its band placed
  by the size of the last-level cache: `stores_for`, `cache_bytes`): where
  streaming starts to pay moves with the cache the machine's neighbours leave
  (2-3x from one day to the next on a shared VM), so a copy, 2-D copy or fill
  times itself, per power-of-two band of sizes, and streams where streaming
  has been clearly faster, trying the other path now and then; only calls
  that follow one of the same path teach it (no path is timed with the cache
  the other left), and the paths are compared in pairs of nearby calls (the
  machine's speed changes from one minute to the next).

Arguments the fast path refuses go through `_checked_*`, which raises the
ValueError that explains them (or runs the kernel on a plain view when nothing
is wrong, e.g. for an ndarray subclass).
"""

from __future__ import annotations

import math
import operator
import os
import threading
from collections.abc import Mapping
from time import perf_counter

import numpy as np

__all__ = ["copy", "copy_2d", "fill", "fill_u32", "warmup", "KERNELS"]

# Where streaming (non-temporal) stores start to pay for a copy or fill depends on the last-level cache and
# on what the machine's neighbours leave of it (`stores_for` reasons from the cache's size; a `Crossover`
# learns the rest from the calls). What `python benchmarks/kernels.py --crossover` measured on the 2-core
# development VM (AMD EPYC, 32 MiB L3 shared with other guests, glibc 2.36), cached (memmove) vs streaming
# GB/s, best of 11 interleaved:
#     copy, one day:   4 MiB 23.0 vs 18.5, 5 MiB 24.8 vs 21.1, 6 MiB 17.2 vs 20.7, 8 MiB 7.2 vs 18.9
#     copy, another:   6 MiB 42.3 vs 27.5, 8 MiB 37.6 vs 27.7, 12 MiB 22.1 vs 25.8
#     fill, one day:   8 MiB 41.4 vs 21.6, 12 MiB 11.9 vs 22.1, 16 MiB 11.0 vs 22.0
#     fill, another:   16 MiB 63.2 vs 28.4, 32 MiB 32.9 vs 28.5, 64 MiB 28.5 vs 27.6
#     copy 256 MiB 6.9 vs 7.0, 1 GiB 5.9 vs 6.4: far above the cache streaming is on par with the C library's
#     own non-temporal path (which glibc takes from 192 MiB there).
# Below a crossover's band a copy is the same memmove numpy makes, so never slower than numpy.


class Crossover:
    """Whether a copy or fill of n bytes should use streaming stores, learned from its own calls.

    Below `low` the cached path (the C library's, numpy's own) always; from `high` up streaming always. Between
    them, per power-of-two band of sizes, the cached path unless streaming has been at least MARGIN of its time
    faster: the band tries the path it is not on for TRIAL calls in a row, on its third and fourth calls and
    then every `explore` calls, so that a change of the machine's load is seen. `streams(n)` picks; `took(n,
    streamed, seconds)` teaches. The choice changes only the time a kernel takes, never its bytes.

    Two rules keep a timing honest. A call teaches only when the band's previous call took the same path
    (`_Band.last`): the first call on a path finds the cache as the other path left it (streaming stores evict
    the destination, so a cached copy right after them runs cold). And the paths are compared in pairs of
    calls at most PAIRED calls apart (`_Band.when`), each pair's ratio averaged: a shared machine's speed
    changes twofold from one minute to the next, so timings made at different times do not compare."""

    __slots__ = ("low", "high", "explore", "bands")
    TRIAL = 2  # calls in a row on the other path: the first cold, the next timed
    PAIRED = 3  # two timings, one of each path, pair when at most this many calls apart
    MARGIN = 0.9  # streaming is chosen when it takes at most this share of the cached path's time
    WEIGHT = 0.25  # each pair's share of the band's average

    def __init__(self, low: int, high: int, explore: int = 64):
        self.low, self.high, self.explore = low, high, explore
        self.bands: dict[int, _Band] = {}  # n.bit_length() -> its band

    def streams(self, n: int) -> bool:
        if n < self.low:
            return False
        if n >= self.high:
            return True
        band = self.bands.get(n.bit_length())
        if band is None:
            band = self.bands[n.bit_length()] = _Band()
        band.calls = calls = band.calls + 1
        if band.log_ratio is None:  # cached, cached, streaming, streaming, ... until a pair is timed
            return calls % 4 in (3, 0)
        return (band.log_ratio < _LOG_MARGIN) != (calls % self.explore < self.TRIAL)

    def took(self, n: int, streamed: bool, seconds: float) -> None:
        band = self.bands.get(n.bit_length()) if self.low <= n < self.high else None
        if band is None:
            return
        warm, band.last = band.last is streamed, streamed
        if not warm or seconds <= 0:
            return
        i, j = (1, 0) if streamed else (0, 1)
        band.cost[i], band.when[i] = seconds / n, band.calls
        if band.cost[j] is not None and band.calls - band.when[j] <= self.PAIRED:
            sample, mean = math.log(band.cost[1] / band.cost[0]), band.log_ratio
            band.log_ratio = sample if mean is None else mean + (sample - mean) * self.WEIGHT

    def __repr__(self) -> str:
        paths = ", ".join(f"{_mib(1 << (b - 1))}-{_mib(1 << b)}: {band.path}" for b, band in sorted(self.bands.items()))
        return (f"Crossover(cached below {_mib(self.low)}, streaming from {_mib(self.high)}"
                + (f"; learned {paths}" if paths else "") + ")")


_LOG_MARGIN = math.log(Crossover.MARGIN)


class _Band:
    """What a `Crossover` knows of one band of sizes: its calls, the path of the last one (None: none yet), each
    path's latest warm seconds per byte (`cost`: cached, streaming) and the call that timed it (`when`), and the
    average log of streaming's time over the cached path's, from paired timings (None: no pair yet)."""

    __slots__ = ("calls", "last", "cost", "when", "log_ratio")

    def __init__(self):
        self.calls, self.last, self.log_ratio = 0, None, None
        self.cost: list = [None, None]
        self.when = [0, 0]

    @property
    def path(self) -> str:
        return "?" if self.log_ratio is None else "streaming" if self.log_ratio < _LOG_MARGIN else "cached"


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


FALLBACK_CACHE = 8 << 20  # a last-level cache size when the machine does not say: a common desktop L3


def cache_bytes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> int:
    """The size of the last-level cache the first CPU sees, in bytes: the highest level of data or unified cache
    under `root` (Linux's sysfs), else the C library's sysconf (which on some VMs adds up the caches of the
    whole socket), else FALLBACK_CACHE."""
    best = (0, 0)
    try:
        for entry in os.listdir(root):
            path = os.path.join(root, entry)
            if entry.startswith("index") and _read(path, "type") in ("Data", "Unified"):
                best = max(best, (int(_read(path, "level")), _size(_read(path, "size"))))
    except (OSError, ValueError):
        best = (0, 0)
    if best[1] > 0:
        return best[1]
    for name in ("SC_LEVEL4_CACHE_SIZE", "SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            size = os.sysconf(name)
        except (ValueError, OSError):
            continue
        if size > 0:
            return size
    return FALLBACK_CACHE


def _read(folder: str, name: str) -> str:
    with open(os.path.join(folder, name)) as f:
        return f.read().strip()


def _size(text: str) -> int:
    """"32768K" (sysfs' spelling), "1M" or "512" as bytes."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def stores_for(cache: int, working_set: int) -> Crossover:
    """The crossover of an operation whose working set is `working_set` times its size (2 for a copy: source
    and destination; 1 for a fill), on a machine whose last-level cache holds `cache` bytes.

    While the working set fits in half the cache it stays there between calls (the other half for the program
    and the machine's neighbours), and cached stores win: they are the C library's, so as fast as numpy. Beyond
    the cache streaming stores may win (they skip reading the destination's lines for ownership), but what wins
    moves with the neighbours' load (2-3x from one day to the next on a shared VM, where a VM's two cores may
    also sit on two dies' caches) and with the C library, which streams too from a threshold of its own (192
    MiB copies here: streaming vs cached 256 MiB 7.8 vs 7.9 GB/s on one day, 9.0 vs 10.1 on another; 1 GiB 6.4
    vs 5.9): so the calls teach it. From 128 times the cache up nothing of the working set stays in any cache
    and the two paths tie: streaming, with no trials."""
    return Crossover(cache // (2 * working_set), 128 * cache // working_set)


CACHE_BYTES = cache_bytes()
# The crossovers of 1-D copies, of fills and of 2-D copies (whose rows are at least NT_2D_MIN_WIDTH wide: how
# wide their rows are changes what pays more than their size does).
COPY_STORES = stores_for(CACHE_BYTES, 2)
FILL_STORES = stores_for(CACHE_BYTES, 1)
COPY_2D_STORES = stores_for(CACHE_BYTES, 2)
NEVER = 1 << 62  # a threshold no size reaches: the cached path

# 2-D rows narrower than this never use streaming stores: a row covers few
# whole cache lines, and partial lines written non-temporally cost more than
# they save.  Same command, memmove per row vs streaming rows, pitch =
# width + 64, GB/s:
#     8 MiB of payload:  w=128 4.3 vs 3.2, w=256 5.5 vs 5.2, w=512 5.5 vs 7.5, w=1000 3.5 vs 7.5
#     64 MiB of payload: w=128 2.8 vs 2.0, w=256 2.9 vs 2.8, w=512 3.8 vs 4.4, w=1000 2.3 vs 4.5
NT_2D_MIN_WIDTH = 512

# Kernels moving at least this many bytes release the GIL while they do.
# Releasing and taking it back costs about 0.1 us, a fifth of a whole small
# call, so small copies and fills keep it.
_NOGIL_BYTES = 64 << 10

_PAGE = 4096
_JIT = dict(cache=True, boundscheck=False)  # the kernels release the GIL themselves
_HELPER = dict(_JIT, inline="always")

_load_lock = threading.Lock()
_ready = False


# ---------------------------------------------------------------------------
# LLVM-level building blocks (made by _load, which imports Numba).  They take
# (array, byte offset) pairs and emit plain vector loads/stores or calls to
# the C library; the callers below guarantee the offsets are in bounds and,
# for non-temporal stores, that the destination is 64-byte aligned.
# ---------------------------------------------------------------------------

def _is_u8_array(t):
    from numba import types

    return isinstance(t, types.Array) and t.dtype == types.uint8 and t.ndim == 1 and t.layout == "C"


def _is_int(t):
    from numba import types

    return isinstance(t, types.Integer)


def _elem_ptr(context, builder, arrty, arr, idx, idxty, extra=0):
    from llvmlite import ir
    from numba import types

    data = context.make_array(arrty)(context, builder, arr).data
    off = context.cast(builder, idx, idxty, types.intp)
    if extra:
        off = builder.add(off, ir.IntType(64)(extra))
    return builder.gep(data, [off], source_etype=ir.IntType(8))


def _nontemporal(builder, store):
    from llvmlite import ir

    store.set_metadata("nontemporal", builder.module.add_metadata([ir.IntType(32)(1)]))


def _make_copy_block(nbytes, pages=1, nontemporal=False):
    """Copy `nbytes` at dst[di:], src[si:] (and at +4096*k for k < pages).

    All loads are issued before any store.
    """
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    vty = ir.VectorType(ir.IntType(8), nbytes)

    @intrinsic
    def block(typingctx, dst, di, src, si):
        if not (_is_u8_array(dst) and _is_u8_array(src) and _is_int(di) and _is_int(si)):
            return None

        def codegen(context, builder, sig, args):
            vals = []
            for p in range(pages):
                sp = _elem_ptr(context, builder, sig.args[2], args[2], args[3], sig.args[3], p * _PAGE)
                vals.append(builder.load(builder.bitcast(sp, vty.as_pointer()), align=1, typ=vty))
            for p in range(pages):
                dp = _elem_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1], p * _PAGE)
                st = builder.store(vals[p], builder.bitcast(dp, vty.as_pointer()),
                                   align=64 if nontemporal else 1)
                if nontemporal:
                    _nontemporal(builder, st)
            return context.get_dummy_value()

        return types.none(dst, di, src, si), codegen

    return block


def _make_set_block(nbytes, nontemporal=False):
    """Store `nbytes` (multiple of 4) at dst[di:], the uint32 `pat` repeated."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    i32 = ir.IntType(32)
    lanes = nbytes // 4
    vty = ir.VectorType(i32, lanes)

    @intrinsic
    def block(typingctx, dst, di, pat):
        if not (_is_u8_array(dst) and _is_int(di) and _is_int(pat)):
            return None

        def codegen(context, builder, sig, args):
            dp = _elem_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            v32 = builder.trunc(context.cast(builder, args[2], sig.args[2], types.int64), i32)
            if lanes == 1:
                val, pty = v32, i32.as_pointer()
            else:
                undef = ir.Constant(vty, ir.Undefined)
                val = builder.insert_element(undef, v32, i32(0))
                val = builder.shuffle_vector(val, undef, ir.Constant(vty, [0] * lanes))
                pty = vty.as_pointer()
            st = builder.store(val, builder.bitcast(dp, pty), align=64 if nontemporal else 1)
            if nontemporal:
                _nontemporal(builder, st)
            return context.get_dummy_value()

        return types.none(dst, di, pat), codegen

    return block


def _make_address():
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def address(typingctx, arr):
        """Integer address of arr[0]."""
        if not _is_u8_array(arr):
            return None

        def codegen(context, builder, sig, args):
            data = context.make_array(sig.args[0])(context, builder, args[0]).data
            return builder.ptrtoint(data, ir.IntType(64))

        return types.int64(arr), codegen

    return address


def _make_memmove():
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def memmove(typingctx, dst, di, src, si, n):
        """The C library's memmove of n bytes from src[si:] to dst[di:]."""
        if not (_is_u8_array(dst) and _is_u8_array(src) and _is_int(di) and _is_int(si) and _is_int(n)):
            return None

        def codegen(context, builder, sig, args):
            dp = _elem_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            sp = _elem_ptr(context, builder, sig.args[2], args[2], args[3], sig.args[3])
            count = context.cast(builder, args[4], sig.args[4], types.intp)
            cgutils.raw_memmove(builder, dp, sp, count, 1)
            return context.get_dummy_value()

        return types.none(dst, di, src, si, n), codegen

    return memmove


def _make_memset():
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def memset(typingctx, dst, di, byte, n):
        """The C library's memset of n bytes at dst[di:] to byte & 0xFF."""
        if not (_is_u8_array(dst) and _is_int(di) and _is_int(byte) and _is_int(n)):
            return None

        def codegen(context, builder, sig, args):
            dp = _elem_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            value = builder.trunc(context.cast(builder, args[2], sig.args[2], types.int64), ir.IntType(8))
            count = context.cast(builder, args[3], sig.args[3], types.intp)
            cgutils.memset(builder, dp, count, value)
            return context.get_dummy_value()

        return types.none(dst, di, byte, n), codegen

    return memset


def _make_store_fence():
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def store_fence(typingctx):
        """Order preceding non-temporal stores before anything that follows."""

        def codegen(context, builder, sig, args):
            builder.fence("seq_cst")
            return context.get_dummy_value()

        return types.none(), codegen

    return store_fence


def _make_gil_ops():
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    i64 = ir.IntType(64)
    state_t = ir.IntType(8).as_pointer()

    @intrinsic
    def release_gil(typingctx):
        """PyEval_SaveThread(): the thread state, as an integer.  Nothing up to
        the matching _restore_gil may raise or touch Python objects."""

        def codegen(context, builder, sig, args):
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(state_t, []), "PyEval_SaveThread")
            return builder.ptrtoint(builder.call(fn, []), i64)

        return types.int64(), codegen

    @intrinsic
    def restore_gil(typingctx, state):
        """PyEval_RestoreThread(state)."""
        if not _is_int(state):
            return None

        def codegen(context, builder, sig, args):
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [state_t]),
                                                "PyEval_RestoreThread")
            builder.call(fn, [builder.inttoptr(args[0], state_t)])
            return context.get_dummy_value()

        return types.none(state), codegen

    return release_gil, restore_gil


# ---------------------------------------------------------------------------
# Compiled code.  Until _load() runs, the names below are plain Python
# functions (never called as such); _load() rebinds each to its compiled
# version, helpers first, so the kernels see compiled helpers.
# Span helpers: callers guarantee the spans are in bounds.
# ---------------------------------------------------------------------------

def _copy_stream(dst, di, src, si, n):
    """Disjoint copy of n bytes with non-temporal stores (64-byte aligned);
    the caller issues the store fence."""
    head = (-(_address(dst) + di)) & 63
    if head > n:
        head = n
    _memmove(dst, di, src, si, head)
    d = di + head
    s = si + head
    end = di + n
    # Two pages at a time, 128 bytes from each, as the C library's own large
    # copy does; on par with it, and with a single 256-byte stream, here.
    while d + 2 * _PAGE <= end:
        for off in range(0, _PAGE, 128):
            _cp128x2_nt(dst, d + off, src, s + off)
        d += 2 * _PAGE
        s += 2 * _PAGE
    while d + 128 <= end:
        _cp128_nt(dst, d, src, s)
        d += 128
        s += 128
    if d + 64 <= end:
        _cp64_nt(dst, d, src, s)
        d += 64
        s += 64
    _memmove(dst, d, src, s, end - d)


def _rot(pat, k):
    """The uint32 pattern as seen from byte offset k (little-endian)."""
    return ((pat | (pat << 32)) >> (8 * (k & 3))) & 0xFFFFFFFF


def _fill_small(dst, di, n, pat):
    """Pattern fill of 0 <= n <= 64 bytes at dst[di:]; pattern phase is relative to dst[0]."""
    if n > 32:
        _set32(dst, di, _rot(pat, di))
        _set32(dst, di + n - 32, _rot(pat, di + n - 32))
    elif n > 16:
        _set16(dst, di, _rot(pat, di))
        _set16(dst, di + n - 16, _rot(pat, di + n - 16))
    elif n > 8:
        _set8(dst, di, _rot(pat, di))
        _set8(dst, di + n - 8, _rot(pat, di + n - 8))
    elif n >= 4:
        _set4(dst, di, _rot(pat, di))
        _set4(dst, di + n - 4, _rot(pat, di + n - 4))
    else:
        for i in range(di, di + n):
            dst[i] = (pat >> (8 * (i & 3))) & 0xFF


def _region_ok(length, pitch, width, height):
    """True if rows of `width` bytes every `pitch` bytes, `height` times, fit in `length`."""
    if width < 0 or height < 0 or pitch < width:
        return False
    if width == 0 or height == 0:
        return True
    return length >= width and height - 1 <= (length - width) // pitch


# Kernels: one call per API operation.  Each validates its own bounds.

def _copy_kernel(dst, src, nt_threshold, defer_from):
    """Copy src into dst (equal lengths) with memmove semantics; non-overlapping
    copies of at least nt_threshold bytes use non-temporal stores.  Returns 0;
    or, from defer_from bytes up, n, having copied nothing (for the caller to
    pick the store path: `Crossover`)."""
    n = dst.shape[0]
    if src.shape[0] != n:
        raise ValueError("copy: length mismatch")
    if n >= defer_from:
        return n
    d = _address(dst)
    s = _address(src)
    if d == s:
        return 0
    nogil = n >= _NOGIL_BYTES
    gil = _release_gil() if nogil else 0
    if n >= nt_threshold and n > 0 and (d + n <= s or s + n <= d):
        _copy_stream(dst, 0, src, 0, n)
        _store_fence()
    else:
        _memmove(dst, 0, src, 0, n)
    if nogil:
        _restore_gil(gil)
    return 0


def _copy2d_kernel(dst, dst_pitch, src, src_pitch, width, height, nt_threshold, nt_min_width):
    """Copy `height` rows of `width` bytes, memmove semantics for the whole region.

    A row is one memmove, as in numpy's strided copy; disjoint regions with
    wide rows and a large payload use non-temporal stores.  Overlapping regions
    go row by row in the order that reads every source row before it is
    overwritten, or, when no order does (the regions cross), through a packed
    temporary.
    """
    if not (_region_ok(dst.shape[0], dst_pitch, width, height)
            and _region_ok(src.shape[0], src_pitch, width, height)):
        raise ValueError("copy_2d: region out of bounds")
    if width == 0 or height == 0:
        return
    d = _address(dst)
    s = _address(src)
    d_end = d + (height - 1) * dst_pitch + width
    s_end = s + (height - 1) * src_pitch + width
    disjoint = d_end <= s or s_end <= d
    if d == s and dst_pitch == src_pitch:
        return
    if disjoint or (d <= s and dst_pitch <= src_pitch):
        order = 1  # rows in ascending order
    elif d >= s and dst_pitch >= src_pitch:
        order = -1  # rows in descending order
    else:
        order = 0  # the regions cross: through a packed temporary
    # Allocated while the GIL is held: nothing after the release may raise.
    tmp = np.empty(width * height, dtype=np.uint8) if order == 0 else dst
    nogil = width * height >= _NOGIL_BYTES
    gil = _release_gil() if nogil else 0
    if order == 1 and disjoint and width >= nt_min_width and width * height >= nt_threshold:
        for r in range(height):
            _copy_stream(dst, r * dst_pitch, src, r * src_pitch, width)
        _store_fence()
    elif order == 1:
        for r in range(height):
            _memmove(dst, r * dst_pitch, src, r * src_pitch, width)
    elif order == -1:
        for r in range(height - 1, -1, -1):
            _memmove(dst, r * dst_pitch, src, r * src_pitch, width)
    else:
        for r in range(height):
            _memmove(tmp, r * width, src, r * src_pitch, width)
        for r in range(height):
            _memmove(dst, r * dst_pitch, tmp, r * width, width)
    if nogil:
        _restore_gil(gil)


def _fill_kernel(dst, value, unit, nt_threshold, defer_from):
    """Fill dst with `value`: a byte (unit 1) or a little-endian uint32 repeated
    from dst[0] (unit 4, length a multiple of 4).  Returns 0; or, from
    defer_from bytes up, n, having written nothing (as `_copy_kernel`)."""
    n = dst.shape[0]
    if unit == 1:
        pat = (value & 0xFF) * 0x01010101
    elif unit == 4 and n % 4 == 0:
        pat = value & 0xFFFFFFFF
    else:
        raise ValueError("fill: length is not a multiple of the unit")
    if n >= defer_from:
        return n
    if n <= 64:
        _fill_small(dst, 0, n, pat)
        return 0
    nogil = n >= _NOGIL_BYTES
    gil = _release_gil() if nogil else 0
    if n < nt_threshold and pat == (pat & 0xFF) * 0x01010101:
        _memset(dst, 0, pat, n)
    else:
        _fill_span(dst, n, pat, n >= nt_threshold)
    if nogil:
        _restore_gil(gil)
    return 0


def _fill_span(dst, n, pat, nt):
    """Pattern fill of n > 64 bytes from dst[0], vector stores (non-temporal if nt)."""
    head = (-_address(dst)) & 63
    _fill_small(dst, 0, head, pat)
    d = head
    v = _rot(pat, head)  # head is also the phase of every later 64-byte block
    if nt:
        while d + 256 <= n:
            _set256_nt(dst, d, v)
            d += 256
        while d + 64 <= n:
            _set64_nt(dst, d, v)
            d += 64
        _store_fence()
    else:
        while d + 256 <= n:
            _set256(dst, d, v)
            d += 256
        while d + 64 <= n:
            _set64(dst, d, v)
            d += 64
    _fill_small(dst, d, n - d, pat)


def _load():
    """Import Numba and compile every kernel (or load it from the on-disk cache); once per process."""
    global _ready, _address, _memmove, _memset, _store_fence, _release_gil, _restore_gil
    global _cp128x2_nt, _cp128_nt, _cp64_nt
    global _set4, _set8, _set16, _set32, _set64, _set256, _set64_nt, _set256_nt
    global _copy_stream, _rot, _fill_small, _fill_span, _region_ok
    global _copy_kernel, _copy2d_kernel, _fill_kernel
    with _load_lock:
        if _ready:
            return
        from numba import njit, types

        _address = _make_address()
        _memmove = _make_memmove()
        _memset = _make_memset()
        _store_fence = _make_store_fence()
        _release_gil, _restore_gil = _make_gil_ops()
        _cp128x2_nt = _make_copy_block(128, pages=2, nontemporal=True)
        _cp128_nt = _make_copy_block(128, nontemporal=True)
        _cp64_nt = _make_copy_block(64, nontemporal=True)
        _set4 = _make_set_block(4)
        _set8 = _make_set_block(8)
        _set16 = _make_set_block(16)
        _set32 = _make_set_block(32)
        _set64 = _make_set_block(64)
        _set256 = _make_set_block(256)
        _set64_nt = _make_set_block(64, nontemporal=True)
        _set256_nt = _make_set_block(256, nontemporal=True)

        _copy_stream = njit(**_HELPER)(_copy_stream)
        _rot = njit(**_HELPER)(_rot)
        _fill_small = njit(**_HELPER)(_fill_small)
        _fill_span = njit(**_HELPER)(_fill_span)
        _region_ok = njit(**_HELPER)(_region_ok)

        # Exact signatures: compiled (or loaded) now, and any other argument
        # types raise TypeError instead of compiling a new specialization.
        u8 = types.Array(types.uint8, 1, "C")
        u8_ro = types.Array(types.uint8, 1, "C", readonly=True)  # a writable array converts to it
        i64 = types.int64
        _copy_kernel = njit([types.int64(u8, u8_ro, i64, i64)], **_JIT)(_copy_kernel)
        _copy2d_kernel = njit([types.none(u8, i64, u8_ro, i64, i64, i64, i64, i64)], **_JIT)(_copy2d_kernel)
        _fill_kernel = njit([types.int64(u8, i64, i64, i64, i64)], **_JIT)(_fill_kernel)
        _ready = True


class _Compiled(Mapping):
    """Name -> compiled kernel (a Numba dispatcher); the first lookup compiles them."""

    _NAMES = ("copy", "copy_2d", "fill")

    def __getitem__(self, name):
        if name not in self._NAMES:
            raise KeyError(name)
        _load()
        return {"copy": _copy_kernel, "copy_2d": _copy2d_kernel, "fill": _fill_kernel}[name]

    def __iter__(self):
        return iter(self._NAMES)

    def __len__(self):
        return len(self._NAMES)

    def __repr__(self):
        return f"<emu.kernels.KERNELS {list(self._NAMES)}{'' if _ready else ' (not compiled yet)'}>"


# The compiled kernels; every public call runs exactly one of them.
KERNELS = _Compiled()


# ---------------------------------------------------------------------------
# Argument checks of the slow path (messages for what the fast path refuses)
# ---------------------------------------------------------------------------

def _check_bytes(arr, name, writable):
    if not isinstance(arr, np.ndarray):
        raise ValueError(f"{name} must be a numpy.ndarray, got {type(arr).__name__}")
    if arr.dtype != np.uint8:
        raise ValueError(f"{name} must have dtype uint8, got {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got {arr.ndim}-D")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be contiguous")
    if writable and not arr.flags.writeable:
        raise ValueError(f"{name} is read-only")


def _plain(arr):
    """arr (checked by _check_bytes) as a base-class ndarray, the type the compiled kernels take."""
    return arr if type(arr) is np.ndarray else arr.view(np.ndarray)


def _int_arg(value, name):
    try:
        v = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {type(value).__name__}") from None
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return v


def _int_value(value):
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"value must be an integer, got {type(value).__name__}") from None


def _checked_copy(dst, src):
    _check_bytes(dst, "dst", True)
    _check_bytes(src, "src", False)
    n = dst.shape[0]
    if src.shape[0] != n:
        raise ValueError(f"dst and src lengths differ: {n} != {src.shape[0]}")
    _copy_now(_plain(dst), _plain(src), n)


def _copy_now(dst, src, n: int) -> None:
    """The 1-D copy of n bytes on the store path `COPY_STORES` picks (an overlapping one is memmove whatever
    the threshold, and teaches nothing)."""
    if np.may_share_memory(dst, src):
        _copy_kernel(dst, src, NEVER, NEVER)
    else:
        _learned(COPY_STORES, n, lambda nt: _copy_kernel(dst, src, nt, NEVER))


def _fill_now(dst, value: int, unit: int, n: int) -> None:
    """The fill of n bytes on the store path `FILL_STORES` picks."""
    _learned(FILL_STORES, n, lambda nt: _fill_kernel(dst, value, unit, nt, NEVER))


def _copy_2d_now(dst, dst_pitch: int, src, src_pitch: int, width: int, height: int) -> None:
    """The 2-D copy on the store path `COPY_2D_STORES` picks for its payload; rows narrower than NT_2D_MIN_WIDTH
    and overlapping regions never stream (and teach nothing)."""
    payload = width * height
    if payload < COPY_2D_STORES.low or width < NT_2D_MIN_WIDTH or np.may_share_memory(dst, src):
        _copy2d_kernel(dst, dst_pitch, src, src_pitch, width, height, NEVER, NT_2D_MIN_WIDTH)
    else:
        _learned(COPY_2D_STORES, payload,
                 lambda nt: _copy2d_kernel(dst, dst_pitch, src, src_pitch, width, height, nt, NT_2D_MIN_WIDTH))


def _learned(stores: Crossover, n: int, run) -> None:
    """`run(nt_threshold)` on the store path `stores` picks for n bytes, timed to teach it (it keeps the timings
    of its band only)."""
    streamed = stores.streams(n)
    start = perf_counter()
    run(0 if streamed else NEVER)
    stores.took(n, streamed, perf_counter() - start)


def _checked_copy_2d(dst, dst_pitch, src, src_pitch, width, height):
    _check_bytes(dst, "dst", True)
    _check_bytes(src, "src", False)
    dst_pitch = _int_arg(dst_pitch, "dst_pitch")
    src_pitch = _int_arg(src_pitch, "src_pitch")
    width = _int_arg(width, "width")
    height = _int_arg(height, "height")
    if width > dst_pitch:
        raise ValueError(f"width {width} exceeds dst_pitch {dst_pitch}")
    if width > src_pitch:
        raise ValueError(f"width {width} exceeds src_pitch {src_pitch}")
    if width == 0 or height == 0:
        return
    d_need = (height - 1) * dst_pitch + width
    s_need = (height - 1) * src_pitch + width
    if d_need > dst.shape[0]:
        raise ValueError(f"dst too short: {height} rows of pitch {dst_pitch} need {d_need} bytes, have {dst.shape[0]}")
    if s_need > src.shape[0]:
        raise ValueError(f"src too short: {height} rows of pitch {src_pitch} need {s_need} bytes, have {src.shape[0]}")
    if height == 1:  # the pitches do not matter (and may exceed the kernel's integers)
        dst_pitch = src_pitch = width
    _copy_2d_now(_plain(dst), dst_pitch, _plain(src), src_pitch, width, height)


def _checked_fill(dst, value, unit):
    _check_bytes(dst, "dst", True)
    value = _int_value(value) & (0xFF if unit == 1 else 0xFFFFFFFF)
    n = dst.shape[0]
    if n % unit:
        raise ValueError(f"dst length {n} is not a multiple of {unit}")
    _fill_now(_plain(dst), value, unit, n)


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------

def copy(dst: np.ndarray, src: np.ndarray) -> None:
    """Copy src into dst (1-D uint8, equal length) with memmove semantics."""
    if not _ready:
        _load()
    try:
        n = _copy_kernel(dst, src, NEVER, COPY_STORES.low)  # (below the crossover's band: copied here)
        if n:
            _copy_now(dst, src, n)
    except (TypeError, ValueError, OverflowError):
        _checked_copy(dst, src)


def copy_2d(dst: np.ndarray, dst_pitch: int, src: np.ndarray, src_pitch: int,
            width: int, height: int) -> None:
    """Copy `height` rows of `width` bytes between pitched 1-D uint8 buffers (memmove semantics)."""
    if not _ready:
        _load()
    if type(dst_pitch) is int and type(src_pitch) is int and type(width) is int and type(height) is int:
        try:
            _copy_2d_now(dst, dst_pitch, src, src_pitch, width, height)
            return
        except (TypeError, ValueError, OverflowError):
            pass
    _checked_copy_2d(dst, dst_pitch, src, src_pitch, width, height)


def fill(dst: np.ndarray, value: int) -> None:
    """Set every byte of dst (1-D uint8) to value & 0xFF."""
    if not _ready:
        _load()
    if type(value) is int:
        try:
            n = _fill_kernel(dst, value, 1, NEVER, FILL_STORES.low)  # (below the band: written here)
            if n:
                _fill_now(dst, value, 1, n)
            return
        except (TypeError, ValueError, OverflowError):
            pass
    _checked_fill(dst, value, 1)


def fill_u32(dst: np.ndarray, value: int) -> None:
    """Fill dst (1-D uint8, length a multiple of 4, any alignment) with little-endian uint32 value & 0xFFFFFFFF."""
    if not _ready:
        _load()
    if type(value) is int:
        try:
            n = _fill_kernel(dst, value, 4, NEVER, FILL_STORES.low)  # (below the band: written here)
            if n:
                _fill_now(dst, value, 4, n)
            return
        except (TypeError, ValueError, OverflowError):
            pass
    _checked_fill(dst, value, 4)


def warmup() -> None:
    """Compile (or load from the on-disk cache) every kernel, and run each via the public API."""
    buf = np.zeros(512, dtype=np.uint8)
    other = np.zeros(512, dtype=np.uint8)
    copy(buf[:100], other[:100])
    copy(buf[0:100], buf[10:110])
    copy_2d(buf, 40, other, 40, 30, 4)
    copy_2d(buf[8:], 40, buf[0:], 40, 30, 4)
    fill(buf, 1)
    fill_u32(buf, 1)
