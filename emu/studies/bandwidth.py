"""`acl-emu bandwidth`: what nvbandwidth and ascend-dmi's bandwidth test report on hardware, from the model.

Every number comes from ACL calls run through the emulator in timing-only mode
(no bytes behind the buffers, so a 1 GiB copy costs the same wall time as a
4 KiB one) and timed with events, as a user would time them on hardware:
H2D and D2H with page-locked, registered and pageable host memory, D2D on one
device, and the device-to-device matrix (unidirectional and bidirectional) over
the product's topology. Next to each lone transfer sits the model's closed form
(`Hardware.alone`), so a user sees that the event timing and the formula agree.

    from emu.studies import bandwidth, bandwidth_report
    result = bandwidth.measure("910B", [4096, 1 << 20, 1 << 30])
    bandwidth_report.bandwidth_figure(result)

This module measures and returns plain data; `bandwidth_report` draws it (tables, figures, the files).
"""
from __future__ import annotations

from contextlib import contextmanager

from emu.models import STAGED

from .. import config
from .. import constants as C
from .. import routes as R
from ..errors import AclError
from ..runtime import queries
from .common import event_time, host_buffer, human_bytes, release_host

DEFAULT_SIZES = "4K..1G"
PEER_CAP = 256 << 20  # the matrix runs at the largest size up to this, unless told otherwise
REPETITIONS = 4  # copies per timed measurement; the model is deterministic, so a few suffice
PEER_REPETITIONS = 2  # the all-pairs matrix: 240 ordered pairs on A3
MEMORY_KINDS = ("pinned", "registered", "pageable")
_EVENT_APIS = ("aclrtCreateEvent", "aclrtRecordEvent", "aclrtSynchronizeEvent", "aclrtEventElapsedTime",
               "aclrtMemcpyAsync", "aclrtLaunchKernel")


def _hold() -> None:
    """The body of the kernel that holds a stream while the host enqueues the timed copies."""


# -- measuring -----------------------------------------------------------------------------------------
class _Bench:
    """Times copies as a user would: events around them on a stream, or the host clock without events.

    A short kernel holds the stream while the host enqueues the copies (what nvbandwidth's spin kernel
    does), so the measured time is the copies', back to back, not the host's API call overhead.
    """

    def __init__(self, rt, reps: int):
        self.rt = rt
        self.reps = reps
        p = rt.product
        self.events = all(p.supports(a) for a in _EVENT_APIS)
        self.overhead_us = p.hardware.call_overhead * 1e6
        self.ctx: dict[int, int] = {}
        self.streams: dict[int, int] = {}
        self.timer = ("events: aclrtRecordEvent / aclrtEventElapsedTime around aclrtMemcpyAsync, the stream held "
                      "by a kernel while the copies are enqueued" if self.events else
                      f"host clock around synchronous aclrtMemcpy ({p.name} has no events or async copies); "
                      f"each copy includes one API call overhead")

    def open(self, dev: int) -> None:
        """Make `dev` current, opening it (and a stream on it) the first time."""
        rt = self.rt
        if dev not in self.ctx:
            rt.set_device(dev)
            self.ctx[dev] = rt.get_context()
            self.streams[dev] = rt.create_stream() if rt.product.supports("aclrtCreateStream") else 0
        else:
            rt.set_context(self.ctx[dev])

    def close(self) -> None:
        rt = self.rt
        for dev, ctx in self.ctx.items():
            rt.set_context(ctx)
            if self.streams[dev]:
                rt.destroy_stream(self.streams[dev])
            rt.reset_device(dev)
        self.ctx.clear()
        self.streams.clear()

    def _hold_stream(self, stream: int, calls: int) -> None:
        self.rt.launch_kernel(_hold, (), stream, duration_us=2 * (calls + 8) * self.overhead_us + 10.0,
                              name="hold")

    def copy(self, dst: int, src: int, n: int, kind: int, stream: int | None) -> None:
        if stream is None:
            self.rt.memcpy(dst, n, src, n, kind)
        else:
            self.rt.memcpy_async(dst, n, src, n, kind, stream)

    def one(self, dev: int, dst: int, src: int, n: int, kind: int, reps: int | None = None) -> float:
        """Seconds per copy of `reps` copies of `n` bytes issued on device `dev`'s stream."""
        reps = reps or self.reps
        rt = self.rt
        self.open(dev)
        if not self.events:
            t0 = rt.clock
            for _ in range(reps):
                self.copy(dst, src, n, kind, None)
            return (rt.clock - t0) / reps
        stream = self.streams[dev]
        self._hold_stream(stream, reps + 4)
        return event_time(rt, stream, lambda: [self.copy(dst, src, n, kind, stream) for _ in range(reps)]) / reps

    def pair(self, a: tuple, b: tuple, n: int, reps: int | None = None) -> tuple[float, float]:
        """Seconds per copy of two copy streams started together: a = (device, dst, src), b likewise.

        Device a's stream is held by a kernel; device b's stream waits for an event recorded after it, so
        both directions start at the same instant and run concurrently.
        """
        reps = reps or self.reps
        rt = self.rt
        (da, dst_a, src_a), (db, dst_b, src_b) = a, b
        self.open(da)
        sa = self.streams[da]
        self._hold_stream(sa, 2 * (reps + 6))
        go = rt.create_event()
        rt.record_event(go, sa)
        a0, a1 = rt.create_event(), rt.create_event()
        rt.record_event(a0, sa)
        for _ in range(reps):
            rt.memcpy_async(dst_a, n, src_a, n, C.ACL_MEMCPY_DEVICE_TO_DEVICE, sa)
        rt.record_event(a1, sa)
        self.open(db)
        sb = self.streams[db]
        b0, b1 = rt.create_event(), rt.create_event()
        rt.stream_wait_event(sb, go)
        rt.record_event(b0, sb)
        for _ in range(reps):
            rt.memcpy_async(dst_b, n, src_b, n, C.ACL_MEMCPY_DEVICE_TO_DEVICE, sb)
        rt.record_event(b1, sb)
        rt.synchronize_event(a1)
        rt.synchronize_event(b1)
        ta = rt.event_elapsed_time(a0, a1) / 1e3 / reps
        tb = rt.event_elapsed_time(b0, b1) / 1e3 / reps
        for ev in (go, a0, a1, b0, b1):
            rt.destroy_event(ev)
        return ta, tb


def _gbps(n: int, seconds: float | None) -> float | None:
    return n / seconds / 1e9 if seconds else None


def _row(test: str, memory: str, src, dst, route: str, n: int, reps: int, seconds: float | None,
         model_gbps: float | None, model: str, status: str = "ok", gbps: float | None = None) -> dict:
    return {"test": test, "memory": memory, "src": src, "dst": dst, "route": route, "bytes": n,
            "repetitions": reps, "seconds": seconds, "gbps": gbps if gbps is not None else _gbps(n, seconds),
            "model_gbps": model_gbps, "model": model, "status": status}


def _checked(product, bench: "_Bench", row: dict, hw_route: str) -> dict:
    """`row` with the route the timing model times it by (`emu.routes`: timing_route) and whether an independent
    measurement checks that route on `product` (validated). `route` stays the hardware path it took."""
    timing = R.of_copy(hw_route, row["memory"], row["bytes"], blocking=not bench.events)
    return {**row, "timing_route": timing, "validated": timing not in product.unvalidated}


def _routes_of(product, rows: list[dict]) -> dict:
    """The timing routes of the measured rows: routes, unvalidated_routes (ROUTES order) and the note line."""
    used = [r for r in R.ROUTES if any(row["timing_route"] == r and row["gbps"] is not None for row in rows)]
    return {"routes": used, "unvalidated_routes": R.unvalidated(product, used), "routes_note": R.note(product, used)}


def _bidirectional_model(hw, i: int, j: int, n: int) -> float:
    """GB/s of i->j and j->i at once, summed: each flow gets its bottleneck link's capacity divided by the
    flows crossing it (the two flows are symmetric, so this is the max-min fair share)."""
    paths = []
    for s, d in ((i, j), (j, i)):
        route = hw.route(s, d)
        links, wire = hw.path(route, s, d, n)
        paths.append((route, links, wire))
    use: dict[str, int] = {}
    for _, links, _ in paths:
        for name, _, _ in links:
            use[name] = use.get(name, 0) + 1
    total = 0.0
    for route, links, wire in paths:
        rate = min(cap / (w * use[name]) for name, cap, w in links)
        total += n / (hw.latency(route) + wire / rate) / 1e9
    return total


def default_peer_sizes(sizes: list[int]) -> list[int]:
    """The sizes the peer copies run at: those up to 256 MiB (or 256 MiB alone if all are larger)."""
    return [s for s in sizes if s <= PEER_CAP] or [PEER_CAP]


def _peer_routes(hw, groups, n: int) -> dict[str, tuple[int, int]]:
    """The first pair of each route kind among devices that can access each other (the size curves)."""
    out: dict[str, tuple[int, int]] = {}
    for i in range(n):
        for j in range(n):
            if i != j and any(i in g and j in g for g in groups):
                out.setdefault(hw.route(i, j), (i, j))
    return out


def count_steps(product: str, sizes: list[int], peer_sizes: list[int] | None = None) -> int:
    """How many progress steps `measure` takes, for a progress bar made before it starts."""
    p = config.load(product)
    peer_sizes = sorted(set(peer_sizes or default_peer_sizes(sizes)))
    n = p.device_count
    routes = _peer_routes(p.hardware, p.peer_groups, n) if n > 1 and p.has("p2p") else {}
    return (len(MEMORY_KINDS) * 2 + 1) * len(sizes) + 2 * len(routes) * (len(peer_sizes) - 1) + \
        n * (n - 1) + n * (n - 1) // 2


@contextmanager
def _timing_only(product: str):
    """A fresh timing-only runtime for the study."""
    import emu

    yield emu.configure(product=product, functional=False)


class SizeError(ValueError):
    """Sizes the study cannot run; `argument` says which: "sizes" (H2D / D2H / D2D) or "peer_sizes"."""

    def __init__(self, argument: str, message: str):
        super().__init__(message)
        self.argument = argument


def check(product: str, sizes: list[int], peer_sizes: list[int] | None = None) -> tuple[list[int], list[int]]:
    """(sizes, peer sizes), sorted; a SizeError (a ValueError) naming "sizes" or "peer size" if they cannot
    run on `product`."""
    sizes = sorted(set(int(s) for s in sizes))
    if not sizes or sizes[0] <= 0:
        raise SizeError("sizes", "sizes: expected at least one positive size in bytes")
    peer_sizes = sorted(set(int(s) for s in (peer_sizes or default_peer_sizes(sizes))))
    if peer_sizes[0] <= 0:
        raise SizeError("peer_sizes", "peer sizes: expected positive sizes in bytes")
    prod = config.load(product)
    for argument, what, biggest in (("sizes", "size", sizes[-1]), ("peer_sizes", "peer size", peer_sizes[-1])):
        if biggest + (2 << 20) > prod.memory_bytes:
            raise SizeError(argument, f"{what} {human_bytes(biggest)} does not fit in the "
                                      f"{human_bytes(prod.memory_bytes)} of device memory of {prod.name}")
    return sizes, peer_sizes


def measure(product: str, sizes: list[int], *, peer_sizes: list[int] | None = None, progress=None,
            repetitions: int = REPETITIONS, peer_repetitions: int = PEER_REPETITIONS) -> dict:
    """Run the bandwidth study on `product`; return plain data, ready for JSON.

    The result holds `rows` (one per measurement, the CSV: test, memory, src, dst, route (the hardware path),
    bytes, seconds per copy, GB/s, the model's GB/s, status, timing_route (its `emu.routes` name) and
    validated (whether an independent measurement checks that route on the product)) and views of them:
    `host[memory][h2d|d2h]` and `d2d` as lists of points per size; `p2p` with N x N `unidirectional` /
    `bidirectional` GB/s (None where a pair has no peer access), their `model_*` closed forms, `access`,
    `routes`, `timing_routes`, `validated` and the per-route `curves`; `skipped` memory kinds with the
    reason the runtime gave, and `notes`. `routes` lists the timing routes the measured rows rest on,
    `unvalidated_routes` those of them no independent measurement checks, `routes_note` says so in a line.

    sizes: message sizes in bytes for H2D / D2H / D2D. peer_sizes: sizes for device-to-device copies
    (default: `sizes` up to 256 MiB); the all-pairs matrix runs at the largest, and one pair of each route
    kind (HCCS, SIO, UB, PCIe through the host) runs at every one. progress: an object with
    `advance(n, note)` (a `common.Progress` of `count_steps(...)` steps). The emulator's current runtime is
    the study's afterwards, so `emu.records()` / `emu.write_trace()` show what ran.
    """
    sizes, peer_sizes = check(product, sizes, peer_sizes)
    step = progress.advance if progress is not None and hasattr(progress, "advance") else (lambda n=1, note="": None)

    with _timing_only(product) as rt:
        p, hw = rt.product, rt.product.hardware
        rt.init()
        bench = _Bench(rt, repetitions)
        rows: list[dict] = []
        notes: list[str] = []
        skipped: dict[str, str] = {}
        bench.open(0)
        _host_and_d2d(rt, bench, sizes, rows, notes, skipped, step)
        matrix = _peers(rt, bench, peer_sizes, peer_repetitions, rows, notes, step)
        bench.close()
        rt.finalize()

    result = {
        "product": p.name,
        "title": p.title,
        "mode": p.deployment,
        "devices": matrix["devices"],
        "timing_only": True,
        "timer": bench.timer,
        "repetitions": repetitions,
        "peer_repetitions": peer_repetitions,
        "sizes": sizes,
        "peer_sizes": peer_sizes,
        "host_link": hw.host_link.kind,
        "staging_copy_gbps": hw.staging.copy_bandwidth / 1e9,
        "host_link_gbps": hw.host_link.capacity / 1e9,
        "skipped": skipped,
        "notes": notes,
        "host": _host_view(rows),
        "d2d": [_point(r) for r in rows if r["test"] == "d2d"],
        "p2p": matrix,
        "rows": rows,
        **_routes_of(p, rows),
    }
    return result


def _host_and_d2d(rt, bench: _Bench, sizes: list[int], rows: list, notes: list, skipped: dict, step) -> None:
    """H2D / D2H on device 0 with each kind of host memory, then D2D on device 0."""
    p, hw = rt.product, rt.product.hardware
    big = sizes[-1]
    dev = rt.malloc(big)
    keep = []  # the numpy buffers behind pageable and registered memory: untouched, so no RAM is used
    for memory in MEMORY_KINDS:
        try:
            host = host_buffer(rt, memory, big, keep)
        except AclError as e:
            skipped[memory] = e.message or str(e)
            notes.append(f"{memory} host memory skipped: {skipped[memory]}")
            step(2 * len(sizes), f"{memory} skipped")
            continue
        if memory == "pinned" and not p.ep_mode:
            notes.append(f"{p.name} runs in RC mode: aclrtMallocHost memory is device memory, so its copies "
                         f"run on-chip")
        for test, dst, src, kind in (("h2d", dev, host, C.ACL_MEMCPY_HOST_TO_DEVICE),
                                     ("d2h", host, dev, C.ACL_MEMCPY_DEVICE_TO_HOST)):
            s_end, d_end = queries.copy_ends(rt, src, dst)
            route = hw.route(s_end, d_end)
            for n in sizes:
                t = bench.one(0, dst, src, n, kind)
                if queries.last_copy_kind(rt) == STAGED:  # the staging pipeline has no closed form: its ceiling
                    model = min(hw.staging.copy_bandwidth, n / hw.alone(s_end, d_end, n)) / 1e9
                    row = _row(test, memory, _end(s_end), _end(d_end), "staged " + route, n, bench.reps, t,
                               model, "ceiling: min(staging copy, link)")
                else:
                    row = _row(test, memory, _end(s_end), _end(d_end), route, n, bench.reps, t,
                               n / hw.alone(s_end, d_end, n, rt.copy_unit(s_end, d_end)) / 1e9, "alone")
                rows.append(_checked(p, bench, row, route))
                step(1, f"{test} {memory} {human_bytes(n)}")
        release_host(rt, memory, host)
    keep.clear()
    # D2D: a second buffer on the same device, for the sizes that fit beside the first
    room = p.memory_bytes - queries.device_memory_used(rt, 0) - (2 << 20)
    d2d_sizes = [n for n in sizes if n <= room]
    if len(d2d_sizes) < len(sizes):
        notes.append(f"D2D above {human_bytes(d2d_sizes[-1] if d2d_sizes else 0)} skipped: two buffers do not "
                     f"fit in {human_bytes(p.memory_bytes)} of device memory")
        step(len(sizes) - len(d2d_sizes), "d2d skipped")
    if d2d_sizes:
        other = rt.malloc(d2d_sizes[-1])
        for n in d2d_sizes:
            t = bench.one(0, other, dev, n, C.ACL_MEMCPY_DEVICE_TO_DEVICE)
            d0 = queries.physical_devices(rt)[0]
            row = _row("d2d", "device", 0, 0, hw.route(d0, d0), n, bench.reps, t,
                       n / hw.alone(d0, d0, n, rt.copy_unit(d0, d0)) / 1e9, "alone")
            rows.append(_checked(p, bench, row, hw.route(d0, d0)))
            step(1, f"d2d {human_bytes(n)}")
        rt.free(other)
    rt.free(dev)


def _end(e):
    return "host" if e is None else e


class _Peers:
    """The device-to-device copies of one study: routes between visible devices (the model knows physical
    ones), the rows they make, and one (source, destination) pair of buffers per device once `open`ed."""

    def __init__(self, rt, bench: _Bench, reps: int):
        self.rt, self.bench, self.reps = rt, bench, reps
        self.p, self.hw = rt.product, rt.product.hardware
        self.n_dev = rt.get_device_count()
        self.phys = queries.physical_devices(rt)  # the model knows physical devices; ACL calls take visible ones
        self.bufs: dict[int, tuple[int, int]] = {}  # device -> (source, destination) of the matrix's bytes

    def route(self, i: int, j: int) -> str:
        return self.hw.route(self.phys[i], self.phys[j])

    def pairs(self):
        """Every ordered pair of distinct devices, row by row."""
        return ((i, j) for i in range(self.n_dev) for j in range(self.n_dev) if i != j)

    def row(self, test: str, i: int, j: int, size: int, *args, **kwargs) -> dict:
        route = self.route(i, j)
        return _checked(self.p, self.bench, _row(test, "device", i, j, route, size, self.reps, *args, **kwargs),
                        route)

    def open(self, n: int, access: list) -> None:
        """Two buffers of `n` bytes on each device and, where the product needs it, peer access enabled
        both ways for every pair that may access each other."""
        rt = self.rt
        for d in range(self.n_dev):
            self.bench.open(d)
            self.bufs[d] = (rt.malloc(n), rt.malloc(n))
            if self.p.has("peer_copy_needs_enable"):  # both directions, for the bidirectional pairs
                for peer in range(self.n_dev):
                    if peer != d and access[d][peer]:
                        rt.device_enable_peer_access(peer)

    def close(self) -> None:
        for d, (a, b) in self.bufs.items():
            self.bench.open(d)
            self.rt.free(a)
            self.rt.free(b)

    def unidirectional(self, i: int, j: int, size: int) -> dict:
        phys, bufs = self.phys, self.bufs
        t = self.bench.one(i, bufs[j][1], bufs[i][0], size, C.ACL_MEMCPY_DEVICE_TO_DEVICE)
        model = size / self.hw.alone(phys[i], phys[j], size, self.rt.copy_unit(phys[i], phys[j])) / 1e9
        return self.row("p2p", i, j, size, t, model, "alone")

    def bidirectional(self, i: int, j: int, size: int) -> dict:
        bufs = self.bufs
        ta, tb = self.bench.pair((i, bufs[j][1], bufs[i][0]), (j, bufs[i][1], bufs[j][0]), size)
        model = _bidirectional_model(self.hw, self.phys[i], self.phys[j], size)
        return self.row("p2p_bidir", i, j, size, max(ta, tb), model, "alone, links shared",
                        gbps=(size / ta + size / tb) / 1e9)


def _empty_matrix(n: int, n_dev: int) -> dict:
    """The matrix result before anything is measured: every cell None, status "ok"."""
    empty = [[None] * n_dev for _ in range(n_dev)]
    return {"bytes": n, "devices": n_dev, "status": "ok", "access": [[None] * n_dev for _ in range(n_dev)],
            "routes": [r[:] for r in empty], "timing_routes": [r[:] for r in empty],
            "validated": [r[:] for r in empty], "unidirectional": [r[:] for r in empty],
            "bidirectional": [r[:] for r in empty], "model_unidirectional": [r[:] for r in empty],
            "model_bidirectional": [r[:] for r in empty], "curves": []}


def _peer_access(peers: _Peers, access: list) -> str | None:
    """Fill `access` as a user finds it out, with aclrtDeviceCanAccessPeer (a refused call: False); the
    reason of the last refusal, or None."""
    reason = None
    for i, j in peers.pairs():
        try:
            access[i][j] = bool(peers.rt.device_can_access_peer(i, j))
        except AclError as e:
            reason = e.message or str(e)
            access[i][j] = False
    return reason


def _route_sizes(peers: _Peers, access: list, peer_sizes: list[int], rows: list, step) -> dict:
    """One pair per route kind (the first reachable in row order), across the peer sizes but the largest
    (the matrix measures that): {route: (i, j)}, empty without events."""
    routes: dict[str, tuple[int, int]] = {}
    for i, j in peers.pairs():
        if access[i][j] and peers.bench.events:
            routes.setdefault(peers.route(i, j), (i, j))
    for kind, (i, j) in routes.items():
        for size in peer_sizes[:-1]:
            rows.append(peers.unidirectional(i, j, size))
            step(1, f"p2p {kind} {human_bytes(size)}")
            rows.append(peers.bidirectional(i, j, size))
            step(1, f"p2p bidir {kind} {human_bytes(size)}")
    return routes


def _unidirectional_matrix(peers: _Peers, out: dict, n: int, why_not: str, rows: list, step) -> None:
    """Every ordered pair at `n` bytes; a pair without access gets a row of None, saying `why_not`."""
    access = out["access"]
    for i, j in peers.pairs():
        out["routes"][i][j] = peers.route(i, j)
        if access[i][j]:
            r = peers.unidirectional(i, j, n)
            out["unidirectional"][i][j], out["model_unidirectional"][i][j] = r["gbps"], r["model_gbps"]
        else:
            r = peers.row("p2p", i, j, n, None, None, "", why_not)
        out["timing_routes"][i][j], out["validated"][i][j] = r["timing_route"], r["validated"]
        rows.append(r)
        step(1, f"p2p {i}->{j}")


def _bidirectional_matrix(peers: _Peers, out: dict, n: int, why_not: str, rows: list, step) -> None:
    """Every unordered pair at `n` bytes, both cells of the matrix the same; measured only with access both
    ways and events."""
    access = out["access"]
    for i in range(peers.n_dev):
        for j in range(i + 1, peers.n_dev):
            if access[i][j] and access[j][i] and peers.bench.events:
                r = peers.bidirectional(i, j, n)
                for a, b in ((i, j), (j, i)):
                    out["bidirectional"][a][b], out["model_bidirectional"][a][b] = r["gbps"], r["model_gbps"]
            else:
                r = peers.row("p2p_bidir", i, j, n, None, None, "",
                              why_not if not (access[i][j] and access[j][i]) else "needs events and async copies")
            rows.append(r)
            step(1, f"p2p bidir {i}<->{j}")


def _curves(routes: dict, rows: list) -> list[dict]:
    """Per route kind, its pair's measured points across the sizes, one way and both ways."""
    curves = []
    for kind, (i, j) in routes.items():
        uni = [r for r in rows if r["test"] == "p2p" and (r["src"], r["dst"]) == (i, j) and r["gbps"] is not None]
        bi = [r for r in rows if r["test"] == "p2p_bidir" and (r["src"], r["dst"]) == (i, j) and r["gbps"] is not None]
        curves.append({"route": kind, "src": i, "dst": j, "unidirectional": [_point(r) for r in uni],
                       "bidirectional": [_point(r) for r in bi]})
    return curves


def _peers(rt, bench: _Bench, peer_sizes: list[int], reps: int, rows: list, notes: list, step) -> dict:
    """The all-pairs matrix at the largest peer size, and one pair per route kind across the peer sizes."""
    peers = _Peers(rt, bench, reps)
    n, n_dev = peer_sizes[-1], peers.n_dev
    out = _empty_matrix(n, n_dev)
    if n_dev < 2:
        out["status"] = f"{rt.product.name} has one device: no device-to-device matrix"
        notes.append(out["status"])
        return out
    access = out["access"]
    reason = _peer_access(peers, access)
    if reason is not None:
        out["status"] = f"no peer access: {reason}"
        notes.append(out["status"])
    if any(access[i][j] is False for i, j in peers.pairs()) and reason is None:
        notes.append("pairs with aclrtDeviceCanAccessPeer = 0 are reported as n/a (None), not measured")
    bench.reps = reps
    if any(access[i][j] for i, j in peers.pairs()):
        peers.open(n, access)
    why_not = "no peer access" + (f": {reason}" if reason else " (aclrtDeviceCanAccessPeer = 0)")
    routes = _route_sizes(peers, access, peer_sizes, rows, step)
    _unidirectional_matrix(peers, out, n, why_not, rows, step)
    _bidirectional_matrix(peers, out, n, why_not, rows, step)
    out["curves"] = _curves(routes, rows)
    peers.close()
    return out


def _point(r: dict) -> dict:
    return {"bytes": r["bytes"], "seconds": r["seconds"], "gbps": r["gbps"], "model_gbps": r["model_gbps"],
            "model": r["model"], "timing_route": r["timing_route"], "validated": r["validated"]}


def _host_view(rows: list[dict]) -> dict:
    out: dict = {}
    for r in rows:
        if r["test"] in ("h2d", "d2h"):
            out.setdefault(r["memory"], {}).setdefault(r["test"], []).append(_point(r))
    return out
