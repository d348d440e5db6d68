"""The machine: streams of tasks on DMA engines, links and compute, in simulated time.

Every device-side operation is a `Task` on a `Stream`. A stream runs its tasks
in order; a copy holds one DMA engine of its device and moves its bytes as a
flow across the links of its route (`network.Network` shares them max-min
fairly); a kernel holds a compute slot for its duration; a task may also wait
for tasks of other streams (event waits). When a task completes, its
`on_complete` callback runs at that simulated instant: that is where the
caller moves the bytes. A HOSTFUNC task, once reached, waits for the host to
complete it (`Machine.complete`): while one is open, `wait` lets the host
threads work through the `host_wait` hook when nothing is left to simulate.
Streams are small state machines driven by simpy event callbacks: a task costs
a few events, whatever its size. Nothing here knows about ACL.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from itertools import count
from typing import Callable, Iterable, NamedTuple, Sequence

import numpy as np
import simpy

from .hardware import HOST, Hardware, Tlp
from . import staging
from .clock import Clock, gc_pause, gc_resume
from .network import Link, Network
from .trace import ALL, PENDING, TaskLog, chunk_count, chunk_sizes

COPY, FILL, KERNEL, MARKER, GROUP, STAGED = "copy", "fill", "kernel", "marker", "group", "staged"
HOSTFUNC = "hostfunc"  # a task the host completes (a blocking host callback)
_SLACK = 1e-12  # seconds: a task due within this is due now
FEW_PARTS = 16  # a GROUP of fewer COPY tasks runs them one by one (`_begin_parts`), not as lanes
_SHAPES_KEPT = 4096  # the machine keeps the flows of at most this many task shapes (`Machine._shape`)


class Path(NamedTuple):
    """A route between two ends as a machine runs it (`Machine._path`): its `route` name; the `links` it
    crosses, the `weight` of a copy's flow on each and their `names`; the `latency` of each DMA task on it;
    `tlp`, where it crosses the PCIe host link (else None)."""
    route: str
    links: list
    weights: list
    names: tuple
    latency: float
    tlp: Tlp | None


class Shape(NamedTuple):
    """The fields of the flow of the tasks of one shape (`Machine._shape`, which keeps it as a plain tuple of
    these fields, in this order, for speed): their route's `route`, link `names`, `links` and
    `weights` (`Path`); the `wire` bytes the flow carries; the `tail`, seconds of fixed costs after its last
    byte."""
    route: str
    names: tuple
    links: list
    weights: list
    wire: float
    tail: float


class LanePlan(NamedTuple):
    """One lane of a batch route's entries (`Machine._lane_plan`): their positions among the route's entries
    (`entries`), their bytes, the `chunk` its record counts DMA tasks by (`_chunk_for`), and its `runs`, each
    (wire bytes, entries) (`_runs`)."""
    entries: np.ndarray
    nbytes: int
    chunk: int
    runs: list


class RoutePlan(NamedTuple):
    """A batch route's lanes (`Machine._lane_plan`); `alike`: they are the same (one run each, of the same bytes
    and entries), so that started together they run in step (`Machine._bundle`)."""
    alike: bool
    lanes: list


class Task:
    """One unit of device work. Times are simulated seconds.

    COPY moves `nbytes` from `src` to `dst` (device ids, None for the host); FILL writes
    `nbytes` of device memory; KERNEL runs for `duration`; MARKER completes when reached
    (an event record or wait); GROUP is a batch of copies, its `batch` (a `Batch`; or its `parts`,
    COPY tasks), run as lanes on its devices' engines (`Machine._lanes`); STAGED is a
    pageable copy through the driver's staging buffers; HOSTFUNC calls `on_start` when reached,
    then holds its stream until the host completes it (`Machine.complete`).

    Fields: every field is a slot, and there is no __dict__: setting one Task does not declare (a misspelt
    one) raises AttributeError. Each is set whenever a task is made, but the notes (`NOTES`): the fields a
    caller outside the model keeps on a task (the sanitizer's `sanitize_op` and `sanitize_capture`), which
    the model never sets nor reads: unset until the caller sets them, they read with `getattr(task, name,
    None)`. A caller with something more to note declares it in `NOTES`.
    """

    # Why every field is set when a task is made (`__init__` and `copy` set theirs, `_unrun` the rest): a set
    # slot reads and writes at the interpreter's fastest, where a class default read through the instance is
    # not specialized by CPython 3.11. The notes: `sanitize_op`, the ordering of the call that queued it;
    # `sanitize_capture`, what a captured task touches (`hasattr` is false while unset).
    NOTES = ("sanitize_op", "sanitize_capture")
    __slots__ = ("kind", "nbytes", "device", "src", "dst", "label", "on_complete", "chunk",
                 "stream", "submit", "start", "end", "engine", "route", "links", "held", "kind_asked", "kind_used",
                 "rows", "duration", "waits", "parts", "batch", "on_start", "error", "waiters", "_done", "_left",
                 "_parent", "_released") + NOTES
    # chunk: a copy the runtime splits into DMA tasks of this many bytes, run back to back. held: the pool its
    # engine or compute slot came from, while it holds one. kind_asked: a copy: its direction code as the caller
    # gave it (emu: aclrtMemcpyKind); kind_used: ... and as it ran (the runtime may correct it). rows: 2D
    # copies: row descriptors to process. batch: a GROUP's entries. waiters: the streams waiting for it.
    # _done: its simpy event, once asked for (`done_event`). _left: a parent: its parts not done yet.
    # _released: HOSTFUNC: the host has completed it (its end may still be due).

    def __init__(self, kind: str, *, nbytes: int = 0, device: int = 0, src: int | None = HOST,
                 dst: int | None = HOST, rows: int = 0, chunk: int = 0, label: str = "",
                 duration: float | None = None, waits: Iterable["Task"] = (), parts: Iterable["Task"] = (),
                 on_start: Callable[[], None] | None = None, on_complete: Callable[[], None] | None = None,
                 batch: "Batch | None" = None):
        self.kind, self.nbytes, self.device, self.src, self.dst, self.label = kind, nbytes, device, src, dst, label
        self.on_complete, self.chunk = on_complete, chunk
        _unrun(self)
        if rows:
            self.rows = rows
        self.duration = duration
        if waits:
            self.waits = tuple(waits)
        if parts:
            self.parts = tuple(parts)
        self.batch, self.on_start = batch, on_start

    @classmethod
    def copy(cls, nbytes: int, device: int, src: int | None, dst: int | None, label: str,
             on_complete: Callable[[], None] | None = None, chunk: int = 0, kind_asked: int | None = None,
             kind_used: int | None = None) -> "Task":
        """A COPY task, made quickly (positional arguments, the common fields only)."""
        t = cls.__new__(cls)
        t.kind, t.nbytes, t.device, t.src, t.dst, t.label, t.on_complete, t.chunk = COPY, nbytes, device, src, dst, \
            label, on_complete, chunk
        _unrun(t)
        t.kind_asked, t.kind_used = kind_asked, kind_used
        return t

    @property
    def completed(self) -> bool:
        return self.end is not None

    @property
    def chunks(self) -> int:
        """How many DMA tasks the runtime issues for this copy."""
        return chunk_count(self.nbytes, self.chunk)

    def chunk_sizes(self) -> list[int]:
        return chunk_sizes(self.nbytes, self.chunk)

    def clone(self) -> "Task":
        """A new, unsubmitted task doing the same work (graph replay)."""
        t = Task(self.kind, nbytes=self.nbytes, device=self.device, src=self.src, dst=self.dst, rows=self.rows,
                 chunk=self.chunk, label=self.label, duration=self.duration, waits=self.waits,
                 parts=tuple(p.clone() for p in self.parts), on_start=self.on_start, on_complete=self.on_complete,
                 batch=self.batch)
        if self.kind_asked is not None:
            t.kind_asked, t.kind_used = self.kind_asked, self.kind_used
        return t

    def __repr__(self) -> str:
        return (f"Task({self.kind}, {self.label!r}, route={self.route}, bytes={self.nbytes}, "
                f"submit={self.submit}, start={self.start}, end={self.end})")


def _unrun(t: Task) -> None:
    """The slots a task has before a stream runs it, and the defaults of those its maker may not set (a copy's
    kinds, none; the fields few tasks set: `Task.__init__` sets its own after)."""
    t.stream = t.submit = t.start = t.end = t.engine = t.route = t.held = t.kind_asked = t.kind_used = \
        t.duration = t.batch = t.on_start = t.error = t.waiters = t._done = t._parent = None
    t.links = t.waits = t.parts = ()
    t.rows = t._left = 0
    t._released = False


class Batch:
    """The entries of a batch copy (a GROUP task), by column: `nbytes` (an int64 array); `src` and `dst`, the
    ends (device ids, -1 for the host); `device`, whose engines run each entry; `kind`, the direction code each
    was asked as and runs as (-1: none). Each of those four is an int64 array, or an int when every entry has
    that value (one route: `_routes` needs no array work). Never changed once made: a captured batch replays
    as it is."""

    __slots__ = ("nbytes", "src", "dst", "device", "kind")

    def __init__(self, nbytes, src, dst, device, kind=-1):
        self.nbytes = np.asarray(nbytes, dtype=np.int64)
        self.src, self.dst, self.device, self.kind = map(_column, (src, dst, device, kind))

    def __len__(self) -> int:
        return len(self.nbytes)

    @classmethod
    def of(cls, parts: Sequence[Task]) -> "Batch":
        """The batch of COPY tasks: their sizes, ends, devices and the kinds they run as."""
        def ids(values):
            return [-1 if v is None else v for v in values]

        return cls([p.nbytes for p in parts], ids(p.src for p in parts), ids(p.dst for p in parts),
                   [p.device for p in parts], ids(p.kind_used for p in parts))

    def __repr__(self) -> str:
        return f"<Batch of {len(self)} entries, {int(self.nbytes.sum())} bytes>"


def _column(values) -> np.ndarray | int:
    """A `Batch` column: an int when one value is given for every entry, else an int64 array."""
    if values.__class__ is int:
        return values
    return int(values) if np.ndim(values) == 0 else np.asarray(values, dtype=np.int64)


class _Lane(Task):
    """One engine's share of a batch (`Machine._lanes`): its entries run back to back, as one COPY task of their
    bytes. `path` is their route's (`Machine._path`), `runs` their (wire bytes, entries) run by run (`_runs`),
    `entries` their places in the batch; `callbacks`, what runs when the lane is done (a GROUP of COPY parts:
    theirs). `step`: the next run; `flow`: (links, weights) its runs cross, from when it has its engine. Its
    fields are slots too, as Task's (`_lanes` sets them all)."""

    __slots__ = ("path", "runs", "step", "flow", "entries", "callbacks")

    def run_callbacks(self) -> None:
        """Every callback, in order, even when one raises (the first error is raised once all have run)."""
        error = None
        for callback in self.callbacks:
            try:
                callback()
            except Exception as exc:
                error = error or exc
        if error is not None:
            raise error


GREEDY_UP_TO = 256  # unequal entries: up to this many are dealt one by one, more in runs of equal cost
RUNS = 32  # a lane of unequal entries moves in at most this many runs ...
RUN_SHARE = 0.01  # ... each of whose bytes or fixed costs, the less, is about this share of the lane's time


def _deal(cost: np.ndarray, lanes: int) -> list[np.ndarray]:
    """A route's entries (their estimated costs, in order) dealt to at most `lanes` lanes: each lane's entries,
    in order. Alike entries, and many entries, go in runs of about equal cost (`_cuts`); a few unequal ones
    each to the lane that frees first, as the engines take a batch's entries."""
    n = len(cost)
    if lanes < n <= GREEDY_UP_TO and cost.min() != cost.max():
        free = [(0.0, lane) for lane in range(lanes)]
        owner = np.empty(n, dtype=np.int64)
        for j, c in enumerate(cost.tolist()):
            t, lane = heapq.heappop(free)
            owner[j] = lane
            heapq.heappush(free, (t + c, lane))
        return [np.flatnonzero(owner == lane) for lane in range(lanes)]
    cuts = _cuts(cost, lanes).tolist()
    return [np.arange(a, b) for a, b in zip(cuts[:-1], cuts[1:])]


PLANS_KEPT = 256  # batch lane plans a machine keeps (`Machine._lane_plan`); past it, it starts again


def _cuts(cost: np.ndarray, lanes: int) -> np.ndarray:
    """Where to cut a run of entries, kept in order, into at most `lanes` runs of about equal total cost: the
    boundaries, 0 first and len(cost) last. Each cut goes before or after the entry whose cost reaches its
    share, whichever lands nearer; so equal costs give runs whose lengths differ by at most one, and no more
    lanes than entries gives one entry a run."""
    n = len(cost)
    if lanes >= n:
        return np.arange(n + 1)
    cum = np.cumsum(cost)
    targets = cum[-1] * np.arange(1, lanes) / lanes
    reach = np.searchsorted(cum, targets)  # the entry whose cost reaches each share
    before = np.where(reach > 0, cum[reach - 1], 0.0)
    cuts = np.concatenate(([0], reach + (cum[reach] - targets <= targets - before), [n]))
    return cuts[np.concatenate(([True], cuts[1:] > cuts[:-1]))]  # (a costly entry may take several shares)


def _runs(wire: np.ndarray, byte_time: float, latency: float, phase: float = 0.0) -> list[tuple[float, int]]:
    """A lane's entries (their wire bytes, in order; a wire byte's time at the lane's share of the link, each
    entry's fixed cost) as runs of about as many entries each, (wire bytes, entries) a run.

    Unequal entries drift apart on the engines, one engine's fixed costs falling while the others move bytes.
    A run moves its bytes, then pays its fixed costs; the lanes' runs end at different points (`phase`, a
    share of a run: the first run is that much shorter), so one lane pays while the others move, and what
    runs cannot overlap is about the lesser of a run's bytes and fixed costs: there are enough runs (at most
    RUNS) for that to be RUN_SHARE of the lane's time. Alike entries move in step, paying their fixed costs
    together: one run."""
    n = len(wire)
    data, fixed = float(wire.sum()) * byte_time, latency * n
    k = 1 if wire.min() == wire.max() else min(RUNS, n, math.ceil(min(data, fixed) / (data + fixed) / RUN_SHARE))
    if k == 1:
        return [(float(wire.sum()), n)]
    cuts = np.ceil((np.arange(1, k) - phase) * n / k).astype(np.int64)
    bounds = np.unique(np.concatenate(([0], cuts, [n])))
    return list(zip(np.add.reduceat(wire, bounds[:-1]).tolist(), np.diff(bounds).tolist()))


def _chunk_for(sizes: np.ndarray) -> int:
    """The `chunk` that makes a lane's record count its entries as DMA tasks (`tasks` = ceil(bytes / chunk)):
    the entries' size when they are alike; otherwise the largest chunk that does it, if one does, else the
    mean entry (its record then counts a few tasks less)."""
    count, total = len(sizes), int(sizes.sum())
    if count == 1:
        return 0
    if sizes.min() == sizes.max():
        return int(sizes[0])
    chunk = (total - 1) // (count - 1)
    return chunk if chunk and -(-total // chunk) == count else -(-total // count)


_serials = count(1)


def _routes(batch: Batch) -> list[tuple[tuple[int, int, int, int], np.ndarray | None]]:
    """The entries of a batch by route ((engine device, src, dst, kind), their indices in order; None: all of
    them), the routes in the order of their first entries."""
    columns = (batch.device, batch.src, batch.dst, batch.kind)
    if all(c.__class__ is int for c in columns):  # (the usual batch: one route, said so)
        return [(columns, None)]
    n = len(batch)
    keys = np.stack([np.full(n, c, dtype=np.int64) if c.__class__ is int else c for c in columns])
    if (keys == keys[:, :1]).all():  # (one route after all)
        return [(tuple(keys[:, 0].tolist()), None)]
    found, first, inverse = np.unique(keys, axis=1, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    return [(tuple(found[:, r].tolist()), np.flatnonzero(inverse == r)) for r in np.argsort(first, kind="stable")]


class Stream:
    """A FIFO of tasks; runs one task at a time, in submission order. `serial`: unique in the process (the
    records name a stream by it)."""

    __slots__ = ("name", "device", "pending", "running", "last", "failed", "waking", "serial", "__weakref__")

    def __init__(self, name: str, device: int):
        self.name = name
        self.device = device
        self.serial = next(_serials)
        self.pending: deque[Task] = deque()
        self.running: Task | None = None
        self.last: Task | None = None  # the most recently submitted task
        self.failed: list[Task] = []  # completed tasks whose callback raised, until reported
        self.waking = False  # a wake-up at a task's submit time is scheduled

    @property
    def idle(self) -> bool:
        return self.last is None or self.last.completed


class Pool:
    """Identical units (DMA engines, compute slots) handed out first come, first served: `acquire(task, then)`
    runs `then(task, unit)` when a unit is free, `release(unit)` hands it to the next waiting task."""

    __slots__ = ("name", "free", "waiting")

    def __init__(self, name: str, n: int):
        self.name = name
        self.free = list(range(n - 1, -1, -1))
        self.waiting: deque[tuple[Task, Callable[[Task, int], None]]] = deque()

    def acquire(self, task: Task, then: Callable[[Task, int], None]) -> None:
        task.held = self
        if self.free:
            then(task, self.free.pop())
        else:
            self.waiting.append((task, then))

    def release(self, unit: int) -> None:
        if self.waiting:
            task, then = self.waiting.popleft()
            then(task, unit)
        else:
            self.free.append(unit)


class Machine:
    """Devices (engines, compute, memory), links and streams in one simpy environment.

    records: what the machine keeps of its completed tasks (`trace.TaskLog`): "all" (the default), an int N
    (the last N), None (none), or a path / file (each written as a JSON line, none kept). The totals (tasks,
    bytes by route, the latest end) count every task whatever is kept. A completed Task object is never
    kept: `records` gives compact rows (`trace.Row`) read like tasks.

    network: what shares the links among the copies' flows, on the clock the machine runs on (its `env`, a
    `clock.Clock`): by default a `network.Network` on a clock of its own; or another model with its interface
    (`send`, `alone`, `idle`), e.g. `reference.ReferenceNetwork(Clock())`, which recomputes every rate at every
    change: slow, and a check on the default (the same task times).
    """

    def __init__(self, hardware: Hardware, records=ALL, network=None):
        self.hardware = hw = hardware
        if network is None:
            network = Network(Clock())
        elif not isinstance(network.env, Clock):
            raise TypeError(f"Machine: the network runs on {type(network.env).__name__}, not a models.clock.Clock")
        self.env = network.env
        self.network = network
        n = hw.num_devices
        self.engines = [Pool(f"dev{d}.sdma", hw.engines_per_device) for d in range(n)]
        self.compute = [Pool(f"dev{d}.aicore", hw.kernel_slots) for d in range(n)]
        # What a task does when its stream reaches it, by kind: (pools, handler). With pools, the task first takes a
        # unit of its device's pool (an engine, a compute slot) and `handler(task, unit)` runs when it has one;
        # without, `handler(task)` runs at once.
        self._begin_kind = {COPY: (self.engines, self._transfer), FILL: (self.engines, self._transfer),
                            KERNEL: (self.compute, self._kernel), GROUP: (None, self._begin_group),
                            STAGED: (None, self._begin_staged), HOSTFUNC: (None, self._begin_hostfunc),
                            MARKER: (None, self._begin_marker)}
        self.links: dict[str, Link] = {}
        self._paths: dict[tuple, Path] = {}
        self._shapes: dict[tuple, tuple] = {}  # the flows of task shapes met (`_shape`)
        self._plans: dict[tuple, RoutePlan] = {}  # a batch route's lanes by its entries' sizes (`_lane_plan`)
        # bytes/s one DMA engine moves on a route, where the route has such a limit (Hardware.per_engine)
        self._per_engine = {r: hw.per_engine(r) for r in ("h2d", "d2h", "sio", "hccs", "ub") if hw.per_engine(r)}
        self.records = TaskLog(records)
        self._done_tasks = self.records.pending  # _finish appends here; the log turns them into rows
        self.host_open = 0  # HOSTFUNC tasks submitted and not yet completed
        # Called by `wait` when nothing is left to simulate but HOSTFUNC tasks are open: let the host
        # threads work (it returns to re-check, or raises if no host thread can ever do the work).
        self.host_wait: Callable[[], None] | None = None

    @property
    def now(self) -> float:
        return self.env.now

    def stream(self, name: str, device: int) -> Stream:
        return Stream(name, device)

    # -- links --------------------------------------------------------------------------
    def link(self, name: str, capacity: float) -> Link:
        link = self.links.get(name)
        if link is None:
            link = self.links[name] = Link(name, capacity)
        return link

    def _path(self, key: tuple) -> Path:
        """The `Path` (route, links, weights, link names, latency, TLP) of a route between two ends, built once
        and kept, from the hardware's plan of it (`Hardware.plan`). TLP: (payload, overhead) per TLP where the
        route crosses the PCIe host link, else None."""
        kind, src, dst = key
        route, spec, latency, tlp = self.hardware.plan(kind != COPY, src, dst)
        links, weights, names = [], [], []
        for name, cap, w in spec:
            links.append(self.link(name, cap))
            weights.append(w)
            names.append(name)
        path = self._paths[key] = Path(route, links, weights, tuple(names), latency, tlp)
        return path

    # -- submitting and running ------------------------------------------------------------
    def submit(self, stream: Stream, task: Task, at: float) -> Task:
        """Queue `task` on `stream`; it may not start before host time `at`."""
        task.stream = stream
        task.submit = at
        if task.kind == HOSTFUNC:
            self.host_open += 1
        stream.pending.append(task)
        stream.last = task
        if stream.running is None and not stream.waking:
            self._step(stream, self.env.now)
        return task

    def _step(self, stream: Stream, now: float) -> None:
        """Start the stream's next tasks while it can (`now`: the simulated time)."""
        pending = stream.pending
        due = now + _SLACK  # (simulated time does not move while the stream starts its tasks)
        while pending and stream.running is None:
            task = pending[0]
            if task.submit > due:
                stream.waking = True
                self.env.call(task.submit - now, self._wake, stream)
                return
            for dep in task.waits:
                if dep.end is None:
                    if dep.waiters is None:
                        dep.waiters = []
                    dep.waiters.append(stream)
                    return
            pending.popleft()
            stream.running = task
            pools, begin = self._begin_kind[task.kind]
            if pools is None:
                begin(task)
            else:
                pools[task.device].acquire(task, begin)

    def _wake(self, stream: Stream) -> None:
        stream.waking = False
        if stream.running is None:
            self._step(stream, self.env.now)

    # -- what each kind of task does when its stream reaches it (`_begin_kind`) ---------------------------
    def _begin_group(self, task: Task) -> None:  # a batch: its lanes at once, each on an engine of its device
        task.start = self.env.now
        if task.batch is None and len(task.parts) < FEW_PARTS:  # a few copy tasks: each takes an engine
            self._begin_parts(task)
            return
        routes = self._lanes(task, task.batch if task.batch is not None else Batch.of(task.parts))
        lanes = [lane for _, route_lanes in routes for lane in route_lanes]
        if task.batch is None:  # COPY parts: each one's callback runs when its lane is done
            for lane in lanes:
                lane.callbacks = tuple(task.parts[i].on_complete for i in lane.entries.tolist()
                                       if task.parts[i].on_complete is not None)
                lane.on_complete = lane.run_callbacks if lane.callbacks else None
        task._left = len(lanes)
        if not lanes:
            self._finish(task)
        for alike, route_lanes in routes:
            pool = self.engines[route_lanes[0].device]
            if self._in_step(alike, route_lanes, pool):
                links, weights, wire, tail = self._bundle(route_lanes, pool, self.env.now)
                self.network.send(links, wire, self._finish_all, weights, tail, route_lanes)
            else:
                for lane in route_lanes:
                    pool.acquire(lane, self._run_lane)

    def _begin_parts(self, task: Task) -> None:
        """A GROUP of a few COPY tasks, each on an engine of its device as it frees, the GROUP done when they
        are: what the lanes reproduce for more (the same times for entries of one size), cheaper for a few."""
        task._left = len(task.parts)
        if not task.parts:
            self._finish(task)
        for part in task.parts:
            part._parent = task
            part.stream, part.submit = task.stream, task.submit
            self.engines[part.device].acquire(part, self._transfer)

    def _lanes(self, group: Task, batch: Batch) -> list[tuple[bool, list[_Lane]]]:
        """A batch's entries dealt to its devices' DMA engines as lanes, each lane a chain of entries run back to
        back on one engine. The entries of one route (engine device, ends, kind) go to as many lanes as the
        device has engines (fewer when there are fewer entries), of about equal cost (`_deal`). A lane moves
        in runs (`_runs`: one run when its entries are alike): a run is one flow carrying its entries' wire
        bytes (a TLP header per MPS of each entry's payload on PCIe), its tail their fixed costs (the route's
        latency each). The GROUP is done when its lanes are.

        Why this is a fair picture of the driver's batch: the runtime makes one driver call for the whole
        batch (hicann/runtime src/runtime/api/impl/api_impl.cc ApiImpl::MemcpyBatch calls the driver's
        batch copy once), which hands the entries to the device's SDMA engines as a descriptor list; each
        engine works through its share back to back, paying a fixed cost per descriptor, while the link
        carries the bytes of every engine at once. Alike entries keep the engines in step: each round of
        entries shares the link, then pays its fixed cost, so a lane of them (its bytes at the shared rate,
        then its fixed costs) ends when its last entry would, one flow and one engine per entry. Unequal
        entries drift apart, one engine's fixed cost falling while the others move bytes; runs keep that up to
        the size of a run. Either way the simulation pays a few flows and a record a lane, where one flow and
        one engine per entry paid a flow, an engine hand-over and a record for every entry. Routes of one
        device queue for its engines in the order of their first entries, as the entries of a batch did.

        Returns each route's (alike, lanes): alike, its lanes are the same (one run each, of the same bytes and
        entries), so that started together they run in step (`_bundle`)."""
        if not len(batch):
            return []
        routes = []
        for route, idx in _routes(batch):
            device, src, dst, kind = route
            path = self._path_of((COPY, None if src < 0 else src, None if dst < 0 else dst))
            plan = self._lane_plan(route, path, batch.nbytes if idx is None else batch.nbytes[idx])
            lanes: list[_Lane] = []
            for mine in plan.lanes:
                lane = _Lane.copy(mine.nbytes, device, None if src < 0 else src, None if dst < 0 else dst, group.label,
                                  None, mine.chunk, None if kind < 0 else kind, None if kind < 0 else kind)
                lane.path, lane.runs = path, mine.runs
                lane.entries = mine.entries if idx is None else idx[mine.entries]
                lane.step, lane.flow, lane.callbacks = 0, (), ()
                lane.stream, lane.submit, lane._parent = group.stream, group.submit, group
                lanes.append(lane)
            routes.append((plan.alike, lanes))
        return routes

    def _lane_plan(self, route: tuple, path: Path, sizes: np.ndarray) -> RoutePlan:
        """The lanes of one route's entries (of `sizes` bytes each; see `_lanes`). A pure function of the route
        and the sizes on this machine, kept for the routes and sizes met, so a program repeating its batches
        (the usual case) plans each kind once."""
        key = (route, sizes.tobytes())
        plan = self._plans.get(key)
        if plan is None:
            device = route[0]
            wire = self._wire(sizes, path)
            k = min(self.hardware.engines_per_device, len(sizes))
            byte_time = k / self._rate(path, device, k)  # a wire byte's time, the lanes sharing the link
            lanes = [LanePlan(mine, int(sizes[mine].sum()), _chunk_for(sizes[mine]),
                              _runs(wire[mine], byte_time, path.latency, i / k))
                     for i, mine in enumerate(_deal(path.latency + wire * byte_time, k))]
            one_run = all(len(lane.runs) == 1 for lane in lanes)
            plan = RoutePlan(one_run and len({(lane.nbytes, lane.runs[0]) for lane in lanes}) == 1, lanes)
            if len(self._plans) >= PLANS_KEPT:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _path_of(self, key: tuple) -> Path:
        path = self._paths.get(key)
        return path if path is not None else self._path(key)

    @staticmethod
    def _wire(sizes: np.ndarray, path: Path) -> np.ndarray:
        """The wire bytes of copies of `sizes` bytes each on a route: on PCIe, a TLP header per MPS of payload."""
        tlp = path.tlp
        if not tlp:
            return sizes.astype(np.float64)
        return sizes + (-(-sizes // tlp.payload)) * float(tlp.overhead)

    def _rate(self, path: Path, device: int, engines: int) -> float:
        """Wire bytes per second `engines` lanes of a route get together with the machine to themselves."""
        route, links, weights = path.route, path.links, path.weights
        if route == "h2h":
            return self.hardware.host_memcpy_bandwidth
        rate = min(link.capacity / w for link, w in zip(links, weights))
        cap = self._per_engine.get(route)
        return min(rate, cap * engines) if cap else rate

    def _run_lane(self, lane: _Lane, engine: int) -> None:
        """A lane has its engine: its runs one after the other (`_lane_step`), on the links `_transfer` gives one
        copy (a host-to-host lane is the driver's memcpy; an engine's own limit applies on A3)."""
        lane.engine = engine
        lane.start = self.env.now
        route, links, weights, names, _, _ = lane.path
        lane.route = route
        if route == "h2h":
            self._after(lane.nbytes / self.hardware.host_memcpy_bandwidth, lane)
            return
        if self._per_engine and route in self._per_engine:
            links, weights = self._with_engine(lane.device, engine, route, links, weights)
        lane.links = names
        lane.flow = (links, weights)
        self._lane_step(lane)

    def _lane_step(self, lane: _Lane) -> None:
        """A lane's next run: its bytes as one flow, then its entries' latencies; after the last, it is done."""
        if lane.step == len(lane.runs):
            self._finish(lane)
            return
        wire, entries = lane.runs[lane.step]
        lane.step += 1
        links, weights = lane.flow
        self.network.send(links, wire, self._lane_step, weights, lane.path.latency * entries, lane)

    def _in_step(self, alike: bool, lanes: list[_Lane], pool: Pool) -> bool:
        """Whether a route's lanes run in step (`_bundle`): alike, over links (not the host's memcpy), and each gets
        an engine now."""
        return alike and len(pool.free) >= len(lanes) and not pool.waiting and lanes[0].path.route != "h2h"

    def _bundle(self, lanes: list[_Lane], pool: Pool, start: float) -> tuple:
        """Alike lanes of one route, each taking an engine of `pool` and starting at `start`, run in step: as one
        flow of one lane's bytes with `len(lanes)` times a lane's weight on the route's links, across every lane's
        engine link where the route has them (`_with_engine`). Max-min fairness gives it the rate it gives each
        of theirs, with whatever else shares the links (k equal flows filled together are one flow of k times
        the weight), so it ends when they would: one flow and one report for the lot. Returns its (links,
        weights, wire bytes, tail)."""
        path = lanes[0].path
        route, names, k = path.route, path.names, len(lanes)
        links, weights = list(path.links), [w * k for w in path.weights]
        own = self._per_engine and route in self._per_engine
        for lane in lanes:
            lane.held = pool
            lane.engine = engine = pool.free.pop()
            lane.start, lane.route, lane.links, lane.step = start, route, names, 1
            if own:
                links.append(self._engine_link(lane.device, engine, route))
                weights.append(1.0)
        (wire, entries), = lanes[0].runs  # (alike lanes: one run each, the same)
        return links, weights, wire, path.latency * entries

    def _finish_all(self, lanes: list[_Lane]) -> None:
        for lane in lanes:
            self._finish(lane)

    def _begin_staged(self, task: Task) -> None:  # a pageable copy through the staging buffers
        task.start = self.env.now
        done = self.env.process(staging.pipeline(self.env, self.hardware.staging, task.nbytes, task.dst is not HOST,
                                                 lambda size: self._part(task, size)))
        done.callbacks.append(lambda _: self._finish(task))

    def _begin_marker(self, task: Task) -> None:  # an event record or wait: done when reached
        task.start = self.env.now
        self._finish(task)

    def _begin_hostfunc(self, task: Task) -> None:  # tell the host, then wait for it (`complete`)
        task.start = self.env.now
        if task.on_start is not None:
            self._call(task, task.on_start)

    def _transfer(self, task: Task, engine: int) -> None:
        task.engine = engine
        task.start = self.env.now
        if task.on_start is not None:  # e.g. a descriptor read, which may set nbytes and the ends
            self._call(task, task.on_start)
        flow = self._flow(task, engine)
        if flow is None:  # a host-to-host copy done by the driver
            self._after(task.nbytes / self.hardware.host_memcpy_bandwidth, task)
            return
        links, weights, wire, tail = flow
        self.network.send(links, wire, self._finish, weights, tail, task)

    def _flow(self, task: Task, engine: int) -> tuple | None:
        """(links, weights, wire bytes, tail seconds) of a COPY or FILL task's flow on `engine`, with its route
        and links noted on the task; None for a host-to-host copy (no flow: the driver's memcpy)."""
        kind = task.kind
        key = (kind, task.src, task.dst, task.nbytes, task.chunk, task.rows) if kind == COPY else \
            (FILL, task.device, task.device, task.nbytes, task.chunk, task.rows)
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shape(key)
        route, names, links, weights, wire, tail = shape
        if kind == COPY:
            task.route = route
            if route == "h2h":
                return None
            if self._per_engine and route in self._per_engine:
                links, weights = self._with_engine(task.device, engine, route, links, weights)
        task.links = names
        return links, weights, wire, tail

    def _with_engine(self, device: int, engine: int, route: str, links: list, weights: list) -> tuple[list, list]:
        """A copy's links and weights on `engine` of `device`, with the engine's own limit on its route (A3: one
        DMA engine moves at most 57 GB/s over the host link: `_engine_link`)."""
        return [*links, self._engine_link(device, engine, route)], [*weights, 1.0]

    def _engine_link(self, device: int, engine: int, route: str) -> Link:
        """The link of `engine`'s own limit on `route`. The engine runs one task at a time, so its link carries one
        flow: one link per engine and route."""
        name = f"dev{device}.dma{engine}" if route in ("h2d", "d2h") else f"dev{device}.dma{engine}.{route}"
        return self.link(name, self._per_engine[route])

    def _shape(self, key: tuple) -> tuple:
        """The `Shape` (route, link names, links, weights, wire bytes, tail) of the flow of a task of `key`
        (kind, source, destination, bytes, chunk, rows), kept for the tasks of its shape to come: the route's path
        (`_path_of`) and the copy's cost on it (`_cost`). At most _SHAPES_KEPT shapes are kept: past that,
        the memo starts again."""
        kind, src, dst, nbytes, chunk, rows = key  # (a plain tuple: `_flow` makes one a task, to look it up)
        route, links, weights, names, latency, tlp = self._path_of((kind, src, dst))
        wire, tail = self._cost(nbytes, chunk, rows, latency, tlp)
        if len(self._shapes) >= _SHAPES_KEPT:
            self._shapes.clear()
        shape = self._shapes[key] = (route, names, links, weights, wire, tail)  # (a plain tuple: `_flow`, a task's
        # hot path, unpacks it, which CPython 3.11 specializes for a tuple, not for a NamedTuple: `Shape` names it)
        return shape

    def _cost(self, n: int, chunk: int, rows: int, latency: float, tlp: Tlp | None) -> tuple[float, float]:
        """(wire bytes, tail seconds) of a copy of `n` bytes (split into DMA tasks of `chunk`; `rows` row
        descriptors) on a route of `latency` per DMA task: on PCIe (`tlp`), a TLP header per MPS of payload in
        each DMA task."""
        chunks = -(-n // chunk) if chunk and n else 1
        if tlp:
            mps = tlp.payload
            tlps = -(-n // mps) if not chunk or chunk % mps == 0 else \
                n // chunk * -(-chunk // mps) + -(-(n % chunk) // mps)
            wire = n + tlps * tlp.overhead
        else:
            wire = n
        return wire, latency * chunks + rows * self.hardware.row_overhead

    def _kernel(self, task: Task, slot: int) -> None:
        """A kernel holds its compute slot from here: `kernel_dispatch` to hand it to the cores, then its work,
        which is its span (start to end), as a profile shows it."""
        task.engine = slot
        dispatch = self.hardware.kernel_dispatch
        if dispatch > 0:
            self.env.at(self.env.now + dispatch, self._run_kernel, task)
        else:
            self._run_kernel(task)

    def _run_kernel(self, task: Task) -> None:
        task.start = self.env.now
        if task.on_start is not None:
            self._call(task, task.on_start)
        self._after(task.duration or 0.0, task)

    def _after(self, delay: float, task: Task) -> None:
        if delay > 0:
            self.env.at(self.env.now + delay, self._finish, task)
        else:
            self._finish(task)

    def _part(self, parent: Task, size: int) -> simpy.Event:
        """Start one DMA chunk of a staged copy; the event fires when it is done."""
        part = Task(COPY, nbytes=size, device=parent.device, src=parent.src, dst=parent.dst, label=parent.label)
        part.stream, part.submit, part._parent = parent.stream, parent.submit, parent
        done = self.env.event()
        part.on_complete = done.succeed
        self.engines[part.device].acquire(part, self._transfer)
        return done

    def _finish(self, task: Task) -> None:
        task.end = now = self.env.now
        held = task.held
        if held is not None:
            task.held = None
            held.release(task.engine)
        elif task.kind == HOSTFUNC:
            self.host_open -= 1
        if task.on_complete is not None:
            self._call(task, task.on_complete)
            task.on_complete = None  # let go of the buffers
        if task.on_start is not None:
            task.on_start = None
        done = self._done_tasks
        done.append(task)
        if len(done) >= PENDING:
            self.records.flush()
        if task._done is not None:
            task._done.succeed()
        parent = task._parent
        if parent is not None:
            if parent._left > 0:
                parent._left -= 1
                if parent._left == 0:
                    self._finish(parent)
            return
        if task.waiters:
            waiters, task.waiters = task.waiters, None
            for stream in waiters:
                if stream.running is None and not stream.waking:
                    self._step(stream, now)
        stream = task.stream
        if stream is not None and stream.running is task:
            stream.running = None
            if stream.pending:
                self._step(stream, now)

    @staticmethod
    def _call(task: Task, callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception as exc:  # keep the simulation alive; the caller reports it (the first error)
            if task.error is None:
                task.error = exc
                if task.stream is not None:
                    task.stream.failed.append(task)

    # -- running the simulation --------------------------------------------------------------
    def run_until(self, t: float) -> None:
        """Advance simulated time to `t`, completing everything due by then."""
        env = self.env
        if env.peek() > t:
            return  # nothing due; later submissions wait for their own submit time
        gc_was = gc_pause()
        try:
            if t > env.now:
                env.run(until=t)
            else:
                while env.peek() <= env.now:
                    env.step()
        finally:
            gc_resume(gc_was)

    def step_until(self, t: float, stop: Callable[[], bool]) -> None:
        """Complete what is due by `t` (math.inf: everything scheduled), one event at a time, until `stop()` is
        true or nothing is left. Unlike `run_until`, simulated time does not move past the last event (a host
        thread polling for work)."""
        env = self.env
        gc_was = gc_pause()
        try:
            while not stop() and not env.empty and env.peek() <= t:
                env.step()
        finally:
            gc_resume(gc_was)

    def complete(self, task: Task, at: float) -> None:
        """The host has done a reached HOSTFUNC task at time `at`: it completes then (now, if the machine is
        already past `at`)."""
        if task.kind != HOSTFUNC or task.start is None or task._released:
            raise ValueError(f"{task!r} is not a reached, open HOSTFUNC task")
        task._released = True
        self._after(max(at - self.env.now, 0.0), task)

    def done_event(self, task: Task) -> simpy.Event:
        if task._done is None:
            task._done = self.env.event()
            if task.completed:
                task._done.succeed()
        return task._done

    def blocking(self, stream: Stream, task: Task, submit: float) -> float:
        """Submit `task` on `stream` at host time `submit` and run until it completes; return its completion time.

        When nothing else is in flight (no event due, no flow on any link, the stream idle) a COPY or FILL with no
        start hook and a free engine, or a batch (GROUP) whose lanes run in step (`_bundle`), runs in closed
        form: alone, its flow moves at its links' narrowest rate from its start, so its end is known at once,
        and the clock moves there with no event (`Clock.skip`: nothing else is scheduled). The outcome (times,
        engines, route, link bytes and busy time, records) is that of `submit` + `wait`."""
        kind = task.kind
        if (task.on_start is None and not task.waits and task._parent is None and stream.running is None
                and not stream.pending and not stream.waking and self.network.idle and self.env.empty):
            if kind == COPY or kind == FILL:
                pool = self.engines[task.device]
                if pool.free and not pool.waiting:
                    self._alone(stream, task, submit, pool.free[-1])
                    return task.end
            elif kind == GROUP and task.batch is not None and self._group_alone(stream, task, submit):
                return task.end
        self.submit(stream, task, submit)
        return self.wait(task)

    def _alone(self, stream: Stream, task: Task, submit: float, engine: int) -> None:
        """`blocking`'s closed form of a COPY or FILL: the task runs on `engine` from `submit` (or now) with nothing
        else in flight."""
        start = self._occupy(stream, task, submit)
        task.engine, task.start = engine, start
        flow = self._flow(task, engine)
        if flow is None:
            end = start + task.nbytes / self.hardware.host_memcpy_bandwidth
        else:
            links, weights, wire, tail = flow
            end = self.network.alone(links, weights, wire, start) + tail
        self._skip_to(start, submit, end)
        self._finish(task)

    def _group_alone(self, stream: Stream, task: Task, submit: float) -> bool:
        """`blocking`'s closed form of a batch of one route whose lanes run in step (`_in_step`), as `_bundle` runs
        them from `submit` (or now) with nothing else in flight; False, and nothing done, for another batch."""
        task.stream, task.submit = stream, submit  # (what its lanes copy)
        routes = self._lanes(task, task.batch)
        if len(routes) != 1:
            return False
        alike, lanes = routes[0]
        pool = self.engines[lanes[0].device]
        if not self._in_step(alike, lanes, pool):
            return False
        start = self._occupy(stream, task, submit)
        task.start, task._left = start, len(lanes)
        links, weights, wire, tail = self._bundle(lanes, pool, start)
        self._skip_to(start, submit, self.network.alone(links, weights, wire, start) + tail)
        self._finish_all(lanes)  # (the last one finishes the batch)
        return True

    def _occupy(self, stream: Stream, task: Task, submit: float) -> float:
        """A closed form's task takes its idle stream at host time `submit`; returns when it starts: the clock a
        wake-up at `submit` gives, or now."""
        now = self.env.now
        task.stream, task.submit = stream, submit
        stream.last = stream.running = task
        return now + (submit - now) if submit > now else now

    def _skip_to(self, start: float, submit: float, end: float) -> None:
        """Move the clock to a closed form's `end` as a timer set at `start` would take it there: it skips to the
        start first only where rounding would otherwise give another end than the stream's wake-up at `submit`
        and a timer from there give."""
        env = self.env
        now = env.now
        if start > now and (end <= start or now + (end - now) != start + (end - start)):
            env.skip(submit - now)
            now = start
        if end > now:  # (nothing else is scheduled)
            env.skip(end - now)

    def wait(self, task: Task) -> float:
        """Run until `task` completes, one event at a time (open HOSTFUNC tasks may need the host threads:
        `host_wait`); return its completion time."""
        if task.end is None:
            step = self.env.step
            gc_was = gc_pause()
            try:
                while task.end is None:
                    try:
                        step()
                    except simpy.core.EmptySchedule:  # nothing left to simulate
                        if self.host_open and self.host_wait is not None:
                            self.host_wait()
                        else:
                            why = ("host work and no host thread can do it" if self.host_open
                                   else "work that never runs")
                            raise RuntimeError(f"{task.label or task.kind}: waits for {why}") from None
            finally:
                gc_resume(gc_was)
        return task.end
