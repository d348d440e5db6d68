"""Simulated time does not depend on how the OS interleaves a program's host threads (emu.runtime.core: host
threads and simulated time). A thread that waits lets the devices run only up to the other threads' horizon, and
API calls start earliest clock first, so a program whose threads talk to each other only through the runtime
(callbacks, process_report, synchronize, events) gets the same task times and host clocks run after run. A thread
that computes without calling the runtime holds the others only HORIZON_ESCAPE_S of wall time (the escape)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import emu
from emu.runtime import callbacks, core

HERE = Path(__file__).parent / "samples" / "inference"
RUNS = 5

# Runs the async inference sample RUNS times in one process (run_script makes a fresh runtime each time) and
# prints, for each run, its device tasks and its host calls (the thread as "main" or "other").
SAMPLE_RUNS = r"""
import json, sys, threading
import emu
from emu.cli import run_script
script, product, out, runs = sys.argv[1:]
main = threading.get_ident()
results = []
for i in range(int(runs)):
    code = run_script(script, [], product, f"{out}/{i}", as_json=True, host_time="calls")
    rt = emu.current()
    streams = {}  # stream names carry handles, which no run reuses: by order of appearance
    tasks = [[x["api"].item(), streams.setdefault(x["stream"].item(), len(streams)),
              *(x[k].item() for k in ("submit", "start", "end"))] for x in emu.records()]
    calls = [[c[0], "main" if c[1] == main else "other", c[2], c[3]] for c in rt.host_calls]
    results.append({"code": code, "tasks": tasks, "calls": calls, "escapes": rt.escapes})
print("RESULTS" + json.dumps(results))
"""


def _env() -> dict:
    env = dict(os.environ)
    for name in ("ACL_EMU_PRODUCT", "ASCEND_RT_VISIBLE_DEVICES", "ACL_EMU_HOST_TIME", "ACL_EMU_MODELS"):
        env.pop(name, None)
    return env


def _sample_runs(product: str, out: Path) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", SAMPLE_RUNS, str(HERE / "resnet50_async.py"), product, str(out),
                           str(RUNS)], capture_output=True, text=True, timeout=600, env=_env(), cwd=out)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.split("RESULTS", 1)[1])


@pytest.mark.parametrize("product", ["A3", "910B"])
def test_async_inference_sample_gives_the_same_task_times_and_host_clocks_run_after_run(product, tmp_path):
    """resnet50_async.py: a callback thread looping on process_report(50) (started before the main thread
    subscribes it), blocking callbacks that copy each output to the host. Its device time used to vary from run to
    run (the callback thread let the devices run ahead of the main thread's clock)."""
    runs = _sample_runs(product, tmp_path)
    assert [r["code"] for r in runs] == [0] * RUNS
    assert all(r["escapes"] == 0 for r in runs)
    first = runs[0]
    assert len(first["tasks"]) == 20  # 4 executions, 4 callbacks, 4 pool inputs and 8 output copies
    for r in runs[1:]:
        assert r["tasks"] == first["tasks"]
        assert r["calls"] == first["calls"]


def _callback_script(acl, n: int = 6) -> dict:
    """A pyACL program: a callback thread (acl.util.start_thread) looping on process_report; the main thread queues
    async copies, blocking and non-blocking callbacks, a second stream waiting on an event, then synchronizes."""
    H2D, D2H = 1, 2
    state = {"run": True, "seen": []}

    def callback_thread(args):
        context, timeout = args
        acl.rt.set_context(context)
        while state["run"]:
            acl.rt.process_report(timeout)

    def on_output(data):
        index, host, dev, size = data
        assert acl.rt.memcpy(host, size, dev, size, D2H) == 0  # a blocking copy inside the callback
        state["seen"].append(index)

    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    context, _ = acl.rt.create_context(0)
    stream, _ = acl.rt.create_stream()
    other, _ = acl.rt.create_stream()
    event, _ = acl.rt.create_event()
    size = 1 << 20
    dev, _ = acl.rt.malloc(size, 0)
    src, _ = acl.rt.malloc_host(size)
    host, _ = acl.rt.malloc_host(size)
    tid, _ = acl.util.start_thread(callback_thread, [context, 20])
    assert acl.rt.subscribe_report(tid, stream) == 0
    for i in range(n):
        assert acl.rt.memcpy_async(dev, size, src, size, H2D, stream) == 0
        assert acl.rt.launch_callback(on_output, [i, host, dev, size], i % 2, stream) == 0
        if i == n // 2:
            assert acl.rt.record_event(event, stream) == 0
            assert acl.rt.stream_wait_event(other, event) == 0
            assert acl.rt.memcpy_async(host, size, dev, size, D2H, other) == 0
    assert acl.rt.synchronize_stream(other) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert acl.rt.unsubscribe_report(tid, stream) == 0
    state["run"] = False
    assert acl.util.stop_thread(tid) == 0
    for p in (src, host):
        acl.rt.free_host(p)
    acl.rt.free(dev)
    acl.rt.destroy_event(event)
    acl.rt.destroy_stream(other)
    acl.rt.destroy_stream(stream)
    acl.rt.destroy_context(context)
    acl.rt.reset_device(0)
    acl.finalize()
    return state


def _one_run(acl) -> dict:
    emu.configure(product="910B")
    main = threading.get_ident()
    state = _callback_script(acl)
    rt = emu.current()
    streams = {}  # stream names carry handles, which no run reuses: by order of appearance
    tasks = [(re.sub(r"0x[0-9a-f]+", "0x", x["api"].item()), streams.setdefault(x["stream"].item(), len(streams)),
              *(x[k].item() for k in ("submit", "start", "end"))) for x in emu.records()]
    calls = [(c[0], c[1] == main, c[2], c[3]) for c in rt.host_calls]
    return {"seen": sorted(state["seen"]), "tasks": tasks, "calls": calls, "escapes": rt.escapes}


def test_pyacl_callback_thread_and_async_copies_give_the_same_times_run_after_run(installed_acl):
    runs = [_one_run(installed_acl) for _ in range(RUNS)]
    first = runs[0]
    assert first["seen"] == list(range(6)) and first["escapes"] == 0
    for r in runs[1:]:
        assert r == first


def test_a_thread_computing_without_the_runtime_does_not_hold_a_waiting_callback_thread_forever(monkeypatch):
    """The escape: the main thread queues a kernel and a blocking callback, then waits for the callback outside the
    runtime (as if it computed). The callback thread's process_report is held by the main thread's clock only
    HORIZON_ESCAPE_S of wall time; then it goes on without it (and counts an escape)."""
    monkeypatch.setattr(core, "HORIZON_ESCAPE_S", 0.2)
    rt = emu.configure(product="910B")
    rt.set_device(0)
    s = rt.create_stream()
    go, ran = threading.Event(), threading.Event()

    def loop():
        go.wait(10)
        while not ran.is_set():
            rt.process_report(-1)

    worker = threading.Thread(target=loop, daemon=True)
    worker.start()
    rt.subscribe_report(worker.ident, s)
    rt.launch_kernel(lambda: None, [], s, duration_us=1000.0)
    rt.launch_callback(lambda _: ran.set(), None, 1, s)
    t0 = time.perf_counter()
    go.set()
    assert ran.wait(10), "the callback thread waited for the main thread forever"
    assert time.perf_counter() - t0 < 5
    assert rt.escapes >= 1
    worker.join(5)
    assert not worker.is_alive()
    rt.synchronize_stream(s)


def _kernel_and_sync(rt, s) -> float:
    """The wall time a kernel's launch and a synchronize on it take."""
    t0 = time.perf_counter()
    rt.launch_kernel(lambda: None, [], s, duration_us=1000.0)
    rt.synchronize_stream(s)
    return time.perf_counter() - t0


def test_a_thread_that_ended_bounds_no_wait(monkeypatch):
    monkeypatch.setattr(core, "HORIZON_ESCAPE_S", 5.0)
    rt = emu.configure(product="910B")
    rt.set_device(0)
    s = rt.create_stream()
    helper = threading.Thread(target=rt.get_device_count)  # one call at its clock 0, then it ends
    helper.start()
    helper.join(5)
    assert _kernel_and_sync(rt, s) < 2.5
    assert rt.escapes == 0 and rt.clock >= 1e-3
    assert helper.ident not in rt.threads


def test_a_thread_idle_outside_the_runtime_holds_waits_once_until_its_next_call(monkeypatch):
    """A live thread that called the runtime and now waits outside it (a pool worker, a thread in join) holds the
    main thread's calls (its clock is behind theirs) for HORIZON_ESCAPE_S once; after the escape it bounds nothing
    until it calls again."""
    monkeypatch.setattr(core, "HORIZON_ESCAPE_S", 0.2)
    rt = emu.configure(product="910B")
    rt.set_device(0)
    s = rt.create_stream()
    release = threading.Event()

    def idle():
        rt.get_device_count()
        release.wait(10)

    helper = threading.Thread(target=idle, daemon=True)
    helper.start()
    while helper.ident not in rt.threads:
        time.sleep(0.001)
    assert _kernel_and_sync(rt, s) >= 0.2
    assert rt.escapes == 1
    assert _kernel_and_sync(rt, s) < 0.2
    assert rt.escapes == 1
    release.set()
    helper.join(5)


def test_a_thread_from_start_thread_starts_at_its_starters_clock_and_bounds_from_its_start():
    rt = emu.configure(product="910B")
    rt.set_device(0)
    started_at = rt.clock
    first = {}
    tid = rt.start_thread(lambda _: first.setdefault("t0", rt.clock), None)
    assert tid in rt.threads  # known before it runs: it bounds the others from its start
    rt.stop_thread(tid)
    assert first["t0"] == started_at


def test_in_wall_host_time_threads_do_not_take_turns(monkeypatch):
    """host_time="wall" promises no repeatable run (the wall clock drives the clocks), so the threads run freely:
    a thread's calls are never held by another thread whose clock is behind (no turn, no escape), as they are in
    "calls" mode (the escape the test above counts)."""
    monkeypatch.setattr(core, "HORIZON_ESCAPE_S", 2.0)
    rt = emu.configure(product="910B", host_time="wall")
    rt.set_device(0)
    h, d = rt.malloc_host(4096), rt.malloc(4096)
    took = []

    def worker():
        rt.set_device(0)
        t0 = time.perf_counter()
        for _ in range(50):
            rt.memcpy(d, 4096, h, 4096, 1)
        took.append(time.perf_counter() - t0)

    t = threading.Thread(target=worker)
    t.start()  # the main thread, known to the runtime, now waits in join without calling it
    t.join()
    assert rt.escapes == 0
    assert took[0] < 1.0  # (held by the main thread, it would wait HORIZON_ESCAPE_S = 2 s)
    assert rt.bounding(rt.caller) == []


def test_stepping_until_forever_stops_when_nothing_is_left():
    """Machine.step_until(math.inf, stop): a thread waiting with no deadline (process_report(-1), a synchronize
    whose horizon is unbounded) completes what is scheduled and returns when nothing is left, instead of
    stepping an empty schedule (simpy's EmptySchedule)."""
    import math

    rt = emu.configure(product="910B", functional=False)
    rt.set_device(0)
    s = rt.create_stream()
    rt.memcpy_async(rt.malloc(4096), 4096, rt.malloc_host(4096), 4096, 1, s)
    rt.machine.step_until(math.inf, lambda: False)
    assert rt.machine.env.empty
    assert rt.machine.records.array()["end"].max() > 0


def _two_threads_copying() -> tuple[dict, list]:
    """The main thread's blocking 64 MiB H2D copy; meanwhile another thread's blocking 16 MiB one, then an async
    4 MiB one on its own stream and its synchronize. (the clocks, each task's (start, end) in microseconds)"""
    rt = emu.configure(product="910B", functional=False)
    rt.set_device(0)
    big, big_host = rt.malloc(64 << 20), rt.malloc_host(64 << 20)
    mid, mid_host = rt.malloc(16 << 20), rt.malloc_host(16 << 20)
    small, small_host = rt.malloc(4 << 20), rt.malloc_host(4 << 20)
    out, ready = {}, threading.Barrier(2)

    def other():
        rt.set_device(0)
        s = rt.create_stream()
        ready.wait()
        rt.memcpy(mid, 16 << 20, mid_host, 16 << 20, 1)
        out["submit"] = rt.clock
        rt.memcpy_async(small, 4 << 20, small_host, 4 << 20, 1, s)
        rt.synchronize_stream(s)
        out["other_end"] = rt.clock

    t = threading.Thread(target=other)
    t.start()
    ready.wait()
    rt.memcpy(big, 64 << 20, big_host, 64 << 20, 1)
    out["main_end"] = rt.clock
    t.join()
    tasks = [(round(float(r["start"]) * 1e6, 3), round(float(r["end"]) * 1e6, 3), int(r["bytes"]))
             for r in rt.records()]
    return out, tasks


def test_blocking_copies_of_two_threads_share_the_link_and_run_no_device_ahead_of_a_thread():
    """A blocking copy with other host threads alive runs the devices only up to their horizon, as a wait does:
    two threads' blocking copies overlap on the link (before, the first to run took the devices to its end, and
    the other's started there), and a copy the other thread queues when its own blocking copy returns starts
    then, not once the main thread's copy is done; run after run the same."""
    runs = [_two_threads_copying() for _ in range(3)]
    assert all(r == runs[0] for r in runs)
    clocks, tasks = runs[0]
    (big,) = [t for t in tasks if t[2] == 64 << 20]
    (mid,) = [t for t in tasks if t[2] == 16 << 20]
    (small,) = [t for t in tasks if t[2] == 4 << 20]
    assert mid[0] < big[1] and big[0] < mid[1]  # the two blocking copies overlap
    assert small[0] - clocks["submit"] * 1e6 < 10  # queued when its thread's blocking copy returned: starts then
    assert small[0] < big[1]
