"""Batch copies in bulk (emu/runtime/batch.py): the entries checked all at once (`_checked_at_once`) and one by
one (`_entry`, the path every failing or awkward batch takes) give the same return codes, fail indexes, bytes,
records and simulated times; the GROUP task runs its entries as lanes on the engines (models/machine.py
Machine._lanes) and moves all their bytes in one call when it completes (emu/batch_kernels.py).

The per-entry path is forced by making the bulk checks answer "ask each entry" (None). Entries touch disjoint
byte ranges: the runtime promises no order among the entries of one batch.
"""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import emu
from emu import AclError
from emu.errors import BatchError
from emu.models import COPY, GROUP, Machine, Task
from emu.models import machine as model
from emu.models.machine import Batch
from emu.runtime import batch as batch_module
from helpers import peek

SIZE_MAX = 2 ** 64 - 1
HOST, DEVICE = 0, 1
SLOT = 128  # bytes of each entry's slot in its buffers
BAD_ADDRESS = 0x1234_0000


def attr(dst_type, src_type, dst_id=0, src_id=0):
    return {"dst_loc": {"type": dst_type, "id": dst_id}, "src_loc": {"type": src_type, "id": src_id}}


class World:
    """Two devices' buffers, a page-locked and a pageable host buffer, all holding random bytes."""

    def __init__(self, product: str, seed: int, slots: int):
        self.rt = rt = emu.configure(product=product, functional=True)
        rng = np.random.default_rng(seed)
        n = slots * SLOT
        self.dev = []
        for d in (1, 0):  # device 0 is left current
            rt.set_device(d)
            ptr = rt.malloc(n)
            data = rng.integers(0, 256, n, dtype=np.uint8)
            rt.memcpy(ptr, n, rt.register_host(data.copy()), n, 1)
            self.dev.insert(0, ptr)
        self.pinned = rt.malloc_host(n)
        self.pinned_view = rt.space.resolve(self.pinned, n)[0].view(0, n)
        self.pinned_view[:] = rng.integers(0, 256, n, dtype=np.uint8)
        self.pageable_array = rng.integers(0, 256, n, dtype=np.uint8)
        self.pageable = rt.register_host(self.pageable_array)
        self.n = n
        self.stream = rt.create_stream()

    def host(self, kind: str) -> int:
        return self.pinned if kind == "pinned" else self.pageable

    def state(self) -> list[np.ndarray]:
        """Every buffer's bytes, read without an API call."""
        return [peek(self.rt, d, self.n) for d in self.dev] + [self.pinned_view.copy(), self.pageable_array.copy()]

    def records(self) -> np.ndarray:
        rec = self.rt.records()
        return rec[["api", "kind", "device", "engine", "route", "links", "bytes", "tasks", "submit", "start", "end",
                    "kind_asked", "kind_used"]]


def run(world: World, mode: str, dsts, maxs, srcs, sizes, attrs, indexes) -> tuple[int, int]:
    """(failIndex, code) of one batch call; an async batch's stream is synchronized after it."""
    rt, count = world.rt, len(sizes)
    try:
        if mode == "sync":
            rt.memcpy_batch(dsts, maxs, srcs, sizes, count, attrs, indexes, len(attrs))
        elif mode == "sync_v2":
            rt.memcpy_batch_v2(dsts, maxs, srcs, sizes, count, attrs, indexes, len(attrs))
        elif mode == "async":
            rt.memcpy_batch_async(dsts, maxs, srcs, sizes, count, attrs, indexes, len(attrs), world.stream)
        else:
            rt.memcpy_batch_async_v2(dsts, maxs, srcs, sizes, count, attrs, indexes, len(attrs), world.stream)
        result = (SIZE_MAX, 0)
    except BatchError as e:
        result = (e.fail_index, e.code)
    rt.synchronize_stream(world.stream)
    return result


def both_paths(make, call):
    """`call(make())` with the bulk checks and with the per-entry checks only: (outcome, world) of each, and
    whether the bulk checks accepted the batch (whatever its size)."""
    accepted = []
    real = batch_module._checked_at_once

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        accepted.append(out is not None)
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch_module, "_checked_at_once", spy)
        mp.setattr(batch_module, "AT_ONCE_FROM", 1)  # (small batches too)
        bulk_world = make()
        bulk = call(bulk_world)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch_module, "_checked_at_once", lambda *args, **kwargs: None)
        mp.setattr(batch_module, "AT_ONCE_FROM", 1)  # (the lanes for a few entries too: one model for both)
        entry_world = make()
        one_by_one = call(entry_world)
    return (bulk, bulk_world), (one_by_one, entry_world), any(accepted)


def assert_same(a: World, b: World) -> None:
    for x, y in zip(a.state(), b.state()):
        np.testing.assert_array_equal(x, y)
    ta, tb = a.rt.record_totals(), b.rt.record_totals()
    for key in ("tasks", "end", "bytes_by_route", "tasks_by_route"):
        assert ta[key] == tb[key], key
    np.testing.assert_array_equal(a.records(), b.records())
    assert a.rt.clock == b.rt.clock


# ---------------------------------------------------------------------------
# random batches
# ---------------------------------------------------------------------------

MAX_ENTRIES = 10
FAULTS = ["none", "none", "bad_pointer", "zero_size", "wrong_device", "wrong_type", "dest_max"]


@st.composite
def batches(draw):
    k = draw(st.integers(1, MAX_ENTRIES))
    entries = []
    for _ in range(k):
        entries.append({"h2d": draw(st.booleans()), "host": draw(st.sampled_from(["pinned", "pinned", "pageable"])),
                        "device": draw(st.sampled_from([0, 0, 1])), "size": draw(st.integers(1, SLOT)),
                        "slack": draw(st.integers(0, 4))})
    fault = draw(st.sampled_from(FAULTS))
    where = draw(st.integers(0, k - 1))
    return {"entries": entries, "fault": fault, "where": where, "mode": draw(st.sampled_from(
        ["sync", "async", "sync_v2", "async_v2"])), "product": draw(st.sampled_from(["910B", "910B", "950PR"])),
        "seed": draw(st.integers(0, 2 ** 32 - 1)), "hslots": draw(st.permutations(range(k))),
        "dslots": draw(st.permutations(range(k)))}


def _columns(world: World, case) -> tuple:
    """dsts, destMaxs, srcs, sizes, attrs, attrsIndexes of a drawn batch: one attribute per run of entries
    with the same direction and device, then the drawn fault."""
    entries, fault, where = case["entries"], case["fault"], case["where"]
    dsts, maxs, srcs, sizes, starts, attrs = [], [], [], [], [], []
    for j, e in enumerate(entries):
        host = world.host(e["host"]) + case["hslots"][j] * SLOT
        dev = world.dev[e["device"]] + case["dslots"][j] * SLOT
        dst, src = (dev, host) if e["h2d"] else (host, dev)
        dsts.append(dst)
        srcs.append(src)
        sizes.append(e["size"])
        maxs.append(e["size"] + e["slack"])
        key = (e["h2d"], e["device"])
        if j == 0 or key != (entries[j - 1]["h2d"], entries[j - 1]["device"]):
            starts.append(j)
            attrs.append(attr(DEVICE, HOST, dst_id=e["device"]) if e["h2d"] else
                         attr(HOST, DEVICE, src_id=e["device"]))
    run_of = max(i for i, j in enumerate(starts) if j <= where)
    if fault == "bad_pointer":
        srcs[where] = BAD_ADDRESS
    elif fault == "zero_size":
        sizes[where] = 0
    elif fault == "dest_max":
        maxs[where] = sizes[where] - 1
    elif fault == "wrong_device":
        side = "dst_loc" if entries[starts[run_of]]["h2d"] else "src_loc"
        attrs[run_of] = dict(attrs[run_of], **{side: {"type": DEVICE, "id": 1 - entries[starts[run_of]]["device"]}})
    elif fault == "wrong_type":
        a = attrs[run_of]
        attrs[run_of] = {"dst_loc": a["src_loc"], "src_loc": a["dst_loc"]}
    return dsts, maxs, srcs, sizes, attrs, starts


def _expected(case) -> tuple[tuple[int | None, int], int]:
    """((failIndex or None when unspecified, code), how many leading entries land) by the conformance table."""
    entries, fault, where, mode = case["entries"], case["fault"], case["where"], case["mode"]
    k = len(entries)
    sync, loop = mode.startswith("sync"), case["product"] != "950PR"
    starts = [j for j in range(k) if j == 0 or (entries[j]["h2d"], entries[j]["device"]) !=
              (entries[j - 1]["h2d"], entries[j - 1]["device"])]
    run_start = max(j for j in starts if j <= where)
    if fault == "dest_max":
        return (None, 100000), 0
    if fault == "bad_pointer":
        fail = (where, 100000)
    elif fault == "zero_size":
        if sync or k == 1:  # (sync: skipped; all sizes 0: nothing is checked)
            return (SIZE_MAX, 0), k
        fail = (where, 107000)
    elif fault in ("wrong_device", "wrong_type"):
        fail = (run_start, 107000)
    else:
        return (SIZE_MAX, 0), k
    return fail, (fail[0] if not sync and loop else 0)


def _reference(world_before: list[np.ndarray], case, landed: int) -> list[np.ndarray]:
    """The buffers once the first `landed` entries are copied (and not the one of size 0)."""
    dev0, dev1, pinned, pageable = (b.copy() for b in world_before)
    devs, hosts = [dev0, dev1], {"pinned": pinned, "pageable": pageable}
    before = {"dev": [world_before[0], world_before[1]], "pinned": world_before[2], "pageable": world_before[3]}
    for j, e in enumerate(case["entries"][:landed]):
        n = 0 if case["fault"] == "zero_size" and j == case["where"] else e["size"]
        h, d = case["hslots"][j] * SLOT, case["dslots"][j] * SLOT
        if e["h2d"]:
            devs[e["device"]][d:d + n] = before[e["host"]][h:h + n]
        else:
            hosts[e["host"]][h:h + n] = before["dev"][e["device"]][d:d + n]
    return [dev0, dev1, pinned, pageable]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=batches())
def test_bulk_and_per_entry_checks_agree_on_random_batches(case):
    """Random batches (H2D and D2H, page-locked and pageable host memory, two devices, an attribute per run,
    each of the four calls, a PCIe and a UB product), with at most one fault: the bulk path and the per-entry
    path give the same (failIndex, code), bytes, records, totals and simulated times, and the code and the
    bytes are the conformance table's (a failing async batch on a PCIe host has done the entries before the
    failing one: ApiImpl::LoopMemcpyAsync). The bulk checks accept every batch without a fault."""
    k = len(case["entries"])

    def make():
        return World(case["product"], case["seed"], k)

    def call(world):
        start = world.state()
        return run(world, case["mode"], *_columns(world, case)), start

    ((got, start), bulk), ((got_entry, _), entry), accepted = both_paths(make, call)
    assert got == got_entry
    assert_same(bulk, entry)
    want, landed = _expected(case)
    assert got[1] == want[1]
    if want[0] is not None:
        assert got[0] == want[0]
    for x, y in zip(bulk.state(), _reference(start, case, landed)):
        np.testing.assert_array_equal(x, y)
    pageable_async_loop = (not case["mode"].startswith("sync") and case["product"] != "950PR"
                           and any(e["host"] == "pageable" for e in case["entries"]))
    if case["fault"] == "none" and not pageable_async_loop:
        assert accepted


# ---------------------------------------------------------------------------
# the bulk path itself
# ---------------------------------------------------------------------------

H2D_ATTR = attr(DEVICE, HOST)


def plain_batch(rt, k: int, n: int):
    """k entries of n bytes, page-locked host -> device 0, and their buffers."""
    host, dev = rt.malloc_host(k * n), rt.malloc(k * n)
    return [dev + i * n for i in range(k)], [host + i * n for i in range(k)], [n] * k, host, dev


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_plain_batch_checks_no_entry_alone(rt, monkeypatch, mode):
    """4096 entries of 64 bytes from page-locked memory: every check runs at once (no per-entry check), the
    bytes land, and the records count every byte and every entry as a DMA task, in a record a lane."""
    def no_entry(*args, **kwargs):
        raise AssertionError("an entry was checked alone")

    monkeypatch.setattr(batch_module, "_entry", no_entry)
    k, n = 4096, 64
    dsts, srcs, sizes, host, dev = plain_batch(rt, k, n)
    data = np.random.default_rng(1).integers(0, 256, k * n, dtype=np.uint8)
    rt.space.resolve(host, k * n)[0].view(0, k * n)[:] = data
    if mode == "sync":
        assert rt.memcpy_batch(dsts, sizes, srcs, sizes, k, [H2D_ATTR], [0], 1) == SIZE_MAX
    else:
        s = rt.create_stream()
        assert rt.memcpy_batch_async(dsts, sizes, srcs, sizes, k, [H2D_ATTR], [0], 1, s) == SIZE_MAX
        rt.synchronize_stream(s)
    np.testing.assert_array_equal(peek(rt, dev, k * n), data)
    rec = rt.records()
    lanes, groups = rec[rec["kind"] == "copy"], rec[rec["kind"] == "group"]
    engines = rt.product.hardware.engines_per_device
    assert len(groups) == 1 and len(lanes) == engines
    assert lanes["bytes"].sum() == k * n and lanes["tasks"].sum() == k
    totals = rt.record_totals()
    assert totals["bytes_by_route"]["h2d"] == k * n and totals["tasks_by_route"]["h2d"] == k


def test_a_failing_entry_in_the_middle_of_a_large_async_batch(rt):
    """Entry 2000 of 4096 points outside any allocation: the same (2000, 100000) on both paths, and the 2000
    entries before it were enqueued and land (ApiImpl::LoopMemcpyAsync)."""
    k, n = 4096, 16

    def make():
        r = emu.configure("910B", functional=True)
        r.set_device(0)
        return r

    def call(r):
        dsts, srcs, sizes, host, dev = plain_batch(r, k, n)
        r.space.resolve(host, k * n)[0].view(0, k * n)[:] = 7
        srcs[2000] = BAD_ADDRESS
        s = r.create_stream()
        with pytest.raises(BatchError) as err:
            r.memcpy_batch_async(dsts, sizes, srcs, sizes, k, [H2D_ATTR], [0], 1, s)
        r.synchronize_stream(s)
        return (err.value.fail_index, err.value.code), peek(r, dev, k * n)

    ((got, landed), _), ((got_entry, landed_entry), _), _ = both_paths(make, call)
    assert got == got_entry == (2000, 100000)
    np.testing.assert_array_equal(landed, landed_entry)
    assert np.all(landed[:2000 * n] == 7) and np.all(landed[2000 * n:] == 0)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_several_attrs_two_devices_and_both_directions_take_the_bulk_path(rt, monkeypatch, mode):
    """H2D into device 0, D2H from device 1, H2D into device 1 (one attribute each), from page-locked and
    pageable memory on a sync batch: checked at once, and the bytes land."""
    monkeypatch.setattr(batch_module, "_entry", lambda *a, **k: pytest.fail("an entry was checked alone"))
    monkeypatch.setattr(batch_module, "AT_ONCE_FROM", 1)
    rt.set_device(1)
    d1 = rt.malloc(256)
    rt.memset(d1, 256, 5, 256)
    rt.set_device(0)
    d0 = rt.malloc(256)
    h = rt.malloc_host(256)
    hview = rt.space.resolve(h, 256)[0].view(0, 256)
    hview[:] = 9
    page = np.zeros(64, dtype=np.uint8)
    page_ptr = rt.register_host(page)
    pageable_entry = mode == "sync"  # (an async pageable entry is a synchronous copy of its own)
    dsts = [d0, h + 64, d1 + 128]
    srcs = [h, d1, page_ptr if pageable_entry else h + 128]
    page[:] = 3
    attrs = [attr(DEVICE, HOST), attr(HOST, DEVICE, src_id=1), attr(DEVICE, HOST, dst_id=1)]
    args = (dsts, [32] * 3, srcs, [32] * 3, 3, attrs, [0, 1, 2], 3)
    if mode == "sync":
        rt.memcpy_batch(*args)
    else:
        s = rt.create_stream()
        rt.memcpy_batch_async(*args, s)
        rt.synchronize_stream(s)
    assert np.all(peek(rt, d0, 32) == 9)
    assert np.all(hview[64:96] == 5)
    assert np.all(peek(rt, d1 + 128, 32) == (3 if pageable_entry else 9))


def test_a_freed_destination_drops_its_bytes_on_both_paths():
    """An async batch whose destination is freed before it completes: warned once, its bytes dropped, the other
    entries land, alike on both paths."""
    def make():
        r = emu.configure("910B", functional=True)
        r.set_device(0)
        return r

    def call(r):
        h = r.malloc_host(128)
        r.space.resolve(h, 128)[0].view(0, 128)[:] = 4
        gone, kept = r.malloc(64), r.malloc(64)
        s = r.create_stream()
        r.memcpy_batch_async([gone, kept], [64, 64], [h, h + 64], [64, 64], 2, [H2D_ATTR], [0], 1, s)
        r.free(gone)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r.synchronize_stream(s)
        return len([w for w in caught if "after it was freed" in str(w.message)]), peek(r, kept, 64)

    ((warned, kept), _), ((warned_entry, kept_entry), _), _ = both_paths(make, call)
    assert warned == warned_entry == 1
    assert np.all(kept == 4) and np.all(kept_entry == 4)


def test_device_memory_never_written_reads_as_zeros(rt):
    """A D2H entry from device memory nothing wrote puts zeros in the host buffer (device memory starts
    zeroed), and the device memory is still not backed by RAM."""
    h = rt.malloc_host(64)
    view = rt.space.resolve(h, 64)[0].view(0, 64)
    view[:] = 0xEE
    d = rt.malloc(64)
    rt.memcpy_batch([h], [64], [d], [64], 1, [attr(HOST, DEVICE)], [0], 1)
    assert np.all(view == 0)
    assert not rt.space.resolve(d, 64)[0].materialized


def test_a_read_only_destination_is_refused_alike():
    """A D2H entry into a read-only array: the same code on both paths (the runtime cannot write it), nothing
    written."""
    def make():
        r = emu.configure("910B", functional=True)
        r.set_device(0)
        return r

    def call(r):
        arr = np.zeros(64, dtype=np.uint8)
        arr.flags.writeable = False
        d = r.malloc(64)
        r.memset(d, 64, 1, 64)
        result = run_sync(r, [r.register_host(arr)], [d], [attr(HOST, DEVICE)])
        return result, arr.copy()

    ((got, arr), _), ((got_entry, arr_entry), _), _ = both_paths(make, call)
    assert got == got_entry and got[1] != 0
    assert not arr.any() and not arr_entry.any()


def run_sync(r, dsts, srcs, attrs):
    try:
        r.memcpy_batch(dsts, [64] * len(dsts), srcs, [64] * len(dsts), len(dsts), attrs, [0], 1)
        return SIZE_MAX, 0
    except AclError as e:
        return getattr(e, "fail_index", None), e.code


def test_a_captured_batch_replays_its_bytes(rt):
    """An async batch captured into a model moves its bytes each time the model runs."""
    k, n = 64, 32
    dsts, srcs, sizes, host, dev = plain_batch(rt, k, n)
    view = rt.space.resolve(host, k * n)[0].view(0, k * n)
    s = rt.create_stream()
    rt.ri_capture_begin(s, 0)
    rt.memcpy_batch_async(dsts, sizes, srcs, sizes, k, [H2D_ATTR], [0], 1, s)
    model = rt.ri_capture_end(s)
    for value in (1, 2):
        view[:] = value
        rt.ri_execute_async(model, s)
        rt.synchronize_stream(s)
        assert np.all(peek(rt, dev, k * n) == value)


def test_a_timing_only_batch_never_imports_numba():
    """Timing-only memory has no bytes to move: a batch on it never loads the byte-moving kernels."""
    code = ("import sys, emu\n"
            "rt = emu.configure('910B', functional=False); rt.set_device(0)\n"
            "h, d = rt.malloc_host(4096), rt.malloc(4096)\n"
            "a = [{'dst_loc': {'type': 1, 'id': 0}, 'src_loc': {'type': 0, 'id': 0}}]\n"
            "rt.memcpy_batch([d + 64 * i for i in range(64)], [64] * 64, [h + 64 * i for i in range(64)], [64] * 64,"
            " 64, a, [0], 1)\n"
            "assert 'numba' not in sys.modules, 'numba imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------
# pieces
# ---------------------------------------------------------------------------

def test_resolve_many_agrees_with_resolve(rt):
    """AddressSpace.resolve_many: each range's region and offset as `resolve` gives them; None when any range
    leaves its region or falls in none."""
    a, b = rt.malloc_host(100), rt.malloc(300)
    addrs = np.array([b + 10, a, a + 99, b + 299, b], dtype=np.int64)
    sizes = np.array([5, 100, 1, 1, 300], dtype=np.int64)
    regions, index, offsets = rt.space.resolve_many(addrs, sizes)
    for addr, size, i, off in zip(addrs.tolist(), sizes.tolist(), index, offsets):
        r, o = rt.space.resolve(addr, size)
        assert regions[i] is r and off == o
    assert len(regions) == 2
    end = regions[index[1]].end  # (page-locked allocations are rounded up)
    assert rt.space.resolve_many(np.array([end - 1], dtype=np.int64), np.array([2], dtype=np.int64)) is None
    assert rt.space.resolve_many(np.array([BAD_ADDRESS], dtype=np.int64), np.array([1], dtype=np.int64)) is None
    huge = np.array([2 ** 62], dtype=np.int64)
    assert rt.space.resolve_many(np.array([a], dtype=np.int64), huge) is None


def _lane_machine():
    return Machine(emu.configure("910B").product.hardware)


@pytest.mark.parametrize("sizes", [[64] * 7, [1, 1000, 5, 64, 64, 300, 2, 9], [1 << 20] + [8] * 30])
def test_a_group_of_copy_parts_runs_as_its_batch(sizes):
    """A GROUP given COPY parts (the model's other form) ends when the same batch given as a `Batch` does, and
    calls every part's callback once. (Fewer than FEW_PARTS parts run one by one, each on an engine: for
    entries of one size that ends when the lanes do, for unequal ones within 1%.)"""
    called = []
    m1, m2 = _lane_machine(), _lane_machine()
    parts = [Task(COPY, nbytes=n, device=0, src=None, dst=0, on_complete=lambda j=j: called.append(j))
             for j, n in enumerate(sizes)]
    g1 = m1.submit(m1.stream("s", 0), Task(GROUP, device=0, parts=parts), 0.0)
    g2 = m2.submit(m2.stream("s", 0), Task(GROUP, device=0, batch=Batch(sizes, -1, 0, 0)), 0.0)
    if len(sizes) < model.FEW_PARTS and len(set(sizes)) > 1:
        assert m1.wait(g1) == pytest.approx(m2.wait(g2), rel=1e-2)
    else:
        assert m1.wait(g1) == pytest.approx(m2.wait(g2), rel=1e-12)
    assert sorted(called) == list(range(len(sizes)))
    lanes = [r for r in m2.records if r.kind == COPY]
    assert sum(r.nbytes for r in lanes) == sum(sizes) and len(lanes) <= m2.hardware.engines_per_device


def test_lanes_of_alike_entries_are_even_and_count_their_entries():
    """4099 alike entries on 4 engines: lanes of 1025, 1025, 1025 and 1024 entries, each record counting its
    entries as tasks."""
    m = _lane_machine()
    g = m.submit(m.stream("s", 0), Task(GROUP, device=0, batch=Batch([64] * 4099, -1, 0, 0)), 0.0)
    m.wait(g)
    lanes = sorted((r for r in m.records if r.kind == COPY), key=lambda r: r.engine)
    assert sorted(r.chunks for r in lanes) == [1024, 1025, 1025, 1025]
    assert all(r.nbytes == 64 * r.chunks for r in lanes)


def test_a_few_unequal_entries_go_to_the_engine_that_frees_first():
    """1 MiB then four 64-byte entries on 4 engines: the fifth entry joins a 64-byte one (its engine frees
    first), not the 1 MiB one, as the engines take a batch's entries."""
    m = _lane_machine()
    sizes = [1 << 20, 64, 64, 64, 64]
    g = m.submit(m.stream("s", 0), Task(GROUP, device=0, batch=Batch(sizes, -1, 0, 0)), 0.0)
    m.wait(g)
    lanes = [r for r in m.records if r.kind == COPY]
    assert sorted((r.nbytes, r.chunks) for r in lanes) == [(64, 1), (64, 1), (128, 2), (1 << 20, 1)]


def test_runs_keep_every_byte_and_entry():
    """A lane's runs: one for alike entries; for unequal ones as many as the lesser of bytes and fixed costs
    asks (at most RUNS), their wire bytes and entries adding up to the lane's, the first one shorter by the
    lane's phase."""
    alike = np.full(100, 64.0)
    assert model._runs(alike, 1e-9, 2e-6) == [(6400.0, 100)]
    wire = np.random.default_rng(3).integers(1, 1 << 16, 1000).astype(float)
    for phase in (0.0, 0.25, 0.75):
        runs = model._runs(wire, 4e-11, 2e-6, phase)
        assert 1 < len(runs) <= model.RUNS
        assert sum(w for w, _ in runs) == pytest.approx(wire.sum()) and sum(n for _, n in runs) == 1000
    assert model._runs(wire, 4e-11, 2e-6, 0.5)[0][1] < model._runs(wire, 4e-11, 2e-6, 0.0)[0][1]
    assert len(model._runs(wire, 1e-15, 2e-6)) == 1  # (the bytes take no time: nothing to overlap)


@pytest.mark.parametrize("n,lanes", [(1, 4), (4, 4), (5, 4), (4099, 4), (300, 4)])
def test_cuts_and_deals_cover_every_entry_once(n, lanes):
    """Every entry in exactly one lane, in order within it; at most `lanes` lanes; alike entries evenly."""
    for cost in (np.ones(n), np.random.default_rng(n).random(n)):
        dealt = model._deal(cost, lanes)
        assert len(dealt) <= lanes and all(len(d) for d in dealt)
        assert sorted(np.concatenate(dealt).tolist()) == list(range(n))
        assert all((np.diff(d) > 0).all() for d in dealt)
    counts = [len(d) for d in model._deal(np.ones(n), lanes)]
    assert max(counts) - min(counts) <= 1


@pytest.mark.parametrize("k", [1, 3, 15])
@pytest.mark.parametrize("size", [64, 64 << 10])
def test_a_few_entries_run_as_copy_tasks_and_end_when_the_lanes_would(k, size):
    """Below AT_ONCE_FROM entries a batch is a GROUP of one copy task per entry (cheaper than the lanes'
    setup for a few); for entries of one size it ends when the lanes would, and its records count one DMA
    task per entry."""
    ends = {}
    for few in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not few:
                mp.setattr(batch_module, "AT_ONCE_FROM", 1)
            rt = emu.configure("910B", functional=False)
            rt.set_device(0)
            host, dev = rt.malloc_host(k * size), rt.malloc(k * size)
            t0 = rt.clock
            rt.memcpy_batch([dev + i * size for i in range(k)], [size] * k, [host + i * size for i in range(k)],
                            [size] * k, k, [attr(DEVICE, HOST)], [0], 1)
            ends[few] = rt.clock - t0
            rec = rt.records()
            if few:
                assert (rec["kind"] == "copy").sum() == k and (rec["kind"] == "group").sum() == 1
    assert ends[True] == pytest.approx(ends[False], rel=1e-12)


def _batch_span(rt, sizes: list[int]) -> float:
    """Simulated seconds of one synchronous H2D batch of `sizes` on device 0, timing-only."""
    n = len(sizes)
    host, dev = rt.malloc_host(n * (1 << 20), functional=False), rt.malloc(n * (1 << 20), functional=False)
    before = rt.clock
    rt.memcpy_batch([dev + i * (1 << 20) for i in range(n)], sizes, [host + i * (1 << 20) for i in range(n)],
                    sizes, n, [attr(DEVICE, HOST)], [0], 1)
    return rt.clock - before


def test_a_repeated_batch_reuses_its_lane_plan_and_times_as_the_first():
    """Machine._lane_plan: a route's lanes are a pure function of the route and the entries' sizes, so a batch
    met again takes the plan made for the first (one per route and sizes) and is timed as a fresh machine
    times it; other sizes make a plan of their own."""
    sizes = [64 << 10] * 48 + [4 << 10] * 16
    fresh = emu.configure(product="910B", functional=False)
    fresh.set_device(0)
    first = _batch_span(fresh, sizes)
    rt = emu.configure(product="910B", functional=False)
    rt.set_device(0)
    spans = [_batch_span(rt, sizes) for _ in range(3)]
    assert len(rt.machine._plans) == 1
    assert spans == [pytest.approx(first, rel=1e-12)] * 3
    _batch_span(rt, [32 << 10] * 64)
    assert len(rt.machine._plans) == 2


# ---------------------------------------------------------------------------
# the checks a batch passed, remembered while the address space stands
# ---------------------------------------------------------------------------

def _forgetful(monkeypatch) -> None:
    """No batch's passed checks are remembered: every call checks every entry again."""
    monkeypatch.setattr(batch_module, "_known", lambda rt, key: (None, rt.space.derived))


def _remembering_case(change: str, remember: bool):
    """The same batch called, `change` made, then called twice more: each call's (failIndex or code) and the
    destination's bytes after each, with or without the remembered checks."""
    with pytest.MonkeyPatch.context() as m:
        if not remember:
            _forgetful(m)
        rt = emu.configure(product="910B", functional=True)
        rt.set_device(0)
        k, n = 32, 256
        dsts, srcs, sizes, host, dev = plain_batch(rt, k, n)
        if change.startswith("array"):  # (numpy arrays, changed in place)
            dsts, srcs = np.array(dsts), np.array(srcs, dtype=np.uint64)
        pageable = np.zeros(k * n, dtype=np.uint8)
        attrs = [dict(H2D_ATTR)]
        out = []

        def call(tag: int):
            rt.space.resolve(host, k * n)[0].view(0, k * n)[:] = tag
            try:
                out.append(rt.memcpy_batch(dsts, sizes, srcs, sizes, k, attrs, [0], 1))
            except AclError as e:
                out.append((e.code, getattr(e, "fail_index", None)))
            out.append(peek(rt, dsts[0], k * n).tolist() if rt.space.find(dsts[0]) else None)

        call(1)
        if change in ("free", "array_free"):
            rt.free(dev)
        elif change == "free_and_malloc":
            rt.free(dev)
            again = rt.malloc(k * n)
            dsts[:] = [again + i * n for i in range(k)]
        elif change in ("entry_moved", "array_entry_moved"):
            dsts[5] = BAD_ADDRESS
        elif change == "attribute":
            attrs[0] = attr(DEVICE, HOST, dst_id=1)
        elif change == "pageable_source":  # the sources become pageable memory, registered then not
            srcs[:] = [rt.register_host(pageable) + i * n for i in range(k)]
        elif change == "registered_then_not":
            p = rt.register_host(pageable)
            srcs[:] = [p + i * n for i in range(k)]
            rt.host_register(p, k * n)
            call(2)
            rt.host_unregister(p)
        call(3)
        call(4)
        return out


@pytest.mark.parametrize("change", ["none", "free", "free_and_malloc", "entry_moved", "attribute",
                                    "pageable_source", "registered_then_not", "array_none", "array_free",
                                    "array_entry_moved"])
def test_remembered_checks_give_what_checking_again_gives(change):
    """Rule: a batch's checks are a pure function of its arguments and the address space, so a batch that
    passed them all at once passes again with the same arguments while no region or registration has come or
    gone (`AddressSpace.derived`); any change in either checks it again. Whatever changes between calls, the
    codes, fail indexes and bytes are those of checking every call afresh."""
    assert _remembering_case(change, remember=True) == _remembering_case(change, remember=False)


def test_a_repeated_batch_is_checked_once_while_the_address_space_stands(rt, monkeypatch):
    checks = []
    at_once = batch_module._checked_at_once
    monkeypatch.setattr(batch_module, "_checked_at_once", lambda *a: checks.append(1) or at_once(*a))
    dsts, srcs, sizes, host, dev = plain_batch(rt, 32, 64)
    for _ in range(3):
        assert rt.memcpy_batch(dsts, sizes, srcs, sizes, 32, [H2D_ATTR], [0], 1) == SIZE_MAX
    assert len(checks) == 1
    rt.free(rt.malloc(64))  # (a region came and went)
    assert rt.memcpy_batch(dsts, sizes, srcs, sizes, 32, [H2D_ATTR], [0], 1) == SIZE_MAX
    assert len(checks) == 2
    assert rt.memcpy_batch(list(dsts), sizes, srcs, sizes, 32, [dict(H2D_ATTR)], [0], 1) == SIZE_MAX
    assert len(checks) == 2  # (equal arguments, other lists)
    for _ in range(2):
        assert rt.memcpy_batch(np.array(dsts), sizes, srcs, sizes, 32, [H2D_ATTR], [0], 1) == SIZE_MAX
    assert len(checks) == 3  # (an integer array is a key of its own: its dtype and bytes)
    for _ in range(2):
        assert rt.memcpy_batch(np.array(dsts, dtype=np.uint64), sizes, srcs, sizes, 32, [H2D_ATTR], [0], 1) == SIZE_MAX
    assert len(checks) == 4
    for n in (5, 6):  # (a float array is no key: checked every time, entry by entry)
        assert rt.memcpy_batch(np.array(dsts, dtype=float), sizes, srcs, sizes, 32, [H2D_ATTR], [0], 1) == SIZE_MAX
        assert len(checks) == n


def test_the_address_space_forgets_what_it_derived_when_its_index_changes(rt):
    """Rule: `AddressSpace.derived` is a new, empty dict after a region comes or goes or a registration is made
    or removed."""
    space = rt.space

    def changes(action) -> bool:
        space.derived["x"] = 1
        before = space.derived
        action()
        return space.derived is not before and not space.derived

    dev = rt.malloc(64)
    assert changes(lambda: rt.malloc(64))
    assert changes(lambda: rt.free(dev))
    data = np.zeros(4096, dtype=np.uint8)
    p = rt.register_host(data)
    assert changes(lambda: rt.host_register(p, 4096))
    assert changes(lambda: rt.host_unregister(p))


@pytest.mark.parametrize("rsv,ok", [(bytes(16), True), ([0] * 16, True), (bytearray(8), True), (b"", True),
                                    (memoryview(bytes(16)), True), (5, False), (10 ** 9, False), ("abc", False),
                                    (bytes(17), False), ([0] * 17, False), ([256], False), ([0.0], False),
                                    (bytes([0] * 15 + [1]), False), (memoryview(np.zeros(8, np.uint32)), False)],
                         ids=repr)
def test_an_attribute_rsv_is_an_array_of_at_most_16_zero_bytes(rt, rsv, ok):
    """Rule (memory.cpp ValidateMemcpyBatchParams: attrs[k].rsv all zero): the runtime's dict form takes rsv as
    bytes-like or a sequence of byte values, at most 16 (the rest of uint8_t[16] zero); an int or a string is no
    byte array and is refused, at once (before, rsv = 10**9 read as a billion zero bytes and passed)."""
    dsts, srcs, sizes, host, dev = plain_batch(rt, 32, 64)
    a = dict(H2D_ATTR, rsv=rsv)
    for _ in range(2):  # (the second call: the checks as kept)
        if ok:
            assert rt.memcpy_batch(dsts, sizes, srcs, sizes, 32, [a], [0], 1) == SIZE_MAX
        else:
            with pytest.raises(BatchError) as e:
                rt.memcpy_batch(dsts, sizes, srcs, sizes, 32, [a], [0], 1)
            assert e.value.code == 100000 and "rsv" in e.value.message
