"""The machine: streams of tasks scheduled on DMA engines in simulated time.

Every device-side operation is a `Task` on a `Stream`. A stream runs its tasks
in order; a copy holds one DMA engine of its device for its duration; a task
may also wait for other tasks (event waits). When a task completes, its
`on_complete` callback runs at that simulated instant: that is where the caller
moves the bytes. Nothing here knows about ACL.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Iterable

import simpy

from .hardware import Hardware

COPY, FILL, KERNEL, MARKER = "copy", "fill", "kernel", "marker"


class Task:
    """One unit of device work. Times are simulated seconds."""

    __slots__ = ("kind", "route", "nbytes", "device", "stream", "label", "duration", "waits",
                 "on_start", "on_complete", "done", "submit", "start", "end", "engine", "error")

    def __init__(self, kind: str, *, route: str | None = None, nbytes: int = 0, device: int = 0,
                 label: str = "", duration: float | None = None, waits: Iterable["Task"] = (),
                 on_start: Callable[[], None] | None = None, on_complete: Callable[[], None] | None = None):
        self.kind = kind
        self.route = route
        self.nbytes = int(nbytes)
        self.device = device
        self.label = label
        self.duration = duration
        self.waits = tuple(waits)
        self.on_start = on_start
        self.on_complete = on_complete
        self.stream = None
        self.done: simpy.Event | None = None
        self.submit = self.start = self.end = None
        self.engine = None
        self.error: BaseException | None = None

    @property
    def completed(self) -> bool:
        return self.end is not None

    def clone(self) -> "Task":
        """A new, unsubmitted task doing the same work (graph replay)."""
        return Task(self.kind, route=self.route, nbytes=self.nbytes, device=self.device, label=self.label,
                    duration=self.duration, waits=self.waits, on_start=self.on_start,
                    on_complete=self.on_complete)

    def __repr__(self) -> str:
        return (f"Task({self.kind}, {self.label!r}, route={self.route}, bytes={self.nbytes}, "
                f"submit={self.submit}, start={self.start}, end={self.end})")


class Stream:
    """A FIFO of tasks; runs one task at a time, in submission order."""

    __slots__ = ("name", "device", "pending", "busy", "last", "failed")

    def __init__(self, name: str, device: int):
        self.name = name
        self.device = device
        self.pending: deque[Task] = deque()
        self.busy = False
        self.last: Task | None = None  # the most recently submitted task
        self.failed: list[Task] = []  # completed tasks whose callback raised, until reported

    @property
    def idle(self) -> bool:
        return self.last is None or self.last.completed


class Machine:
    """A simpy environment with the devices' DMA engines and the streams on them."""

    def __init__(self, hardware: Hardware, num_devices: int):
        self.hardware = hardware
        self.env = simpy.Environment()
        self.engines = []
        for _ in range(num_devices):
            pool = simpy.Store(self.env)
            pool.items.extend(range(hardware.engines_per_device))
            self.engines.append(pool)
        self.records: list[Task] = []

    @property
    def now(self) -> float:
        return self.env.now

    def stream(self, name: str, device: int) -> Stream:
        return Stream(name, device)

    def submit(self, stream: Stream, task: Task, at: float) -> Task:
        """Queue `task` on `stream`; it may not start before host time `at`."""
        task.stream = stream
        task.submit = at
        task.done = self.env.event()
        stream.pending.append(task)
        stream.last = task
        if not stream.busy:
            stream.busy = True
            self.env.process(self._run(stream))
        return task

    def duration(self, task: Task) -> float:
        if task.duration is not None:
            return task.duration
        if task.kind == FILL:
            return self.hardware.routes["d2d"].latency + task.nbytes / self.hardware.device_fill_bandwidth
        if task.route is None:
            return 0.0
        return self.hardware.routes[task.route].duration(task.nbytes)

    def _run(self, stream: Stream):
        env = self.env
        pending = stream.pending
        while pending:
            task = pending.popleft()
            if task.submit > env.now:
                yield env.timeout(task.submit - env.now)
            for dep in task.waits:
                if not dep.completed:
                    yield dep.done
            if task.kind in (COPY, FILL):
                pool = self.engines[task.device]
                task.engine = yield pool.get()
                task.start = env.now
                if task.on_start is not None:  # e.g. a descriptor read: may set nbytes
                    self._call(task, task.on_start)
                yield env.timeout(self.duration(task))
                pool.put(task.engine)
            else:
                task.start = env.now
                if task.on_start is not None:
                    self._call(task, task.on_start)
                d = self.duration(task)
                if d:
                    yield env.timeout(d)
            self._complete(task)
        stream.busy = False

    @staticmethod
    def _call(task: Task, callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception as exc:  # keep the simulation alive; the caller reports it
            if task.error is None:
                task.error = exc
                task.stream.failed.append(task)

    def _complete(self, task: Task) -> None:
        task.end = self.env.now
        if task.on_complete is not None:
            self._call(task, task.on_complete)
        task.on_start = task.on_complete = None  # let go of the buffers
        self.records.append(task)
        task.done.succeed()

    # -- running the simulation ------------------------------------------------
    def run_until(self, t: float) -> None:
        """Advance simulated time to `t`, completing everything due by then."""
        env = self.env
        if env.peek() > t:
            return  # nothing due; tasks submitted later wait for their own submit time
        if t > env.now:
            env.run(until=t)
        else:
            while env.peek() <= env.now:
                env.step()

    def wait(self, task: Task) -> float:
        """Run until `task` completes; return its completion time."""
        if not task.completed:
            self.env.run(until=task.done)
        return task.end
