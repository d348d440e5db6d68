"""`acl-emu compare`: one study side by side across products - one table of headline numbers, one figure.

The question it answers is "which product, and by how much": the per-product
studies (`bandwidth.measure`, `overlap.plan`) run unchanged, one after the
other, and only their headline numbers are lined up, so a reader sees the
difference without opening N reports. The full per-product results stay in
compare.json for anyone who wants the detail.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from .. import config
from . import overlap
from .common import (Landing, Progress, format_table, human_bytes, parse_size, parse_sizes, parse_sizes_arg, figure,
                     positive_int, products_arg, save_figure, write_csv, write_json)

DEFAULT_PRODUCTS = "910B,A3,950PR"
DEFAULT_SIZES = "4K..1G"
STUDIES = ("bandwidth", "overlap")


# -- bandwidth ---------------------------------------------------------------------------------------

def _peak(points) -> float | None:
    values = [p["gbps"] for p in points or () if p.get("gbps") is not None and math.isfinite(p["gbps"])]
    return max(values) if values else None


def _matrix_max(matrix) -> float | None:
    values = [v for line in matrix or () for v in line if v is not None and math.isfinite(v)]
    return max(values) if values else None


def bandwidth_headline(result: dict) -> dict:
    """The numbers a user compares products by: peak GB/s over the message sizes of each test."""
    host = result.get("host", {})
    p2p = result.get("p2p") or {}
    uni, bi = _matrix_max(p2p.get("unidirectional")), _matrix_max(p2p.get("bidirectional"))
    best_route = None
    if uni is not None:
        for i, line in enumerate(p2p["unidirectional"]):
            for j, v in enumerate(line):
                if v == uni:
                    best_route = (p2p.get("routes") or [[None]])[i][j] if p2p.get("routes") else None
                    break
            if best_route is not None:
                break
    return {
        "product": result["product"],
        "host_link": result.get("host_link"),
        "h2d_pinned_gbps": _peak(host.get("pinned", {}).get("h2d")),
        "d2h_pinned_gbps": _peak(host.get("pinned", {}).get("d2h")),
        "h2d_pageable_gbps": _peak(host.get("pageable", {}).get("h2d")),
        "d2h_pageable_gbps": _peak(host.get("pageable", {}).get("d2h")),
        "d2d_gbps": _peak(result.get("d2d")),
        "peer_uni_gbps": uni,
        "peer_bi_gbps": bi,
        "peer_route": best_route,
    }


def compare_bandwidth(products: list[str], sizes: list[int], *, peer_sizes: list[int] | None = None,
                      repetitions: int | None = None, progress=None) -> dict:
    """`bandwidth.measure` on each product; rows of headline numbers and the H2D curves for the figure."""
    from . import bandwidth

    kwargs = {} if repetitions is None else {"repetitions": repetitions,
                                             "peer_repetitions": min(repetitions, bandwidth.PEER_REPETITIONS)}
    results = {}
    for name in products:
        r = bandwidth.measure(name, sizes, peer_sizes=peer_sizes, progress=progress, **kwargs)
        results[r["product"]] = r
    curves = {}
    for name, r in results.items():
        host = r.get("host", {})
        curves[name] = {f"h2d_{m}": [(p["bytes"], p["gbps"]) for p in host.get(m, {}).get("h2d", [])]
                        for m in ("pinned", "pageable")}
    return {"study": "bandwidth", "products": list(results), "sizes": sizes,
            "rows": [bandwidth_headline(r) for r in results.values()], "curves": curves, "results": results}


BANDWIDTH_COLUMNS = [("product", "product"), ("host_link", "host link"), ("h2d_pinned_gbps", "H2D pinned"),
                     ("d2h_pinned_gbps", "D2H pinned"), ("h2d_pageable_gbps", "H2D pageable"),
                     ("d2h_pageable_gbps", "D2H pageable"), ("d2d_gbps", "D2D"), ("peer_uni_gbps", "peer uni"),
                     ("peer_bi_gbps", "peer bi"), ("peer_route", "peer route")]


def bandwidth_figure(result: dict):
    """H2D bandwidth against message size, a colour per product: page-locked solid, pageable dashed.
    Returns a matplotlib Figure (see `common.figure`)."""
    from matplotlib import rcParams

    fig = figure(figsize=(9, 5.5))
    ax = fig.subplots()
    colours = rcParams["axes.prop_cycle"].by_key()["color"]
    for k, (name, c) in enumerate(result["curves"].items()):
        colour = colours[k % len(colours)]
        for memory, style, label in (("h2d_pinned", "-o", "page-locked"), ("h2d_pageable", "--", "pageable")):
            pts = [(b, g) for b, g in c.get(memory, []) if g is not None]
            if pts:
                ax.plot([b for b, _ in pts], [g for _, g in pts], style, color=colour, markersize=4,
                        label=f"{name} {label}", lw=1.8 if memory == "h2d_pinned" else 1.2)
    ax.set_xscale("log", base=2)
    sizes = result["sizes"]
    step = max(1, math.ceil(len(sizes) / 8))
    ax.set_xticks(sizes[::step], [human_bytes(s).replace(" ", "") for s in sizes[::step]])
    ax.minorticks_off()
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title("H2D bandwidth by product: aclrtMemcpyAsync timed with events\n(solid: page-locked host memory; "
                 "dashed: pageable)", fontsize=11)
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    return fig


# -- overlap -----------------------------------------------------------------------------------------

def compare_overlap(products: list[str], h2d: int, d2h: int, compute_us: float, streams_list, chunks_list,
                    pageable: bool = False, progress=None) -> dict:
    """`overlap.plan` on each product; rows of the best setting, its time, the naive time and the bound."""
    plans = {}
    for name in products:
        r = overlap.plan(name, h2d, d2h, compute_us, streams_list, chunks_list, pageable, progress)
        plans[r["product"]] = r
    rows = []
    for name, r in plans.items():
        b, n = r["best"], r["naive"]
        rows.append({"product": name, "best": f"{b['streams']}x{b['chunks']}", "best_streams": b["streams"],
                     "best_chunks": b["chunks"], "best_ms": b["iteration_ms"], "naive_ms": n["iteration_ms"],
                     "bound_ms": r["bound_ms"], "floor_ms": r["floor_ms"], "best_vs_bound": b["vs_bound"],
                     "speedup": r["speedup"], "copy_ms": r["copy_ms"], "compute_ms": r["compute_ms"]})
    return {"study": "overlap", "products": list(plans), "h2d_bytes": h2d, "d2h_bytes": d2h,
            "compute_us": compute_us, "pageable": pageable, "rows": rows, "results": plans}


OVERLAP_COLUMNS = [("product", "product"), ("best", "best streams x chunks"), ("best_ms", "best ms"),
                   ("naive_ms", "naive ms"), ("bound_ms", "bound ms"), ("best_vs_bound", "best x bound"),
                   ("speedup", "speedup vs naive")]


def overlap_figure(result: dict):
    """Grouped bars per product: naive, best and the bound max(copy, compute), in ms. Returns a matplotlib
    Figure (see `common.figure`)."""
    rows = result["rows"]
    fig = figure(figsize=(max(6.5, 2.2 * len(rows) + 2), 5))
    ax = fig.subplots()
    width = 0.26
    series = (("naive_ms", "naive (1 stream, 1 chunk)", "tab:red"), ("best_ms", "best setting", "tab:green"),
              ("bound_ms", "bound max(copy, compute)", "tab:gray"))
    for k, (key, label, colour) in enumerate(series):
        xs = [i + (k - 1) * width for i in range(len(rows))]
        bars = ax.bar(xs, [r[key] for r in rows], width, label=label, color=colour, alpha=0.85)
        texts = [f"{r[key]:.3g}" + (f"\n{r['best']}" if key == "best_ms" else "") for r in rows]
        ax.bar_label(bars, texts, fontsize=8, padding=2)
    ax.set_xticks(range(len(rows)), [r["product"] for r in rows])
    ax.set_xlabel("product")
    ax.set_ylabel("iteration time (ms)")
    ax.set_ylim(0, max(max(r["naive_ms"], r["bound_ms"], r["best_ms"]) for r in rows) * 1.2)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"Copy/compute overlap by product: H2D {human_bytes(result['h2d_bytes'])}, D2H "
                 f"{human_bytes(result['d2h_bytes'])}, compute {result['compute_us']:g} us, "
                 f"{'pageable' if result['pageable'] else 'page-locked'} host memory", fontsize=10)
    ax.legend(fontsize="small", loc="upper right")
    fig.tight_layout()
    return fig


def figure_of(result: dict):
    """The figure of a `compare_bandwidth` or `compare_overlap` result."""
    return (bandwidth_figure if result["study"] == "bandwidth" else overlap_figure)(result)


# -- the command -------------------------------------------------------------------------------------

def write_outputs(result: dict, out: Path) -> dict:
    """compare.csv (the table), compare.json (the table and every product's full result), compare.png."""
    names = {"csv": "compare.csv", "json": "compare.json", "png": "compare.png"}
    with Landing(out) as land:
        write_csv(land(names["csv"]), [{k: ("" if v is None else v) for k, v in r.items()} for r in result["rows"]])
        save_figure(figure_of(result), land(names["png"]))
        result["files"] = {k: str(land.dir / v) for k, v in names.items()}
        write_json(land(names["json"]), result)
    return result["files"]


def table(result: dict) -> str:
    if result["study"] == "bandwidth":
        rows = [{k: ("n/a" if v is None else v) for k, v in r.items()} for r in result["rows"]]
        return format_table(rows, BANDWIDTH_COLUMNS)
    return format_table(result["rows"], OVERLAP_COLUMNS)


def _error(message: str) -> int:
    sys.stderr.write(f"acl-emu compare: error: {message}\n")
    return 2


def _run_bandwidth(args, products: list[str]):
    from . import bandwidth

    sizes = args.sizes or parse_sizes(DEFAULT_SIZES)
    peer = args.peer_size
    peer_sizes = None if peer is None else [s for s in sizes if s < peer] + [peer]
    steps = 0
    for name in products:
        try:
            sizes, peer_sizes = bandwidth.check(name, sizes, peer_sizes)
        except ValueError as e:
            what = "--peer-size" if str(e).startswith("peer") else "--sizes"
            return None, _error(f"argument {what}: {e}")
        steps += bandwidth.count_steps(name, sizes, peer_sizes)
    with Progress(steps, "compare bandwidth") as bar:
        return compare_bandwidth(products, sizes, peer_sizes=peer_sizes, repetitions=args.reps, progress=bar), 0


def _run_overlap(args, products: list[str]):
    for name in products:
        missing = overlap.missing_apis(name, args.pageable)
        if missing:
            return None, _error(f"argument --products: {config.load(name).name} does not support "
                                f"{', '.join(missing)}: the overlap pipeline cannot run on it")
    limit = min(args.h2d, args.d2h)
    if max(args.chunks) > limit:
        return None, _error(f"argument --chunks: {max(args.chunks)} chunks of {limit} bytes leave a chunk empty")
    if min(args.streams) > max(args.chunks):
        return None, _error(f"argument --streams: every setting has more streams than chunks (at most "
                            f"{max(args.chunks)} chunks)")
    settings = sum(1 for s in set(args.streams) for c in set(args.chunks) if s <= c)
    with Progress(settings * len(products), "compare overlap") as bar:
        return compare_overlap(products, args.h2d, args.d2h, args.compute_us, args.streams, args.chunks,
                               args.pageable, bar), 0


def main(args) -> int:
    products = args.study_products or args.products or products_arg(DEFAULT_PRODUCTS)
    result, code = (_run_bandwidth if args.study == "bandwidth" else _run_overlap)(args, products)
    if result is None:
        return code
    out = args.out or args.compare_out
    write_outputs(result, Path(out) if out else Path("acl-emu-out") / f"compare-{args.study}")
    if args.json or args.compare_json:
        print(json.dumps(result, indent=2, default=str))
        return 0
    print(table(result))
    if result["study"] == "bandwidth":
        print("\nGB/s, the peak over the message sizes; peer: the best device pair, one way (uni) and both "
              "ways at once (bi)")
    else:
        print(f"\nH2D {human_bytes(result['h2d_bytes'])}, D2H {human_bytes(result['d2h_bytes'])}, compute "
              f"{result['compute_us']:g} us; bound = max(H2D + D2H alone, compute)")
    print("files: " + ", ".join(result["files"].values()))
    return 0


def _products(text: str) -> list[str]:
    names = products_arg(text)
    if not names:
        raise ValueError(f"{text!r}: expected a comma-separated list of products")
    from ..cli import product_error

    for n in names:
        try:
            config.load(n)  # a broken config is a bad argument, found before any work
        except config.ConfigError as e:
            raise ValueError(product_error(n, e)) from None
    return names


def _common(p, typed, top: bool) -> None:
    """--products, --out and --json, accepted before the study name and after it."""
    pre = "compare_" if top else ""
    p.add_argument("--products", type=typed(_products, "products"), default=None,
                   dest="products" if top else "study_products",
                   help=f"comma-separated product names or TOML paths (default: {DEFAULT_PRODUCTS})")
    p.add_argument("--out", dest=f"{pre}out", metavar="DIR",
                   help="output directory (default: acl-emu-out/compare-<study>)")
    p.add_argument("--json", dest=f"{pre}json", action="store_true", help="machine-readable output")


def add_parser(sub) -> None:
    from ..cli import typed

    p = sub.add_parser("compare", help="one study side by side across products",
                       description="Run the bandwidth or the overlap study on several products; one table of "
                                   "headline numbers and one figure.")
    _common(p, typed, top=True)
    studies = p.add_subparsers(dest="study", required=True, metavar="{bandwidth,overlap}")
    bw = studies.add_parser("bandwidth", help="peak H2D / D2H / D2D / peer GB/s per product")
    bw.add_argument("--sizes", type=typed(parse_sizes_arg, "sizes"), default=None,
                    help=f"message sizes: a range of powers of two or a list (default: {DEFAULT_SIZES})")
    bw.add_argument("--peer-size", type=typed(parse_size, "size"), default=None,
                    help="message size of the device-to-device matrix (default: the largest size, at most 256M)")
    bw.add_argument("--reps", type=typed(positive_int, "count"), default=None,
                    help="copies per measurement (default: the bandwidth study's)")
    _common(bw, typed, top=False)
    ov = studies.add_parser("overlap", help="best streams x chunks, its time, the naive time and the bound")
    overlap.add_study_arguments(ov)
    _common(ov, typed, top=False)
    p.set_defaults(func=main, study_products=None, out=None, json=False)
