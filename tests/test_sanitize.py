"""The sanitizer (emu.sanitize): each check on the smallest program that shows it, its ordering edges, the
report's text and JSON, timing-only mode, the trace's arrows, the pytest plugin and its cost."""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

import emu
from emu.sanitize import SanitizerError, check, parse_tools
from emu.sanitize.ranges import READ, WRITE, Shadow

N = 1 << 16
H2D, D2H, D2D = 1, 2, 3
BOTH = pytest.mark.parametrize("functional", [True, False], ids=["functional", "timing-only"])


def kinds(rt) -> list[str]:
    return [f.kind for f in rt.sanitizer.finish()]


def line_of(marker: str) -> int:
    """The line of this file holding `marker` (a comment)."""
    with open(__file__) as f:
        return next(no for no, text in enumerate(f, 1) if marker in text and "line_of" not in text)


def make(functional=True, checks=True, product="910B"):
    rt = emu.configure(product, functional=functional, sanitize=checks, host_time="calls")
    rt.set_device(0)
    return rt


def ready_to_copy_out(functional=True):
    """A sanitized runtime, a stream `s`, page-locked `h` and device memory `d` whose bytes are written."""
    rt = make(functional)
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memset(d, N, 1, N)
    return rt, s, h, d


# -- configuration -------------------------------------------------------------------------------------------
def test_off_by_default_and_nothing_is_attached():
    rt = emu.configure("910B")
    rt.set_device(0)
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    task = rt.handles[int(s)].m.last
    assert rt.sanitizer is None
    assert not hasattr(task, "sanitize_op") and task.on_complete is not None
    rt.synchronize_stream(s)


@pytest.mark.parametrize("value,tools", [(True, {"race", "host", "init"}), ("all", {"race", "host", "init"}),
                                         ("race,init", {"race", "init"}), (["host"], {"host"}), (False, set()),
                                         (None, set()), ("", set())])
def test_which_checks(value, tools):
    assert parse_tools(value) == tools
    rt = emu.configure("910B", sanitize=value)
    assert (rt.sanitizer.tools if rt.sanitizer else set()) == tools


def test_a_bad_check_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match="'races' is not a sanitizer check: choose from race, host, init"):
        emu.configure("910B", sanitize="races")
    with pytest.raises(ValueError):
        emu.configure("910B", sanitize=3)


# -- races ------------------------------------------------------------------------------------------------------
@BOTH
def test_two_streams_without_an_event_race_and_an_event_orders_them(functional):
    rt = make(functional)
    a, b = rt.create_stream(), rt.create_stream()
    h, d, out = rt.malloc_host(N), rt.malloc(N), rt.malloc(N)
    rt.memcpy_async(d, N, h, N, H2D, a)  # race: first
    rt.memcpy_async(out, N, d, N, D2D, b)  # race: second
    rt.synchronize_device()
    (f,) = rt.sanitizer.finish()
    assert (f.tool, f.kind, f.modes) == ("race", "race", [WRITE, READ])
    assert [op.site[1] for op in f.ops] == [line_of("# race: first"), line_of("# race: second")]
    assert "no event orders stream 2 of device 0 after stream 1 of device 0 here" in f.missing_edge
    assert (f.lo, f.hi) == (0, N)

    rt = make(functional)
    a, b = rt.create_stream(), rt.create_stream()
    e = rt.create_event()
    h, d, out = rt.malloc_host(N), rt.malloc(N), rt.malloc(N)
    rt.memcpy_async(d, N, h, N, H2D, a)
    rt.record_event(e, a)
    rt.stream_wait_event(b, e)
    rt.memcpy_async(out, N, d, N, D2D, b)
    rt.synchronize_device()
    assert kinds(rt) == []


def test_disjoint_bytes_do_not_race_and_overlapping_ones_report_their_overlap():
    rt = make()
    a, b = rt.create_stream(), rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy_async(d, N // 2, h, N // 2, H2D, a)
    rt.memcpy_async(d + N // 2, N // 2, h, N // 2, H2D, b)  # the other half, the same source: reads only
    assert kinds(rt) == []
    rt.memcpy_async(d + N // 4, N // 2, h, N // 2, H2D, b)  # overlaps the first copy's last quarter
    (f,) = rt.sanitizer.finish()
    assert (f.lo, f.hi) == (N // 4, N // 2)


def test_a_race_is_reported_once_per_pair_of_call_sites_and_counted():
    rt = make(functional=False)
    a, b = rt.create_stream(), rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    for _ in range(50):
        rt.memcpy_async(d, N, h, N, H2D, a)
        rt.memcpy_async(h, N, d, N, D2H, b)
    rt.synchronize_device()
    findings = rt.sanitizer.finish()
    assert len(findings) == 1 and findings[0].count > 50


def test_streams_of_two_devices_race_through_a_peer_copy():
    rt = make()
    rt.device_enable_peer_access(1, 0)
    s0, d0 = rt.create_stream(), rt.malloc(N)
    rt.memset(d0, N, 1, N)
    rt.set_device(1)
    rt.device_enable_peer_access(0, 0)
    s1, d1 = rt.create_stream(), rt.malloc(N)
    rt.set_device(0)
    rt.memset_async(d0, N, 2, N, s0)
    rt.set_device(1)
    rt.memcpy_async(d1, N, d0, N, D2D, s1)
    rt.synchronize_stream(s1)
    (f,) = rt.sanitizer.finish()
    assert f.kind == "race"
    assert "stream 1 of device 1 after stream 1 of device 0" in f.missing_edge


def test_stream_order_and_every_synchronize_are_edges():
    rt = make()
    s, t = rt.create_stream(), rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    rt.memcpy_async(h, N, d, N, D2H, s)  # the same stream: in order
    rt.synchronize_stream(s)
    rt.memcpy_async(d, N, h, N, H2D, t)  # after the host waited for s
    e = rt.create_event()
    rt.record_event(e, t)
    rt.synchronize_event(e)
    rt.memcpy_async(h, N, d, N, D2H, s)
    rt.synchronize_device()
    rt.memcpy(d, N, h, N, H2D)
    rt.memcpy_async(h, N, d, N, D2H, t)
    while rt.stream_query(t) != 0:  # a query that reports completion is a wait
        rt.memset(rt.malloc(64), 64, 0, 64)
    rt.host_array(h, N)
    rt.memcpy_async(h, N, d, N, D2H, s)
    rt.record_event(e, s)
    while rt.query_event_status(e) != 1:
        rt.memset(rt.malloc(64), 64, 0, 64)
    rt.host_array(h, N)
    assert kinds(rt) == []


def test_a_pageable_async_copy_drains_its_stream_first():
    rt = make()
    s = rt.create_stream()
    d = rt.malloc(N)
    rt.memset(d, N, 1, N)
    buf = np.zeros(N, dtype=np.uint8)
    rt.memcpy_async(d, N, rt.register_host(buf), N, H2D, s)  # pageable: synchronous
    buf[:] = 3
    rt.memcpy_async(rt.register_host(buf), N, d, N, D2H, s)
    rt.host_array(rt.register_host(buf), N)
    assert kinds(rt) == []


def test_2d_copies_into_disjoint_columns_do_not_race():
    rt = make()
    a, b = rt.create_stream(), rt.create_stream()
    h, d = rt.malloc_host(64 * 64), rt.malloc(64 * 64)
    rt.memcpy2d_async(d, 64, h, 64, 32, 64, H2D, a)
    rt.memcpy2d_async(d + 32, 64, h + 32, 64, 32, 64, H2D, b)
    assert kinds(rt) == []
    rt.memcpy2d_async(d + 16, 64, h, 64, 32, 64, H2D, b)
    assert kinds(rt) == ["race"]


def test_batch_copies_race_entry_by_entry():
    rt = make()
    a, b = rt.create_stream(), rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    attrs = [{"dst_loc": {"type": 1, "id": 0}, "src_loc": {"type": 0, "id": 0}}]
    n = 16
    step = N // n
    rt.memcpy_batch_async([d + i * step for i in range(n)], [step] * n, [h + i * step for i in range(n)],
                          [step] * n, n, attrs, [0], 1, a)
    assert kinds(rt) == []
    rt.memcpy_async(h, step, d + 3 * step, step, D2H, b)  # reads what entry 3 writes
    (f,) = rt.sanitizer.finish()
    assert f.kind == "race" and (f.lo, f.hi) == (3 * step, 4 * step)


def test_a_host_thread_reading_without_its_own_wait_races():
    rt, s, h, d = ready_to_copy_out()
    rt.memcpy_async(h, N, d, N, D2H, s)
    read = threading.Event()

    def worker():
        rt.host_array(h, N)
        read.set()
        time.sleep(0.2)  # still running when the main thread checks

    t = threading.Thread(target=worker)
    t.start()
    read.wait()
    rt.synchronize_stream(s)
    findings = rt.sanitizer.finish()
    t.join()
    assert [f.kind for f in findings] == ["race"]
    assert "host thread 2 must wait for stream 1 of device 0 itself" in findings[0].missing_edge


def _copy_out_and_sync(rt, s, h, d, then=None):
    rt.set_device(0)
    rt.memcpy_async(h, N, d, N, D2H, s)
    rt.synchronize_stream(s)
    if then is not None:
        then()


def test_a_joined_thread_and_start_thread_hand_their_clocks_over():
    rt, s, h, d = ready_to_copy_out()
    t = threading.Thread(target=_copy_out_and_sync, args=(rt, s, h, d))
    t.start()
    t.join()
    rt.host_array(h, N)  # after the join: the worker waited for the copy
    rt.memcpy_async(h, N, d, N, D2H, s)
    rt.synchronize_stream(s)
    tid = rt.start_thread(lambda _: (rt.set_device(0), rt.host_array(h, N), rt.memcpy_async(d, N, h, N, H2D, s),
                                     rt.synchronize_stream(s)), None)
    rt.stop_thread(tid)
    rt.host_array(d and h, N)
    assert kinds(rt) == []


def test_thread_join_orders_every_check_after_the_thread_free_destroy_and_host_access():
    """A worker copies, synchronizes and returns; the main thread joins it: its free, host read and stream
    destruction are all ordered after the worker's copy (issue 30 item 8: the free was reported)."""
    rt, s, h, d = ready_to_copy_out()
    t = threading.Thread(target=_copy_out_and_sync, args=(rt, s, h, d))
    t.start()
    t.join()
    rt.host_array(h, N)
    rt.free(d)
    rt.destroy_stream_force(s)
    assert kinds(rt) == []


def test_a_thread_that_ended_but_was_not_joined_orders_nothing():
    """Only the join is an edge: a thread seen to have ended (polling is_alive) orders nothing, for the host
    checks and the free alike; the join then does."""
    rt, s, h, d = ready_to_copy_out()
    t = threading.Thread(target=_copy_out_and_sync, args=(rt, s, h, d))
    t.start()
    while t.is_alive():
        time.sleep(0.005)
    rt.host_array(h, N)  # not joined: a race with the worker's copy
    t.join()
    rt.host_array(h, N)  # joined
    rt.free(d)
    assert kinds(rt) == ["race"]


def test_a_join_that_timed_out_is_no_edge():
    rt, s, h, d = ready_to_copy_out()
    go = threading.Event()
    t = threading.Thread(target=_copy_out_and_sync, args=(rt, s, h, d, go.wait))
    t.start()
    t.join(0.05)
    assert t.is_alive()
    rt.free(d)
    go.set()
    t.join()
    (f,) = rt.sanitizer.finish()
    assert f.kind == "free-while-in-use"
    assert "or join host thread 2, which queued it, after it synchronized (threading.Thread.join" in f.missing_edge


class _CopyIn(threading.Thread):
    """A Thread subclass that overrides run: its start is the edge all the same."""

    def __init__(self, rt, s, h, d, wait: float):
        super().__init__()
        self.rt, self.s, self.h, self.d, self.wait = rt, s, h, d, wait

    def run(self):
        time.sleep(self.wait)
        self.rt.set_device(0)
        self.rt.memcpy_async(self.d, N, self.h, N, H2D, self.s)
        self.rt.synchronize_stream(self.s)


@pytest.mark.parametrize("before", [True, False], ids=["written-before-start", "written-after-start"])
def test_thread_start_orders_what_the_parent_did_before_it_and_nothing_after(before):
    """The child starts after its parent's calls so far, not after those the parent makes once it started it
    (which its first call may come after: here the child sleeps first)."""
    rt = make()
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    t = _CopyIn(rt, s, h, d, 0.0 if before else 0.2)
    if before:
        rt.memset(h, N, 7, N)
    t.start()
    if not before:
        rt.memset(h, N, 7, N)  # races with the child's copy, whichever comes first
    t.join()
    rt.free(d)
    assert kinds(rt) == ([] if before else ["race"])


def test_a_thread_started_unseen_follows_the_known_threads_calls_so_far_only():
    """A thread started outside threading.Thread (here _thread.start_new_thread) follows what the known threads
    did before its first call, and nothing they do after it: the main thread's later read races with its
    copy."""
    import _thread

    rt, s, h, d = ready_to_copy_out()
    done = threading.Event()
    _thread.start_new_thread(_copy_out_and_sync, (rt, s, h, d, done.set))
    done.wait()
    rt.host_array(h, N)  # the unseen thread synchronized, but nothing orders this read after it
    assert kinds(rt) == ["race"]


def test_a_pool_task_starts_after_its_submit_and_ends_before_its_result():
    """ThreadPoolExecutor: submit orders the submitter's calls so far before the task, even on a worker thread
    started earlier; result() (its value or its exception) and exception() order the task before the caller."""
    from concurrent.futures import ThreadPoolExecutor

    rt = make()
    s = rt.create_stream()
    h, back, d = rt.malloc_host(N), rt.malloc_host(N), rt.malloc(N)

    def round_trip(fail: bool):
        rt.memcpy_async(d, N, h, N, H2D, s)
        rt.memcpy_async(back, N, d, N, D2H, s)
        rt.synchronize_stream(s)
        if fail:
            raise KeyError("after the synchronize")
        return 5

    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(rt.set_device, 0).result() is None  # the worker thread exists before the fill
        rt.memset(h, N, 7, N)
        assert pool.submit(round_trip, False).result() == 5
        rt.host_array(back, N)
        rt.memset(h, N, 8, N)
        with pytest.raises(KeyError, match="after the synchronize"):
            pool.submit(round_trip, True).result()
        rt.host_array(back, N)
        rt.memset(h, N, 9, N)
        assert isinstance(pool.submit(round_trip, True).exception(), KeyError)
        rt.host_array(back, N)
    assert kinds(rt) == []


def test_a_pool_shutdown_that_waits_joins_its_workers():
    from concurrent.futures import ThreadPoolExecutor

    rt, s, h, d = ready_to_copy_out()
    pool = ThreadPoolExecutor(max_workers=2)
    pool.submit(_copy_out_and_sync, rt, s, h, d)
    pool.shutdown(wait=True)
    rt.free(d)
    rt.host_array(h, N)
    assert kinds(rt) == []


def test_a_pool_task_whose_result_was_not_taken_orders_nothing():
    from concurrent.futures import ThreadPoolExecutor

    rt, s, h, d = ready_to_copy_out()
    with ThreadPoolExecutor(max_workers=1) as pool:
        done = pool.submit(_copy_out_and_sync, rt, s, h, d)
        while not done.done():
            time.sleep(0.005)
        rt.free(d)
    assert kinds(rt) == ["free-while-in-use"]


@pytest.mark.parametrize("block", [1, 0], ids=["blocking", "non-blocking"])
def test_callbacks_order_what_comes_before_them_and_a_blocking_one_what_comes_after(block):
    rt = make()
    s = rt.create_stream()
    h, staged, d = rt.malloc_host(N), rt.malloc_host(N), rt.malloc(N)
    rt.memset(d, N, 1, N)
    rt.subscribe_report(threading.get_ident(), s)
    rt.memcpy_async(h, N, d, N, D2H, s)

    def callback(_):
        rt.host_array(h, N)  # what the copy before it wrote
        rt.memset(staged, N, 7, N)  # what the copy after it reads

    rt.launch_callback(callback, None, block, s)
    rt.memcpy_async(d, N, staged, N, H2D, s)
    rt.process_report(1000)
    rt.synchronize_stream(s)
    # a blocking callback is ordered before the next copy; a non-blocking one runs beside it
    assert kinds(rt) == ([] if block else ["write-before-read"])


# -- the host and its queued work ---------------------------------------------------------------------------
@BOTH
def test_a_host_read_before_the_copy_completed(functional):
    rt, s, h, d = ready_to_copy_out(functional)
    rt.memcpy_async(h, N, d, N, D2H, s)
    rt.memcpy(d, N, h, N, H2D)  # a blocking copy reading the destination: the host did not wait
    (f,) = rt.sanitizer.finish()
    assert (f.tool, f.kind) == ("host", "read-before-complete")
    assert f.ops[1].api == "aclrtMemcpy" and f.ops[1].host


@BOTH
def test_a_host_write_to_a_queued_copys_source(functional):
    rt = make(functional)
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    rt.memset(h, N, 9, N)  # seen by the runtime: found in either mode
    rt.synchronize_stream(s)
    assert kinds(rt) == ["write-before-read"]  # the fingerprint does not report it again


def test_the_fingerprint_finds_a_write_through_numpy_and_places_it():
    rt = make()
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    view = rt.host_array(h, N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    view[100:200] = 5  # invisible to the runtime
    rt.synchronize_stream(s)
    (f,) = rt.sanitizer.finish()
    assert f.kind == "source-changed" and (f.lo, f.hi) == (100, 200) and f.extra["exact"]
    big = 4 << 20
    h2, d2 = rt.malloc_host(big), rt.malloc(big)
    view = rt.host_array(h2, big)
    rt.memcpy_async(d2, big, h2, big, H2D, s)
    view[-1] = 1
    rt.synchronize_stream(s)
    f = rt.sanitizer.findings[-1]
    assert f.lo <= big - 1 < f.hi and not f.extra["exact"]  # placed to its block


def test_timing_only_mode_says_the_fingerprint_is_off():
    rt = make(functional=False)
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    rt.synchronize_stream(s)
    text = rt.sanitizer.report()
    assert "Timing-only mode" in text and "every other check ran" in text
    assert "Timing-only" not in make(functional=True).sanitizer.report()


@BOTH
def test_free_and_unregister_while_queued_work_uses_the_memory(functional):
    rt = make(functional)
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    rt.free(d)
    rt.synchronize_stream(s)
    assert kinds(rt) == ["free-while-in-use"]
    buf = np.zeros(N, dtype=np.uint8)
    ptr = rt.register_host(buf)
    rt.host_register(ptr, N)
    d = rt.malloc(N)
    rt.memcpy_async(d, N, ptr, N, H2D, s)
    rt.host_unregister(ptr)
    rt.synchronize_stream(s)
    assert kinds(rt)[-1] == "unregister-while-in-use"


def test_a_registered_buffers_device_alias_and_host_address_are_the_same_bytes():
    rt = make()
    a, b = rt.create_stream(), rt.create_stream()
    buf = np.zeros(N, dtype=np.uint8)
    ptr = rt.register_host(buf)
    alias = rt.host_register(ptr, N)
    d = rt.malloc(N)
    rt.memset(d, N, 1, N)
    rt.memcpy_async(alias, N, d, N, D2D, a)  # writes the host bytes through the device alias
    rt.memcpy_async(d, N, ptr, N, H2D, b)  # reads them through the host address
    assert kinds(rt) == ["race"]


@BOTH
def test_destroying_a_stream_or_releasing_a_device_with_work_pending(functional):
    rt = make(functional)
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    rt.destroy_stream(s)  # pending: never waited for
    s = rt.create_stream()
    rt.memcpy_async(d, N, h, N, H2D, s)
    rt.reset_device(0)
    assert kinds(rt) == ["destroy-with-pending-work", "reset-with-pending-work"]
    rt = make(functional)
    with rt.create_stream() as s:  # synchronized, then destroyed
        h, d = rt.malloc_host(N), rt.malloc(N)
        rt.memcpy_async(d, N, h, N, H2D, s)
    rt.reset_device(0)
    assert kinds(rt) == []


def test_waiting_on_an_event_never_recorded():
    rt = make()
    s = rt.create_stream()
    e = rt.create_event()  # never recorded
    rt.stream_wait_event(s, e)
    (f,) = rt.sanitizer.finish()
    assert f.kind == "wait-unrecorded-event"
    assert f"created at {__file__.rsplit('/', 1)[-1]}" in f.missing_edge or "created at" in f.missing_edge


# -- init ----------------------------------------------------------------------------------------------------
@BOTH
def test_reading_device_memory_nothing_wrote(functional):
    rt = make(functional)
    s = rt.create_stream()
    h, d, e = rt.malloc_host(N), rt.malloc(N), rt.malloc(N)
    rt.memcpy_async(d, N // 4, h, N // 4, H2D, s)
    rt.memcpy_async(e, N, d, N, D2D, s)  # a D2D source, three quarters unwritten
    (f,) = rt.sanitizer.finish()
    assert (f.tool, f.kind, f.lo, f.hi) == ("init", "uninitialized-read", N // 4, N)
    assert f.extra["alloc"].api == "aclrtMalloc"
    rt.memset_async(d, N, 0, N, s)
    rt.memcpy_async(h, N, d, N, D2H, s)  # written now
    rt.synchronize_stream(s)
    assert len(rt.sanitizer.finish()) == 1


def test_kernel_arguments_declared_read_are_checked_undeclared_ones_are_not():
    rt = make()
    s = rt.create_stream()
    a, b = rt.malloc(N), rt.malloc(N)
    rt.launch_kernel(lambda x, y: None, [(a, N), (b, N)], s, duration_us=1)  # undeclared: no init check
    assert kinds(rt) == []
    c, d = rt.malloc(N), rt.malloc(N)
    rt.launch_kernel(lambda x, y: None, [(c, N), (d, N)], s, duration_us=1, access=("r", "w"))
    assert kinds(rt) == ["uninitialized-read"]
    with pytest.raises(emu.AclError):
        rt.launch_kernel(lambda x: None, [(c, N)], s, duration_us=1, access=("x",))


def test_only_the_checks_asked_for_report():
    rt = make(checks="race")
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy_async(h, N, d, N, D2H, s)  # uninitialised, and read before completion
    rt.host_array(h, N)
    assert kinds(rt) == []


# -- capture --------------------------------------------------------------------------------------------------
def test_a_captured_model_checks_its_accesses_when_replayed_not_when_captured():
    rt = make()
    cap, a, b = rt.create_stream(), rt.create_stream(), rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.ri_capture_begin(cap, 0)
    rt.memcpy_async(d, N, h, N, H2D, cap)
    model = rt.ri_capture_end(cap)
    assert kinds(rt) == []  # captured, not run
    rt.ri_execute_async(model, a)
    rt.ri_execute_async(model, a)  # one stream: in order
    assert kinds(rt) == []
    rt.ri_execute_async(model, b)
    (f,) = rt.sanitizer.finish()
    assert f.ops[0].captured[1] == "aclrtMemcpyAsync" and f.ops[1].api == "aclmdlRIExecuteAsync"


# -- the report --------------------------------------------------------------------------------------------------
def test_the_report_text_json_and_check():
    rt = make()
    a, b = rt.create_stream(), rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memset(d, N, 0, N)
    rt.memcpy_async(d, N, h, N, H2D, a)
    rt.memcpy_async(h, N, d, N, D2H, b)
    rt.synchronize_device()
    text = rt.sanitizer.report()
    lines = text.splitlines()
    assert all(line.startswith("=========") for line in lines)
    assert "ACL-EMU SANITIZER (race, host, init) on 910B" in lines[0]
    assert "SANITIZER SUMMARY: 1 finding (1 race)" in lines[-1]
    for needed in ("Race between a write and a later read (streams)", "Write: aclrtMemcpyAsync at",
                   "test_sanitize.py:", "on stream 1 of device 0", "simulated", "In this run:", "Missing edge:"):
        assert needed in text, needed
    data = json.loads(json.dumps(rt.sanitizer.to_dict()))
    (f,) = data["findings"]
    assert f["tool"] == "race" and f["memory"]["bytes"] == N and len(f["calls"]) == 2
    assert {"api", "file", "line", "stream", "device", "start_ms", "end_ms"} <= set(f["calls"][0])
    with pytest.raises(SanitizerError, match="Race between"):
        check(rt)


def test_the_trace_draws_each_finding_as_an_arrow(tmp_path):
    from test_chrome_trace import check_structure

    rt = make()
    a, b = rt.create_stream(), rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memset(d, N, 0, N)
    rt.memcpy_async(d, N, h, N, H2D, a)
    rt.memcpy_async(h, N, d, N, D2H, b)
    rt.host_array(h, N)  # a read outside any API call: its arrow ends on the finding's own slice
    rt.synchronize_device()
    rt.sanitizer.finish()
    rt.write_trace(tmp_path / "t.json")
    trace = json.loads((tmp_path / "t.json").read_text())
    facts = check_structure(trace)
    arrows = [e for e in trace["traceEvents"] if e.get("cat") == "sanitizer"]
    assert len(arrows) == 2 * len(rt.sanitizer.findings)
    assert "sanitizer" in facts["threads"].values()
    from emu.runtime import queries
    assert queries.chrome_trace(rt)["traceEvents"]  # the dict form still builds


# -- cost ----------------------------------------------------------------------------------------------------
def test_an_allocation_keeps_segments_not_bytes_and_covering_writes_prune():
    shadow = Shadow(1 << 30)

    class Op:
        def __init__(self, agent, n):
            self.agent, self.n, self.base = agent, n, {}

    for k in range(1000):
        assert shadow.access(k * 4096, (k + 1) * 4096, Op(1, k + 1), WRITE) is None
    assert shadow.segments() <= 1001
    shadow.access(0, 1 << 30, Op(1, 2000), WRITE)  # one write covers them all
    assert shadow.segments() == 1
    found = shadow.access(10, 20, Op(2, 1), READ)  # another agent, not ordered: one clash
    assert len(found) == 1 and found[0][1:] == (WRITE, 10, 20)


def test_cost_grows_linearly_with_the_tasks():
    def run(n):
        rt = make(functional=False)
        streams = [rt.create_stream() for _ in range(4)]
        h, d = rt.malloc_host(4096 * 64), rt.malloc(4096 * 64)
        t = time.process_time()  # (CPU time: another process on the machine counts less)
        for i in range(n):
            k = i % 64
            rt.memcpy_async(d + k * 4096, 4096, h + k * 4096, 4096, H2D, streams[k % 4])
        rt.synchronize_device()
        return time.process_time() - t

    run(500)
    rounds = [(run(1000), run(10_000)) for _ in range(3)]  # (interleaved: the machine's speed moves by up to 1.6x)
    small, large = min(r[0] for r in rounds), min(r[1] for r in rounds)
    assert large / small < 30  # 10x the tasks: about 10x the time; a quadratic cost would give about 100x


# -- the pytest plugin -------------------------------------------------------------------------------------------
pytest_plugins = ["pytester"]

USER_TESTS = '''
import pytest
import numpy as np


def racy(acl):
    acl.rt.set_device(0)
    a, _ = acl.rt.create_stream()
    b, _ = acl.rt.create_stream()
    h, _ = acl.rt.malloc_host(4096)
    d, _ = acl.rt.malloc(4096, 0)
    acl.rt.memcpy_async(d, 4096, h, 4096, 1, a)
    acl.rt.memcpy_async(h, 4096, d, 4096, 2, b)
    acl.rt.synchronize_device()


@pytest.mark.acl_sanitize
def test_marked_and_racy(acl):
    racy(acl)


@pytest.mark.acl_sanitize("race")
def test_marked_and_clean(acl):
    acl.rt.set_device(0)
    h, _ = acl.rt.malloc_host(4096)
    d, _ = acl.rt.malloc(4096, 0)
    acl.rt.memcpy(d, 4096, h, 4096, 1)


def test_unmarked_and_racy(acl):
    racy(acl)


def test_fixture_and_expected(acl, acl_sanitizer):
    racy(acl)
    assert [f.kind for f in acl_sanitizer.finish()] == ["race"]
    acl_sanitizer.clear()
'''


def test_the_pytest_plugin_fails_a_test_whose_code_has_a_hazard(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest("--acl-emu", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_marked_and_racy*", "*acl-emu sanitizer found hazards*",
                                 "*Race between a write and a later read (streams)*", "*Missing edge:*"])
    every = pytester.runpytest("--acl-emu-sanitize", "-p", "no:cacheprovider")
    every.assert_outcomes(passed=2, failed=2)  # the unmarked racy test fails too
    bad = pytester.runpytest("--acl-emu-sanitize=bogus", "-p", "no:cacheprovider")
    assert bad.ret != 0
    bad.stderr.fnmatch_lines(["*--acl-emu-sanitize: 'bogus' is not a sanitizer check*"])


def test_a_copy_reading_what_an_earlier_task_wrote_is_no_source_change():
    """The fingerprint sees bytes change between enqueue and execution; when a queued task made the change
    (a D2H into the buffer, then an H2D out of it, on one stream) that is the program's order, not a host
    write."""
    rt = make()
    s = rt.create_stream()
    h, d, e = rt.malloc_host(N), rt.malloc(N), rt.malloc(N)
    rt.memset(d, N, 4, N)
    rt.memcpy_async(h, N, d, N, D2H, s)
    rt.memcpy_async(e, N, h, N, H2D, s)
    rt.synchronize_stream(s)
    assert kinds(rt) == []
    assert (rt.device_array(e, N, np.uint8) == 4).all()
