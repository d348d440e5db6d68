"""The sanitizer against an independent reference, on random programs: 8 streams over 2 devices, random copies
(H2D, D2H, D2D, peer), memsets, kernels and host reads of random halves of shared buffers, in random orders.

A program synchronized as it should be (each access waits, through an event, for every earlier conflicting
access on another stream; the host waits for the writers of what it reads) has no finding, whatever the
interleaving. With some of those waits dropped, the sanitizer finds something exactly when the reference
does: two conflicting accesses (overlapping halves, one a write, not both the host's) with no path between
them in the graph of stream order, event waits, host waits and the host's program order."""
from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings, strategies as st

import emu

STREAMS, DEVICES, BUFFERS, HALF = 8, 2, 3, 4096
SIZE = 2 * HALF
H2D, D2H, D2D = 1, 2, 3


@dataclass
class Op:
    kind: str  # h2d, d2h, d2d, peer, memset, kernel, read (the host's)
    stream: int  # -1 for the host
    reads: list = field(default_factory=list)  # (buffer, half) with buffer ("h", i) or ("d", device, i)
    writes: list = field(default_factory=list)
    src: tuple = ()
    dst: tuple = ()
    halves: tuple = (0, 1)


def device_of(stream: int) -> int:
    return stream * DEVICES // STREAMS


@st.composite
def programs(draw):
    ops = []
    for _ in range(draw(st.integers(4, 30))):
        kind = draw(st.sampled_from(["h2d", "d2h", "d2d", "peer", "memset", "kernel", "read"]))
        halves = draw(st.sampled_from([(0,), (1,), (0, 1)]))
        if kind == "read":
            buf = ("h", draw(st.integers(0, BUFFERS - 1)))
            ops.append(Op(kind, -1, reads=[(buf, h) for h in halves], src=buf, halves=halves))
            continue
        stream = draw(st.integers(0, STREAMS - 1))
        dev = device_of(stream)
        host = ("h", draw(st.integers(0, BUFFERS - 1)))
        a, b = draw(st.lists(st.integers(0, BUFFERS - 1), min_size=2, max_size=2, unique=True))
        mine, other = ("d", dev, a), ("d", dev, b)
        src, dst = {"h2d": (host, mine), "d2h": (mine, host), "d2d": (mine, other), "kernel": (mine, other),
                    "peer": (("d", 1 - dev, a), mine), "memset": ((), mine)}[kind]
        reads = [(src, h) for h in halves] if src else []
        ops.append(Op(kind, stream, reads=reads, writes=[(dst, h) for h in halves], src=src, dst=dst, halves=halves))
    return ops


def conflicts(x: Op, y: Op) -> bool:
    if x.stream == -1 and y.stream == -1:
        return False
    return bool(set(x.writes) & (set(y.reads) | set(y.writes)) or set(x.reads) & set(y.writes))


def synchronized(ops: list[Op]) -> list[tuple[set, set]]:
    """For each op, (the earlier ops whose events it waits for, the earlier ops the host waits for before it)."""
    plan = []
    for i, op in enumerate(ops):
        earlier = {j for j in range(i) if conflicts(ops[j], op) and ops[j].stream != op.stream}
        if op.stream == -1:
            plan.append((set(), earlier))
        else:
            plan.append(({j for j in earlier if ops[j].stream != -1}, set()))
    return plan


def reference_races(ops: list[Op], plan) -> bool:
    """Whether two conflicting accesses have no path between them (stream order, waits, host order)."""
    n = len(ops)
    after: list[set] = [set() for _ in range(n)]  # j in after[i]: i happens before j
    host_before: set = set()  # what the host has waited for, transitively, so far
    last_on: dict[int, int] = {}
    before: list[set] = []
    for i, op in enumerate(ops):
        known = set(host_before)  # the host's program order: what it knew when it queued (or did) this
        waits, host_waits = plan[i]
        if op.stream != -1 and op.stream in last_on:
            j = last_on[op.stream]
            known |= before[j] | {j}
        for j in waits | host_waits:
            known |= before[j] | {j}
        before.append(known)
        if op.stream == -1:
            host_before = known | {i}  # a host access: it, and what it waited for, precede the host's next calls
        else:
            last_on[op.stream] = i
        for j in host_waits:
            host_before |= before[j] | {j}
    for i in range(n):
        for j in range(i):
            if conflicts(ops[j], ops[i]) and j not in before[i]:
                return True
    return False


def run(ops: list[Op], plan, functional: bool) -> list:
    rt = emu.configure("910B", functional=functional, sanitize=True, host_time="calls")
    rt.set_device(0)
    rt.device_enable_peer_access(1, 0)
    rt.set_device(1)
    rt.device_enable_peer_access(0, 0)
    streams, devbufs = [], {}
    for s in range(STREAMS):
        rt.set_device(device_of(s))
        streams.append(rt.create_stream())
    for d in range(DEVICES):
        rt.set_device(d)
        for i in range(BUFFERS):
            devbufs[("d", d, i)] = ptr = rt.malloc(SIZE)
            rt.memset(ptr, SIZE, 0, SIZE)  # written: reads are never of uninitialised bytes
    hostbufs = {("h", i): rt.malloc_host(SIZE) for i in range(BUFFERS)}
    scratch = rt.malloc_host(SIZE)
    addr = {**devbufs, **hostbufs}
    events = {}
    for i, op in enumerate(ops):
        waits, host_waits = plan[i]
        for j in sorted(host_waits):
            rt.synchronize_event(events[j])
        if op.stream == -1:
            lo, n = min(op.halves) * HALF, len(op.halves) * HALF
            rt.memcpy(scratch, SIZE, addr[op.src] + lo, n, 0)  # the host reads those bytes
            continue
        dev = device_of(op.stream)
        rt.set_device(dev)
        s = streams[op.stream]
        for j in sorted(waits):
            rt.stream_wait_event(s, events[j])
        lo, n = min(op.halves) * HALF, len(op.halves) * HALF
        dst = addr[op.dst] + lo
        if op.kind == "memset":
            rt.memset_async(dst, n, 1, n, s)
        elif op.kind == "kernel":
            rt.launch_kernel(lambda x, y: None, [(addr[op.src] + lo, n), (dst, n)], s, duration_us=3,
                             access=("r", "w"))
        else:
            kind = {"h2d": H2D, "d2h": D2H}.get(op.kind, D2D)
            rt.memcpy_async(dst, n, addr[op.src] + lo, n, kind, s)
        events[i] = e = rt.create_event()
        rt.record_event(e, s)
    for d in range(DEVICES):
        rt.set_device(d)
        rt.synchronize_device()
    return rt.sanitizer.finish()


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(programs(), st.booleans())
def test_a_correctly_synchronized_program_has_no_finding(ops, functional):
    plan = synchronized(ops)
    assert not reference_races(ops, plan)
    findings = run(ops, plan, functional)
    assert findings == [], [f.kind for f in findings]


@SETTINGS
@given(programs(), st.data())
def test_with_waits_dropped_the_sanitizer_finds_a_race_exactly_when_there_is_one(ops, data):
    plan = synchronized(ops)
    kept = []
    for waits, host_waits in plan:
        drop = data.draw(st.sets(st.sampled_from(sorted(waits | host_waits))) if waits | host_waits else st.just(set()))
        kept.append((waits - drop, host_waits - drop))
    expected = reference_races(ops, kept)
    findings = run(ops, kept, functional=False)
    assert bool(findings) == expected, ([f.kind for f in findings], expected)
    assert all(f.kind in ("race", "read-before-complete", "write-before-read", "write-before-complete")
               for f in findings)
