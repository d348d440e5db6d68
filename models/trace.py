"""What happened, where and when: task records as a numpy array, and Chrome / Perfetto traces."""
from __future__ import annotations

import json
from typing import Iterable, Sequence

import numpy as np

from .machine import Task

RECORD = np.dtype([
    ("api", "U40"), ("kind", "U8"), ("stream", "U48"), ("device", "i2"), ("engine", "i2"), ("route", "U10"),
    ("links", "U64"), ("bytes", "i8"), ("tasks", "i4"), ("submit", "f8"), ("start", "f8"), ("end", "f8"),
])


def to_array(tasks: Sequence[Task]) -> np.ndarray:
    """One row per completed task (times in simulated seconds; engine -1 when none was held; `tasks`: the
    runtime's DMA tasks a split copy stands for)."""
    out = np.zeros(len(tasks), dtype=RECORD)
    for i, t in enumerate(tasks):
        out[i] = (t.label, t.kind, t.stream.name if t.stream is not None else "", t.device,
                  -1 if t.engine is None else t.engine, t.route or "", ",".join(t.links), t.nbytes, t.chunks,
                  t.submit if t.submit is not None else np.nan, t.start if t.start is not None else np.nan, t.end)
    return out


def chrome_trace(tasks: Sequence[Task], host_calls: Iterable[tuple] = ()) -> dict:
    """A Chrome trace (chrome://tracing, ui.perfetto.dev): one track per host thread, stream, engine and link.

    host_calls: (name, thread, start, end) of the host's API calls, in simulated seconds.
    """
    events: list[dict] = []
    tracks: dict[tuple[str, str], tuple[int, int]] = {}
    groups = {"host": 1, "streams": 2, "engines": 3, "links": 4}

    def track(group: str, name: str) -> tuple[int, int]:
        key = (group, name)
        if key not in tracks:
            pid, tid = groups[group], len([k for k in tracks if k[0] == group]) + 1
            tracks[key] = (pid, tid)
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        return tracks[key]

    def span(group: str, name: str, label: str, start: float, end: float, args: dict) -> None:
        pid, tid = track(group, name)
        events.append({"ph": "X", "name": label, "pid": pid, "tid": tid, "ts": start * 1e6,
                       "dur": max(end - start, 0.0) * 1e6, "args": args})

    for name, thread, start, end in host_calls:
        span("host", f"host thread {thread}", name, start, end, {})
    for t in tasks:
        if t.start is None or t.end is None:
            continue
        args = {"bytes": t.nbytes, "route": t.route or t.kind, "tasks": t.chunks, "submit_us": (t.submit or 0.0) * 1e6}
        if t.stream is not None:
            span("streams", t.stream.name, t.label, t.start, t.end, args)
        if t.engine is not None and t.kind in ("copy", "fill"):
            span("engines", f"dev{t.device}.sdma{t.engine}", t.label, t.start, t.end, args)
        elif t.engine is not None and t.kind == "kernel":
            span("engines", f"dev{t.device}.aicore{t.engine}", t.label, t.start, t.end, args)
        for link in t.links:
            span("links", link, t.label, t.start, t.end, args)
    for group, pid in groups.items():
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": group}})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_chrome_trace(path, tasks: Sequence[Task], host_calls: Iterable[tuple] = ()) -> None:
    with open(path, "w") as f:
        json.dump(chrome_trace(tasks, host_calls), f)
