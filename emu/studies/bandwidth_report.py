"""The bandwidth study drawn: tables as text, matplotlib figures, and the files `acl-emu bandwidth` writes.

    from emu.studies import bandwidth, bandwidth_report
    result = bandwidth.measure("910B", [4096, 1 << 20, 1 << 30])
    bandwidth_report.bandwidth_figure(result)  # a matplotlib Figure
    bandwidth_report.write(result, "out")  # bandwidth.csv, bandwidth.json, bandwidth.png, p2p.png
    print(bandwidth_report.report(result))  # what `acl-emu bandwidth` prints

Everything here reads a `bandwidth.measure` result (plain data) and nothing else.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .bandwidth import MEMORY_KINDS
from .common import (Landing, figure, format_table, human_bytes, peak_text, same_curves, save_figure, size_axis,
                     write_csv, write_json)

KIND_TITLES = {
    "pinned": "page-locked host memory (aclrtMallocHost)",
    "registered": "registered host memory (aclrtHostRegisterV2 PINNED)",
    "pageable": "pageable host memory (a plain buffer; EP mode stages it through pinned chunks)",
}
COLUMNS = ("test", "memory", "src", "dst", "route", "bytes", "repetitions", "seconds", "gbps", "model_gbps",
           "model", "status", "timing_route", "checked")
UNVALIDATED = "UNVALIDATED"


def checked(points) -> str:
    """A table's "checked" cell for the measured points (each with timing_route and validated) behind one row:
    "yes" when an independent measurement checks every route they rest on, else "UNVALIDATED (route, ...)"."""
    points = [pt for pt in points if pt is not None and pt.get("gbps") is not None]
    missing = list(dict.fromkeys(pt["timing_route"] for pt in points if not pt["validated"]))
    return f"{UNVALIDATED} ({', '.join(missing)})" if missing else "yes"


def csv_row(r: dict) -> dict:
    """One row of bandwidth.csv: the COLUMNS of a result row, "" for None, checked "yes" / "UNVALIDATED"."""
    out = {k: ("" if r.get(k) is None else r.get(k)) for k in COLUMNS}
    out["checked"] = "yes" if r["validated"] else UNVALIDATED
    return out


def _ceiling(points: list[dict]) -> bool:
    return any(pt["model"].startswith("ceiling") for pt in points)


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
                         "d2h_model": _fmt(d2h["model_gbps"]), "checked": checked([point, d2h])})
        out.append((f"H2D / D2H, device 0, {KIND_TITLES[memory]}, GB/s",
                    format_table(body, [("size", "size"), ("h2d", "H2D"), ("h2d_model", f"H2D {label}"),
                                        ("d2h", "D2H"), ("d2h_model", f"D2H {label}"), ("checked", "checked")])))
    if result["d2d"]:
        body = [{"size": human_bytes(r["bytes"]), "gbps": _fmt(r["gbps"]), "model": _fmt(r["model_gbps"]),
                 "checked": checked([r])} for r in result["d2d"]]
        out.append(("D2D on device 0, GB/s", format_table(body, [("size", "size"), ("gbps", "D2D"),
                                                                   ("model", "D2D model"), ("checked", "checked")])))
    p2p = result["p2p"]
    if p2p["curves"]:
        cols = [("size", "size")]
        sizes = sorted({pt["bytes"] for c in p2p["curves"] for pt in c["unidirectional"]})
        body = [{"size": human_bytes(s)} for s in sizes]
        for c in p2p["curves"]:
            key = f"{c['route']} {c['src']}->{c['dst']}"
            cols += [(key, key), (key + " bidir", f"{key} bidir")]
            for row, s in zip(body, sizes):
                uni = [pt for pt in c["unidirectional"] if pt["bytes"] == s]
                bi = [pt for pt in c["bidirectional"] if pt["bytes"] == s]
                row[key] = _fmt(uni[0]["gbps"] if uni else None)
                row[key + " bidir"] = _fmt(bi[0]["gbps"] if bi else None)
                row.setdefault("points", []).extend(uni + bi)
        for row in body:
            row["checked"] = checked(row.pop("points", []))
        out.append(("device to device by route, unidirectional and bidirectional (sum), GB/s",
                    format_table(body, cols + [("checked", "checked")])))
    if p2p["devices"] > 1:
        for which in ("unidirectional", "bidirectional"):
            m = p2p[which]
            body = []
            for i, line in enumerate(m):
                row = {"dev": str(i), "checked": checked(_matrix_points(p2p, i, line))}
                for j, v in enumerate(line):
                    row[str(j)] = "-" if i == j else _fmt(v)
                body.append(row)
            cols = [("dev", "src\\dst" if which == "unidirectional" else "i\\j")] + \
                   [(str(j), str(j)) for j in range(p2p["devices"])] + [("checked", "checked")]
            what = "src -> dst alone" if which == "unidirectional" else "i -> j and j -> i at once, summed"
            out.append((f"device-to-device matrix, {which} ({what}), {human_bytes(p2p['bytes'])}, GB/s",
                        format_table(body, cols)))
    return out


def _matrix_points(p2p: dict, i: int, line: list) -> list[dict]:
    """Row i of a device-to-device matrix as points (gbps, timing_route, validated), for `checked`."""
    return [{"gbps": v, "timing_route": p2p["timing_routes"][i][j], "validated": p2p["validated"][i][j]}
            for j, v in enumerate(line) if j != i and v is not None]


# -- plots ----------------------------------------------------------------------------------------------------
SAME = 1e-3  # curves within 0.1% of each other at every size are drawn as one, named for all of them
_STYLES = {"pinned": dict(color="tab:blue", marker="o", lw=1.8),
           "registered": dict(color="tab:green", marker="x", lw=1.2),
           "pageable": dict(color="tab:orange", marker="o", lw=1.5)}


def _size_axis(ax) -> None:
    size_axis(ax)
    ax.set_ylabel("bandwidth (GB/s)")
    ax.grid(True, which="major", alpha=0.3)


def _group_label(names: list[tuple[str, str]]) -> str:
    """'H2D = D2H, pinned = registered' for curves that coincide (each (test, memory))."""
    tests = list(dict.fromkeys(t for t, _ in names))
    memories = list(dict.fromkeys(m for _, m in names))
    if len(names) == len(tests) * len(memories):
        return f"{' = '.join(t.upper() for t in tests)} {' = '.join(memories)}"
    return " = ".join(f"{t.upper()} {m}" for t, m in names)


def _unvalidated_suffix(points: list[dict]) -> str:
    bad = sum(not pt["validated"] for pt in points)
    return "" if not bad else " (unvalidated)" if bad == len(points) else " (partly unvalidated)"


def _curve(ax, points: list[dict], style: str, label: str, **kw) -> None:
    """A curve of points (bytes, gbps, validated): filled markers where an independent measurement checks the
    point's route, hollow ones where none does, and "(unvalidated)" in the label (see `figure_note`)."""
    pts = [pt for pt in points if pt["gbps"] is not None]
    x, y = [pt["bytes"] for pt in pts], [pt["gbps"] for pt in pts]
    bad = [k for k, pt in enumerate(pts) if not pt["validated"]]
    hollow = {"mfc": "white", "mew": 1.2}
    label += _unvalidated_suffix(pts)
    if bad and len(bad) == len(pts):  # all hollow, the legend's marker too
        ax.plot(x, y, style, label=label, **kw, **hollow)
        return
    line, = ax.plot(x, y, style, label=label, markevery=[k for k in range(len(pts)) if k not in bad], **kw)
    if bad:
        ax.plot([x[k] for k in bad], [y[k] for k in bad], linestyle="none", marker=line.get_marker(),
                ms=line.get_markersize(), mec=line.get_color(), **hollow)


def figure_note(result: dict) -> str:
    """The line under a bandwidth figure: which routes its curves rest on are unvalidated."""
    missing = result["unvalidated_routes"]
    if not missing:
        return result["routes_note"]
    return (f"hollow markers, (unvalidated): no independent measurement checks these routes on {result['product']} "
            f"(see acl-emu validate): " + ", ".join(missing))


def _host_points(result: dict, names: list[tuple[str, str]]) -> list[dict]:
    """The points of the first of coinciding host curves, unvalidated where any of them is."""
    curves = [result["host"][memory][test] for test, memory in names]
    return [{**pt, "validated": all(c[k]["validated"] for c in curves)} for k, pt in enumerate(curves[0])]


def bandwidth_figure(result: dict):
    """Bandwidth vs message size: host<->device per (direction, memory kind); D2D and peers by route; hollow
    markers where a point's route is unvalidated (`figure_note`). Returns a matplotlib Figure (see
    `common.figure`)."""
    from matplotlib import colormaps

    fig = figure(figsize=(13, 5.3))
    left, right = fig.subplots(1, 2)
    curves = {(test, memory): [(pt["bytes"], pt["gbps"]) for pt in view.get(test, [])]
              for test in ("h2d", "d2h") for memory, view in result["host"].items()}
    for names, pts in same_curves(curves, rel=SAME):  # curves that coincide (pinned, registered) drawn once
        test, memory = names[0]
        full = _host_points(result, names)
        label = f"{_group_label(names)}, {peak_text(pts)}"
        _curve(left, full, "-" if test == "h2d" else "--", label, ms=4, **_STYLES[memory])
        if not _ceiling(full):
            left.plot([pt["bytes"] for pt in full], [pt["model_gbps"] for pt in full], ":", color="black", lw=0.8,
                      alpha=0.6)
    left.plot([], [], ":", color="black", lw=0.8, label="model closed form (a = b: curves within 0.1%)")
    left.set_title(f"{result['product']}: host <-> device 0 ({result['host_link']})")
    _size_axis(left)
    left.set_ylim(0, left.get_ylim()[1] * 1.4)  # room above the curves for the legend: it hides none of them
    left.legend(fontsize=8, loc="upper left")
    if result["d2d"]:
        d2d = result["d2d"]
        _curve(right, d2d, "-", f"D2D on device 0, {peak_text([(p['bytes'], p['gbps']) for p in d2d])}",
               marker="o", ms=3, color="tab:red")
        right.plot([pt["bytes"] for pt in d2d], [pt["model_gbps"] for pt in d2d], ":", color="black", lw=0.8,
                   alpha=0.6)
    for k, c in enumerate(result["p2p"]["curves"]):
        color = colormaps["tab10"]((k + 4) % 10)
        name = f"{c['route'].upper()} {c['src']}->{c['dst']}"
        for key, style, what in (("unidirectional", "-", ""), ("bidirectional", "--", " bidir (sum)")):
            pts = c[key]
            if pts:
                _curve(right, pts, style, f"{name}{what}, {peak_text([(p['bytes'], p['gbps']) for p in pts])}",
                       marker="s", ms=3, color=color)
    right.plot([], [], ":", color="black", lw=0.8, label="model closed form")
    right.set_title(f"{result['product']}: device memory and peers")
    _size_axis(right)
    right.set_yscale("log")
    right.legend(fontsize=8)
    fig.suptitle(f"{result['title']}: bandwidth vs message size (timing-only emulation, event-timed)", fontsize=10)
    fig.supxlabel(figure_note(result), fontsize=8)  # a figure-level label, so tight_layout keeps room for it
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
                text = "self" if i == j else ("n/a" if not np.isfinite(v) else f"{v:.0f}" if v >= 10 else f"{v:.1f}")
                text += "*" if np.isfinite(v) and p2p["validated"][i][j] is False else ""
                light = np.isfinite(v) and finite.size and v < 0.6 * finite.max()
                ax.text(j, i, text, ha="center", va="center", fontsize=size, color="white" if light else "black")
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.tick_params(labelsize=size + 1)
        ax.set_xlabel("destination device" if which == "unidirectional" else "device j")
        ax.set_ylabel("source device" if which == "unidirectional" else "device i")
        ax.set_title(what, fontsize=10)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="GB/s")
    fig.suptitle(f"{result['product']}: device-to-device bandwidth at {human_bytes(p2p['bytes'])} (GB/s; n/a: "
                 f"no peer access; self: a device with itself, see D2D)", fontsize=11)
    fig.supxlabel(matrix_note(result), fontsize=8)
    fig.tight_layout()
    return fig


def matrix_note(result: dict) -> str:
    """The line under the matrices: the unvalidated routes their measured cells rest on (marked *)."""
    p2p = result["p2p"]
    missing = list(dict.fromkeys(pt["timing_route"] for i, line in enumerate(p2p["unidirectional"])
                                 for pt in _matrix_points(p2p, i, line) if not pt["validated"]))
    if not missing:
        return f"every route in these matrices is checked against an independent measurement on {result['product']}"
    return (f"*: unvalidated on {result['product']} (no independent measurement; see acl-emu validate): "
            + ", ".join(missing))


def plot_bandwidth(result: dict, path: Path) -> Path:
    """Write `bandwidth_figure(result)` as a PNG."""
    return save_figure(bandwidth_figure(result), path)


def plot_p2p(result: dict, path: Path) -> Path:
    """Write `p2p_figure(result)` as a PNG."""
    return save_figure(p2p_figure(result), path)


# -- files ------------------------------------------------------------------------------------------------
def write(result: dict, out: Path) -> dict:
    """Write bandwidth.csv, bandwidth.json, bandwidth.png and p2p.png to `out`; return their paths."""
    names = {"csv": "bandwidth.csv", "json": "bandwidth.json", "bandwidth_png": "bandwidth.png", "p2p_png": "p2p.png"}
    with Landing(out) as land:
        write_csv(land(names["csv"]), [csv_row(r) for r in result["rows"]])
        plot_bandwidth(result, land(names["bandwidth_png"]))
        plot_p2p(result, land(names["p2p_png"]))
        result["files"] = {k: str(land.dir / v) for k, v in names.items()}
        write_json(land(names["json"]), result)
    return result["files"]


def report(result: dict) -> str:
    """What `acl-emu bandwidth` prints: the run in one line, the tables, the notes, and the files `write`
    wrote."""
    events = result["timer"].startswith("events")
    lines = [f"{result['title']} ({result['product']}): timing-only emulation, {result['repetitions']} copies "
             f"per measurement, timed with {'events' if events else 'the host clock'}"]
    for title, text in tables(result):
        lines += ["", title, text]
    lines += ["", f"checked: {result['routes_note']}"]
    if result["notes"]:
        lines.append("")
        lines += [f"note: {note}" for note in result["notes"]]
    lines += ["", "model: the closed form of a lone copy (Hardware.alone); ceiling: min(the driver's staging copy, "
                  "link) for pageable memory", "wrote " + ", ".join(result["files"].values())]
    return "\n".join(lines)
