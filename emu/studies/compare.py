"""`acl-emu compare`: one study side by side across products - one table of headline numbers, one figure.

The question it answers is "which product, and by how much": the per-product
studies (`bandwidth.measure`, `overlap.plan`) run unchanged, one after the
other, and only their headline numbers are lined up, so a reader sees the
difference without opening N reports. The full per-product results stay in
compare.json for anyone who wants the detail.

This module runs the studies and returns plain data; `compare_report` draws it (table, figure, files).
"""
from __future__ import annotations

import math

from . import overlap

DEFAULT_PRODUCTS = "910B,A3,950PR"
DEFAULT_SIZES = "4K..1G"


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


def _curves(result: dict) -> dict:
    """A product's curves for the figure, each [(bytes, GB/s)...]: h2d_/d2h_ pinned and pageable, d2d (device
    0), and peer: the fastest device pair's one-way curve (peer_route names its route and pair)."""
    host = result.get("host", {})
    out = {f"{t}_{m}": [(p["bytes"], p["gbps"]) for p in host.get(m, {}).get(t, [])]
           for t in ("h2d", "d2h") for m in ("pinned", "pageable")}
    out["d2d"] = [(p["bytes"], p["gbps"]) for p in result.get("d2d") or ()]
    peers = [c for c in (result.get("p2p") or {}).get("curves", []) if c.get("unidirectional")]
    best = max(peers, key=lambda c: _peak(c["unidirectional"]) or 0.0, default=None)
    out["peer"] = [(p["bytes"], p["gbps"]) for p in best["unidirectional"]] if best else []
    out["peer_route"] = f"{best['route'].upper()} {best['src']}->{best['dst']}" if best else None
    return out


def compare_bandwidth(products: list[str], sizes: list[int], *, peer_sizes: list[int] | None = None,
                      repetitions: int | None = None, progress=None) -> dict:
    """`bandwidth.measure` on each product; rows of headline numbers and the curves for the figure (H2D and
    D2H page-locked and pageable, D2D, the fastest peer pair)."""
    from . import bandwidth

    kwargs = {} if repetitions is None else {"repetitions": repetitions,
                                             "peer_repetitions": min(repetitions, bandwidth.PEER_REPETITIONS)}
    results = {}
    for name in products:
        r = bandwidth.measure(name, sizes, peer_sizes=peer_sizes, progress=progress, **kwargs)
        results[r["product"]] = r
    curves = {name: _curves(r) for name, r in results.items()}
    return {"study": "bandwidth", "products": list(results), "sizes": sizes,
            "rows": [bandwidth_headline(r) for r in results.values()], "curves": curves, "results": results}


# -- overlap -----------------------------------------------------------------------------------------

def compare_overlap(products: list[str], h2d: int, d2h: int, compute_us: float, streams_list, chunks_list,
                    pageable: bool = False, progress=None, extend: bool = True) -> dict:
    """`overlap.plan` on each product; rows of the best setting, its time, the naive time, the floor and the
    resource that sets it."""
    plans = {}
    for name in products:
        r = overlap.plan(name, h2d, d2h, compute_us, streams_list, chunks_list, pageable, progress, extend)
        plans[r["product"]] = r
    rows = []
    for name, r in plans.items():
        b, n = r["best"], r["naive"]
        rows.append({"product": name, "best": f"{b['streams']}x{b['chunks']}", "best_streams": b["streams"],
                     "best_chunks": b["chunks"], "best_ms": b["iteration_ms"], "naive_ms": n["iteration_ms"],
                     "floor_ms": r["floor_ms"], "best_vs_floor": b["vs_floor"], "binding": r["binding"],
                     "converged": r["search"]["converged"], "speedup": r["speedup"], "copy_ms": r["copy_ms"],
                     "compute_ms": r["compute_ms"]})
    return {"study": "overlap", "products": list(plans), "h2d_bytes": h2d, "d2h_bytes": d2h,
            "compute_us": compute_us, "pageable": pageable, "rows": rows, "results": plans}


# The table, the figures and the files moved to compare_report; their names still answer here, for code
# written before.
_MOVED = frozenset({"BANDWIDTH_COLUMNS", "OVERLAP_COLUMNS", "bandwidth_figure", "overlap_figure", "figure_of",
                    "write_outputs", "table"})


def __getattr__(name: str):
    if name in _MOVED:
        from . import compare_report

        return getattr(compare_report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
