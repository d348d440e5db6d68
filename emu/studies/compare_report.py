"""The comparison drawn: one table of headline numbers, one figure, and the files `acl-emu compare` writes.

    from emu.studies import compare, compare_report
    result = compare.compare_overlap(["910B", "A3"], 1 << 20, 1 << 20, 100.0, [1, 2], [1, 2, 4])
    compare_report.figure_of(result)  # a matplotlib Figure
    compare_report.write_outputs(result, "out")  # compare.csv, compare.json, compare.png
    print(compare_report.report(result))  # what `acl-emu compare` prints

Everything here reads a `compare.compare_bandwidth` or `compare.compare_overlap` result and nothing else.
"""
from __future__ import annotations

import math
from pathlib import Path

from .common import Landing, figure, format_table, human_bytes, save_figure, write_csv, write_json

# -- the table ---------------------------------------------------------------------------------------

BANDWIDTH_COLUMNS = [("product", "product"), ("host_link", "host link"), ("h2d_pinned_gbps", "H2D pinned"),
                     ("d2h_pinned_gbps", "D2H pinned"), ("h2d_pageable_gbps", "H2D pageable"),
                     ("d2h_pageable_gbps", "D2H pageable"), ("d2d_gbps", "D2D"), ("peer_uni_gbps", "peer uni"),
                     ("peer_bi_gbps", "peer bi"), ("peer_route", "peer route")]
OVERLAP_COLUMNS = [("product", "product"), ("best", "best streams x chunks"), ("best_ms", "best ms"),
                   ("naive_ms", "naive ms"), ("floor_ms", "floor ms"), ("best_vs_floor", "best x floor"),
                   ("binding", "floor set by"), ("speedup", "speedup vs naive")]


def table(result: dict) -> str:
    if result["study"] == "bandwidth":
        rows = [{k: ("n/a" if v is None else v) for k, v in r.items()} for r in result["rows"]]
        return format_table(rows, BANDWIDTH_COLUMNS)
    return format_table(result["rows"], OVERLAP_COLUMNS)


# -- figures -----------------------------------------------------------------------------------------

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


def overlap_figure(result: dict):
    """Grouped bars per product: naive, best and the floor (the busiest resource's time: no schedule beats it),
    in ms. Returns a matplotlib Figure (see `common.figure`)."""
    rows = result["rows"]
    fig = figure(figsize=(max(6.5, 2.2 * len(rows) + 2), 5))
    ax = fig.subplots()
    width = 0.26
    series = (("naive_ms", "naive (1 stream, 1 chunk)", "tab:red"), ("best_ms", "best setting", "tab:green"),
              ("floor_ms", "floor (busiest resource)", "tab:gray"))
    for k, (key, label, colour) in enumerate(series):
        xs = [i + (k - 1) * width for i in range(len(rows))]
        bars = ax.bar(xs, [r[key] for r in rows], width, label=label, color=colour, alpha=0.85)
        texts = [f"{r[key]:.3g}" + (f"\n{r['best']}" if key == "best_ms" else "") for r in rows]
        ax.bar_label(bars, texts, fontsize=8, padding=2)
    ax.set_xticks(range(len(rows)), [r["product"] for r in rows])
    ax.set_xlabel("product")
    ax.set_ylabel("iteration time (ms)")
    ax.set_ylim(0, max(max(r["naive_ms"], r["floor_ms"], r["best_ms"]) for r in rows) * 1.2)
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


# -- files -------------------------------------------------------------------------------------------

def write_outputs(result: dict, out: Path) -> dict:
    """compare.csv (the table), compare.json (the table and every product's full result), compare.png."""
    names = {"csv": "compare.csv", "json": "compare.json", "png": "compare.png"}
    with Landing(out) as land:
        write_csv(land(names["csv"]), [{k: ("" if v is None else v) for k, v in r.items()} for r in result["rows"]])
        save_figure(figure_of(result), land(names["png"]))
        result["files"] = {k: str(land.dir / v) for k, v in names.items()}
        write_json(land(names["json"]), result)
    return result["files"]


def report(result: dict) -> str:
    """What `acl-emu compare` prints: the table, what its numbers are, and the files `write_outputs` wrote."""
    if result["study"] == "bandwidth":
        note = ("GB/s, the peak over the message sizes; peer: the best device pair, one way (uni) and both ways at "
                "once (bi)")
    else:
        note = (f"H2D {human_bytes(result['h2d_bytes'])}, D2H {human_bytes(result['d2h_bytes'])}, compute "
                f"{result['compute_us']:g} us; floor = the busiest resource's time (host link each way on all "
                f"engines, compute): no schedule beats it")
    return f"{table(result)}\n\n{note}\nfiles: " + ", ".join(result["files"].values())
