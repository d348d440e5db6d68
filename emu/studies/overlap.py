"""`acl-emu overlap`: plan copy/compute overlap - how many streams and chunks hide the copies behind compute.

The question a user brings: "my step copies H2D bytes in, computes for US
microseconds, copies D2H bytes out; how should I split it?" The study builds the
pipeline a user would write (input split into chunks; chunk i's H2D, kernel and
D2H queued on stream i % streams), runs it through the emulator in timing-only
mode, times the iteration with events, and sweeps streams x chunks. Each
schedule runs on its own fresh runtime so the results do not depend on sweep
order, and the process's own runtime (emu.current()) is left alone.

    from emu.studies import overlap, overlap_report
    result = overlap.plan("910B", 64 << 20, 16 << 20, 1500, [1, 2, 4], [1, 4, 16])
    overlap_report.gantt_figure(result, overlap.timelines("910B", result))

This module measures and returns plain data; `overlap_report` draws it (tables, the Gantt chart, the files).
"""
from __future__ import annotations

import json
import mmap
import sys
from pathlib import Path

import numpy as np

from .. import config
from .. import routes as R
from ..constants import D2H, H2D
from ..runtime import queries
from .common import human_bytes

MAX_STREAMS = 64  # beyond this a sweep is more streams than any pipeline uses
MAX_CHUNKS = 4096
DEFAULT_STREAMS = "1..8"
DEFAULT_CHUNKS = "1,2,4,8,16"
# The search past the grid's edge: while the best setting sits on the edge (the most chunks or streams tried),
# try twice as many; stop when that no longer improves the best by IMPROVES (relative), or at these caps.
SEARCH_MAX_CHUNKS = 1024
SEARCH_MAX_STREAMS = 16
IMPROVES = 0.002
_LINUX_MAP_NORESERVE = 0x4000  # <sys/mman.h>; Python's mmap module names it from 3.13 on only
MAX_PLAN_CHUNKS = 1 << 20  # chunks one plan's grid simulates in all (a minute or so): more is a typo, not a plan
ALLOCATION_SLACK = 2 << 20  # bytes an allocation may take beyond its size (rounding, padding), at most


PIPELINE_APIS = ("aclrtCreateStream", "aclrtCreateEvent", "aclrtRecordEvent", "aclrtStreamWaitEvent",
                 "aclrtSynchronizeEvent", "aclrtEventElapsedTime", "aclrtMalloc", "aclrtMemcpyAsync",
                 "aclrtLaunchKernel")


def missing_apis(product, pageable: bool = False) -> list[str]:
    """The APIs the pipeline uses that `product` lacks (IPV350 has no streams or events): the study cannot
    run there, and saying so up front beats a 207000 from the middle of a sweep."""
    p = _product(product)
    needed = PIPELINE_APIS + (() if pageable else ("aclrtMallocHost",))
    return [a for a in needed if not p.supports(a)]


def _product(product) -> config.Product:
    return product if isinstance(product, config.Product) else config.load(product)


def _split(n: int, parts: int) -> list[tuple[int, int]]:
    """(offset, size) of `parts` near-equal pieces of n bytes: the first n % parts pieces take one byte more."""
    base, extra = divmod(n, parts)
    out, off = [], 0
    for i in range(parts):
        size = base + (1 if i < extra else 0)
        out.append((off, size))
        off += size
    return out


def _compute(inputs, outputs) -> None:
    """The chunk's kernel: in timing-only mode it only takes its declared time."""


def copy_times(product, h2d: int, d2h: int, pageable: bool = False, engines: int = 1) -> dict:
    """Seconds the whole H2D and the whole D2H take with the machine to themselves (hardware.alone),
    over the route a copy from the study's host buffers really takes (page-locked host memory is device
    memory in RC mode), on `engines` DMA engines at once. Pageable copies go through the staging
    pipeline, whose closed form is not `alone`: the bound stays the page-locked one, which is what
    pinning would buy."""
    p = _product(product)
    hw = p.hardware
    host = None if p.ep_mode else 0
    return {"h2d": hw.alone(host, 0, h2d, engines=engines), "d2h": hw.alone(0, host, d2h, engines=engines)}


def copy_links(product) -> dict[str, str]:
    """The link the H2D and the D2H copies cross, by direction (one link in RC mode: on-chip memory)."""
    p = _product(product)
    hw = p.hardware
    host = None if p.ep_mode else 0
    out = {}
    for what, (src, dst) in (("H2D", (host, 0)), ("D2H", (0, host))):
        spec, _ = hw.path(hw.route(src, dst), src, dst, 0)
        out[what] = spec[0][0]
    return out


class Schedule:
    """One pipeline run on a fresh timing-only runtime; keeps the runtime for its records and trace."""

    def __init__(self, product, h2d: int, d2h: int, compute_us: float, streams: int, chunks: int,
                 pageable: bool):
        from ..runtime import Runtime

        p = _product(product)
        self.product = p
        self.streams, self.chunks, self.pageable = streams, chunks, pageable
        rt = self.rt = Runtime(p, functional=False)
        rt.set_device(0)
        handles = [rt.create_stream() for _ in range(streams)]
        self.stream_names = {queries.stream_name(rt, h): f"stream {i}" for i, h in enumerate(handles)}
        dev_in, dev_out = rt.malloc(h2d), rt.malloc(d2h)
        if pageable:  # plain process memory the emulator is shown: untouched pages, no bytes move
            self._keep = (untouched(h2d), untouched(d2h))
            host_in, host_out = (rt.register_host(a) for a in self._keep)
        else:
            host_in, host_out = rt.malloc_host(h2d), rt.malloc_host(d2h)
        ins, outs = _split(h2d, chunks), _split(d2h, chunks)
        share = compute_us / chunks
        memory = "pageable" if pageable else "pinned"
        link_in, link_out = (p.hardware.route(*queries.copy_ends(rt, src, dst))
                             for src, dst in ((host_in, dev_in), (dev_out, host_out)))
        self.routes = {"launch"}  # every route the schedule issues work on (emu.routes), added as issued

        start, stop = rt.create_event(), rt.create_event()
        rt.record_event(start, handles[0])
        for h in handles[1:]:  # fork: no stream starts before the iteration does
            rt.stream_wait_event(h, start)
            self.routes.add("event")
        for i, ((ioff, isz), (ooff, osz)) in enumerate(zip(ins, outs)):
            h = handles[i % streams]
            # stream order carries chunk i's dependencies: its H2D, then its kernel, then its D2H
            rt.memcpy_async(dev_in + ioff, isz, host_in + ioff, isz, H2D, h)
            self.routes.add(R.of_copy(link_in, memory, isz))
            rt.launch_kernel(_compute, [(dev_in + ioff, isz), (dev_out + ooff, osz)], h, duration_us=share,
                             name=f"compute[{i}]")
            rt.memcpy_async(host_out + ooff, osz, dev_out + ooff, osz, D2H, h)
            self.routes.add(R.of_copy(link_out, memory, osz))
        for h in handles[1:]:  # join: the stop event follows every stream's last chunk
            done = rt.create_event()
            rt.record_event(done, h)
            rt.stream_wait_event(handles[0], done)
            self.routes.add("event")
        rt.record_event(stop, handles[0])
        rt.synchronize_event(stop)
        self.iteration = rt.event_elapsed_time(start, stop) / 1e3
        self.t0 = queries.event_recorded_at(rt, start)
        self.t1 = queries.event_recorded_at(rt, stop)
        self.compute = compute_us * 1e-6

    @staticmethod
    def kind_of(task: dict) -> str | None:
        """H2D / kernel / D2H for a task of the pipeline (by its route, or for a copy with no route, by which
        end is the host), None for markers and for copies whose route does not say (RC products: host
        memory is device memory, the copies run on-chip)."""
        if task["kind"] == "kernel":
            return "kernel"
        if task["kind"] not in ("copy", "staged"):
            return None
        route = task["route"] or ("h2d" if task["src"] is None else "d2h" if task["dst"] is None else None)
        return {"h2d": "H2D", "d2h": "D2H"}.get(route)

    def links(self) -> dict[str, str]:
        return copy_links(self.product)

    def metrics(self) -> dict:
        it = self.iteration
        links = self.links()
        usage = queries.link_usage(self.rt)
        # the share of each direction's capacity the iteration used (wire bytes, so TLP headers and the
        # read requests an H2D sends upstream count too)
        util = {what: (usage[name]["bytes"] / (usage[name]["capacity"] * it) if name in usage and it > 0 else 0.0)
                for what, name in links.items()}
        engines = self.product.hardware.engines_per_device
        busy = kern = 0.0
        for t in queries.completed_tasks(self.rt):
            if t["start"] is None or t["device"] != 0:
                continue
            span = max(0.0, min(t["end"], self.t1) - max(t["start"], self.t0))
            if t["kind"] in ("copy", "fill") and t["engine"] is not None:
                busy += span
            elif t["kind"] == "kernel":
                kern += span
        return {
            "streams": self.streams,
            "chunks": self.chunks,
            "iteration_ms": it * 1e3,
            "exposed_copy_ms": (it - self.compute) * 1e3,
            "link_h2d_util": util["H2D"],
            "link_d2h_util": util["D2H"],
            "engine_util": busy / (engines * it) if it > 0 else 0.0,
            "compute_util": kern / it if it > 0 else 0.0,
            "links": links,
        }

    def segments(self) -> list[dict]:
        """Gantt bars, in ms from the iteration's start: one row per stream, the AI core and each link."""
        out = []
        for t in queries.completed_tasks(self.rt):
            kind = self.kind_of(t)
            if kind is None or t["start"] is None:
                continue
            a, b = (t["start"] - self.t0) * 1e3, (t["end"] - self.t0) * 1e3
            if not t["part"]:
                name = t["stream"] if t["stream"] is not None else ""
                row = self.stream_names.get(name, "sync copies" if name.endswith("/sync") else name)
                out.append({"row": row, "kind": kind, "start_ms": a, "end_ms": b})
            if kind == "kernel":
                out.append({"row": "AI core", "kind": kind, "start_ms": a, "end_ms": b})
            for link in t["links"]:
                out.append({"row": f"link {link}", "kind": kind, "start_ms": a, "end_ms": b})
        return out

    def timeline(self) -> dict:
        """The schedule as plain data: streams, chunks, iteration_ms, segments (the Gantt bars) and trace (the
        Chrome trace of its runtime, as `Runtime.write_trace` writes it)."""
        return {"streams": self.streams, "chunks": self.chunks, "iteration_ms": self.iteration * 1e3,
                "segments": self.segments(), "trace": queries.chrome_trace(self.rt)}


def untouched(nbytes: int) -> np.ndarray:
    """`nbytes` of plain process memory whose pages are never touched: an anonymous mapping, reserved without
    swap where the system allows it, so that a pipeline larger than this host's memory still runs (no bytes
    move in a timing-only run). A ValueError if the system refuses even that."""
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    if flags:
        flags |= getattr(mmap, "MAP_NORESERVE", _LINUX_MAP_NORESERVE if sys.platform.startswith("linux") else 0)
    try:
        region = mmap.mmap(-1, nbytes, flags=flags) if flags else mmap.mmap(-1, nbytes)
    except (OSError, OverflowError, MemoryError) as e:
        raise ValueError(f"{nbytes} bytes of pageable host memory: this host cannot map them ({e})") from None
    return np.frombuffer(region, dtype=np.uint8)


def check_memory(product, h2d: int, d2h: int) -> None:
    """The pipeline's two device buffers fit in one device of `product` (with room for each allocation's
    rounding and padding); a ValueError naming both sizes and the device memory otherwise."""
    p = _product(product)
    if h2d + d2h + 2 * ALLOCATION_SLACK > p.memory_bytes:
        raise ValueError(f"h2d {human_bytes(h2d)} and d2h {human_bytes(d2h)}: the pipeline's two device buffers "
                         f"do not fit in the {human_bytes(p.memory_bytes)} of device memory of {p.name}")


def grid_settings(streams_list, chunks_list) -> list[tuple[int, int]]:
    """The (streams, chunks) settings a grid runs: each distinct pair with streams <= chunks (more streams than
    chunks would sit idle), by chunks, then streams."""
    streams_list, chunks_list = sorted(set(streams_list)), sorted(set(chunks_list))
    return [(s, c) for c in chunks_list for s in streams_list if s <= c]


def check_work(streams_list, chunks_list) -> None:
    """The grid's settings (streams <= chunks) simulate at most MAX_PLAN_CHUNKS chunks in all; a ValueError
    saying how many otherwise (--streams 1..64 --chunks 1..4096 would run for hours)."""
    settings = grid_settings(streams_list, chunks_list)
    total = sum(c for _, c in settings)
    if total > MAX_PLAN_CHUNKS:
        raise ValueError(f"{len(settings)} streams x chunks settings simulate {total} chunks in all, more than "
                         f"{MAX_PLAN_CHUNKS}: ask for fewer streams or chunks")


def compute_from_run(spec: str, launches: int = 1) -> dict:
    """The compute time per iteration from a kernel a run measured: `spec` is RUN.json[:KERNEL], RUN.json the
    summary `acl-emu run --json` printed (its "kernels": `runsummary.kernels`), KERNEL a kernel's name (default:
    the kernel with the most time in the run; of a kernel launched with several blockDims, its blockDim with the
    most time). The compute per iteration is the kernel's mean simulated time per launch (its total over its
    launches in the run) times `launches`, the launches of it one iteration makes (default 1): the mean, not
    the total, because the run's launches are its iterations' or its warm-ups', which the planner cannot tell.

    Returns {"compute_us", "file", "kernel", "block_dim", "run_launches", "mean_us", "launches", "how", "line"}
    (line: "compute 123.400 us: kernel add_custom's mean of 8 launches in run.json (blockDim 8; estimated:
    ...)"). A ValueError of one line naming the file (and the kernels it has) when the file is not such a
    summary, or names no such kernel, or the kernel took no time."""
    from .. import files

    if launches < 1:
        raise ValueError(f"launches {launches}: expected 1 or more launches of the kernel per iteration")
    path, kernel = spec, None
    if ":" in spec and not Path(spec).exists():
        path, _, kernel = spec.rpartition(":")
        kernel = kernel or None
    what = "a run's summary (acl-emu run --json)"
    try:
        data = json.loads(files.read_text(path, files.PROFILE_BYTES, what))
    except files.FileRefused as e:
        raise ValueError(str(e)) from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e.msg} at line {e.lineno}): expected {what}") from None
    if not isinstance(data, dict) or "kernels" not in data:
        raise ValueError(f"{path}: not {what}: it has no \"kernels\"")
    found = data["kernels"]
    if found is None:
        raise ValueError(f"{path}: the run's kernels are not known (it kept only some of its task records: run it "
                         f"without configure(records=N))")
    if not isinstance(found, list) or not all(isinstance(k, dict) and {"name", "launches", "total_us"} <= set(k)
                                              for k in found):
        raise ValueError(f"{path}: its \"kernels\" are not those of {what}")
    if not found:
        raise ValueError(f"{path}: the run launched no kernel")
    names = list(dict.fromkeys(str(k["name"]) for k in found))
    chosen = [k for k in found if kernel is None or k["name"] == kernel]
    if not chosen:
        raise ValueError(f"{path}: no kernel {kernel!r}; the run launched {', '.join(names)}")
    k = max(chosen, key=lambda k: k["total_us"])
    if not (k["launches"] > 0 and k["total_us"] > 0):
        raise ValueError(f"{path}: kernel {k['name']} took no time in the run ({k.get('how')}); the run launched "
                         f"{', '.join(names)}")
    mean = k["total_us"] / k["launches"]
    dims = [f"{c['block_dim']}" for c in found
            if c is not k and c["name"] == k["name"] and c.get("block_dim") is not None]
    others = f", also launched with blockDim {', '.join(dims)}" if dims else ""
    dim = f"blockDim {k['block_dim']}{others}; " if k.get("block_dim") is not None else ""
    times = f"{launches} x " if launches > 1 else ""
    line = (f"compute {mean * launches:.3f} us: {times}kernel {k['name']}'s mean of {k['launches']} "
            f"launch{'es' if k['launches'] > 1 else ''} in {Path(path).name} ({dim}{k.get('how')})")
    return {"compute_us": mean * launches, "file": str(path), "kernel": k["name"], "block_dim": k.get("block_dim"),
            "run_launches": k["launches"], "mean_us": mean, "launches": launches, "how": k.get("how"), "line": line}


def check_plan(h2d: int, d2h: int, compute_us: float, streams: int, chunks: int) -> None:
    if h2d <= 0 or d2h <= 0:
        raise ValueError("h2d and d2h must be positive byte counts")
    if compute_us < 0:
        raise ValueError(f"compute_us {compute_us} < 0")
    if not 1 <= streams <= MAX_STREAMS:
        raise ValueError(f"streams {streams}: expected 1..{MAX_STREAMS}")
    if not 1 <= chunks <= MAX_CHUNKS:
        raise ValueError(f"chunks {chunks}: expected 1..{MAX_CHUNKS}")
    if chunks > min(h2d, d2h):
        raise ValueError(f"chunks {chunks}: more chunks than bytes to copy")


def simulate(product, h2d: int, d2h: int, compute_us: float, streams: int, chunks: int,
             pageable: bool = False) -> dict:
    """One schedule: iteration time, copy time exposed, link / engine / compute utilisation, the
    distance from the floor (`limits`), and the routes it rests on (`routes_of`)."""
    check_plan(h2d, d2h, compute_us, streams, chunks)
    check_memory(product, h2d, d2h)
    missing = missing_apis(product, pageable)
    if missing:
        raise ValueError(f"{_product(product).name} does not support {', '.join(missing)}: the overlap pipeline "
                         f"cannot run on it")
    run = Schedule(product, h2d, d2h, compute_us, streams, chunks, pageable)
    return {**_row(run.metrics(), limits(product, h2d, d2h, compute_us)), **routes_of(run.product, run.routes)}


def routes_of(product, routes) -> dict:
    """routes (the `emu.routes` the schedules issued work on: their copies, by memory kind and chunk size, the
    kernel launches, and events where streams wait for each other), unvalidated_routes (those no independent
    measurement checks on `product`) and routes_note (the line that says so)."""
    used = [r for r in R.ROUTES if r in set(routes)]
    return {"routes": used, "unvalidated_routes": R.unvalidated(product, used), "routes_note": R.note(product, used)}


def limits(product, h2d: int, d2h: int, compute_us: float) -> dict:
    """The floor no schedule can beat, and what sets it.

    Each resource's busy time if it did nothing but its share of the iteration, as fast as it can: the H2D
    bytes over the host link's down direction and the D2H bytes over its up direction (one link, both ways,
    on RC products, where host memory is on-chip), each on every DMA engine of the device at once (A3: one
    engine does not fill a die's port), with one latency; the compute on the device's kernel slots. The floor
    is the busiest resource's time: the iteration must wait for it whatever the streams and chunks.
    (copy_h2d_ms, copy_d2h_ms, copy_ms: each direction alone on one engine, for reference.)"""
    p = _product(product)
    hw = p.hardware
    one = copy_times(p, h2d, d2h)
    most = copy_times(p, h2d, d2h, engines=hw.engines_per_device)
    links = copy_links(p)
    compute = compute_us * 1e-6 / hw.kernel_slots
    if links["H2D"] == links["D2H"]:
        busy = {f"link {links['H2D']} (H2D + D2H)": most["h2d"] + most["d2h"]}
    else:
        busy = {f"host link down {links['H2D']} (H2D)": most["h2d"], f"host link up {links['D2H']} (D2H)": most["d2h"]}
    busy["compute (AI core)"] = compute
    binding = max(busy, key=busy.get)
    host = None if p.ep_mode else 0
    engines_bind = (hw.host_link.per_engine > 0 and binding != "compute (AI core)"
                    and hw.rate(host, 0, hw.engines_per_device) < hw.rate(host, 0, 10 ** 6))
    return {"copy_h2d_ms": one["h2d"] * 1e3, "copy_d2h_ms": one["d2h"] * 1e3,
            "copy_ms": (one["h2d"] + one["d2h"]) * 1e3, "compute_ms": compute * 1e3,
            "floor_ms": busy[binding] * 1e3, "resources_ms": {k: v * 1e3 for k, v in busy.items()},
            "binding": binding, "engines_bind": engines_bind}


def advice(result: dict) -> str:
    """What would have to change for the iteration to go faster, from a `plan` result."""
    b, binding, floor = result["best"], result["binding"], result["floor_ms"]
    gap = b["iteration_ms"] / floor if floor > 0 else float("inf")
    if binding.startswith("compute"):
        what = ("compute binds: the copies already hide behind it; only faster kernels (or less work per "
                "iteration) would go faster")
    else:
        engines = (" and the device's DMA engines (each moves less than the link carries: more engines busy "
                   "at once would help)" if result["engines_bind"] else "")
        what = (f"the {binding} binds{engines}: a faster link (a newer PCIe generation, more lanes), fewer bytes "
                f"that way, or the data kept on the device would go faster; more streams or chunks cannot")
    if gap > 1.05:
        what += (f". The best schedule is {gap:.2f}x the floor: the rest is each chunk's fixed costs (latency, "
                 f"launch) and the pipeline's fill and drain")
    return what


def _row(metrics: dict, lim: dict) -> dict:
    row = {k: v for k, v in metrics.items() if k != "links"}
    row["vs_floor"] = metrics["iteration_ms"] / lim["floor_ms"] if lim["floor_ms"] > 0 else float("inf")
    return row


def best_of(rows: list[dict]) -> dict:
    """Lowest iteration time; ties go to fewer streams, then fewer chunks (less to manage for the same time)."""
    return min(rows, key=lambda r: (round(r["iteration_ms"], 9), r["streams"], r["chunks"]))


def simplest_near(rows: list[dict], best: dict, within: float = 0.01) -> dict:
    """The fewest streams, then chunks, within `within` of the best: often the setting worth using."""
    near = [r for r in rows if r["iteration_ms"] <= best["iteration_ms"] * (1 + within)]
    return min(near, key=lambda r: (r["streams"], r["chunks"], r["iteration_ms"]))


def plan(product, h2d: int, d2h: int, compute_us: float, streams_list, chunks_list, pageable: bool = False,
         progress=None, extend: bool = True, compute_from: dict | None = None) -> dict:
    """The sweep over streams x chunks, then (extend) the search past the grid's edge (`_extend`). Settings
    with more streams than chunks are skipped (the extra streams would sit idle); the naive schedule (1
    stream, 1 chunk) is always run, as the reference. The result names the floor, the resource that sets it
    and how far the best schedule is from it (`limits`, `advice`), whether the search converged, and the
    routes every schedule run rests on, unvalidated ones apart (`routes_of`). compute_from: where compute_us
    came from (`compute_from_run`), kept as the result's "compute_from" (None: given as a number)."""
    p = _product(product)
    missing = missing_apis(p, pageable)
    if missing:
        raise ValueError(f"{p.name} does not support {', '.join(missing)}: the overlap pipeline cannot run on it")
    streams_list, chunks_list = sorted(set(streams_list)), sorted(set(chunks_list))
    for s in streams_list:
        check_plan(h2d, d2h, compute_us, s, 1)
    for c in chunks_list:
        check_plan(h2d, d2h, compute_us, 1, c)
    check_memory(p, h2d, d2h)
    check_work(streams_list, chunks_list)
    settings = grid_settings(streams_list, chunks_list)
    if not settings:
        raise ValueError(f"no setting has streams <= chunks (streams {streams_list}, chunks {chunks_list})")
    lim = limits(p, h2d, d2h, compute_us)
    used: set[str] = set()

    def run(s: int, c: int) -> dict:
        schedule = Schedule(p, h2d, d2h, compute_us, s, c, pageable)
        used.update(schedule.routes)
        return _row(schedule.metrics(), lim)

    rows = []
    for s, c in settings:
        rows.append(run(s, c))
        if progress is not None:
            progress.advance(1, f"{s} streams x {c} chunks")
    search = _extend(rows, run, min(h2d, d2h), pageable) if extend else {"extended": [], "converged": None}
    naive = next((r for r in rows if (r["streams"], r["chunks"]) == (1, 1)), None)
    if naive is None:
        naive = run(1, 1)
    best = best_of(rows)
    result = {
        "product": p.name,
        "h2d_bytes": h2d,
        "d2h_bytes": d2h,
        "compute_us": compute_us,
        "compute_from": compute_from,
        "pageable": pageable,
        "memory": "pageable" if pageable else "page-locked",
        **lim,
        "rows": rows,
        "skipped": len(streams_list) * len(chunks_list) - len(settings),
        "naive": naive,
        "best": best,
        "near_best": simplest_near(rows, best),
        "speedup": naive["iteration_ms"] / best["iteration_ms"] if best["iteration_ms"] > 0 else float("inf"),
        "search": search,
        **routes_of(p, used),
    }
    result["advice"] = advice(result)
    return result


def _extend(rows: list[dict], run, max_chunks: int, pageable: bool) -> dict:
    """While the best setting is on the grid's edge (the most chunks, or the most streams, tried so far),
    try twice as many (up to SEARCH_MAX_CHUNKS chunks, SEARCH_MAX_STREAMS streams, and no more chunks than
    bytes); stop once the best improves by less than IMPROVES. Appends the new rows to `rows`. converged:
    the time stopped improving; False: a cap stopped the search while it still improved (the optimum may
    lie beyond); None: not searched (pageable copies are synchronous: streams and chunks cannot help)."""
    if pageable:
        return {"extended": [], "converged": None, "reason": "pageable copies are synchronous"}
    tried = {(r["streams"], r["chunks"]) for r in rows}
    extended = []
    while True:
        best = best_of(rows)
        s, c = best["streams"], best["chunks"]
        edge_c, edge_s = c == max(t[1] for t in tried), s == max(t[0] for t in tried)
        candidates = []
        if edge_c:
            candidates.append((s, 2 * c))
        if edge_s:
            candidates.append((2 * s, max(c, 2 * s)))
        candidates = [(cs, cc) for cs, cc in candidates if (cs, cc) not in tried]
        if not candidates:
            return {"extended": extended, "converged": True, "reason": "the best is inside the grid"}
        fits = [(cs, cc) for cs, cc in candidates
                if cs <= SEARCH_MAX_STREAMS and cc <= min(SEARCH_MAX_CHUNKS, max_chunks)]
        if not fits:
            return {"extended": extended, "converged": False,
                    "reason": f"stopped at the cap ({SEARCH_MAX_STREAMS} streams, {SEARCH_MAX_CHUNKS} chunks) "
                              f"with the best on its edge"}
        new = []
        for cs, cc in fits:
            tried.add((cs, cc))
            row = run(cs, cc)
            rows.append(row)
            new.append(row)
            extended.append((cs, cc))
        if min(r["iteration_ms"] for r in new) > best["iteration_ms"] * (1 - IMPROVES):
            return {"extended": extended, "converged": True, "reason": "the time stopped improving"}


def timelines(product, result: dict) -> dict[str, dict]:
    """The naive and the best schedule of a `plan` result (on `product`, the one planned), run again - a
    schedule is deterministic - as {"naive": ..., "best": ...}, each `Schedule.timeline()`: streams,
    chunks, iteration_ms, segments (Gantt bars: row, kind, start_ms, end_ms) and trace."""
    h2d, d2h, compute_us, pageable = result["h2d_bytes"], result["d2h_bytes"], result["compute_us"], result["pageable"]
    best = result["best"]
    return {"naive": Schedule(product, h2d, d2h, compute_us, 1, 1, pageable).timeline(),
            "best": Schedule(product, h2d, d2h, compute_us, best["streams"], best["chunks"], pageable).timeline()}
