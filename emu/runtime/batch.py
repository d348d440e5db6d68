"""The batch copies: aclrtMemcpyBatch, BatchAsync and their V2 twins (spec 9.5).

Each entry is a host-to-device or device-to-host copy whose locations must
match the attribute that covers it. The emulator promises no order among the
entries of one batch, as the runtime does not.
"""
from __future__ import annotations

from models import COPY, GROUP, Task

from ..constants import SIZE_MAX
from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID, \
    AclError, BatchError
from ..memory import Location
from .core import Core, api, fail
from .memops import ends

MAX_SYNC_BATCH = 4096  # [source ascend_hal_define.h]


def _loc(attr: dict, key: str, i: int) -> tuple[int, int]:
    try:
        loc = attr[key]
        return int(loc["type"]), int(loc.get("id", 0))
    except (TypeError, KeyError, ValueError):
        raise BatchError(ACL_ERROR_INVALID_PARAM, f"attrs[{i}] has no valid {key!r}", SIZE_MAX) from None


def _side(loc: Location) -> Location:
    """UNREGISTERED and HOST_NUMA count as HOST when a batch entry is matched to its attribute."""
    return Location.HOST if loc in (Location.UNREGISTERED, Location.HOST_NUMA) else loc


class BatchOps:
    """Mixed into `Runtime`."""

    def _batch(self: Core, dsts, dest_maxs, srcs, sizes, count, attrs, attrs_indexes, num_attrs,
               stream: int | None, what: str) -> int:
        def bad(code, msg, index=SIZE_MAX):
            raise BatchError(code, msg, index)

        # ACL layer
        if sizes is None:
            bad(ACL_ERROR_INVALID_PARAM, "sizes is null")
        if count == 0:
            bad(ACL_ERROR_INVALID_PARAM, "numBatches is 0")
        for name, arr, n in (("dsts", dsts, count), ("destMaxs", dest_maxs, count), ("srcs", srcs, count),
                             ("sizes", sizes, count), ("attrs", attrs, num_attrs),
                             ("attrsIndexes", attrs_indexes, num_attrs)):
            if arr is not None and len(arr) != n:
                bad(ACL_ERROR_INVALID_PARAM, f"{name} has {len(arr)} entries, not {n}")
        if all(s == 0 for s in sizes):
            return SIZE_MAX
        for name, arr in (("dsts", dsts), ("destMaxs", dest_maxs), ("srcs", srcs), ("attrs", attrs),
                          ("attrsIndexes", attrs_indexes)):
            if arr is None:
                bad(ACL_ERROR_INVALID_PARAM, f"{name} is null")
        for i, (m, s) in enumerate(zip(dest_maxs, sizes)):
            if m < s:
                bad(ACL_ERROR_INVALID_PARAM, f"destMaxs[{i}] = {m} < sizes[{i}] = {s}", i)
        for k, a in enumerate(attrs):
            rsv = a.get("rsv", bytes(16)) if isinstance(a, dict) else None
            if rsv is None or any(bytes(rsv)):
                bad(ACL_ERROR_INVALID_PARAM, f"attrs[{k}].rsv must be 16 zero bytes")
        # runtime layer
        try:
            if stream is not None:
                self.check_stream_handle(stream)
            self.gate(what)
            if not self.product.has("batch_copy"):
                fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"batch copies are not supported on {self.product.name}")
        except AclError as e:
            bad(e.code, e.message)
        if num_attrs == 0:
            bad(ACL_ERROR_RT_PARAM_INVALID, "numAttrs is 0")
        if num_attrs > count:
            bad(ACL_ERROR_RT_PARAM_INVALID, f"numAttrs {num_attrs} > numBatches {count}")
        if stream is None and count > MAX_SYNC_BATCH:
            bad(ACL_ERROR_RT_PARAM_INVALID, f"a synchronous batch holds at most {MAX_SYNC_BATCH} entries")
        if attrs_indexes[0] != 0:
            bad(ACL_ERROR_RT_PARAM_INVALID, "attrsIndexes[0] must be 0")
        for k in range(num_attrs):
            ok = attrs_indexes[k] < count and (k == 0 or attrs_indexes[k] > attrs_indexes[k - 1])
            if not ok:
                bad(ACL_ERROR_RT_PARAM_INVALID, f"attrsIndexes must increase strictly and stay below {count}")
        try:
            self.current_context(implicit=False)
            s = None if stream is None else self.stream_of(stream)
        except AclError as e:
            bad(e.code, e.message)
        # per entry
        entries = []
        k = 0
        for j in range(count):
            while k + 1 < num_attrs and attrs_indexes[k + 1] <= j:
                k += 1
            n = sizes[j]
            if stream is not None and (n == 0 or n > dest_maxs[j]):
                bad(ACL_ERROR_RT_PARAM_INVALID, f"entry {j}: size {n} is 0 or larger than destMax", j)
            if n == 0:
                continue
            if stream is not None and (dsts[j] == 0 or srcs[j] == 0):
                bad(ACL_ERROR_RT_PARAM_INVALID, f"entry {j}: null pointer", j)
            try:
                dr, doff = self.locate(dsts[j], n)
                sr, soff = self.locate(srcs[j], n)
            except AclError as e:
                bad(e.code, f"entry {j}: {e.message}", j)
            sides = []
            for key, r, addr in (("dst_loc", dr, dsts[j]), ("src_loc", sr, srcs[j])):
                want_type, want_id = _loc(attrs[k], key, k)
                have = _side(self.space.location(r, addr))
                # the memory side folds UNREGISTERED into HOST; the attribute side only HOST_NUMA
                want = Location.HOST if want_type in (Location.HOST, Location.HOST_NUMA) else (
                    Location(want_type) if want_type in Location._value2member_map_ else None)
                if have != want or (have == Location.DEVICE and self.visible.index(r.device) != want_id):
                    bad(ACL_ERROR_RT_PARAM_INVALID, f"entry {j}: {key} of attrs[{k}] says {want_type}/{want_id}, "
                                                    f"the memory is {have.name}", j)
                sides.append(have)
            if sides[0] == sides[1]:
                bad(ACL_ERROR_RT_PARAM_INVALID, f"entry {j}: both ends are {sides[0].name} memory: batch entries "
                                                f"are HOST_TO_DEVICE or DEVICE_TO_HOST", j)
            entries.append((dr, doff, sr, soff, n, dsts[j], srcs[j]))
        # execution
        def part(dr, doff, sr, soff, n, device):
            s_dev, d_dev = ends(sr, dr)
            return Task(COPY, nbytes=n, device=device, src=s_dev, dst=d_dev, label=what,
                        on_complete=self._mover(dr, doff, sr, soff, n, what))

        if s is None:  # one driver batch call: the entries spread over the engines
            self.check_capture_safe()
            dev = self.current_context().device.id
            self.run_blocking(Task(GROUP, device=dev, label=what,
                                   parts=[part(dr, doff, sr, soff, n, dev) for dr, doff, sr, soff, n, *_ in entries]))
            return SIZE_MAX
        parts = []
        for dr, doff, sr, soff, n, dst, src in entries:
            pageable = Location.UNREGISTERED in (self.space.location(sr, src), self.space.location(dr, dst))
            if pageable and self.product.ep_mode:  # stream synchronize, then a synchronous copy
                self.sync_for_pageable(s)
                self._copy_now(dr, doff, sr, soff, n, what)
            else:
                parts.append(part(dr, doff, sr, soff, n, s.device))
        if parts:
            self.submit(s, Task(GROUP, device=s.device, label=what, parts=parts))
        return SIZE_MAX

    @api("aclrtMemcpyBatch", gate=False)
    def memcpy_batch(self: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs) -> int:
        """Synchronous batch copy; returns failIndex (SIZE_MAX); raises BatchError with .fail_index."""
        return self._batch(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, None,
                           "aclrtMemcpyBatch")

    @api("aclrtMemcpyBatchAsync", gate=False)
    def memcpy_batch_async(self: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs,
                           stream: int = 0) -> int:
        return self._batch(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, stream,
                           "aclrtMemcpyBatchAsync")

    @api("aclrtMemcpyBatchV2", gate=False)
    def memcpy_batch_v2(self: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes,
                        num_attrs) -> None:
        self._batch(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, None,
                    "aclrtMemcpyBatchV2")

    @api("aclrtMemcpyBatchAsyncV2", gate=False)
    def memcpy_batch_async_v2(self: Core, dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs,
                              stream: int = 0) -> None:
        self._batch(dsts, dest_maxs, srcs, sizes, num_batches, attrs, attrs_indexes, num_attrs, stream,
                    "aclrtMemcpyBatchAsyncV2")
