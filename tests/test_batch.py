"""Batch copies: aclrtMemcpyBatch, aclrtMemcpyBatchAsync and their V2 twins.

The rules are the rows B1-B24 of
docs/conformance/copy2d_batch_descriptors.md#batch-copies-aclrtmemcpybatch-batchv2-batchasync-batchasyncv2
(B1-B6 the ACL layer, B7-B14 the runtime, B15-B18 each entry, B19-B24 how the entries run); the products
with batch copies are those of docs/conformance/products.md. "UT <name>" is the test <name> of
hicann/runtime tests/ut/acl/testcase/acl_runtime_unittest.cpp. "⚠ docs" marks a rule where the API
reference (hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md) and the source disagree: the documents ask for
one direction per batch, the source checks each entry; the 4096-entry limit holds for synchronous batches only. The
Python bindings are the facade's (emu/acl/rt.py): `memcpy_batch` and `memcpy_batch_async` return (fail_index, ret),
the V2 ones only ret; a list whose length disagrees with its count is ACL_ERROR_INVALID_PARAM. The attribute struct is
aclrtMemcpyBatchAttr of hicann/runtime include/external/acl/acl_rt.h.

The API reference promises no order among the entries of one batch, so every test uses entries
that touch disjoint byte ranges. Whether an async batch already ran is observed without any API call
in between (API calls advance simulated time).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import emu
import emu.acl as acl
from emu import AclError
from helpers import peek, read_device

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

SIZE_MAX = 2 ** 64 - 1
HOST, DEVICE, UNREGISTERED, MANAGED, HOST_NUMA = 0, 1, 2, 3, 4  # aclrtMemLocationType
H2D, D2H = 1, 2
NORMAL_ONLY = 2
NPY_UINT8 = 2
OLD = 0xEE
N = 4096


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def attr(dst_type, src_type, dst_id=0, src_id=0, rsv=None):
    """An aclrtMemcpyBatchAttr in the facade's dict form (emu/acl/rt.py)."""
    a = {"dst_loc": {"id": dst_id, "type": dst_type}, "src_loc": {"id": src_id, "type": src_type}}
    if rsv is not None:
        a["rsv"] = rsv
    return a


H2D_ATTR = attr(DEVICE, HOST)
D2H_ATTR = attr(HOST, DEVICE)


def pattern(n, seed=0):
    period = ((np.arange(251) * 7 + seed) % 251).astype(np.uint8)
    return np.resize(period, n)


def pinned(rt, n=N, fill=OLD):
    h = rt.malloc_host(n)
    view = acl.util.ptr_to_numpy(h, (n,), NPY_UINT8)
    view[:] = fill
    return h, view


def pageable(n=N, fill=OLD):
    arr = np.empty(n, dtype=np.uint8)
    arr[:] = fill
    return acl.util.numpy_to_ptr(arr), arr


def device(rt, n=N, fill=OLD):
    d = rt.malloc(n, NORMAL_ONLY)
    rt.memset(d, n, fill, n)
    return d


def write_device(rt, ptr, data):
    src = np.ascontiguousarray(data, dtype=np.uint8)
    rt.memcpy(ptr, src.nbytes, acl.util.numpy_to_ptr(src), src.nbytes, H2D)


class Bufs:
    """A page-locked host buffer and a device buffer with known contents."""

    def __init__(self, rt, n=N):
        self.rt = rt
        self.n = n
        self.host, self.hview = pinned(rt, n)
        self.hview[:] = pattern(n, 1)
        self.dev = device(rt, n)
        self.ddata = pattern(n, 2)
        write_device(rt, self.dev, self.ddata)

    def host_now(self):
        return self.hview.copy()

    def dev_now(self):
        return peek(self.rt, self.dev, self.n)

    def untouched(self):
        return np.array_equal(self.host_now(), pattern(self.n, 1)) and np.array_equal(self.dev_now(), self.ddata)


def h2d(b, doff, hoff, n):
    """An H2D entry (dst, destMax, src, size) from host[hoff:] to dev[doff:]."""
    return b.dev + doff, n, b.host + hoff, n


def d2h(b, hoff, doff, n):
    return b.host + hoff, n, b.dev + doff, n


def columns(entries):
    dsts, maxs, srcs, sizes = (list(c) for c in zip(*entries))
    return dsts, maxs, srcs, sizes


@pytest.fixture
def b(rt):
    return Bufs(rt)


@pytest.fixture
def stream(rt):
    return rt.create_stream()


def sync_batch(entries, attrs, indexes):
    """acl.rt.memcpy_batch -> (fail_index, ret)."""
    dsts, maxs, srcs, sizes = columns(entries)
    return acl.rt.memcpy_batch(dsts, maxs, srcs, sizes, len(sizes), attrs, indexes, len(attrs))


def async_batch(entries, attrs, indexes, s):
    """acl.rt.memcpy_batch_async -> (fail_index, ret)."""
    dsts, maxs, srcs, sizes = columns(entries)
    return acl.rt.memcpy_batch_async(dsts, maxs, srcs, sizes, len(sizes), attrs, indexes, len(attrs), s)


def call(variant, dsts, maxs, srcs, sizes, count, attrs, indexes, num_attrs, s=0):
    """Any of the four facade calls; returns (fail_index or None for V2, ret)."""
    if variant == "sync":
        return acl.rt.memcpy_batch(dsts, maxs, srcs, sizes, count, attrs, indexes, num_attrs)
    if variant == "async":
        return acl.rt.memcpy_batch_async(dsts, maxs, srcs, sizes, count, attrs, indexes, num_attrs, s)
    if variant == "sync_v2":
        return None, acl.rt.memcpy_batch_v2(dsts, maxs, srcs, sizes, count, attrs, indexes, num_attrs)
    return None, acl.rt.memcpy_batch_async_v2(dsts, maxs, srcs, sizes, count, attrs, indexes, num_attrs, s)


VARIANTS = ["sync", "async", "sync_v2", "async_v2"]


def ret_of(variant, *args, **kw):
    return call(variant, *args, **kw)[1]


# ---------------------------------------------------------------------------
# Section 15, cases 37-40
# ---------------------------------------------------------------------------

def test_case37_dest_max_below_size_is_100000(rt, b):
    """UT aclrtMemcpyBatch_failed_with_invalid_args / B5: aclrtMemcpyBatch(..., destMax[1] = 0 < size 1) -> 100000;
    nothing is copied."""
    entries = [h2d(b, 0, 0, 1), (b.dev + 64, 0, b.host + 64, 1)]
    _, ret = sync_batch(entries, [H2D_ATTR], [0])
    assert ret == 100000
    assert b.untouched()


def test_case38_attr_rsv_byte_set_is_100000(rt, b):
    """UT aclrtMemcpyBatch_failed_with_invalid_args / B6 / attribute struct: aclrtMemcpyBatch(..., attrs.rsv[0] = 1)
    -> 100000; nothing is copied."""
    rsv = bytes([1]) + bytes(15)
    _, ret = sync_batch([h2d(b, 0, 0, 16)], [attr(DEVICE, HOST, rsv=rsv)], [0])
    assert ret == 100000
    assert b.untouched()


def test_case39_all_sizes_zero_is_0_with_fail_index_size_max(rt):
    """UT aclrtMemcpyBatch_success_with_all_zero_sizes / B3: aclrtMemcpyBatch with all sizes 0 -> 0 and failIndex =
    SIZE_MAX, even with null dsts, destMaxs, srcs, attrs and attrsIndexes (nothing else is checked)."""
    assert acl.rt.memcpy_batch(None, None, None, [0, 0, 0], 3, None, None, 0) == (SIZE_MAX, 0)


def test_case40_batch_v2_null_arrays_zero_sizes_is_0(rt):
    """UT aclrtMemcpyBatchV2_success / B3: aclrtMemcpyBatchV2(NULL, NULL, NULL, zero sizes, ...) -> 0 (V2 returns only
    ret)."""
    assert acl.rt.memcpy_batch_v2(None, None, None, [0, 0], 2, None, None, 0) == 0


# ---------------------------------------------------------------------------
# ACL chain (B1-B6)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_sizes_null_is_100000(rt, b, stream, variant):
    """B1-B2: sizes null -> 100000."""
    assert ret_of(variant, [b.dev], [16], [b.host], None, 1, [H2D_ATTR], [0], 1, s=stream) == 100000
    assert b.untouched()


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_num_batches_zero_is_100000(rt, b, stream, variant):
    """B1-B2: numBatches 0 -> 100000 (sizes given, empty)."""
    assert ret_of(variant, [], [], [], [], 0, [H2D_ATTR], [0], 1, s=stream) == 100000


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("product", ["910B", "310P"])
def test_batch_all_sizes_zero_is_0_before_every_other_check(fresh, variant, product):
    """B3 (UT aclrtMemcpyBatch_success_with_all_zero_sizes, aclrtMemcpyBatchV2_success): all sizes 0 -> 0 with null
    arrays, numAttrs 0, no device set, on any product (the runtime's chip gate comes after the ACL chain); failIndex
    is SIZE_MAX."""
    fresh(product)
    fail_index, ret = call(variant, None, None, None, [0] * 4, 4, None, None, 0, s=0)
    assert ret == 0
    assert fail_index in (None, SIZE_MAX)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("null", ["dsts", "destMaxs", "srcs", "attrs", "attrsIndexes"])
def test_batch_null_array_is_100000(rt, b, stream, variant, null):
    """B4: dsts, destMaxs, srcs, attrs or attrsIndexes null (with a non-zero size) -> 100000."""
    args = {"dsts": [b.dev], "destMaxs": [16], "srcs": [b.host], "attrs": [H2D_ATTR], "attrsIndexes": [0]}
    args[null] = None
    ret = ret_of(variant, args["dsts"], args["destMaxs"], args["srcs"], [16], 1, args["attrs"],
                 args["attrsIndexes"], 1, s=stream)
    assert ret == 100000
    assert b.untouched()


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_dest_max_below_size_is_100000(rt, b, stream, variant):
    """B5: any destMaxs[i] < sizes[i] -> 100000 (here the last of three entries); no entry is
    copied."""
    entries = [h2d(b, 0, 0, 16), h2d(b, 64, 64, 16), (b.dev + 128, 15, b.host + 128, 16)]
    dsts, maxs, srcs, sizes = columns(entries)
    assert ret_of(variant, dsts, maxs, srcs, sizes, 3, [H2D_ATTR], [0], 1, s=stream) == 100000
    rt.synchronize_stream(stream)
    assert b.untouched()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("where", [(0, 0), (0, 15), (1, 7)])
def test_batch_attr_rsv_not_zero_is_100000(rt, b, stream, variant, where):
    """B6 / attribute struct: any of the 16 rsv bytes of any attrs[k] (k < numAttrs) non-zero -> 100000."""
    k, byte = where
    rsv = bytearray(16)
    rsv[byte] = 0x80
    attrs = [H2D_ATTR, D2H_ATTR]
    attrs[k] = dict(attrs[k], rsv=bytes(rsv))
    entries = [h2d(b, 0, 0, 16), d2h(b, 64, 64, 16)]
    dsts, maxs, srcs, sizes = columns(entries)
    assert ret_of(variant, dsts, maxs, srcs, sizes, 2, attrs, [0, 1], 2, s=stream) == 100000
    rt.synchronize_stream(stream)
    assert b.untouched()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("short", ["dsts", "destMaxs", "srcs", "sizes", "attrs", "attrsIndexes"])
def test_batch_list_length_disagreeing_with_its_count_is_100000(rt, b, stream, variant, short):
    """facade (emu/acl/rt.py): a list whose length disagrees with its count argument (numBatches for dsts, destMaxs,
    srcs and sizes; numAttrs for attrs and attrsIndexes) -> ACL_ERROR_INVALID_PARAM (100000)."""
    entries = [h2d(b, 0, 0, 16), h2d(b, 64, 64, 16)]
    cols = dict(zip(["dsts", "destMaxs", "srcs", "sizes"], columns(entries)))
    cols["attrs"], cols["attrsIndexes"] = [H2D_ATTR, H2D_ATTR], [0, 1]
    cols[short] = cols[short][:1]
    ret = ret_of(variant, cols["dsts"], cols["destMaxs"], cols["srcs"], cols["sizes"], 2, cols["attrs"],
                 cols["attrsIndexes"], 2, s=stream)
    assert ret == 100000
    rt.synchronize_stream(stream)
    assert b.untouched()


@pytest.mark.parametrize("product", ["310P", "910", "200I_A2"])
def test_batch_acl_checks_come_before_the_chip_gate(fresh, product):
    """batch: the ACL chain runs before the runtime's chip gate: on products without batch copies,
    sizes null or destMax < size still give 100000, not 207000."""
    rt = fresh(product)
    rt.set_device(0)
    dev = device(rt, 64)
    hp, _ = pageable(64)
    assert acl.rt.memcpy_batch([dev], [16], [hp], None, 1, [H2D_ATTR], [0], 1)[1] == 100000
    assert acl.rt.memcpy_batch([dev], [15], [hp], [16], 1, [H2D_ATTR], [0], 1)[1] == 100000


# ---------------------------------------------------------------------------
# Runtime chain (B7-B14)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("product", ["310P", "910", "200I_A2"])
def test_batch_on_product_without_batch_copy_is_207000(fresh, variant, product):
    """B7 / products / product gate: batch copies exist on 950, A3 and A2 only; 310P, 910 and 200I/500 A2
    -> 207000, and nothing is copied."""
    rt = fresh(product)
    rt.set_device(0)
    dev = device(rt, 64)
    hp, harr = pageable(64)
    harr[:] = 0x5A
    _, ret = call(variant, [dev], [16], [hp], [16], 1, [H2D_ATTR], [0], 1, s=0)
    assert ret == 207000
    assert np.all(peek(rt, dev, 64) == OLD)


@pytest.mark.parametrize("product", ["950PR", "950DT", "A3", "910B"])
def test_batch_on_950_a3_a2_copies(fresh, product):
    """batch support / products: batch copies work on 950PR/950DT, A3 and A2."""
    rt = fresh(product)
    rt.set_device(0)
    bb = Bufs(rt, 256)
    fail_index, ret = sync_batch([h2d(bb, 0, 0, 32), d2h(bb, 64, 64, 32)], [H2D_ATTR, D2H_ATTR], [0, 1])
    assert (fail_index, ret) == (SIZE_MAX, 0)
    assert np.array_equal(bb.dev_now()[:32], pattern(256, 1)[:32])
    assert np.array_equal(bb.host_now()[64:96], pattern(256, 2)[64:96])


def test_batch_chip_gate_comes_before_num_attrs(fresh):
    """B7 before B9: on 310P numAttrs 0 still gives 207000."""
    rt = fresh("310P")
    rt.set_device(0)
    dev = device(rt, 64)
    hp, _ = pageable(64)
    assert acl.rt.memcpy_batch([dev], [16], [hp], [16], 1, [], [], 0)[1] == 207000


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_num_attrs_zero_is_107000(rt, b, stream, variant):
    """B9-B10: numAttrs 0 -> 107000; failIndex SIZE_MAX; nothing is copied."""
    fail_index, ret = call(variant, [b.dev], [16], [b.host], [16], 1, [], [], 0, s=stream)
    assert ret == 107000
    assert fail_index in (None, SIZE_MAX)
    rt.synchronize_stream(stream)
    assert b.untouched()


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_num_attrs_above_num_batches_is_107000(rt, b, stream, variant):
    """B9-B10: numAttrs > numBatches -> 107000, failIndex SIZE_MAX."""
    fail_index, ret = call(variant, [b.dev], [16], [b.host], [16], 1, [H2D_ATTR, H2D_ATTR], [0, 1], 2,
                           s=stream)
    assert ret == 107000
    assert fail_index in (None, SIZE_MAX)
    rt.synchronize_stream(stream)
    assert b.untouched()


def _one_byte_entries(b, count):
    return [h2d(b, j, j, 1) for j in range(count)]


@pytest.mark.parametrize("variant", ["sync", "sync_v2"])
def test_batch_sync_with_4097_entries_is_107000(rt, b, variant):
    """B11 / limits / ⚠ docs: a synchronous batch holds at most 4096 entries: 4097 -> 107000 with
    failIndex SIZE_MAX, and nothing is copied."""
    dsts, maxs, srcs, sizes = columns(_one_byte_entries(b, 4097))
    fail_index, ret = call(variant, dsts, maxs, srcs, sizes, 4097, [H2D_ATTR], [0], 1)
    assert ret == 107000
    assert fail_index in (None, SIZE_MAX)
    assert b.untouched()


def test_batch_sync_with_4096_entries_copies(rt):
    """B11 / limits: exactly 4096 entries is allowed: all 4096 one-byte entries land."""
    bb = Bufs(rt, 4096)
    assert sync_batch(_one_byte_entries(bb, 4096), [H2D_ATTR], [0]) == (SIZE_MAX, 0)
    assert np.array_equal(bb.dev_now(), pattern(4096, 1))


@pytest.mark.parametrize("variant", ["async", "async_v2"])
def test_batch_async_with_4097_entries_is_allowed(rt, variant):
    """B11 / ⚠ docs: the 4096-entry limit is enforced for sync batches only: an async batch of
    4097 one-byte entries returns 0 and, after synchronize, every entry has landed."""
    bb = Bufs(rt, 4097 + 31)
    s = rt.create_stream()
    dsts, maxs, srcs, sizes = columns(_one_byte_entries(bb, 4097))
    fail_index, ret = call(variant, dsts, maxs, srcs, sizes, 4097, [H2D_ATTR], [0], 1, s=s)
    assert ret == 0
    assert fail_index in (None, SIZE_MAX)
    rt.synchronize_stream(s)
    assert np.array_equal(bb.dev_now()[:4097], pattern(bb.n, 1)[:4097])


@pytest.mark.parametrize("variant", VARIANTS)
def test_batch_first_attrs_index_not_zero_is_107000(rt, b, stream, variant):
    """B12: attrsIndexes[0] != 0 -> 107000, failIndex SIZE_MAX."""
    dsts, maxs, srcs, sizes = columns([h2d(b, 0, 0, 16), h2d(b, 64, 64, 16)])
    fail_index, ret = call(variant, dsts, maxs, srcs, sizes, 2, [H2D_ATTR], [1], 1, s=stream)
    assert ret == 107000
    assert fail_index in (None, SIZE_MAX)
    rt.synchronize_stream(stream)
    assert b.untouched()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("indexes", [[0, 0, 2], [0, 2, 1], [0, 1, 4], [0, 2, 5]])
def test_batch_attrs_indexes_not_increasing_or_not_below_count_is_107000(rt, b, stream, variant, indexes):
    """B13: attrsIndexes must strictly increase and each be < numBatches (4 here): a repeat, a
    decrease, or an index >= 4 -> 107000 with failIndex SIZE_MAX."""
    dsts, maxs, srcs, sizes = columns([h2d(b, 64 * j, 64 * j, 16) for j in range(4)])
    fail_index, ret = call(variant, dsts, maxs, srcs, sizes, 4, [H2D_ATTR] * 3, indexes, 3, s=stream)
    assert ret == 107000
    assert fail_index in (None, SIZE_MAX)
    rt.synchronize_stream(stream)
    assert b.untouched()


def _two_way_entries(b):
    """Entries 0-1 H2D, 2-3 D2H, on disjoint ranges."""
    return [h2d(b, 0, 0, 32), h2d(b, 64, 64, 32), d2h(b, 128, 128, 32), d2h(b, 192, 192, 32)]


def expected_after(b, entries, k):
    """(host, device) contents once entries[:k] (disjoint ranges) have been copied."""
    host0, host, dev = pattern(b.n, 1), pattern(b.n, 1), b.ddata.copy()
    for dst, _, src, n in entries[:k]:
        if b.dev <= dst < b.dev + b.n:
            dev[dst - b.dev:dst - b.dev + n] = host0[src - b.host:src - b.host + n]
        else:
            host[dst - b.host:dst - b.host + n] = b.ddata[src - b.dev:src - b.dev + n]
    return host, dev


def done_before(b, entries, k):
    """Whether exactly entries[:k] have been copied: an async batch does or enqueues each entry before it
    checks the next (api_impl.cc ApiImpl::LoopMemcpyAsync), a sync one checks them all first."""
    host, dev = expected_after(b, entries, k)
    return np.array_equal(b.host_now(), host) and np.array_equal(b.dev_now(), dev)


def _two_way_expected(b):
    host, dev = pattern(b.n, 1), b.ddata.copy()
    dev[0:32], dev[64:96] = host[0:32], host[64:96]
    host[128:160], host[192:224] = b.ddata[128:160], b.ddata[192:224]
    return host, dev


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_batch_entry_uses_attr_with_largest_index_not_above_it(rt, b, stream, mode):
    """B17 (the attribute of an entry): entry j uses attrs[k] for the largest k with attrsIndexes[k] <= j: attrs
    [H2D, D2H] at indexes [0, 2] cover H2D entries 0-1 and D2H entries 2-3; the batch copies all four."""
    entries = _two_way_entries(b)
    if mode == "sync":
        res = sync_batch(entries, [H2D_ATTR, D2H_ATTR], [0, 2])
    else:
        res = async_batch(entries, [H2D_ATTR, D2H_ATTR], [0, 2], stream)
        rt.synchronize_stream(stream)
    assert res == (SIZE_MAX, 0)
    host, dev = _two_way_expected(b)
    assert np.array_equal(b.host_now(), host)
    assert np.array_equal(b.dev_now(), dev)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("attrs,indexes,fail_index", [
    ([D2H_ATTR, H2D_ATTR], [0, 2], 0),  # swapped: D2H attribute on H2D entry 0
    ([H2D_ATTR, D2H_ATTR], [0, 1], 1),  # D2H attribute from entry 1, an H2D entry
    ([H2D_ATTR, D2H_ATTR], [0, 3], 2),  # H2D attribute still on entry 2, a D2H entry
])
def test_batch_entry_with_the_wrong_attr_fails_at_its_index(rt, b, stream, mode, attrs, indexes, fail_index):
    """B17 (the attribute of an entry) and per-entry: an entry whose covering attribute does not match its locations
    -> 107000 with failIndex = that entry. A sync batch copies nothing; an async one has already done or
    enqueued the entries before it (api_impl.cc ApiImpl::LoopMemcpyAsync); this test used to expect
    nothing copied in both modes."""
    entries = _two_way_entries(b)
    if mode == "sync":
        res = sync_batch(entries, attrs, indexes)
    else:
        res = async_batch(entries, attrs, indexes, stream)
        rt.synchronize_stream(stream)
    assert res == (fail_index, 107000)
    assert done_before(b, entries, fail_index if mode == "async" else 0)


# ---------------------------------------------------------------------------
# Per-entry checks (B15-B18)
# ---------------------------------------------------------------------------

def test_batch_async_zero_size_entry_in_mixed_batch_is_107000(rt, b, stream):
    """B15-B18 / ⚠ docs: in an async batch an entry of size 0 -> 107000 with failIndex = that entry
    (2 here), although the docs treat a zero size as nothing to do; entries 0 and 1 are already enqueued
    (api_impl.cc ApiImpl::LoopMemcpyAsync; this test used to expect no entry copied)."""
    entries = [h2d(b, 0, 0, 16), h2d(b, 64, 64, 16), h2d(b, 128, 128, 0), h2d(b, 192, 192, 16)]
    assert async_batch(entries, [H2D_ATTR], [0], stream) == (2, 107000)
    rt.synchronize_stream(stream)
    assert done_before(b, entries, 2)


def test_batch_async_v2_zero_size_entry_is_107000(rt, b, stream):
    """B15-B18 / ⚠ docs: the same through aclrtMemcpyBatchAsyncV2 (ret only)."""
    dsts, maxs, srcs, sizes = columns([h2d(b, 0, 0, 0), h2d(b, 64, 64, 16)])
    assert acl.rt.memcpy_batch_async_v2(dsts, maxs, srcs, sizes, 2, [H2D_ATTR], [0], 1, stream) == 107000


def test_batch_sync_zero_size_entry_in_mixed_batch_is_skipped(rt, b):
    """B15-B18 / ⚠ docs: the size-0 rejection is on the async loop path only; a sync batch with a
    zero-size entry copies the other entries and returns 0."""
    entries = [h2d(b, 0, 0, 16), h2d(b, 64, 64, 0), h2d(b, 128, 128, 16)]
    assert sync_batch(entries, [H2D_ATTR], [0]) == (SIZE_MAX, 0)
    dev = b.ddata.copy()
    dev[0:16], dev[128:144] = pattern(N, 1)[0:16], pattern(N, 1)[128:144]
    assert np.array_equal(b.dev_now(), dev)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("wrong", [
    attr(HOST, HOST),  # dst type wrong
    attr(DEVICE, DEVICE),  # src type wrong
    attr(HOST, DEVICE),  # both wrong (a D2H attribute)
    attr(DEVICE, HOST, dst_id=1),  # device id wrong
])
def test_batch_location_not_matching_the_attr_is_107000(rt, b, stream, mode, wrong):
    """B15-B18: the entry's actual locations must equal the attribute's (type, and for DEVICE the
    device id), else 107000 with failIndex = the entry (1 here); a sync batch copies nothing, an async one
    has already enqueued entry 0 (api_impl.cc ApiImpl::LoopMemcpyAsync; this test used to expect nothing
    copied in both modes)."""
    entries = [h2d(b, 0, 0, 16), h2d(b, 64, 64, 16)]
    if mode == "sync":
        res = sync_batch(entries, [H2D_ATTR, wrong], [0, 1])
    else:
        res = async_batch(entries, [H2D_ATTR, wrong], [0, 1], stream)
        rt.synchronize_stream(stream)
    assert res == (1, 107000)
    assert done_before(b, entries, 1 if mode == "async" else 0)


def test_batch_attr_device_id_of_another_device_matches_its_memory(rt, b):
    """B15-B18: a DEVICE location matches when the attribute names the memory's device: an H2D
    entry into device 1 memory under attr dst {DEVICE, id 1} copies."""
    rt.set_device(1)
    dev1 = device(rt, 64)
    rt.set_device(0)
    entries = [h2d(b, 0, 0, 16), (dev1, 16, b.host + 64, 16)]
    res = sync_batch(entries, [H2D_ATTR, attr(DEVICE, HOST, dst_id=1)], [0, 1])
    assert res == (SIZE_MAX, 0)
    assert np.array_equal(peek(rt, dev1, 16), pattern(N, 1)[64:80])


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("entry_kind", ["h2h", "d2d"])
def test_batch_entry_with_both_ends_on_one_side_is_107000(rt, b, stream, mode, entry_kind):
    """B15-B18: dst and src on the same side (an H2H or D2D entry, with an attribute that matches
    it) -> 107000 with failIndex = the entry (1 here); a sync batch copies nothing, an async one has already
    enqueued entry 0 (api_impl.cc ApiImpl::LoopMemcpyAsync; this test used to expect nothing copied)."""
    if entry_kind == "h2h":
        hp, harr = pageable(64, 0)
        bad, bad_attr = (hp, 16, b.host + 512, 16), attr(HOST, HOST)
    else:
        bad, bad_attr = (b.dev + 512, 16, b.dev + 1024, 16), attr(DEVICE, DEVICE)
    entries = [h2d(b, 0, 0, 16), bad]
    if mode == "sync":
        res = sync_batch(entries, [H2D_ATTR, bad_attr], [0, 1])
    else:
        res = async_batch(entries, [H2D_ATTR, bad_attr], [0, 1], stream)
        rt.synchronize_stream(stream)
    assert res == (1, 107000)
    assert done_before(b, entries, 1 if mode == "async" else 0)
    if entry_kind == "h2h":
        assert np.all(harr == 0)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_batch_pageable_memory_matches_a_host_attr(rt, stream, mode):
    """B15-B18 / locations: UNREGISTERED (pageable) memory counts as HOST: pageable entries in both
    directions under HOST attributes copy."""
    dev = device(rt, 256)
    ddata = pattern(256, 4)
    write_device(rt, dev, ddata)
    sp, src = pageable(64)
    src[:] = pattern(64, 5)
    dp, dst = pageable(64, 0)
    entries = [(dev, 32, sp, 32), (dp, 32, dev + 128, 32)]
    if mode == "sync":
        res = sync_batch(entries, [H2D_ATTR, D2H_ATTR], [0, 1])
    else:
        res = async_batch(entries, [H2D_ATTR, D2H_ATTR], [0, 1], stream)
        rt.synchronize_stream(stream)
    assert res == (SIZE_MAX, 0)
    assert np.array_equal(peek(rt, dev, 32), src[:32])
    assert np.array_equal(dst[:32], ddata[128:160])


def test_batch_host_numa_attr_matches_page_locked_memory(rt, b):
    """B15-B18: an attribute location of HOST_NUMA counts as HOST: it matches aclrtMallocHost memory."""
    res = sync_batch([h2d(b, 0, 0, 32)], [attr(DEVICE, HOST_NUMA)], [0])
    assert res == (SIZE_MAX, 0)
    assert np.array_equal(b.dev_now()[:32], pattern(N, 1)[:32])


def test_batch_unregistered_attr_type_never_matches(rt):
    """B15-B18, literal rule: 'the actual location (UNREG counts as HOST) must equal the attr
    location (HOST_NUMA counts as HOST)'. Only HOST_NUMA is folded on the attribute side, so an attribute
    saying UNREGISTERED equals no actual location (pageable memory is already HOST) -> 107000, failIndex 0."""
    dev = device(rt, 64)
    sp, _ = pageable(64, 0x5A)
    assert sync_batch([(dev, 16, sp, 16)], [attr(DEVICE, UNREGISTERED)], [0]) == (0, 107000)
    assert np.all(peek(rt, dev, 64) == OLD)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_batch_mixed_directions_per_entry_are_allowed(rt, b, stream, mode):
    """B15-B18 / ⚠ docs: the docs allow one direction per batch; the runtime checks
    each entry only for being H2D or D2H, so H2D, D2H, H2D entries (each with its own attribute) copy."""
    entries = [h2d(b, 0, 0, 32), d2h(b, 64, 64, 32), h2d(b, 128, 128, 32)]
    if mode == "sync":
        res = sync_batch(entries, [H2D_ATTR, D2H_ATTR, H2D_ATTR], [0, 1, 2])
    else:
        res = async_batch(entries, [H2D_ATTR, D2H_ATTR, H2D_ATTR], [0, 1, 2], stream)
        rt.synchronize_stream(stream)
    assert res == (SIZE_MAX, 0)
    host, dev = pattern(N, 1), b.ddata.copy()
    dev[0:32], dev[128:160] = host[0:32], host[128:160]
    host[64:96] = b.ddata[64:96]
    assert np.array_equal(b.host_now(), host)
    assert np.array_equal(b.dev_now(), dev)


# ---------------------------------------------------------------------------
# Execution (B19-B24)
# ---------------------------------------------------------------------------

def test_batch_sync_copies_every_entry_before_returning(rt, b):
    """B19-B24 (sync): when aclrtMemcpyBatch returns 0, every entry has landed (checked without any
    further API call); bytes outside the entries keep their values."""
    entries = _two_way_entries(b)
    assert sync_batch(entries, [H2D_ATTR, D2H_ATTR], [0, 2]) == (SIZE_MAX, 0)
    host, dev = _two_way_expected(b)
    assert np.array_equal(b.host_now(), host)
    assert np.array_equal(b.dev_now(), dev)


@pytest.mark.parametrize("variant", ["async", "async_v2"])
def test_batch_async_page_locked_lands_only_after_synchronize(rt, b, stream, variant):
    """B19-B24 (async, pinned entries are async tasks): on page-locked memory the call
    only enqueues: both buffers still hold their old bytes on return; after aclrtSynchronizeStream every
    entry has landed."""
    dsts, maxs, srcs, sizes = columns(_two_way_entries(b))
    fail_index, ret = call(variant, dsts, maxs, srcs, sizes, 4, [H2D_ATTR, D2H_ATTR], [0, 2], 2, s=stream)
    assert ret == 0
    assert fail_index in (None, SIZE_MAX)
    assert b.untouched()
    assert rt.synchronize_stream(stream) is None
    host, dev = _two_way_expected(b)
    assert np.array_equal(b.host_now(), host)
    assert np.array_equal(b.dev_now(), dev)


@pytest.mark.parametrize("variant", ["async", "async_v2"])
def test_batch_async_pageable_entry_is_done_on_return(rt, b, stream, variant):
    """B19-B24 (async, pageable entries: stream sync + synchronous copy): a pageable
    entry has landed when the call returns; after synchronize the page-locked entry has too."""
    sp, src = pageable(64)
    src[:] = pattern(64, 9)
    dp, dst = pageable(64, 0)
    entries = [h2d(b, 0, 0, 32), (b.dev + 256, 32, sp, 32), (dp, 32, b.dev + 512, 32)]
    dsts, maxs, srcs, sizes = columns(entries)
    _, ret = call(variant, dsts, maxs, srcs, sizes, 3, [H2D_ATTR, D2H_ATTR], [0, 2], 2, s=stream)
    assert ret == 0
    assert np.array_equal(peek(rt, b.dev + 256, 32), src[:32])
    assert np.array_equal(dst[:32], b.ddata[512:544])
    rt.synchronize_stream(stream)
    assert np.array_equal(peek(rt, b.dev, 32), pattern(N, 1)[:32])


def test_batch_async_null_stream_is_the_default_stream(rt, b):
    """default stream / batch: stream 0 is the current context's default stream."""
    assert async_batch([h2d(b, 0, 0, 64)], [H2D_ATTR], [0], 0) == (SIZE_MAX, 0)
    rt.synchronize_stream(0)
    assert np.array_equal(b.dev_now()[:64], pattern(N, 1)[:64])


@pytest.mark.parametrize("variant", ["async", "async_v2"])
def test_batch_async_destroyed_stream_is_107017(rt, b, variant):
    """bad handle: an async batch on a destroyed stream -> 107017; nothing is copied."""
    s = rt.create_stream()
    rt.destroy_stream(s)
    dsts, maxs, srcs, sizes = columns([h2d(b, 0, 0, 16)])
    assert call(variant, dsts, maxs, srcs, sizes, 1, [H2D_ATTR], [0], 1, s=s)[1] == 107017
    assert b.untouched()


def test_batch_v2_variants_return_only_ret_and_copy_the_same(rt, b, stream):
    """facade (emu/acl/rt.py) / batch: BatchV2 and BatchAsyncV2 drop failIndex: the facade returns the bare ret (0 on
    success, the code on failure) and the bytes are those of the non-V2 calls."""
    dsts, maxs, srcs, sizes = columns(_two_way_entries(b))
    assert acl.rt.memcpy_batch_v2(dsts, maxs, srcs, sizes, 4, [H2D_ATTR, D2H_ATTR], [0, 2], 2) == 0
    host, dev = _two_way_expected(b)
    assert np.array_equal(b.host_now(), host)
    assert np.array_equal(b.dev_now(), dev)
    b2 = Bufs(rt)
    dsts, maxs, srcs, sizes = columns(_two_way_entries(b2))
    assert acl.rt.memcpy_batch_async_v2(dsts, maxs, srcs, sizes, 4, [H2D_ATTR, D2H_ATTR], [0, 2], 2,
                                        stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    host, dev = _two_way_expected(b2)
    assert np.array_equal(b2.host_now(), host)
    assert np.array_equal(b2.dev_now(), dev)
    # a failing V2 call: the bare code, no failIndex
    assert acl.rt.memcpy_batch_v2(dsts, maxs, srcs, sizes, 4, [D2H_ATTR, H2D_ATTR], [0, 2], 2) == 107000


def test_batch_facade_returns_fail_index_and_ret(rt, b, stream):
    """facade (emu/acl/rt.py): acl.rt.memcpy_batch / memcpy_batch_async return (fail_index, ret): (SIZE_MAX, 0) on
    success, (j, code) when entry j fails."""
    entries = _two_way_entries(b)
    out = sync_batch(entries, [H2D_ATTR, D2H_ATTR], [0, 2])
    assert isinstance(out, tuple) and out == (SIZE_MAX, 0)
    out = async_batch(entries, [H2D_ATTR, D2H_ATTR], [0, 3], stream)
    assert isinstance(out, tuple) and out == (2, 107000)


def test_batch_runtime_api_reports_fail_index_on_the_error(rt, b):
    """The Python runtime API: memcpy_batch returns failIndex (SIZE_MAX) and raises an AclError that
    carries fail_index for a failing entry."""
    dsts, maxs, srcs, sizes = columns(_two_way_entries(b))
    assert rt.memcpy_batch(dsts, maxs, srcs, sizes, 4, [H2D_ATTR, D2H_ATTR], [0, 2], 2) == SIZE_MAX
    with pytest.raises(AclError) as err:
        rt.memcpy_batch(dsts, maxs, srcs, sizes, 4, [H2D_ATTR, D2H_ATTR], [0, 1], 2)
    assert err.value.code == 107000
    assert err.value.fail_index == 1


# ---------------------------------------------------------------------------
# Property-based: disjoint segments against a numpy reference
# ---------------------------------------------------------------------------

PN = 2048  # bytes of each buffer in the property test
MAX_ENTRIES = 8


@st.composite
def batches(draw):
    k = draw(st.integers(1, MAX_ENTRIES))
    slot = PN // k
    host_slots = draw(st.permutations(range(k)))
    dev_slots = draw(st.permutations(range(k)))
    entries = []
    for j in range(k):
        direction = draw(st.sampled_from([H2D, D2H]))
        size = draw(st.integers(1, min(slot, 96)))
        hoff = host_slots[j] * slot + draw(st.integers(0, slot - size))
        doff = dev_slots[j] * slot + draw(st.integers(0, slot - size))
        slack = draw(st.integers(0, 8))
        entries.append([direction, hoff, doff, size, size + slack])
    fault = draw(st.sampled_from(["none", "none", "zero", "dest_max", "attr"]))
    if fault == "zero":  # some entries (maybe all) of size 0
        for j in draw(st.sets(st.integers(0, k - 1), min_size=1)):
            entries[j][3] = 0
    elif fault == "dest_max":  # destMax < size at one entry (ACL layer)
        j = draw(st.integers(0, k - 1))
        entries[j][4] = entries[j][3] - 1
    bad_run = draw(st.integers(0, k - 1)) if fault == "attr" else None
    asynchronous = draw(st.booleans())
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return entries, fault, bad_run, asynchronous, seed


def _runs(entries):
    """Start indexes of the maximal runs of entries with the same direction."""
    return [j for j in range(len(entries)) if j == 0 or entries[j][0] != entries[j - 1][0]]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=batches())
def test_batch_property_disjoint_segments_match_numpy_reference(case):
    """batch: random disjoint segments between a page-locked host buffer and a device buffer, random
    direction per entry (one attribute per run of equal directions), sync or async: either every segment
    is copied exactly (and no other byte changes), or the call returns the code of the conformance table with the right
    failIndex and only the entries before it are copied, those of an async batch (each entry is checked,
    then done or enqueued: api_impl.cc ApiImpl::LoopMemcpyAsync; this test used to expect none):
    - all sizes 0 -> 0, SIZE_MAX (ACL 3);
    - a destMax below its size -> 100000 (ACL 5);
    - async with a size-0 entry -> 107000 at the first such entry (per entry, ⚠ docs); sync skips it;
    - an attribute naming the wrong device for its run -> 107000 at the run's first entry."""
    entries, fault, bad_run, asynchronous, seed = case
    rt = emu.configure(product="910B", functional=True)
    rt.set_device(0)
    rng = np.random.default_rng(seed)
    host, hview = pinned(rt, PN)
    hview[:] = rng.integers(0, 256, PN, dtype=np.uint8)
    dev = rt.malloc(PN, NORMAL_ONLY)
    write_device(rt, dev, rng.integers(0, 256, PN, dtype=np.uint8))
    host0, dev0 = hview.copy(), read_device(rt, dev, PN)

    dsts, maxs, srcs, sizes = [], [], [], []
    for direction, hoff, doff, size, dest_max in entries:
        dst, src = (dev + doff, host + hoff) if direction == H2D else (host + hoff, dev + doff)
        dsts.append(dst)
        srcs.append(src)
        sizes.append(size)
        maxs.append(dest_max)
    starts = _runs(entries)
    attrs = [dict(H2D_ATTR if entries[j][0] == H2D else D2H_ATTR) for j in starts]
    bad_start = None
    if bad_run is not None:  # the attribute of the run holding entry bad_run names device 1
        k = max(i for i, j in enumerate(starts) if j <= bad_run)
        bad_start = starts[k]
        side = "dst_loc" if entries[bad_start][0] == H2D else "src_loc"
        attrs[k] = dict(attrs[k], **{side: {"id": 1, "type": DEVICE}})

    if asynchronous:
        s = rt.create_stream()
        got = acl.rt.memcpy_batch_async(dsts, maxs, srcs, sizes, len(sizes), attrs, starts, len(attrs), s)
        rt.synchronize_stream(s)
    else:
        got = acl.rt.memcpy_batch(dsts, maxs, srcs, sizes, len(sizes), attrs, starts, len(attrs))

    host_exp, dev_exp = host0.copy(), dev0.copy()
    if all(sz == 0 for sz in sizes):
        expected = (SIZE_MAX, 0)
    elif any(m < sz for m, sz in zip(maxs, sizes)):
        expected = (None, 100000)  # the ACL layer; failIndex is not specified for it
    elif asynchronous and 0 in sizes:
        expected = (sizes.index(0), 107000)
    elif bad_start is not None:
        expected = (bad_start, 107000)
    else:
        expected = (SIZE_MAX, 0)
    if expected[1] in (0, 107000):
        done = len(entries) if expected[1] == 0 else expected[0] if asynchronous else 0
        for direction, hoff, doff, size, _ in entries[:done]:
            if direction == H2D:
                dev_exp[doff:doff + size] = host0[hoff:hoff + size]
            else:
                host_exp[hoff:hoff + size] = dev0[doff:doff + size]
    event(f"ret {expected[1]}")
    assert got[1] == expected[1]
    if expected[0] is not None:
        assert got[0] == expected[0]
    assert np.array_equal(hview, host_exp)
    assert np.array_equal(read_device(rt, dev, PN), dev_exp)
