"""`acl-emu validate`: every public measurement in validation/measurements.toml, replayed on the model.

Each row says what was timed on hardware (API pattern, size, memory kind, direction, devices) and what
was measured. The replay builds the same pattern through the public runtime API in timing-only mode
(blocking copies on the host clock, or async copies between two events) on the row's product config,
and reads the model's figure in the row's unit. Rows marked `calibration = true` are the ones the model
is held to (+-15%); the others are shown beside it with the reason they are not targets.

This module replays and returns plain data; `validate_report` draws it (tables, the plot, the files).
"""
from __future__ import annotations

import statistics
import tomllib
from pathlib import Path

import numpy as np

from ..constants import (ACL_MEMCPY_DEVICE_TO_DEVICE as D2D, ACL_MEMCPY_DEVICE_TO_HOST as D2H,
                         ACL_MEMCPY_HOST_TO_DEVICE as H2D, ACL_MEMCPY_HOST_TO_HOST as H2H)
from .. import config
from ..config import data_dir
from .common import event_time, host_buffer

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
