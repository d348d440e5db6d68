"""A run as a Chrome trace JSON that Perfetto (ui.perfetto.dev) and chrome://tracing show as it happened.

Layout: a "host" process with one track per host thread (numbered in order of appearance), one process per
device with its streams ("stream 1", "default stream", "sync copies"), its DMA engines ("SDMA 0"...), its
AI core slots and its own links ("pcie down", "HBM"...), and an "interconnect" process for the links between
devices and the host's CPU ports. Perfetto's JSON importer does not show overlapping complete events on
one track, so a span that would overlap the track's last one goes on the track's next lane ("pcie down #2");
no two slices of a track overlap. Counter tracks: each link's throughput (its flows in flight, each counted
at its average rate) and each device's busy DMA engines. Flow arrows join each host API call to the device
task it enqueued (the task whose label is the call's API and whose submit time falls within the call).

`build(records, calls)` takes a models.trace RECORD array and a CALL array; times are simulated seconds.

`build(records, calls, findings)` also draws what a checker of the run found (emu.sanitize), as plain data:
each finding a dict {"kind", "title", "message", "ends"}, its ends (at most two) each a task
{"type": "task", "stream", "start", "end"} or a host call {"type": "call", "thread", "time"}. A finding is a
slice on the host's "sanitizer" track spanning its ends, with a flow arrow from its earlier end to its later
one (category "sanitizer"); an end the trace does not hold (a task no record kept, a host access outside any
API call) is placed on the finding's own slice.
"""
from __future__ import annotations

import bisect
import math
import re

import numpy as np

HOST_PID, LINKS_PID, DEVICE_PID = 1, 2, 10  # device d is process DEVICE_PID + d
_DEVICE_LINK = re.compile(r"^(dev|pcie|hccs|ub|soc)(\d+)\.(\w+)$")  # a device's own port or memory
_EPS = 1e-15  # seconds: a span may start this much before the previous one on its lane ends


class _Tracks:
    """Named tracks in processes, each split into lanes so that no two spans of a lane overlap."""

    def __init__(self):
        self.events: list[dict] = []
        self.processes: dict[int, str] = {}
        self.lanes: dict[tuple[int, str], list[float]] = {}  # (pid, track) -> each lane's last end
        self.tids: dict[tuple[int, str, int], int] = {}
        self.next_tid: dict[int, int] = {}

    def process(self, pid: int, name: str) -> None:
        if pid not in self.processes:
            self.processes[pid] = name
            self.events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
            self.events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                                "args": {"sort_index": pid}})

    def _tid(self, pid: int, track: str, lane: int) -> int:
        key = (pid, track, lane)
        tid = self.tids.get(key)
        if tid is None:
            tid = self.tids[key] = self.next_tid[pid] = self.next_tid.get(pid, 0) + 1
            name = track if lane == 0 else f"{track} #{lane + 1}"
            self.events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        return tid

    def span(self, pid: int, track: str, label: str, start: float, end: float, args: dict) -> tuple[int, int]:
        """A complete event on the first lane of `track` free at `start`; returns its (pid, tid)."""
        lanes = self.lanes.setdefault((pid, track), [])
        lane = next((i for i, last in enumerate(lanes) if last <= start + _EPS), len(lanes))
        if lane == len(lanes):
            lanes.append(end)
        else:
            lanes[lane] = end
        tid = self._tid(pid, track, lane)
        self.events.append({"ph": "X", "name": label, "pid": pid, "tid": tid, "ts": start * 1e6,
                            "dur": max(end - start, 0.0) * 1e6, "args": args})
        return pid, tid

    def counter(self, pid: int, name: str, steps: list[tuple[float, float]], unit: str) -> None:
        """A counter track from (time, change) steps: the running sum after each distinct time."""
        level, out = 0.0, []
        for t, delta in sorted(steps):
            level += delta
            if out and out[-1][0] == t:
                out[-1] = (t, level)
            else:
                out.append((t, level))
        for t, value in out:
            self.events.append({"ph": "C", "name": name, "pid": pid, "tid": 0, "ts": t * 1e6,
                                "args": {unit: round(max(value, 0.0), 6)}})


def _link_place(name: str) -> tuple[int, str]:
    """(pid, track name) of a link: a device's own port or memory goes in its device's process."""
    m = _DEVICE_LINK.match(name)
    if m is None:
        return LINKS_PID, name
    kind, dev, side = m.groups()
    track = "HBM" if kind == "dev" and side == "hbm" else f"{kind} {side}" if kind != "dev" else side
    return DEVICE_PID + int(dev), track


class _StreamNames:
    """'stream 1', 'stream 2'... per device in order of appearance; 'default stream' and 'sync copies'."""

    def __init__(self):
        self.names: dict[str, str] = {}
        self.count: dict[int, int] = {}

    def __call__(self, stream: str, device: int) -> str:
        name = self.names.get(stream)
        if name is None:
            if stream.endswith("/default"):
                name = "default stream"
            elif stream.endswith("/sync"):
                name = "sync copies"
            else:
                self.count[device] = self.count.get(device, 0) + 1
                name = f"stream {self.count[device]}"
            self.names[stream] = name
        return name


class _Calls:
    """The host calls, by API name and all together, to find the one that enqueued a task (flow arrows)."""

    ANY = ""

    def __init__(self):
        self.by_api: dict[str, tuple[list[float], list[tuple]]] = {}

    def add(self, api: str, start: float, end: float, where: tuple[int, int]) -> None:
        for key in (api, self.ANY):
            starts, calls = self.by_api.setdefault(key, ([], []))
            starts.append(start)
            calls.append((start, end, where))

    def sort(self) -> None:
        for api, (starts, calls) in self.by_api.items():
            calls.sort(key=lambda c: c[0])
            self.by_api[api] = ([c[0] for c in calls], calls)

    def find(self, api: str, at: float):
        """The latest `api` call (any call, if none of `api` fits: a kernel's label is its own name) started
        by `at` that had not returned before it: (start, end, (pid, tid)); None if no call was under way."""
        if math.isnan(at):
            return None
        for key in (api, self.ANY):
            entry = self.by_api.get(key)
            if entry is None:
                continue
            starts, calls = entry
            i = bisect.bisect_right(starts, at) - 1
            if i >= 0 and calls[i][1] >= at:
                return calls[i]
        return None


def build(records: np.ndarray, calls: np.ndarray | list, findings: list[dict] | None = None) -> dict:
    """The trace dict of a RECORD array and a CALL array (or (api, thread, start, end) tuples), and of the
    findings of a checker (see the module's docstring)."""
    t = _Tracks()
    t.process(HOST_PID, "host")
    callers, by_thread = _host_spans(t, calls, bool(findings))
    spans = _DeviceSpans(t, callers, bool(findings))
    spans.add(records)
    if findings:
        _findings(t, findings, spans.task_spans, by_thread, spans.flow_id)
    for (pid, track), steps in spans.link_steps.items():
        t.counter(pid, f"{track} GB/s", steps, "GB/s")
    for device, steps in spans.engine_steps.items():
        t.counter(DEVICE_PID + device, "busy SDMA engines", steps, "engines")
    return {"traceEvents": t.events, "displayTimeUnit": "ns",
            "otherData": {"counters": "link GB/s counts each flow in flight at its average rate (bytes over its "
                                      "span, latency included)"}}


def _host_spans(t: _Tracks, calls, keep_threads: bool) -> tuple[_Calls, dict[int, list]]:
    """Each call a span on its host thread's track (threads numbered from 1 in order of first call): (the
    calls, sorted for `find`; with keep_threads, thread -> (start, end, where) of its calls, else {})."""
    callers = _Calls()
    threads: dict[int, int] = {}
    by_thread: dict[int, list] = {}  # thread -> (start, end, where) of its calls, for the findings' ends
    for api, thread, start, end in (calls.tolist() if isinstance(calls, np.ndarray) else calls):
        no = threads.setdefault(thread, len(threads) + 1)
        where = t.span(HOST_PID, f"host thread {no}", api, start, end, {"thread": thread})
        callers.add(api, start, end, where)
        if keep_threads:
            by_thread.setdefault(thread, []).append((start, end, where))
    callers.sort()
    return callers, by_thread


class _DeviceSpans:
    """The records' spans, in start order (lanes are filled greedily in time order): on their stream with an
    enqueue arrow from the call that queued them, on their engine or AI core, on each link they cross; and
    the steps of the link and engine counters. Flow ids count from 1."""

    def __init__(self, t: _Tracks, callers: _Calls, keep_tasks: bool):
        self.t, self.callers, self.keep_tasks = t, callers, keep_tasks
        self.task_spans: dict[tuple[str, float], tuple] = {}  # (stream, start) -> (start, end, where)
        self.streams = _StreamNames()
        self.link_steps: dict[tuple[int, str], list] = {}
        self.engine_steps: dict[int, list] = {}
        self.flow_id = 0

    def add(self, records: np.ndarray) -> None:
        """Every record with a start and an end, by start (lanes are filled greedily in time order)."""
        timed = records[~(np.isnan(records["start"]) | np.isnan(records["end"]))]
        for row in timed[np.lexsort((timed["end"], timed["start"]))].tolist():  # (lexsort: stable)
            self._record(*row)

    def _record(self, label, kind, stream, device, engine, route, links, nbytes, tasks, submit, start, end, asked,
                used) -> None:
        t = self.t
        pid = DEVICE_PID + device
        t.process(pid, f"device {device}")
        args = {"bytes": nbytes, "route": route or kind, "tasks": tasks,
                "submit_us": (0.0 if math.isnan(submit) else submit) * 1e6}
        if asked >= 0:  # a copy: the kind its caller gave and the one it ran as
            args["kind_asked"], args["kind_used"] = asked, used
        if stream:
            args["stream"] = stream
            where = t.span(pid, self.streams(stream, device), label, start, end, args)
            if self.keep_tasks:
                self.task_spans.setdefault((stream, start), (start, end, where))
            self._enqueue_arrow(label, submit, start, end, where)
        if engine >= 0 and kind in ("copy", "fill"):
            t.span(pid, f"SDMA {engine}", label, start, end, args)
            self.engine_steps.setdefault(device, []).extend(((start, 1.0), (end, -1.0)))
        elif engine >= 0 and kind == "kernel":
            t.span(pid, f"AI core {engine}", label, start, end, args)
        rate = nbytes / (end - start) / 1e9 if end > start else 0.0
        for link in links.split(",") if links else ():
            lpid, track = _link_place(link)
            t.process(lpid, "interconnect" if lpid == LINKS_PID else f"device {lpid - DEVICE_PID}")
            t.span(lpid, track, label, start, end, {**args, "link": link})
            self.link_steps.setdefault((lpid, track), []).extend(((start, rate), (end, -rate)))

    def _enqueue_arrow(self, label: str, submit: float, start: float, end: float, where: tuple) -> None:
        """An arrow from the instant the call under way at `submit` queued the task to the task's middle."""
        caller = self.callers.find(label, submit)
        if caller is None:
            return
        self.flow_id += 1
        _, _, (cpid, ctid) = caller
        self.t.events.append({"ph": "s", "id": self.flow_id, "name": "enqueue", "cat": "enqueue", "pid": cpid,
                              "tid": ctid, "ts": submit * 1e6})  # the instant the call queued the task
        self.t.events.append({"ph": "f", "bp": "e", "id": self.flow_id, "name": "enqueue", "cat": "enqueue",
                              "pid": where[0], "tid": where[1], "ts": (start + (end - start) / 2) * 1e6})


def _findings(t: _Tracks, findings: list[dict], task_spans: dict, by_thread: dict, flow_id: int) -> None:
    """Each finding: a slice on the host's "sanitizer" track over its ends, and an arrow between them."""
    for calls in by_thread.values():
        calls.sort(key=lambda c: c[0])
    starts = {thread: [c[0] for c in calls] for thread, calls in by_thread.items()}

    def place(end: dict):
        """(time, (pid, tid) of the slice holding it, or None)."""
        if end.get("type") == "task":
            span = task_spans.get((end.get("stream"), end.get("start")))
            if span is not None:
                return span[0] + (span[1] - span[0]) / 2, span[2]
            return end.get("start", 0.0), None
        at = end.get("time", 0.0)
        calls = by_thread.get(end.get("thread"))
        if calls:
            i = bisect.bisect_right(starts[end.get("thread")], at) - 1
            if i >= 0 and calls[i][0] <= at <= calls[i][1]:
                return at, calls[i][2]
        return at, None

    for f in findings:
        ends = [place(e) for e in f.get("ends", ())[:2]]
        if not ends:
            continue
        times = [at for at, _ in ends]
        lo, hi = min(times), max(times)
        own = t.span(HOST_PID, "sanitizer", f.get("title") or f.get("kind", "finding"), lo, hi,
                     {"kind": f.get("kind"), "missing edge": f.get("message"), "sites": f.get("sites")})
        if len(ends) < 2:
            continue
        ends = [(at, where if where is not None else own) for at, where in ends]
        ends.sort(key=lambda e: e[0])
        flow_id += 1
        (t0, (p0, d0)), (t1, (p1, d1)) = ends
        name = f.get("kind", "finding")
        t.events.append({"ph": "s", "id": flow_id, "name": name, "cat": "sanitizer", "pid": p0, "tid": d0,
                         "ts": t0 * 1e6})
        t.events.append({"ph": "f", "bp": "e", "id": flow_id, "name": name, "cat": "sanitizer", "pid": p1,
                         "tid": d1, "ts": t1 * 1e6})
