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

from .. import config
from .. import routes as R
from . import overlap

DEFAULT_PRODUCTS = "910B,A3,950PR"
DEFAULT_SIZES = "4K..1G"


# -- bandwidth ---------------------------------------------------------------------------------------

def _peak_point(points) -> dict | None:
    """The point of the highest GB/s, None when none has a value."""
    values = [p for p in points or () if p.get("gbps") is not None and math.isfinite(p["gbps"])]
    return max(values, key=lambda p: p["gbps"]) if values else None


def _peak(points) -> float | None:
    best = _peak_point(points)
    return best["gbps"] if best else None


def _headline_routes(result: dict) -> dict:
    """The timing routes the headline numbers rest on (those of each peak point and of the best matrix cells):
    routes, unvalidated_routes (ROUTES order) and validated (none unvalidated)."""
    host, p2p = result.get("host", {}), result.get("p2p") or {}
    points = [_peak_point(host.get(m, {}).get(t)) for m in ("pinned", "pageable") for t in ("h2d", "d2h")]
    points.append(_peak_point(result.get("d2d")))
    for which in ("unidirectional", "bidirectional"):
        cell = _best_cell(p2p.get(which))
        if cell is not None:
            i, j = cell
            points.append({"timing_route": p2p["timing_routes"][i][j], "validated": p2p["validated"][i][j]})
    points = [p for p in points if p is not None]
    used = {p["timing_route"] for p in points}
    missing = {p["timing_route"] for p in points if not p["validated"]}
    return {"routes": [r for r in R.ROUTES if r in used], "unvalidated_routes": [r for r in R.ROUTES if r in missing],
            "validated": not missing}


def _best_cell(matrix) -> tuple[int, int] | None:
    """(i, j) of a matrix's highest value, None when it has none."""
    best = _matrix_max(matrix)
    return None if best is None else next((i, j) for i, line in enumerate(matrix) for j, v in enumerate(line)
                                          if v == best)


def _matrix_max(matrix) -> float | None:
    values = [v for line in matrix or () for v in line if v is not None and math.isfinite(v)]
    return max(values) if values else None


def bandwidth_headline(result: dict) -> dict:
    """The numbers a user compares products by: peak GB/s over the message sizes of each test, and the routes
    they rest on (routes, unvalidated_routes, validated: `_headline_routes`)."""
    host = result.get("host", {})
    p2p = result.get("p2p") or {}
    uni, bi = _matrix_max(p2p.get("unidirectional")), _matrix_max(p2p.get("bidirectional"))
    cell = _best_cell(p2p.get("unidirectional"))
    best_route = p2p["routes"][cell[0]][cell[1]] if cell is not None and p2p.get("routes") else None
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
        **_headline_routes(result),
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
    results, rows, notes = {}, [], {}
    for name in products:
        r = bandwidth.measure(name, sizes, peer_sizes=peer_sizes, progress=progress, **kwargs)
        results[r["product"]] = r
        rows.append(bandwidth_headline(r))
        notes[r["product"]] = R.note(config.load(name), rows[-1]["routes"])
    curves = {name: _curves(r) for name, r in results.items()}
    return {"study": "bandwidth", "products": list(results), "sizes": sizes, "rows": rows, "curves": curves,
            "results": results, **_unvalidated(rows, notes)}


def _unvalidated(rows: list[dict], notes: dict) -> dict:
    """unvalidated_routes and routes_notes, each by product, from the rows."""
    return {"unvalidated_routes": {r["product"]: r["unvalidated_routes"] for r in rows}, "routes_notes": notes}


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
                     "compute_ms": r["compute_ms"], "routes": r["routes"],
                     "unvalidated_routes": r["unvalidated_routes"], "validated": not r["unvalidated_routes"]})
    return {"study": "overlap", "products": list(plans), "h2d_bytes": h2d, "d2h_bytes": d2h,
            "compute_us": compute_us, "pageable": pageable, "rows": rows, "results": plans,
            **_unvalidated(rows, {name: r["routes_note"] for name, r in plans.items()})}
