"""The overlap study drawn: the sweep as a table, the summary, the Gantt chart, and the files `acl-emu
overlap` writes.

    from emu.studies import overlap, overlap_report
    result = overlap.plan("910B", 64 << 20, 16 << 20, 1500, [1, 2, 4], [1, 4, 16])
    runs = overlap.timelines("910B", result)
    overlap_report.gantt_figure(result, runs)  # a matplotlib Figure (runs["near_best"], when given, is drawn
                                               # in place of a best too dense to draw: see `panels`)
    overlap_report.write_outputs("out", result, runs)  # overlap.csv / .json, gantt.png, the two traces
    print(overlap_report.report(result))  # what `acl-emu overlap` prints

Everything here reads `overlap.plan` and `overlap.timelines` results (plain data) and nothing else.
"""
from __future__ import annotations

import json
from pathlib import Path

from .common import Landing, figure, format_table, human_bytes, write_csv, write_json

COLOURS = {"H2D": "tab:blue", "kernel": "tab:green", "D2H": "tab:orange"}


# A schedule with more chunks than this is a barcode at any figure width: its bars are a few pixels wide.
READABLE_CHUNKS = 64
# A drawn schedule with more chunks than this also gets a panel of its first few rounds, enlarged.
ZOOM_CHUNKS = 16


def panels(result: dict, runs: dict[str, dict]) -> list[tuple[str, dict, float | None]]:
    """What the Gantt chart draws: (title, run, the end of its time window or None for the whole iteration).
    The naive schedule; the best, or, when the best has more than READABLE_CHUNKS chunks and `runs` holds the
    planner's within-1% setting ("near_best") with fewer, that one, its title saying so; and, when the drawn
    schedule still has more than ZOOM_CHUNKS chunks, its first three rounds (3 x streams chunks) enlarged."""
    best = runs["best"]
    out = [(_title("naive", runs["naive"], result), runs["naive"], None)]
    near = runs.get("near_best")
    if best["chunks"] > READABLE_CHUNKS and near is not None and near["chunks"] < best["chunks"]:
        shown = near
        out.append((f"{_title('within 1% of the best', near, result)}; shown for the best "
                    f"({best['streams']} x {best['chunks']} chunks, {best['iteration_ms']:.3f} ms), too dense to "
                    f"draw", near, None))
    else:
        shown = best
        out.append((_title("best", best, result), best, None))
    if shown["chunks"] > ZOOM_CHUNKS:
        window = shown["iteration_ms"] * min(1.0, 3 * shown["streams"] / shown["chunks"])
        out.append((f"its first {window:.3f} ms enlarged (about {3 * shown['streams']} of its {shown['chunks']} "
                    f"chunks)", shown, window))
    return out


def _title(name: str, run: dict, result: dict) -> str:
    streams, chunks = run["streams"], run["chunks"]
    return (f"{name}: {streams} stream{'s' if streams > 1 else ''}, {chunks} chunk{'s' if chunks > 1 else ''} - "
            f"iteration {run['iteration_ms']:.3f} ms ({run['iteration_ms'] / result['floor_ms']:.2f}x the floor)")


def gantt_figure(result: dict, runs: dict[str, dict]):
    """Panels (see `panels`: the naive schedule, the best or the planner's within-1% setting when the best is
    too dense to draw, and a dense schedule's first rounds enlarged), a row per stream, the AI core and each link
    direction, bars coloured by H2D / kernel / D2H. Returns a matplotlib Figure (see `common.figure`)."""
    from matplotlib.patches import Rectangle

    drawn = panels(result, runs)
    height = 1.5 + sum(0.45 * _rows_of(run) + 0.8 for _, run, _ in drawn)
    fig = figure(figsize=(12, height))
    axes = fig.subplots(len(drawn), 1, squeeze=False, gridspec_kw={"height_ratios": [_rows_of(r) for _, r, _ in drawn]})
    end = max(run["iteration_ms"] for _, run, window in drawn if window is None)
    for ax, (title, run, window) in zip(axes[:, 0], drawn):
        _draw_run(ax, run, window)
        if window is None or result["floor_ms"] <= window:
            ax.axvline(result["floor_ms"], color="black", linestyle="--", linewidth=1)
            ax.text(result["floor_ms"], -0.5, f" floor {result['floor_ms']:.3f} ms", va="bottom", ha="left",
                    fontsize="small")
        ax.set_xlim(0, window if window is not None else end * 1.02)
        ax.set_title(title, pad=14, fontsize="medium")
        ax.set_xlabel("time since the iteration's start event (ms)", fontsize="small")
    handles = [Rectangle((0, 0), 1, 1, color=c) for c in COLOURS.values()]
    fig.legend(handles, list(COLOURS), loc="upper right", ncol=3, fontsize="small")
    fig.suptitle(f"{result['product']}: H2D {human_bytes(result['h2d_bytes'])}, D2H "
                 f"{human_bytes(result['d2h_bytes'])}, compute {result['compute_us']:g} us, "
                 f"{result['memory']} host memory")
    fig.supxlabel(f"checked: {result['routes_note']}", fontsize="small")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def _draw_run(ax, run: dict, window: float | None) -> None:
    """One schedule's bars on `ax` (only those that start before `window`, when given)."""
    segs = [s for s in run["segments"] if window is None or s["start_ms"] < window]
    rows = _ordered_rows(run["segments"])
    for y, row in enumerate(rows):
        for kind, colour in COLOURS.items():
            bars = [(s["start_ms"], max(s["end_ms"] - s["start_ms"], 1e-6)) for s in segs
                    if s["row"] == row and s["kind"] == kind]
            if bars:
                ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=colour, linewidth=0.3,
                               edgecolors="black" if len(bars) < 100 else "none", alpha=0.85)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)


def gantt(path: Path, result: dict, runs: dict[str, dict]) -> Path:
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


def _rows_of(run: dict) -> int:
    return len(_ordered_rows(run["segments"]))


def write_trace(path, trace: dict) -> Path:
    """A trace dict (`overlap.timelines`' "trace") as the JSON file `Runtime.write_trace` writes."""
    with open(path, "w") as f:
        json.dump(trace, f)
    return Path(path)


def write_outputs(out: Path, result: dict, runs: dict[str, dict]) -> dict:
    """overlap.csv / overlap.json, the Gantt chart and the traces of the naive and the best schedule (`runs`:
    `overlap.timelines`); return their paths."""
    names = {"csv": "overlap.csv", "gantt": "gantt.png", **{f"trace_{n}": f"trace-{n.replace('_', '-')}.json" for n in runs},
             "json": "overlap.json"}
    with Landing(out) as land:
        write_csv(land(names["csv"]), result["rows"])
        gantt(land(names["gantt"]), result, runs)
        for name, run in runs.items():
            write_trace(land(names[f"trace_{name}"]), run["trace"])
        result["files"] = {k: str(land.dir / v) for k, v in names.items()}
        write_json(land(names["json"]), result)
    return result["files"]


COLUMNS = [("streams", "streams"), ("chunks", "chunks"), ("iteration_ms", "iteration ms"),
           ("exposed_copy_ms", "copy exposed ms"), ("vs_floor", "x floor"), ("link_h2d_util", "link H2D"),
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
        *([result["compute_from"]["line"]] if result.get("compute_from") else []),
        f"floor {result['floor_ms']:.3f} ms, set by the {result['binding']} (busy time of each resource, all "
        f"engines at once: " + ", ".join(f"{k} {v:.3f} ms" for k, v in result["resources_ms"].items()) + ")",
        f"naive (1 stream, 1 chunk): {n['iteration_ms']:.3f} ms, {n['vs_floor']:.3f} x floor",
        f"best: {b['streams']} stream{'s' if b['streams'] > 1 else ''} x {b['chunks']} "
        f"chunk{'s' if b['chunks'] > 1 else ''}: "
        f"{b['iteration_ms']:.3f} ms, {b['vs_floor']:.3f} x floor ({(b['vs_floor'] - 1) * 100:+.1f}%), "
        f"{result['speedup']:.2f}x faster than naive",
        _search_line(result["search"]),
        f"to go faster: {result['advice']}",
        f"checked: {result['routes_note']}",
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


def _search_line(search: dict) -> str:
    tried = ", ".join(f"{s}x{c}" for s, c in search["extended"])
    if search["converged"] is None:
        return f"search: the grid only ({search.get('reason', 'not extended')})"
    past = f"past the grid's edge it tried {tried}; " if tried else ""
    if search["converged"]:
        return f"search: {past}converged ({search['reason']})"
    return f"search: {past}NOT converged: {search['reason']}; the optimum may lie beyond"


def report(result: dict) -> str:
    """What `acl-emu overlap` prints: the table, the summary and the files `write_outputs` wrote."""
    return f"{table(result)}\n\n{summary(result)}\n\nfiles: " + ", ".join(result["files"].values())
