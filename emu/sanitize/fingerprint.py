"""Fingerprints of a copy's source, taken when the copy is queued and checked when it runs (functional mode).

A host program that writes a buffer through a numpy array is invisible to the emulator; what it can see is
that the bytes changed. A source of up to SNAPSHOT bytes is kept whole (the changed bytes are then exact);
a larger one is hashed in up to BLOCKS blocks, so a change is placed to within a block. The hash is a
Numba loop over 64-bit words, four independent multiply-xor lanes per block, each finished by a bijective
mix: any change to one word changes its block's hash; the lanes run at memory speed. Numba is imported, and
the loop compiled (or loaded from its on-disk cache), on first use only.
"""
from __future__ import annotations

import threading

import numpy as np

SNAPSHOT = 64 << 10  # bytes kept whole
BLOCKS = 64  # at most this many hashed blocks

_lock = threading.Lock()
_kernel = None


def _load():
    global _kernel
    with _lock:
        if _kernel is not None:
            return _kernel
        import numba

        @numba.njit(cache=True, nogil=True, boundscheck=False, parallel=False)
        def block_hashes(words, per_block, out):  # pragma: no cover - compiled
            m = np.uint64(0xFF51AFD7ED558CCD)
            n = words.shape[0]
            for b in range(out.shape[0]):
                lo = b * per_block
                hi = min(lo + per_block, n)
                h0 = np.uint64(0x9E3779B97F4A7C15)
                h1 = np.uint64(0xC2B2AE3D27D4EB4F)
                h2 = np.uint64(0x165667B19E3779F9)
                h3 = np.uint64(0x27D4EB2F165667C5)
                i = lo
                while i + 4 <= hi:
                    h0 = (h0 ^ words[i]) * m
                    h1 = (h1 ^ words[i + 1]) * m
                    h2 = (h2 ^ words[i + 2]) * m
                    h3 = (h3 ^ words[i + 3]) * m
                    i += 4
                while i < hi:
                    h0 = (h0 ^ words[i]) * m
                    i += 1
                total = np.uint64(hi - lo)
                for h in (h0, h1, h2, h3):  # murmur3's finaliser: a bijection, so no change is lost
                    h ^= h >> np.uint64(33)
                    h *= m
                    h ^= h >> np.uint64(33)
                    h *= np.uint64(0xC4CEB9FE1A85EC53)
                    h ^= h >> np.uint64(33)
                    total = (total << np.uint64(17) | total >> np.uint64(47)) + h
                out[b] = total

        _kernel = block_hashes
        return _kernel


class Fingerprint:
    """The state of `nbytes` bytes: the bytes themselves (small) or block hashes and the tail bytes."""

    __slots__ = ("nbytes", "data", "hashes", "block", "tail")

    def __init__(self, buf: np.ndarray):
        n = self.nbytes = buf.size
        if n <= SNAPSHOT:
            self.data = buf.tobytes()
            self.hashes = self.tail = None
            self.block = 0
            return
        self.data = None
        words = n // 8
        per_block = -(-words // BLOCKS)
        self.block = per_block * 8
        self.hashes = _hashes(buf, words, per_block)
        self.tail = buf[words * 8:].tobytes()

    def changed(self, buf: np.ndarray) -> tuple[int, int] | None:
        """The byte range [lo, hi) (relative) that differs now, to the block; None if nothing does."""
        if self.data is not None:
            now = np.frombuffer(self.data, dtype=np.uint8)
            diff = np.flatnonzero(now != buf)
            return None if not diff.size else (int(diff[0]), int(diff[-1]) + 1)
        words = self.nbytes // 8
        per_block = self.block // 8
        hashes = _hashes(buf, words, per_block)
        bad = np.flatnonzero(hashes != self.hashes)
        tail_changed = buf[words * 8:].tobytes() != self.tail
        if not bad.size and not tail_changed:
            return None
        lo = int(bad[0]) * self.block if bad.size else words * 8
        hi = min(int(bad[-1] + 1) * self.block, self.nbytes) if bad.size else self.nbytes
        if tail_changed:
            hi = self.nbytes
        return lo, hi


def _hashes(buf: np.ndarray, words: int, per_block: int) -> np.ndarray:
    out = np.empty(-(-words // per_block) if words else 0, dtype=np.uint64)
    if words:
        _load()(buf[:words * 8].view(np.uint64), per_block, out)
    return out


class Source:
    """Host bytes a queued task reads, with their fingerprint when it was queued: [lo, lo + width) of `region`,
    or (a 2-D copy) `rows` rows of `width` bytes `pitch` apart from lo, only the rows (another copy's bytes in
    the gaps are not this one's). `hi`: the end of the last row."""

    __slots__ = ("region", "lo", "hi", "width", "pitch", "rows", "fp")

    def __init__(self, region, lo: int, width: int, pitch: int = 0, rows: int = 1):
        self.region, self.lo, self.width, self.pitch = region, lo, width, pitch
        if rows > 1:
            span = min(lo + (rows - 1) * pitch + width, region.size) - lo
            rows = (span - width) // pitch + 1 if span >= width else 0
        self.rows = rows
        self.hi = lo + (rows - 1) * pitch + width if rows > 1 else lo + width
        self.fp = Fingerprint(self.bytes())

    def bytes(self) -> np.ndarray:
        """The bytes now, as one contiguous array (a 2-D source's rows packed)."""
        span = self.region.view(self.lo, self.hi - self.lo)
        if self.rows <= 1:
            return span
        rows = np.lib.stride_tricks.as_strided(span, (self.rows, self.width), (self.pitch, 1), writeable=False)
        return np.ascontiguousarray(rows).reshape(-1)

    def refresh(self) -> None:
        """Take the fingerprint again (the bytes changed by an ordered write)."""
        self.fp = Fingerprint(self.bytes())

    def changed(self) -> tuple[int, int] | None:
        """The offsets [lo, hi) of the region that changed since the fingerprint (to its block); None if
        nothing did."""
        c = self.fp.changed(self.bytes())
        if c is None:
            return None
        if self.rows <= 1:
            return self.lo + c[0], self.lo + c[1]
        w, p = self.width, self.pitch
        a, b = c[0], c[1] - 1
        return self.lo + a // w * p + a % w, self.lo + b // w * p + b % w + 1

    @property
    def exact(self) -> bool:
        return self.fp.data is not None
