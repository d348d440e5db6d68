"""`acl-emu validate`: every public measurement in validation/measurements.toml, replayed on the model.

Each row says what was timed on hardware (API pattern, size, memory kind, direction, devices) and what
was measured. The replay builds the same pattern through the public runtime API in timing-only mode
(blocking copies on the host clock, or async copies between two events) on the row's product config,
and reads the model's figure in the row's unit. Rows marked `calibration = true` are the ones the model
is held to (+-15%); the others are shown beside it with the reason they are not targets.

Each row also says how it is used (`use`): "fit" (it set a config field, named in `fitted`), "same-run"
(another figure of the run that set a field, named in `same_run_as`), "independent" (nothing was fitted
to it: a check of the model) or "context" (not a runtime copy the model can replay, shown beside with
`why`). The independent rows are reported on their own, per product and per route (`emu.routes`);
`holdout` refits the fields each source set from the other sources and predicts its rows.

This module replays and returns plain data; `validate_report` draws it (tables, the plot, the files).
"""
from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np

from ..constants import (ACL_MEMCPY_DEVICE_TO_DEVICE as D2D, ACL_MEMCPY_DEVICE_TO_HOST as D2H,
                         ACL_MEMCPY_HOST_TO_DEVICE as H2D, ACL_MEMCPY_HOST_TO_HOST as H2H)
from .. import config, files, routes
from ..config import data_dir
from .common import event_time, host_buffer

MEASUREMENTS = data_dir("validation") / "measurements.toml"
BAND = 0.15  # a calibration target is met within +-15%

UNITS = {"GB/s": 1e9, "GiB/s": 2.0 ** 30, "us": 1e-6, "ms": 1e-3}
PATTERNS = ("sync", "async", "stream-sync", "copy-sync")
MEMORY = ("pinned", "registered", "pageable", "device")
DIRECTIONS = ("h2d", "d2h", "d2d", "p2p", "h2h", "register", "kernel")
USES = ("fit", "same-run", "independent", "context")
FIELDS = {"id": str, "product": str, "pattern": str, "streams": int, "count": int, "devices": int,
          "size_bytes": int, "memory": str, "direction": str, "value": float, "unit": str, "calibration": bool,
          "source": str, "use": str}


class MeasurementError(ValueError):
    """A row of a measurements file is missing a field or has one out of range."""


# -- reading ---------------------------------------------------------------------------------------------
def load(path: str | Path | None = None) -> list[dict]:
    """The rows of a measurements file (default: the bundled one), checked field by field."""
    path = Path(path) if path else MEASUREMENTS
    try:
        table = files.load_toml(path, files.TABLE_BYTES, "a measurements table")
    except files.NotToml as e:
        raise MeasurementError(f"{path}: cannot read [[row]] tables: not TOML: {e}") from None
    except files.FileRefused as e:  # a FIFO, a device, a directory, over the bound, not UTF-8 text
        raise MeasurementError(str(e)) from None
    rows = table.get("row")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise MeasurementError(f"{path}: cannot read [[row]] tables: a measurements table is [[row]] tables "
                               f"(id, product, pattern, size_bytes, value, unit, ...)")
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
    for key, choices in (("pattern", PATTERNS), ("memory", MEMORY), ("direction", DIRECTIONS), ("unit", UNITS),
                         ("use", USES)):
        if row[key] not in choices:
            raise MeasurementError(f"{where}: field '{key}': {row[key]!r} is not one of {', '.join(choices)}")
    for key in ("streams", "count", "devices", "size_bytes", "value"):
        if row[key] <= 0:
            raise MeasurementError(f"{where}: field '{key}': must be > 0, got {row[key]!r}")
    if not row["calibration"] and not row.get("why"):
        raise MeasurementError(f"{where}: field 'why': a row that is not a calibration target says why")
    if row["use"] == "fit" and not row.get("fitted"):
        raise MeasurementError(f"{where}: field 'fitted': a row used to fit names the config field it set")
    if row["use"] == "same-run" and not row.get("same_run_as"):
        raise MeasurementError(f"{where}: field 'same_run_as': a same-run row names the fit row of its run")
    if row["use"] == "context" and row["calibration"]:
        raise MeasurementError(f"{where}: field 'use': a context row (not a runtime copy) cannot be a target")
    dst = row.get("dst_device", 1)
    if not isinstance(dst, int) or isinstance(dst, bool) or dst < 1:
        raise MeasurementError(f"{where}: field 'dst_device': expected a device id >= 1, got {dst!r}")
    if not isinstance(row.get("both_ways", False), bool) or (row.get("both_ways") and row["pattern"] == "sync"):
        raise MeasurementError(f"{where}: field 'both_ways': expected true or false, and not on blocking copies "
                               f"(one host thread cannot run two at once)")


def source_key(row: dict) -> str:
    """The publication a row comes from: its address without a fragment (one pull request, one file)."""
    return row["url"].split("#", 1)[0] if row.get("url") else row["source"]


def route_of(row: dict, product=None) -> str:
    """The row's route (emu.routes.ROUTES) on its product."""
    direction = row["direction"]
    if direction in ("register", "kernel"):
        return "register" if direction == "register" else "launch"
    if direction == "h2h":
        return "blocking-small" if row["size_bytes"] <= routes.SMALL else "h2h"
    product = product or config.load(row["product"])
    ends = {"h2d": (None, 0), "d2h": (0, None), "d2d": (0, 0), "p2p": (0, row.get("dst_device", 1))}[direction]
    return routes.of_copy(product.hardware.route(*ends), row["memory"], row["size_bytes"],
                          blocking=row["pattern"] in ("sync", "copy-sync"))


# -- replaying -------------------------------------------------------------------------------------------
def replay(row: dict, config: str | None = None) -> float:
    """Simulated seconds of one sample of the row's pattern (all its copies), on `config` or the row's product."""
    rt = private_runtime(config or row["product"])
    keep: list = []  # numpy buffers behind pageable and registered memory (never touched: no RAM used)
    if row["direction"] == "register":
        return _register(rt, row, keep)
    if row["direction"] == "kernel":
        return _kernel(rt, row)
    devices = list(range(row["devices"]))
    for dev in devices:
        rt.set_device(dev)
    if row["direction"] == "p2p":
        _enable_peers(rt, row, devices)
    jobs = [_buffers(rt, row, dev, keep) for dev in devices]
    if row.get("both_ways"):  # the same copies the other way at once (a bidirectional figure)
        jobs += [_buffers(rt, dict(row, dst_device=n - row.get("dst_device", 1)), peer, keep)
                 for peer in _peers(rt, row, devices) for n in [rt.product.device_count]]
    if row["pattern"] in ("stream-sync", "copy-sync"):
        return _host_timed(rt, row, _lanes(rt, row, jobs), each=row["pattern"] == "copy-sync")
    return _sync(rt, row, jobs) if row["pattern"] == "sync" else _async(rt, row, jobs)


def _peers(rt, row: dict, devices: list) -> list[int]:
    return [(dev + row.get("dst_device", 1)) % rt.product.device_count for dev in devices]


def _enable_peers(rt, row: dict, devices: list) -> None:
    """Peer access each way the row copies, where the product needs it enabled."""
    if not rt.product.has("peer_copy_needs_enable"):
        return
    for dev, peer in zip(devices, _peers(rt, row, devices)):
        for a, b in ((dev, peer), (peer, dev)) if row.get("both_ways") else ((dev, peer),):
            rt.set_device(a)
            rt.device_enable_peer_access(b, 0)
    rt.set_device(devices[0])


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
    src = rt.malloc(n)  # p2p: this device to `dst_device` after it (the next one by default)
    rt.set_device((dev + row.get("dst_device", 1)) % rt.product.device_count)
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
    lanes = _lanes(rt, row, jobs)
    if len(lanes) > 1:
        return _host_timed(rt, row, lanes, each=False)
    return event_time(rt, lanes[0][1][0], lambda: _enqueue(rt, row, lanes, join=True))


def _host_timed(rt, row: dict, lanes: list, each: bool) -> float:
    """Async copies timed on the host clock: all queued, then each stream synchronized ("stream-sync"), or
    each copy followed by a synchronize of its stream ("copy-sync": a small copy's whole round trip)."""
    t0 = rt.clock
    _enqueue(rt, row, lanes, join=False, each=each)
    if not each:
        for dev, streams, *_ in lanes:
            rt.set_device(dev)
            for s in streams:
                rt.synchronize_stream(s)
    return rt.clock - t0


def _lanes(rt, row: dict, jobs: list) -> list:
    """(device, its `streams` new streams, dst, src, kind) of each device's copies."""
    lanes = []
    for dev, dst, src, kind in jobs:
        rt.set_device(dev)
        lanes.append((dev, [rt.create_stream() for _ in range(row["streams"])], dst, src, kind))
    return lanes


def _enqueue(rt, row: dict, lanes: list, join: bool, each: bool = False) -> None:
    """Queue the row's copies round-robin over each device's streams; `join`: fork the streams from the
    first before them and join them back into it after them (one device); `each`: synchronize each copy's
    stream after it."""
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
            if each:
                rt.synchronize_stream(mine[i % k])
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


def _kernel(rt, row: dict) -> float:
    """A kernel of no duration launched, then its stream synchronized, `count` times on the host clock: the
    launch's round trip."""
    rt.set_device(0)
    s = rt.create_stream()
    t0 = rt.clock
    for _ in range(row["count"]):
        rt.launch_kernel(lambda: None, (), s, duration_us=0.0, name="empty")
        rt.synchronize_stream(s)
    return rt.clock - t0


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
        ways = 2 if row.get("both_ways") else 1
        return row["size_bytes"] * row["count"] * row["devices"] * ways / seconds / scale
    return seconds / row["count"] / scale


# -- the whole table -------------------------------------------------------------------------------------
def validate(rows: list[dict], config: str | None = None, progress=None) -> dict:
    """Every row replayed: the rows with their errors, the targets' summary and the independent rows per
    product and route (the leave-one-source-out check is `holdout`'s)."""
    out = []
    for row in rows:
        model = predict(row, config)
        err = model / row["value"] - 1.0
        out.append({"id": row["id"], "product": row["product"], "config": config or row["product"],
                    "use": row["use"], "route": route_of(row), "direction": row["direction"],
                    "memory": row["memory"], "pattern": row["pattern"],
                    "bytes": row["size_bytes"], "unit": row["unit"], "measured": row["value"],
                    "model": model, "error_pct": 100 * err, "within": abs(err) <= BAND,
                    "calibration": row["calibration"], "why": row.get("why", ""), "source": row["source"]})
        if progress is not None:
            progress.advance(1, row["id"])
    return {"rows": out, "summary": summarise(out), "independent": independent(out), "band_pct": 100 * BAND}


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


def independent(rows: list[dict]) -> list[dict]:
    """The independent rows alone, per product and route, per product, and over all: how many are within the
    band, the median and the worst absolute error."""
    mine = [r for r in rows if r["use"] == "independent"]
    groups: dict[tuple, list] = {}
    for r in mine:
        for key in ((r["product"], r["route"]), (r["product"], "all"), ("all", "all")):
            groups.setdefault(key, []).append(r)
    order = {name: i for i, name in enumerate(routes.ROUTES)}
    out = []
    for (product, route), rs in sorted(groups.items(), key=lambda kv: (kv[0][0] == "all", kv[0][0],
                                                                       kv[0][1] == "all", order.get(kv[0][1], 99))):
        errs = [abs(r["error_pct"]) for r in rs]
        out.append({"product": product, "route": route, "rows": len(rs), "within": sum(r["within"] for r in rs),
                    "median_abs_error_pct": statistics.median(errs), "worst_abs_error_pct": max(errs)})
    return out
