"""`acl-emu replay`: a profiled step re-timed on another product - its copies, their overlap and the step.

The question: "this step was profiled on our 910B server; how long would its copies and their overlap take on
A3, on 950, with a Gen5 host, with pinned instead of pageable buffers?" The profile (`profiles.load`: an msprof
timeline, a task_time CSV or MSPTI records) is rebuilt into a task graph (`build_graph`):

- per-stream order: each stream's tasks in their measured order; copies on one stream whose measured spans
  overlap (a batch copy's descriptors on several engines) run as one batch;
- every copy with its kind, bytes and device; kernels and every other device task with their measured
  duration (a kernel holds its device's AI core slot unless the profile shows kernels of one device
  overlapping, then none: the measured durations already carry what they shared);
- host API calls per host thread in their order, each with its measured duration and the measured gap
  before it; a call queues the tasks whose connection id it carries; a blocking call (a synchronize, a
  synchronous copy, an "async" copy or memset that returned after its task ended) waits for what it waited for;
- cross-stream dependencies from the profile's event record / wait rows (by event id where the profile names
  it, else each wait after the latest record of another stream that ended by the time the wait ended); a
  profile with no such rows gets dependencies inferred from its timeline: a task that started while its
  stream was idle, with no host call explaining the start, within `tolerance` of the end of a task of another
  stream (not a task of the same kind on the same device: that is an engine or the AI core changing hands),
  waits for the latest such task. Every inference is listed in the result (`graph.inferred`, `notes`). With no
  tolerance given, it is read from the profile's own gaps (`infer_tolerance`: real record-to-wait gaps of 3.8-4.5
  us give 5 us); with one given, the value the gaps suggest is shown beside the residual;
- a copy whose device row has no size takes the one its host call's arguments carry; a copy MSPTI marks
  synchronous (isAsync 0) blocks its host call; when nothing at all can be re-timed the result says so
  (`nothing_retimed`);

and re-timed on each product (`retime`) by the timing model directly (`models.Machine`, timing-only: no
bytes), the host calls issued as the profile timed them. `replay` puts the measured step and each replayed one
side by side: step time, busy time per resource (host link each direction, peer links, SDMA, compute), each
copy's time and why it changed (its change is split into the model's residual on the measured product - the
model there minus the profile - and, from there to the replay, the changes in latency, in transfer time at the
link's rate (bandwidth) and in time lost sharing (contention), the last three from the model's closed form for
the copy alone on either product; the largest part, in the direction of the change, is the reason), and the
model's copy times on the measured product next to the measured ones (the residuals; `calibration_rows` turns
the copies that ran alone into rows `acl-emu calibrate` reads).

    from emu.studies import replay, replay_report
    result = replay.replay("msprof_step.json", ["910B", "A3", "950PR"], measured_on="910B")
    replay_report.gantt_figure(result)

This module measures and returns plain data; `replay_report` draws it (the table, the JSON, the Gantt chart).
"""
from __future__ import annotations

import bisect
import math
import os
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from emu.models import FILL, GROUP, KERNEL, MARKER, STAGED, Machine, Task
from emu.models import msprof as msprof_layout
from emu.models.machine import HOSTFUNC

from .. import config
from . import profiles
from .common import covered
from .profiles import Profile, ProfileError

TOLERANCE = 2e-6  # seconds: times this close are "at the same time" when inferring from a measured timeline
# With no event rows and no tolerance given, it is read from the profile (`infer_tolerance`): the gaps between a
# task of another stream ending and an idle stream's task starting, up to AUTO_MAX, clustered LINK apart; the
# largest cluster's widest gap plus MARGIN.
AUTO_MAX, LINK, MARGIN = 10e-6, 1e-6, 0.5e-6
SAME = 0.02  # a copy whose time moved by less than this share is "about the same"
HOST_MEMORY = ("as-profiled", "pinned", "pageable")
BLOCKING_APIS = frozenset({"aclrtMemcpy", "aclrtMemcpy2d", "aclrtMemset", "aclrtMemsetD32", "aclrtMemcpyBatch",
                           "rtMemcpy", "rtMemset"})
RESOURCES = ("host link H2D", "host link D2H", "peer links", "SDMA", "compute")
COLOURS_OF = {"h2d": "H2D", "d2h": "D2H", "d2d": "D2D", "h2h": "H2H"}


class ReplayError(ValueError):
    """A profile that cannot be replayed on a product (a device it lacks, a task that can never run): one line."""


@dataclass
class Node:
    """One task of the rebuilt graph: a device task of the profile (or a batch of copies), what the replay runs
    it as, and what it waits for. Times are measured, in seconds from the profile's first event."""

    index: int
    kind: str  # "copy", "fill", "kernel", "fixed", "record", "wait", "group"
    tasks: list  # its profile DeviceTasks (a group: several copies)
    device: int
    stream: int
    start: float
    end: float
    label: str
    deps: list = field(default_factory=list)  # nodes it waits for (event waits, inferred dependencies)
    call: int | None = None  # the host call that queued it
    release: float | None = None  # no call queued it: the host time it may start at (None: when its stream gets to it)
    why_fixed: str = ""  # "fixed": why it runs with its measured duration
    position: int = 0  # its place in its stream

    @property
    def task(self):
        return self.tasks[0]

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes or 0 for t in self.tasks)

    @property
    def direction(self) -> str | None:
        ds = {t.direction for t in self.tasks}
        return ds.pop() if len(ds) == 1 else None

    def ends(self, t=None) -> tuple[int | None, int | None]:
        """(src, dst) of a copy (None: the host)."""
        t = t or self.task
        d = t.direction
        if d == "h2d":
            return None, t.device
        if d == "d2h":
            return t.device, None
        if d == "h2h":
            return None, None
        src = t.src if t.src is not None else t.device
        dst = t.dst if t.dst is not None else src
        return src, dst


@dataclass
class Call:
    """One host API call: measured start and end (seconds from the profile's first event), the measured gap
    since the previous call of its thread ended, the nodes it queued, and, for a blocking call, the nodes it
    waited for and the measured time it took after the last of them ended (`tail`)."""

    index: int
    api: str
    thread: int
    start: float
    end: float
    gap: float = 0.0
    nodes: list = field(default_factory=list)
    blocking: str = ""  # "": returns at once; "own": waits for its own tasks; "sync": waits for earlier tasks
    awaits: list = field(default_factory=list)
    tail: float = 0.0
    lead: float = 0.0  # blocking on its own tasks: the measured time from its start to its first task's start


@dataclass
class Graph:
    """A profile rebuilt: nodes in per-stream order, host calls, dependencies and what was inferred."""

    profile: Profile
    nodes: list
    calls: list
    streams: dict  # (device, stream) -> node indices in order
    origin: float  # the profile's first event, seconds on its clock
    tolerance: float
    tolerance_how: str = "given"  # "given", "default (the profile has event rows)" or how it was inferred
    event_deps: list = field(default_factory=list)  # {"wait", "record", "how"}
    inferred: list = field(default_factory=list)  # {"task", "after", "gap_us"}
    notes: list = field(default_factory=list)
    free_kernels: set = field(default_factory=set)  # devices whose kernels overlapped: replayed without a slot

    @property
    def devices(self) -> list[int]:
        out = {n.device for n in self.nodes}
        for n in self.nodes:
            if n.kind in ("copy", "group"):
                for t in n.tasks:
                    out.update(d for d in n.ends(t) if d is not None)
        return sorted(out)


# -- the graph ---------------------------------------------------------------------------------------------------
def _node_kind(t) -> tuple[str, str]:
    """(replay kind, why it is fixed) of a profile task."""
    if t.kind == "copy":
        if t.nbytes is None:
            return "fixed", "copy without a size"
        if t.direction is None:
            return "fixed", "copy whose direction the profile does not say"
        return "copy", ""
    if t.kind == "fill":
        return ("fill", "") if t.nbytes is not None else ("fixed", "memset without a size")
    if t.kind in ("kernel", "record", "wait"):
        return t.kind, ""
    return "fixed", "unknown task type" if not t.known else "device task"


def build_graph(profile: Profile, tolerance: float | None = TOLERANCE) -> Graph:
    """The task graph of a profile (see the module's docstring for what is read and what is inferred). tolerance
    None: TOLERANCE when the profile has event record / wait rows, else inferred from its timeline
    (`infer_tolerance`)."""
    with profiles.collector_paused():
        return _build_graph(profile, tolerance)


def _sized_by_calls(profile: Profile) -> tuple[list, int]:
    """The profile's tasks, each copy without a size given the size (and the direction, if it lacks one) its
    host call's arguments carry, when that call queued no other copy; and how many were."""
    calls = {conn: c for c in profile.calls if c.nbytes is not None for conn in c.connections}
    if not calls:
        return profile.tasks, 0
    copies: dict[int, int] = {}
    for t in profile.tasks:
        if t.kind == "copy" and t.connection in calls:
            copies[id(calls[t.connection])] = copies.get(id(calls[t.connection]), 0) + 1
    out, sized = [], 0
    for t in profile.tasks:
        c = calls.get(t.connection) if t.kind == "copy" and t.nbytes is None else None
        if c is not None and copies[id(c)] == 1:
            t = replace(t, nbytes=c.nbytes, direction=t.direction or c.direction)
            sized += 1
        out.append(t)
    return out, sized


def _build_graph(profile: Profile, tolerance: float | None) -> Graph:
    tasks, sized = _sized_by_calls(profile)
    given, tolerance = tolerance, TOLERANCE if tolerance is None else tolerance
    origin = min([t.start for t in tasks] + [c.start for c in profile.calls])
    by_stream: dict[tuple[int, int], list] = {}
    for t in tasks:
        by_stream.setdefault((t.device, t.stream), []).append(t)
    nodes: list[Node] = []
    streams: dict[tuple[int, int], list[int]] = {}
    notes = list(profile.notes)
    if sized:
        notes.append(f"{sized} copies without a size in their device rows take it from their host call's arguments")
    overlapping_other = 0
    for key in sorted(by_stream):
        order = sorted(by_stream[key], key=lambda t: (t.start, t.row))
        mine: list[int] = []
        for t in order:
            kind, why = _node_kind(t)
            s, e = t.start - origin, t.end - origin
            prev = nodes[mine[-1]] if mine else None
            if (prev is not None and kind == "copy" and prev.kind in ("copy", "group")
                    and s < prev.end - tolerance):  # copies of one stream at once: a batch on several engines
                prev.kind = "group"
                prev.tasks.append(t)
                prev.end = max(prev.end, e)
                continue
            if prev is not None and s < prev.end - tolerance:
                overlapping_other += 1
            node = Node(len(nodes), kind, [t], t.device, t.stream, s, e, t.name, why_fixed=why, position=len(mine))
            nodes.append(node)
            mine.append(node.index)
        streams[key] = mine
    groups = sum(1 for n in nodes if n.kind == "group")
    if groups:
        notes.append(f"{groups} sets of copies overlapping on one stream run as batches (one task, its copies on "
                     f"the device's engines at once)")
    if overlapping_other:
        notes.append(f"{overlapping_other} tasks overlapped the previous task of their stream: replayed one after "
                     f"the other")
    events = any(n.kind in ("record", "wait") for n in nodes)
    g = Graph(profile, nodes, [], streams, origin, tolerance, notes=notes)
    if given is None:
        g.tolerance_how = "default (the profile has event rows)"
    _kernel_slots(g)
    _host_calls(g)
    if given is None and not events:
        g.tolerance, g.tolerance_how = infer_tolerance(g)
    _event_dependencies(g)
    if not events:
        _infer_dependencies(g)
    for n in nodes:
        if n.call is None and n.release is None:
            n.release = _release(g, n)
    return g


def _kernel_slots(g: Graph) -> None:
    """Kernels hold their device's AI core slot, unless the profile shows two kernels of one device at once."""
    by_device: dict[int, list[Node]] = {}
    for n in g.nodes:
        if n.kind == "kernel":
            by_device.setdefault(n.device, []).append(n)
    for device, ks in by_device.items():
        ks.sort(key=lambda n: n.start)
        if any(b.start < a.end - g.tolerance for a, b in zip(ks, ks[1:])):
            g.free_kernels.add(device)
    if g.free_kernels:
        g.notes.append(f"kernels of device {', '.join(map(str, sorted(g.free_kernels)))} overlapped in the profile: "
                       f"replayed with their measured durations, none waiting for another's AI core")


def _host_calls(g: Graph) -> None:
    """The host calls: per thread in order with their gaps, the nodes each queued (by connection id), blocking
    calls and what they wait for."""
    calls = _joined_calls(g)
    _thread_gaps(calls)
    _blocking_calls(g, calls)
    g.calls = calls
    if calls:
        _host_call_notes(g, calls)


def _joined_calls(g: Graph) -> list[Call]:
    """The profile's calls as `Call`s on the graph's time origin, each node joined to the first call (in the
    profile's order) sharing one of its tasks' connection ids."""
    prof = g.profile
    by_conn: dict[int, list[int]] = {}
    for n in g.nodes:
        for t in n.tasks:
            if t.connection:
                by_conn.setdefault(t.connection, []).append(n.index)
    calls = [Call(i, c.api, c.thread, c.start - g.origin, c.end - g.origin) for i, c in enumerate(prof.calls)]
    for c, pc in zip(calls, prof.calls):
        for conn in pc.connections:
            for j in by_conn.get(conn, []):
                if g.nodes[j].call is None:
                    g.nodes[j].call = c.index
                    c.nodes.append(j)
    return calls


def _thread_gaps(calls: list[Call]) -> None:
    """Each call's gap: the host time since the end of its thread's latest-ending earlier call (for a thread's
    first call, its start)."""
    by_thread: dict[int, list[Call]] = {}
    for c in calls:
        by_thread.setdefault(c.thread, []).append(c)
    for cs in by_thread.values():
        cs.sort(key=lambda c: (c.start, c.index))
        prev_end = None
        for c in cs:
            c.gap = c.start - prev_end if prev_end is not None else c.start
            prev_end = max(c.end, prev_end if prev_end is not None else c.end)


def _blocking_calls(g: Graph, calls: list[Call]) -> None:
    """Mark the calls that block: "own" (a blocking API, or a copy that returned once its own tasks ended) and
    "sync" (a synchronize: every task issued before it that had ended when it returned, each awaited once per
    thread)."""
    issue = [calls[n.call].start if n.call is not None else n.start for n in g.nodes]  # when the host issued it
    by_issue = sorted(range(len(g.nodes)), key=lambda j: (issue[j], j))
    issue_times = [issue[j] for j in by_issue]
    seen: dict[int, tuple[int, list]] = {}  # thread -> (tasks of by_issue looked at, those not yet awaited)
    tol = g.tolerance
    for c in sorted(calls, key=lambda c: (c.start, c.index)):
        own = [g.nodes[j] for j in c.nodes]
        copies = "Memcpy" in c.api or "Memset" in c.api  # an "async" copy from pageable memory blocks too
        if own and (c.api in BLOCKING_APIS or any(t.blocking for n in own for t in n.tasks)
                    or (copies and any(n.duration > tol and n.end > c.start + tol and n.end <= c.end + tol
                                       for n in own))):
            _awaits_own(g, c, own)
        elif "Synchronize" in c.api:
            # every task issued before it that had ended when it returned; one an earlier synchronize of this
            # thread waited for is done already
            c.blocking = "sync"
            looked, pending = seen.get(c.thread, (0, []))
            upto = bisect.bisect_left(issue_times, c.start)
            pending = pending + by_issue[looked:upto]
            c.awaits = [j for j in pending if g.nodes[j].end <= c.end + tol]
            seen[c.thread] = (max(looked, upto), [j for j in pending if g.nodes[j].end > c.end + tol])
            last = max((g.nodes[j].end for j in c.awaits), default=c.start)
            c.tail = min(max(c.end - max(last, c.start), 0.0), c.end - c.start)


def _awaits_own(g: Graph, c: Call, own: list[Node]) -> None:
    """A call that waits for the tasks it queued: its tail after the last ends, its lead before the first
    starts (once its stream is free); both within the call."""
    c.blocking = "own"
    c.awaits = [n.index for n in own]
    last = max(n.end for n in own)
    c.tail = min(max(c.end - last, 0.0), c.end - c.start)
    first = min(own, key=lambda n: n.start)
    prev = _stream_prev(g, first)
    busy_until = max(c.start, prev.end if prev is not None else c.start)
    c.lead = min(max(first.start - busy_until, 0.0), c.end - c.start)


def _host_call_notes(g: Graph, calls: list[Call]) -> None:
    syncs = sum(1 for c in calls if c.blocking == "sync")
    if syncs:
        g.notes.append(f"{syncs} synchronize calls wait for every task issued before them that had ended by the "
                       f"time they returned (the profile does not say which stream or event they waited on)")
    unlinked = sum(1 for n in g.nodes if n.call is None)
    if unlinked:
        g.notes.append(f"{unlinked} device tasks have no host call joined to them (no connection id): each may "
                       f"start at its measured start if its stream was idle before it")


def _stream_prev(g: Graph, n: Node) -> Node | None:
    return g.nodes[g.streams[(n.device, n.stream)][n.position - 1]] if n.position > 0 else None


def _event_dependencies(g: Graph) -> None:
    """Each wait after its record: the latest record of the same event issued before the wait, where the profile
    names events; else the latest record of another stream that ended by the time the wait ended."""
    tol = g.tolerance
    records = [n for n in g.nodes if n.kind == "record"]
    waits = [n for n in g.nodes if n.kind == "wait"]
    if not waits:
        return

    def issued(n: Node) -> float:
        return g.calls[n.call].start if n.call is not None else n.start

    def event(n: Node) -> str | None:
        return n.task.event or (g.profile.calls[n.call].event if n.call is not None else None)

    by_event: dict[str, list[tuple[float, int]]] = {}
    for r in records:
        if event(r) is not None:
            by_event.setdefault(event(r), []).append((issued(r), r.index))
    for entries in by_event.values():
        entries.sort()
    by_end = sorted(records, key=lambda r: (r.end, r.index))
    ends = [r.end for r in by_end]
    other = _previous_of_another_stream(by_end)
    unmatched = 0
    for w in waits:
        ev = event(w)
        match, how = None, ""
        if ev is not None and ev in by_event:
            entries = by_event[ev]
            k = bisect.bisect_right(entries, (issued(w), math.inf)) - 1
            if k >= 0:
                match, how = g.nodes[entries[k][1]], "event id"
        if match is None:
            k = bisect.bisect_right(ends, w.end + tol) - 1
            if k >= 0 and (by_end[k].device, by_end[k].stream) == (w.device, w.stream):
                k = other[k]
            if k >= 0:
                match, how = by_end[k], "paired by time"
        if match is None:
            unmatched += 1
            continue
        w.deps.append(match.index)
        g.event_deps.append({"wait": w.index, "record": match.index, "how": how})
    paired = sum(1 for d in g.event_deps if d["how"] == "paired by time")
    if paired:
        g.notes.append(f"{paired} event waits name no event: each waits for the latest EVENT_RECORD of another stream "
                       f"that had ended by the time the wait ended")
    if unmatched:
        g.notes.append(f"{unmatched} event waits have no record before them in the profile: they wait for nothing")


def _previous_of_another_stream(nodes: list[Node]) -> list[int]:
    """For each place k of `nodes`, the last place before k whose node is on another stream than node k's (-1:
    none): a wait looking back past its own stream's records jumps there at once."""
    out: list[int] = []
    for k, n in enumerate(nodes):
        if k == 0:
            out.append(-1)
        elif (nodes[k - 1].device, nodes[k - 1].stream) != (n.device, n.stream):
            out.append(k - 1)
        else:
            out.append(out[k - 1])
    return out


def _infer_dependencies(g: Graph) -> None:
    """A profile without event rows: a task that started while its stream was idle, with no host call explaining
    it, right after a task of another stream ended (within tolerance), waits for that task."""
    tol = g.tolerance
    ends = sorted((n.end, n.index) for n in g.nodes)
    end_times = [e for e, _ in ends]
    for key, order in g.streams.items():
        for pos, j in enumerate(order):
            n = g.nodes[j]
            prev = g.nodes[order[pos - 1]] if pos else None
            ready = prev.end if prev is not None else -math.inf
            if n.start <= ready + tol:
                continue  # its stream explains the start
            if n.call is not None and _queued(g.calls[n.call]) >= n.start - tol:
                continue  # the host queued it just then
            lo = bisect.bisect_left(end_times, n.start - tol)
            hi = bisect.bisect_right(end_times, n.start + tol / 2)
            cands = [g.nodes[i] for _, i in ends[lo:hi]]
            cands = [c for c in cands if (c.device, c.stream) != key and c.end <= n.start + tol / 2
                     and not (c.device == n.device and _same_resource(c, n))]
            if not cands:
                continue
            after = max(cands, key=lambda c: (c.end, c.index))
            n.deps.append(after.index)
            g.inferred.append({"task": n.index, "after": after.index, "gap_us": (n.start - after.end) * 1e6})
    if g.inferred:
        g.notes.append(f"the profile has no event record / wait rows: {len(g.inferred)} cross-stream dependencies "
                       f"inferred from the timeline (a task that started on an idle stream, with no host call "
                       f"explaining it, within {g.tolerance * 1e6:.2f} us of the end of a task of another stream, "
                       f"waits for it)")
    else:
        g.notes.append("the profile has no event record / wait rows and its timeline shows no cross-stream "
                       "dependency: the streams are replayed independently")


def infer_tolerance(g: Graph) -> tuple[float, str]:
    """(tolerance, how) for a graph without event rows: for each task that started on an idle stream with no
    host call explaining the start, the gap since the latest end of a task of another stream (not the same kind
    on its device) up to AUTO_MAX; the gaps clustered LINK apart; the largest cluster's widest gap plus MARGIN
    (at least TOLERANCE). Real record-to-wait gaps of 3.8-4.5 us give 5 us."""
    gaps = sorted(_idle_start_gaps(g))
    if not gaps:
        return TOLERANCE, f"default {TOLERANCE * 1e6:g} us (no idle-stream start follows another stream's end " \
                          f"within {AUTO_MAX * 1e6:g} us)"
    clusters: list[list[float]] = [[gaps[0]]]
    for gap in gaps[1:]:
        if gap - clusters[-1][-1] <= LINK:
            clusters[-1].append(gap)
        else:
            clusters.append([gap])
    best = max(clusters, key=len)  # the first of the largest: the smallest gaps win a tie
    tol = max(TOLERANCE, best[-1] + MARGIN)
    return tol, (f"inferred from the profile: {len(best)} of {len(gaps)} idle-stream starts follow the end of a "
                 f"task of another stream by {best[0] * 1e6:.2f}-{best[-1] * 1e6:.2f} us")


def _idle_start_gaps(g: Graph) -> list[float]:
    """The gaps `infer_tolerance` clusters (seconds)."""
    ends = sorted((n.end, n.index) for n in g.nodes)
    end_times = [e for e, _ in ends]
    out = []
    for key, order in g.streams.items():
        for pos, j in enumerate(order):
            n = g.nodes[j]
            ready = g.nodes[order[pos - 1]].end if pos else -math.inf
            k = bisect.bisect_right(end_times, n.start) - 1
            for _ in range(8):  # the latest end of another stream's task of another kind, a few ends back
                if k < 0 or end_times[k] < n.start - AUTO_MAX or end_times[k] <= ready:
                    break
                c = g.nodes[ends[k][1]]
                if (c.device, c.stream) != key and not (c.device == n.device and _same_resource(c, n)):
                    call = g.calls[n.call] if n.call is not None else None
                    if call is None or _queued(call) < c.end:  # the host had queued it before the other ended
                        out.append(n.start - c.end)
                    break
                k -= 1
    return out


def _queued(c: Call) -> float:
    """By when a call had queued its tasks: its return, or for a call that blocks on its own tasks (a synchronous
    copy: it queues at once, then waits) its start."""
    return c.start if c.blocking == "own" else c.end


def _same_resource(a: Node, b: Node) -> bool:
    """Both copies (an SDMA engine changing hands) or both kernels (the AI core)."""
    copies = ("copy", "group", "fill")
    return (a.kind in copies and b.kind in copies) or (a.kind == "kernel" and b.kind == "kernel")


def _release(g: Graph, n: Node) -> float | None:
    """When a task no host call queued may start: its measured start if its stream was idle before it and
    nothing else explains the start (the host queued it then), else when its stream gets to it."""
    prev = _stream_prev(g, n)
    ready = max([prev.end if prev is not None else -math.inf] + [g.nodes[d].end for d in n.deps])
    return n.start if n.start > ready + g.tolerance else None


# -- re-timing ---------------------------------------------------------------------------------------------------
@dataclass
class Retimed:
    """A graph re-timed on a product: each node's and call's start and end (seconds), the machine's records
    and the calls as (api, thread, start, end) for the traces."""

    product: str
    starts: np.ndarray
    ends: np.ndarray
    call_starts: np.ndarray
    call_ends: np.ndarray
    records: object  # models.trace.TaskLog
    host_memory: str

    @property
    def step(self) -> float:
        return float(max(np.max(self.ends, initial=0.0), np.max(self.call_ends, initial=0.0)))

    def host_calls(self, graph: Graph) -> list[tuple]:
        return [(c.api, c.thread, float(self.call_starts[c.index]), float(self.call_ends[c.index]))
                for c in graph.calls]


def _product(p) -> config.Product:
    return p if isinstance(p, config.Product) else config.load(p)


def _check_devices(graph: Graph, product: config.Product) -> None:
    have = product.hardware.num_devices
    for d in graph.devices:
        if d >= have:
            row = next((t.row for n in graph.nodes for t in n.tasks if t.device == d or t.src == d or t.dst == d), None)
            raise ReplayError(f"{graph.profile.path}: row {row}: field 'device': the profile uses device {d}; "
                              f"{product.name} has {have} device{'s' if have != 1 else ''}")


def _pageable(node_task, host_memory: str) -> bool:
    if node_task.direction not in ("h2d", "d2h"):
        return False
    if host_memory == "pageable":
        return True
    return host_memory == "as-profiled" and node_task.memory == "pageable"


def _make_task(graph: Graph, n: Node, sim: Machine, host_memory: str) -> Task:
    if n.kind == "copy":
        t = n.task
        src, dst = n.ends(t)
        if _pageable(t, host_memory):
            return Task(STAGED, nbytes=t.nbytes, device=t.device, src=src, dst=dst, label=n.label)
        chunk = -(-t.nbytes // t.tasks) if t.tasks > 1 and t.nbytes else 0
        return Task.copy(t.nbytes, t.device, src, dst, n.label, None, chunk)
    if n.kind == "group":
        parts = []
        for t in n.tasks:
            src, dst = n.ends(t)
            parts.append(Task.copy(t.nbytes, t.device, src, dst, n.label, None,
                                   -(-t.nbytes // t.tasks) if t.tasks > 1 and t.nbytes else 0))
        return Task(GROUP, device=n.device, parts=parts, label=n.label)
    if n.kind == "fill":
        return Task(FILL, nbytes=n.task.nbytes, device=n.device, src=n.device, dst=n.device, label=n.label)
    if n.kind == "kernel" and n.device not in graph.free_kernels:
        return Task(KERNEL, device=n.device, duration=n.duration, label=n.label)
    if n.kind == "record":
        return Task(MARKER, device=n.device, label=f"record event {n.task.event or f'n{n.index}'}")
    if n.kind == "wait":
        ev = n.task.event or (f"n{n.deps[0]}" if n.deps else f"n{n.index}")
        return Task(MARKER, device=n.device, label=f"wait event {ev}")
    # measured duration, no resource held: a task the host "completes" after its duration
    task = Task(HOSTFUNC, device=n.device, label=n.label)
    duration = max(n.duration, 0.0)

    def done(task=task, duration=duration):
        sim.complete(task, sim.now + duration)

    task.on_start = done
    return task


class _Replay:
    """One re-timing in progress: the machine and the graph's tasks on it, the host threads issuing the calls.
    A node reaches its stream's queue only once its call is issued (or at once if no call queues it), in its
    stream's order; a blocking call holds its thread until every task it awaits has ended."""

    def __init__(self, graph: Graph, p: config.Product, host_memory: str):
        self.graph = graph
        self.sim = sim = Machine(p.hardware)
        self.env = sim.env
        self.tasks = tasks = [_make_task(graph, n, sim, host_memory) for n in graph.nodes]
        for n, t in zip(graph.nodes, tasks):
            if n.deps:
                t.waits = tuple(tasks[d] for d in n.deps)
        self.streams = {key: sim.stream(f"dev{key[0]}/stream{key[1]}", key[0]) for key in graph.streams}
        self.cursor = {key: 0 for key in graph.streams}  # the next node of each stream to submit
        self.queued = [False] * len(graph.nodes)  # its call has been issued (or no call queues it)
        for n in graph.nodes:
            self.queued[n.index] = n.call is None
        self.submit_at = [0.0] * len(graph.nodes)
        calls = graph.calls
        self.call_start = np.zeros(len(calls))
        self.call_end = np.zeros(len(calls))
        self.threads: dict[int, list[Call]] = {}
        for c in calls:
            self.threads.setdefault(c.thread, []).append(c)
        for cs in self.threads.values():
            cs.sort(key=lambda c: (c.start, c.index))
        self.nxt = {th: 0 for th in self.threads}  # each thread's next call
        self.clock = {th: 0.0 for th in self.threads}  # when each thread's previous call returned
        # thread -> [its blocking call, when it was issued, how many of its awaited tasks are known to have ended]
        self.blocked: dict[int, list] = {}

    def feed(self, key) -> None:
        """Submit the stream's nodes, in order, up to the first one not queued yet."""
        graph, cursor, queued = self.graph, self.cursor, self.queued
        order = graph.streams[key]
        while cursor[key] < len(order) and queued[order[cursor[key]]]:
            n = graph.nodes[order[cursor[key]]]
            at = self.submit_at[n.index] if n.call is not None else (n.release if n.release is not None else 0.0)
            self.sim.submit(self.streams[key], self.tasks[n.index], max(at, self.env.now))
            cursor[key] += 1

    def issue(self, c: Call, start: float) -> None:
        """The call made at `start`: its nodes queued (after its lead if it blocks on them, else at its
        return); a call that does not block returns after its measured duration."""
        self.call_start[c.index] = start
        at = start + (c.lead if c.blocking == "own" else c.end - c.start)
        for j in c.nodes:
            self.submit_at[j] = at
            self.queued[j] = True
        for key in {(self.graph.nodes[j].device, self.graph.nodes[j].stream) for j in c.nodes}:
            self.feed(key)
        if c.blocking:
            self.blocked[c.thread] = [c, start, 0]
        else:
            self.call_end[c.index] = self.clock[c.thread] = start + (c.end - c.start)
            self.nxt[c.thread] += 1

    def unblock(self) -> None:
        """Return the blocking calls whose awaited tasks have all ended, their measured tail after the last. Each
        call's awaited tasks are checked in order from the first not known to have ended, so each is passed over
        once however many times the call is looked at."""
        tasks = self.tasks
        for th, entry in list(self.blocked.items()):
            c, start, done = entry
            awaits = c.awaits
            while done < len(awaits) and tasks[awaits[done]].end is not None:
                done += 1
            entry[2] = done
            if done == len(awaits):
                last = max((tasks[j].end for j in awaits), default=start)
                self.call_end[c.index] = self.clock[th] = max(last, start) + c.tail
                del self.blocked[th]
                self.nxt[th] += 1

    def run(self) -> None:
        """Interleave the machine's events and the threads' calls in time order (an event first on a tie),
        until every call has returned; then let the machine finish."""
        env, threads, nxt, clock, blocked = self.env, self.threads, self.nxt, self.clock, self.blocked
        for key in self.graph.streams:
            self.feed(key)
        while True:
            self.unblock()
            ready = [(clock[th] + cs[nxt[th]].gap, th) for th, cs in threads.items()
                     if th not in blocked and nxt[th] < len(cs)]
            when, th = min(ready) if ready else (math.inf, None)
            if th is None and not blocked:
                break
            if env.peek() < when:
                env.step()
                continue
            if th is None:  # blocked calls, and nothing left to simulate
                c = next(iter(blocked.values()))[0]
                raise ReplayError(f"{self.graph.profile.path}: row {self.graph.profile.calls[c.index].row}: host "
                                  f"call {c.api} waits for device tasks that never run")
            self.issue(threads[th][nxt[th]], when)
        env.run()


def retime(graph: Graph, product, host_memory: str = "as-profiled") -> Retimed:
    """The graph re-timed on `product` (a name, a config path or a Product) in timing-only mode: the device tasks
    on the machine's streams, engines, links and AI cores, the host calls issued as the profile timed them
    (gaps and durations measured; a blocking call returns when what it waits for is done, plus its measured
    tail)."""
    if host_memory not in HOST_MEMORY:
        raise ValueError(f"host memory {host_memory!r}: expected one of {', '.join(HOST_MEMORY)}")
    p = _product(product)
    _check_devices(graph, p)
    with profiles.collector_paused():
        replay = _Replay(graph, p, host_memory)
        replay.run()
    tasks = replay.tasks
    stuck = [n for n, t in zip(graph.nodes, tasks) if t.end is None]
    if stuck:
        n = stuck[0]
        raise ReplayError(f"{graph.profile.path}: row {n.task.row}: {len(stuck)} device tasks never ran on "
                          f"{p.name} (the first waits for a task that never completes)")
    return Retimed(p.name, np.array([t.start for t in tasks], dtype=float),
                   np.array([t.end for t in tasks], dtype=float),
                   replay.call_start, replay.call_end, replay.sim.records, host_memory)


# -- comparing ---------------------------------------------------------------------------------------------------
def _resource_classes(n: Node) -> list[str]:
    if n.kind in ("copy", "group") or (n.kind == "fixed" and n.task.kind == "copy"):
        out = ["SDMA"]
        for t in n.tasks:
            if t.direction == "h2d":
                out.append("host link H2D")
            elif t.direction == "d2h":
                out.append("host link D2H")
            elif t.direction == "d2d":
                src, dst = n.ends(t)
                if src != dst:
                    out.append("peer links")
        return sorted(set(out))
    if n.kind == "fill":
        return ["SDMA"]
    if n.kind == "kernel":
        return ["compute"]
    return []


def resources(graph: Graph, starts, ends) -> dict[str, float]:
    """Busy milliseconds of each resource class (the time at least one of its tasks ran, over all devices)."""
    spans: dict[str, tuple[list, list]] = {r: ([], []) for r in RESOURCES}
    starts, ends = _floats(starts), _floats(ends)
    for n in graph.nodes:
        for r in _resource_classes(n):
            spans[r][0].append(starts[n.index])
            spans[r][1].append(ends[n.index])
    return {r: covered(*v) * 1e3 for r, v in spans.items()}


def _copy_parts(hw, n: Node) -> tuple[float, float] | None:
    """(latency, transfer) seconds of a copy with the machine to itself, from the model's closed form."""
    if n.kind != "copy":
        return None
    t = n.task
    src, dst = n.ends(t)
    route = hw.route(src, dst)
    chunk = -(-t.nbytes // t.tasks) if t.tasks > 1 and t.nbytes else 0
    alone = hw.alone(src, dst, t.nbytes, chunk)
    latency = 0.0 if route == "h2h" else hw.latency(route) * (-(-t.nbytes // chunk) if chunk and t.nbytes else 1)
    return latency, alone - latency


def _why(delta: float, parts_base, parts_new, measured: float, base: float, replayed: float,
         pageable: bool) -> tuple[str, dict]:
    """Why a copy's time changed, from the measured time through the model on the measured product (`base`) to
    the replay: the largest, in the direction of the change, of the changes in latency, in transfer time at the
    link's rate (bandwidth), in time lost sharing (contention: what the copy took beyond its closed form), and
    the model's own error on the measured product (model residual). The four add up to the change."""
    if abs(delta) <= SAME * measured:
        return "same", {}
    terms = {"model residual": base - measured}
    if parts_base is not None and parts_new is not None and not pageable:
        lat_b, bw_b = parts_base
        lat_n, bw_n = parts_new
        terms.update({"latency": lat_n - lat_b, "bandwidth": bw_n - bw_b,
                      "contention": (replayed - lat_n - bw_n) - (base - lat_b - bw_b)})
    else:
        terms["staging (pageable)" if pageable else "-"] = replayed - base
    sign = 1 if delta > 0 else -1
    best = max(terms, key=lambda k: sign * terms[k])
    return best, {k: v * 1e6 for k, v in terms.items()}


def _parts_by_shape(hw):
    """`_copy_parts` of `hw` for a node, computed once per copy shape (ends, bytes, DMA tasks): a profile repeats
    a few shapes many times."""
    known: dict[tuple, tuple[float, float] | None] = {}

    def parts(n: Node) -> tuple[float, float] | None:
        if n.kind != "copy":
            return None
        t = n.task
        key = (n.ends(t), t.nbytes, t.tasks)
        if key not in known:
            known[key] = _copy_parts(hw, n)
        return known[key]

    return parts


def _copy_rows(graph: Graph, run: Retimed, hw_new, hw_base, base_durations) -> list[dict]:
    rows = []
    parts_base, parts_new = _parts_by_shape(hw_base), _parts_by_shape(hw_new)
    ends, starts = run.ends.tolist(), run.starts.tolist()
    base_durations = base_durations.tolist()
    for n in graph.nodes:
        if n.kind not in ("copy", "group"):
            continue
        measured = n.duration
        replayed = ends[n.index] - starts[n.index]
        delta = replayed - measured
        pageable = n.kind == "copy" and _pageable(n.task, run.host_memory)
        why, terms = _why(delta, parts_base(n), parts_new(n), measured, base_durations[n.index], replayed, pageable)
        if n.kind == "group" and why != "same":
            why = "batch"
        rows.append({"task": n.index, "row": n.task.row, "name": n.label, "device": n.device, "stream": n.stream,
                     "direction": n.direction or "mixed", "bytes": n.nbytes, "measured_us": measured * 1e6,
                     "replayed_us": replayed * 1e6, "change_pct": (delta / measured * 100) if measured > 0 else 0.0,
                     "why": why, "terms_us": terms})
    return rows


def _floats(values) -> list[float]:
    """An array's values as a list of Python floats (indexed and compared many times: a list is faster)."""
    return values.tolist() if isinstance(values, np.ndarray) else [float(v) for v in values]


def _segments(graph: Graph, starts, ends, call_starts, call_ends) -> list[dict]:
    """Gantt bars, ms from the step's start: a row per stream ("dev0 stream 3") and per host thread."""
    out = []
    starts, ends, call_starts, call_ends = map(_floats, (starts, ends, call_starts, call_ends))
    for n in graph.nodes:
        if n.kind in ("copy", "group") or (n.kind == "fixed" and n.task.kind == "copy"):
            kind = COLOURS_OF.get(n.direction or "", "copy")
            if kind == "D2D":
                src, dst = n.ends()
                kind = "peer" if src != dst else "D2D"
        elif n.kind == "kernel":
            kind = "kernel"
        elif n.kind in ("record", "wait"):
            continue
        else:
            kind = "other"
        out.append({"row": f"dev{n.device} stream {n.stream}", "kind": kind, "start_ms": starts[n.index] * 1e3,
                    "end_ms": ends[n.index] * 1e3})
    threads = {}
    for c in graph.calls:
        no = threads.setdefault(c.thread, len(threads) + 1)
        if call_ends[c.index] > call_starts[c.index]:
            out.append({"row": f"host thread {no}", "kind": "host", "start_ms": call_starts[c.index] * 1e3,
                        "end_ms": call_ends[c.index] * 1e3})
    return out


def calibration_rows(graph: Graph) -> list[dict]:
    """The measured copies that ran alone (no other copy or memset of their device at the same time), one row
    each, in the CSV layout `acl-emu calibrate` reads (size, direction, memory, pattern, count, us)."""
    alone: set[int] = set()
    by_device: dict[int, list[Node]] = {}
    for n in graph.nodes:
        if n.kind in ("copy", "group", "fill") or (n.kind == "fixed" and n.task.kind in ("copy", "fill")):
            by_device.setdefault(n.device, []).append(n)
    for spans in by_device.values():
        spans.sort(key=lambda n: (n.start, n.end))
        reach = -math.inf  # the latest end of the spans before this one
        for i, n in enumerate(spans):
            nxt = spans[i + 1].start if i + 1 < len(spans) else math.inf
            if reach <= n.start and nxt >= n.end:
                alone.add(n.index)
            reach = max(reach, n.end)
    rows = []
    for n in graph.nodes:
        if n.index not in alone or n.kind != "copy" or n.direction not in ("h2d", "d2h", "d2d"):
            continue
        if n.duration <= 0 or n.task.tasks > 1:
            continue
        src, dst = n.ends()
        direction = "p2p" if n.direction == "d2d" and src != dst else n.direction
        memory = "device" if direction in ("d2d", "p2p") else ("pageable" if n.task.memory == "pageable" else "pinned")
        rows.append({"size": n.nbytes, "direction": direction, "memory": memory, "pattern": "async", "count": 1,
                     "us": round(n.duration * 1e6, 3)})
    return rows


def _measured_step(graph: Graph) -> float:
    return max([n.end for n in graph.nodes] + [c.end - 0.0 for c in graph.calls])


def replay(profile, products=None, measured_on=None, host_memory: str = "as-profiled",
           tolerance: float | None = None, window: tuple | None = None, steps: tuple | None = None,
           msprof=None) -> dict:
    """A profile re-timed on each product (names, config paths or Products; default the default product) and
    compared with what was measured, plus the model's copy times on the product the profile was measured on
    (`measured_on`, default 910B) next to the measured ones. tolerance: seconds (None: see `build_graph`);
    window: (start_us, end_us) since the profile's first event and steps: (first, last) step ids, the part of the
    profile replayed (`profiles.window`); msprof: a path where the first product's run is also written in the
    msprof timeline layout (`write_msprof_replay`'s file, from this run: the profile is timed once). Returns
    plain data (see `replay_report`)."""
    with profiles.collector_paused():
        prof = _windowed(profile, window, steps)
        return _replay(prof, products, measured_on, host_memory, tolerance, msprof)


def _windowed(profile, window: tuple | None, steps: tuple | None) -> Profile:
    """The profile (loaded if a path), cut to the window and steps when given."""
    prof = profile if isinstance(profile, Profile) else profiles.load(profile)
    if window is None and steps is None:
        return prof
    start, end = window if window is not None else (None, None)
    return profiles.window(prof, start, end, steps)


def nothing_retimed(graph: Graph) -> str:
    """A plain statement when no task of the graph is re-timed by the model (no copy or memset with a size and a
    direction: every task replays its measured duration), else ""."""
    if any(n.kind in ("copy", "group", "fill") for n in graph.nodes):
        return ""
    copies = sum(1 for n in graph.nodes if n.task.kind in ("copy", "fill"))
    why = (f"none of its {copies} copies and memsets has a size and a direction (in its device rows or its host "
           f"call's arguments)" if copies else "it has no copy or memset")
    return (f"Nothing could be re-timed: {why}, so every task replays its measured duration on every product and "
            f"the steps below differ from the measured one only through the host calls and the stream order.")


def _replay(prof: Profile, products, measured_on, host_memory: str, tolerance: float | None, msprof=None) -> dict:
    graph = build_graph(prof, tolerance)
    products = [products] if isinstance(products, (str, os.PathLike, config.Product)) else list(products or [])
    products = [_product(p) for p in products] or [config.load(config.DEFAULT_PRODUCT)]
    base = _product(measured_on or config.DEFAULT_PRODUCT)
    measured_starts = np.array([n.start for n in graph.nodes])
    measured_ends = np.array([n.end for n in graph.nodes])
    call_s = np.array([c.start for c in graph.calls])
    call_e = np.array([c.end for c in graph.calls])
    step = _measured_step(graph)
    measured = {"label": "measured", "step_ms": step * 1e3,
                "resources_ms": resources(graph, measured_starts, measured_ends),
                "segments": _segments(graph, measured_starts, measured_ends, call_s, call_e)}
    base_run = retime(graph, base, "as-profiled")  # the model on the measured product, as it was measured
    base_durations = base_run.ends - base_run.starts
    runs = []
    for p in products:
        same = p.path == base.path and host_memory == "as-profiled"
        run = base_run if same else retime(graph, p, host_memory)
        if msprof is not None and not runs:
            _write_msprof(msprof, graph, run)
        rows = _copy_rows(graph, run, p.hardware, base.hardware, base_durations)
        runs.append(_run_summary(graph, run, rows, step, p))
    validation_run = (base_run, _copy_rows(graph, base_run, base.hardware, base.hardware, base_durations))
    validation = _validation(base, validation_run[1], validation_run[0], step)
    return {
        "profile": prof.path,
        "format": prof.format,
        "measured_on": base.name,
        "host_memory": host_memory,
        "tolerance_us": graph.tolerance * 1e6,
        "tolerance_how": graph.tolerance_how,
        "tolerance_suggestion": _tolerance_suggestion(graph),
        "nothing_retimed": nothing_retimed(graph),
        "graph": {"tasks": len(prof.tasks), "nodes": len(graph.nodes), "streams": len(graph.streams),
                  "devices": graph.devices, "copies": sum(1 for n in graph.nodes if n.kind in ("copy", "group")),
                  "kernels": sum(1 for n in graph.nodes if n.kind == "kernel"),
                  "host_calls": len(graph.calls), "event_dependencies": len(graph.event_deps),
                  "event_dependencies_by_time": sum(1 for d in graph.event_deps if d["how"] == "paired by time"),
                  "inferred_dependencies": [{"task": graph.nodes[d["task"]].label,
                                             "row": graph.nodes[d["task"]].task.row,
                                             "after": graph.nodes[d["after"]].label,
                                             "after_row": graph.nodes[d["after"]].task.row,
                                             "gap_us": d["gap_us"]} for d in graph.inferred]},
        "notes": graph.notes,
        "unknown_types": dict(prof.unknown),
        "fixed": _fixed(graph),
        "measured": measured,
        "runs": runs,
        "validation": validation,
        "calibration_rows": calibration_rows(graph),
    }


def _tolerance_suggestion(graph: Graph) -> str:
    """For a tolerance given on a profile without event rows: the value its gaps suggest, when another."""
    if graph.tolerance_how != "given" or any(n.kind in ("record", "wait") for n in graph.nodes):
        return ""
    tol, how = infer_tolerance(graph)
    if not how.startswith("inferred") or abs(tol - graph.tolerance) < 0.05e-6:
        return ""
    return f"the profile's gaps suggest --tolerance-us {tol * 1e6:.2f} ({how.split(': ', 1)[1]})"


def _fixed(graph: Graph) -> dict[str, int]:
    """Tasks replayed with their measured duration, by why and type: {"unknown task type: FOO": 2, ...}."""
    out: dict[str, int] = {}
    for n in graph.nodes:
        if n.kind == "fixed":
            key = f"{n.why_fixed}: {n.task.type}"
            out[key] = out.get(key, 0) + 1
    return out


def _run_summary(graph: Graph, run: Retimed, rows: list[dict], measured_step: float, p: config.Product) -> dict:
    faster = sum(1 for r in rows if r["why"] != "same" and r["replayed_us"] < r["measured_us"])
    slower = sum(1 for r in rows if r["why"] != "same" and r["replayed_us"] > r["measured_us"])
    whys: dict[str, int] = {}
    for r in rows:
        if r["why"] != "same":
            whys[r["why"]] = whys.get(r["why"], 0) + 1
    return {"product": p.name, "label": p.name, "config": str(p.path), "step_ms": run.step * 1e3,
            "change_pct": (run.step - measured_step) / measured_step * 100 if measured_step > 0 else 0.0,
            "resources_ms": resources(graph, run.starts, run.ends),
            "copies": rows, "faster": faster, "slower": slower, "same": len(rows) - faster - slower, "why": whys,
            "segments": _segments(graph, run.starts, run.ends, run.call_starts, run.call_ends)}


def _validation(base: config.Product, rows: list[dict], run: Retimed, measured_step: float) -> dict:
    """The model's copy times on the measured product next to the measured ones: residual (model - measured) /
    measured of each copy, their median and worst, by direction."""
    res = [{"task": r["task"], "row": r["row"], "name": r["name"], "direction": r["direction"], "bytes": r["bytes"],
            "measured_us": r["measured_us"], "model_us": r["replayed_us"],
            "residual_pct": (r["replayed_us"] - r["measured_us"]) / r["measured_us"] * 100 if r["measured_us"] > 0
            else 0.0} for r in rows]
    errors = [abs(r["residual_pct"]) for r in res]
    by_dir: dict[str, list[float]] = {}
    for r in res:
        by_dir.setdefault(r["direction"], []).append(r["residual_pct"])
    return {"product": base.name, "copies": res, "count": len(res),
            "median_abs_pct": statistics.median(errors) if errors else 0.0,
            "worst_pct": max((r["residual_pct"] for r in res), key=abs, default=0.0),
            "by_direction": {d: {"count": len(v), "median_pct": statistics.median(v)}
                             for d, v in sorted(by_dir.items())},
            "step_ms": run.step * 1e3,
            "step_residual_pct": (run.step - measured_step) / measured_step * 100 if measured_step > 0 else 0.0}


# -- the msprof layout of a run ------------------------------------------------------------------------------------
def _ends_of(log) -> list[tuple]:
    """(src, dst, part) of each kept record of a TaskLog, in the order of its array()."""
    return [(r.src, r.dst, bool(r.part)) for r in log]


def write_msprof_replay(profile, product, path, host_memory: str = "as-profiled",
                        tolerance: float | None = None, window: tuple | None = None,
                        steps: tuple | None = None) -> Path:
    """The profile (or its window, `replay`) re-timed on `product`, written in the msprof timeline layout
    (models.msprof)."""
    with profiles.collector_paused():
        prof = _windowed(profile, window, steps)
        graph = build_graph(prof, tolerance)
        run = retime(graph, product, host_memory)
    return _write_msprof(path, graph, run)


def _write_msprof(path, graph: Graph, run: Retimed) -> Path:
    msprof_layout.write(path, run.records.array(), run.host_calls(graph), _ends_of(run.records))
    return Path(path)


def write_msprof_runtime(rt, path) -> Path:
    """A runtime's run (its kept records and host calls) written in the msprof timeline layout."""
    from ..runtime import queries

    records = rt.records()
    extra = [(t["src"], t["dst"], t["part"]) for t in queries.completed_tasks(rt)]
    msprof_layout.write(path, records, rt.host_calls, extra)
    return Path(path)


def write_msprof_overlap(product, result: dict, path) -> Path:
    """The best schedule of an `overlap.plan` result, run again (a schedule is deterministic), in the msprof
    timeline layout."""
    from . import overlap

    best = result["best"]
    run = overlap.Schedule(product, result["h2d_bytes"], result["d2h_bytes"], result["compute_us"], best["streams"],
                            best["chunks"], result["pageable"])
    return write_msprof_runtime(run.rt, path)


def graph_summary(graph: Graph) -> dict:
    """What the rebuilt graph holds, for tests and notebooks: per stream its node kinds in order, the event
    dependencies and the inferred ones (as (task label, after label))."""
    return {"streams": {f"dev{k[0]} stream {k[1]}": [graph.nodes[j].kind for j in v] for k, v in graph.streams.items()},
            "event_dependencies": [(graph.nodes[d["wait"]].label, graph.nodes[d["record"]].label, d["how"])
                                   for d in graph.event_deps],
            "inferred": [(graph.nodes[d["task"]].label, graph.nodes[d["after"]].label) for d in graph.inferred]}


__all__ = ["ProfileError", "ReplayError", "Graph", "Node", "Call", "Retimed", "build_graph", "retime", "replay",
           "resources", "calibration_rows", "write_msprof_replay", "write_msprof_runtime", "write_msprof_overlap",
           "graph_summary", "infer_tolerance", "nothing_retimed", "TOLERANCE", "HOST_MEMORY", "RESOURCES"]
