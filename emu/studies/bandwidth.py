"""`acl-emu bandwidth`: what nvbandwidth and ascend-dmi's bandwidth test report on hardware, from the model.

Every number comes from ACL calls run through the emulator in timing-only mode
(no bytes behind the buffers, so a 1 GiB copy costs the same wall time as a
4 KiB one) and timed with events, as a user would time them on hardware:
H2D and D2H with page-locked, registered and pageable host memory, D2D on one
device, and the device-to-device matrix (unidirectional and bidirectional) over
the product's topology. Next to each lone transfer sits the model's closed form
(`Hardware.alone`), so a user sees that the event timing and the formula agree.

    from emu.studies import bandwidth
    result = bandwidth.measure("910B", [4096, 1 << 20, 1 << 30])
"""
from __future__ import annotations

import json
import math
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from emu.models import COPY, STAGED

from .. import config
from .. import constants as C
from ..errors import AclError
from .common import (Landing, Progress, parse_sizes_arg, positive_int, event_time, format_table, host_buffer,
                     human_bytes, parse_size, parse_sizes, figure, release_host, save_figure, write_csv, write_json)

DEFAULT_SIZES = "4K..1G"
PEER_CAP = 256 << 20  # the matrix runs at the largest size up to this, unless told otherwise
REPETITIONS = 4  # copies per timed measurement; the model is deterministic, so a few suffice
PEER_REPETITIONS = 2  # the all-pairs matrix: 240 ordered pairs on A3
MEMORY_KINDS = ("pinned", "registered", "pageable")
KIND_TITLES = {
    "pinned": "page-locked host memory (aclrtMallocHost)",
    "registered": "registered host memory (aclrtHostRegisterV2 PINNED)",
    "pageable": "pageable host memory (a plain buffer; EP mode stages it through pinned chunks)",
}
_EVENT_APIS = ("aclrtCreateEvent", "aclrtRecordEvent", "aclrtSynchronizeEvent", "aclrtEventElapsedTime",
               "aclrtMemcpyAsync", "aclrtLaunchKernel")
COLUMNS = ("test", "memory", "src", "dst", "route", "bytes", "repetitions", "seconds", "gbps", "model_gbps",
           "model", "status")


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


def _ends(rt, src: int, dst: int) -> tuple:
    """(source device, destination device) of a copy between two pointers, None for host memory."""
    from ..runtime import ends

    return ends(rt.space.find(src), rt.space.find(dst))


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


def check(product: str, sizes: list[int], peer_sizes: list[int] | None = None) -> tuple[list[int], list[int]]:
    """(sizes, peer sizes), sorted; ValueError naming "sizes" or "peer size" if they cannot run on `product`."""
    sizes = sorted(set(int(s) for s in sizes))
    if not sizes or sizes[0] <= 0:
        raise ValueError("sizes: expected at least one positive size in bytes")
    peer_sizes = sorted(set(int(s) for s in (peer_sizes or default_peer_sizes(sizes))))
    if peer_sizes[0] <= 0:
        raise ValueError("peer sizes: expected positive sizes in bytes")
    prod = config.load(product)
    for what, biggest in (("size", sizes[-1]), ("peer size", peer_sizes[-1])):
        if biggest + (2 << 20) > prod.memory_bytes:
            raise ValueError(f"{what} {human_bytes(biggest)} does not fit in the {human_bytes(prod.memory_bytes)} "
                             f"of device memory of {prod.name}")
    return sizes, peer_sizes


def measure(product: str, sizes: list[int], *, peer_sizes: list[int] | None = None, progress=None,
            repetitions: int = REPETITIONS, peer_repetitions: int = PEER_REPETITIONS) -> dict:
    """Run the bandwidth study on `product`; return plain data, ready for JSON.

    The result holds `rows` (one per measurement, the CSV: test, memory, src, dst, route, bytes, seconds per
    copy, GB/s, the model's GB/s, status) and views of them: `host[memory][h2d|d2h]` and `d2d` as lists of
    points per size; `p2p` with N x N `unidirectional` / `bidirectional` GB/s (None where a pair has no
    peer access), their `model_*` closed forms, `access`, `routes` and the per-route `curves`; `skipped`
    memory kinds with the reason the runtime gave, and `notes`.

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
            s_end, d_end = _ends(rt, src, dst)
            route = hw.route(s_end, d_end)
            for n in sizes:
                t = bench.one(0, dst, src, n, kind)
                if _last_copy_kind(rt) == STAGED:  # the staging pipeline has no closed form here: give its ceiling
                    model = min(hw.staging.copy_bandwidth, n / hw.alone(s_end, d_end, n)) / 1e9
                    rows.append(_row(test, memory, _end(s_end), _end(d_end), "staged " + route, n, bench.reps, t,
                                     model, "ceiling: min(staging copy, link)"))
                else:
                    rows.append(_row(test, memory, _end(s_end), _end(d_end), route, n, bench.reps, t,
                                     n / hw.alone(s_end, d_end, n, rt.copy_unit(s_end, d_end)) / 1e9, "alone"))
                step(1, f"{test} {memory} {human_bytes(n)}")
        release_host(rt, memory, host)
    keep.clear()
    # D2D: a second buffer on the same device, for the sizes that fit beside the first
    room = p.memory_bytes - rt.space.used[rt.visible[0]] - (2 << 20)
    d2d_sizes = [n for n in sizes if n <= room]
    if len(d2d_sizes) < len(sizes):
        notes.append(f"D2D above {human_bytes(d2d_sizes[-1] if d2d_sizes else 0)} skipped: two buffers do not "
                     f"fit in {human_bytes(p.memory_bytes)} of device memory")
        step(len(sizes) - len(d2d_sizes), "d2d skipped")
    if d2d_sizes:
        other = rt.malloc(d2d_sizes[-1])
        for n in d2d_sizes:
            t = bench.one(0, other, dev, n, C.ACL_MEMCPY_DEVICE_TO_DEVICE)
            d0 = rt.visible[0]
            rows.append(_row("d2d", "device", 0, 0, hw.route(d0, d0), n, bench.reps, t,
                             n / hw.alone(d0, d0, n, rt.copy_unit(d0, d0)) / 1e9, "alone"))
            step(1, f"d2d {human_bytes(n)}")
        rt.free(other)
    rt.free(dev)


def _last_copy_kind(rt) -> str | None:
    """How the runtime ran the latest copy: "copy" (one DMA task) or "staged" (through pinned chunks)."""
    for task in reversed(rt.machine.records):
        if task.kind in (COPY, STAGED):
            return task.kind
    return None


def _end(e):
    return "host" if e is None else e


def _peers(rt, bench: _Bench, peer_sizes: list[int], reps: int, rows: list, notes: list, step) -> dict:
    """The all-pairs matrix at the largest peer size, and one pair per route kind across the peer sizes."""
    p, hw = rt.product, rt.product.hardware
    n_dev = rt.get_device_count()
    phys = rt.visible  # the model knows physical devices; ACL calls take visible ones

    def route(i: int, j: int) -> str:
        return hw.route(phys[i], phys[j])
    n = peer_sizes[-1]
    empty = [[None] * n_dev for _ in range(n_dev)]
    out = {"bytes": n, "devices": n_dev, "status": "ok", "access": [[None] * n_dev for _ in range(n_dev)],
           "routes": [[None] * n_dev for _ in range(n_dev)], "unidirectional": [r[:] for r in empty],
           "bidirectional": [r[:] for r in empty], "model_unidirectional": [r[:] for r in empty],
           "model_bidirectional": [r[:] for r in empty], "curves": []}
    if n_dev < 2:
        out["status"] = f"{p.name} has one device: no device-to-device matrix"
        notes.append(out["status"])
        return out
    # who may access whom, as a user finds out: aclrtDeviceCanAccessPeer
    reason = None
    access = out["access"]
    for i in range(n_dev):
        for j in range(n_dev):
            if i == j:
                continue
            try:
                access[i][j] = bool(rt.device_can_access_peer(i, j))
            except AclError as e:
                reason = e.message or str(e)
                access[i][j] = False
    if reason is not None:
        out["status"] = f"no peer access: {reason}"
        notes.append(out["status"])
    if any(access[i][j] is False for i in range(n_dev) for j in range(n_dev) if i != j) and reason is None:
        notes.append("pairs with aclrtDeviceCanAccessPeer = 0 are reported as n/a (None), not measured")
    bench.reps = reps
    bufs: dict[int, tuple[int, int]] = {}  # device -> (source, destination) of `n` bytes
    if any(access[i][j] for i in range(n_dev) for j in range(n_dev) if i != j):
        for d in range(n_dev):
            bench.open(d)
            bufs[d] = (rt.malloc(n), rt.malloc(n))
            if p.has("peer_copy_needs_enable"):  # both directions, for the bidirectional pairs
                for peer in range(n_dev):
                    if peer != d and access[d][peer]:
                        rt.device_enable_peer_access(peer)
    why_not = "no peer access" + (f": {reason}" if reason else " (aclrtDeviceCanAccessPeer = 0)")

    def unidirectional(i: int, j: int, size: int) -> dict:
        t = bench.one(i, bufs[j][1], bufs[i][0], size, C.ACL_MEMCPY_DEVICE_TO_DEVICE)
        model = size / hw.alone(phys[i], phys[j], size, rt.copy_unit(phys[i], phys[j])) / 1e9
        return _row("p2p", "device", i, j, route(i, j), size, reps, t, model, "alone")

    def bidirectional(i: int, j: int, size: int) -> dict:
        ta, tb = bench.pair((i, bufs[j][1], bufs[i][0]), (j, bufs[i][1], bufs[j][0]), size)
        model = _bidirectional_model(hw, phys[i], phys[j], size)
        return _row("p2p_bidir", "device", i, j, route(i, j), size, reps, max(ta, tb), model, "alone, links shared",
                    gbps=(size / ta + size / tb) / 1e9)

    # one pair per route kind, across the peer sizes (the largest comes from the matrix below)
    routes: dict[str, tuple[int, int]] = {}
    for i in range(n_dev):
        for j in range(n_dev):
            if i != j and access[i][j] and bench.events:
                routes.setdefault(route(i, j), (i, j))
    for kind, (i, j) in routes.items():
        for size in peer_sizes[:-1]:
            rows.append(unidirectional(i, j, size))
            step(1, f"p2p {kind} {human_bytes(size)}")
            rows.append(bidirectional(i, j, size))
            step(1, f"p2p bidir {kind} {human_bytes(size)}")
    # the matrix
    for i in range(n_dev):
        for j in range(n_dev):
            if i == j:
                continue
            out["routes"][i][j] = route(i, j)
            if access[i][j]:
                r = unidirectional(i, j, n)
                out["unidirectional"][i][j], out["model_unidirectional"][i][j] = r["gbps"], r["model_gbps"]
            else:
                r = _row("p2p", "device", i, j, route(i, j), n, reps, None, None, "", why_not)
            rows.append(r)
            step(1, f"p2p {i}->{j}")
    for i in range(n_dev):
        for j in range(i + 1, n_dev):
            if access[i][j] and access[j][i] and bench.events:
                r = bidirectional(i, j, n)
                for a, b in ((i, j), (j, i)):
                    out["bidirectional"][a][b], out["model_bidirectional"][a][b] = r["gbps"], r["model_gbps"]
            else:
                r = _row("p2p_bidir", "device", i, j, route(i, j), n, reps, None, None, "",
                         why_not if not (access[i][j] and access[j][i]) else "needs events and async copies")
            rows.append(r)
            step(1, f"p2p bidir {i}<->{j}")
    for kind, (i, j) in routes.items():
        uni = [r for r in rows if r["test"] == "p2p" and (r["src"], r["dst"]) == (i, j) and r["gbps"] is not None]
        bi = [r for r in rows if r["test"] == "p2p_bidir" and (r["src"], r["dst"]) == (i, j) and r["gbps"] is not None]
        out["curves"].append({"route": kind, "src": i, "dst": j, "unidirectional": [_point(r) for r in uni],
                              "bidirectional": [_point(r) for r in bi]})
    for d, (a, b) in bufs.items():
        bench.open(d)
        rt.free(a)
        rt.free(b)
    return out


def _point(r: dict) -> dict:
    return {"bytes": r["bytes"], "seconds": r["seconds"], "gbps": r["gbps"], "model_gbps": r["model_gbps"],
            "model": r["model"]}


def _ceiling(points: list[dict]) -> bool:
    return any(pt["model"].startswith("ceiling") for pt in points)


def _host_view(rows: list[dict]) -> dict:
    out: dict = {}
    for r in rows:
        if r["test"] in ("h2d", "d2h"):
            out.setdefault(r["memory"], {}).setdefault(r["test"], []).append(_point(r))
    return out


# -- tables ------------------------------------------------------------------------------------------------
def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{v:.3f}" if v < 10 else f"{v:.2f}" if v < 1000 else f"{v:.1f}"


def tables(result: dict) -> list[tuple[str, str]]:
    """(title, table text) for each memory kind, D2D, the P2P curves and the two matrices."""
    out = []
    for memory in MEMORY_KINDS:
        view = result["host"].get(memory)
        if not view:
            continue
        label = "ceiling" if _ceiling(view["h2d"] + view["d2h"]) else "model"
        body = []
        for k, point in enumerate(view["h2d"]):
            d2h = view["d2h"][k]
            body.append({"size": human_bytes(point["bytes"]), "h2d": _fmt(point["gbps"]),
                         "h2d_model": _fmt(point["model_gbps"]), "d2h": _fmt(d2h["gbps"]),
                         "d2h_model": _fmt(d2h["model_gbps"])})
        out.append((f"H2D / D2H, device 0, {KIND_TITLES[memory]}, GB/s",
                    format_table(body, [("size", "size"), ("h2d", "H2D"), ("h2d_model", f"H2D {label}"),
                                        ("d2h", "D2H"), ("d2h_model", f"D2H {label}")])))
    if result["d2d"]:
        body = [{"size": human_bytes(r["bytes"]), "gbps": _fmt(r["gbps"]), "model": _fmt(r["model_gbps"])}
                for r in result["d2d"]]
        out.append(("D2D on device 0, GB/s", format_table(body, [("size", "size"), ("gbps", "D2D"),
                                                                   ("model", "D2D model")])))
    p2p = result["p2p"]
    if p2p["curves"]:
        cols = [("size", "size")]
        sizes = sorted({pt["bytes"] for c in p2p["curves"] for pt in c["unidirectional"]})
        body = [{"size": human_bytes(s)} for s in sizes]
        for c in p2p["curves"]:
            key = f"{c['route']} {c['src']}->{c['dst']}"
            cols += [(key, key), (key + " bidir", f"{key} bidir")]
            for row, s in zip(body, sizes):
                uni = [pt["gbps"] for pt in c["unidirectional"] if pt["bytes"] == s]
                bi = [pt["gbps"] for pt in c["bidirectional"] if pt["bytes"] == s]
                row[key] = _fmt(uni[0] if uni else None)
                row[key + " bidir"] = _fmt(bi[0] if bi else None)
        out.append(("device to device by route, unidirectional and bidirectional (sum), GB/s",
                    format_table(body, cols)))
    if p2p["devices"] > 1:
        for which in ("unidirectional", "bidirectional"):
            m = p2p[which]
            body = []
            for i, line in enumerate(m):
                row = {"dev": str(i)}
                for j, v in enumerate(line):
                    row[str(j)] = "-" if i == j else _fmt(v)
                body.append(row)
            cols = [("dev", "src\\dst" if which == "unidirectional" else "i\\j")] + \
                   [(str(j), str(j)) for j in range(p2p["devices"])]
            what = "src -> dst alone" if which == "unidirectional" else "i -> j and j -> i at once, summed"
            out.append((f"device-to-device matrix, {which} ({what}), {human_bytes(p2p['bytes'])}, GB/s",
                        format_table(body, cols)))
    return out


# -- plots ----------------------------------------------------------------------------------------------------
_STYLES = {"pinned": dict(color="tab:blue", marker="o", lw=3.5, alpha=0.55),  # wide: registered lies on it
           "registered": dict(color="tab:green", marker="x", lw=1.2),
           "pageable": dict(color="tab:orange", marker="o", lw=1.5)}


def _size_axis(ax) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=4))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: human_bytes(x).replace(" ", "").replace("iB", "")))
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.grid(True, which="major", alpha=0.3)


def bandwidth_figure(result: dict):
    """Bandwidth vs message size: host<->device per (direction, memory kind); D2D and peers by route.
    Returns a matplotlib Figure (see `common.figure`)."""
    from matplotlib import colormaps

    fig = figure(figsize=(13, 5))
    left, right = fig.subplots(1, 2)
    for memory, view in result["host"].items():
        for test, style in (("h2d", "-"), ("d2h", "--")):
            pts = view.get(test, [])
            x = [pt["bytes"] for pt in pts]
            left.plot(x, [pt["gbps"] for pt in pts], style, ms=4, label=f"{test.upper()} {memory}", **_STYLES[memory])
            if not _ceiling(pts):
                left.plot(x, [pt["model_gbps"] for pt in pts], ":", color="black", lw=0.8, alpha=0.6)
    left.plot([], [], ":", color="black", lw=0.8, label="model closed form")
    left.set_title(f"{result['product']}: host <-> device 0 ({result['host_link']})")
    _size_axis(left)
    left.legend(fontsize=8)
    if result["d2d"]:
        x = [pt["bytes"] for pt in result["d2d"]]
        right.plot(x, [pt["gbps"] for pt in result["d2d"]], "-", marker="o", ms=3, color="tab:red",
                   label="D2D on device 0")
        right.plot(x, [pt["model_gbps"] for pt in result["d2d"]], ":", color="black", lw=0.8, alpha=0.6)
    for k, c in enumerate(result["p2p"]["curves"]):
        color = colormaps["tab10"]((k + 4) % 10)
        name = f"{c['route'].upper()} {c['src']}->{c['dst']}"
        for key, style, what in (("unidirectional", "-", ""), ("bidirectional", "--", " bidir (sum)")):
            pts = c[key]
            if pts:
                right.plot([pt["bytes"] for pt in pts], [pt["gbps"] for pt in pts], style, marker="s", ms=3,
                           color=color, label=name + what)
    right.plot([], [], ":", color="black", lw=0.8, label="model closed form")
    right.set_title(f"{result['product']}: device memory and peers")
    _size_axis(right)
    right.set_yscale("log")
    right.legend(fontsize=8)
    fig.suptitle(f"{result['title']}: bandwidth vs message size (timing-only emulation, event-timed)", fontsize=10)
    fig.tight_layout()
    return fig


def p2p_figure(result: dict):
    """Heatmaps of the unidirectional and bidirectional matrices, each cell annotated; n/a where no access.
    Returns a matplotlib Figure (see `common.figure`)."""
    from matplotlib import colormaps

    p2p = result["p2p"]
    n = p2p["devices"]
    fig = figure(figsize=(13, 5.8) if n <= 8 else (17, 7.6))
    axes = fig.subplots(1, 2)
    if n < 2:
        for ax in axes:
            ax.axis("off")
        axes[0].text(0.5, 0.5, p2p["status"], ha="center", va="center", wrap=True)
        fig.suptitle(f"{result['product']}: device-to-device bandwidth")
        return fig
    size = 8 if n <= 8 else 6.5
    cmap = colormaps["viridis"].with_extremes(bad="#dddddd")
    for ax, which, what in ((axes[0], "unidirectional", "unidirectional: src -> dst alone"),
                            (axes[1], "bidirectional", "bidirectional: i <-> j at once, summed")):
        m = np.array([[np.nan if v is None else v for v in line] for line in p2p[which]], dtype=float)
        finite = m[np.isfinite(m)]
        image = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, vmin=0, vmax=finite.max() if finite.size else 1)
        for i in range(n):
            for j in range(n):
                v = m[i, j]
                text = "-" if i == j else ("n/a" if not np.isfinite(v) else f"{v:.0f}" if v >= 10 else f"{v:.1f}")
                light = np.isfinite(v) and finite.size and v < 0.6 * finite.max()
                ax.text(j, i, text, ha="center", va="center", fontsize=size, color="white" if light else "black")
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.tick_params(labelsize=size + 1)
        ax.set_xlabel("destination device" if which == "unidirectional" else "device j")
        ax.set_ylabel("source device" if which == "unidirectional" else "device i")
        ax.set_title(what, fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="GB/s")
    fig.suptitle(f"{result['product']}: device-to-device bandwidth at {human_bytes(p2p['bytes'])} (GB/s; grey: "
                 f"no peer access)", fontsize=11)
    fig.tight_layout()
    return fig


def plot_bandwidth(result: dict, path: Path) -> Path:
    """Write `bandwidth_figure(result)` as a PNG."""
    return save_figure(bandwidth_figure(result), path)


def plot_p2p(result: dict, path: Path) -> Path:
    """Write `p2p_figure(result)` as a PNG."""
    return save_figure(p2p_figure(result), path)


# -- the command ----------------------------------------------------------------------------------------------
def write(result: dict, out: Path) -> dict:
    """Write bandwidth.csv, bandwidth.json, bandwidth.png and p2p.png to `out`; return their paths."""
    names = {"csv": "bandwidth.csv", "json": "bandwidth.json", "bandwidth_png": "bandwidth.png", "p2p_png": "p2p.png"}
    with Landing(out) as land:
        write_csv(land(names["csv"]), [{k: ("" if r[k] is None else r[k]) for k in COLUMNS} for r in result["rows"]])
        plot_bandwidth(result, land(names["bandwidth_png"]))
        plot_p2p(result, land(names["p2p_png"]))
        result["files"] = {k: str(land.dir / v) for k, v in names.items()}
        write_json(land(names["json"]), result)
    return result["files"]


def _resolve_product(name: str | None) -> str:
    return name or os.environ.get("ACL_EMU_PRODUCT") or config.DEFAULT_PRODUCT


def main(args) -> int:
    product = _resolve_product(args.product)
    name = config.load(product).name
    sizes = getattr(args, "sizes", None) or parse_sizes(DEFAULT_SIZES)
    peer = getattr(args, "peer_size", None)
    peer_sizes = None if peer is None else [s for s in sizes if s < peer] + [peer]
    reps = getattr(args, "reps", None) or REPETITIONS
    try:
        sizes, peer_sizes = check(product, sizes, peer_sizes)
    except ValueError as e:
        what = "--peer-size" if str(e).startswith("peer") else "--sizes"
        sys.stderr.write(f"acl-emu bandwidth: error: argument {what}: {e}\n")
        return 2
    with Progress(count_steps(product, sizes, peer_sizes), f"bandwidth {name}") as bar:
        result = measure(product, sizes, peer_sizes=peer_sizes, progress=bar, repetitions=reps,
                         peer_repetitions=min(reps, PEER_REPETITIONS))
    out = getattr(args, "out", None)
    files = write(result, Path(out) if out else Path("acl-emu-out") / f"bandwidth-{name}")
    if getattr(args, "json", False):
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['title']} ({name}): timing-only emulation, {reps} copies per measurement, timed with "
          f"{'events' if result['timer'].startswith('events') else 'the host clock'}")
    for title, text in tables(result):
        print(f"\n{title}\n{text}")
    if result["notes"]:
        print()
        for note in result["notes"]:
            print(f"note: {note}")
    print("\nmodel: the closed form of a lone copy (Hardware.alone); ceiling: min(the driver's staging copy, link) "
          "for pageable memory")
    print("wrote " + ", ".join(files.values()))
    return 0


def add_parser(sub) -> None:
    from ..cli import product_arg, typed

    p = sub.add_parser("bandwidth", help="H2D / D2H / D2D / peer bandwidth across message sizes",
                       description="What nvbandwidth and ascend-dmi's bandwidth test report, from the model: ACL "
                                   "copies in timing-only mode, timed with events.")
    p.add_argument("--product", type=product_arg, help="product name or TOML path (default: $ACL_EMU_PRODUCT or "
                                                       f"{config.DEFAULT_PRODUCT})")
    p.add_argument("--sizes", type=typed(parse_sizes_arg, "sizes"), default=None,
                   help=f"message sizes: a range of powers of two or a list (default: {DEFAULT_SIZES})")
    p.add_argument("--peer-size", type=typed(parse_size, "size"), default=None,
                   help="message size of the device-to-device matrix (default: the largest size, at most 256M)")
    p.add_argument("--reps", type=typed(positive_int, "count"), default=REPETITIONS,
                   help=f"copies per measurement (default: {REPETITIONS})")
    p.add_argument("--out", help="directory for the CSV, JSON and PNG files (default: "
                                 "acl-emu-out/bandwidth-<product>)")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of tables")
    p.set_defaults(func=main)
