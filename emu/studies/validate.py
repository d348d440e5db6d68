"""`acl-emu validate`: every public measurement in validation/measurements.toml, replayed on the model.

Each row says what was timed on hardware (API pattern, size, memory kind, direction, devices) and what
was measured. The replay builds the same pattern through the public runtime API in timing-only mode
(blocking copies on the host clock, or async copies between two events) on the row's product config,
and reads the model's figure in the row's unit. Rows marked `calibration = true` are the ones the model
is held to (+-15%); the others are shown beside it with the reason they are not targets.
"""
from __future__ import annotations

import json
import statistics
import sys
import tomllib
from pathlib import Path

import numpy as np

from ..constants import (ACL_MEMCPY_DEVICE_TO_DEVICE as D2D, ACL_MEMCPY_DEVICE_TO_HOST as D2H,
                         ACL_MEMCPY_HOST_TO_DEVICE as H2D, ACL_MEMCPY_HOST_TO_HOST as H2H)
from .. import config
from ..config import data_dir
from .common import (Landing, Progress, event_time, format_table, host_buffer, figure, save_figure, write_csv,
                     write_json)

MEASUREMENTS = data_dir("validation") / "measurements.toml"
BAND = 0.15  # a calibration target is met within +-15%

UNITS = {"GB/s": 1e9, "GiB/s": 2.0 ** 30, "us": 1e-6, "ms": 1e-3}
PATTERNS = ("sync", "async")
MEMORY = ("pinned", "registered", "pageable", "device")
DIRECTIONS = ("h2d", "d2h", "d2d", "p2p", "h2h", "register")
FIELDS = {"id": str, "product": str, "pattern": str, "streams": int, "count": int, "devices": int,
          "size_bytes": int, "memory": str, "direction": str, "value": float, "unit": str, "calibration": bool,
          "source": str}


class MeasurementError(ValueError):
    """A row of a measurements file is missing a field or has one out of range."""


# -- reading ---------------------------------------------------------------------------------------------
def load(path: str | Path | None = None) -> list[dict]:
    """The rows of a measurements file (default: the bundled one), checked field by field."""
    path = Path(path) if path else MEASUREMENTS
    try:
        rows = tomllib.loads(path.read_text())["row"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as e:
        raise MeasurementError(f"{path}: cannot read [[row]] tables: {e}") from None
    seen = set()
    for i, row in enumerate(rows):
        check_row(row, f"{path}: row {i + 1} ({row.get('id', '?')})")
        if row["id"] in seen:
            raise MeasurementError(f"{path}: row {i + 1}: id {row['id']!r} is used twice")
        seen.add(row["id"])
    return rows


def check_row(row: dict, where: str) -> None:
    for key, typ in FIELDS.items():
        v = row.get(key)
        ok = isinstance(v, typ) or (typ is float and isinstance(v, int) and not isinstance(v, bool))
        if not ok or (typ is int and isinstance(v, bool)):
            raise MeasurementError(f"{where}: field '{key}': expected {typ.__name__}, got {v!r}")
    for key, choices in (("pattern", PATTERNS), ("memory", MEMORY), ("direction", DIRECTIONS), ("unit", UNITS)):
        if row[key] not in choices:
            raise MeasurementError(f"{where}: field '{key}': {row[key]!r} is not one of {', '.join(choices)}")
    for key in ("streams", "count", "devices", "size_bytes", "value"):
        if row[key] <= 0:
            raise MeasurementError(f"{where}: field '{key}': must be > 0, got {row[key]!r}")
    if not row["calibration"] and not row.get("why"):
        raise MeasurementError(f"{where}: field 'why': a row that is not a calibration target says why")


# -- replaying -------------------------------------------------------------------------------------------
def replay(row: dict, config: str | None = None) -> float:
    """Simulated seconds of one sample of the row's pattern (all its copies), on `config` or the row's product."""
    rt = private_runtime(config or row["product"])
    keep: list = []  # numpy buffers behind pageable and registered memory (never touched: no RAM used)
    if row["direction"] == "register":
        return _register(rt, row, keep)
    devices = list(range(row["devices"]))
    for dev in devices:
        rt.set_device(dev)
    if row["direction"] == "p2p" and rt.product.has("peer_copy_needs_enable"):
        rt.set_device(0)
        rt.device_enable_peer_access(1, 0)
    jobs = [_buffers(rt, row, dev, keep) for dev in devices]
    return _sync(rt, row, jobs) if row["pattern"] == "sync" else _async(rt, row, jobs)


def private_runtime(product):
    """A timing-only emulated process of the study's own, never the user's current one (emu.current())."""
    from ..runtime import Runtime

    return Runtime(config.load(product), functional=False, records=None)


def _buffers(rt, row: dict, dev: int, keep: list) -> tuple:
    """(device, dst, src, kind) of one device's copies."""
    n, direction = row["size_bytes"], row["direction"]
    rt.set_device(dev)
    if direction == "h2d":
        return dev, rt.malloc(n), host_buffer(rt, row["memory"], n, keep), H2D
    if direction == "d2h":
        return dev, host_buffer(rt, row["memory"], n, keep), rt.malloc(n), D2H
    if direction == "d2d":
        return dev, rt.malloc(n), rt.malloc(n), D2D
    if direction == "h2h":  # the CPU's copy, as the driver does it for a blocking host-to-host aclrtMemcpy
        return dev, host_buffer(rt, row["memory"], n, keep), host_buffer(rt, row["memory"], n, keep), H2H
    src = rt.malloc(n)  # p2p: this device to the next
    rt.set_device((dev + 1) % rt.product.device_count)
    dst = rt.malloc(n)
    rt.set_device(dev)
    return dev, dst, src, D2D


def _sync(rt, row: dict, jobs: list) -> float:
    """Blocking copies one after another on the host clock (devices take turns, as one host thread would)."""
    n = row["size_bytes"]
    switch = len(jobs) > 1  # one device: no context switches in the timed loop
    t0 = rt.clock
    for _ in range(row["count"]):
        for dev, dst, src, kind in jobs:
            if switch:
                rt.set_device(dev)
            rt.memcpy(dst, n, src, n, kind)
    return rt.clock - t0


def _async(rt, row: dict, jobs: list) -> float:
    """Async copies spread over `streams` streams per device, timed as ascend-dmi would: an event before
    them on the first stream (the others wait for it) and one after them (the first stream waits for the
    others). Several devices are timed on the host clock around the whole, from the first enqueue to the
    last synchronize."""
    lanes = []
    for dev, dst, src, kind in jobs:
        rt.set_device(dev)
        lanes.append((dev, [rt.create_stream() for _ in range(row["streams"])], dst, src, kind))
    if len(lanes) > 1:
        t0 = rt.clock
        _enqueue(rt, row, lanes, join=False)
        for dev, streams, *_ in lanes:
            rt.set_device(dev)
            for s in streams:
                rt.synchronize_stream(s)
        return rt.clock - t0
    return event_time(rt, lanes[0][1][0], lambda: _enqueue(rt, row, lanes, join=True))


def _enqueue(rt, row: dict, lanes: list, join: bool) -> None:
    """Queue the row's copies round-robin over each device's streams; `join`: fork the streams from the
    first before them and join them back into it after them (one device)."""
    n, k = row["size_bytes"], row["streams"]
    streams = [s for _, mine, *_ in lanes for s in mine]
    join = join and len(streams) > 1
    if join:
        _join(rt, streams[0], streams[1:])
    switch = len(lanes) > 1  # one device: no context switches between the copies
    for i in range(row["count"]):
        for dev, mine, dst, src, kind in lanes:
            if switch:
                rt.set_device(dev)
            rt.memcpy_async(dst, n, src, n, kind, mine[i % k])
    if join:
        for s in streams[1:]:
            _join(rt, s, streams[:1])


def _join(rt, after: int, waiting: list) -> int:
    """Streams in `waiting` wait for what `after` has queued so far."""
    ev = rt.create_event()
    rt.record_event(ev, after)
    for s in waiting:
        rt.stream_wait_event(s, ev)
    return ev


def _register(rt, row: dict, keep: list) -> float:
    rt.set_device(0)
    n = row["size_bytes"]
    total = 0.0
    for _ in range(row["count"]):
        buf = np.empty(n, dtype=np.uint8)
        keep.append(buf)
        ptr = rt.register_host(buf)
        t0 = rt.clock
        rt.host_register(ptr, n, 0)
        total += rt.clock - t0
        rt.host_unregister(ptr)
    return total


def predict(row: dict, config: str | None = None) -> float:
    """The model's figure for the row, in the row's unit."""
    seconds = replay(row, config)
    scale = UNITS[row["unit"]]
    if row["unit"] in ("GB/s", "GiB/s"):
        return row["size_bytes"] * row["count"] * row["devices"] / seconds / scale
    return seconds / row["count"] / scale


# -- the whole table -------------------------------------------------------------------------------------
def validate(rows: list[dict], config: str | None = None, progress=None) -> dict:
    out = []
    for row in rows:
        model = predict(row, config)
        err = model / row["value"] - 1.0
        out.append({"id": row["id"], "product": row["product"], "config": config or row["product"],
                    "direction": row["direction"], "memory": row["memory"], "pattern": row["pattern"],
                    "bytes": row["size_bytes"], "unit": row["unit"], "measured": row["value"],
                    "model": model, "error_pct": 100 * err, "within": abs(err) <= BAND,
                    "calibration": row["calibration"], "why": row.get("why", ""), "source": row["source"]})
        if progress is not None:
            progress.advance(1, row["id"])
    return {"rows": out, "summary": summarise(out), "band_pct": 100 * BAND}


def summarise(rows: list[dict]) -> list[dict]:
    """Per product (and over all): targets within the band, median and worst absolute error."""
    out = []
    for product in sorted({r["product"] for r in rows}) + ["all"]:
        mine = [r for r in rows if product in ("all", r["product"])]
        targets = [r for r in mine if r["calibration"]]
        errs = [abs(r["error_pct"]) for r in targets]
        every = [abs(r["error_pct"]) for r in mine]
        out.append({"product": product, "targets": len(targets), "within": sum(r["within"] for r in targets),
                    "median_abs_error_pct": statistics.median(errs) if errs else None,
                    "worst_abs_error_pct": max(errs) if errs else None,
                    "rows": len(mine), "all_within": sum(r["within"] for r in mine),
                    "all_median_abs_error_pct": statistics.median(every) if every else None})
    return out


# -- reports ---------------------------------------------------------------------------------------------
COLUMNS = [("id", "row"), ("config", "config"), ("measured", "measured"), ("model", "model"), ("unit", "unit"),
           ("error_pct", "error %"), ("target", "target")]


def tables(result: dict) -> str:
    rows = [{**r, "measured": f"{r['measured']:.4g}", "model": f"{r['model']:.4g}",
             "error_pct": f"{r['error_pct']:+.1f}", "target": ("yes, within" if r["within"] else "yes, OUTSIDE")
             if r["calibration"] else "no"} for r in result["rows"]]
    summary = [{k: (f"{v:.1f}" if isinstance(v, float) else v) for k, v in s.items()} for s in result["summary"]]
    return (format_table(rows, COLUMNS) + "\n\n" + f"calibration targets within +-{result['band_pct']:.0f}%:\n"
            + format_table(summary, [("product", "product"), ("targets", "targets"), ("within", "within"),
                                     ("median_abs_error_pct", "median |err| %"),
                                     ("worst_abs_error_pct", "worst |err| %"), ("rows", "all rows"),
                                     ("all_within", "all within"), ("all_median_abs_error_pct", "all median %")]))


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
            ax.scatter(r["measured"] * k, r["model"] * k, s=46, color=colours[r["product"]],
                       facecolors=colours[r["product"]] if r["calibration"] else "none", zorder=3)
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
    axes[0].scatter([], [], color="0.4", label="calibration target")
    axes[0].scatter([], [], facecolors="none", color="0.4", label="shown, not a target")
    axes[0].legend(loc="upper left", fontsize=8)
    s = next(x for x in result["summary"] if x["product"] == "all")
    fig.suptitle(f"acl-emu model vs public measurements: {s['within']}/{s['targets']} targets within "
                 f"+-{result['band_pct']:.0f}%, median |error| {s['median_abs_error_pct']:.1f}%")
    return save_figure(fig, path)


def write(result: dict, out: Path) -> dict:
    with Landing(out) as land:
        write_csv(land("validation.csv"), result["rows"])
        write_json(land("validation.json"), result)
        plot(result, land("validation.png"))
    return {"csv": str(land.dir / "validation.csv"), "json": str(land.dir / "validation.json"),
            "plot": str(land.dir / "validation.png")}


# -- the command -----------------------------------------------------------------------------------------
def main(args) -> int:
    try:
        rows = load(args.measurements)
    except MeasurementError as e:
        sys.stderr.write(f"acl-emu validate: error: argument --measurements: {e}\n")
        return 2
    if args.product:
        rows = [r for r in rows if r["product"] in args.product]
        if not rows:
            sys.stderr.write(f"acl-emu validate: error: argument --product: no rows for {','.join(args.product)}\n")
            return 2
    if args.targets:
        rows = [r for r in rows if r["calibration"]]
    with Progress(len(rows), "validate") as bar:
        result = validate(rows, args.config, bar)
    files = write(result, Path(args.out))
    if args.json:
        print(json.dumps({**result, "files": files}, indent=2))
    else:
        print(tables(result))
        print("\nfiles: " + ", ".join(files.values()))
    return 0


def add_parser(sub) -> None:
    from ..cli import product_arg
    from .common import products_arg

    p = sub.add_parser("validate", help="replay the public hardware measurements on the model and show the error")
    p.add_argument("--measurements", help="a measurements TOML (default: the bundled validation/measurements.toml)")
    p.add_argument("--product", type=products_arg, help="only the rows of these products (comma separated)")
    p.add_argument("--config", type=product_arg, help="replay every row on this config instead of its product's "
                                                      "(a calibrated server, a what-if)")
    p.add_argument("--targets", action="store_true", help="only the calibration targets")
    p.add_argument("--out", default="acl-emu-out/validate", help="directory for CSV, JSON and the plot")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=main)
