"""The batch copies: aclrtMemcpyBatch, BatchAsync and their V2 twins.

The checks run in the reference runtime's order (docs/conformance/copy2d_batch_descriptors.md): the ACL
layer (memory.cpp MemcpyBatchImpl, ValidateMemcpyBatchParams), the C entries (api_c_memory.cc
rtsMemcpyBatch / rtsMemcpyBatchAsync), the parameter checks (api_error.cc ApiErrorDecorator::MemcpyBatch /
MemcpyBatchAsync) and the implementation (api_impl.cc ApiImpl::MemcpyBatch / LoopMemcpyAsync;
api_impl_david.cc ApiImplDavid::BatchMemcpyAsync on UB hosts).

Each entry is a host-to-device or device-to-host copy whose locations must match the attribute that
covers it. The emulator promises no order among the entries of one batch, as the runtime does not.
"""
from __future__ import annotations

from emu.models import GROUP, Task

from ..constants import SIZE_MAX
from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID, \
    AclError, BatchError
from ..constants import D2H, H2D, Location
from .core import Core, Stream, api, fail
from . import capture, streams, transfer

MAX_SYNC_BATCH = 4096  # hicann/runtime pkg_inc/driver/ascend_hal_define.h DEVMM_MEMCPY_BATCH_MAX_COUNT


def _bad(code: int, message: str, index: int = SIZE_MAX):
    raise BatchError(code, message, index)


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
    return Location(loc_type) if loc_type in Location._value2member_map_ else None


def _size_ts(values):
    """A size_t array as C reads it: negative Python ints are the huge unsigned values they are in C."""
    if not isinstance(values, (list, tuple)):
        return values
    return [v % (1 << 64) if v.__class__ is int and v < 0 else v for v in values]


def _acl_layer(dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs) -> bool:
    """memory.cpp MemcpyBatchImpl / ValidateMemcpyBatchParams; False means the all-zero shortcut."""
    if sizes is None:
        _bad(ACL_ERROR_INVALID_PARAM, "sizes is null")
    if count == 0:
        _bad(ACL_ERROR_INVALID_PARAM, "numBatches is 0")
    for name, arr, n in (("dsts", dsts, count), ("destMaxs", dest_maxs, count), ("srcs", srcs, count),
                         ("sizes", sizes, count), ("attrs", attrs, num_attrs),
                         ("attrsIndexes", attrs_indexes, num_attrs)):
        if arr is not None and len(arr) != n:  # the binding's own rule (docs/api.md, the pyACL facade)
            _bad(ACL_ERROR_INVALID_PARAM, f"{name} has {len(arr)} entries, not {n}")
    if all(s == 0 for s in sizes):
        return False
    for name, arr in (("dsts", dsts), ("destMaxs", dest_maxs), ("srcs", srcs), ("attrs", attrs),
                      ("attrsIndexes", attrs_indexes)):
        if arr is None:
            _bad(ACL_ERROR_INVALID_PARAM, f"{name} is null")
    for i, (m, s) in enumerate(zip(dest_maxs, sizes)):
        if m < s:
            _bad(ACL_ERROR_INVALID_PARAM, f"destMaxs[{i}] = {m} < sizes[{i}] = {s}", i)
    for k, a in enumerate(attrs):
        rsv = a.get("rsv", bytes(16)) if isinstance(a, dict) else None
        if rsv is None or any(bytes(rsv)):
            _bad(ACL_ERROR_INVALID_PARAM, f"attrs[{k}].rsv must be 16 zero bytes")
    return True


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


# -- BatchOps --------------------------------------------------------------------------------------


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


def _part(rt: Core, e: transfer.CopyPlan, what: str, device: int | None = None) -> Task:
    """Entry e as a task of `device` (by default the device end of the entry)."""
    return transfer.copy_task(rt, e, what, device)


def _run_batch(rt: Core, entries: list[transfer.CopyPlan], what: str) -> None:
    """One driver batch call (NpuDriver::MemcpyBatch): the entries spread over the engines; no context
    and no capture-mode check."""
    parts = [_part(rt, e, what) for e in entries if e.nbytes]
    if parts:
        transfer.run_blocking(rt, Task(GROUP, device=parts[0].device, label=what, parts=parts))


def _runtime_entry(rt: Core, stream: int | None, what: str) -> None:
    """rtsMemcpyBatch / rtsMemcpyBatchAsync: the chip check, then (async) the stream handle."""
    try:
        rt.gate(what)
        if not rt.product.has("batch_copy"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"batch copies are not supported on {rt.product.name}")
        if stream is not None:
            rt.check_stream_handle(stream)
    except AclError as e:
        _bad(e.code, e.message)


def _batch_sync(rt: Core, dsts, srcs, sizes, count, attrs, attrs_indexes, num_attrs, what: str) -> None:
    entries = []
    for j, (k, a) in zip(range(count), _attr_of(attrs, attrs_indexes, num_attrs)):
        entries.append(_entry(rt, j, dsts[j], sizes[j], srcs[j], sizes[j], a, k, sync=True))
    _run_batch(rt, entries, what)


def _batch_async(rt: Core, dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs,
                 stream: int, what: str) -> None:
    try:
        rt.current_context(implicit=False)  # ApiImpl::MemcpyBatchAsync
    except AclError as e:
        _bad(e.code, e.message)
    checked = ((j, k, a) for j, (k, a) in zip(range(count), _attr_of(attrs, attrs_indexes, num_attrs)))

    def entry(j, k, a):
        return _entry(rt, j, dsts[j], dest_maxs[j], srcs[j], sizes[j], a, k, sync=False)

    entries = (entry(*c) for c in checked)  # checked one by one, as they are consumed
    if rt.product.host_link == "ub":
        _batch_async_ub(rt, stream, entries, what)
    else:
        _batch_async_loop(rt, stream, entries, what)


def _batch_async_ub(rt: Core, stream: int, entries, what: str) -> None:
    """ApiImplDavid::BatchMemcpyAsync (UB hosts): the stream (107003), every entry, then one batch; with
    pageable memory, a stream synchronize and a synchronous batch."""
    s = rt.stream_of(stream)
    entries = list(entries)
    if any(e.pageable for e in entries):
        if s.capturing:
            fail(ACL_ERROR_RT_PARAM_INVALID, "a batch with pageable memory cannot be captured: use "
                                             "aclrtMallocHost or aclrtHostRegister memory")
        streams._drain(rt, s)
        _run_batch(rt, entries, what)
        return
    rt.submit(s, Task(GROUP, device=s.device, label=what, parts=[_part(rt, e, what, s.device) for e in entries]))


def _batch_async_loop(rt: Core, stream: int, entries, what: str) -> None:
    """ApiImpl::LoopMemcpyAsync: each entry is checked, then done or enqueued, before the next one is
    checked; so a failing entry leaves the earlier ones done or enqueued."""
    parts: list[Task] = []
    s: Stream | None = None

    def flush():
        if parts:
            rt.submit(s, Task(GROUP, device=s.device, label=what, parts=list(parts)))
            parts.clear()

    try:
        for e in entries:
            if e.pageable:  # stream synchronize, then ApiImpl::MemCopySync (107030, not 107041)
                flush()
                streams._drain(rt, rt.stream_of(stream, check_context=False))
                capture.check_capture_safe(rt)
                transfer.copy_now(rt, e, what)
                continue
            if s is None:
                s = rt.stream_of(stream)  # ApiImpl::MemcpyAsync: 107003 for another context's stream
            parts.append(_part(rt, e, what, s.device))
    finally:
        flush()


def _batch(rt: Core, dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs,
           stream: int | None, what: str) -> int:
    dest_maxs, sizes = _size_ts(dest_maxs), _size_ts(sizes)  # size_t arrays, as C reads them
    if not _acl_layer(dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs):
        return SIZE_MAX
    _runtime_entry(rt, stream, what)
    _attr_checks(count, attrs_indexes, num_attrs, sync=stream is None)
    try:
        if stream is None:
            _batch_sync(rt, dsts, srcs, sizes, count, attrs, attrs_indexes, num_attrs, what)
        else:
            _batch_async(rt, dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs, stream,
                              what)
    except BatchError:
        raise
    except AclError as e:
        _bad(e.code, e.message)
    return SIZE_MAX


@api("aclrtMemcpyBatch", gate=False, sizes=("num_batches", "num_attrs"))
def memcpy_batch(rt: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs) -> int:
    """Copy `num_batches` entries (`sizes[i]` bytes from `srcs[i]` to `dsts[i]`) and block this thread until
    all are done (aclrtMemcpyBatch); returns failIndex: SIZE_MAX, no entry failed. A failure raises
    BatchError, whose `fail_index` is the entry concerned (SIZE_MAX when none is).

    Each entry is host-to-device or device-to-host, its locations those of the attribute covering it:
    attrs[k] ({"dst_loc": {"type", "id"}, "src_loc": ..., "rsv": 16 zero bytes}) covers the entries from
    attrs_indexes[k] on. At most 4096 entries; all sizes 0 does nothing. The entries run in no promised
    order."""
    return _batch(rt, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, None,
                       "aclrtMemcpyBatch")


@api("aclrtMemcpyBatchAsync", gate=False, sizes=("num_batches", "num_attrs"))
def memcpy_batch_async(rt: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs,
                       stream: int = 0) -> int:
    """Queue a batch copy (as aclrtMemcpyBatch) on `stream` (aclrtMemcpyBatchAsync); returns failIndex
    (SIZE_MAX); a failure raises BatchError with `fail_index`.

    Except on UB hosts (checked whole, then queued as one batch) entries are checked and queued one by one,
    so a failing entry leaves the earlier ones queued; an entry with pageable memory drains the stream and
    is copied synchronously."""
    return _batch(rt, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, stream,
                       "aclrtMemcpyBatchAsync")


@api("aclrtMemcpyBatchV2", gate=False, sizes=("num_batches", "num_attrs"))
def memcpy_batch_v2(rt: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes,
                    num_attrs) -> None:
    """As aclrtMemcpyBatch, without failIndex (aclrtMemcpyBatchV2): returns None; a failure raises BatchError."""
    _batch(rt, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, None,
                "aclrtMemcpyBatchV2")


@api("aclrtMemcpyBatchAsyncV2", gate=False, sizes=("num_batches", "num_attrs"))
def memcpy_batch_async_v2(rt: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs,
                          stream: int = 0) -> None:
    """As aclrtMemcpyBatchAsync, without failIndex (aclrtMemcpyBatchAsyncV2): returns None; a failure raises
    BatchError."""
    _batch(rt, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, stream,
                "aclrtMemcpyBatchAsyncV2")
