"""The address space: where every pointer an ACL program holds points to.

Three kinds of region, one ordered index:
- device memory: one window per device above the 47-bit user space, so no host
  pointer can fall in it and a pointer alone tells which device; the backing
  bytes are allocated on first touch (a 60 GiB allocation never touched costs
  no RAM);
- page-locked host memory (aclrtMallocHost): a 64-byte-aligned buffer the
  emulator owns, at a real process address;
- pageable host memory: a real buffer the program showed the emulator (through
  acl.util or `register_host`); the emulator keeps its owner alive while it may
  still be used, and forgets it once nothing but the emulator refers to it.

An address inside no region is never dereferenced: lookups fail with
ACL_ERROR_INVALID_PARAM naming the address. Lookup, allocation and free are
O(log n) in the live regions (`_Index`, `_Window`).
"""
from __future__ import annotations

import bisect
import ctypes
import os
import sys
import warnings
import weakref
from collections import deque

import numpy as np

from .arena import Arena, page_up
from .constants import Location
from .errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_MEMORY_ALLOCATION, AclError

# (an enum's member read through its class costs about ten times a module's name: these are read per call)
_HOST, _UNREG = Location.HOST, Location.UNREGISTERED

DEVICE_BASE = 1 << 48  # above the 47-bit user address space of x86-64 / arm64 Linux
USER_SPACE_END = 1 << 47  # user addresses of x86-64 / arm64 Linux lie below
RAW = "raw"  # Region.origin of a C program's own memory (AddressSpace.adopt_host)
DEVICE_WINDOW = 1 << 42  # 4 TiB of addresses per device
VIRTUAL_HOST_BASE = 1 << 56  # page-locked host memory of timing-only allocations: addresses, no bytes
VIRTUAL_HOST_WINDOW = 1 << 52
MAX_DEVICES = 64  # RT_MAX_DEV_NUM, hicann/runtime src/runtime/core/inc/spec/base_info.hpp:23

FREED_KEPT = 256  # the latest frees remembered, here and by the sanitizer, for its use-after-free report (on_stale)
# Freed page-locked memory the address space keeps back from the process's allocator, up to this many bytes (and
# FREED_KEPT buffers): while kept, its addresses are no one else's, so a C program's use of one is a use after
# free (refused and reported); once given back, malloc may hand them out again and they are the program's own.
HELD_BYTES = 64 << 20
HOST_PAGE = 4096
# A device's arena (emu.arena) spans this many times its memory: the allocator's best fit keeps allocations low
# in the window, and one placed above the arena is ordinary host memory, which kernels cannot reach.
ARENA_CAPACITIES = 4
HUGE_PAGE = 2 << 20
HUGE_1G = 1 << 30


class Region:
    """A contiguous range of addresses and the bytes behind it."""

    __slots__ = ("base", "size", "end", "kind", "is_device", "location", "device", "end_device", "page_size", "owner",
                 "_buf", "freed", "origin", "va_flag", "virtual", "budget", "readonly", "arena", "asked")

    DEVICE, PINNED, PAGEABLE = "device", "pinned", "pageable"

    def __init__(self, base: int, size: int, kind: str, device: int | None = None,
                 page_size: int = HOST_PAGE, owner=None, buf: np.ndarray | None = None,
                 origin: str = ""):
        self.base = base
        self.size = size
        self.end = base + size
        self.kind = kind
        self.is_device = kind == Region.DEVICE  # (a region's kind never changes)
        self.location = (Location.DEVICE if kind == Region.DEVICE else  # aclrtMemLocationType of its bytes
                         Location.HOST if kind == Region.PINNED else Location.UNREGISTERED)
        self.device = device
        self.page_size = page_size
        self.owner = owner
        self._buf = buf
        self.freed = False
        self.origin = origin or kind  # which API made it: "malloc", "malloc_host", "dvpp", "alias", ...
        # the device a copy's end here is on, None for host memory (a mapped alias is host memory): worked out
        # once, as kind, device and origin never change, instead of at every copy's plan
        self.end_device = device if self.is_device and self.origin != "alias" else None
        self.va_flag = False  # MallocHostWithCfg VA_FLAG: a mapping gives the same address on the device
        self.virtual = False  # timing-only: an address range with no bytes behind it
        self.budget: "HostBudget | None" = None  # device memory: counts its bytes here when first touched
        self.readonly = False  # pageable memory the program showed read-only (bytes, a read-only array)
        self.arena: Arena | None = None  # device memory: where its bytes lie, at a fixed host address (emu.arena)
        self.asked = size  # the bytes the program asked for (aclrtMalloc: before its rounding and padding)

    @property
    def materialized(self) -> bool:
        return self._buf is not None

    def buffer(self) -> np.ndarray:
        """The region's bytes as a writable uint8 array (device memory: created on first use)."""
        if self.virtual:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{self.describe()} is timing-only: it has no bytes")
        if self._buf is None:
            self._buf = self._first_touch()
        return self._buf

    def _first_touch(self) -> np.ndarray:
        """The bytes of device memory, made when first used: counted in the host budget (which also checks the
        RAM free now), then allocated; refused with 207001, the budget untouched, when either says no."""
        what = self.describe().replace(f" of {self.size} bytes", "")
        budget = self.budget
        if budget is not None:
            budget.take(self.size, what)
        try:
            return host_bytes(self.size, what, self.arena, self.base - window_of(self.device or 0))
        except AclError:
            if budget is not None:
                budget.give(self.size)
            raise

    def view(self, offset: int, nbytes: int) -> np.ndarray:
        if offset < 0 or offset + nbytes > self.size:
            raise AclError(ACL_ERROR_INVALID_PARAM,
                           f"range 0x{self.base + offset:x}+{nbytes} is outside {self.describe()}")
        buf = self._buf  # (bytes already there: no call to `buffer`, which makes them)
        return (buf if buf is not None else self.buffer())[offset:offset + nbytes]

    def check_writable(self) -> None:
        """Memory the program showed read-only is refused as a destination, never written."""
        if self.readonly:
            raise AclError(ACL_ERROR_INVALID_PARAM, f"{self.describe()} is read-only (a read-only array or a one-byte "
                                                    f"bytes object): the runtime cannot write into it")

    def target(self, offset: int, nbytes: int) -> np.ndarray:
        """`view` for a write (see `check_writable`)."""
        self.check_writable()
        return self.view(offset, nbytes)

    def describe(self) -> str:
        where = f"device {self.device}" if self.is_device else self.kind + " host"
        return f"{where} memory [0x{self.base:x}, 0x{self.end:x}) of {self.size} bytes"

    def __repr__(self) -> str:
        return f"<Region {self.describe()}{' freed' if self.freed else ''}>"


class Overrun(AclError):
    """`nbytes` at `offset` of `region` run `over` bytes past its end: ACL_ERROR_INVALID_PARAM. The emulator never
    reads or writes there (on an NPU the copy would reach whatever lies past the buffer); the runtime tells the
    program which call did it (`emu.runtime.transfer.overrun`)."""

    def __init__(self, region: Region, offset: int, nbytes: int):
        self.region, self.offset, self.nbytes = region, offset, nbytes
        self.over = offset + nbytes - region.size
        super().__init__(ACL_ERROR_INVALID_PARAM, f"{nbytes} bytes at 0x{region.base + offset:x} run {self.over} "
                                                  f"bytes past the end of {region.describe()}")

    def __reduce__(self):  # (pickled, e.g. out of a child process: the code and message, as any AclError)
        return AclError, (self.code, self.message)


def _address_of(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


def _no_objects(arr: np.ndarray) -> None:
    if arr.dtype.hasobject:
        raise TypeError("an object array holds Python objects, not bytes: a copy into it would corrupt the "
                        "interpreter; use a numeric dtype")


def _root_buffer(obj):
    """(owner, export, address, nbytes, writable) of the memory block an object's data lives in.

    `export` holds a buffer export on the owner for as long as the emulator knows the memory, so that
    the owner cannot be closed or resized under a queued copy (an mmap, a bytearray); None where the
    owner is an array that owns its bytes (it cannot be resized while referenced). `writable` is False
    for immutable memory (bytes, a read-only array): the emulator never writes there."""
    if isinstance(obj, np.ndarray):
        _no_objects(obj)
    root = obj
    while isinstance(root, np.ndarray) and root.base is not None:
        root = root.base
    if isinstance(root, np.ndarray):
        _no_objects(root)
        return root, None, _address_of(root), root.nbytes, root.flags.writeable and _writable(obj)
    try:
        flat = np.frombuffer(root, dtype=np.uint8)
    except (TypeError, ValueError, BufferError):
        if isinstance(obj, np.ndarray) and obj.flags.c_contiguous:
            return obj, None, _address_of(obj), obj.nbytes, obj.flags.writeable
        raise TypeError(f"cannot take the address of a {type(obj).__name__}") from None
    return root, flat, _address_of(flat), flat.nbytes, (flat.flags.writeable or isinstance(root, bytes)) and \
        _writable(obj) and _writable(root)


def _writable(obj) -> bool:
    """May the runtime write into obj's bytes? Not into a read-only array or memoryview. A `bytes` object is
    written, as pyACL does (`bytes_to_ptr`, then read the object back: its public samples rely on it), except
    a one-byte one: those are the interpreter's shared singletons."""
    if isinstance(obj, np.ndarray):
        return obj.flags.writeable
    if isinstance(obj, memoryview):
        return not obj.readonly
    if isinstance(obj, bytes):
        return len(obj) > 1
    return True


def writable_view(address: int, nbytes: int, keep=None, readonly: bool = False) -> np.ndarray:
    """A uint8 array over `nbytes` at `address` (writable unless `readonly`); `keep` stays alive as long as it."""
    carr = (ctypes.c_ubyte * nbytes).from_address(address)
    if keep is not None:
        carr._keep = keep
    arr = np.frombuffer(carr, dtype=np.uint8)
    if readonly:
        arr.flags.writeable = False
    return arr


class _Slot:
    __slots__ = ("obj",)


_ONE_REF = 0  # what `_extra_refs` says of an object one attribute alone refers to (measured below)


def _extra_refs(obj) -> int:
    """How many references `obj`, read from one attribute (`_extra_refs(region.owner)`), has besides that one."""
    return sys.getrefcount(obj) - _ONE_REF


def _one_ref() -> int:
    """`_extra_refs` of an object only one attribute refers to, with _ONE_REF 0: measured, since what the
    interpreter itself adds (the argument, the caller's stack) differs between versions."""
    slot = _Slot()
    slot.obj = object()
    return _extra_refs(slot.obj)


_ONE_REF = _one_ref()


GRANULE = 64  # every reservation in a window is a multiple of this, and starts at a multiple of it


class _Window:
    """Best-fit allocator of one address window, with coalescing frees: O(log n) a call.

    An allocation takes the shortest free range that holds it at its alignment, and among free ranges of that
    length the one made last (a range freed a moment ago is the first reused, as a caching allocator would);
    it starts at the range's first aligned address. It reserves its size rounded up to GRANULE: every request
    is aligned to GRANULE or more (a power of two), so the bytes up to the next multiple of GRANULE could hold
    no other allocation, and keeping them as a free range of their own (one after each 4 KiB allocation of the
    910B, whose padding is 32 bytes) would only lengthen the search. A free merges the range with the free
    ranges on either side, so a window whose allocations are all freed is one range again, which holds one
    allocation of its whole size.

    Free ranges are kept three ways: by start ({start: end}) and by end ({end: start}), so a free finds the
    neighbours it merges with in O(1); and by length: `_lengths`, the distinct lengths, sorted, and for each
    the starts of the free ranges of that length, in the order they were made (`_bins`, a dict used as an
    ordered set: adding, removing and taking the last are O(1)). An allocation is one bisection of `_lengths`
    and one look at a bin. `_lengths` changes (a list insert, C memmove) only when a length comes or goes: a
    caching allocator's free ranges come in a few lengths, and even 100,000 distinct ones move 50 us at most.

    A request aligned to more than GRANULE (a huge page) also looks at each free range shorter than its size
    plus its alignment, since whether such a range holds it depends on where the range starts: they are about
    the size of a huge page, and few. `examined` counts the free ranges looked at, for tests."""

    __slots__ = ("base", "size", "_by_start", "_by_end", "_lengths", "_bins", "examined")

    def __init__(self, base: int, size: int):
        self.base, self.size = base, size
        self._by_start: dict[int, int] = {}
        self._by_end: dict[int, int] = {}
        self._lengths: list[int] = []
        self._bins: dict[int, dict[int, None]] = {}
        self.examined = 0
        self._add(base, base + size)

    def alloc(self, nbytes: int, align: int) -> int | None:
        """The address of `nbytes` aligned to `align` (a power of two), or None where no free range holds them."""
        need = -(-nbytes // GRANULE) * GRANULE
        lengths = self._lengths
        i = bisect.bisect_left(lengths, need)
        if align <= GRANULE:  # (every free range starts aligned: the shortest long enough holds it)
            if i == len(lengths):
                return None
            n = lengths[i]
            bin_ = self._bins[n]
            s = a = bin_.popitem()[0]  # (the last made; popitem, not `del`, keeps taking the last O(1))
            self.examined += 1
        else:
            sure = need + align - GRANULE  # a range this long holds it wherever it starts
            j = bisect.bisect_left(lengths, sure, i)
            s = self._band(lengths[i:j], need, align) if j > i else None
            if s is None:
                if j == len(lengths):
                    return None
                s = next(reversed(self._bins[lengths[j]]))
                self.examined += 1
            n = self._by_start[s] - s
            bin_ = self._bins[n]
            del bin_[s]
            a = -(-s // align) * align
        e = s + n
        del self._by_start[s], self._by_end[e]
        if not bin_:
            self._unbin(n)
        if a > s:
            self._add(s, a)
        if a + need < e:
            self._add(a + need, e)
        return a

    def free(self, start: int, nbytes: int) -> None:
        """Give back the `nbytes` at `start` that `alloc` gave, merged with the free ranges on either side."""
        end = start + -(-nbytes // GRANULE) * GRANULE
        left = self._by_end.get(start)
        if left is not None:
            self._drop(left, start)
            start = left
        right = self._by_start.get(end)
        if right is not None:
            self._drop(end, right)
            end = right
        self._add(start, end)

    def ranges(self) -> list[tuple[int, int]]:
        """The free ranges, (start, end) each, by address."""
        return sorted(self._by_start.items())

    def __len__(self) -> int:
        """How many free ranges there are."""
        return len(self._by_start)

    def _band(self, band: list[int], need: int, align: int) -> int | None:
        """The start of the shortest free range, then the one made last, with a length in `band` that holds
        `need` bytes at `align`; None if none does."""
        for n in band:
            bin_ = self._bins[n]
            self.examined += len(bin_)
            for s in reversed(bin_):
                if -(-s // align) * align + need <= s + n:
                    return s
        return None

    def _add(self, s: int, e: int) -> None:
        self._by_start[s] = e
        self._by_end[e] = s
        n = e - s
        bin_ = self._bins.get(n)
        if bin_ is None:
            self._bins[n] = {s: None}
            bisect.insort(self._lengths, n)
        else:
            bin_[s] = None

    def _drop(self, s: int, e: int) -> None:
        del self._by_start[s], self._by_end[e]
        n = e - s
        bin_ = self._bins[n]
        del bin_[s]
        if not bin_:
            self._unbin(n)

    def _unbin(self, n: int) -> None:
        """No free range has length `n` any more."""
        del self._bins[n]
        lengths = self._lengths
        del lengths[bisect.bisect_left(lengths, n)]

    def problems(self) -> list[str]:
        """What is wrong with the window's own books, if anything (for `AddressSpace.invariant_violations`)."""
        out = []
        ranges = self.ranges()
        if {e: s for s, e in ranges} != self._by_end:
            out.append("the free ranges by end differ from those by start")
        for (s0, e0), (s1, e1) in zip(ranges, ranges[1:]):
            if e0 >= s1:
                out.append(f"free ranges [0x{s0:x}, 0x{e0:x}) and [0x{s1:x}, 0x{e1:x}) "
                           f"{'overlap' if e0 > s1 else 'touch and were not merged'}")
        if any(s < self.base or e > self.base + self.size or e <= s or s % GRANULE or e % GRANULE
               for s, e in ranges):
            out.append("a free range is empty, outside the window or not on a multiple of GRANULE")
        by_length: dict[int, set[int]] = {}
        for s, e in ranges:
            by_length.setdefault(e - s, set()).add(s)
        if by_length != {n: set(b) for n, b in self._bins.items()} or sorted(by_length) != self._lengths:
            out.append("the free ranges by length differ from those by start")
        return out


_LOAD = 256  # regions per chunk of the index: a chunk splits past twice this and joins a neighbour below a quarter
_SPAN = 2 * _LOAD + 1  # (chunk j's region i as one number, j * _SPAN + i: `AddressSpace.resolve_many`)


class _Index:
    """The live regions, sorted by base, in chunks: `starts[j]` and `regions[j]` are chunk j's bases and
    regions (at most 2 * _LOAD, never none), `firsts[j]` its first base. A lookup is two bisections (`firsts`,
    then the chunk); an insert or a removal moves at most 2 * _LOAD pointers in its chunk, and `firsts` (n /
    _LOAD of them) only when a chunk splits, joins or changes its first base: O(log n) in Python calls, with
    memmoves that stay flat at 100,000 regions (the two flat lists of bases and regions this replaces moved
    about 20 us of pointers for an insert or a removal in their middle at 100,000)."""

    __slots__ = ("firsts", "starts", "regions", "_arrays", "_firsts_array")

    def __init__(self):
        self.firsts: list[int] = []
        self.starts: list[list[int]] = []
        self.regions: list[list[Region]] = []
        self._arrays: list[np.ndarray | None] = []  # each chunk's starts as an int64 array, made when asked
        self._firsts_array: np.ndarray | None = None

    def __len__(self) -> int:
        return sum(map(len, self.starts))

    def __iter__(self):
        for chunk in self.regions:
            yield from chunk

    def insert(self, region: Region) -> None:
        base, firsts = region.base, self.firsts
        if not firsts:
            firsts.append(base)
            self.starts.append([base])
            self.regions.append([region])
            self._arrays.append(None)
            self._firsts_array = None
            return
        j = max(bisect.bisect_left(firsts, base) - 1, 0)  # (before an equal base, as one flat list would)
        starts = self.starts[j]
        i = bisect.bisect_left(starts, base)
        starts.insert(i, base)
        self.regions[j].insert(i, region)
        self._arrays[j] = None
        if i == 0:
            firsts[j] = base
            self._firsts_array = None
        if len(starts) > 2 * _LOAD:
            self._split(j)

    def remove(self, region: Region) -> None:
        base = region.base
        j = max(bisect.bisect_left(self.firsts, base) - 1, 0)
        i = bisect.bisect_left(self.starts[j], base)
        while True:  # (regions may share a base: the one that is `region`)
            if i == len(self.regions[j]):
                j, i = j + 1, 0
            elif self.regions[j][i] is region:
                break
            else:
                i += 1
        starts = self.starts[j]
        del starts[i], self.regions[j][i]
        self._arrays[j] = None
        if not starts:
            del self.firsts[j], self.starts[j], self.regions[j], self._arrays[j]
            self._firsts_array = None
            return
        if i == 0:
            self.firsts[j] = starts[0]
            self._firsts_array = None
        if len(starts) < _LOAD // 4 and len(self.starts) > 1:
            self._join(j if j + 1 < len(self.starts) else j - 1)

    def _split(self, j: int) -> None:
        starts, regions = self.starts[j], self.regions[j]
        half = len(starts) // 2
        self.starts.insert(j + 1, starts[half:])
        self.regions.insert(j + 1, regions[half:])
        del starts[half:], regions[half:]
        self.firsts.insert(j + 1, self.starts[j + 1][0])
        self._arrays[j] = None
        self._arrays.insert(j + 1, None)
        self._firsts_array = None

    def _join(self, j: int) -> None:
        """Chunk j + 1 joins chunk j (split again if that makes it too long)."""
        self.starts[j] += self.starts[j + 1]
        self.regions[j] += self.regions[j + 1]
        del self.firsts[j + 1], self.starts[j + 1], self.regions[j + 1], self._arrays[j + 1]
        self._arrays[j] = None
        self._firsts_array = None
        if len(self.starts[j]) > 2 * _LOAD:
            self._split(j)

    def position(self, addr: int) -> tuple[int, int]:
        """(chunk, index) of the last region whose base is at most `addr`; chunk -1 if there is none."""
        j = bisect.bisect_right(self.firsts, addr) - 1
        if j < 0:
            return -1, 0
        return j, bisect.bisect_right(self.starts[j], addr) - 1

    def from_position(self, j: int, i: int):
        """The regions from (chunk, index) on, by base."""
        regions = self.regions
        while j < len(regions):
            chunk = regions[j]
            while i < len(chunk):
                yield chunk[i]
                i += 1
            j, i = j + 1, 0

    def firsts_array(self) -> np.ndarray:
        if self._firsts_array is None:
            self._firsts_array = np.array(self.firsts, dtype=np.int64)
        return self._firsts_array

    def array(self, j: int) -> np.ndarray:
        """Chunk j's bases as an int64 array."""
        a = self._arrays[j]
        if a is None:
            a = self._arrays[j] = np.array(self.starts[j], dtype=np.int64)
        return a


class Registration:
    """A host range registered with aclrtHostRegister / V2: pinned, and maybe mapped to a device alias."""

    __slots__ = ("base", "size", "flags", "region", "alias", "pinned")

    def __init__(self, base: int, size: int, flags: int, region: Region, alias: Region | None, pinned: bool):
        self.base, self.size, self.flags = base, size, flags
        self.region, self.alias, self.pinned = region, alias, pinned

    @property
    def end(self) -> int:
        return self.base + self.size


HOST_MEMORY_ENV = "ACL_EMU_HOST_MEMORY"
HOST_RESERVE_MIN = 256 << 20  # RAM left to the rest of the machine: at least this,
HOST_RESERVE_SHARE = 0.03  # or this share of the machine's RAM, whichever is more
LIVE_CHECK_BYTES = 64 << 20  # takes smaller than this (in all, since the last reading) need no new reading


def _meminfo(field: str) -> int | None:
    """A /proc/meminfo field ("MemAvailable", "MemTotal") in bytes, None where there is none."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_host_memory() -> int:
    """Bytes of RAM this machine can still give the process now (MemAvailable, read at each call), or a large
    number if unknown. $ACL_EMU_HOST_MEMORY (bytes) overrides it."""
    override = os.environ.get(HOST_MEMORY_ENV)
    if override:
        return int(override)
    available = _meminfo("MemAvailable")
    if available is not None:
        return available
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 60


def host_reserve() -> int:
    """Bytes of RAM functional memory leaves free for the rest of the machine: max(256 MiB, 3% of its RAM), so
    that the emulator is refused (207001) before the kernel's OOM killer would act."""
    return max(HOST_RESERVE_MIN, int(HOST_RESERVE_SHARE * (_meminfo("MemTotal") or 0)))


def _resident_bytes() -> int | None:
    """This process's resident memory (/proc/self/statm), None where unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def host_bytes(nbytes: int, what: str, arena: Arena | None = None, offset: int = 0) -> np.ndarray:
    """`nbytes` zeroed bytes of host RAM for `what` (at `offset` in `arena`, if given), or AclError 207001 when
    the host cannot give them (a MemoryError: an address-space limit such as `ulimit -v`, or no memory left),
    never the MemoryError."""
    try:
        return np.zeros(nbytes, dtype=np.uint8) if arena is None else arena.view(offset, nbytes)
    except (MemoryError, ValueError) as exc:  # ValueError: more than an array can hold
        raise AclError(ACL_ERROR_RT_MEMORY_ALLOCATION,
                       f"{what}: the host could not give {nbytes} bytes ({type(exc).__name__}: "
                       f"{exc or 'out of memory'}; is the address space limited, ulimit -v?)") from None


_WAY_OUT = ("the emulator keeps the bytes of functional memory in RAM. Timing-only memory holds no bytes: "
            "emu.configure(functional=False), or malloc(..., functional=False)")


class HostBudget:
    """The host RAM functional memory may take: page-locked memory when allocated, device memory when its
    bytes are first touched. What would not fit is refused with the runtime's out-of-memory code, before
    the operating system would kill the process for touching it.

    limit: the bytes it may take in all (90% of the RAM available when the address space was made).
    live: also check, at each take, the RAM the machine has free now (`available_host_memory`, read again),
    which other processes may have taken since: a take is refused when it, plus what the emulator has taken
    but not yet touched (its bytes are allocated lazily), would leave less than `host_reserve()` free.
    (Takes under LIVE_CHECK_BYTES in all since the last reading are not read again: the reserve covers them.)"""

    __slots__ = ("limit", "backed", "live", "unread")

    def __init__(self, limit: int, live: bool = False):
        self.limit = limit
        self.backed = 0
        self.live = live
        self.unread = 0  # bytes taken since the RAM free was last read

    def take(self, nbytes: int, what: str) -> None:
        if self.backed + nbytes > self.limit:
            raise AclError(ACL_ERROR_RT_MEMORY_ALLOCATION,
                           f"{what} needs {nbytes} bytes of host RAM, more than this machine has free "
                           f"({self.limit - self.backed} bytes of the emulator's budget left): {_WAY_OUT}")
        if self.live:
            if self.unread + nbytes >= LIVE_CHECK_BYTES:
                self._check_free(nbytes, what)
                self.unread = 0
            else:
                self.unread += nbytes
        self.backed += nbytes

    def _check_free(self, nbytes: int, what: str) -> None:
        """Refuse `nbytes` when the machine, as it is now, cannot give them and keep its reserve."""
        free, reserve = available_host_memory(), host_reserve()
        resident = _resident_bytes()
        untouched = 0 if resident is None else max(0, self.backed - resident)  # taken, maybe not yet in RAM
        if nbytes + untouched > free - reserve:
            more = f" plus {untouched} bytes it took before and has not filled yet" if untouched else ""
            raise AclError(ACL_ERROR_RT_MEMORY_ALLOCATION,
                           f"{what} needs {nbytes} bytes of host RAM{more}, and the machine has {free} bytes free "
                           f"now, {reserve} of which the emulator leaves to the rest of the machine (other "
                           f"processes took memory since it started, or it holds much already): {_WAY_OUT}")

    def give(self, nbytes: int) -> None:
        self.backed -= nbytes


class AddressSpace:
    """Every region the emulator knows, indexed by base address. Functional memory's bytes count against
    `budget`: 90% of the RAM available when the address space is made, with the RAM free checked again at
    each take (`HostBudget.live`); or `host_budget` bytes, or 90% of $ACL_EMU_HOST_MEMORY, checked against
    nothing else."""

    def __init__(self, num_devices: int, capacity: int, functional: bool = True, host_budget: int | None = None):
        if num_devices > MAX_DEVICES:
            raise ValueError(f"at most {MAX_DEVICES} devices")
        self.functional = functional  # default for new allocations: bytes behind them, or timing only
        self.virtual_host = _Window(VIRTUAL_HOST_BASE, VIRTUAL_HOST_WINDOW)
        self._index = _Index()  # the live regions by base
        self._none = Region(0, 0, Region.PAGEABLE)
        self._none.freed = True
        self._recent: tuple[Region, Region] = (self._none, self._none)
        self.windows = [_Window(DEVICE_BASE + d * DEVICE_WINDOW, DEVICE_WINDOW) for d in range(num_devices)]
        self.capacity = capacity
        self._arenas: dict[int, Arena | None] = {}  # device: where its functional allocations' bytes lie
        self.used = [0] * num_devices
        self._pageable = 0
        self._pageable_bases: set[int] = set()  # the live pageable regions' bases, for `_prune`
        self._prune_at = 256
        self._warned: set[int] = set()
        self._reg_starts: list[int] = []
        self._regs: list[Registration] = []
        live = host_budget is None and not os.environ.get(HOST_MEMORY_ENV)
        self.budget = HostBudget(int(0.9 * available_host_memory()) if host_budget is None else host_budget, live)
        self.adopt_raw_host = False  # a C program's runtime: any user-space address is its own pageable memory
        # (base, end, what it was) of the latest frees: addresses only, so no freed buffer is kept alive
        self.freed_recently: deque = deque(maxlen=FREED_KEPT)
        self._held: deque = deque()  # (base, end, buffer) of freed page-locked memory still kept (HELD_BYTES)
        self._held_bytes = 0
        self.on_stale = None  # (the sanitizer) called (addr, nbytes, the entry) when `resolve` fails in one
        # What callers work out from the index (its regions and registrations) and keep while it stands, under
        # keys of their own (the batch copies' checks: emu.runtime.batch): a new, empty dict whenever the index
        # changes (`_changed`), so nothing kept outlives the regions it was worked out from.
        self.derived: dict = {}

    def freed_range(self, addr: int) -> tuple | None:
        """The entry of `freed_recently` (base, end, description) that held `addr`, the latest such free."""
        for entry in reversed(self.freed_recently):
            if entry[0] <= addr < entry[1]:
                return entry
        return None

    def stale(self, addr: int, nbytes: int = 1) -> None:
        """A call is about to fail on `addr`, which is in no live region: tell `on_stale` if it lies in memory
        freed lately (a use after free, a double free)."""
        if self.on_stale is not None:
            entry = self.freed_range(addr)
            if entry is not None:
                self.on_stale(addr, nbytes, entry)

    def invariant_violations(self) -> list[str]:
        """What is wrong with the allocator's state, if anything: live regions overlap, a device's used bytes
        differ from the sum of its live allocations, free exceeds total, or a free range covers a live
        allocation."""
        out = []
        regions = self.regions()
        for a, b in zip(regions, regions[1:]):
            if a.end > b.base:
                out.append(f"{a!r} overlaps {b!r}")
        for d, window in enumerate(self.windows):
            live = [r for r in regions if r.is_device and r.device == d]
            owned = sum(r.size for r in live if r.origin != "alias")
            if owned != self.used[d]:
                out.append(f"device {d}: used {self.used[d]} != {owned}, the sum of its live allocations")
            if not 0 <= self.capacity - self.used[d] <= self.capacity:
                out.append(f"device {d}: free {self.capacity - self.used[d]} outside [0, {self.capacity}]")
            out += [f"device {d}: {p}" for p in window.problems()]
            free = window.ranges()
            starts = [s for s, _ in free]
            for r in live:
                i = bisect.bisect_right(starts, r.base) - 1
                if i >= 0 and r.base < free[i][1]:
                    out.append(f"{r!r} lies in a free range of device {d}'s window")
        return out

    # -- the index -------------------------------------------------------------
    def _changed(self) -> None:
        """The index changed: what was derived from it goes."""
        if self.derived:
            self.derived = {}

    def _insert(self, region: Region) -> None:
        self._index.insert(region)
        if region.kind == Region.PAGEABLE:
            self._pageable_bases.add(region.base)
        self._changed()

    def _forget(self, region: Region) -> None:
        """A region freed: out of the index, and remembered among the latest frees (`freed_recently`)."""
        self._remove(region)
        self.freed_recently.append((region.base, region.end, region.describe()))

    def _remove(self, region: Region) -> None:
        self._recent = (self._none, self._none)
        self._index.remove(region)
        if region.kind == Region.PAGEABLE:
            self._pageable_bases.discard(region.base)
        self._changed()

    def find(self, addr: int) -> Region | None:
        for r in self._recent:  # programs reuse their buffers: check the last two regions found first
            if r.base <= addr < r.end and not r.freed:
                return r
        index = self._index
        j = bisect.bisect_right(index.firsts, addr) - 1  # (the chunk, then the region in it: see _Index)
        if j >= 0:
            r = index.regions[j][bisect.bisect_right(index.starts[j], addr) - 1]
            if addr < r.end:
                self._recent = (r, self._recent[0])
                return r
        return None

    def resolve(self, addr: int, nbytes: int = 1) -> tuple[Region, int]:
        """(region, offset) for `nbytes` at `addr`; AclError if any byte is outside one region. With
        `adopt_raw_host` (a C program's runtime), host bytes the emulator does not know are the program's own
        pageable memory (`adopt_host`)."""
        r = self.find(addr)
        if self.adopt_raw_host and (r is None or (addr - r.base + nbytes > r.size and r.origin == RAW)):
            # (page-locked memory the emulator freed and still holds is no program's own: its use fails, as
            # through pyACL)
            if 0 < addr and addr + nbytes <= USER_SPACE_END and not self.held(addr, nbytes):
                r = self.adopt_host(addr, nbytes)
        if r is None:
            self.stale(addr, nbytes)
            if is_device_address(addr):
                raise AclError(ACL_ERROR_INVALID_PARAM,
                               f"address 0x{addr:x} is not in any allocation of device {device_of(addr)}")
            raise AclError(ACL_ERROR_INVALID_PARAM,
                           f"host address 0x{addr:x} is not memory the emulator knows: allocate it with "
                           f"aclrtMallocHost or show it with acl.util.numpy_to_ptr / bytes_to_ptr")
        off = addr - r.base
        if off + nbytes > r.size:
            raise Overrun(r, off, nbytes)
        return r, off

    def adopt_host(self, addr: int, nbytes: int) -> Region:
        """[addr, addr + nbytes) of a C program's own memory (malloc'ed, on its stack) as pageable host memory,
        read and written at its real address; merged with the adopted ranges it overlaps. The program owns
        the bytes: an address it does not own faults as it would in the real runtime's memcpy. AclError when
        the range overlaps memory the emulator knows otherwise (page-locked memory, a Python buffer)."""
        base, end = addr, addr + nbytes
        for r in self._overlapping(addr, nbytes):
            if r.origin != RAW:
                raise AclError(ACL_ERROR_INVALID_PARAM, f"{nbytes} bytes at 0x{addr:x} overlap {r.describe()}")
            base, end = min(base, r.base), max(end, r.end)
            self._remove(r)
            self._pageable -= 1
        r = Region(base, end - base, Region.PAGEABLE, origin=RAW, buf=writable_view(base, end - base))
        self._insert(r)
        self._pageable += 1
        if self._pageable >= self._prune_at:
            self._prune()
        return r

    def resolve_many(self, addrs: np.ndarray, sizes: np.ndarray) -> tuple[list[Region], np.ndarray, np.ndarray] | None:
        """`resolve` for many ranges at once: (the distinct regions they fall in, each range's index into that
        list, each range's offset), for `sizes[i]` bytes at `addrs[i]` (int64 arrays, sizes >= 1). None when
        any range is not wholly inside one region: `resolve` it alone to learn why."""
        if not len(addrs):
            return [], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        index = self._index
        if not index.firsts:
            return None
        chunk = np.searchsorted(index.firsts_array(), addrs, side="right") - 1
        low = int(chunk.min())
        if low < 0:
            return None
        if low == chunk.max():  # (the usual batch: in one chunk of the index)
            pos = np.searchsorted(index.array(low), addrs, side="right") - 1 + low * _SPAN
        else:
            pos = np.empty(len(addrs), dtype=np.int64)
            order = np.argsort(chunk, kind="stable")
            for group in np.split(order, np.flatnonzero(np.diff(chunk[order])) + 1):
                j = int(chunk[group[0]])
                pos[group] = np.searchsorted(index.array(j), addrs[group], side="right") - 1 + j * _SPAN
        if pos.min() == pos.max():  # (the usual batch: one region, its base and size plain ints)
            p = int(pos[0])
            regions, where = [index.regions[p // _SPAN][p % _SPAN]], np.zeros(len(pos), dtype=np.int64)
            base, size = regions[0].base, regions[0].size
        else:
            found, where = np.unique(pos, return_inverse=True)
            regions = [index.regions[p // _SPAN][p % _SPAN] for p in found.tolist()]
            base = np.array([r.base for r in regions], dtype=np.int64)[where]
            size = np.array([r.size for r in regions], dtype=np.int64)[where]
        offsets = addrs - base
        if not (sizes <= size - offsets).all():  # (this way round, a huge size cannot overflow)
            return None
        return regions, where, offsets

    def regions(self) -> list[Region]:
        """The live regions, by base."""
        return list(self._index)

    # -- device memory ---------------------------------------------------------
    def alloc_device(self, device: int, nbytes: int, align: int, page_size: int, origin: str = "malloc",
                     functional: bool | None = None) -> Region:
        nbytes = size_t(nbytes)
        if self.used[device] + nbytes > self.capacity:
            raise AclError(ACL_ERROR_RT_MEMORY_ALLOCATION,
                           f"device {device} is out of memory: {nbytes} bytes requested, "
                           f"{self.capacity - self.used[device]} free")
        base = self.windows[device].alloc(nbytes, align)
        if base is None:
            raise AclError(ACL_ERROR_RT_MEMORY_ALLOCATION, f"device {device}: address window exhausted")
        r = Region(base, nbytes, Region.DEVICE, device=device, page_size=page_size, origin=origin)
        r.virtual = not (self.functional if functional is None else functional)
        r.budget = self.budget  # its bytes are counted when first touched
        if not r.virtual:
            arena = self.arena(device)
            if arena is not None and arena.holds(base - window_of(device), nbytes):
                r.arena = arena
        self.used[device] += nbytes
        self._insert(r)
        return r

    def regions_in(self, addr: int, nbytes: int) -> list[Region]:
        """The regions holding bytes of [addr, addr + nbytes), by base."""
        index = self._index
        j, i = index.position(addr)
        out = []
        for r in index.from_position(max(j, 0), i if j >= 0 else 0):
            if r.base >= addr + nbytes:
                break
            if r.end > addr:
                out.append(r)
        return out

    def arena(self, device: int) -> Arena | None:
        """Where `device`'s bytes lie (reserved at its first functional allocation): ARENA_CAPACITIES times
        the device's memory of addresses, or None where the system refuses them (see emu.arena)."""
        if device not in self._arenas:
            arena = self._arenas[device] = Arena.reserve(min(DEVICE_WINDOW, ARENA_CAPACITIES * page_up(
                self.capacity)))
            if arena is not None:
                weakref.finalize(self, arena.release)
        return self._arenas[device]

    def free_device(self, r: Region) -> None:
        self._forget(r)
        self.windows[r.device].free(r.base, r.size)
        self.used[r.device] -= r.size
        if r._buf is not None:
            self.budget.give(r.size)
            if r.arena is not None:
                r.arena.clear(r.base - window_of(r.device), r.size)
        r.freed = True
        r._buf = None

    # -- page-locked host memory -----------------------------------------------
    def alloc_pinned(self, nbytes: int, align: int = 64, functional: bool | None = None) -> Region:
        nbytes = size_t(nbytes)
        if not (self.functional if functional is None else functional):
            base = self.virtual_host.alloc(nbytes, align)
            if base is None:
                raise AclError(ACL_ERROR_RT_MEMORY_ALLOCATION, "timing-only host address window exhausted")
            r = Region(base, nbytes, Region.PINNED, origin="malloc_host")
            r.virtual = True
            self._insert(r)
            return r
        self.budget.take(nbytes, "page-locked host memory")
        try:
            raw = host_bytes(nbytes + align, f"page-locked host memory of {nbytes} bytes (and {align} to align it)")
        except AclError:
            self.budget.give(nbytes)
            raise
        skew = (-_address_of(raw)) % align
        buf = raw[skew:skew + nbytes]
        self._drop_raw(_address_of(raw), raw.nbytes)
        r = Region(_address_of(buf), nbytes, Region.PINNED, buf=buf, owner=raw, origin="malloc_host")
        self._insert(r)
        return r

    def free_pinned(self, r: Region) -> None:
        self._forget(r)
        if r.virtual:
            self.virtual_host.free(r.base, r.size)
        else:
            self.budget.give(r.size)
            if self.adopt_raw_host:  # (only where a program's own memory is taken at its address: see `held`)
                self._hold(r)
        r.freed = True  # queued tasks still hold `r`, so its buffer outlives them

    def _hold(self, r: Region) -> None:
        """Keep freed page-locked memory's buffer from the allocator a while (HELD_BYTES), the oldest given back
        first: until then no malloc can return its addresses (see `held`)."""
        self._held.append((r.base, r.end, r.owner))
        self._held_bytes += r.size
        while self._held and (self._held_bytes > HELD_BYTES or len(self._held) > FREED_KEPT):
            base, end, _ = self._held.popleft()
            self._held_bytes -= end - base

    def held(self, addr: int, nbytes: int = 1) -> bool:
        """Whether [addr, addr + nbytes) touches freed page-locked memory the address space still keeps: memory
        no one else can have been given since, so a use of it is a use after free."""
        return any(base < addr + nbytes and addr < end for base, end, _ in self._held)

    def _drop_raw(self, base: int, size: int) -> None:
        """Forget what the C program's own ranges (RAW) hold of [base, base + size): memory the process's
        allocator has just given the emulator is memory the program has freed, whatever it held before. The
        rest of such a range stays the program's (as new regions either side); the old region is freed only
        when nothing of it is left, so that a copy queued on or a registration of a part the program kept keeps
        its bytes. (A copy queued on the part it gave back writes where the new memory is, as it would on the
        device: the program freed memory a copy was still to write.)"""
        end = base + size
        for r in self._overlapping(base, size):
            if r.origin != RAW:
                continue
            self._remove(r)
            self._pageable -= 1
            pieces = [(lo, hi) for lo, hi in ((r.base, base), (end, r.end)) if lo < hi]
            for lo, hi in pieces:
                self._insert(Region(lo, hi - lo, Region.PAGEABLE, origin=RAW, buf=writable_view(lo, hi - lo)))
                self._pageable += 1
            r.freed = not pieces

    # -- pageable host memory ----------------------------------------------------
    def register_host(self, obj) -> tuple[int, Region | None]:
        """Make `obj`'s memory known as pageable; return (address of obj's data, region)."""
        if isinstance(obj, np.ndarray):
            addr = _address_of(obj)
        else:
            addr = _address_of(np.frombuffer(obj, dtype=np.uint8))
        owner, export, base, size, writable = _root_buffer(obj)
        if size == 0:
            return addr, None
        existing = self.find(base)
        if existing is not None and base + size <= existing.end:
            return addr, existing  # already known (a view of a known buffer, or pinned memory)
        for r in self._overlapping(base, size):
            if r.kind != Region.PAGEABLE:
                raise AclError(ACL_ERROR_INVALID_PARAM,
                               f"buffer at 0x{base:x}+{size} overlaps {r.describe()}")
            self._remove(r)
            self._pageable -= 1
        r = Region(base, size, Region.PAGEABLE, owner=owner,
                   buf=writable_view(base, size, keep=export, readonly=not writable))
        r.readonly = not writable
        self._insert(r)
        self._pageable += 1
        if self._pageable >= self._prune_at:
            self._prune()
        return addr, r

    def _overlapping(self, base: int, size: int) -> list[Region]:
        j, i = self._index.position(base)
        out = []
        for r in self._index.from_position(max(j, 0), max(i, 0)):
            if r.base >= base + size:
                break
            if r.end > base:
                out.append(r)
        return out

    def _prune(self) -> None:
        """Forget pageable buffers nothing but the emulator refers to any more: Python buffers the program
        dropped (the region's `owner` is the only reference, with the export's hold on a buffer owner), and
        adopted C memory no task, registration or check holds (the index and this loop are the only ones)."""
        self._recent = (self._none, self._none)
        index = self._index  # (the pageable regions alone, by address: not every region the index holds)
        for r in [index.regions[j][i] for j, i in map(index.position, sorted(self._pageable_bases))]:
            if (_extra_refs(r) <= 2 if r.origin == RAW else  # (the list above and the loop's name)
                    _extra_refs(r.owner) <= (not isinstance(r.owner, np.ndarray))):
                self._remove(r)
                r.freed = True
                self._pageable -= 1
        self._prune_at = max(256, 2 * self._pageable)

    # -- host registration -------------------------------------------------------------
    def location(self, r: Region, addr: int) -> Location:
        """Where `addr` (inside `r`) lives: registered pageable memory counts as page-locked."""
        if r.location is _UNREG and self._regs and self.registration(addr) is not None:
            return _HOST
        return r.location

    def registration(self, addr: int) -> Registration | None:
        i = bisect.bisect_right(self._reg_starts, addr) - 1
        if i >= 0 and addr < self._regs[i].end:
            return self._regs[i]
        return None

    def registrations_overlapping(self, base: int, size: int) -> list[Registration]:
        i = max(bisect.bisect_right(self._reg_starts, base) - 1, 0)
        out = []
        while i < len(self._regs) and self._regs[i].base < base + size:
            if self._regs[i].end > base:
                out.append(self._regs[i])
            i += 1
        return out

    def register(self, reg: Registration) -> None:
        i = bisect.bisect_left(self._reg_starts, reg.base)
        self._reg_starts.insert(i, reg.base)
        self._regs.insert(i, reg)
        self._changed()

    def unregister(self, reg: Registration) -> None:
        i = self._regs.index(reg)
        del self._reg_starts[i], self._regs[i]
        self._changed()
        if reg.alias is not None:
            self.free_alias(reg.alias)

    def alloc_alias(self, device: int, host: Region, offset: int, nbytes: int) -> Region:
        """A device-window address range whose bytes are host memory (a mapped registration)."""
        nbytes = size_t(nbytes)
        buf = None if host.virtual else host.buffer()[offset:offset + nbytes]  # (its first touch may be refused)
        base = self.windows[device].alloc(nbytes, 64)
        if base is None:
            raise AclError(ACL_ERROR_RT_MEMORY_ALLOCATION, f"device {device}: address window exhausted")
        r = Region(base, nbytes, Region.DEVICE, device=device, origin="alias", owner=host, buf=buf)
        r.virtual = host.virtual
        r.readonly = host.readonly  # the device's view of read-only memory is read-only too
        self._insert(r)
        return r

    def free_alias(self, r: Region) -> None:
        self._remove(r)
        self.windows[r.device].free(r.base, r.size)
        r.freed = True

    def warn_freed(self, r: Region, what: str) -> None:
        if r.base not in self._warned:
            self._warned.add(r.base)
            warnings.warn(f"{what} on {r.describe()} after it was freed; the bytes are dropped",
                          RuntimeWarning, stacklevel=2)


def size_t(n: int) -> int:
    """A size as C's size_t holds it: a negative Python int is the huge unsigned value it would be in C (which
    no allocation can satisfy), never a negative region."""
    return n % (1 << 64) if n < 0 else n


def window_of(device: int) -> int:
    """The first address of `device`'s window."""
    return DEVICE_BASE + device * DEVICE_WINDOW


def is_device_address(addr: int) -> bool:
    return DEVICE_BASE <= addr < DEVICE_BASE + MAX_DEVICES * DEVICE_WINDOW


def device_of(addr: int) -> int:
    return (addr - DEVICE_BASE) // DEVICE_WINDOW
