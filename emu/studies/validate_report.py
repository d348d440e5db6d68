"""The validation drawn: the table of rows and the summary, model against measured on a log-log plot, and the
files `acl-emu validate` writes.

Everything here reads a `validate.validate` result (plain data) and nothing else.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .common import Landing, figure, format_table, save_figure, write_csv, write_json
from .validate import BAND

COLUMNS = [("id", "row"), ("config", "config"), ("use", "use"), ("route", "route"), ("measured", "measured"),
           ("model", "model"), ("unit", "unit"), ("error_pct", "error %"), ("target", "target")]


MARKERS = {"independent": "o", "fit": "s", "same-run": "^", "context": "D"}
USE_LABELS = {"independent": "independent (a check)", "fit": "fit (set a field)", "same-run": "same run as a fit",
              "context": "context (not a runtime copy)"}


def _pct(v) -> str:
    return "" if v is None else f"{v:.1f}"


def _cell(v):
    """A summary value as its table shows it: floats to 0.1, "-" where there is none (a product with no
    calibration target has no median error)."""
    return "-" if v is None else f"{v:.1f}" if isinstance(v, float) else v


def independent_table(result: dict) -> str:
    """The independent rows alone (nothing was fitted to them), per product and route."""
    rows = [{**g, "median": _pct(g["median_abs_error_pct"]), "worst": _pct(g["worst_abs_error_pct"])}
            for g in result["independent"]]
    return (f"independent rows (fitted to nothing) within +-{result['band_pct']:.0f}%, per product and route:\n"
            + format_table(rows, [("product", "product"), ("route", "route"), ("rows", "rows"), ("within", "within"),
                                  ("median", "median |err| %"), ("worst", "worst |err| %")]))


def loso_table(result: dict) -> str:
    """Leave one source out: each source's rows predicted with the fields it set refitted from the others."""
    rows = [{**e, "error": "" if e["error_pct"] is None else f"{e['error_pct']:+.1f}",
             "refit": ", ".join(f.removeprefix("hardware.") for f in e["refit"]) or "(none)",
             "why": e["why"][:60]} for e in result.get("leave_one_source_out", [])]
    return ("leave one source out (the fields a source set, refitted from the other sources; its rows predicted):\n"
            + format_table(rows, [("id", "row"), ("route", "route"), ("use", "use"), ("refit", "refitted"),
                                  ("error", "error %"), ("why", "not predicted because")]))


def tables(result: dict) -> str:
    rows = [{**r, "measured": f"{r['measured']:.4g}", "model": f"{r['model']:.4g}",
             "error_pct": f"{r['error_pct']:+.1f}", "target": ("yes, within" if r["within"] else "yes, OUTSIDE")
             if r["calibration"] else "no"} for r in result["rows"]]
    summary = [{k: _cell(v) for k, v in s.items()} for s in result["summary"]]
    return (format_table(rows, COLUMNS) + "\n\n" + f"calibration targets within +-{result['band_pct']:.0f}%:\n"
            + format_table(summary, [("product", "product"), ("targets", "targets"), ("within", "within"),
                                     ("median_abs_error_pct", "median |err| %"),
                                     ("worst_abs_error_pct", "worst |err| %"), ("rows", "all rows"),
                                     ("all_within", "all within"), ("all_median_abs_error_pct", "all median %")])
            + "\n\n" + independent_table(result)
            + ("\n\n" + loso_table(result) if result.get("leave_one_source_out") else ""))


def plot(result: dict, path: Path) -> Path:
    """Predicted vs measured, log-log, with the +-15% band: bandwidth rows and time rows side by side."""
    fig = figure(figsize=(11, 5))
    axes = fig.subplots(1, 2)
    colours = {p: f"C{i}" for i, p in enumerate(sorted({r["product"] for r in result["rows"]}))}
    for ax, units, label in ((axes[0], ("GB/s", "GiB/s"), "bandwidth, GB/s"), (axes[1], ("us", "ms"), "time, us")):
        mine = [r for r in result["rows"] if r["unit"] in units]
        to = (lambda r: r) if units[0] == "GB/s" else (lambda r: 1e3 if r["unit"] == "ms" else 1.0)
        for r in mine:
            k = to(r) if units[0] == "us" else (2.0 ** 30 / 1e9 if r["unit"] == "GiB/s" else 1.0)
            filled = r["use"] == "independent"
            ax.scatter(r["measured"] * k, r["model"] * k, s=46, color=colours[r["product"]], marker=MARKERS[r["use"]],
                       facecolors=colours[r["product"]] if filled else "none", zorder=3)
        values = [v * (1e3 if r["unit"] == "ms" else 1.0) for r in mine for v in (r["measured"], r["model"])]
        if values:
            lo, hi = min(values) / 2, max(values) * 2
            x = np.geomspace(lo, hi, 50)
            ax.plot(x, x, color="k", lw=0.8)
            ax.fill_between(x, x * (1 - BAND), x * (1 + BAND), color="0.85", zorder=0, label="+-15%")
            ax.set_xlim(lo, hi)
            ax.set_ylim(lo, hi)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"measured {label}")
        ax.set_ylabel(f"model {label}")
        ax.grid(True, which="both", alpha=0.3)
    for p, c in colours.items():
        axes[0].scatter([], [], color=c, label=p)
    for use, label in USE_LABELS.items():
        axes[0].scatter([], [], color="0.4", marker=MARKERS[use], label=label,
                        facecolors="0.4" if use == "independent" else "none")
    axes[0].legend(loc="upper left", fontsize=8)
    s = next(x for x in result["summary"] if x["product"] == "all")
    ind = next((g for g in result.get("independent", []) if g["product"] == "all"), None)
    checks = (f"; independent rows: {ind['within']}/{ind['rows']} within, median |error| "
              f"{ind['median_abs_error_pct']:.1f}%" if ind else "")
    fig.suptitle(f"acl-emu model vs public measurements: {s['within']}/{s['targets']} targets within "
                 f"+-{result['band_pct']:.0f}%{checks}", fontsize=10)
    return save_figure(fig, path)


def write(result: dict, out: Path) -> dict:
    with Landing(out) as land:
        write_csv(land("validation.csv"), result["rows"])
        write_json(land("validation.json"), result)
        plot(result, land("validation.png"))
    return {"csv": str(land.dir / "validation.csv"), "json": str(land.dir / "validation.json"),
            "plot": str(land.dir / "validation.png")}


def report(result: dict, files: dict) -> str:
    """What `acl-emu validate` prints: the tables and the files `write` wrote."""
    return tables(result) + "\n\nfiles: " + ", ".join(files.values())
