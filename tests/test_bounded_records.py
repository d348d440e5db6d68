"""Bounded memory on long runs: compact records under a keep policy, running totals, dropped handles,
2D copies as one model task, registrations across a device reset."""
from __future__ import annotations

import gc
import io
import json
import time

import numpy as np
import pytest

import emu
import emu.acl as acl
from emu.studies.runsummary import summary
from emu.models import COPY, HOST, Machine, Task, trace
from emu.models.trace import CHUNK, GoneStream, Row

from helpers import code

H2D, D2D = 1, 3
N = 4096
INVALID_HANDLE = 107017  # ACL_ERROR_RT_INVALID_HANDLE
CONTEXT_NULL = 107002
PARAM_INVALID = 107000
NOT_REGISTERED = 507911
POLICIES = ["all", 5, None]


def script(rt, copies: int = 12, streams: int = 2):
    """H2D copies round robin over streams, a memset, a D2D 2D copy, an event; synchronized."""
    rt.set_device(0)
    ss = [rt.create_stream() for _ in range(streams)]
    h, d = rt.malloc_host(N), rt.malloc(N)
    for i in range(copies):
        rt.memcpy_async(d, N, h, N, H2D, ss[i % streams])
    rt.memset_async(d, N, 1, N, ss[0])
    d2 = rt.malloc(N)
    rt.memcpy2d_async(d2, 64, d, 64, 32, 16, D2D, ss[1])
    ev = rt.create_event()
    rt.record_event(ev, ss[0])
    rt.synchronize_device()
    return ss


def same(rec) -> list:
    """Records without the handles in stream names and labels (they differ between runs)."""
    return [(r[0].split(" 0x")[0],) + r[1:2] + r[3:] for r in rec.tolist()]


def run(records, **kw):
    rt = emu.configure("910B", functional=False, records=records)
    script(rt, **kw)
    return rt


# -- keep policies -----------------------------------------------------------------------------------------------
def test_records_all_keeps_every_task_in_the_record_array():
    rt = run("all")
    rec = rt.records()
    assert rec.dtype == trace.RECORD
    assert len(rec) == rt.record_totals()["tasks"] == 12 + 3
    assert list(rec["api"]).count("aclrtMemcpyAsync") == 12
    assert np.all(np.diff(rec["end"]) >= 0)  # completion order
    assert emu.records().tolist() == rec.tolist()


def test_records_n_keeps_the_last_n_tasks_and_calls():
    full, last = run("all"), run(5)
    rec = last.records()
    assert len(rec) == 5
    assert same(rec) == same(full.records())[-5:]
    calls = last.call_log.array()
    assert len(calls) == 5 and calls.tolist() == full.call_log.array().tolist()[-5:]
    assert len(last.machine.records) == 5


def test_records_none_keeps_nothing_but_the_counts():
    rt = run(None)
    assert len(rt.records()) == 0 and rt.records().dtype == trace.RECORD
    assert len(rt.machine.records) == 0 and list(rt.machine.records) == []
    assert rt.host_calls == []
    assert rt.record_totals()["tasks"] == 15
    assert rt.calls["aclrtMemcpyAsync"] == 12


@pytest.mark.parametrize("records", POLICIES)
def test_summary_counts_are_the_same_under_every_records_policy(records):
    """Calls by API, bytes and tasks by route, device tasks and simulated time come from running counters."""
    want = summary(run("all"), None)
    got = summary(run(records), None)
    for key in ("calls", "bytes_by_route", "tasks_by_route", "device_tasks", "simulated_ms", "host_ms"):
        assert got[key] == want[key], key
    assert want["bytes_by_route"]["sdma"] == 32 * 16 and want["tasks_by_route"]["sdma"] == 16  # the 2D copy's rows


def test_records_to_a_path_are_written_as_json_lines(tmp_path):
    path = tmp_path / "run.jsonl"
    rt = run(str(path))
    assert len(rt.records()) == 0  # none kept in memory
    rt.flush_records()
    tasks, calls = trace.read_jsonl(path)
    want = run("all")
    assert same(tasks) == same(want.records())
    assert calls.tolist() == want.call_log.array().tolist()
    first = json.loads(path.read_text().splitlines()[0])
    assert first["type"] in ("task", "call")


def test_records_to_a_path_are_all_written_when_the_runtime_is_dropped(tmp_path):
    path = tmp_path / "run.jsonl"
    rt = run(path)
    tasks, calls = rt.record_totals()["tasks"], sum(rt.calls.values())
    del rt
    emu.configure("910B")
    gc.collect()
    got_tasks, got_calls = trace.read_jsonl(path)
    assert (len(got_tasks), len(got_calls)) == (tasks, calls)


def test_records_to_a_file_object_are_written_as_json_lines():
    f = io.StringIO()
    rt = run(f)
    rt.flush_records()
    lines = [json.loads(x) for x in f.getvalue().splitlines()]
    assert sum(x["type"] == "task" for x in lines) == rt.record_totals()["tasks"]
    assert sum(x["type"] == "call" for x in lines) == sum(rt.calls.values())


@pytest.mark.parametrize("bad", [-1, True, 1.5, object()])
def test_a_records_policy_that_is_not_one_is_a_value_error(bad):
    with pytest.raises(ValueError):
        emu.configure("910B", records=bad)


def test_bounded_records_stay_bounded_past_many_chunks():
    """More tasks than several chunks, each with a label of its own (a record-event marker names its
    event): the last N are kept and the label and stream tables do not grow with the run."""
    rt = emu.configure("910B", functional=False, records=100)
    rt.set_device(0)
    for _ in range(3 * CHUNK):
        s = rt.create_stream()
        ev = rt.create_event()
        rt.record_event(ev, s)
        rt.synchronize_stream(s)
        rt.destroy_event(ev)
        rt.destroy_stream(s)
    log = rt.machine.records
    assert len(rt.records()) == 100 and log.count == 3 * CHUNK
    bound = 2 * (100 + CHUNK) + 1
    assert len(log.labels) <= bound and len(log.streams) <= bound
    assert len(rt.call_log.array()) == 100
    assert rt.calls["aclrtRecordEvent"] == 3 * CHUNK


def test_a_record_reads_like_the_task_it_was():
    rt = emu.configure("910B", functional=False)
    rt.set_device(0)
    s = rt.create_stream()
    h, d = rt.malloc_host(N), rt.malloc(N)
    rt.memcpy_async(d, N, h, N, H2D, s)
    rt.synchronize_stream(s)
    (row,) = [t for t in rt.machine.records if t.label == "aclrtMemcpyAsync"]
    assert isinstance(row, Row)
    assert row.stream is rt.handles[s].m  # the live stream itself
    assert (row.kind, row.route, row.nbytes, row.src, row.dst, row.chunks) == ("copy", "h2d", N, None, 0, 1)
    assert row.start <= row.end and row.completed and row._parent is None
    name = row.stream.name
    del row
    rt.destroy_stream(s)
    gc.collect()
    (gone,) = [t for t in rt.machine.records if t.label == "aclrtMemcpyAsync"]
    assert isinstance(gone.stream, GoneStream) and gone.stream.name == name
    log = rt.machine.records
    assert list(reversed(log))[0].end == max(t.end for t in log) == log[-1].end == log[len(log) - 1].end
    assert [t.label for t in log[:2]] == [t.label for t in list(log)[:2]]
    with pytest.raises(IndexError):
        log[len(log)]


def test_the_machine_keeps_no_completed_task_object():
    m = Machine(emu.config.load("910B").hardware)
    s = m.stream("s", 0)
    first = m.submit(s, Task(COPY, nbytes=N, device=0, src=HOST, dst=0, label="first"), at=0.0)
    m.wait(first)
    m.wait(m.submit(s, Task(COPY, nbytes=N, device=0, src=HOST, dst=0, label="second"), at=0.0))
    del first
    assert [t.label for t in m.records] == ["first", "second"]
    gc.collect()
    assert not [o for o in gc.get_objects() if type(o) is Task and o.label == "first"]  # (the stream keeps its last)


def test_a_bounded_trace_shows_the_kept_records(tmp_path):
    rt = run(5)
    rt.write_trace(tmp_path / "t.json")
    spans = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e["ph"] == "X"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in json.loads((tmp_path / "t.json").read_text())[
        "traceEvents"] if e.get("name") == "thread_name"}
    on_streams = [e for e in spans if names[(e["pid"], e["tid"])].startswith(("stream ", "default stream"))]
    assert len(on_streams) == 5  # stream spans: one per kept record
    assert sum(e["pid"] == 1 for e in spans) == 5  # host spans: one per kept call


# -- handles -----------------------------------------------------------------------------------------------------
def test_destroyed_handles_are_dropped_and_keep_their_codes():
    rt = emu.configure("910B", functional=False)
    rt.set_device(0)
    before = len(rt.handles)
    for _ in range(300):
        s = rt.create_stream()
        ev = rt.create_event()
        rt.destroy_stream(s)
        rt.destroy_event(ev)
        ctx = rt.create_context(0)
        rt.destroy_context(ctx)
        rt.set_device(0)
    assert len(rt.handles) == before
    assert code(rt.destroy_stream, s) == INVALID_HANDLE
    assert code(rt.synchronize_stream, s) == INVALID_HANDLE
    assert code(rt.destroy_event, ev) == INVALID_HANDLE
    assert code(rt.record_event, ev, 0) == INVALID_HANDLE
    assert code(rt.destroy_context, ctx) == CONTEXT_NULL
    assert code(rt.set_context, ctx) == PARAM_INVALID


def test_handles_marked_destroyed_elsewhere_are_swept_as_the_table_grows():
    class Obj:
        destroyed = True

    rt = emu.configure("910B", functional=False)
    for h in range(5000):
        rt.handles[h] = Obj()
    assert len(rt.handles) < 1024


# -- 2D copies ---------------------------------------------------------------------------------------------------
def test_a_million_row_2d_device_copy_is_one_model_task():
    h, w = 1_000_000, 1
    rt = emu.configure("910B", functional=False)
    rt.set_device(0)
    hw = rt.product.hardware
    s = rt.create_stream()
    a, b = rt.malloc(h), rt.malloc(h)
    t = time.perf_counter()
    rt.memcpy2d_async(b, w, a, w, w, h, D2D, s)
    rt.synchronize_stream(s)
    assert time.perf_counter() - t < 5.0
    (rec,) = rt.records()[rt.records()["api"] == "aclrtMemcpy2dAsync"]
    assert rec["tasks"] == h and rec["bytes"] == w * h
    assert rec["end"] - rec["start"] == pytest.approx(h * (hw.sdma_latency + 2 * w / hw.memory_bandwidth), rel=1e-9)


def test_a_2d_host_copy_larger_than_the_copy_unit_is_one_model_task_of_the_split_tasks():
    """A 2D H2D copy the runtime splits into DMA tasks of whole rows, at most the async copy unit each: one
    record standing for those tasks, taking what they take back to back (each its latency and its wire
    bytes, with a TLP header per MPS of its own payload) plus the per-row descriptor cost."""
    rt = emu.configure("910B", functional=False)
    rt.set_device(0)
    hw = rt.product.hardware
    width, height = 5_000_000, 40
    per_task = rt.product.async_copy_unit // width
    s = rt.create_stream()
    h, d = rt.malloc_host(width * height), rt.malloc(width * height)
    rt.memcpy2d_async(d, width, h, width, width, height, H2D, s)
    rt.synchronize_stream(s)
    (rec,) = rt.records()[rt.records()["api"] == "aclrtMemcpy2dAsync"]
    sizes = [width * min(per_task, height - r) for r in range(0, height, per_task)]
    assert rec["tasks"] == len(sizes) == 4 and rec["bytes"] == width * height
    split = sum(hw.alone(None, 0, n) for n in sizes) + height * hw.row_overhead
    assert rec["end"] - rec["start"] == pytest.approx(split, rel=1e-12)


# -- registrations across a device reset -------------------------------------------------------------------------
@pytest.mark.parametrize("reset", ["reset_device", "reset_device_force"])
def test_a_device_reset_keeps_host_registrations_and_unregister_returns_a_code(reset):
    """register_memory.cc keeps the pinned and mapped ranges in process-wide tables rtDeviceReset does not
    touch: after a reset the registration and its device address stand until aclrtHostUnregister."""
    rt = emu.configure("910B")
    rt.set_device(0)
    arr = np.full(256, 7, dtype=np.uint8)
    p = rt.register_host(arr)
    alias = rt.host_register(p, 256)
    getattr(rt, reset)(0)
    assert rt.space.used[0] == 0  # the allocations went; the alias was never counted and stays
    assert code(rt.host_unregister, p) == CONTEXT_NULL  # no context after the reset: a code, no exception
    rt.set_device(0)
    assert rt.host_get_device_pointer(p) == alias
    assert code(rt.host_unregister, p) == 0
    assert code(rt.host_unregister, p) == NOT_REGISTERED
    assert rt.host_register(p, 256) > 0  # the range can be registered again


def test_host_unregister_after_reset_through_the_facade_returns_0():
    rt = emu.configure("910B")
    acl.rt.set_device(0)
    arr = np.zeros(128, dtype=np.uint8)
    p = rt.register_host(arr)
    _, ret = acl.rt.host_register(p, 128, 0)
    assert ret == 0
    assert acl.rt.reset_device(0) == 0
    assert acl.rt.set_device(0) == 0
    assert acl.rt.host_unregister(p) == 0


def _done_tasks(n: int, nstreams: int) -> list[Task]:
    """n completed copies round robin over `nstreams` streams (and two engines, three labels), each shape met again
    with other sizes and times; one a part of another."""
    m = Machine(emu.config.load("910B").hardware)
    streams = [m.stream(f"s{k}", 0) for k in range(nstreams)]
    tasks = []
    for i in range(n):
        t = Task(COPY, nbytes=N * (1 + i % 3) + i, device=0, src=HOST, dst=0, label=f"copy{i % 3}")
        t.stream, t.engine, t.route, t.links = streams[i % nstreams], i % 2, "h2d", ("pcie",)
        t.kind_asked, t.kind_used = H2D, H2D
        t.submit, t.start, t.end = i * 1e-6, i * 1e-6 + 5e-7, i * 1e-6 + 9e-7 + i * 1e-9
        tasks.append(t)
    tasks[0].start = tasks[0].submit = None  # no times but the end
    tasks[5]._parent = tasks[4]
    return tasks


@pytest.mark.parametrize("n, nstreams, engine, shapes", [
    (200, 2, 1, 7),  # a few shapes, met again and again (six, and the part)
    (12, 12, 1, None),  # shapes that hardly repeat: a task is a shape of its own
    (200, 2, np.array(1), None),  # a field that cannot be hashed: likewise
], ids=["few shapes", "shapes that hardly repeat", "a 0-d array"])
def test_a_chunk_gives_each_task_its_own_row_whatever_its_shapes(n, nstreams, engine, shapes):
    """flush converts each distinct shape (every field but the size and times) once when shapes repeat, else
    each task: either way every row is its task's, with its own size and times, kept or written."""
    tasks = _done_tasks(n, nstreams)
    tasks[3].engine = engine
    found, which = trace._shapes(tasks)
    if shapes is None:  # every task its own shape
        assert which == slice(None) and len(found["kind"]) == n
    else:
        assert len(found["kind"]) == shapes and len(which) == n
    expected = trace.to_array(tasks)
    log, sunk = trace.TaskLog("all"), io.StringIO()
    written = trace.TaskLog(sunk)
    for t in tasks:
        log.add(t)
        written.add(t)
    got = log.array()
    for name in expected.dtype.names:  # (nan where task 0 has no times)
        assert np.array_equal(got[name], expected[name], equal_nan=got.dtype[name].kind == "f"), name
    assert [r.end for r in log] == [t.end for t in tasks]
    assert [r._parent for r in log] == [None] * 5 + [trace.PART] + [None] * (n - 6)
    assert log.totals()["bytes_by_route"] == {"h2d": sum(t.nbytes for t in tasks)}
    written.flush()
    rows = [json.loads(line) for line in sunk.getvalue().splitlines()]
    assert [(r["api"], r["engine"], r["bytes"], r["submit"], r["end"]) for r in rows] == \
        [(t.label, t.engine, t.nbytes, t.submit, t.end) for t in tasks]


@pytest.mark.parametrize("records", ["all", "sink"])
def test_the_call_log_keeps_each_calls_api_thread_and_times_across_threads(records):
    """The call log's rows (kept, or written as JSON lines) carry each call's API, its thread and its times, for
    calls from two threads, in call order."""
    import threading

    sunk = io.StringIO()
    rt = emu.configure("910B", functional=False, records=sunk if records == "sink" else "all")
    rt.set_device(0)
    seen = []

    def calls():
        rt.set_device(0)
        for _ in range(3):
            rt.get_device()
        seen.append(threading.get_ident())

    worker = threading.Thread(target=calls)
    worker.start()
    worker.join()
    calls()
    if records == "sink":
        rt.flush_records()
        rows = [json.loads(line) for line in sunk.getvalue().splitlines()]
        got = [(r["api"], r["thread"]) for r in rows if r["type"] == "call"]
    else:
        got = [(api, thread) for api, thread, _, _ in rt.call_log.array().tolist()]
    other, main = seen
    assert got == [("aclrtSetDevice", threading.get_ident())] + \
        [("aclrtSetDevice", other)] + [("aclrtGetDevice", other)] * 3 + \
        [("aclrtSetDevice", main)] + [("aclrtGetDevice", main)] * 3


@pytest.mark.parametrize("make", [
    lambda: Task.copy(N, 0, HOST, 0, "copy"),
    lambda: Task(COPY, nbytes=N, device=0, src=HOST, dst=0, label="copy", rows=4, chunk=1024),
    lambda: Task("kernel", device=0, duration=1e-6, label="kernel"),
    lambda: Task("marker", device=0, waits=(Task("marker"),)),
], ids=["Task.copy", "Task()", "a kernel", "a marker with a wait"])
def test_every_field_of_a_new_task_reads_and_a_caller_may_note_its_own(make):
    """Task keeps every field in a slot, which every way of making one sets (an unset slot would raise on its
    first read, deep in a run) but the notes a caller (the sanitizer) keeps on it, unset until it notes them."""
    t = make()
    fields = [f for f in Task.__slots__ if f not in Task.NOTES]
    values = {f: getattr(t, f) for f in fields}
    assert values["end"] is None and values["stream"] is None and values["links"] == ()
    assert not t.completed and t.chunks >= 1
    assert not hasattr(t, "sanitize_op")
    t.sanitize_op = "noted"
    assert t.sanitize_op == "noted" and not hasattr(Task.copy(N, 0, HOST, 0, "other"), "__dict__")


def test_a_run_holds_few_completed_tasks():
    """Rule: the machine holds at most trace.PENDING (1024) completed tasks before turning them into rows, so
    few of a long run's tasks live long enough to reach the collector's oldest generation (whose full
    collections are what a run pays for them), and the rows still count every task."""
    r = emu.configure(product="910B", functional=False)
    r.set_device(0)
    host, dev = r.malloc_host(64), r.malloc(64)
    most = 0
    for _ in range(3 * 1024 + 7):
        r.memcpy(dev, 64, host, 64, 1)
        most = max(most, len(r.machine.records.pending))
    assert most < trace.PENDING <= 1024
    assert len(r.records()) == 3 * 1024 + 7
