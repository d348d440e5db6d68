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
  device tasks (of any streams and devices) or by a task and another host thread; two entries of one batch
  copy (`_batch_overlaps`: they run in no promised order);
- host: the host and its own queued work: reading bytes a queued task writes, writing bytes it reads or
  writes, before waiting for it; a copy's source changed by the host before a host thread waited for the
  copy (a fingerprint at the enqueue, checked at the wait that first orders the copy before a host thread,
  or at the end of the run: by happens-before, not by the order this run took; functional mode only);
  freeing or unregistering memory queued work uses; using freed memory (the address space's record of
  recent frees, `_used_after_free`); a call reaching past the end of its buffer (refused, `overrun`);
  destroying a stream or releasing a device with work the host has not
  waited for; waiting on an event never recorded;
- init: device bytes read (a copy's source, a kernel argument declared read) that nothing wrote.
Each is reported once per pair of call sites (and counted).

A kernel argument of undeclared use (launch_kernel without access=) may be read or written: a conflict with
another call's write is a finding; one that holds only if the kernel writes is kept aside (`possible`) and
made a finding if the kernel's run is seen changing the argument's bytes (functional mode: a fingerprint
before and after its function), else reported as a possible hazard with a hint to declare its use.
"""
from __future__ import annotations

import math
import threading
import weakref
from collections import deque

from ..memory import FREED_KEPT
from . import kernels, report, sites, threads
from .clocks import Agent, join
from .fingerprint import Source
from .ranges import INIT, READ, UNDECLARED, WRITE, Shadow, happens_before

TOOLS = ("race", "host", "init")
# "k": device code's argument, read or written as far as is known when it is queued; its run tells (kernels.py)
_MODES = {"r": READ | INIT, "w": WRITE, "rw": READ | WRITE | INIT, "u": READ | WRITE | UNDECLARED,
          "k": READ | WRITE | UNDECLARED}
_FREES = ("aclrtFree", "aclrtFreeHost", "acldvppFree")


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

    __slots__ = ("agent", "n", "base", "api", "site", "task", "stream", "thread", "host", "time", "captured",
                 "loose", "wrote", "exact", "touched")

    def __init__(self, agent: int, n: int, base: dict, api: str, site: tuple, task, stream, thread, host: bool,
                 time: float, captured=None):
        self.agent, self.n, self.base, self.api, self.site = agent, n, base, api, site
        self.task, self.stream, self.thread, self.host, self.time = task, stream, thread, host, time
        self.captured = captured  # a replayed task: (site, api) of the call captured into the model
        # set only when they apply (read with `loose` and `wrote`): `loose`, a kernel launched without access=
        # (each argument may be read or written); `wrote`, the regions such a kernel's run was seen to change;
        # `exact`, the regions of a launch of device code whose run tells what it touched, and `touched`, that
        # (kernels.PENDING until it runs, {Region: (reads, writes)} after, None if it never ran)


def loose(op) -> bool:
    """Whether `op` is a kernel launch whose arguments' use was not declared."""
    return getattr(op, "loose", False)


def wrote(op) -> set:
    """The regions a loose kernel's run was seen to change (functional mode)."""
    return getattr(op, "wrote", None) or set()


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
            name = label[9:]
            if sites.foreign is not None and not name.isidentifier():
                # a C program's callback runs through the library's own Python function, whose name is none of
                # the program's: the report names the program's call site of aclrtLaunchCallback instead
                return "aclrtLaunchCallback"
            return f"aclrtLaunchCallback ({name})"
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
        self._unsettled: dict[int, deque] = {}  # stream agent -> its watched copies no host thread knows complete
        self._views: dict = {}  # host Region -> the site of the first numpy view made of it (acl.util)
        self.unseen: dict = {}  # view site -> copies that wrote memory the view shows (reads through it: unseen)
        self.possible: list[report.Finding] = []  # conflicts only if an undeclared kernel argument is written
        self._held: dict[int, tuple] = {}  # id(op) -> (op, [conflicts]) of device code not run yet (kernels.py)
        self._frees: deque = deque(maxlen=FREED_KEPT)  # (base, end, the Op of its free): as many as the address space
        rt.space.on_stale = self._used_after_free  # a use of freed memory (emu.memory.AddressSpace)
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
        view = api == "host_array"  # through pyACL's acl.util, or the runtime's own helper
        if view:
            api = sites.helper_name(2) or "emu.runtime.host_array"
        now = self._host_op(api)
        if view:  # a numpy view of the memory: copies that later write what it shows are counted (`unseen`)
            for item in access:
                self._views.setdefault(item[0], now.site)
        self._touch(now, access, None)

    # -- hooks: ordering -------------------------------------------------------------------------------
    def joined(self, task) -> None:
        """The calling thread knows `task` complete (it waited for it, or a query said so)."""
        op = getattr(task, "sanitize_op", None) if task is not None else None
        if op is not None:
            self._learn(self._thread(), op.agent, op.n, op.base)

    def callback_begin(self, task, block: bool) -> None:
        """The calling thread starts a host callback the stream reached: it knows what came before it."""
        t = self._thread()
        op = getattr(task, "sanitize_op", None)
        if op is None:
            return
        self._learn(t, op.agent, op.n, op.base)
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
            self._learn(self._thread(), child.id, child.n, child.base)

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
            self._learn(self._thread(), *clock)

    # -- hooks: hazards of their own -----------------------------------------------------------------
    def freed(self, region, api: str | None = None) -> None:
        """`region` is about to be freed: queued work still using it is a hazard. The free is remembered (the
        latest FREED_KEPT, as many as the address space remembers) for a later use of the memory
        (`_used_after_free`)."""
        if region.origin != "alias":
            op = self._host_op(api or sites.current_api(2) or "free", sites.user_site(2))
            self._frees.append((region.base, region.end, op))
        shadow = self._shadows.pop(region, None)
        self._views.pop(region, None)
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

    def _used_after_free(self, addr: int, nbytes: int, entry: tuple) -> None:
        """An API call was given an address in memory freed before (`entry`: (base, end, description), from the
        address space's record of recent frees): report the use with the free's call site (the call itself
        fails as the runtime says)."""
        if not self.check_host:
            return
        base, end, what = entry
        free = next((op for b, e, op in reversed(self._frees) if (b, e) == (base, end)), None)
        if free is None:
            return
        api = sites.current_api(2) or "a use of the memory"
        now = self._host_op(api, sites.user_site(2))
        kind = "double-free" if api in _FREES and addr == base else "use-after-free"
        lo = addr - base
        self._report(kind, "host", [free, now], [WRITE, READ | WRITE], _Freed(base, end, what), lo,
                     min(lo + max(nbytes, 1), end - base))

    def overrun(self, region, offset: int, nbytes: int, role: str, api: str, site: tuple) -> None:
        """An API call was refused because `nbytes` at `offset` of `region` run past its end
        (`emu.runtime.transfer.overrun`; `role`: "source", "destination" or "memory"): on an NPU it would have
        read or written whatever lies there."""
        if not self.check_host:
            return
        now = self._host_op(api, site)
        mode = READ if role == "source" else WRITE if role == "destination" else READ | WRITE
        self._report("out-of-bounds", "host", [now], [mode], region, offset, offset + nbytes,
                     over=offset + nbytes - region.size, role=role)

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
        if len(access) > 2 and op.api.startswith("aclrtMemcpyBatch"):
            self._batch_overlaps(op, access)
        sources = [] if self.fingerprints and task is not None else None
        writes = [] if sources is not None else None
        loose = None
        shadows, check_init, modes = self._shadows, self.check_init, _MODES
        for item in access:
            region, off, n, mode = item[0], item[1], item[2], item[3]
            if n <= 0 or region.base == 0:  # nothing, or a private staging buffer
                continue
            if region.origin == "alias":  # a mapped registration: the host's bytes
                alias = self._aliases.get(region) or self._alias_of(region)
                region, off = alias[0], off + alias[1]
            bits = modes[mode]
            if bits & INIT and not (check_init and region.is_device and region.origin != "malloc_host"):
                bits &= ~INIT
            if mode == "k":  # device code: what it touched is known once it ran
                if getattr(op, "touched", None) is None:
                    op.exact, op.touched = set(), kernels.PENDING
                op.exact.add(region)
            elif bits & UNDECLARED:
                op.loose = True
                if task is not None and self.rt.functional and not region.virtual:  # its run is watched (`_watch`)
                    loose = loose or []
                    loose.append((region, off, min(n, region.size - off)))
            shadow = shadows.get(region)
            if shadow is None:
                shadow = self._new_shadow(region)
            strided = len(item) > 4 and item[5] > 1
            if strided and item[4] == n:  # rows back to back: one range
                strided, n = False, n * item[5]
            if strided:
                found = shadow.access_rows(_rows(off, n, item[4], item[5], region.size), op, bits)
            else:
                hi = off + n
                found = shadow.access(off, hi if hi <= shadow.size else shadow.size, op, bits)
            if found:
                self._found(op, bits, region, found)
            if sources is not None and not (region.is_device and region.origin != "malloc_host"):
                self._host_end(op, region, off, n, item if strided else None, bits, sources, writes)
        if sources or writes or loose:
            self._watch(op, task, sources, writes, loose)

    def _new_shadow(self, region) -> Shadow:
        shadows = self._shadows
        if len(shadows) >= self._sweep_at:  # forget what the address space forgot (pageable buffers)
            for r in [r for r in shadows if r.freed]:
                del shadows[r]
                self._allocs.pop(r, None)
                self._views.pop(r, None)
            self._sweep_at = max(1024, 2 * len(shadows))
        shadow = shadows[region] = Shadow(region.size)
        return shadow

    def _host_end(self, op: Op, region, off: int, n: int, item2d, bits: int, sources: list, writes: list) -> None:
        """A queued task's access to host memory: a source to fingerprint, or a write (which changes the bytes
        other queued copies read, in order, and which a numpy view made before it reads unseen)."""
        if bits & WRITE:
            if not region.virtual:
                end = off + n if item2d is None else off + (item2d[5] - 1) * item2d[4] + n
                writes.append((region, off, min(end, region.size)))
            view = self._views.get(region)
            if view is not None and not bits & READ:
                self.unseen[view] = self.unseen.get(view, 0) + 1
        elif region.virtual or region.freed:
            self.unchecked_sources += 1
        elif item2d is None:
            sources.append(Source(region, off, n))
        else:
            sources.append(Source(region, off, n, item2d[4], item2d[5]))

    def _batch_overlaps(self, op: Op, access) -> None:
        """Entries of one batch run in no promised order: two whose bytes overlap, one writing them, race.
        Per region, the entries' ranges sorted by start, each checked against the two earlier ranges of
        distinct entries reaching furthest (among writes, and among all): O(n log n) in the entries."""
        by_region: dict = {}
        for k, item in enumerate(access):
            if item[2] > 0 and item[0].base != 0:
                by_region.setdefault(item[0], []).append((item[1], item[1] + item[2], k // 2, item[3] != "r"))
        for region, ranges in by_region.items():
            if len(ranges) < 2:
                continue
            ranges.sort()
            writes_reach: list = []  # (end, entry, writes) of at most two distinct entries
            any_reach: list = []
            for lo, hi, entry, writes in ranges:
                for end, other, other_writes in (any_reach if writes else writes_reach):
                    if other != entry and end > lo:
                        self._batch_clash(op, region, lo, min(hi, end), (other, other_writes), (entry, writes))
                        break
                _reach(any_reach, hi, entry, writes)
                if writes:
                    _reach(writes_reach, hi, entry, writes)

    def _batch_clash(self, op: Op, region, lo: int, hi: int, first: tuple, second: tuple) -> None:
        if self.check_races:
            modes = [WRITE if first[1] else READ, WRITE if second[1] else READ]
            self._report("batch-overlap", "race", [op, op], modes, region, lo, hi, entries=(first[0], second[0]))

    def _found(self, op: Op, bits: int, region, found: list) -> None:
        """What an access found (`Shadow.access`): each earlier op it is not ordered with, over the bytes they
        share (their span, and how many bytes in how many pieces: a 2-D copy's rows); the bytes it read that
        nothing wrote."""
        clashes: dict = {}
        gaps: list = []
        for other, mode, lo, hi in found:
            if other is None:
                if gaps and gaps[-1][1] == lo:
                    gaps[-1] = (gaps[-1][0], hi)
                else:
                    gaps.append((lo, hi))
                continue
            clash = clashes.get(other)
            if clash is None:
                clashes[other] = _Clash(lo, hi, mode)
            else:
                clash.add(lo, hi, mode)
        for other, c in clashes.items():
            self._conflict(other, c.mode, op, bits, region, c.lo, c.hi, c.nbytes, c.pieces)
        if gaps:
            self._report("uninitialized-read", "init", [op], [READ], region, gaps[0][0], gaps[-1][1],
                         alloc=self._allocs.get(region), gaps=gaps, nbytes=sum(b - a for a, b in gaps),
                         pieces=len(gaps))

    def _alias_of(self, alias) -> tuple:
        for reg in self.rt.space.registrations_overlapping(alias.owner.base, alias.owner.size):
            if reg.alias is alias:
                found = self._aliases[alias] = (reg.region, reg.base - reg.region.base)
                return found
        return alias, 0

    def _conflict(self, first: Op, first_mode: int, second: Op, second_mode: int, region, lo: int, hi: int,
                  nbytes: int, pieces: int) -> None:
        if first.host and second.host:  # two host threads: their order is the program's own, unseen here
            return
        exact = [None, None]
        for i, op in enumerate((first, second)):
            if region in getattr(op, "exact", ()):
                if op.touched is kernels.PENDING:  # decided when it has run (`kernel_ran`)
                    self._held.setdefault(id(op), (op, []))[1].append(
                        (first, first_mode, second, second_mode, region, lo, hi, nbytes, pieces))
                    return
                exact[i] = op.touched
        if exact[0] is not None or exact[1] is not None:
            decided = kernels.narrow(first_mode, exact[0], second_mode, exact[1], region, lo, hi)
            if decided is None:
                return
            first_mode, second_mode, lo, hi, nbytes, pieces = decided
        if second.host and second_mode & WRITE and id(first) in self._watched:
            self._overwritten.add(id(first))  # the fingerprint would see this write again
        first_loose, second_loose = loose(first) and exact[0] is None, loose(second) and exact[1] is None
        possible = (first_loose or second_loose) and not (first_mode & WRITE and not first_loose or
                                                          second_mode & WRITE and not second_loose)
        tool, kind = _kind_of(first, first_mode, second, second_mode)
        if tool == "race" and not self.check_races or tool == "host" and not self.check_host:
            return
        modes = [READ | WRITE | UNDECLARED if first_loose else first_mode & (READ | WRITE),
                 READ | WRITE | UNDECLARED if second_loose else second_mode & (READ | WRITE)]
        self._report(kind, tool, [first, second], modes, region, lo, hi, possible, nbytes=nbytes, pieces=pieces)

    # -- fingerprints ------------------------------------------------------------------------------------
    def _watch(self, op: Op, task, sources: list | None, writes: list | None, loose: list | None) -> None:
        """Keep the host sources' fingerprints until a host thread knows the task complete (`_settle`: a change
        then is a host write no edge ordered after the copy, whatever order this run happened to take); once
        the task has written host memory, take new fingerprints of the queued copies that read those bytes
        (their change is this task's, ordered or already reported); a kernel of undeclared use: note which
        arguments its run changes."""
        if sources:
            self._watched[id(op)] = (op, sources)
            for src in sources:
                self._watching.setdefault(src.region, {})[id(op)] = sources
            queue = self._unsettled.get(op.agent)
            if queue is None:
                queue = self._unsettled[op.agent] = deque()
            queue.append(op)
        if not writes and not loose:
            return
        attr = "on_start" if task.kind == "kernel" else "on_complete"
        inner = getattr(task, attr)

        def run():
            before = _snapshots(loose, self.errors) if loose else None
            if inner is not None:
                inner()
            if before:
                op.wrote = _changed(before, self.errors)
            if writes and self._watching:
                for region, lo, hi in writes:
                    for watched in list(self._watching.get(region, {}).values()):
                        _refresh(watched, region, lo, hi)

        setattr(task, attr, run)

    def _learn(self, t: ThreadAgent, agent: int, n: int, base: dict) -> None:
        """Thread `t` continues after the clock (agent, n, base): the copies that puts before it are settled."""
        if t.join(agent, n, base):
            self._settle(t)

    def _settle(self, t) -> None:
        """Thread `t` just learned tasks complete (a wait, a join): the copies now ordered before it have their
        sources checked a last time (a change is a write before that wait), and are dropped. Per stream they
        are in stream order: the cost is the streams with copies unsettled, plus the copies settled."""
        unsettled = self._unsettled
        if not unsettled:
            return
        base = t.base
        for agent in list(unsettled):
            queue, known = unsettled[agent], base.get(agent, 0)
            while queue and queue[0].n <= known:
                self._check_sources(queue.popleft())
            if not queue:
                del unsettled[agent]

    def _check_sources(self, op: Op, api: str | None = None) -> None:
        entry = self._watched.pop(id(op), None)
        if entry is None:
            return
        sources = entry[1]
        for src in sources:
            mine = self._watching.get(src.region)
            if mine is not None:
                mine.pop(id(op), None)
                if not mine:
                    del self._watching[src.region]
        if id(op) in self._overwritten:  # a host write the checks saw: reported already
            self._overwritten.discard(id(op))
            return
        try:
            for src in sources:
                if src.region.freed or src.region.virtual:
                    continue
                changed = src.changed()
                if changed is not None:
                    now = self._host_op(api or sites.current_api(2) or "the wait", None if api is None else
                                        sites.UNKNOWN)
                    self._report("source-changed", "host", [op, now], [READ, WRITE], src.region, changed[0],
                                 changed[1], exact=src.exact)
        except Exception as exc:  # never break the run
            self.errors.append(f"fingerprint check of {op.api} at {sites.short(op.site)}: {exc!r}")

    # -- findings ---------------------------------------------------------------------------------------
    def _report(self, kind: str, tool: str, ops: list, modes: list, region, lo: int, hi: int, possible: bool = False,
                **extra) -> None:
        """A finding, once per key (`_key`): a later occurrence is counted, and its ops kept (the first 8).
        `possible`: a conflict only if a kernel argument of undeclared use is written: kept aside (`possible`),
        made a finding if the kernel's run is seen writing it (`_promote`), else reported as a possible hazard
        with a hint to declare the argument's use; a later occurrence is only counted."""
        key = _key(kind, tool, ops, possible)
        found = self._keys.get(key)
        if found is not None:
            found.count += 1
            if not possible and len(found.again) < 8:
                found.again.append(ops)
            return
        if region is not None and "alloc" not in extra:
            extra["alloc"] = self._allocs.get(region)
        f = report.Finding(tool, kind, ops, modes, region, lo, hi, extra)
        self._keys[key] = f
        if possible:
            f.subject = region
            self.possible.append(f)
        else:
            self.findings.append(f)

    def _promote(self) -> None:
        """The possible conflicts whose undeclared kernel was seen writing the bytes' allocation: findings."""
        for f in list(self.possible):
            if any(f.subject in wrote(op) for op in f.ops):
                self.possible.remove(f)
                f.modes = [WRITE | UNDECLARED if f.subject in wrote(op) else m
                           for op, m in zip(f.ops, f.modes)]
                f.extra["seen_writing"] = True
                self.findings.append(f)

    def wants_ranges(self) -> bool:
        """Whether launches of device code should keep the ranges their blocks touch (`kernel_ran`): yes."""
        return True

    def kernel_ran(self, task, touched, outside=()) -> None:
        """A launch of device code ran: `touched` what it read and wrote ({Region: (reads, writes)}, offsets);
        `outside`, its accesses past the bytes a program asked for ((region, lo, hi, how, block, asked), offsets
        in the region: the allocator's rounding and padding) or outside every allocation (region None, lo and hi
        addresses); `how`: 1 read, 2 written, 3 both. The conflicts held back for it are decided now."""
        op = getattr(task, "sanitize_op", None)
        if op is None or getattr(op, "touched", None) is not kernels.PENDING:
            return
        op.touched = touched
        self._decide(op)
        if self.check_host:
            for region, lo, hi, how, block, asked in outside:
                where = region if region is not None else _Freed(lo, hi, "no allocation")
                self._report("kernel-out-of-bounds", "host", [op], [(READ if how & 1 else 0) | (WRITE if how & 2
                                                                                             else 0)], where,
                             lo if region is not None else 0, hi if region is not None else hi - lo,
                             block=block, asked=asked, inside=region is not None)

    def _decide(self, op) -> None:
        for args in self._held.pop(id(op), (None, ()))[1]:
            self._conflict(*args)

    def finish(self) -> list:
        """Run the queued work to its end, check the sources of the copies no host thread waited for, and
        make findings of the possible conflicts an undeclared kernel's run confirmed; then the findings."""
        rt = self.rt
        with rt.lock:
            env = rt.machine.env
            try:
                while env.peek() < math.inf:
                    env.step()
            except Exception as exc:  # e.g. a callback no thread will run: what ran is checked
                self.errors.append(f"running the queued work to its end: {exc!r}")
            for queue in self._unsettled.values():
                for op in queue:
                    self._check_sources(op, "the end of the run (no wait for the copy)")
            self._unsettled.clear()
            for op, _ in list(self._held.values()):  # never ran: the whole allocations, as queued
                op.touched, op.exact = None, ()
                op.loose = True
                self._decide(op)
            self._promote()
        return self.findings

    def clear(self) -> None:
        """Forget the findings so far, and the possible hazards (a test that expected them)."""
        self.findings.clear()
        self._keys.clear()
        self.possible.clear()

    def report(self) -> str:
        """The findings as text, compute-sanitizer style."""
        return report.text(self)

    def to_dict(self) -> dict:
        """The findings as JSON-ready data."""
        return report.as_dict(self)

    def trace_findings(self) -> list[dict]:
        """Each finding's two ends as plain data for the Perfetto trace (models.chrome)."""
        return report.trace_ends(self)


class _Clash:
    """The bytes one access shares with an earlier op it is not ordered with (`Sanitizer._found`): their span
    [lo, hi), the earlier op's modes there, `nbytes` in all in `pieces` runs (a 2-D copy's rows); `last`: the
    end of the latest range added (a range that starts there continues its run)."""

    __slots__ = ("lo", "hi", "mode", "nbytes", "pieces", "last")

    def __init__(self, lo: int, hi: int, mode: int):
        self.lo, self.hi, self.mode, self.nbytes, self.pieces, self.last = lo, hi, mode, hi - lo, 1, hi

    def add(self, lo: int, hi: int, mode: int) -> None:
        self.lo, self.hi, self.mode = min(self.lo, lo), max(self.hi, hi), self.mode | mode
        self.nbytes += hi - lo
        if lo != self.last:
            self.pieces += 1
        self.last = hi


class _Freed:
    """Freed memory as a finding names it (its Region is gone)."""

    __slots__ = ("base", "size", "what")

    def __init__(self, base: int, end: int, what: str):
        self.base, self.size, self.what = base, end - base, what

    def describe(self) -> str:
        return f"{self.what} (freed)"


def _kind_of(first: Op, first_mode: int, second: Op, second_mode: int) -> tuple[str, str]:
    """(tool, kind) of a conflict between the earlier `first` and `second`, one of them at least a task."""
    if first.host or second.host:
        host, task = (first, second) if first.host else (second, first)
        if host.thread is not task.thread:  # another thread's: no start, join or pool edge orders them
            return "race", "race"
        if not second.host:
            return "host", "host-race"
        return "host", ("read-before-complete" if not second_mode & WRITE else
                        "write-before-read" if first_mode & (READ | WRITE) == READ else "write-before-complete")
    return "race", "race"


_BY_KIND_AND_SITES = ("uninitialized-read", "wait-unrecorded-event", "free-while-in-use", "unregister-while-in-use",
                      "batch-overlap", "use-after-free", "double-free", "out-of-bounds", "kernel-out-of-bounds")


def _key(kind: str, tool: str, ops: list, possible: bool) -> tuple:
    """What makes a finding the same as one before: a possible conflict, its kind and pair of call sites; a
    pending-work finding, its kind, site and stream; the kinds of _BY_KIND_AND_SITES, their kind and call sites
    in order; any other pair of calls, its tool and sites (once, whatever else they also do to each other)."""
    if possible:
        return ("possible", kind, *sorted(op.site for op in ops))
    if kind in ("destroy-with-pending-work", "reset-with-pending-work"):
        return (kind, ops[1].site, id(ops[0].stream))
    if kind in _BY_KIND_AND_SITES:
        return (kind, *(op.site for op in ops))
    return (tool, *sorted(op.site for op in ops))


def _reach(reach: list, hi: int, entry: int, writes: bool) -> None:
    """Keep in `reach` the (end, entry, writes) of the two distinct entries whose ranges end furthest."""
    for i, (end, other, _) in enumerate(reach):
        if other == entry:
            if hi > end:
                reach[i] = (hi, entry, writes)
                reach.sort(reverse=True)
            return
    reach.append((hi, entry, writes))
    reach.sort(reverse=True)
    del reach[2:]


def _snapshots(args: list, errors: list) -> list | None:
    """Fingerprints of a loose kernel's arguments (region, offset, nbytes) before it runs; None if they cannot
    be taken (never break the run)."""
    try:
        return [Source(r, a, n) for r, a, n in args if not (r.freed or r.virtual)]
    except Exception as exc:
        errors.append(f"fingerprint of a kernel's arguments: {exc!r}")
        return None


def _changed(before: list, errors: list) -> set:
    """The regions whose bytes differ from the fingerprints `_snapshots` took."""
    try:
        return {src.region for src in before if src.changed() is not None}
    except Exception as exc:
        errors.append(f"fingerprint of a kernel's arguments: {exc!r}")
        return set()


def _rows(off: int, width: int, pitch: int, rows: int, size: int) -> list:
    """The byte ranges of `rows` rows of `width` bytes `pitch` apart from `off`, clipped to `size` (rows that
    overlap, pitch < width, merged)."""
    out = []
    for k in range(rows):
        lo = off + k * pitch
        if lo >= size:
            break
        hi = min(lo + width, size)
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


def _refresh(sources: list, region, lo: int, hi: int) -> None:
    """New fingerprints of the sources overlapping [lo, hi) of `region` (None: all of them)."""
    for src in sources:
        if (region is None or (src.region is region and src.lo < hi and lo < src.hi)) and not (
                src.region.freed or src.region.virtual):
            src.refresh()
