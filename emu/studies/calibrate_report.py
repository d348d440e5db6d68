"""The calibration drawn: the residual of every input row on the calibrated config, as a table and a plot.

Everything here reads `calibrate.calibrate` and `calibrate.residuals` results (plain data) and nothing else.
"""
from __future__ import annotations

from pathlib import Path

from .common import figure, format_table, save_figure


def plot(rows: list[dict], path: Path, title: str) -> Path:
    """Measured points and the calibrated model's line over size, one colour per group."""
    fig = figure(figsize=(7.5, 4.5))
    ax = fig.subplots()
    keys = sorted({(r["direction"], r["memory"], r["pattern"], r["unit"]) for r in rows})
    for i, key in enumerate(keys):
        mine = sorted((r for r in rows if (r["direction"], r["memory"], r["pattern"], r["unit"]) == key),
                      key=lambda r: r["bytes"])
        x = [r["bytes"] for r in mine]
        ax.plot(x, [r["model"] for r in mine], color=f"C{i}", lw=1.5, label=f"{key[0]} {key[1]} ({key[2]}): model")
        ax.scatter(x, [r["measured"] for r in mine], color=f"C{i}", s=28, zorder=3, label="measured")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("copy size (bytes)")
    ax.set_ylabel(" / ".join(sorted({k[3] for k in keys})))
    worst = max(abs(r["error_pct"]) for r in rows)
    ax.set_title(f"{title}: worst residual {worst:.1f}%")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def report(result: dict, table: list[dict], per_field: dict[str, float], config: Path, plot: Path) -> str:
    """What `acl-emu calibrate` prints: the residual of each row, each fitted field with its median residual,
    the fields kept from the base config, and the two files written (`config`, `plot`)."""
    lines = [format_table([{"row": r["row"], "bytes": r["bytes"], "measured": f"{r['measured']:.4g}",
                            "model": f"{r['model']:.4g}", "unit": r["unit"], "error %": f"{r['error_pct']:+.1f}"}
                           for r in table]), "", "fitted:"]
    lines += [f"  {k} = {v:.4g}   (median residual {per_field[k]:.1f}%)" for k, v in result["fields"].items()]
    lines += [f"  kept from {result['base']}: {k} ({why})" for k, why in result["kept"].items()]
    lines += ["", f"wrote {config} and {plot}; use it as --product {config}"]
    return "\n".join(lines)
