"""`acl-emu overlap`: plan copy/compute overlap - how many streams and chunks hide the copies behind compute.

The question a user brings: "my step copies H2D bytes in, computes for US
microseconds, copies D2H bytes out; how should I split it?" The study builds the
pipeline a user would write (input split into chunks; chunk i's H2D, kernel and
D2H queued on stream i % streams), runs it through the emulator in timing-only
mode, times the iteration with events, and sweeps streams x chunks. Each
schedule runs on its own fresh runtime so the results do not depend on sweep
order, and the process's own runtime (emu.current()) is left alone.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from .. import config
from .common import (Landing, Progress, figure, format_table, human_bytes, parse_ints, parse_size, write_csv,
                     write_json)

H2D_KIND, D2H_KIND = 1, 2  # ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST
MAX_STREAMS = 64  # beyond this a sweep is more streams than any pipeline uses
MAX_CHUNKS = 4096
COLOURS = {"H2D": "tab:blue", "kernel": "tab:green", "D2H": "tab:orange"}
DEFAULT_STREAMS = "1..8"
DEFAULT_CHUNKS = "1,2,4,8,16"


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


class _Schedule:
    """One pipeline run on a fresh timing-only runtime; keeps the runtime for records, Gantt and trace."""

    def __init__(self, product, h2d: int, d2h: int, compute_us: float, streams: int, chunks: int,
                 pageable: bool):
        from ..runtime import Runtime

        p = _product(product)
        self.product = p
        self.streams, self.chunks, self.pageable = streams, chunks, pageable
        self.tags: dict[int, str] = {}  # id(task) -> H2D / D2H, for copies whose route does not say
        rt = self.rt = Runtime(p, functional=False)
        rt.set_device(0)
        handles = [rt.create_stream() for _ in range(streams)]
        self.stream_names = {rt.handles[h].m.name: f"stream {i}" for i, h in enumerate(handles)}
        dev_in, dev_out = rt.malloc(h2d), rt.malloc(d2h)
        if pageable:  # plain process memory the emulator is shown: untouched pages, no bytes move
            self._keep = (np.empty(h2d, dtype=np.uint8), np.empty(d2h, dtype=np.uint8))
            host_in, host_out = (rt.register_host(a) for a in self._keep)
        else:
            host_in, host_out = rt.malloc_host(h2d), rt.malloc_host(d2h)
        ins, outs = _split(h2d, chunks), _split(d2h, chunks)
        share = compute_us / chunks

        start, stop = rt.create_event(), rt.create_event()
        rt.record_event(start, handles[0])
        for h in handles[1:]:  # fork: no stream starts before the iteration does
            rt.stream_wait_event(h, start)
        for i, ((ioff, isz), (ooff, osz)) in enumerate(zip(ins, outs)):
            h = handles[i % streams]
            # stream order carries chunk i's dependencies: its H2D, then its kernel, then its D2H
            rt.memcpy_async(dev_in + ioff, isz, host_in + ioff, isz, H2D_KIND, h)
            self._tag(h, "H2D")
            rt.launch_kernel(_compute, [(dev_in + ioff, isz), (dev_out + ooff, osz)], h, duration_us=share,
                             name=f"compute[{i}]")
            rt.memcpy_async(host_out + ooff, osz, dev_out + ooff, osz, D2H_KIND, h)
            self._tag(h, "D2H")
        for h in handles[1:]:  # join: the stop event follows every stream's last chunk
            done = rt.create_event()
            rt.record_event(done, h)
            rt.stream_wait_event(handles[0], done)
        rt.record_event(stop, handles[0])
        rt.synchronize_event(stop)
        self.iteration = rt.event_elapsed_time(start, stop) / 1e3
        self.t0 = rt.handles[start].record.end
        self.t1 = rt.handles[stop].record.end
        self.compute = compute_us * 1e-6

    def _tag(self, handle: int, what: str) -> None:
        last = self.rt.handles[handle].m.last
        if last is not None and last.kind in ("copy", "staged"):
            self.tags[id(last)] = what

    def kind_of(self, task) -> str | None:
        """H2D / kernel / D2H for a task of the pipeline, None for markers."""
        if task.kind == "kernel":
            return "kernel"
        if task.kind not in ("copy", "staged"):
            return None
        for t in (task, task._parent):
            if t is not None and id(t) in self.tags:
                return self.tags[id(t)]
        route = task.route or ("h2d" if task.src is None else "d2h" if task.dst is None else None)
        return {"h2d": "H2D", "d2h": "D2H"}.get(route)

    def links(self) -> dict[str, str]:
        return copy_links(self.product)

    def metrics(self) -> dict:
        m = self.rt.machine
        it = self.iteration
        links = self.links()
        # the share of each direction's capacity the iteration used (wire bytes, so TLP headers and the
        # read requests an H2D sends upstream count too)
        util = {what: (m.links[name].bytes / (m.links[name].capacity * it) if name in m.links and it > 0 else 0.0)
                for what, name in links.items()}
        engines = self.product.hardware.engines_per_device
        busy = kern = 0.0
        for t in m.records:
            if t.start is None or t.device != 0:
                continue
            span = max(0.0, min(t.end, self.t1) - max(t.start, self.t0))
            if t.kind in ("copy", "fill") and t.engine is not None:
                busy += span
            elif t.kind == "kernel":
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
        for t in self.rt.machine.records:
            kind = self.kind_of(t)
            if kind is None or t.start is None:
                continue
            a, b = (t.start - self.t0) * 1e3, (t.end - self.t0) * 1e3
            if t._parent is None:
                name = t.stream.name if t.stream is not None else ""
                row = self.stream_names.get(name, "sync copies" if name.endswith("/sync") else name)
                out.append({"row": row, "kind": kind, "start_ms": a, "end_ms": b})
            if kind == "kernel":
                out.append({"row": "AI core", "kind": kind, "start_ms": a, "end_ms": b})
            for link in t.links:
                out.append({"row": f"link {link}", "kind": kind, "start_ms": a, "end_ms": b})
        return out


def _check(h2d: int, d2h: int, compute_us: float, streams: int, chunks: int) -> None:
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
    """One schedule: iteration time, copy time exposed, link / engine / compute utilisation, and the
    distance from the bound max(copy, compute)."""
    _check(h2d, d2h, compute_us, streams, chunks)
    missing = missing_apis(product, pageable)
    if missing:
        raise ValueError(f"{_product(product).name} does not support {', '.join(missing)}: the overlap pipeline "
                         f"cannot run on it")
    run = _Schedule(product, h2d, d2h, compute_us, streams, chunks, pageable)
    return _row(run.metrics(), _bounds(product, h2d, d2h, compute_us))


def _bounds(product, h2d: int, d2h: int, compute_us: float) -> dict:
    """bound = max(H2D + D2H alone, compute): what overlap can hide at best if the copies ran one after
    the other. floor = max(H2D, D2H, compute): the copies use opposite link directions on a full-duplex
    host link, so a deep pipeline can go below the bound, down to this; and copies on several streams may
    use several DMA engines at once (A3: one engine does not fill a die's port), so the floor's copies
    run on all of them."""
    ct = copy_times(product, h2d, d2h)
    most = copy_times(product, h2d, d2h, engines=_product(product).hardware.engines_per_device)
    compute = compute_us * 1e-6
    same_link = len(set(copy_links(product).values())) == 1
    copy = ct["h2d"] + ct["d2h"]
    floor = max(most["h2d"] + most["d2h"] if same_link else max(most["h2d"], most["d2h"]), compute)
    return {"copy_h2d_ms": ct["h2d"] * 1e3, "copy_d2h_ms": ct["d2h"] * 1e3, "copy_ms": copy * 1e3,
            "compute_ms": compute * 1e3, "bound_ms": max(copy, compute) * 1e3, "floor_ms": floor * 1e3}


def _row(metrics: dict, bounds: dict) -> dict:
    row = {k: v for k, v in metrics.items() if k != "links"}
    row["vs_bound"] = metrics["iteration_ms"] / bounds["bound_ms"] if bounds["bound_ms"] > 0 else float("inf")
    row["vs_floor"] = metrics["iteration_ms"] / bounds["floor_ms"] if bounds["floor_ms"] > 0 else float("inf")
    return row


def best_of(rows: list[dict]) -> dict:
    """Lowest iteration time; ties go to fewer streams, then fewer chunks (less to manage for the same time)."""
    return min(rows, key=lambda r: (round(r["iteration_ms"], 9), r["streams"], r["chunks"]))


def simplest_near(rows: list[dict], best: dict, within: float = 0.01) -> dict:
    """The fewest streams, then chunks, within `within` of the best: often the setting worth using."""
    near = [r for r in rows if r["iteration_ms"] <= best["iteration_ms"] * (1 + within)]
    return min(near, key=lambda r: (r["streams"], r["chunks"], r["iteration_ms"]))


def plan(product, h2d: int, d2h: int, compute_us: float, streams_list, chunks_list, pageable: bool = False,
         progress=None) -> dict:
    """The sweep over streams x chunks. Settings with more streams than chunks are skipped (the extra streams
    would sit idle); the naive schedule (1 stream, 1 chunk) is always run, as the reference."""
    p = _product(product)
    missing = missing_apis(p, pageable)
    if missing:
        raise ValueError(f"{p.name} does not support {', '.join(missing)}: the overlap pipeline cannot run on it")
    streams_list, chunks_list = sorted(set(streams_list)), sorted(set(chunks_list))
    for s in streams_list:
        _check(h2d, d2h, compute_us, s, 1)
    for c in chunks_list:
        _check(h2d, d2h, compute_us, 1, c)
    settings = [(s, c) for c in chunks_list for s in streams_list if s <= c]
    if not settings:
        raise ValueError(f"no setting has streams <= chunks (streams {streams_list}, chunks {chunks_list})")
    bounds = _bounds(p, h2d, d2h, compute_us)
    rows = []
    for s, c in settings:
        rows.append(_row(_Schedule(p, h2d, d2h, compute_us, s, c, pageable).metrics(), bounds))
        if progress is not None:
            progress.advance(1, f"{s} streams x {c} chunks")
    naive = next((r for r in rows if (r["streams"], r["chunks"]) == (1, 1)), None)
    if naive is None:
        naive = _row(_Schedule(p, h2d, d2h, compute_us, 1, 1, pageable).metrics(), bounds)
    best = best_of(rows)
    return {
        "product": p.name,
        "h2d_bytes": h2d,
        "d2h_bytes": d2h,
        "compute_us": compute_us,
        "pageable": pageable,
        "memory": "pageable" if pageable else "page-locked",
        **bounds,
        "rows": rows,
        "skipped": len(streams_list) * len(chunks_list) - len(settings),
        "naive": naive,
        "best": best,
        "near_best": simplest_near(rows, best),
        "speedup": naive["iteration_ms"] / best["iteration_ms"] if best["iteration_ms"] > 0 else float("inf"),
    }


# -- figures and files ------------------------------------------------------------------------

def gantt_figure(result: dict, runs: dict[str, "_Schedule"]):
    """Two panels on one time axis: the naive and the best schedule, a row per stream, the AI core and
    each link direction, bars coloured by H2D / kernel / D2H. Returns a matplotlib Figure (see
    `common.figure`)."""
    from matplotlib.patches import Rectangle

    height = 1.5 + sum(0.45 * _rows_of(r) + 0.8 for r in runs.values())
    fig = figure(figsize=(12, height))
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False,
                        gridspec_kw={"height_ratios": [_rows_of(r) for r in runs.values()]})
    for ax, (title, run) in zip(axes[:, 0], runs.items()):
        segs = run.segments()
        rows = _ordered_rows(segs)
        for y, row in enumerate(rows):
            for kind, colour in COLOURS.items():
                bars = [(s["start_ms"], max(s["end_ms"] - s["start_ms"], 1e-6)) for s in segs
                        if s["row"] == row and s["kind"] == kind]
                if bars:
                    ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=colour, edgecolors="black", linewidth=0.3,
                                   alpha=0.85)
        ax.set_yticks(range(len(rows)), rows)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(f"{title}: {run.streams} stream{'s' if run.streams > 1 else ''}, {run.chunks} "
                     f"chunk{'s' if run.chunks > 1 else ''} - iteration {run.iteration * 1e3:.3f} ms "
                     f"(bound {result['bound_ms']:.3f} ms)")
    axes[-1, 0].set_xlabel("time since the iteration's start event (ms)")
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    fig.legend(handles, list(COLOURS), loc="upper right", ncol=3, fontsize="small")
    fig.suptitle(f"{result['product']}: H2D {human_bytes(result['h2d_bytes'])}, D2H "
                 f"{human_bytes(result['d2h_bytes'])}, compute {result['compute_us']:g} us, "
                 f"{result['memory']} host memory")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def gantt(path: Path, result: dict, runs: dict[str, "_Schedule"]) -> Path:
    """Write `gantt_figure(result, runs)` as a PNG."""
    fig = gantt_figure(result, runs)
    fig.savefig(path, dpi=110)
    return Path(path)


def _ordered_rows(segs: list[dict]) -> list[str]:
    rows = {s["row"] for s in segs}

    def key(r: str):
        if r.startswith("stream "):
            return 0, int(r.split()[1]), r
        if r == "sync copies":
            return 1, 0, r
        if r == "AI core":
            return 2, 0, r
        return 3, 0, r

    return sorted(rows, key=key)


def _rows_of(run: "_Schedule") -> int:
    return len(_ordered_rows(run.segments()))


def write_outputs(out: Path, result: dict, h2d: int, d2h: int, compute_us: float) -> dict:
    """overlap.csv / overlap.json, the Gantt chart and the traces of the naive and the best schedule (both
    run again: a schedule is deterministic)."""
    p = result["product"]
    best = result["best"]
    runs = {"naive": _Schedule(p, h2d, d2h, compute_us, 1, 1, result["pageable"]),
            "best": _Schedule(p, h2d, d2h, compute_us, best["streams"], best["chunks"], result["pageable"])}
    names = {"csv": "overlap.csv", "gantt": "gantt.png", **{f"trace_{n}": f"trace-{n}.json" for n in runs},
             "json": "overlap.json"}
    with Landing(out) as land:
        write_csv(land(names["csv"]), result["rows"])
        gantt(land(names["gantt"]), result, runs)
        for name, run in runs.items():
            run.rt.write_trace(land(names[f"trace_{name}"]))
        result["files"] = {k: str(land.dir / v) for k, v in names.items()}
        write_json(land(names["json"]), result)
    return result["files"]


COLUMNS = [("streams", "streams"), ("chunks", "chunks"), ("iteration_ms", "iteration ms"),
           ("exposed_copy_ms", "copy exposed ms"), ("vs_bound", "x bound"), ("link_h2d_util", "link H2D"),
           ("link_d2h_util", "link D2H"), ("engine_util", "SDMA busy"), ("compute_util", "AI core busy")]


def table(result: dict) -> str:
    rows = [{**r, **{k: f"{r[k] * 100:.0f}%" for k in ("link_h2d_util", "link_d2h_util", "engine_util",
                                                       "compute_util")}} for r in result["rows"]]
    return format_table(rows, COLUMNS)


def summary(result: dict) -> str:
    b, n, nb = result["best"], result["naive"], result["near_best"]
    lines = [
        f"{result['product']}: H2D {human_bytes(result['h2d_bytes'])} ({result['copy_h2d_ms']:.3f} ms alone), "
        f"D2H {human_bytes(result['d2h_bytes'])} ({result['copy_d2h_ms']:.3f} ms alone), compute "
        f"{result['compute_ms']:.3f} ms, {result['memory']} host memory",
        f"bound max(copy, compute) = {result['bound_ms']:.3f} ms (copy = H2D + D2H = {result['copy_ms']:.3f} ms); "
        f"full-duplex floor max(H2D, D2H, compute) = {result['floor_ms']:.3f} ms",
        f"naive (1 stream, 1 chunk): {n['iteration_ms']:.3f} ms, {n['vs_bound']:.3f} x bound",
        f"best: {b['streams']} stream{'s' if b['streams'] > 1 else ''} x {b['chunks']} "
        f"chunk{'s' if b['chunks'] > 1 else ''}: "
        f"{b['iteration_ms']:.3f} ms, {b['vs_bound']:.3f} x bound ({(b['vs_bound'] - 1) * 100:+.1f}%), "
        f"{b['vs_floor']:.3f} x floor, {result['speedup']:.2f}x faster than naive",
    ]
    if (nb["streams"], nb["chunks"]) != (b["streams"], b["chunks"]):
        lines.append(f"within 1% of the best with less to manage: {nb['streams']} streams x {nb['chunks']} "
                     f"chunks ({nb['iteration_ms']:.3f} ms)")
    if result["pageable"]:
        lines.append("pageable copies are synchronous: the host waits for each, and each chunk's D2H waits for its "
                     "kernel before the next chunk's H2D is issued, so streams cannot hide them")
    if result["skipped"]:
        n = result["skipped"]
        lines.append(f"({n} setting{'s' if n > 1 else ''} with more streams than chunks skipped: the extra "
                     f"streams would sit idle)")
    return "\n".join(lines)


def default_product() -> str:
    return os.environ.get("ACL_EMU_PRODUCT") or config.DEFAULT_PRODUCT


def _error(prog: str, message: str) -> int:
    sys.stderr.write(f"{prog}: error: {message}\n")
    return 2


def main(args) -> int:
    product = config.load(args.product or default_product())
    missing = missing_apis(product, args.pageable)
    if missing:
        return _error("acl-emu overlap", f"argument --product: {product.name} does not support "
                                         f"{', '.join(missing)}: the overlap pipeline cannot run on it")
    limit = min(args.h2d, args.d2h)
    if max(args.chunks) > limit:
        return _error("acl-emu overlap", f"argument --chunks: {max(args.chunks)} chunks of {limit} bytes "
                                         f"leave a chunk empty")
    if min(args.streams) > max(args.chunks):
        return _error("acl-emu overlap", f"argument --streams: every setting has more streams than chunks "
                                         f"(at most {max(args.chunks)} chunks)")
    settings = sum(1 for s in set(args.streams) for c in set(args.chunks) if s <= c)
    with Progress(settings, "overlap") as progress:
        result = plan(product, args.h2d, args.d2h, args.compute_us, args.streams, args.chunks, args.pageable,
                      progress)
    out = Path(args.out) if args.out else Path("acl-emu-out") / f"overlap-{product.name}"
    write_outputs(out, result, args.h2d, args.d2h, args.compute_us)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return 0
    print(table(result))
    print()
    print(summary(result))
    print("\n" + "files: " + ", ".join(result["files"].values()))
    return 0


def _positive_ints(limit: int, what: str):
    def parse(text: str) -> list[int]:
        values = parse_ints(text)
        if max(values) > limit:
            raise ValueError(f"{text!r}: at most {limit} {what}")
        return values

    return parse


def _compute_us(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of microseconds") from None
    if not v >= 0 or v == float("inf"):
        raise ValueError(f"{text!r}: compute time must be a finite number of microseconds >= 0")
    return v


def add_study_arguments(p, required: bool = True) -> None:
    """The overlap options, shared with `acl-emu compare overlap`."""
    from ..cli import typed

    p.add_argument("--h2d", type=typed(parse_size, "size"), required=required, metavar="BYTES",
                   help="bytes copied host to device per iteration (4K, 64M, 1G)")
    p.add_argument("--d2h", type=typed(parse_size, "size"), required=required, metavar="BYTES",
                   help="bytes copied device to host per iteration")
    p.add_argument("--compute-us", type=typed(_compute_us, "microseconds"), required=required, metavar="US",
                   help="kernel time per iteration, in microseconds (split evenly across the chunks)")
    p.add_argument("--streams", type=typed(_positive_ints(MAX_STREAMS, "streams"), "ints"),
                   default=parse_ints(DEFAULT_STREAMS), metavar="N",
                   help=f"stream counts to try: 1..8 or 1,2,4 (default {DEFAULT_STREAMS})")
    p.add_argument("--chunks", type=typed(_positive_ints(MAX_CHUNKS, "chunks"), "ints"),
                   default=parse_ints(DEFAULT_CHUNKS), metavar="N",
                   help=f"chunk counts to try (default {DEFAULT_CHUNKS})")
    p.add_argument("--pageable", action="store_true",
                   help="copy from pageable host memory (the copies become synchronous) instead of page-locked")


def add_parser(sub) -> None:
    from ..cli import product_arg

    p = sub.add_parser("overlap", help="plan copy/compute overlap: streams x chunks",
                       description="Simulate the chunked H2D / kernel / D2H pipeline over N streams, sweep streams "
                                   "and chunks, and name the best setting and its distance from the bound "
                                   "max(copy, compute).")
    p.add_argument("--product", type=product_arg, help="product name or TOML path (default: $ACL_EMU_PRODUCT "
                                                       "or 910B)")
    add_study_arguments(p)
    p.add_argument("--out", metavar="DIR", help="output directory (default: acl-emu-out/overlap-<product>)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)
