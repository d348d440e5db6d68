"""The sanitizer's second round of rules (issue 33), each on the smallest program that shows it: host writes
found by happens-before, not by this run's order; a batch's entries checked against each other; 2-D copies
checked row by row at any height, at a linear cost; what an undeclared kernel argument means; use after
free; the bytes a finding reports; what the report says it could not see."""
from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

import emu
from emu.memory import FREED_KEPT
from emu.sanitize.ranges import READ, UNDECLARED, WRITE, Shadow

N = 1 << 16
H2D, D2H = 1, 2
ATTRS = [{"dst_loc": {"type": 1, "id": 0}, "src_loc": {"type": 0, "id": 0}}]


def make(functional=True, checks=True, product="910B"):
    rt = emu.configure(product, functional=functional, sanitize=checks, host_time="calls")
    rt.set_device(0)
    return rt


def kinds(rt) -> list[str]:
    return [f.kind for f in rt.sanitizer.finish()]


def two_streams_over(fill: int):
    """A sanitized runtime, two streams, device memory `x` memset to `fill`, page-locked `h`."""
    rt = make()
    a, b = rt.create_stream(), rt.create_stream()
    x, h = rt.malloc(N), rt.malloc_host(N)
    rt.memset(x, N, fill, N)
    return rt, a, b, x, h


def two_undeclared_readers():
    """A sanitized runtime where two kernels launched without access= (which only read) used one buffer on two
    streams: a possible hazard."""
    rt = make()
    a, b = rt.create_stream(), rt.create_stream()
    x = rt.malloc(N)
    rt.memset(x, N, 1, N)
    rt.launch_kernel(lambda v: v.sum(), [(x, N)], a, duration_us=50)
    rt.launch_kernel(lambda v: v.sum(), [(x, N)], b, duration_us=50)
    return rt


def busy(rt, s, us=500.0):
    """A long kernel on `s`: a synchronize of `s` lets work queued elsewhere run meanwhile."""
    scratch = rt.malloc(4096)
    rt.launch_kernel(lambda x: None, [(scratch, 4096)], s, duration_us=us, access="w")


# -- item 1: host writes by happens-before --------------------------------------------------------------------
@pytest.mark.parametrize("product", ["910B", "A3"])
def test_a_host_write_after_the_copy_ran_by_chance_is_still_a_missing_edge(product):
    rt = make(product=product)
    copy_in, other = rt.create_stream(), rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    view = rt.host_array(h, N)
    busy(rt, other)
    rt.memcpy_async(d, N, h, N, H2D, copy_in)
    rt.synchronize_stream(other)  # the copy runs meanwhile: the bytes it moved are the old ones
    assert rt.sanitizer.findings == []
    view[:10] = 1  # no edge orders this write after the copy
    rt.synchronize_stream(copy_in)
    (f,) = rt.sanitizer.finish()
    assert f.kind == "source-changed" and (f.lo, f.hi) == (0, 10)
    assert f.ops[1].api == "aclrtSynchronizeStream"


def test_a_host_write_after_the_wait_that_ordered_the_copy_is_no_hazard_and_the_copy_is_dropped():
    rt = make()
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    view = rt.host_array(h, N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    rt.synchronize_stream(s)
    assert not rt.sanitizer._unsettled and not rt.sanitizer._watched  # ordered before the host: dropped
    view[:] = 3
    rt.memcpy_async(d, N, h, N, H2D, s)
    rt.synchronize_stream(s)
    assert kinds(rt) == []


def test_a_copy_no_thread_waits_for_is_checked_at_the_end_of_the_run():
    rt = make()
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    view = rt.host_array(h, N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    view[5] = 9
    (f,) = rt.sanitizer.finish()
    assert f.kind == "source-changed" and f.ops[1].api.startswith("the end of the run")


def test_a_copy_waited_for_by_an_event_or_a_joined_thread_is_settled_there():
    rt = make()
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    view = rt.host_array(h, N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    ev = rt.create_event()
    rt.record_event(ev, s)
    rt.synchronize_event(ev)
    view[:] = 4  # after the wait: ordered
    assert kinds(rt) == []
    rt.memcpy_async(d, N, h, N, H2D, s)
    worker = threading.Thread(target=lambda: (rt.set_device(0), rt.synchronize_stream(s)))
    worker.start()
    worker.join()
    view[:] = 5  # after joining the thread that waited: ordered
    assert kinds(rt) == []


def test_a_2d_source_is_fingerprinted_row_by_row_and_the_gaps_are_not_its_bytes():
    rt = make()
    s = rt.create_stream()
    rows, pitch, width = 300, 256, 64
    h, d = rt.malloc_host(rows * pitch), rt.malloc(rows * pitch)
    view = rt.host_array(h, rows * pitch)
    rt.memcpy2d_async(d, pitch, h, pitch, width, rows, H2D, s)
    view[width:pitch] = 1  # the gap of row 0: another band's bytes
    view[299 * pitch + 10] = 1  # row 299 of this copy
    rt.synchronize_stream(s)
    (f,) = rt.sanitizer.finish()
    assert f.kind == "source-changed" and (f.lo, f.hi) == (299 * pitch + 10, 299 * pitch + 11)


# -- item 2: entries of one batch --------------------------------------------------------------------------------
@pytest.mark.parametrize("sync", [False, True], ids=["async", "sync"])
def test_entries_of_one_batch_whose_bytes_overlap_race(sync):
    rt = make()
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    q = N // 4
    dsts, srcs = [d, d + q, d + q + q // 2], [h, h + q, h + 2 * q]
    if sync:
        rt.memcpy_batch(dsts, [q] * 3, srcs, [q] * 3, 3, ATTRS, [0], 1)
    else:
        rt.memcpy_batch_async(dsts, [q] * 3, srcs, [q] * 3, 3, ATTRS, [0], 1, s)
    (f,) = rt.sanitizer.finish()
    assert (f.tool, f.kind, f.extra["entries"]) == ("race", "batch-overlap", (1, 2))
    assert (f.lo, f.hi) == (q + q // 2, 2 * q)


def test_entries_of_one_batch_reading_the_same_bytes_or_writing_disjoint_ones_do_not_race():
    rt = make()
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    n, q = 64, N // 64
    rt.memcpy_batch_async([d + k * q for k in range(n)], [q] * n, [h] * n, [q] * n, n, ATTRS, [0], 1, s)
    assert kinds(rt) == []


def test_a_batch_overlap_check_is_n_log_n_in_the_entries():
    def run(n):
        rt = make(functional=False)
        s = rt.create_stream()
        h, d = rt.malloc_host(16 * n), rt.malloc(16 * n)
        t = time.process_time()
        rt.memcpy_batch_async([d + 16 * k for k in range(n)], [16] * n, [h + 16 * k for k in range(n)], [16] * n,
                              n, ATTRS, [0], 1, s)
        return time.process_time() - t

    run(100)
    gc.disable()  # (a full collection of a long test session's objects, 0.1 s or more, would land in one run)
    try:
        small, large = min(run(1000) for _ in range(3)), min(run(10_000) for _ in range(3))
    finally:
        gc.enable()
    assert large / small < 30  # a quadratic check would take about 100x


# -- items 3 and 6: 2-D copies row by row, the bytes reported -------------------------------------------------
@pytest.mark.parametrize("rows", [64, 512, 4096])
def test_2d_copies_of_interleaved_column_bands_do_not_race_at_any_height(rows):
    rt = make(functional=False)
    a, b = rt.create_stream(), rt.create_stream()
    pitch, band = 1024, 64
    h, d = rt.malloc_host(rows * pitch), rt.malloc(rows * pitch)
    for k, col in enumerate(range(0, pitch, band)):
        rt.memcpy2d_async(d + col, pitch, h + col, pitch, band, rows, H2D, (a, b)[k % 2])
    assert kinds(rt) == []


def test_a_2d_overlap_reports_the_bytes_shared_and_their_pieces_not_the_span():
    rt = make()
    a, b = rt.create_stream(), rt.create_stream()
    rows, pitch = 512, 1024
    h, d = rt.malloc_host(rows * pitch), rt.malloc(rows * pitch)
    rt.memcpy2d_async(d, pitch, h, pitch, 512, rows, H2D, a)
    rt.memcpy2d_async(d + 384, pitch, h, pitch, 256, rows, H2D, b)  # 128 columns shared in every row
    (f,) = rt.sanitizer.finish()
    assert (f.nbytes, f.pieces) == (128 * rows, rows)
    assert f.hi - f.lo == (rows - 1) * pitch + 128  # the span, reported as such
    assert f"{128 * rows} bytes in {rows} pieces within" in rt.sanitizer.report()
    assert rt.sanitizer.to_dict()["findings"][0]["memory"]["bytes"] == 128 * rows


def test_a_partly_initialized_2d_buffer_reports_exactly_the_bytes_nothing_wrote():
    rt = make()
    s = rt.create_stream()
    rows, pitch = 128, 512
    h, d = rt.malloc_host(rows * pitch), rt.malloc(rows * pitch)
    rt.memcpy2d_async(d, pitch, h, pitch, pitch // 2, rows, H2D, s)
    rt.memcpy_async(h, rows * pitch, d, rows * pitch, D2H, s)
    (f,) = rt.sanitizer.finish()
    assert f.kind == "uninitialized-read" and (f.nbytes, f.pieces) == (rows * pitch // 2, rows)


def test_a_strided_access_costs_one_pass_linear_in_its_rows_and_the_segments():
    class Op:
        def __init__(self, agent, n):
            self.agent, self.n, self.base = agent, n, {}

    def run(rows):
        shadow = Shadow(rows * 1024)
        t = time.process_time()
        for k in range(16):
            shadow.access_rows([(r * 1024 + k * 64, r * 1024 + k * 64 + 64) for r in range(rows)], Op(k % 2 + 1, k + 1),
                               WRITE)
        return time.process_time() - t, shadow.segments()

    run(100)
    (small, segs_small), (large, segs_large) = min(run(1000) for _ in range(3)), min(run(10_000) for _ in range(3))
    assert segs_large <= 16 * 10_000 + 1
    assert large / small < 30  # one insert per row would make it quadratic: about 100x


def test_a_strided_access_finds_what_the_same_rows_one_by_one_find():
    class Op:
        def __init__(self, agent, n):
            self.agent, self.n, self.base = agent, n, {}

    rng = np.random.default_rng(0)
    for _ in range(300):
        size = int(rng.integers(50, 400))
        a, b = Shadow(size), Shadow(size)
        for step in range(6):
            op = Op(int(rng.integers(1, 4)), step + 1)
            mode = int(rng.choice([READ, WRITE, READ | WRITE, READ | WRITE | UNDECLARED]))
            off, w = int(rng.integers(0, size)), int(rng.integers(1, 12))
            pitch, n = w + int(rng.integers(1, 20)), int(rng.integers(1, 8))
            rows = [(off + k * pitch, min(off + k * pitch + w, size)) for k in range(n) if off + k * pitch < size]
            got = a.access_rows(rows, op, mode) or []
            want = [x for lo, hi in rows for x in b.access(lo, hi, op, mode) or []]
            assert sorted((id(o), m, lo, hi) for o, m, lo, hi in got) == sorted(
                (id(o), m, lo, hi) for o, m, lo, hi in want)
            assert a.starts == b.starts and [c[0] for c in a.cells] == [c[0] for c in b.cells]


# -- item 4: undeclared kernel arguments -----------------------------------------------------------------------
def test_clear_forgets_the_possible_hazards_too():
    """Sanitizer.clear (a test that expected its findings) forgets the possible hazards as well: none is printed
    or promoted afterwards, and the same conflict after the clear is one entry, not two."""
    rt = two_undeclared_readers()
    assert len(rt.sanitizer.possible) == 1
    rt.sanitizer.clear()
    assert rt.sanitizer.possible == [] and "Possible:" not in rt.sanitizer.report()


def test_two_kernels_of_undeclared_use_that_only_read_are_a_possible_hazard_not_a_finding():
    rt = two_undeclared_readers()
    assert kinds(rt) == []
    (p,) = rt.sanitizer.possible
    assert all(m & UNDECLARED for m in p.modes)
    text = rt.sanitizer.report()
    assert "Possible: Race between an undeclared access and a later undeclared access" in text
    assert "Write:" not in text  # never labelled a write it is not known to make
    assert "declare them (access='r', 'w' or 'rw' per buffer)" in text


def test_an_undeclared_argument_the_kernels_run_writes_is_a_race_labelled_a_write():
    rt, a, b, x, h = two_streams_over(fill=1)

    def fill(v):
        v[:] = 7

    rt.launch_kernel(fill, [(x, N)], a, duration_us=50)
    rt.memcpy_async(h, N, x, N, D2H, b)
    (f,) = rt.sanitizer.finish()
    assert f.kind == "race" and f.modes[0] == WRITE | UNDECLARED and f.extra["seen_writing"]
    assert "Write (undeclared use, seen writing)" in rt.sanitizer.report()


def test_an_undeclared_argument_against_a_declared_write_is_a_race_whatever_the_kernel_does():
    rt = make(functional=False)
    a, b = rt.create_stream(), rt.create_stream()
    x, h = rt.malloc(N), rt.malloc_host(N)
    rt.memcpy_async(x, N, h, N, H2D, a)  # a declared write
    rt.launch_kernel(lambda v: None, [(x, N)], b, duration_us=50)  # undeclared: at least reads or writes
    (f,) = rt.sanitizer.finish()
    assert f.kind == "race" and f.modes == [WRITE, READ | WRITE | UNDECLARED]
    assert rt.sanitizer.possible == []


def test_an_undeclared_argument_leaves_the_reads_before_it_to_be_checked():
    rt = make(functional=False)
    a, b, c = rt.create_stream(), rt.create_stream(), rt.create_stream()
    x, h = rt.malloc(N), rt.malloc_host(N)
    rt.memset(x, N, 0, N)
    rt.memcpy_async(h, N, x, N, D2H, a)  # a read on stream a
    ev = rt.create_event()
    rt.launch_kernel(lambda v: None, [(x, N)], b, duration_us=5)  # undeclared, on b
    rt.record_event(ev, b)
    rt.stream_wait_event(c, ev)
    rt.memcpy_async(x, N, h, N, H2D, c)  # a write after the kernel, not after the read on a
    found = rt.sanitizer.finish()
    assert any(f.kind == "race" and f.ops[0].stream.name.startswith("stream 1") for f in found)


# -- item 5: use after free -------------------------------------------------------------------------------------
def test_a_use_of_freed_page_locked_memory_is_reported_with_the_free_and_the_call_still_fails():
    rt = make()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.free_host(h)  # line: free
    with pytest.raises(emu.AclError) as e:
        rt.memcpy(d, N, h, N, H2D)
    assert e.value.code == 100000  # the runtime's answer is unchanged
    (f,) = rt.sanitizer.findings
    assert (f.tool, f.kind) == ("host", "use-after-free")
    assert f.ops[0].api == "aclrtFreeHost" and f.ops[1].api == "aclrtMemcpy"
    assert "Freed by: aclrtFreeHost" in rt.sanitizer.report()


def test_a_use_of_freed_device_memory_is_reported_too():
    rt = make()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.free(d)
    with pytest.raises(emu.AclError):
        rt.memcpy(d, N, h, N, H2D)
    assert kinds(rt) == ["use-after-free"]


@pytest.mark.parametrize("host", [True, False], ids=["aclrtFreeHost", "aclrtFree"])
def test_a_second_free_of_the_same_memory_is_a_double_free_with_both_frees(host):
    rt = make()
    p = rt.malloc_host(N) if host else rt.malloc(N)
    free = rt.free_host if host else rt.free
    free(p)
    with pytest.raises(emu.AclError) as e:
        free(p)
    assert e.value.code == 107000  # the runtime's answer is unchanged
    (f,) = rt.sanitizer.findings
    assert f.kind == "double-free" and f.ops[0].api == f.ops[1].api == ("aclrtFreeHost" if host else "aclrtFree")
    assert "Freed again by" in rt.sanitizer.report()


def test_the_record_of_frees_is_bounded_and_keeps_no_freed_buffer_alive():
    rt = make()
    for _ in range(FREED_KEPT + 10):
        rt.free_host(rt.malloc_host(64))
    assert len(rt.space.freed_recently) == FREED_KEPT
    assert all(isinstance(e[2], str) for e in rt.space.freed_recently)  # addresses and a name, no Region
    assert len(rt.sanitizer._frees) <= FREED_KEPT


def test_without_a_sanitizer_a_use_after_free_only_fails():
    rt = emu.configure("910B", functional=True, host_time="calls")
    rt.set_device(0)
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.free_host(h)
    assert rt.space.on_stale is None
    with pytest.raises(emu.AclError):
        rt.memcpy(d, N, h, N, H2D)


# -- item 6: what this run did -----------------------------------------------------------------------------------
def test_a_race_whose_later_call_moved_its_bytes_first_says_this_runs_data_was_affected():
    rt, a, b, x, h = two_streams_over(fill=0)
    rt.launch_kernel(lambda v: None, [(x, N)], a, duration_us=500, access="w")  # writes at its start
    rt.memcpy_async(h, N, x, N, D2H, b)
    rt.synchronize_device()
    (f,) = rt.sanitizer.finish()
    text = rt.sanitizer.report()
    assert "held by chance" not in text
    assert "ran at once" in text


def test_a_race_that_held_the_first_time_but_not_later_says_so():
    from emu.sanitize.report import observed

    rt, a, b, x, h = two_streams_over(fill=0)
    for us in (1.0, 800.0):  # the first time the copy comes after the kernel, the second time it does not
        rt.launch_kernel(lambda v: None, [(x, N)], a, duration_us=us, access="w")
        rt.synchronize_stream(b)
        rt.memcpy_async(h, N, x, N, D2H, b)
        rt.synchronize_stream(b)
    rt.synchronize_device()
    (f,) = rt.sanitizer.finish()
    assert f.count == 2
    seen = observed(f)
    assert seen.startswith("the order held by chance") and "but at occurrence 2" in seen


# -- item 7: what the checks could not see ------------------------------------------------------------------------
def test_a_copy_into_host_memory_viewed_before_it_is_noted_as_unseen_reads():
    rt = make()
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memset(d, N, 1, N)
    view = rt.host_array(h, N)
    rt.memcpy_async(h, N, d, N, D2H, s)
    view.sum()  # unseen
    rt.synchronize_stream(s)
    assert kinds(rt) == []
    (note,) = [n for n in rt.sanitizer.to_dict()["notes"] if n.startswith("Host reads not seen")]
    assert "test_sanitize_rules.py" in note
