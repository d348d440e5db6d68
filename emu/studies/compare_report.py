"""The comparison drawn: one table of headline numbers, one figure, and the files `acl-emu compare` writes.

    from emu.studies import compare, compare_report
    result = compare.compare_overlap(["910B", "A3"], 1 << 20, 1 << 20, 100.0, [1, 2], [1, 2, 4])
    compare_report.figure_of(result)  # a matplotlib Figure
    compare_report.write_outputs(result, "out")  # compare.csv, compare.json, compare.png
    print(compare_report.report(result))  # what `acl-emu compare` prints

Everything here reads a `compare.compare_bandwidth` or `compare.compare_overlap` result and nothing else.
"""
from __future__ import annotations

from pathlib import Path

from .common import (Landing, figure, format_table, human_bytes, peak_text, same_curves, save_figure, size_axis,
                     write_csv, write_json)

# -- the table ---------------------------------------------------------------------------------------

BANDWIDTH_COLUMNS = [("product", "product"), ("host_link", "host link"), ("h2d_pinned_gbps", "H2D pinned"),
                     ("d2h_pinned_gbps", "D2H pinned"), ("h2d_pageable_gbps", "H2D pageable"),
                     ("d2h_pageable_gbps", "D2H pageable"), ("d2d_gbps", "D2D"), ("peer_uni_gbps", "peer uni"),
                     ("peer_bi_gbps", "peer bi"), ("peer_route", "peer route"), ("checked", "checked")]
OVERLAP_COLUMNS = [("product", "product"), ("best", "best streams x chunks"), ("best_ms", "best ms"),
                   ("naive_ms", "naive ms"), ("floor_ms", "floor ms"), ("best_vs_floor", "best x floor"),
                   ("binding", "floor set by"), ("speedup", "speedup vs naive"), ("checked", "checked")]


def checked(row: dict) -> str:
    """A row's "checked" cell: "yes" when an independent measurement checks every route its numbers rest on."""
    return "yes" if row["validated"] else "UNVALIDATED"


def table(result: dict) -> str:
    rows = [{**r, "checked": checked(r)} for r in result["rows"]]
    if result["study"] == "bandwidth":
        rows = [{k: ("n/a" if v is None else v) for k, v in r.items()} for r in rows]
        return format_table(rows, BANDWIDTH_COLUMNS)
    return format_table(rows, OVERLAP_COLUMNS)


def csv_row(row: dict) -> dict:
    """One row of compare.csv: "" for None, lists of routes joined with ";", and the checked cell."""
    out = {k: ("" if v is None else ";".join(v) if isinstance(v, list) else v) for k, v in row.items()}
    return {**out, "checked": checked(row)}


# -- figures -----------------------------------------------------------------------------------------

PANELS = (("H2D", (("h2d_pinned", "-o", "page-locked"), ("h2d_pageable", "--", "pageable"))),
          ("D2H", (("d2h_pinned", "-o", "page-locked"), ("d2h_pageable", "--", "pageable"))),
          ("D2D on device 0", (("d2d", "-o", ""),)),
          ("peer: the fastest device pair, one way", (("peer", "-o", ""),)))


def bandwidth_figure(result: dict):
    """Bandwidth against message size in four panels (H2D, D2H, D2D, peer), a colour per product, page-locked
    solid and pageable dashed, each curve labelled with its peak. Returns a matplotlib Figure (see
    `common.figure`)."""
    from matplotlib import rcParams

    fig = figure(figsize=(13, 9))
    axes = fig.subplots(2, 2).ravel()
    colours = rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (title, series) in zip(axes, PANELS):
        drawn = 0
        colour_of = {name: colours[k % len(colours)] for k, name in enumerate(result["curves"])}
        for key, style, what in series:
            curves = {name: [(b, g) for b, g in c.get(key, []) if g is not None]
                      for name, c in result["curves"].items()}
            for names, pts in same_curves({n: p for n, p in curves.items() if p}):  # equal curves drawn once
                c = result["curves"][names[0]]
                route = f" {c['peer_route']}" if key == "peer" and c.get("peer_route") else ""
                ax.plot([b for b, _ in pts], [g for _, g in pts], style, color=colour_of[names[0]],
                        markersize=3.5, lw=1.8 if style.startswith("-o") else 1.2,
                        label=f"{' = '.join(names)}{route}{' ' + what if what else ''}, {peak_text(pts)}")
                drawn += 1
        size_axis(ax, result["sizes"])
        ax.set_ylabel("bandwidth (GB/s)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.set_title(title, fontsize=11)
        if drawn:
            ax.legend(fontsize=7.5, loc="upper left")
        else:
            ax.text(0.5, 0.5, "not measured on these products", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle("Bandwidth by product: aclrtMemcpyAsync timed with events (solid: page-locked host memory; "
                 "dashed: pageable; a = b: identical curves drawn once)", fontsize=11)
    _routes_note(fig, result)
    fig.tight_layout()
    return fig


def _routes_note(fig, result: dict) -> None:
    """Under the figure, a line per product: the unvalidated routes its numbers rest on."""
    fig.supxlabel("\n".join(result["routes_notes"].values()), fontsize=8)


def overlap_figure(result: dict):
    """Grouped bars per product: naive, best and the floor (the busiest resource's time: no schedule beats it),
    in ms. Returns a matplotlib Figure (see `common.figure`)."""
    rows = result["rows"]
    fig = figure(figsize=(max(9, 2.2 * len(rows) + 2), 5))  # wide enough for the title and the routes note
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
    _routes_note(fig, result)
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
        write_csv(land(names["csv"]), [csv_row(r) for r in result["rows"]])
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
    checks = "\n".join(f"checked: {line}" for line in result["routes_notes"].values())
    return f"{table(result)}\n\n{note}\n{checks}\nfiles: " + ", ".join(result["files"].values())
