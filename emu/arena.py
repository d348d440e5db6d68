"""Device memory at fixed host addresses, so that device code can reach it through plain pointers.

A device's addresses are a window above the user address space (`emu.memory.DEVICE_BASE`): no host code can
dereference them. Kernels run on the CPU (`emu.device`) take `__gm__` pointers and do arithmetic on them, so
the bytes of a device allocation must lie where pointer arithmetic finds them: at `base + (address - window)`
inside one range of host addresses per device, the arena, reserved once without memory behind it
(PROT_NONE, MAP_NORESERVE) and made readable and writable from its start up to the highest allocation touched
so far (`top`). Pages come from the kernel when first written, so an arena costs what its allocations use.
A pointer a kernel moves past `top` faults (the launch fails as an AI Core exception); one that stays below
it reaches memory of the device, as on hardware.

Freed bytes are given back to the system (whole pages, MADV_DONTNEED) and zeroed (the parts of pages shared
with a neighbour), so that the next allocation there starts from zeros as a new one does; the range stays
readable and writable, so a view a queued task still holds never faults. An arena is never unmapped: one the
address space no longer needs goes back to a pool (`release`), zeroed, for the next address space of the
process (an emulated process reconfigured, a test), since views of it may outlive the space.

Where the reservation is refused (an address-space limit, `ulimit -v`), `Arena.reserve` returns None and
device memory is ordinary host memory, which kernels cannot reach (`emu.device` says so when one launches).
"""
from __future__ import annotations

import ctypes
import mmap
import os
import threading

import numpy as np

PAGE = mmap.PAGESIZE
_PROT_NONE, _PROT_RW = 0, mmap.PROT_READ | mmap.PROT_WRITE
_MAP_NORESERVE = 0x4000  # Linux (mmap(2)); not in Python's mmap module before 3.13
_MADV_DONTNEED = 4
_FAILED = ctypes.c_void_p(-1).value

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)

_pool: dict[int, list["Arena"]] = {}  # span: arenas given back, zeroed (see `release`)
_pool_lock = threading.Lock()


def page_up(n: int) -> int:
    """`n` rounded up to whole pages."""
    return -(-n // PAGE) * PAGE


def _down(n: int) -> int:
    return n // PAGE * PAGE


class Arena:
    """`span` bytes of host addresses at `base` standing for a device window's first `span` addresses."""

    __slots__ = ("base", "span", "top")

    def __init__(self, base: int, span: int):
        self.base, self.span, self.top = base, span, 0

    @classmethod
    def reserve(cls, span: int) -> "Arena | None":
        """An arena of `span` bytes (a multiple of the page), from the pool or newly reserved; None when the
        system refuses the addresses."""
        with _pool_lock:
            free = _pool.get(span)
            if free:
                return free.pop()
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE
        base = _libc.mmap(None, span, _PROT_NONE, flags, -1, 0)
        if base is None or base == _FAILED:
            return None
        return cls(base, span)

    def holds(self, offset: int, nbytes: int) -> bool:
        return 0 <= offset and offset + nbytes <= self.span

    def view(self, offset: int, nbytes: int) -> np.ndarray:
        """The bytes [offset, offset + nbytes) of the window as a writable uint8 array, readable and writable
        from now on (`top` raised to cover them). The caller checked `holds`."""
        end = page_up(offset + nbytes)
        if end > self.top:
            if _libc.mprotect(self.base + self.top, end - self.top, _PROT_RW) != 0:
                raise MemoryError(f"mprotect: {os.strerror(ctypes.get_errno())}")
            self.top = end
        carr = (ctypes.c_ubyte * nbytes).from_address(self.base + offset)
        return np.frombuffer(carr, dtype=np.uint8)

    def clear(self, offset: int, nbytes: int) -> None:
        """Freed bytes: their whole pages given back to the system (zeros when next read), the rest zeroed."""
        if offset >= self.top:
            return
        nbytes = min(nbytes, self.top - offset)
        lo, hi = page_up(offset), _down(offset + nbytes)
        if hi > lo:
            _libc.madvise(self.base + lo, hi - lo, _MADV_DONTNEED)
            ctypes.memset(self.base + offset, 0, lo - offset)
            ctypes.memset(self.base + hi, 0, offset + nbytes - hi)
        else:
            ctypes.memset(self.base + offset, 0, nbytes)

    def release(self) -> None:
        """Back to the pool, every page given back (readable, writable and zero up to `top`)."""
        if self.top:
            _libc.madvise(self.base, self.top, _MADV_DONTNEED)
        with _pool_lock:
            _pool.setdefault(self.span, []).append(self)
