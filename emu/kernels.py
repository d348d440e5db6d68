"""Byte-moving kernels behind the emulated ACL memory APIs.

Simulated copy/memset tasks only model time; the bytes actually move when a
task completes, through the functions here (Numba-compiled, GIL released).
"""

from __future__ import annotations

import operator

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["copy", "copy_2d", "fill", "fill_u32", "warmup", "KERNELS"]

# 1-D copies and fills of at least this many bytes use non-temporal stores:
# the data would not stay in cache anyway, and skipping the read-for-ownership
# of destination lines nearly doubles bandwidth.  Below it, cached stores win.
NT_THRESHOLD = 32 << 20

# copy_2d prefetches the row this many bytes (rounded up to whole rows) ahead.
_PREFETCH_AHEAD = 512

_JIT = dict(nogil=True, cache=True, boundscheck=False)
_HELPER = dict(_JIT, inline="always")
_PAGE = 4096
_I8 = ir.IntType(8)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


# ---------------------------------------------------------------------------
# LLVM-level building blocks.  They take (array, byte offset) pairs and emit
# plain vector loads/stores; the callers below guarantee the offsets are in
# bounds and, for non-temporal stores, that the destination is 64-byte aligned.
# ---------------------------------------------------------------------------

def _is_u8_array(t):
    return isinstance(t, types.Array) and t.dtype == types.uint8 and t.ndim == 1 and t.layout == "C"


def _elem_ptr(context, builder, arrty, arr, idx, idxty, extra=0):
    data = context.make_array(arrty)(context, builder, arr).data
    off = context.cast(builder, idx, idxty, types.intp)
    if extra:
        off = builder.add(off, _I64(extra))
    return builder.gep(data, [off], source_etype=_I8)


def _nontemporal(builder, store):
    store.set_metadata("nontemporal", builder.module.add_metadata([_I32(1)]))


def _make_copy_block(nbytes, pages=1, nontemporal=False):
    """Copy `nbytes` at dst[di:], src[si:] (and at +4096*k for k < pages).

    All loads are issued before any store, so a block behaves like a
    read-then-write of a temporary, which keeps chunked overlapping moves
    correct.
    """
    vty = ir.VectorType(_I8, nbytes)

    @intrinsic
    def block(typingctx, dst, di, src, si):
        if not (_is_u8_array(dst) and _is_u8_array(src)
                and isinstance(di, types.Integer) and isinstance(si, types.Integer)):
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
    lanes = nbytes // 4
    vty = ir.VectorType(_I32, lanes)

    @intrinsic
    def block(typingctx, dst, di, pat):
        if not (_is_u8_array(dst) and isinstance(di, types.Integer)
                and isinstance(pat, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            dp = _elem_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            v32 = builder.trunc(context.cast(builder, args[2], sig.args[2], types.int64), _I32)
            if lanes == 1:
                val, pty = v32, _I32.as_pointer()
            else:
                undef = ir.Constant(vty, ir.Undefined)
                val = builder.insert_element(undef, v32, _I32(0))
                val = builder.shuffle_vector(val, undef, ir.Constant(vty, [0] * lanes))
                pty = vty.as_pointer()
            st = builder.store(val, builder.bitcast(dp, pty), align=64 if nontemporal else 1)
            if nontemporal:
                _nontemporal(builder, st)
            return context.get_dummy_value()

        return types.none(dst, di, pat), codegen

    return block


@intrinsic
def _address(typingctx, arr):
    """Integer address of arr[0]."""
    if not _is_u8_array(arr):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        return builder.ptrtoint(data, _I64)

    return types.int64(arr), codegen


def _make_prefetch(for_write):
    @intrinsic
    def prefetch(typingctx, arr, idx):
        """Hint that the cache line holding arr[idx] is needed soon."""
        if not (_is_u8_array(arr) and isinstance(idx, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            p = _elem_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            fnty = ir.FunctionType(ir.VoidType(), [p.type, _I32, _I32, _I32])
            name = "llvm.prefetch.p0" if getattr(p.type, "is_opaque", False) else "llvm.prefetch.p0i8"
            fn = cgutils.get_or_insert_function(builder.module, fnty, name)
            builder.call(fn, [p, _I32(int(for_write)), _I32(3), _I32(1)])
            return context.get_dummy_value()

        return types.none(arr, idx), codegen

    return prefetch


_prefetch_r = _make_prefetch(False)
_prefetch_w = _make_prefetch(True)


@intrinsic
def _store_fence(typingctx):
    """Order preceding non-temporal stores before anything that follows."""

    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.none(), codegen


_cp2 = _make_copy_block(2)
_cp4 = _make_copy_block(4)
_cp8 = _make_copy_block(8)
_cp16 = _make_copy_block(16)
_cp32 = _make_copy_block(32)
_cp64 = _make_copy_block(64)
_cp256 = _make_copy_block(256)
_cp64_nt = _make_copy_block(64, nontemporal=True)
_cp256_nt = _make_copy_block(256, nontemporal=True)
_cp256x4_nt = _make_copy_block(256, pages=4, nontemporal=True)

_set4 = _make_set_block(4)
_set8 = _make_set_block(8)
_set16 = _make_set_block(16)
_set32 = _make_set_block(32)
_set64 = _make_set_block(64)
_set256 = _make_set_block(256)
_set64_nt = _make_set_block(64, nontemporal=True)
_set256_nt = _make_set_block(256, nontemporal=True)


# ---------------------------------------------------------------------------
# Span helpers (callers guarantee the spans are in bounds).
# ---------------------------------------------------------------------------

@njit(**_HELPER)
def _copy_small(dst, di, src, si, n):
    """Disjoint copy of 0 <= n <= 64 bytes using two possibly overlapping blocks."""
    if n > 32:
        _cp32(dst, di, src, si)
        _cp32(dst, di + n - 32, src, si + n - 32)
    elif n > 16:
        _cp16(dst, di, src, si)
        _cp16(dst, di + n - 16, src, si + n - 16)
    elif n > 8:
        _cp8(dst, di, src, si)
        _cp8(dst, di + n - 8, src, si + n - 8)
    elif n > 4:
        _cp4(dst, di, src, si)
        _cp4(dst, di + n - 4, src, si + n - 4)
    elif n > 2:
        _cp2(dst, di, src, si)
        _cp2(dst, di + n - 2, src, si + n - 2)
    elif n > 0:
        dst[di] = src[si]
        dst[di + n - 1] = src[si + n - 1]


@njit(**_HELPER)
def _copy_span(dst, di, src, si, n, nt):
    """Disjoint copy of n bytes; destination stores are 64-byte aligned."""
    if n <= 64:
        _copy_small(dst, di, src, si, n)
        return
    head = (-(_address(dst) + di)) & 63
    end = di + n
    if nt:
        _copy_small(dst, di, src, si, head)
    else:
        _cp64(dst, di, src, si)
    d = di + head
    s = si + head
    if nt:
        while d + 4 * _PAGE <= end:
            for off in range(0, _PAGE, 256):
                _cp256x4_nt(dst, d + off, src, s + off)
            d += 4 * _PAGE
            s += 4 * _PAGE
        while d + 256 <= end:
            _cp256_nt(dst, d, src, s)
            d += 256
            s += 256
        while d + 64 <= end:
            _cp64_nt(dst, d, src, s)
            d += 64
            s += 64
        _copy_small(dst, d, src, s, end - d)
    else:
        while d + 256 <= end:
            _cp256(dst, d, src, s)
            d += 256
            s += 256
        while d + 64 <= end:
            _cp64(dst, d, src, s)
            d += 64
            s += 64
        if d < end:
            _cp64(dst, end - 64, src, si + n - 64)


@njit(**_HELPER)
def _move_span_fwd(dst, di, src, si, n):
    """Copy n bytes in ascending blocks; correct for overlap when dst <= src."""
    i = 0
    while i + 256 <= n:
        _cp256(dst, di + i, src, si + i)
        i += 256
    while i + 32 <= n:
        _cp32(dst, di + i, src, si + i)
        i += 32
    while i + 4 <= n:
        _cp4(dst, di + i, src, si + i)
        i += 4
    while i < n:
        dst[di + i] = src[si + i]
        i += 1


@njit(**_HELPER)
def _move_span_bwd(dst, di, src, si, n):
    """Copy n bytes in descending blocks; correct for overlap when dst >= src."""
    i = n
    while i >= 256:
        i -= 256
        _cp256(dst, di + i, src, si + i)
    while i >= 32:
        i -= 32
        _cp32(dst, di + i, src, si + i)
    while i >= 4:
        i -= 4
        _cp4(dst, di + i, src, si + i)
    while i > 0:
        i -= 1
        dst[di + i] = src[si + i]


@njit(**_HELPER)
def _rot(pat, k):
    """The uint32 pattern as seen from byte offset k (little-endian)."""
    return ((pat | (pat << 32)) >> (8 * (k & 3))) & 0xFFFFFFFF


@njit(**_HELPER)
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


# ---------------------------------------------------------------------------
# Kernels: one call per API operation.  Each validates its own bounds.
# ---------------------------------------------------------------------------

@njit(**_JIT)
def _copy_kernel(dst, src, nt):
    """Copy between non-overlapping equal-length arrays."""
    n = dst.shape[0]
    if src.shape[0] != n:
        raise ValueError("copy: length mismatch")
    _copy_span(dst, 0, src, 0, n, nt)
    if nt:
        _store_fence()


@njit(**_JIT)
def _move_fwd_kernel(dst, src):
    n = dst.shape[0]
    if src.shape[0] != n:
        raise ValueError("copy: length mismatch")
    _move_span_fwd(dst, 0, src, 0, n)


@njit(**_JIT)
def _move_bwd_kernel(dst, src):
    n = dst.shape[0]
    if src.shape[0] != n:
        raise ValueError("copy: length mismatch")
    _move_span_bwd(dst, 0, src, 0, n)


@njit(**_HELPER)
def _region_ok(length, pitch, width, height):
    """True if rows of `width` bytes every `pitch` bytes, `height` times, fit in `length`."""
    if width < 0 or height < 0 or pitch < width:
        return False
    if width == 0 or height == 0:
        return True
    return length >= width and height - 1 <= (length - width) // pitch


@njit(**_JIT)
def _copy2d_kernel(dst, dst_pitch, src, src_pitch, width, height):
    """2D copy between non-overlapping regions.

    Rows are short, non-contiguous streams that the hardware prefetchers pick
    up late, so the lines of the row ~512 bytes ahead are prefetched (dst for
    writing).  Non-temporal stores measured slower than this at every width.
    """
    if not (_region_ok(dst.shape[0], dst_pitch, width, height)
            and _region_ok(src.shape[0], src_pitch, width, height)):
        raise ValueError("copy_2d: region out of bounds")
    if width == 0 or height == 0:
        return
    ahead = (_PREFETCH_AHEAD + dst_pitch - 1) // dst_pitch
    pd = ahead * dst_pitch
    ps = ahead * src_pitch
    d = 0
    s = 0
    if width <= 64:
        for r in range(height):
            if r + ahead < height:
                _prefetch_w(dst, d + pd)
                _prefetch_w(dst, d + pd + width - 1)
                _prefetch_r(src, s + ps)
                _prefetch_r(src, s + ps + width - 1)
            _copy_small(dst, d, src, s, width)
            d += dst_pitch
            s += src_pitch
    else:
        for r in range(height):
            if r + ahead < height:
                for off in range(0, width, 64):
                    _prefetch_w(dst, d + pd + off)
                    _prefetch_r(src, s + ps + off)
                _prefetch_w(dst, d + pd + width - 1)
                _prefetch_r(src, s + ps + width - 1)
            _copy_span(dst, d, src, s, width, False)
            d += dst_pitch
            s += src_pitch


@njit(**_JIT)
def _move2d_fwd_kernel(dst, dst_pitch, src, src_pitch, width, height):
    """2D copy in ascending order; correct when dst starts at or before src and dst_pitch <= src_pitch."""
    if not (_region_ok(dst.shape[0], dst_pitch, width, height)
            and _region_ok(src.shape[0], src_pitch, width, height)):
        raise ValueError("copy_2d: region out of bounds")
    for r in range(height):
        _move_span_fwd(dst, r * dst_pitch, src, r * src_pitch, width)


@njit(**_JIT)
def _move2d_bwd_kernel(dst, dst_pitch, src, src_pitch, width, height):
    """2D copy in descending order; correct when dst starts at or after src and dst_pitch >= src_pitch."""
    if not (_region_ok(dst.shape[0], dst_pitch, width, height)
            and _region_ok(src.shape[0], src_pitch, width, height)):
        raise ValueError("copy_2d: region out of bounds")
    for r in range(height - 1, -1, -1):
        _move_span_bwd(dst, r * dst_pitch, src, r * src_pitch, width)


@njit(**_JIT)
def _fill_kernel(dst, pat, nt):
    """Fill dst with the little-endian uint32 `pat` repeated from dst[0]; any length."""
    n = dst.shape[0]
    pat &= 0xFFFFFFFF
    if n <= 64:
        _fill_small(dst, 0, n, pat)
        return
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


# Top-level compiled kernels; every public call runs one of them (two for a
# crossing copy_2d).
KERNELS = {
    "copy": _copy_kernel,
    "move_fwd": _move_fwd_kernel,
    "move_bwd": _move_bwd_kernel,
    "copy_2d": _copy2d_kernel,
    "move_2d_fwd": _move2d_fwd_kernel,
    "move_2d_bwd": _move2d_bwd_kernel,
    "fill": _fill_kernel,
}


# ---------------------------------------------------------------------------
# Public API
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


def _address_of(arr):
    return arr.__array_interface__["data"][0]


def _int_arg(value, name):
    try:
        v = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {type(value).__name__}") from None
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return v


def copy(dst: np.ndarray, src: np.ndarray) -> None:
    """Copy src into dst (1-D uint8, equal length) with memmove semantics."""
    _check_bytes(dst, "dst", True)
    _check_bytes(src, "src", False)
    n = dst.shape[0]
    if src.shape[0] != n:
        raise ValueError(f"dst and src lengths differ: {n} != {src.shape[0]}")
    if n == 0:
        return
    d = _address_of(dst)
    s = _address_of(src)
    if d == s:
        return
    if d + n <= s or s + n <= d:
        _copy_kernel(dst, src, n >= NT_THRESHOLD)
    elif d < s:
        _move_fwd_kernel(dst, src)
    else:
        _move_bwd_kernel(dst, src)


def copy_2d(dst: np.ndarray, dst_pitch: int, src: np.ndarray, src_pitch: int,
            width: int, height: int) -> None:
    """Copy `height` rows of `width` bytes between pitched 1-D uint8 buffers (memmove semantics)."""
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
    if height == 1:
        copy(dst[:width], src[:width])
        return
    d = _address_of(dst)
    s = _address_of(src)
    if d + d_need <= s or s + s_need <= d:
        _copy2d_kernel(dst, dst_pitch, src, src_pitch, width, height)
    elif d <= s and dst_pitch <= src_pitch:
        _move2d_fwd_kernel(dst, dst_pitch, src, src_pitch, width, height)
    elif d >= s and dst_pitch >= src_pitch:
        _move2d_bwd_kernel(dst, dst_pitch, src, src_pitch, width, height)
    else:
        # The regions cross: no single order is safe, go through a packed temporary.
        tmp = np.empty(width * height, dtype=np.uint8)
        _copy2d_kernel(tmp, width, src, src_pitch, width, height)
        _copy2d_kernel(dst, dst_pitch, tmp, width, width, height)


def _int_value(value):
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"value must be an integer, got {type(value).__name__}") from None


def fill(dst: np.ndarray, value: int) -> None:
    """Set every byte of dst (1-D uint8) to value & 0xFF."""
    _check_bytes(dst, "dst", True)
    value = _int_value(value) & 0xFF
    n = dst.shape[0]
    if n:
        _fill_kernel(dst, value * 0x01010101, n >= NT_THRESHOLD)


def fill_u32(dst: np.ndarray, value: int) -> None:
    """Fill dst (1-D uint8, length a multiple of 4, any alignment) with little-endian uint32 value & 0xFFFFFFFF."""
    _check_bytes(dst, "dst", True)
    value = _int_value(value) & 0xFFFFFFFF
    n = dst.shape[0]
    if n % 4:
        raise ValueError(f"dst length {n} is not a multiple of 4")
    if n:
        _fill_kernel(dst, value, n >= NT_THRESHOLD)


def warmup() -> None:
    """Compile (or load from the on-disk cache) every kernel via the public API."""
    buf = np.zeros(512, dtype=np.uint8)
    other = np.zeros(512, dtype=np.uint8)
    copy(buf[:100], other[:100])
    copy(buf[0:100], buf[10:110])
    copy(buf[10:110], buf[0:100])
    copy_2d(buf, 40, other, 40, 30, 4)
    copy_2d(buf[0:], 40, buf[8:], 40, 30, 4)
    copy_2d(buf[8:], 40, buf[0:], 40, 30, 4)
    fill(buf, 1)
    fill_u32(buf, 1)
