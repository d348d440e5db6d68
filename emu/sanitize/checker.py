"""The detector: what the runtime tells the sanitizer, and what it concludes.

The runtime owns the semantics; the sanitizer observes. Each hook below is called from the runtime behind a
single `if rt.sanitizer is not None` (see emu/runtime): a task queued on a stream with the byte ranges it
reads and writes, a host thread's own accesses (blocking copies and fills, reads through acl.util), waits
(every synchronize, queries that report completion, blocking calls that drain a stream), host callbacks,
frees and unregistrations, stream destruction and device resets, capture and replay. The program's threads
add theirs (threads.py): a thread's start and join, a pool task's submit and result.

Every check asks the one happens-before relation these edges make (ranges.happens_before, ranges.ordered).

From these it keeps vector clocks (clocks.py) and, per allocation, the accesses not yet made redundant
(ranges.py), and reports (report.py):
- race: two accesses to overlapping bytes, at least one a write, neither ordered before the other, by
  device tasks (of any streams and devices) or by a task and another host thread;
- host: the host and its own queued work: reading bytes a queued task writes, writing bytes it reads or
  writes, before waiting for it; a copy's source changed by the host between enqueue and execution (a
  fingerprint taken at each, functional mode only); freeing or unregistering memory queued work uses;
  destroying a stream or releasing a device with work the host has not waited for; waiting on an event
  never recorded;
- init: device bytes read (a copy's source, a kernel argument declared read) that nothing wrote.
Each is reported once per pair of call sites (and counted).
"""
from __future__ import annotations

import math
import threading
import weakref

from . import report, sites, threads
from .clocks import Agent, join
from .fingerprint import Fingerprint
from .ranges import INIT, READ, WRITE, Shadow, happens_before

TOOLS = ("race", "host", "init")
_MODES = {"r": READ | INIT, "w": WRITE, "rw": READ | WRITE | INIT, "u": READ | WRITE}


def parse_tools(value) -> frozenset[str]:
    """The checks `sanitize=` asks for: True or "all" (every one), a comma-separated string or a sequence of
    names from TOOLS; False, None or "" for none. Anything else is a ValueError naming the bad part."""
    if value is None or value is False:
        return frozenset()
    if value is True:
        return frozenset(TOOLS)
    if isinstance(value, str):
        parts = [p.strip().lower() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple, set, frozenset)):
        parts = [str(p).strip().lower() for p in value]
    else:
        raise ValueError(f"sanitize={value!r}: expected True, a comma-separated list of {', '.join(TOOLS)}, "
                         f"or 'all'")
    if parts == ["all"]:
        return frozenset(TOOLS)
    bad = [p for p in parts if p not in TOOLS]
    if bad:
        raise ValueError(f"{', '.join(repr(b) for b in bad)} is not a sanitizer check: choose from "
                         f"{', '.join(TOOLS)} (or all)")
    return frozenset(parts)


class StreamAgent(Agent):
    """A stream's clock, and how the report names it."""

    __slots__ = ("name", "device", "handle", "created", "model")

    def __init__(self, agent_id: int, name: str, device: int, handle: int, created, model: str):
        super().__init__(agent_id)
        self.name, self.device, self.handle, self.created, self.model = name, device, handle, created, model


class ThreadAgent(Agent):
    """A host thread's clock, and how the report names it. `callback`: the blocking callback it is running
    (its accesses are the stream's, at the callback's place in it)."""

    __slots__ = ("number", "name", "ident", "thread", "callback")

    def __init__(self, agent_id: int, number: int, base: dict):
        super().__init__(agent_id, base)
        current = threading.current_thread()
        self.number, self.name, self.ident, self.thread = number, current.name, threading.get_ident(), current
        self.callback = None


class Op:
    """One API call's place in the happens-before order, and what the report says of it: a queued task
    (`task`, on `stream`) or a host thread's own access (`host`). Every byte range the call touches refers
    to its Op."""

    __slots__ = ("agent", "n", "base", "api", "site", "task", "stream", "thread", "host", "time", "captured")

    def __init__(self, agent: int, n: int, base: dict, api: str, site: tuple, task, stream, thread, host: bool,
                 time: float, captured=None):
        self.agent, self.n, self.base, self.api, self.site = agent, n, base, api, site
        self.task, self.stream, self.thread, self.host, self.time = task, stream, thread, host, time
        self.captured = captured  # a replayed task: (site, api) of the call captured into the model


class Replay:
    """What a captured task touches, handed back when its model is replayed (`Sanitizer.captured`)."""

    __slots__ = ("access", "site", "api")

    def __init__(self, access, site, api):
        self.access, self.site, self.api = access, site, api


def _api_of(task) -> str:
    """The API that queued `task` (called while it is queued): a kernel task is a kernel launch or a model
    execution (aclmdlExecuteAsync), named with its label."""
    label, kind = task.label, task.kind
    if kind == "kernel":
        return f"{sites.current_api(3) or 'aclrtLaunchKernel'} ({label})"
    if kind == "marker" or kind == "hostfunc":
        if label.startswith("record event"):
            return "aclrtRecordEvent"
        if label.startswith("wait event"):
            return "aclrtStreamWaitEvent"
        if label.startswith("callback"):
            return f"aclrtLaunchCallback ({label[9:]})"
    return label


class Sanitizer:
    """The observer a runtime made with `configure(sanitize=...)` calls (`rt.sanitizer`).

    findings: what it found so far (report.Finding); `report()` the text, `to_dict()` the JSON, `finish()` runs
    the queued work to its end first (so every copy's source is checked) and returns the findings."""

    def __init__(self, rt, tools=TOOLS):
        self.rt = rt
        self.tools = frozenset(tools)
        self.check_races = "race" in self.tools
        self.check_host = "host" in self.tools
        self.check_init = "init" in self.tools
        self.fingerprints = self.check_host and rt.functional
        self.findings: list[report.Finding] = []
        self.errors: list[str] = []  # the sanitizer's own failures, reported, never raised into the run
        self._keys: dict[tuple, report.Finding] = {}
        self._ids = 0
        self._threads: dict = {}  # ThreadState -> ThreadAgent
        self._streams: dict = {}  # runtime Stream -> StreamAgent
        self._per_device: dict[int, int] = {}
        self._shadows: dict = {}  # Region -> Shadow
        self._sweep_at = 1024
        self._allocs: dict = {}  # Region -> the Op of the call that allocated it
        self._aliases: dict = {}  # a mapped registration's device Region -> (host Region, offset)
        self._events: dict = {}  # Event -> the site that created it
        self._parents = weakref.WeakKeyDictionary()  # threading.Thread -> the clock of the thread that started it
        self.unchecked_sources = 0  # copies from host memory with no bytes (timing-only): not fingerprinted
        self._watched: dict[int, tuple] = {}  # id(op) -> (op, sources) of queued tasks whose sources are checked
        self._watching: dict = {}  # Region -> {id(op): sources} of the watched tasks reading it
        self._overwritten: set[int] = set()  # id(op) of tasks whose source a host write seen here changed
        threads.watch(self)  # the program's threads: start, join, pool tasks (threads.py)

    # -- agents ------------------------------------------------------------------------------------
    def _new_id(self) -> int:
        self._ids += 1
        return self._ids

    def _thread(self) -> ThreadAgent:
        st = self.rt._state
        t = self._threads.get(st)
        if t is None:
            t = self._new_thread(st)
        return t

    def _new_thread(self, st) -> ThreadAgent:
        parent = self._parents.pop(threading.current_thread(), None)
        base: dict = {}
        if parent is not None:
            base = parent
        else:  # started before the sanitizer, or not by threading.Thread: after what the known threads did so far
            for other in self._threads.values():
                base = join(base, other.id, other.n, other.base)
                other.released = True  # its later accesses are not before this thread's
        t = ThreadAgent(self._new_id(), len(self._threads) + 1, base)
        self._threads[st] = t
        return t

    def _new_stream(self, s, site) -> StreamAgent:
        device = s.device
        if s.default:
            name = f"the default stream of device {device}"
        else:
            k = self._per_device[device] = self._per_device.get(device, 0) + 1
            name = f"stream {k} of device {device}"
        a = StreamAgent(self._new_id(), name, device, s.handle, site, s.m.name)
        self._streams[s] = a
        return a

    def _host_op(self, api: str | None, site=None) -> Op:
        t = self._thread()
        if site is None:
            site = sites.user_site(3)
        if api is None:
            api = sites.helper_name(3) or sites.current_api(3) or "host access"
        clock = self.rt._state.clock
        cb = t.callback
        if cb is not None:  # a blocking callback: its accesses take the callback's place in its stream
            return Op(cb.agent, cb.n, t.base, api, site, None, cb.stream, t, True, clock)
        if t.released:
            t.step()
            t.released = False
        return Op(t.id, t.n, t.base, api, site, None, None, t, True, clock)

    # -- hooks: objects --------------------------------------------------------------------------------
    def stream_created(self, s) -> None:
        self._new_stream(s, sites.user_site(2))

    def event_created(self, ev) -> None:
        self._events[ev] = sites.user_site(2)

    def allocated(self, region, api: str | None = None) -> None:
        self._allocs[region] = self._host_op(api or sites.current_api(2) or "allocation", sites.user_site(2))

    # -- hooks: tasks ---------------------------------------------------------------------------------
    def queued(self, s, task, access=None) -> None:
        """A task is queued on stream `s` (or captured, when `s` is being captured). access: what it touches,
        (region, offset, nbytes, mode[, pitch, rows]) tuples (mode "r", "w", "rw", or "u" for a kernel
        argument of undeclared use), an object with an `accesses()` method giving them, or the Replay of a
        captured task."""
        replay = None
        if access.__class__ is Replay:
            replay, access = access, access.access
        if s.capture is not None:  # into a model: it runs when the model is replayed
            task.sanitize_capture = Replay(access, sites.user_site(2), _api_of(task))
            return
        st = self.rt._state
        t = self._threads.get(st) or self._new_thread(st)
        a = self._streams.get(s) or self._new_stream(s, None)
        if a.seen.get(t.id) != t.version:
            a.join(t.id, t.n, t.base)
            a.seen[t.id] = t.version
        cb = t.callback
        if cb is not None:  # queued from a blocking callback: after the callback's place in its stream
            a.join(cb.agent, cb.n, cb.base)
        if task.waits:
            for dep in task.waits:
                d = getattr(dep, "sanitize_op", None)
                if d is not None:
                    a.join(d.agent, d.n, d.base)
        a.n += 1  # (Agent.step, inline: a task is queued for every call)
        a.version += 1
        t.released = True
        if replay is not None:
            api, captured = "aclmdlRIExecuteAsync", (replay.site, replay.api)
        else:
            api, captured = task.label if task.kind == "copy" else _api_of(task), None
        op = Op(a.id, a.n, a.base, api, sites.user_site(2), task, a, t, False, st.clock, captured)
        task.sanitize_op = op
        if access:
            self._touch(op, access, task)

    def captured(self, task) -> Replay | None:
        """What a captured task touches, for its replay (aclmdlRIExecuteAsync)."""
        return getattr(task, "sanitize_capture", None)

    def host_access(self, access, api: str | None = None) -> None:
        """The calling thread's own access, now (a blocking copy or fill, a host fill, a read of its bytes)."""
        if api == "host_array":  # through pyACL's acl.util, or the runtime's own helper
            api = sites.helper_name(2) or "emu.runtime.host_array"
        self._touch(self._host_op(api), access, None)

    # -- hooks: ordering -------------------------------------------------------------------------------
    def joined(self, task) -> None:
        """The calling thread knows `task` complete (it waited for it, or a query said so)."""
        op = getattr(task, "sanitize_op", None) if task is not None else None
        if op is not None:
            t = self._thread()
            t.join(op.agent, op.n, op.base)

    def callback_begin(self, task, block: bool) -> None:
        """The calling thread starts a host callback the stream reached: it knows what came before it."""
        t = self._thread()
        op = getattr(task, "sanitize_op", None)
        if op is None:
            return
        t.join(op.agent, op.n, op.base)
        if block:
            t.callback = op

    def callback_end(self) -> None:
        t = self._thread()
        cb, t.callback = t.callback, None
        if cb is not None and self._watched:  # what the tasks after a blocking callback read may be its work
            for op, sources in list(self._watched.values()):
                if happens_before(cb, op):
                    _refresh(sources, None, 0, 0)

    def thread_starting(self, thread) -> None:
        """threading.Thread.start (threads.py), acl.util.start_thread: the new thread starts after what its
        parent did so far."""
        t = self._thread()
        self._parents[thread] = join(t.base, t.id, t.n, {})
        t.released = True  # the parent's later accesses are not before the child's

    def thread_joined(self, thread) -> None:
        """threading.Thread.join of an ended thread (threads.py), acl.util.stop_thread: the caller continues
        after everything the thread did."""
        child = next((a for a in self._threads.values() if a.thread is thread), None)
        if child is not None:
            self._thread().join(child.id, child.n, child.base)

    def handing_over(self, into: dict) -> None:
        """The calling thread hands what it did so far on (a pool task it submits; a task's end, to the caller
        of its result): `into[self]` gets its clock (threads.py)."""
        t = self._thread()
        into[self] = (t.id, t.n, t.base)
        t.released = True  # its later accesses are not before the receiver's

    def taking_over(self, handed: dict) -> None:
        """The calling thread continues after the clock `handing_over` put in `handed`, if any."""
        clock = handed.get(self)
        if clock is not None:
            self._thread().join(*clock)

    # -- hooks: hazards of their own -----------------------------------------------------------------
    def freed(self, region, api: str | None = None) -> None:
        """`region` is about to be freed: queued work still using it is a hazard."""
        shadow = self._shadows.pop(region, None)
        if region in self._aliases:
            host, off = self._aliases.pop(region)
            if self.check_host and host in self._shadows:
                self._in_use(self._shadows[host], off, off + region.size, host, api or "aclrtHostUnregister",
                             "unregister-while-in-use")
            return
        if shadow is not None and self.check_host:
            self._in_use(shadow, 0, region.size, region, api, "free-while-in-use")
        self._allocs.pop(region, None)

    def unregistered(self, reg) -> None:
        """A host registration is about to go (aclrtHostUnregister, aclrtFreeHost): DMA still queued on its
        pages, through the host address or its device alias, is a hazard."""
        host = reg.region
        if self.check_host and host in self._shadows:
            off = reg.base - host.base
            self._in_use(self._shadows[host], off, off + reg.size, host, None, "unregister-while-in-use")
        if reg.alias is not None:
            self._aliases.pop(reg.alias, None)

    def _in_use(self, shadow: Shadow, lo: int, hi: int, region, api, kind: str) -> None:
        """Report the queued accesses to [lo, hi) the host has not waited for: per stream the latest one (a wait
        for it would cover the others), with the bytes they share."""
        now = self._host_op(api)
        latest: dict = {}
        for op, mode, a, b in shadow.ops(lo, hi):
            if op.host or happens_before(op, now):
                continue
            seen = latest.get(op.agent)
            if seen is None or op.n > seen[0].n:
                latest[op.agent] = [op, mode, a if seen is None else min(a, seen[2]), b if seen is None else
                                    max(b, seen[3])]
            else:
                seen[2], seen[3] = min(a, seen[2]), max(b, seen[3])
        for op, mode, a, b in latest.values():
            self._report(kind, "host", [op, now], [mode, WRITE], region, a, b)

    def stream_destroyed(self, s, waits: bool) -> None:
        """aclrtDestroyStream(Force): work the host has not waited for is a hazard; the non-force call then
        waits for it."""
        self._pending(s, "destroy-with-pending-work")
        if waits:
            self.joined(s.m.last)
        self._streams.pop(s, None)  # its agent lives on in the ops that name it

    def context_released(self, ctx) -> None:
        """aclrtResetDevice / aclrtDestroyContext release a context: its streams' work the host has not waited
        for is a hazard; then it waits for them."""
        for s in [ctx.default_stream, *ctx.streams]:
            self._pending(s, "reset-with-pending-work")
            self.joined(s.m.last)
            self._streams.pop(s, None)

    def _pending(self, s, kind: str) -> None:
        last = s.m.last
        op = getattr(last, "sanitize_op", None) if last is not None else None
        if op is None or not self.check_host:
            return
        now = self._host_op(None)
        if not happens_before(op, now):
            self._report(kind, "host", [op, now], [0, 0], None, 0, 0)

    def unrecorded_wait(self, ev, api: str) -> None:
        """A wait on an event with no record: it orders nothing."""
        if self.check_host:
            now = self._host_op(api)
            self._report("wait-unrecorded-event", "host", [now], [0], None, 0, 0,
                         event=(ev.handle, self._events.get(ev)))

    # -- accesses ---------------------------------------------------------------------------------------
    def _touch(self, op: Op, access, task) -> None:
        if not isinstance(access, (tuple, list)):
            access = access.accesses()
        sources = [] if self.fingerprints and task is not None else None
        writes = [] if sources is not None else None
        shadows, check_init = self._shadows, self.check_init
        for item in access:
            region, off, n, mode = item[0], item[1], item[2], item[3]
            if n <= 0 or region.base == 0:  # nothing, or a private staging buffer
                continue
            if region.origin == "alias":  # a mapped registration: the host's bytes
                alias = self._aliases.get(region) or self._alias_of(region)
                region, off = alias[0], off + alias[1]
            bits = _MODES[mode]
            if bits & INIT and not (check_init and region.is_device and region.origin != "malloc_host"):
                bits &= ~INIT
            shadow = shadows.get(region)
            if shadow is None:
                if len(shadows) >= self._sweep_at:  # forget what the address space forgot (pageable buffers)
                    for r in [r for r in shadows if r.freed]:
                        del shadows[r]
                        self._allocs.pop(r, None)
                    self._sweep_at = max(1024, 2 * len(shadows))
                shadow = shadows[region] = Shadow(region.size)
            if len(item) > 4 and item[5] > 1 and item[4] != n:
                pitch, rows = item[4], item[5]
                spans = ([(off + k * pitch, off + k * pitch + n) for k in range(rows)] if rows <= 256 else
                         [(off, off + (rows - 1) * pitch + n)])  # many rows: their whole span (may over-report)
                found = []
                for lo, hi in spans:
                    found += shadow.access(lo, min(hi, region.size), op, bits) or ()
            else:
                found = shadow.access(off, min(off + n, region.size), op, bits)
            if found:
                self._found(op, bits, region, found)
            if sources is not None and not (region.is_device and region.origin != "malloc_host"):
                if bits & WRITE:
                    if not region.virtual:
                        writes.append((region, off, off + n))
                elif region.virtual or region.freed:
                    self.unchecked_sources += 1
                else:
                    sources.append((region, off, off + n, Fingerprint(region.view(off, n))))
        if sources or writes:
            self._watch(op, task, sources, writes)

    def _found(self, op: Op, bits: int, region, found: list) -> None:
        """What an access found (`Shadow.access`): each earlier op it is not ordered with, over the bytes they
        share; the bytes it read that nothing wrote."""
        clashes: dict = {}
        gaps: list = []
        for other, mode, lo, hi in found:
            if other is None:
                if gaps and gaps[-1][1] == lo:
                    gaps[-1] = (gaps[-1][0], hi)
                else:
                    gaps.append((lo, hi))
                continue
            span = clashes.get(other)
            if span is None:
                clashes[other] = [lo, hi, mode]
            else:
                span[0], span[1] = min(span[0], lo), max(span[1], hi)
        for other, (lo, hi, mode) in clashes.items():
            self._conflict(other, mode, op, bits, region, lo, hi)
        if gaps:
            self._report("uninitialized-read", "init", [op], [READ], region, gaps[0][0], gaps[-1][1],
                         alloc=self._allocs.get(region), gaps=gaps)

    def _alias_of(self, alias) -> tuple:
        for reg in self.rt.space.registrations_overlapping(alias.owner.base, alias.owner.size):
            if reg.alias is alias:
                found = self._aliases[alias] = (reg.region, reg.base - reg.region.base)
                return found
        return alias, 0

    def _conflict(self, first: Op, first_mode: int, second: Op, second_mode: int, region, lo: int, hi: int) -> None:
        if first.host and second.host:  # two host threads: their order is the program's own, unseen here
            return
        if first.host or second.host:
            host, task = (first, second) if first.host else (second, first)
            if host.thread is task.thread:
                tool = "host"
                if second.host:
                    kind = ("read-before-complete" if not second_mode & WRITE else
                            "write-before-read" if first_mode == READ else "write-before-complete")
                else:
                    kind = "host-race"
            else:  # another thread's: no start, join or pool edge orders them (threads.py)
                tool, kind = "race", "race"
        else:
            tool, kind = "race", "race"
        if second.host and second_mode & WRITE and id(first) in self._watched:
            self._overwritten.add(id(first))  # the fingerprint would see this write again
        if tool == "race" and not self.check_races or tool == "host" and not self.check_host:
            return
        self._report(kind, tool, [first, second], [first_mode & (READ | WRITE), second_mode & (READ | WRITE)], region,
                     lo, hi)

    # -- fingerprints ------------------------------------------------------------------------------------
    def _watch(self, op: Op, task, sources: list, writes: list) -> None:
        """Check the host sources' fingerprints when the task runs (at its start for a kernel, else just before
        its bytes move); once it has written host memory, take new fingerprints of the queued copies that read
        those bytes (their change is this task's, ordered or already reported)."""
        if sources:
            self._watched[id(op)] = (op, sources)
            for region, *_ in sources:
                self._watching.setdefault(region, {})[id(op)] = sources
        attr = "on_start" if task.kind == "kernel" else "on_complete"
        inner = getattr(task, attr)

        def run():
            if sources:
                self._check_sources(op, sources)
            if inner is not None:
                inner()
            if writes and self._watching:
                for region, lo, hi in writes:
                    for watched in list(self._watching.get(region, {}).values()):
                        _refresh(watched, region, lo, hi)

        setattr(task, attr, run)

    def _check_sources(self, op: Op, sources: list) -> None:
        self._watched.pop(id(op), None)
        for region, *_ in sources:
            mine = self._watching.get(region)
            if mine is not None:
                mine.pop(id(op), None)
                if not mine:
                    del self._watching[region]
        if id(op) in self._overwritten:  # a host write the checks saw: reported already
            self._overwritten.discard(id(op))
            return
        try:
            for region, lo, hi, fp in sources:
                if region.freed or region.virtual:
                    continue
                changed = fp.changed(region.view(lo, hi - lo))
                if changed is not None:
                    ran = self._host_op(sites.current_api(2) or "the call during which it ran", sites.user_site(2))
                    self._report("source-changed", "host", [op, ran], [READ, WRITE], region, lo + changed[0],
                                 lo + changed[1], exact=fp.data is not None)
        except Exception as exc:  # never break the run: the task's own bytes must still move
            self.errors.append(f"fingerprint check of {op.api} at {sites.short(op.site)}: {exc!r}")

    # -- findings ---------------------------------------------------------------------------------------
    def _report(self, kind: str, tool: str, ops: list, modes: list, region, lo: int, hi: int, **extra) -> None:
        if kind in ("destroy-with-pending-work", "reset-with-pending-work"):
            key = (kind, ops[1].site, id(ops[0].stream))
        elif kind in ("uninitialized-read", "wait-unrecorded-event", "free-while-in-use", "unregister-while-in-use"):
            key = (kind, *(op.site for op in ops))
        else:  # a pair of calls: once, whatever else they also do to each other
            key = (tool, *sorted(op.site for op in ops))
        found = self._keys.get(key)
        if found is not None:
            found.count += 1
            return
        if region is not None and "alloc" not in extra:
            extra["alloc"] = self._allocs.get(region)
        f = report.Finding(tool, kind, ops, modes, region, lo, hi, extra)
        self._keys[key] = f
        self.findings.append(f)

    def finish(self) -> list:
        """Run the queued work to its end (each copy's source is checked when it runs), then the findings."""
        rt = self.rt
        with rt.lock:
            env = rt.machine.env
            try:
                while env.peek() < math.inf:
                    env.step()
            except Exception as exc:  # e.g. a callback no thread will run: what ran is checked
                self.errors.append(f"running the queued work to its end: {exc!r}")
        return self.findings

    def clear(self) -> None:
        """Forget the findings so far (a test that expected them)."""
        self.findings.clear()
        self._keys.clear()

    def report(self) -> str:
        """The findings as text, compute-sanitizer style."""
        return report.text(self)

    def to_dict(self) -> dict:
        """The findings as JSON-ready data."""
        return report.as_dict(self)

    def trace_findings(self) -> list[dict]:
        """Each finding's two ends as plain data for the Perfetto trace (models.chrome)."""
        return report.trace_ends(self)


def _refresh(sources: list, region, lo: int, hi: int) -> None:
    """New fingerprints of the sources overlapping [lo, hi) of `region` (None: all of them)."""
    for i, (r, a, b, fp) in enumerate(sources):
        if (region is None or (r is region and a < hi and lo < b)) and not (r.freed or r.virtual):
            sources[i] = (r, a, b, Fingerprint(r.view(a, b - a)))

