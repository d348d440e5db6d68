"""What the sanitizer found, for a person (text, compute-sanitizer style), a program (JSON) and the trace.

Each finding names the hazard, the one or two API calls (the user's own file:line, the stream, device and
simulated time of each), the bytes concerned and the missing edge: what ordering the program lacks, and
where to put it.
"""
from __future__ import annotations

from . import sites
from .ranges import READ, UNDECLARED, WRITE

PREFIX = "========= "

TITLES = {
    "race": "Race between {a} and {b}",
    "read-before-complete": "Host read of bytes a queued task writes, before it completed",
    "write-before-read": "Host write to bytes a queued task reads, before it ran",
    "write-before-complete": "Host write to bytes a queued task writes, before it completed",
    "host-race": "Host access not ordered with a queued task",
    "source-changed": "Source of a queued copy changed before the host waited for the copy",
    "batch-overlap": "Entries of one batch copy overlap (they run in no promised order)",
    "use-after-free": "Use of memory after it was freed",
    "double-free": "Memory freed twice",
    "free-while-in-use": "Memory freed while queued work uses it",
    "unregister-while-in-use": "Host memory unregistered while queued work uses it",
    "destroy-with-pending-work": "Stream destroyed with work the host has not waited for",
    "reset-with-pending-work": "Device released with work the host has not waited for",
    "wait-unrecorded-event": "Wait on an event that was never recorded",
    "uninitialized-read": "Read of device memory that nothing wrote",
    "out-of-bounds": "Access past the end of a buffer (the call was refused)",
    "kernel-out-of-bounds": "Kernel access past the bytes the program allocated",
}

class Finding:
    """One hazard: its check (`tool`: race, host, init), its `kind` (TITLES), the ops involved (one or two,
    earlier first), how each touched the bytes (`modes`: READ / WRITE bits), the bytes [lo, hi) of `region`
    (None for findings about streams and events), how many times it was seen, and what else its kind
    needs (`extra`: the allocation, the event...)."""

    def __init__(self, tool: str, kind: str, ops: list, modes: list, region, lo: int, hi: int, extra: dict):
        self.tool, self.kind, self.ops, self.modes = tool, kind, ops, modes
        self.region = region.describe() if region is not None else None
        self.base = region.base if region is not None else 0
        self.lo, self.hi = lo, hi
        self.extra = extra
        self.count = 1
        self.subject = None  # (a possible conflict) the Region its bytes are in
        self.again: list = []  # the ops of later occurrences (the first 8), for what this run did

    @property
    def nbytes(self) -> int:
        """The bytes concerned: those shared, not their span (a 2-D copy's rows)."""
        return self.extra.get("nbytes", self.hi - self.lo)

    @property
    def pieces(self) -> int:
        return self.extra.get("pieces", 1)

    @property
    def title(self) -> str:
        if self.kind == "race":
            a, b = (_title_word(m) for m in self.modes)
            what = {("write", "write"): "two writes", ("write", "read"): "a write and a later read",
                    ("read", "write"): "a read and a later write"}.get((a, b), f"{_an(a)} and a later {b}")
            between = "a queued task and another host thread" if any(op.host for op in self.ops) else \
                "streams" if self.ops[0].stream is not self.ops[1].stream else "tasks"
            return f"Race between {what} ({between})"
        return TITLES[self.kind]

    @property
    def sites(self) -> list[str]:
        """file:line of each call, earlier first."""
        return [sites.short(op.site) for op in self.ops]

    @property
    def missing_edge(self) -> str:
        return missing_edge(self)

    def __repr__(self) -> str:
        return f"<Finding {self.kind} {' / '.join(self.sites)}>"


def _title_word(mode: int) -> str:
    if mode & UNDECLARED:
        return "write" if mode & WRITE and not mode & READ else "undeclared access"
    return _mode_word(mode)


def _an(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _mode_word(mode: int) -> str:
    if mode & UNDECLARED:  # a kernel argument launched without access=
        return "write (undeclared use, seen writing)" if mode & WRITE and not mode & READ else \
            "undeclared use (read or write)"
    return "read-write" if mode & READ and mode & WRITE else "write" if mode & WRITE else "read" if mode & READ \
        else ""


def _where(op) -> str:
    if op.host:
        t = op.thread
        where = f"host thread {t.number} ({t.name})"
        if op.stream is not None:
            where += f", in a blocking callback of {op.stream.name}"
        return where
    s = op.stream
    created = f", created at {sites.short(s.created)}" if s.created else ""
    return f"{s.name} (0x{s.handle:x}{created})" if s.handle else f"{s.name}{created}"


def _when(op) -> str:
    if op.host:
        return f"host time {op.time * 1e3:.3f} ms"
    t = op.task
    if t is not None and t.start is not None and t.end is not None:
        return f"simulated {t.start * 1e3:.3f}-{t.end * 1e3:.3f} ms"
    return f"queued at {op.time * 1e3:.3f} ms, not run by the end"


def _call(op) -> str:
    fn = op.site[2]
    where = f" in {fn}()" if fn and fn != "<module>" else ""
    captured = f" (replaying the {op.captured[1]} captured at {sites.short(op.captured[0])})" if op.captured else ""
    return f"{op.api}{captured} at {sites.short(op.site)}{where}"


def _roles(f: Finding) -> list[str]:
    k = f.kind
    if k == "free-while-in-use":
        return [f"Queued {_mode_word(f.modes[0])}", "Freed by"]
    if k == "unregister-while-in-use":
        return [f"Queued {_mode_word(f.modes[0])}", "Unregistered by"]
    if k in ("destroy-with-pending-work", "reset-with-pending-work"):
        return ["Last queued", "Destroyed by" if k.startswith("destroy") else "Released by"]
    if k == "source-changed":
        return ["Copy", "Waited for by"]
    if k == "use-after-free":
        return ["Freed by", "Used by"]
    if k == "double-free":
        return ["Freed by", "Freed again by"]
    if k == "batch-overlap":
        return [f"Entry {f.extra['entries'][0]} ({_mode_word(f.modes[0])})",
                f"Entry {f.extra['entries'][1]} ({_mode_word(f.modes[1])})"]
    if k == "wait-unrecorded-event":
        return ["Wait"]
    if k == "out-of-bounds":
        return [{"source": "Read by", "destination": "Written by"}.get(f.extra.get("role"), "Used by")]
    if k == "kernel-out-of-bounds":
        return [f"{_mode_word(f.modes[0]).capitalize()} by block {f.extra['block']} of"]
    return [_mode_word(m).capitalize() or "Call" for m in f.modes]


def _stream(op) -> str:
    return op.stream.name if op.stream is not None else f"host thread {op.thread.number}"


_JOINS = "threading.Thread.join, or Future.result of its pool task"
_EDGES = "threading.Thread.start and join, ThreadPoolExecutor.submit and Future.result"


def missing_edge(f: Finding) -> str:
    """The ordering the program lacks, in words: which edge, between which calls."""
    k, ops = f.kind, f.ops
    a = ops[0]
    sa = sites.short(a.site)
    if k == "wait-unrecorded-event":
        handle, created = f.extra.get("event", (0, None))
        made = f" (the event 0x{handle:x}, created at {sites.short(created)})" if created else ""
        return (f"nothing was recorded on the event{made} before this wait, so it orders nothing: record it "
                f"(aclrtRecordEvent) on the stream to wait for, after the work to wait for, before the "
                f"aclrtStreamWaitEvent")
    if k == "out-of-bounds":
        return _past_the_end(f, a.api, sa)
    if k == "kernel-out-of-bounds":
        return _kernel_past_the_end(f, a.api, sa)
    if k == "uninitialized-read":
        alloc = f.extra.get("alloc")
        made = f" (allocated by {alloc.api} at {sites.short(alloc.site)})" if alloc is not None else ""
        return (f"nothing wrote these bytes{made} before the {a.api} at {sa} read them: copy or memset into "
                f"them first")
    b = ops[1]
    sb = sites.short(b.site)
    s = _stream(a)
    if k == "source-changed":
        return (f"the host wrote the buffer without waiting for {s}: the bytes changed between the enqueue at "
                f"{sa} and {_the_wait(b)}, whichever ran first in this run. Synchronize {s} (or an event "
                f"recorded after the copy) before writing the source, or write another buffer")
    if k == "use-after-free":
        return (f"the memory was freed by the {a.api} at {sa} before the {b.api} at {sb} used it (the call "
                f"fails: the address is no memory the runtime knows): use it before freeing it, or allocate "
                f"it again")
    if k == "double-free":
        return (f"the memory was freed by the {a.api} at {sa} already; the {b.api} at {sb} frees it again (the "
                f"call fails): free each allocation once")
    if k == "batch-overlap":
        i, j = f.extra["entries"]
        return (f"entries {i} and {j} of the {a.api} at {sa} touch the same bytes, one writing them; a batch's "
                f"entries run in no promised order (and in parallel): make them disjoint, or copy them in two "
                f"calls on one stream")
    if k in ("free-while-in-use", "unregister-while-in-use"):
        verb = "freeing" if k.startswith("free") else "unregistering"
        text = (f"no wait orders the {b.api} at {sb} after the {a.api} at {sa} on {s}: synchronize {s} "
                f"(aclrtSynchronizeStream, or an event recorded after it) before {verb} the memory")
        if a.thread is not b.thread:
            text += (f", or join host thread {a.thread.number}, which queued it, after it synchronized "
                     f"({_JOINS})")
        return text
    if k == "destroy-with-pending-work":
        return (f"the host never waited for the {a.api} at {sa} (nor what follows it on {s}): synchronize {s} "
                f"(aclrtSynchronizeStream) before the {b.api} at {sb}")
    if k == "reset-with-pending-work":
        return (f"the host never waited for the {a.api} at {sa} on {s}: synchronize {s} (or the device, "
                f"aclrtSynchronizeDevice) before the {b.api} at {sb}")
    if k in ("read-before-complete", "write-before-read", "write-before-complete", "host-race"):
        task, host = (a, b) if b.host else (b, a)
        st = _stream(task)
        return (f"the host did not wait for {st} between the {task.api} at {sites.short(task.site)} and the "
                f"{host.api} at {sites.short(host.site)}: synchronize {st} (aclrtSynchronizeStream), or an "
                f"event recorded after the {task.api} (aclrtSynchronizeEvent), before it")
    return _race_edge(f)


def _past_the_end(f: Finding, api: str, site: str) -> str:
    """What to do about a call reaching past the end of its buffer (an out-of-bounds finding)."""
    over, n = f.extra["over"], f.hi - f.lo
    role = f.extra.get("role", "memory")
    hold = n - over
    beyond = {"source": "read", "destination": "overwrite"}.get(role, "read or overwrite")
    return (f"the {api} at {site} reaches {over} bytes past the end of the buffer with its {role} ({n} bytes "
            f"from offset {f.lo}; the buffer holds {hold} from there). The emulator refused it with 100000; on an "
            f"NPU it would {beyond} whatever lies past the buffer and go on. Make the buffer {f.hi} bytes, or "
            f"pass at most {hold}")


def _kernel_past_the_end(f: Finding, api: str, site: str) -> str:
    """What to do about a kernel reaching past the bytes the program allocated (named by its write, if it wrote)."""
    wrote = f.modes[0] & WRITE
    who = f"block {f.extra['block']} of the {api} launched at {site} {'wrote' if wrote else 'read'}"
    if not f.extra.get("inside"):
        return (f"{who} memory of no allocation of the device (freed, or between allocations); on an NPU that is an "
                f"AI Core exception or another buffer's bytes. Check the kernel's offsets and the sizes it is given")
    asked = f.extra["asked"]
    device = "keeps them without error (and another kernel may use the same bytes)" if wrote else \
        "reads them without error"
    return (f"{who} {f.hi - f.lo} bytes from offset {f.lo} of an allocation of {asked} bytes: past its end, in the "
            f"rounding and padding the allocator added, which an NPU {device}. Keep the kernel's accesses (its "
            f"tiling, the last block's tail) within {asked} bytes, or allocate {f.hi} bytes")


def _the_wait(op) -> str:
    if op.site == sites.UNKNOWN:
        return op.api
    return f"the {op.api} at {sites.short(op.site)} that waited for it"


def _race_edge(f: Finding) -> str:
    """The missing edge of a race between its first call `a` and the later `b`."""
    a, b = f.ops
    sa, sb, s = sites.short(a.site), sites.short(b.site), _stream(a)
    if a.host or b.host:
        host, task = (a, b) if a.host else (b, a)
        if host is b:
            return (f"no edge orders host thread {b.thread.number}'s {b.api} at {sb} after the {a.api} at {sa} "
                    f"on {s}: host thread {b.thread.number} must wait for {s} itself (aclrtSynchronizeStream or "
                    f"aclrtSynchronizeEvent), or join a thread that did ({_JOINS}); a wait on a thread it has not "
                    f"joined does not order it")
        return (f"no edge orders the {b.api} at {sb} on {_stream(b)} after host thread {a.thread.number}'s "
                f"{a.api} at {sa}: host thread {b.thread.number} queued it without waiting for host thread "
                f"{a.thread.number} (start it after the call, or join the thread that made it: {_EDGES})")
    sb_name = _stream(b)
    if any(m & UNDECLARED for m in f.modes):
        return _undeclared_edge(f, s, sb_name)
    text = (f"no event orders {sb_name} after {s} here: record an event on {s} after the {a.api} at {sa} "
            f"(aclrtRecordEvent) and make {sb_name} wait for it (aclrtStreamWaitEvent) before the {b.api} at {sb}")
    if a.thread is not b.thread:
        text += (f"; the two calls are on host threads {a.thread.number} and {b.thread.number}, so a wait on "
                 f"one thread orders the other's only through a start or a join ({_EDGES})")
    return text


def _undeclared_edge(f: Finding, s: str, sb_name: str) -> str:
    """The missing edge of a race with a kernel launched without access= (its modes say UNDECLARED)."""
    a, b = f.ops
    loose = [op.api for op, m in zip(f.ops, f.modes) if m & UNDECLARED]
    hint = (f"the kernel{'s' if len(loose) > 1 else ''} {' and '.join(loose)} "
            f"{'were' if len(loose) > 1 else 'was'} launched without access=, so "
            f"{'their' if len(loose) > 1 else 'its'} arguments may be read or written: declare them (access='r', "
            f"'w' or 'rw' per buffer); ")
    return hint + (f"if this is a race, record an event on {s} after the {a.api} at {sites.short(a.site)} and "
                   f"make {sb_name} wait for it before the {b.api} at {sites.short(b.site)}")


def _effect(op) -> float | None:
    """When a task's bytes change in the emulator: a kernel's function runs at its start, a copy's bytes move
    at its end."""
    t = op.task
    return t.start if t.kind == "kernel" else t.end


def _span(op):
    if op.host:
        return op.time, op.time
    t = op.task
    if t is None or t.start is None or t.end is None:
        return None
    return t.start, t.end


def observed(f: Finding) -> str | None:
    """What the two calls did in this run's simulated time: whether the hazard struck, or the order held by
    chance (and, if it held the first time, whether a later occurrence struck)."""
    first = _observed(f, f.ops)
    if first is None or not first.startswith("the order held by chance"):
        return first
    for k, ops in enumerate(f.again, 2):
        later = _observed(f, ops)
        if later is not None and not later.startswith("the order held by chance"):
            return f"{first}; but at occurrence {k} {later}"
    return first


def _observed(f: Finding, ops: list) -> str | None:
    if len(ops) < 2 or f.kind in ("source-changed", "use-after-free", "double-free", "batch-overlap"):
        return None
    a, b = ops
    sa, sb = _span(a), _span(b)
    if sa is None or sb is None:
        return None
    ms = 1e3
    if not a.host and not b.host:
        if a.task is b.task:
            return None
        struck = _effect(b) < _effect(a)
        hit = (f"; the {b.api}'s bytes moved first, so this run's data differs from the order the program queued"
               if struck else "")
        if sa[0] < sb[1] and sb[0] < sa[1]:
            return (f"the two ran at once (simulated {sa[0] * ms:.3f}-{sa[1] * ms:.3f} ms and "
                    f"{sb[0] * ms:.3f}-{sb[1] * ms:.3f} ms){hit}")
        if sb[1] <= sa[0]:
            return (f"the later-queued {b.api} ran first (ended at {sb[1] * ms:.3f} ms, before the {a.api} "
                    f"started at {sa[0] * ms:.3f} ms){hit}")
        return (f"the order held by chance: the {b.api} started {(sb[0] - sa[1]) * ms:.3f} ms after the {a.api} "
                f"ended; with other timing it may not")
    task, host = (a, b) if b.host else (b, a)
    t, (start, end) = host.time, _span(task)
    what = {"free-while-in-use": "the memory was freed", "unregister-while-in-use": "the memory was unregistered",
            "destroy-with-pending-work": "the stream was destroyed",
            "reset-with-pending-work": "the device was released"}.get(f.kind, f"the {host.api} came")
    if t < start:
        return f"{what} at {t * ms:.3f} ms, before the {task.api} started ({start * ms:.3f} ms)"
    if t < end:
        return f"{what} at {t * ms:.3f} ms, while the {task.api} ran ({start * ms:.3f}-{end * ms:.3f} ms)"
    return (f"{what} at {t * ms:.3f} ms, after the {task.api} had ended ({end * ms:.3f} ms) by chance; with other "
            f"timing it may not have")


def _wrap(label: str, body: str, indent: str = "    ", width: int = 118) -> list[str]:
    import textwrap

    return textwrap.wrap(f"{label}{body}", width=width, initial_indent=indent,
                         subsequent_indent=indent + "    ", break_on_hyphens=False, break_long_words=False)


def _bytes(f: Finding) -> str:
    n = f.nbytes
    where = f"[0x{f.base + f.lo:x}, 0x{f.base + f.hi:x})"
    exact = "" if f.extra.get("exact", True) else " (to the fingerprint's block)"
    if f.pieces > 1:
        return f"{n} bytes in {f.pieces} pieces within {where}{exact}, offset {f.lo} of {f.region}"
    if f.kind == "out-of-bounds":
        return f"{n} bytes at {where}, offset {f.lo} of {f.region}: {f.extra['over']} bytes past its end"
    if f.kind == "kernel-out-of-bounds" and f.extra.get("inside"):
        return (f"{n} bytes at {where}, offset {f.lo} of {f.region}: {f.hi - f.extra['asked']} bytes past the "
                f"{f.extra['asked']} bytes asked for")
    if f.kind == "kernel-out-of-bounds":
        return f"{n} bytes at {where}: in no allocation"
    return f"{n} bytes at {where}{exact}, offset {f.lo} of {f.region}"


def lines(f: Finding) -> list[str]:
    out = [f"{f.title} [{f.tool}]" if f.kind == f.tool else f"{f.title} [{f.tool}: {f.kind}]"]
    if f.region is not None:
        out.append(f"    {_bytes(f)}")
        alloc = f.extra.get("alloc")
        if alloc is not None:
            out.append(f"        allocated by {alloc.api} at {sites.short(alloc.site)}")
    for role, op in zip(_roles(f), f.ops):
        out.append(f"    {role}: {_call(op)}")
        out.append(f"        on {_where(op)}, {_when(op)}")
    if f.kind == "uninitialized-read" and len(f.extra.get("gaps", ())) > 1:
        gaps = ", ".join(f"[{a}, {b})" for a, b in f.extra["gaps"][:8])
        out.append(f"    unwritten offsets: {gaps}{' ...' if len(f.extra['gaps']) > 8 else ''}")
    seen = observed(f)
    if seen:
        out.extend(_wrap("In this run: ", seen))
    out.extend(_wrap("Fix: " if f.kind.endswith("out-of-bounds") else "Missing edge: ", f.missing_edge))
    if f.count > 1:
        out.append(f"    (seen {f.count} times)")
    return out


def notes(san) -> list[str]:
    out = []
    for site, n in san.unseen.items():
        out.append(f"Host reads not seen: {n} queued cop{'ies' if n != 1 else 'y'} wrote host memory the program "
                   f"had a numpy view of, made at {sites.short(site)} before the copy (acl.util.ptr_to_numpy): a "
                   f"read through such a view is invisible to the emulator, so a read before the wait would not "
                   f"be reported. Make the view after the wait to have the read checked.")
    if san.possible:
        out.append(f"{len(san.possible)} possible hazard{'s' if len(san.possible) != 1 else ''} (not findings): "
                   f"conflicts only if a kernel launched without access= writes an argument, and its run was not "
                   f"seen writing it; declare each argument's use (access='r', 'w', 'rw') to have them checked.")
    if "host" in san.tools and not san.fingerprints:
        out.append("Timing-only mode: no bytes exist, so the check that a copy's source was not changed by the host "
                   "before the copy ran (a fingerprint at enqueue and at execution) was off; every other check ran.")
    elif san.unchecked_sources:
        out.append(f"{san.unchecked_sources} copies read host memory without bytes (timing-only allocations): "
                   f"their sources were not fingerprinted.")
    for e in san.errors:
        out.append(f"sanitizer error: {e}")
    return out


def text(san) -> str:
    tools = ", ".join(t for t in ("race", "host", "init") if t in san.tools)
    out = [f"ACL-EMU SANITIZER ({tools}) on {san.rt.product.name}"]
    for note in notes(san):
        out.append(note)
    for f in san.findings:
        out.append("")
        out.extend(lines(f))
    for f in san.possible:
        out.append("")
        out.extend(["Possible: " + line if i == 0 else line for i, line in enumerate(lines(f))])
    counts: dict[str, int] = {}
    for f in san.findings:
        counts[f.tool] = counts.get(f.tool, 0) + 1
    n = len(san.findings)
    detail = ", ".join(f"{c} {t}" for t, c in counts.items())
    out.append("")
    out.append(f"SANITIZER SUMMARY: {n} finding{'s' if n != 1 else ''}" + (f" ({detail})" if n else ""))
    return "\n".join(PREFIX + line if line else PREFIX.rstrip() for line in out)


def _op_dict(role: str, op, mode: int) -> dict:
    t = op.task
    d = {"role": role, "api": op.api, "access": _mode_word(mode), "file": op.site[0], "line": op.site[1],
         "function": op.site[2], "site": sites.short(op.site), "thread": op.thread.number,
         "thread_name": op.thread.name, "host": op.host,
         "stream": op.stream.name if op.stream is not None else None,
         "stream_handle": op.stream.handle if op.stream is not None else None,
         "device": op.stream.device if op.stream is not None else None,
         "captured": {"api": op.captured[1], "site": sites.short(op.captured[0])} if op.captured else None}
    if op.host:
        d["host_ms"] = op.time * 1e3
    else:
        d["submit_ms"] = op.time * 1e3
        d["start_ms"] = None if t is None or t.start is None else t.start * 1e3
        d["end_ms"] = None if t is None or t.end is None else t.end * 1e3
    return d


def finding_dict(f: Finding) -> dict:
    d = {"tool": f.tool, "kind": f.kind, "title": f.title, "count": f.count, "missing_edge": f.missing_edge,
         "observed": observed(f),
         "calls": [_op_dict(role, op, mode) for role, op, mode in zip(_roles(f), f.ops, f.modes)]}
    if f.region is not None:
        d["memory"] = {"region": f.region, "start": f.base + f.lo, "end": f.base + f.hi, "offset": f.lo,
                       "bytes": f.nbytes, "pieces": f.pieces, "span": f.hi - f.lo,
                       "exact": f.extra.get("exact", True)}
        alloc = f.extra.get("alloc")
        if alloc is not None:
            d["memory"]["allocated_by"] = {"api": alloc.api, "site": sites.short(alloc.site)}
    if f.kind == "batch-overlap":
        d["entries"] = list(f.extra["entries"])
    if f.kind == "kernel-out-of-bounds":
        d["memory"]["asked"] = f.extra.get("asked")
        d["memory"]["in_allocation"] = f.extra.get("inside")
        d["block"] = f.extra["block"]
    if f.kind == "out-of-bounds":
        d["memory"]["past_end"] = f.extra["over"]
        d["memory"]["role"] = f.extra.get("role", "memory")
    if f.kind == "wait-unrecorded-event":
        handle, created = f.extra.get("event", (0, None))
        d["event"] = {"handle": handle, "created_at": sites.short(created) if created else None}
    return d


def as_dict(san) -> dict:
    return {"tools": sorted(san.tools), "product": san.rt.product.name, "functional": san.rt.functional,
            "fingerprints": san.fingerprints, "notes": notes(san),
            "findings": [finding_dict(f) for f in san.findings],
            "possible": [finding_dict(f) for f in san.possible]}


def _end(op) -> dict:
    t = op.task
    if not op.host and t is not None and t.start is not None and t.end is not None and t.stream is not None:
        return {"type": "task", "stream": t.stream.name, "start": t.start, "end": t.end, "label": op.api}
    return {"type": "call", "thread": op.thread.ident, "time": op.time, "label": op.api}


def trace_ends(san) -> list[dict]:
    """Per finding: its name, text and its ends (tasks by model stream and times, calls by thread and time):
    plain data for models.chrome, which draws a flow arrow between the two ends."""
    out = []
    for f in san.findings:
        ops = list(f.ops)
        if f.kind == "uninitialized-read" and f.extra.get("alloc") is not None:
            ops = [f.extra["alloc"], *ops]
        out.append({"kind": f.kind, "tool": f.tool, "title": f.title, "message": f.missing_edge,
                    "sites": f.sites, "ends": [_end(op) for op in ops[:2]]})
    return out
