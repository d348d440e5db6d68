"""The replay drawn: the side-by-side table, the copies that changed and why, the model's residuals on the measured
product, the Gantt chart (the measured step and each replayed one on one time axis) and the files `acl-emu
replay` writes.

    from emu.studies import replay, replay_report
    result = replay.replay("msprof_step.json", ["910B", "A3", "950PR"])
    replay_report.gantt_figure(result)  # a matplotlib Figure
    replay_report.write_outputs("out", result)  # replay.json, replay.csv, calibration.csv, replay.png
    print(replay_report.report(result))  # what `acl-emu replay` prints

Everything here reads a `replay.replay` result (plain data) and nothing else.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..models.atomic import atomic_write
from .common import Landing, figure, format_table, human_bytes, jsonable, write_csv
from .profiles import collector_paused
from .replay import SAME, TOLERANCE

COLOURS = {"H2D": "tab:blue", "D2H": "tab:orange", "D2D": "tab:purple", "peer": "tab:red", "H2H": "tab:olive",
           "copy": "tab:cyan", "kernel": "tab:green", "other": "tab:gray", "host": "#c8c8c8"}
LEGEND = {"H2D": "H2D copy", "D2H": "D2H copy", "D2D": "on-device copy", "peer": "peer copy", "H2H": "host copy",
          "copy": "copy (no size)", "kernel": "kernel", "other": "other task", "host": "host API call"}
TOP = 8  # copies listed per product in the text report
EDGED = 200  # a row's bars of one colour are outlined, each drawn, when there are fewer than this many
MERGE = 1e-4  # else those closer than this share of the time axis (a tenth of a pixel) are drawn as one


def _panels(result: dict) -> list[tuple[str, dict]]:
    measured = result["measured"]
    out = [(f"measured (profile, on {result['measured_on']}): step {measured['step_ms']:.3f} ms", measured)]
    for run in result["runs"]:
        out.append((f"replayed on {run['label']}: step {run['step_ms']:.3f} ms ({run['change_pct']:+.1f}%)", run))
    return out


def _row_order(rows: set[str]) -> list[str]:
    def key(r: str):
        if r.startswith("host thread"):
            return 0, 0, int(r.split()[-1])
        dev, _, sid = r.split()
        return 1, int(dev[3:]), int(sid)

    return sorted(rows, key=key)


def gantt_figure(result: dict):
    """The measured step and each replayed step, one panel each on one time axis: a row per stream (and per host
    thread), bars coloured by what ran (H2D, D2H, on-device and peer copies, kernels, other tasks, host calls).
    Returns a matplotlib Figure (see `common.figure`)."""
    from matplotlib.patches import Rectangle

    panels = _panels(result)
    rows = _row_order({s["row"] for _, p in panels for s in p["segments"]})
    height = 1.2 + len(panels) * (0.32 * len(rows) + 0.7)
    fig = figure(figsize=(12, max(height, 3.5)))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    span = max([p["step_ms"] for _, p in panels] + [s["end_ms"] for _, p in panels for s in p["segments"]])
    used = set()
    for ax, (title, panel) in zip(axes, panels):
        by_bar = _bars(panel["segments"])
        for y, row in enumerate(rows):
            for kind, colour in COLOURS.items():
                bars = by_bar.get((row, kind))
                if bars:
                    used.add(kind)
                    few = len(bars) < EDGED
                    ax.broken_barh(bars if few else _merged(bars, span * MERGE), (y - 0.38, 0.76), facecolors=colour,
                                   linewidth=0.3, edgecolors="black" if few and kind != "host" else "none")
        ax.axvline(panel["step_ms"], color="black", linestyle="--", linewidth=0.8)
        ax.set_yticks(range(len(rows)), rows, fontsize="small")
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(title, loc="left", fontsize="medium")
    axes[-1].set_xlabel("time since the step's first event (ms)")
    kinds = [k for k in COLOURS if k in used]
    fig.legend([Rectangle((0, 0), 1, 1, color=COLOURS[k]) for k in kinds], [LEGEND[k] for k in kinds],
               loc="upper right", ncol=min(len(kinds), 4), fontsize="small")
    products = ", ".join(r["label"] for r in result["runs"])
    fig.suptitle(f"{Path(result['profile']).name} replayed on {products}", x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / fig.get_figheight()))
    return fig


def _bars(segments: list[dict]) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """The segments as (start, width) bars by (row, kind), in one pass."""
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for s in segments:
        out.setdefault((s["row"], s["kind"]), []).append((s["start_ms"], max(s["end_ms"] - s["start_ms"], 1e-6)))
    return out


def _merged(bars: list[tuple[float, float]], gap: float) -> list[tuple[float, float]]:
    """Bars of one row and colour that overlap or lie closer than `gap` drawn as one: the chart then has about
    as many bars as it has pixels across, not one per task, however long the profile."""
    out: list[list[float]] = []
    for start, width in sorted(bars):
        if out and start <= out[-1][0] + out[-1][1] + gap:
            out[-1][1] = max(out[-1][1], start + width - out[-1][0])
        else:
            out.append([start, width])
    return [(s, w) for s, w in out]


def gantt(path, result: dict) -> Path:
    fig = gantt_figure(result)
    fig.savefig(path, dpi=110)
    return Path(path)


def copy_rows(result: dict) -> list[dict]:
    """One row per copy per product: what replay.csv holds."""
    out = []
    for run in result["runs"]:
        for r in run["copies"]:
            out.append({"product": run["label"], "task": r["task"], "row": r["row"], "name": r["name"],
                        "device": r["device"], "stream": r["stream"], "direction": r["direction"], "bytes": r["bytes"],
                        "measured_us": round(r["measured_us"], 3), "replayed_us": round(r["replayed_us"], 3),
                        "change_pct": round(r["change_pct"], 2), "why": r["why"]})
    return out


def write_outputs(out, result: dict, also: dict | None = None) -> dict:
    """replay.json, replay.csv (every copy on every product), calibration.csv (the measured copies that ran
    alone, for `acl-emu calibrate`) and replay.png (the Gantt chart); returns their paths, and those of `also`
    (files written elsewhere, e.g. {"msprof": path}), as the result's "files" lists them."""
    names = {"json": "replay.json", "csv": "replay.csv", "calibration": "calibration.csv", "gantt": "replay.png"}
    with collector_paused(), Landing(out) as land:
        write_csv(land(names["csv"]), copy_rows(result))
        path = land(names["calibration"])
        if result["calibration_rows"]:
            write_csv(path, result["calibration_rows"])
        else:  # (no copy ran alone: the header only)
            path.write_text("size,direction,memory,pattern,count,us\n")
        gantt(land(names["gantt"]), result)
        result["files"] = {**{k: str(land.dir / v) for k, v in names.items()},
                           **{k: str(v) for k, v in (also or {}).items()}}
        write_json(land(names["json"]), result)
    return result["files"]


def write_json(path, result: dict) -> Path:
    """replay.json, in the layout of `dump_json`."""
    path = Path(path)
    with atomic_write(path, "w") as f:
        dump_json(result, f)
    return path


def dump_json(result: dict, f) -> None:
    """The result as JSON to the text file `f`: one key a line, each value in compact JSON. (The indented layout
    of the other studies' JSON is written by the json module's Python encoder, half a minute for a 200,000-task
    replay; this is its C encoder.)"""
    f.write("{")
    for k, (key, value) in enumerate(result.items()):  # one value's text in memory at a time
        f.write(f"{',' if k else ''}\n  {json.dumps(key)}: {json.dumps(value, default=jsonable)}")
    f.write("\n}\n")


def table(result: dict) -> str:
    """The side-by-side table: step and per-resource busy time, measured and on each product."""
    runs = result["runs"]
    cols = [("what", "")] + [("measured", "measured")] + [(f"p{i}", r["label"]) for i, r in enumerate(runs)]
    lines = []

    def row(what, measured, values):
        d = {"what": what, "measured": measured}
        d.update({f"p{i}": v for i, v in enumerate(values)})
        lines.append(d)

    m = result["measured"]
    row("step ms", f"{m['step_ms']:.3f}", [f"{r['step_ms']:.3f} ({r['change_pct']:+.1f}%)" for r in runs])
    for res in m["resources_ms"]:
        row(f"{res} busy ms", f"{m['resources_ms'][res]:.3f}", [f"{r['resources_ms'][res]:.3f}" for r in runs])
    row("copies faster / slower / same", "", [f"{r['faster']} / {r['slower']} / {r['same']}" for r in runs])
    why = [f"{r['label']}: " + ", ".join(f"{k} {v}" for k, v in sorted(r["why"].items(), key=lambda kv: -kv[1]))
           for r in runs if r["why"]]
    text = format_table(lines, cols)
    if why:
        text += ("\nwhy the copies that changed did (the largest part of the change: bandwidth, latency, contention, "
                 "or the model's residual on the measured product):\n  " + "\n  ".join(why))
    return text


def copies_table(run: dict, top: int = TOP) -> str:
    """The copies whose time moved most on one product."""
    rows = sorted(run["copies"], key=lambda r: -abs(r["replayed_us"] - r["measured_us"]))[:top]
    shown = [{"row": r["row"], "stream": f"dev{r['device']} s{r['stream']}", "direction": r["direction"],
              "bytes": human_bytes(r["bytes"]), "measured": f"{r['measured_us']:.1f}",
              "replayed": f"{r['replayed_us']:.1f}", "change": f"{r['change_pct']:+.1f}%", "why": r["why"]}
             for r in rows]
    return format_table(shown, [("row", "row"), ("stream", "stream"), ("direction", "dir"), ("bytes", "bytes"),
                                ("measured", "measured us"), ("replayed", f"{run['label']} us"),
                                ("change", "change"), ("why", "why")])


def validation_line(result: dict) -> str:
    v = result["validation"]
    if not v["count"]:
        return f"model on {v['product']}: the profile has no copy with a size and direction to compare"
    return (f"model on {v['product']} (the measured product) vs the profile: {v['count']} copies, median |residual| "
            f"{v['median_abs_pct']:.1f}%, worst {v['worst_pct']:+.1f}%; step {v['step_residual_pct']:+.1f}%")


def summary(result: dict) -> str:
    g = result["graph"]
    by_time = g["event_dependencies_by_time"]
    lines = [f"{result['profile']} ({result['format']}): {g['tasks']} device tasks on {g['streams']} streams of "
             f"device{'s' if len(g['devices']) != 1 else ''} {', '.join(map(str, g['devices']))}, {g['host_calls']} "
             f"host calls; {g['event_dependencies']} event dependencies"
             + (f" ({by_time} paired by time)" if by_time else "")
             + f", {len(g['inferred_dependencies'])} inferred from the timeline"]
    for note in result["notes"]:
        lines.append(f"  - {note}")
    how = result.get("tolerance_how", "given")
    if how.startswith(("inferred", f"default {TOLERANCE * 1e6:g} ")):
        lines.append(f"  - tolerance {result['tolerance_us']:.2f} us, {how} (--tolerance-us sets it)")
    for d in g["inferred_dependencies"][:10]:
        lines.append(f"    inferred: row {d['row']} ({d['task']}) waits for row {d['after_row']} ({d['after']}), "
                     f"{d['gap_us']:.2f} us after it ended")
    if len(g["inferred_dependencies"]) > 10:
        lines.append(f"    ... and {len(g['inferred_dependencies']) - 10} more (replay.json lists them all)")
    if result["unknown_types"]:
        lines.append("unknown task types, replayed with their measured duration: "
                     + ", ".join(f"{k} x{v}" for k, v in sorted(result["unknown_types"].items())))
    fixed = {k: v for k, v in result["fixed"].items() if not k.startswith("unknown task type")}
    if fixed:
        lines.append("replayed with their measured duration: "
                     + ", ".join(f"{k} x{v}" for k, v in sorted(fixed.items())))
    return "\n".join(lines)


def report(result: dict) -> str:
    """What `acl-emu replay` prints."""
    retimed = [result["nothing_retimed"], ""] if result.get("nothing_retimed") else []
    parts = [summary(result), "", *retimed, table(result)]
    for run in result["runs"]:
        if run["copies"] and run["why"]:
            parts += ["", f"copies that moved most on {run['label']}:", copies_table(run)]
        elif run["copies"]:
            parts += ["", f"{run['label']}: every copy within {SAME * 100:g}% of its measured time"]
    parts += ["", validation_line(result)]
    if result.get("tolerance_suggestion"):
        parts.append(result["tolerance_suggestion"])
    files = result.get("files")
    if files and result["calibration_rows"]:
        parts.append(f"to fit a config to these copies: acl-emu calibrate {files['calibration']} --product "
                     f"{result['measured_on']} -o my-server.toml")
    elif files:
        parts.append(f"no measured copy ran alone with a size and a direction: {Path(files['calibration']).name} "
                     f"holds only its header, nothing for acl-emu calibrate to fit")
    if files:
        parts += ["", "files: " + ", ".join(files.values())]
    return "\n".join(parts)
