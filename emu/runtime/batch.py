"""The batch copies: aclrtMemcpyBatch, BatchAsync and their V2 twins.

The checks run in the reference runtime's order (docs/conformance/copy2d_batch_descriptors.md): the ACL
layer (memory.cpp MemcpyBatchImpl, ValidateMemcpyBatchParams), the C entries (api_c_memory.cc
rtsMemcpyBatch / rtsMemcpyBatchAsync), the parameter checks (api_error.cc ApiErrorDecorator::MemcpyBatch /
MemcpyBatchAsync) and the implementation (api_impl.cc ApiImpl::MemcpyBatch / LoopMemcpyAsync;
api_impl_david.cc ApiImplDavid::BatchMemcpyAsync on UB hosts).

Each entry is a host-to-device or device-to-host copy whose locations must match the attribute that
covers it. The emulator promises no order among the entries of one batch, as the runtime does not.

The entries are checked twice over, with one outcome: all at once with numpy (`_checked_at_once`), which
answers only when every entry passes and none is an awkward case; otherwise one by one (`_entry`), which
finds the failing entry, its code and its index, and leaves the partial effects the runtime leaves. Either
way the checked entries run as one GROUP task whose bytes move in one call when it completes (`_mover`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from emu.models import GROUP, Task
from emu.models.machine import Batch

from .. import batch_kernels
from ..constants import SIZE_MAX
from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_PARAM_INVALID, \
    AclError, BatchError
from ..constants import D2H, H2D, Location
from ..memory import Region
from .core import Core, Stream, api, fail
from . import capture, streams, transfer

MAX_SYNC_BATCH = 4096  # hicann/runtime pkg_inc/driver/ascend_hal_define.h DEVMM_MEMCPY_BATCH_MAX_COUNT
AT_ONCE_FROM = 16  # entries from which the checks run at once: below it numpy's setup costs more than it saves
_DEVICE = int(Location.DEVICE)  # (a plain int: numpy compares with it without an enum's attribute lookup)


# failIndex of a failure before the runtime's parameter checks (ApiErrorDecorator::MemcpyBatch / MemcpyBatchAsync
# write SIZE_MAX first, SetFailIndex): the ACL layer's checks (memory.cpp MemcpyBatchImpl, ValidateMemcpyBatchParams),
# the chip gate and the stream handle (api_c_memory.cc rtsMemcpyBatch / rtsMemcpyBatchAsync) write none, so the C
# caller's failIndex keeps the value it had.
UNWRITTEN = None


def _bad(code: int, message: str, index: int = SIZE_MAX):
    raise BatchError(code, message, index)


def _before_the_decorator(code: int, message: str):
    """A failure whose failIndex is UNWRITTEN."""
    raise BatchError(code, message, UNWRITTEN)


def _loc(attr: dict, key: str, i: int) -> tuple[int, int]:
    try:
        loc = attr[key]
        return int(loc["type"]), int(loc.get("id", 0))
    except (TypeError, KeyError, ValueError):
        raise BatchError(ACL_ERROR_INVALID_PARAM, f"attrs[{i}] has no valid {key!r}", SIZE_MAX) from None


def _side(loc: Location) -> Location:
    """The memory's location as a batch entry sees it: UNREGISTERED counts as HOST (CheckMemCpyAttr)."""
    return Location.HOST if loc == Location.UNREGISTERED else loc


def _wanted(loc_type: int) -> Location | None:
    """The attribute's location: HOST_NUMA counts as HOST; a type that is no location matches nothing."""
    if loc_type == Location.HOST_NUMA:
        return Location.HOST
    try:
        return Location(loc_type)
    except ValueError:  # (no location has that value)
        return None


def _size_ts(values):
    """A size_t array as C reads it: negative Python ints are the huge unsigned values they are in C."""
    if not isinstance(values, (list, tuple)):
        return values
    try:
        if min(values) >= 0:  # (the usual case: nothing to convert)
            return values
    except (TypeError, ValueError):
        pass
    return [v % (1 << 64) if v.__class__ is int and v < 0 else v for v in values]


def _acl_layer(dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs,
               cols: "_Columns | None") -> bool:
    """memory.cpp MemcpyBatchImpl / ValidateMemcpyBatchParams; False means the all-zero shortcut. cols: the
    arrays as columns (`_columns`), when they all are integers. Its failures write no failIndex (UNWRITTEN)."""
    if sizes is None:
        _before_the_decorator(ACL_ERROR_INVALID_PARAM, "sizes is null")
    if count == 0:
        _before_the_decorator(ACL_ERROR_INVALID_PARAM, "numBatches is 0")
    for name, arr, n in (("dsts", dsts, count), ("destMaxs", dest_maxs, count), ("srcs", srcs, count),
                         ("sizes", sizes, count), ("attrs", attrs, num_attrs),
                         ("attrsIndexes", attrs_indexes, num_attrs)):
        if arr is not None and len(arr) != n:  # the binding's own rule (docs/api.md, the pyACL facade)
            _before_the_decorator(ACL_ERROR_INVALID_PARAM, f"{name} has {len(arr)} entries, not {n}")
    if not (cols.n.any() if cols is not None else any(s != 0 for s in sizes)):
        return False
    for name, arr in (("dsts", dsts), ("destMaxs", dest_maxs), ("srcs", srcs), ("attrs", attrs),
                      ("attrsIndexes", attrs_indexes)):
        if arr is None:
            _before_the_decorator(ACL_ERROR_INVALID_PARAM, f"{name} is null")
    if cols is None or cols.m is None or not (cols.m >= cols.n).all():
        _dest_max_checks(dest_maxs, sizes)
    for k, a in enumerate(attrs):
        if not _zero_rsv(a):
            _before_the_decorator(ACL_ERROR_INVALID_PARAM, f"attrs[{k}].rsv must be 16 zero bytes")
    return True


RSV_BYTES = 16  # aclrtMemcpyBatchAttr.rsv: uint8_t[16]


def _zero_rsv(attr) -> bool:
    """Whether an attribute's reserved bytes are zero: rsv bytes-like or a sequence of ints 0-255, at most 16 of
    them (the rest of the C array zero), or absent. Anything else (an int, a string, a longer array) is not an
    array of 16 bytes."""
    rsv = attr.get("rsv", b"") if isinstance(attr, dict) else None
    if isinstance(rsv, memoryview):
        rsv = rsv.tobytes()
    if isinstance(rsv, (list, tuple)):
        if not all(b.__class__ is int and 0 <= b <= 255 for b in rsv):
            return False
    elif not isinstance(rsv, (bytes, bytearray)):
        return False
    return len(rsv) <= RSV_BYTES and not any(rsv)


def _dest_max_checks(dest_maxs, sizes) -> None:
    """ValidateMemcpyBatchParams: destMaxs[i] < sizes[i] fails at the first such i (naming it in the message only:
    the ACL layer writes no failIndex)."""
    for i, (m, s) in enumerate(zip(dest_maxs, sizes)):
        if m < s:
            _before_the_decorator(ACL_ERROR_INVALID_PARAM, f"destMaxs[{i}] = {m} < sizes[{i}] = {s}")


def _attr_checks(count: int, attrs_indexes, num_attrs: int, sync: bool) -> None:
    """ApiErrorDecorator::MemcpyBatch / MemcpyBatchAsync after their null checks."""
    if num_attrs == 0:
        _bad(ACL_ERROR_RT_PARAM_INVALID, "numAttrs is 0")
    if num_attrs > count:
        _bad(ACL_ERROR_RT_PARAM_INVALID, f"numAttrs {num_attrs} > numBatches {count}")
    if sync and count > MAX_SYNC_BATCH:
        _bad(ACL_ERROR_RT_PARAM_INVALID, f"a synchronous batch holds at most {MAX_SYNC_BATCH} entries")
    if attrs_indexes[0] != 0:
        _bad(ACL_ERROR_RT_PARAM_INVALID, "attrsIndexes[0] must be 0")
    for k in range(1, num_attrs):
        if attrs_indexes[k] <= attrs_indexes[k - 1]:
            _bad(ACL_ERROR_RT_PARAM_INVALID, f"attrsIndexes[{k}] = {attrs_indexes[k]} does not exceed "
                                             f"attrsIndexes[{k - 1}] = {attrs_indexes[k - 1]}")
        if attrs_indexes[k] >= count:
            _bad(ACL_ERROR_RT_PARAM_INVALID, f"attrsIndexes[{k}] = {attrs_indexes[k]} is not below {count}")


def _attr_of(attrs, attrs_indexes, num_attrs: int):
    """attrs[k] for each entry j: the largest k with attrsIndexes[k] <= j."""
    k = 0
    j = 0
    while True:
        while k + 1 < num_attrs and attrs_indexes[k + 1] <= j:
            k += 1
        yield k, attrs[k]
        j += 1


# -- the checked entries, by column ------------------------------------------------------------------------

class _Entries:
    """A batch's checked entries, by column. Each end: the distinct regions it touches (`dst_regions`,
    `src_regions`), each entry's index into them (`di`, `si`) and offset (`doff`, `soff`). Then `nbytes`,
    `kind` (H2D or D2H) and the device ids of the ends as `transfer.ends` gives them (`s_dev`, `d_dev`;
    -1: host memory, a mapped alias included); `pageable`: some end is pageable host memory. Kept by the
    address space while it stands (`_keep`), so what it works out of its regions' bytes is kept too (`raw`)."""

    __slots__ = ("dst_regions", "di", "doff", "src_regions", "si", "soff", "nbytes", "kind", "s_dev", "d_dev",
                 "pageable", "_raw", "_moving", "_batches")

    def __init__(self, dst_regions, di, doff, src_regions, si, soff, nbytes, kind, s_dev, d_dev, pageable):
        self.dst_regions, self.di, self.doff = dst_regions, di, doff
        self.src_regions, self.si, self.soff = src_regions, si, soff
        self.nbytes, self.kind, self.s_dev, self.d_dev, self.pageable = nbytes, kind, s_dev, d_dev, pageable
        self._raw = self._moving = None
        self._batches: dict = {}  # the model's Batch of them by the device that runs them (`batch`)

    def __len__(self) -> int:
        return len(self.nbytes)

    @classmethod
    def of_plans(cls, plans: list[transfer.CopyPlan]) -> "_Entries":
        """The entries the per-entry checks planned, in order."""
        dst_regions, di = _distinct([p.dst for p in plans])
        src_regions, si = _distinct([p.src for p in plans])

        def column(values):
            return np.array(values, dtype=np.int64).reshape(-1)

        return cls(dst_regions, di, column([p.doff for p in plans]), src_regions, si,
                   column([p.soff for p in plans]), column([p.nbytes for p in plans]),
                   column([p.kind for p in plans]), column([-1 if p.s_dev is None else p.s_dev for p in plans]),
                   column([-1 if p.d_dev is None else p.d_dev for p in plans]), any(p.pageable for p in plans))

    def with_bytes(self) -> "_Entries":
        """The entries that move bytes (a synchronous batch skips those of size 0), worked out once."""
        if self._moving is None:
            keep = self.nbytes > 0
            self._moving = self if keep.all() else _Entries(
                self.dst_regions, self.di[keep], self.doff[keep], self.src_regions, self.si[keep], self.soff[keep],
                self.nbytes[keep], self.kind[keep], self.s_dev[keep], self.d_dev[keep], self.pageable)
        return self._moving

    def batch(self, device: int | None) -> Batch:
        """The model's Batch of these entries, each run by the engines of `device` (None: of its own device,
        `devices`), made once for each (a Batch never changes). On `one_route` each column is one value."""
        batch = self._batches.get(device)
        if batch is None:
            engines = self.devices() if device is None else device
            if self.one_route:  # (engines is then one device)
                batch = Batch(self.nbytes, int(self.s_dev[0]), int(self.d_dev[0]), engines, int(self.kind[0]))
            else:
                batch = Batch(self.nbytes, self.s_dev, self.d_dev, engines, self.kind)
            self._batches[device] = batch
        return batch

    @property
    def one_route(self) -> bool:
        """One region at each end: every entry has the same ends, kind and device (each comes from the regions)."""
        return len(self.dst_regions) == 1 and len(self.src_regions) == 1

    def devices(self) -> np.ndarray | int:
        """The device whose engines run each entry when no stream says (`CopyPlan.device`: the device end);
        an entry between host memory and a mapped alias runs on the alias's device. An int on `one_route`."""
        if self.one_route:
            s_dev, d_dev = int(self.s_dev[0]), int(self.d_dev[0])
            device = s_dev if s_dev >= 0 else d_dev
            return device if device >= 0 else max(_region_devices(self.dst_regions + self.src_regions))
        device = np.where(self.s_dev >= 0, self.s_dev, self.d_dev)
        if device.min() < 0:
            alias = np.maximum(_region_devices(self.dst_regions)[self.di], _region_devices(self.src_regions)[self.si])
            device = np.where(device >= 0, device, alias)
        return device

    def accesses(self) -> list[tuple]:
        """What the entries read and write, as the sanitizer takes it (`Core.submit`)."""
        out = []
        for di, doff, si, soff, n in zip(self.di.tolist(), self.doff.tolist(), self.si.tolist(), self.soff.tolist(),
                                         self.nbytes.tolist()):
            out.append((self.src_regions[si], soff, n, "r"))
            out.append((self.dst_regions[di], doff, n, "w"))
        return out

    def raw(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(each entry's raw destination address, its raw source address, the bytes in all), for entries whose
        regions all have their bytes (`_ready`): worked out once, as a region's buffer stays where it is from
        when its bytes exist until it is freed, and a freed region never has them again."""
        if self._raw is None:
            daddr = np.array([_address(r.buffer()) for r in self.dst_regions], dtype=np.int64)
            saddr = np.array([_address(r.buffer()) for r in self.src_regions], dtype=np.int64)
            self._raw = (daddr[self.di] + self.doff, saddr[self.si] + self.soff, int(self.nbytes.sum()))
        return self._raw

    def check_writable(self) -> None:
        """A read-only destination is refused before anything is queued (the first in entry order)."""
        order = [0] if len(self.dst_regions) == 1 else _in_order(self.di)
        for i in order:
            self.dst_regions[i].check_writable()


def _in_order(index: np.ndarray) -> list[int]:
    """The distinct values of `index`, in order of first appearance."""
    _, first = np.unique(index, return_index=True)
    return index[np.sort(first)].tolist()


def _region_devices(regions: list[Region]) -> np.ndarray:
    """Each region's device (-1: host memory)."""
    return np.array([r.device if r.is_device else -1 for r in regions], dtype=np.int64)


def _distinct(regions: list[Region]) -> tuple[list[Region], np.ndarray]:
    """(the distinct regions, in order of first use; each one's index into them)."""
    places: dict[int, int] = {}
    out: list[Region] = []
    index = []
    for r in regions:
        i = places.get(id(r))
        if i is None:
            i = places[id(r)] = len(out)
            out.append(r)
        index.append(i)
    return out, np.array(index, dtype=np.int64).reshape(-1)


# -- all entries at once -----------------------------------------------------------------------------------

def _ints(values) -> np.ndarray | None:
    """`values` (a list or tuple of Python ints, or a 1-D integer array) as an int64 array; None for anything
    else, or a value int64 cannot hold."""
    if isinstance(values, (list, tuple)):
        if not all(issubclass(t, int) for t in set(map(type, values))):
            return None
        try:
            return np.fromiter(values, dtype=np.int64, count=len(values))
        except OverflowError:
            return None
    if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype.kind not in "iu":
        return None
    if values.dtype.kind == "u" and len(values) and values.max() >= 1 << 63:
        return None
    return values.astype(np.int64, copy=False)


class _Columns(NamedTuple):
    """A long batch's integer arrays as int64 columns, converted once: destinations, destMaxs (None when one
    is beyond int64, as SIZE_MAX: a sync batch reads no destMax past the ACL layer), sources, sizes and
    attrsIndexes."""
    d: np.ndarray
    m: np.ndarray | None
    s: np.ndarray
    n: np.ndarray
    starts: np.ndarray


def _columns(count: int, dsts, dest_maxs, srcs, sizes, attrs_indexes) -> _Columns | None:
    """The arrays as `_Columns` for a batch of AT_ONCE_FROM entries or more whose arrays all hold integers
    (`_ints`); None otherwise: the checks then go entry by entry."""
    if count < AT_ONCE_FROM:
        return None
    d, s, n, starts = cols = [_ints(c) for c in (dsts, srcs, sizes, attrs_indexes)]
    if any(c is None for c in cols):
        return None
    return _Columns(d, n if dest_maxs is sizes else _ints(dest_maxs), s, n, starts)


_KNOWN_KEPT = 64  # batches whose passed checks an address space keeps (`_known`); past it, it starts again
_INT = {int}


def _key(dsts, dest_maxs, srcs, sizes, count: int, attrs, attrs_indexes, num_attrs: int,
         sync: bool) -> tuple | None:
    """A batch's arguments as a key of the checks they pass (`_known`): its arrays as `_array_key`s, its
    attributes as the checks read them (`_loc`; rsv: whether all zero); None for anything else (other numbers,
    attributes that do not parse: checked every time)."""
    arrays = (dsts, srcs, sizes, attrs_indexes) if dest_maxs is sizes else (dsts, dest_maxs, srcs, sizes, attrs_indexes)
    keys = tuple(map(_array_key, arrays))
    if None in keys or (type(attrs) is not list and type(attrs) is not tuple):
        return None
    try:
        read = tuple((*_loc(a, "dst_loc", k), *_loc(a, "src_loc", k), _zero_rsv(a)) for k, a in enumerate(attrs))
    except (BatchError, AttributeError, TypeError, ValueError):
        return None
    return ("batch", sync, count, num_attrs, read, dest_maxs is sizes) + keys


def _array_key(values) -> tuple | None:
    """An array argument as a key: a list or tuple of plain ints as a tuple; a 1-D integer numpy array as its
    dtype and bytes (equal keys, equal values read the same way); None for anything else."""
    if type(values) is list or type(values) is tuple:
        return tuple(values) if set(map(type, values)) <= _INT else None
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iu":
        return ("array", values.dtype.str, values.tobytes())
    return None


def _known(rt: Core, key: tuple | None) -> "tuple[_Entries | None, dict]":
    """(the entries a batch of these arguments (`_key`) had when every check passed at once, if the address
    space has not changed since, else None; what the address space derived, which stays this dict until it
    changes: `AddressSpace.derived`). A batch's checks are a pure function of its arguments and the address
    space, so the same arguments pass again."""
    derived = rt.space.derived
    return (derived.get(key) if key is not None else None), derived


def _keep(rt: Core, key: tuple | None, entries: "_Entries") -> None:
    if key is not None:
        derived = rt.space.derived
        if len(derived) >= _KNOWN_KEPT:
            derived.clear()
        derived[key] = entries


def _wants(attrs, num_attrs: int) -> np.ndarray | None:
    """Each attribute's (dst location, dst id, src location, src id), a row each, the locations as an entry
    compares them (`_wanted`; -1: one no memory has); None if an attribute does not parse (`_loc` says how)."""
    rows = []
    try:
        for k in range(num_attrs):
            row = []
            for key in ("dst_loc", "src_loc"):
                t, i = _loc(attrs[k], key, k)
                want = _wanted(t)
                row += [-1 if want is None else int(want), i if 0 <= i < 1 << 62 else -2]  # (-2: no device)
            rows.append(row)
    except BatchError:
        return None
    return np.array(rows, dtype=np.int64).reshape(-1, 4)


def _ends(rt: Core, regions: list[Region], written: bool) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """For each region, (its location as an entry sees it, the visible index of its device, -1 for host
    memory), and whether any is pageable; None for what the per-entry checks decide: a mapped alias, freed
    memory, pageable memory with registrations (page-locked in part), a read-only destination, a device not
    visible."""
    sides, ids, pageable = [], [], False
    for r in regions:
        if r.origin == "alias" or r.freed or (written and r.readonly):
            return None
        if r.location is Location.UNREGISTERED:
            if rt.space.registrations_overlapping(r.base, r.size):
                return None
            pageable = True
        sides.append(int(_side(r.location)))
        if r.is_device:
            if r.device not in rt.visible:
                return None
            ids.append(rt.visible.index(r.device))
        else:
            ids.append(-1)
    return np.array(sides, dtype=np.int64), np.array(ids, dtype=np.int64), pageable


def _matches(side: np.ndarray, vis: np.ndarray, want, want_id) -> np.ndarray:
    """CheckMemCpyAttr for each entry's end: its location is the attribute's, and for device memory so is
    the device."""
    return (side == want) & ((side != _DEVICE) | (vis == want_id))


def _checked_at_once(rt: Core, cols: _Columns | None, count: int, attrs, num_attrs: int,
                     sync: bool) -> _Entries | None:
    """Every entry checked at once, by the rules `_entry` applies to each (and `_ends`' awkward cases sent
    back): the entries when all pass, else None, and the per-entry checks find the failing one (and decide
    a batch whose arrays are not `_columns`, fewer than AT_ONCE_FROM entries among them)."""
    if cols is None:
        return None
    d, m, s, n, starts = cols
    if not sync and (m is None or ((n == 0) | (n > m) | (s == 0) | (d == 0)).any()):
        return None
    wants = _wants(attrs, num_attrs)
    if wants is None:
        return None
    if rt.caller.gate is not None:
        rt.runtime_layer()
    span = np.maximum(n, 1)
    dres, sres = rt.space.resolve_many(d, span), rt.space.resolve_many(s, span)
    if dres is None or sres is None:
        return None
    dends, sends = _ends(rt, dres[0], written=True), _ends(rt, sres[0], written=False)
    if dends is None or sends is None:
        return None
    want = wants[0] if num_attrs == 1 else \
        wants[np.searchsorted(starts[:num_attrs], np.arange(count), side="right") - 1]  # each entry's attribute
    dside, sside = dends[0][dres[1]], sends[0][sres[1]]
    ok = (_matches(dside, dends[1][dres[1]], want[..., 0], want[..., 1]) &
          _matches(sside, sends[1][sres[1]], want[..., 2], want[..., 3]) & (dside != sside))
    if not ok.all():
        return None
    return _Entries(dres[0], dres[1], dres[2], sres[0], sres[1], sres[2], n,
                    np.where(sside == _DEVICE, D2H, H2D), _device_ends(sres), _device_ends(dres),
                    dends[2] or sends[2])


def _device_ends(resolved) -> np.ndarray:
    """Each entry's device at that end (-1: host memory), as `transfer.ends` gives it."""
    regions, index, _ = resolved
    return _region_devices(regions)[index]


# -- one entry at a time -----------------------------------------------------------------------------------

def _match(rt: Core, j: int, key: str, addr: int, n: int, attr: dict, k: int):
    """One end of entry j against its attribute (ApiImpl::CheckMemCpyAttr); (region, offset, location)."""
    try:
        r, off = transfer.locate(rt, addr, n)
    except AclError as e:
        _bad(e.code, f"entry {j}: {e.message}", j)
    want_type, want_id = _loc(attr, key, k)
    loc = rt.space.location(r, addr)
    have, want = _side(loc), _wanted(want_type)
    if have != want or (have == Location.DEVICE and rt.visible.index(r.device) != want_id):
        _bad(ACL_ERROR_RT_PARAM_INVALID, f"entry {j}: {key} of attrs[{k}] says {want_type}/{want_id}, "
                                         f"the memory is {loc.name}", j)
    return r, off, loc


def _entry(rt: Core, j: int, dst: int, dest_max: int, src: int, n: int, attr: dict, k: int,
           sync: bool) -> transfer.CopyPlan:
    """The checks of entry j: ApiImpl::MemcpyBatch (sync) or ValidateMemCpyParamsAndAttributes (async)."""
    if not sync:
        if n == 0 or n > dest_max:
            _bad(ACL_ERROR_RT_PARAM_INVALID, f"entry {j}: size {n} is 0 or larger than destMax {dest_max}", j)
        if src == 0:
            _bad(ACL_ERROR_RT_PARAM_INVALID, f"entry {j}: src is null", j)
        if dst == 0:
            _bad(ACL_ERROR_RT_PARAM_INVALID, f"entry {j}: dst is null", j)
    dr, doff, dloc = _match(rt, j, "dst_loc", dst, n, attr, k)
    sr, soff, sloc = _match(rt, j, "src_loc", src, n, attr, k)
    if _side(dloc) == _side(sloc):
        _bad(ACL_ERROR_RT_PARAM_INVALID, f"entry {j}: both ends are {_side(dloc).name} memory: batch entries "
                                         f"are HOST_TO_DEVICE or DEVICE_TO_HOST", j)
    return transfer.CopyPlan(rt, dr, doff, sr, soff, n, H2D if _side(sloc) != Location.DEVICE else D2H)


# -- running them ------------------------------------------------------------------------------------------

def _address(buf: np.ndarray) -> int:
    return buf.__array_interface__["data"][0]


def _buffers(regions: list[Region], needed: np.ndarray, errors: list) -> tuple[np.ndarray, np.ndarray]:
    """(the raw address of each needed region's bytes, whether it has them): device memory gets its bytes
    here if it has none yet; a region that cannot (no RAM left) adds its error to `errors`."""
    addr, ok = np.zeros(len(regions), dtype=np.int64), np.zeros(len(regions), dtype=bool)
    for i in np.flatnonzero(needed).tolist():
        try:
            addr[i], ok[i] = _address(regions[i].buffer()), True
        except AclError as e:
            errors.append(e)
    return addr, ok


def _mover(rt: Core, e: _Entries, what: str, blocking: bool = False):
    """What moves a batch's bytes when it completes, all entries in one call (`batch_kernels`), each by the
    rule of `transfer.mover` (`_move_by_rule`); when every region already has its bytes, there is nothing
    to decide. `blocking`: the task of the calling thread's blocking batch, whose bytes then move once the call
    has released the runtime's lock (`transfer.unlocked`), the buffers held until they have."""
    owner = transfer.blocking_owner(rt, blocking)
    def move():
        if all(map(_ready, e.dst_regions)) and all(map(_ready, e.src_regions)):
            dst, src, total = e.raw()
            held = ([r.buffer() for r in e.dst_regions], [r.buffer() for r in e.src_regions])
            transfer.unlocked(rt, owner, total, batch_kernels.copy_many, dst, src, e.nbytes, held)
        else:
            _move_by_rule(rt, e, what)

    return move


def _ready(r: Region) -> bool:
    """Live memory whose bytes exist."""
    return r.materialized and not r.freed and not r.virtual


def _move_by_rule(rt: Core, e: _Entries, what: str) -> None:
    """Each entry by the rule of `transfer.mover`: nothing on freed memory (warned, the destination first) or
    on timing-only memory; device memory never written reads as zeros (written only where the destination
    has bytes); a destination without bytes yet gets them (or, with no RAM left, its entries are dropped and
    the error raised once the others have moved)."""
    def flags(regions, test):
        return np.array([test(r) for r in regions], dtype=bool)

    if not any(map(_freed, e.dst_regions + e.src_regions)) and (all(map(_virtual, e.dst_regions)) or
                                                                all(map(_virtual, e.src_regions))):
        return  # timing-only memory at one end: no entry moves bytes, and none touches freed memory
    dfreed, sfreed = flags(e.dst_regions, _freed)[e.di], flags(e.src_regions, _freed)[e.si]
    if dfreed.any() or sfreed.any():
        for i in _in_order(e.di[dfreed]):
            rt.space.warn_freed(e.dst_regions[i], what)
        for i in _in_order(e.si[sfreed & ~dfreed]):
            rt.space.warn_freed(e.src_regions[i], what)
    live = ~(dfreed | sfreed | flags(e.dst_regions, _virtual)[e.di] | flags(e.src_regions, _virtual)[e.si])
    if not live.any():
        return
    blank = flags(e.src_regions, _blank)[e.si]  # device memory never written
    copy, errors = live & ~blank, []
    daddr, dok = _buffers(e.dst_regions, np.bincount(e.di[copy], minlength=len(e.dst_regions)) > 0, errors)
    saddr, sok = _buffers(e.src_regions, np.bincount(e.si[copy], minlength=len(e.src_regions)) > 0, errors)
    copy &= dok[e.di] & sok[e.si]
    if copy.any():
        batch_kernels.copy_many(daddr[e.di[copy]] + e.doff[copy], saddr[e.si[copy]] + e.soff[copy], e.nbytes[copy])
    zero = live & blank & flags(e.dst_regions, _has_bytes)[e.di]
    if zero.any():
        zaddr, zok = _buffers(e.dst_regions, np.bincount(e.di[zero], minlength=len(e.dst_regions)) > 0, errors)
        zero &= zok[e.di]
        batch_kernels.zero_many(zaddr[e.di[zero]] + e.doff[zero], e.nbytes[zero])
    if errors:
        raise errors[0]


def _freed(r: Region) -> bool:
    return r.freed


def _virtual(r: Region) -> bool:
    return r.virtual


def _blank(r: Region) -> bool:
    return r.is_device and not r.materialized


def _has_bytes(r: Region) -> bool:
    """Memory a zero-filled entry writes: host memory, device memory already written."""
    return r.materialized or not r.is_device


def _group(rt: Core, e: _Entries, what: str, device: int | None = None, blocking: bool = False) -> Task:
    """The entries as one GROUP task of `device`, each entry run by that device's engines (None: each by its
    own device's, `_Entries.devices`, the task the first entry's); their bytes move when it completes
    (`blocking`: as `_mover`)."""
    e.check_writable()
    batch = e.batch(device)
    first = batch.device if batch.device.__class__ is int else int(batch.device[0])
    return Task(GROUP, device=first, label=what, on_complete=_mover(rt, e, what, blocking), batch=batch)


def _run_batch(rt: Core, entries: _Entries, what: str) -> None:
    """One driver batch call (NpuDriver::MemcpyBatch): the entries spread over the engines; no context
    and no capture-mode check."""
    entries = entries.with_bytes()
    if len(entries):
        transfer.run_blocking(rt, _group(rt, entries, what, blocking=True), entries)


def _runtime_entry(rt: Core, stream: int | None, what: str) -> None:
    """rtsMemcpyBatch / rtsMemcpyBatchAsync: the chip check, then (async) the stream handle; before the decorator,
    so their failures write no failIndex."""
    try:
        rt.gate(what)
        rt.feature_gate()
        if stream is not None:
            rt.check_stream_handle(stream)
    except AclError as e:
        _before_the_decorator(e.code, e.message)


def _few(plans: list[transfer.CopyPlan]) -> bool:
    """A batch small enough that a task per entry costs less than the lanes' numpy setup: below AT_ONCE_FROM
    entries, each with a device to run on (the per-entry model, which the lanes reproduce: the same times
    for entries of one size, within about 1% otherwise)."""
    return len(plans) < AT_ONCE_FROM and all(p.device is not None for p in plans)


def _parts(rt: Core, plans: list[transfer.CopyPlan], what: str, device: int | None = None) -> Task:
    """A few entries as a GROUP of copy tasks, one per entry, on `device` (by default each entry's own)."""
    parts = [transfer.copy_task(rt, p, what, device) for p in plans]
    return Task(GROUP, device=parts[0].device, label=what, parts=parts)


def _plans_access(plans: list[transfer.CopyPlan]) -> tuple:
    """What planned entries read and write, as the sanitizer takes it."""
    return tuple(a for p in plans for a in transfer.plan_access(p))


def _batch_sync(rt: Core, dsts, srcs, sizes, count, attrs, attrs_indexes, num_attrs, entries, what: str) -> None:
    """entries: those the checks at once gave (None: check each one, `_entry`)."""
    if entries is None:
        plans = [_entry(rt, j, dsts[j], sizes[j], srcs[j], sizes[j], a, k, sync=True)
                 for j, (k, a) in zip(range(count), _attr_of(attrs, attrs_indexes, num_attrs))]
        moving = [p for p in plans if p.nbytes]
        if _few(moving):
            if moving:
                transfer.run_blocking(rt, _parts(rt, moving, what), _plans_access(moving))
            return
        entries = _Entries.of_plans(plans)
    _run_batch(rt, entries, what)


def _batch_async(rt: Core, dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs, check_at_once,
                 stream: int, what: str) -> None:
    """check_at_once: what runs the checks at once (`_checked_at_once`, or gives the entries `_known` gave),
    called once the stream is known."""
    try:
        rt.current_context(implicit=False)  # ApiImpl::MemcpyBatchAsync
    except AclError as e:
        _bad(e.code, e.message)
    ub = rt.product.host_link == "ub"
    s = rt.stream_of(stream) if ub else None  # ApiImplDavid::BatchMemcpyAsync: the stream first
    at_once = check_at_once()
    if at_once is not None and not (at_once.pageable and not ub):
        if ub:
            _batch_async_ub(rt, s, at_once, what)
        else:
            s = rt.stream_of(stream)  # ApiImpl::MemcpyAsync: 107003 for another context's stream
            rt.submit(s, _group(rt, at_once, what, s.device), at_once)
        return
    checked = ((j, k, a) for j, (k, a) in zip(range(count), _attr_of(attrs, attrs_indexes, num_attrs)))

    def entry(j, k, a):
        return _entry(rt, j, dsts[j], dest_maxs[j], srcs[j], sizes[j], a, k, sync=False)

    plans = (entry(*c) for c in checked)  # checked one by one, as they are consumed
    if ub:
        _batch_async_ub(rt, s, _Entries.of_plans(list(plans)), what)
    else:
        _batch_async_loop(rt, stream, plans, what)


def _batch_async_ub(rt: Core, s: Stream, entries: _Entries, what: str) -> None:
    """ApiImplDavid::BatchMemcpyAsync (UB hosts): the stream (107003), every entry, then one batch; with
    pageable memory, a stream synchronize and a synchronous batch."""
    if entries.pageable:
        if s.capturing:
            fail(ACL_ERROR_RT_PARAM_INVALID, "a batch with pageable memory cannot be captured: use "
                                             "aclrtMallocHost or aclrtHostRegister memory")
        streams.drain(rt, s)
        _run_batch(rt, entries, what)
        return
    rt.submit(s, _group(rt, entries, what, s.device), entries)


def _batch_async_loop(rt: Core, stream: int, plans, what: str) -> None:
    """ApiImpl::LoopMemcpyAsync: each entry is checked, then done or enqueued, before the next one is
    checked; so a failing entry leaves the earlier ones done or enqueued."""
    queued: list[transfer.CopyPlan] = []
    s: Stream | None = None

    def flush():
        if queued:
            if _few(queued):
                rt.submit(s, _parts(rt, queued, what, s.device), _plans_access(queued))
            else:
                entries = _Entries.of_plans(queued)
                rt.submit(s, _group(rt, entries, what, s.device), entries)
            queued.clear()

    try:
        for e in plans:
            if e.pageable:  # stream synchronize, then ApiImpl::MemCopySync (107030, not 107041)
                flush()
                streams.drain(rt, rt.stream_of(stream, check_context=False))
                capture.check_capture_safe(rt)
                transfer.copy_now(rt, e, what)
                continue
            if s is None:
                s = rt.stream_of(stream)  # ApiImpl::MemcpyAsync: 107003 for another context's stream
            e.dst.check_writable()  # refused before it is queued
            queued.append(e)
    finally:
        flush()


def _batch(rt: Core, dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs,
           stream: int | None, what: str) -> int:
    """The four batch APIs' body, in the runtime's order: the ACL layer, the runtime entry, the attribute checks,
    then the entries (at once, else one by one: `checked`). Arguments that passed all of them at once against
    the same address space (`_known`) skip the checks that read the arguments alone and the entries'; the
    checks that read the runtime's state (the chip, the context, the stream) run every time."""
    dest_maxs, sizes = _size_ts(dest_maxs), _size_ts(sizes)  # size_t arrays, as C reads them
    sync = stream is None
    key = _key(dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs, sync)
    known, derived = _known(rt, key)  # (these arguments passed the ACL layer, the attribute checks, every entry)
    cols = None
    if known is None:
        cols = _columns(count, dsts, dest_maxs, srcs, sizes, attrs_indexes)
        if not _acl_layer(dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs, cols):
            return SIZE_MAX
    _runtime_entry(rt, stream, what)
    if known is None:
        _attr_checks(count, attrs_indexes, num_attrs, sync=sync)

    def checked() -> _Entries | None:
        if known is not None and rt.space.derived is derived:  # (the address space has not changed meanwhile)
            if rt.caller.gate is not None:
                rt.runtime_layer()
            return known
        entries = _checked_at_once(rt, cols, count, attrs, num_attrs, sync)
        if entries is not None:
            _keep(rt, key, entries)
        return entries

    try:
        if sync:
            _batch_sync(rt, dsts, srcs, sizes, count, attrs, attrs_indexes, num_attrs, checked(), what)
        else:
            _batch_async(rt, dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs, checked, stream,
                         what)
    except BatchError:
        raise
    except AclError as e:
        _bad(e.code, e.message)
    return SIZE_MAX


@api("aclrtMemcpyBatch", gate=False, sizes=("num_batches", "num_attrs"), feature="batch_copy",
     pyacl="acl.rt.memcpy_batch", params="lllliali", outputs=(SIZE_MAX,))
def memcpy_batch(rt: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs) -> int:
    """Copy `num_batches` entries (`sizes[i]` bytes from `srcs[i]` to `dsts[i]`) and block this thread until
    all are done (aclrtMemcpyBatch); returns failIndex: SIZE_MAX, no entry failed. A failure raises
    BatchError, whose `fail_index` is the entry concerned (SIZE_MAX when none is; None when the call failed
    before the runtime's parameter checks, in the ACL layer, at the chip gate or at the stream handle: there the
    C API leaves the caller's failIndex as it was).

    Each entry is host-to-device or device-to-host, its locations those of the attribute covering it:
    attrs[k] ({"dst_loc": {"type", "id"}, "src_loc": ..., "rsv": 16 zero bytes}) covers the entries from
    attrs_indexes[k] on. At most 4096 entries; all sizes 0 does nothing. The entries run in no promised
    order."""
    return _batch(rt, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, None,
                       "aclrtMemcpyBatch")


@api("aclrtMemcpyBatchAsync", gate=False, sizes=("num_batches", "num_attrs"), feature="batch_copy",
     pyacl="acl.rt.memcpy_batch_async", params="llllialii", outputs=(SIZE_MAX,))
def memcpy_batch_async(rt: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs,
                       stream: int = 0) -> int:
    """Queue a batch copy (as aclrtMemcpyBatch) on `stream` (aclrtMemcpyBatchAsync); returns failIndex
    (SIZE_MAX); a failure raises BatchError with `fail_index` (as aclrtMemcpyBatch's: None before the runtime's
    parameter checks).

    Except on UB hosts (checked whole, then queued as one batch) entries are checked and queued one by one,
    so a failing entry leaves the earlier ones queued; an entry with pageable memory drains the stream and
    is copied synchronously."""
    return _batch(rt, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, stream,
                       "aclrtMemcpyBatchAsync")


@api("aclrtMemcpyBatchV2", gate=False, sizes=("num_batches", "num_attrs"), feature="batch_copy",
     pyacl="acl.rt.memcpy_batch_v2", params="lllliali")
def memcpy_batch_v2(rt: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes,
                    num_attrs) -> None:
    """As aclrtMemcpyBatch, without failIndex (aclrtMemcpyBatchV2): returns None; a failure raises BatchError."""
    _batch(rt, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, None,
                "aclrtMemcpyBatchV2")


@api("aclrtMemcpyBatchAsyncV2", gate=False, sizes=("num_batches", "num_attrs"), feature="batch_copy",
     pyacl="acl.rt.memcpy_batch_async_v2", params="llllialii")
def memcpy_batch_async_v2(rt: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs,
                          stream: int = 0) -> None:
    """As aclrtMemcpyBatchAsync, without failIndex (aclrtMemcpyBatchAsyncV2): returns None; a failure raises
    BatchError."""
    _batch(rt, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, stream,
                "aclrtMemcpyBatchAsyncV2")
