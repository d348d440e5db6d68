"""`acl-emu calibrate`: fit a product config to measurements from your own server.

    acl-emu calibrate dmi-h2d.txt --product 910B -o my-server.toml

Reads the table `ascend-dmi --bw` prints (or a CSV of size, direction, memory kind and GB/s or us per
copy, and optionally pattern, count and dst_device: see validate's patterns), groups the rows by what they
exercise (host link each way, pinned or pageable, each peer link by its device pair, device memory, and
how the copies were timed), fits each group's per-copy time as a fixed cost plus bytes over a rate
(relative least squares; queued small copies by the host's submit of each), and maps the two numbers onto
the config fields behind them. It writes a config that inherits the base
product and overrides only the fitted fields, each with `source = "fit: <file>, residual <x>%"`, then
replays every input row on the new config and reports the residuals (table, JSON, plot).

A field the data cannot determine is kept from the base config and listed; asking for it with --fit
refuses, naming the field. A fit outside what the hardware model allows (a PCIe link faster than its
generation, a negative fixed cost) refuses too.

This module reads, fits and replays, returning plain data and the config's text; `calibrate_report` draws
the residuals (the table, the plot).
"""
from __future__ import annotations

import csv
import io
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from emu.models.pcie import tlp_bandwidth

from .. import config, files
from ..routes import SMALL
from .common import parse_size, parse_whole
from . import validate as V

DIRECTIONS = {"h2d": "h2d", "d2h": "d2h", "d2d": "d2d", "p2p": "p2p", "h2h": "h2h", "host to device": "h2d",
              "device to host": "d2h", "device to device": "d2d", "hosttodevice": "h2d", "devicetohost": "d2h"}
FIXED_SHARE = 0.10  # a fixed cost is determined when it is at least this share of some row's time
DATA_SHARE = 0.50  # a rate is determined when the bytes take at least this share of some row's time
LIMITS = {"hardware.host_link.efficiency": 1.0, "hardware.host_link.read_efficiency": 1.0}  # what a config may hold (emu.config checks it too)
FITTABLE = ("hardware.host_link.efficiency", "hardware.host_link.read_efficiency", "hardware.pair_link.gbps",
            "hardware.pair_link.latency_us", "hardware.sync_wait_us", "hardware.copy_submit_us", "hardware.host_link.gbps", "hardware.host_link.up_gbps",
            "hardware.host_link.per_engine_gbps", "hardware.host_link.latency_us", "hardware.sync_copy_us",
            "hardware.staging.copy_gbps", "hardware.staging.setup_us", "hardware.peer_link.gbps",
            "hardware.peer_link.latency_us", "hardware.memory_gbps", "hardware.sdma_latency_us",
            "hardware.host_memcpy_gbps", "hardware.call_overhead_us")


class CalibrationError(ValueError):
    """The data cannot determine what was asked (the message names the field), or the input is unreadable."""


FIT_FAILURES = (np.linalg.LinAlgError, ArithmeticError)  # numbers the least squares cannot take (the CLI's one line)


MAX_FILE_BYTES = files.TABLE_BYTES  # a measurements file larger than this is no ascend-dmi table or CSV of copies
MAX_CELL_CHARS = 1000  # nor is a cell this long
MAX_LINE_CHARS = 10_000  # or a line
MAX_SIZE = 1 << 40  # a copy of at most 1 TiB
MAX_COUNT = 100_000  # copies per sample
MAX_DEVICE = 1023
VALUE_RANGE = {"GB/s": (1e-6, 1e5), "us": (1e-4, 1e9)}  # 1 KB/s .. 100 TB/s; 0.1 ns .. 1000 s per copy


def toml_string(text: str) -> str:
    """`text` as a TOML basic string, quotes included: backslash, quote and control characters escaped,
    so a name or file name can never end the string or start another field."""
    out = []
    for ch in str(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch in "\b\t\n\f\r":
            out.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}[ch])
        elif 0xD800 <= ord(ch) <= 0xDFFF:  # (an undecodable byte of a file name: no character TOML holds)
            out.append("\\uFFFD")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _read_text(path: Path) -> str:
    """The file's text: refused in one line when it is missing, not a regular file, too large, or not text."""
    try:
        data = files.read_bytes(path, MAX_FILE_BYTES, "a measurements file")
    except files.FileRefused as e:  # missing, a FIFO, a device, a directory, over the bound
        raise CalibrationError(str(e)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise CalibrationError(f"{path}: not a text file (byte {e.start} is not UTF-8): expected ascend-dmi "
                               f"--bw output or a CSV") from None
    if "\x00" in text:
        raise CalibrationError(f"{path}: not a text file (it holds NUL bytes): expected ascend-dmi --bw output "
                               f"or a CSV")
    return text


def _size(text: str) -> int:
    """A copy size, at most MAX_SIZE (ValueError otherwise)."""
    if len(str(text)) > 40:
        raise ValueError(f"size {str(text)[:20]!r}... is too long to be a size (at most 1 TiB)")
    return parse_size(text, MAX_SIZE)


def _value(text: str, unit: str) -> float:
    """A measured GB/s or us, finite and within what a copy can show (ValueError otherwise)."""
    if len(str(text)) > 40:
        raise ValueError(f"{unit} value {str(text)[:20]!r}... is too long to be a number")
    v = float(text)
    lo, hi = VALUE_RANGE[unit]
    if not math.isfinite(v) or not lo <= v <= hi:
        raise ValueError(f"{unit} value {text!r} is not a finite number from {lo:g} to {hi:g}")
    return v


def _whole(text, what: str, hi: int) -> int:
    """A whole number from 1 to `hi` (`parse_whole`; ValueError naming `what` otherwise)."""
    s = str(text).strip()
    try:
        value = parse_whole(s, hi)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{what} {s[:20]!r} is not a whole number from 1 to {hi}")
    return value


# -- reading measurements --------------------------------------------------------------------------------
def read(path: str | Path, direction: str | None = None, memory: str | None = None) -> list[dict]:
    """Rows in the measurements format of `validate` (one per size and direction), from an ascend-dmi table
    or a CSV."""
    path = Path(path)
    text = _read_text(path)
    for number, line in enumerate(text.splitlines(), start=1):
        if len(line) > MAX_LINE_CHARS:
            raise CalibrationError(f"{path}: line {number}: longer than {MAX_LINE_CHARS} characters: not a row "
                                   f"of an ascend-dmi table or a CSV of measurements")
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        raw = _read_csv(text) if "," in first and "size" in first.lower() else _read_dmi(text)
    except CalibrationError as e:
        raise CalibrationError(f"{path}: {e}") from None
    rows = []
    for i, r in enumerate(raw):
        d = r.get("direction") or direction
        if d is None:
            raise CalibrationError(f"{path}: row {i + 1}: no direction (a column, a section heading, or "
                                   f"--direction)")
        rows.append(_row(path, i, r, d, r.get("memory") or memory))
    if not rows:
        raise CalibrationError(f"{path}: no measurements found (expected ascend-dmi --bw output or a CSV with "
                               f"size and gbps or us columns)")
    return rows


def _row(path: Path, i: int, r: dict, direction: str, memory: str | None) -> dict:
    direction = DIRECTIONS.get(direction.strip().lower())
    if direction is None:
        raise CalibrationError(f"{path}: row {i + 1}: direction {r.get('direction')!r} is not h2d, d2h, d2d, p2p "
                               f"or h2h")
    memory = memory or ("device" if direction in ("d2d", "p2p") else "pinned")
    pattern = r.get("pattern") or ("sync" if direction == "h2h" else "async")  # no async H2H in EP mode
    try:
        count = _whole(r["count"], "count", MAX_COUNT) if r.get("count") else 10 if pattern == "async" else 1
        dst = _whole(r["dst_device"], "dst_device", MAX_DEVICE) if r.get("dst_device") else None
    except ValueError as e:
        raise CalibrationError(f"{path}: row {i + 1}: {e}") from None
    row = {"id": f"{path.name}:{i + 1}", "product": "", "pattern": pattern, "streams": 1, "devices": 1,
           "count": count, "size_bytes": r["size"],
           "memory": memory, "direction": direction, "value": r["value"], "unit": r["unit"],
           "calibration": True, "source": str(path), "use": "fit", "fitted": "what calibrate fits"}
    if dst is not None:
        row["dst_device"] = dst
    if r.get("both_ways"):
        if r["both_ways"].lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise CalibrationError(f"{path}: row {i + 1}: both_ways {r['both_ways']!r} is not true or false")
        row["both_ways"] = r["both_ways"].lower() in ("true", "1", "yes")
    try:
        V.check_row(row, f"{path}: row {i + 1}")
    except V.MeasurementError as e:
        raise CalibrationError(str(e)) from None
    return row


def _read_csv(text: str) -> list[dict]:
    out = []
    reader = csv.DictReader(io.StringIO(text))
    try:
        for line, rec in enumerate(reader, start=2):
            out.append(_csv_row(line, rec))
    except csv.Error as e:
        raise CalibrationError(f"CSV near line {reader.line_num + 1}: {e}") from None
    return out


def _csv_row(line: int, rec: dict) -> dict:
    if any(len(k or "") > MAX_CELL_CHARS or len(v) > MAX_CELL_CHARS
           for k, v in rec.items() if isinstance(v, str)):
        raise CalibrationError(f"CSV line {line}: a cell longer than {MAX_CELL_CHARS} characters")
    rec = {k.strip().lower(): (v or "").strip() for k, v in rec.items() if k and isinstance(v, (str, type(None)))}
    value = next(((rec[k], u) for k, u in (("gbps", "GB/s"), ("gb/s", "GB/s"), ("bandwidth", "GB/s"),
                                           ("us", "us"), ("time_us", "us")) if rec.get(k)), None)
    if value is None:
        raise CalibrationError(f"CSV line {line}: needs a gbps (GB/s) or us (per copy) column")
    try:
        return {"size": _size(rec["size"]), "value": _value(value[0], value[1]), "unit": value[1],
                "direction": rec.get("direction"), "memory": rec.get("memory"),
                "pattern": rec.get("pattern"), "count": rec.get("count"),
                "dst_device": rec.get("dst_device"), "both_ways": rec.get("both_ways")}
    except KeyError as e:
        raise CalibrationError(f"CSV line {line}: no {e} column") from None
    except ValueError as e:
        raise CalibrationError(f"CSV line {line}: {e}") from None


_HEADING = re.compile(r"\b(h2d|d2h|d2d|p2p|host\s*to\s*device|device\s*to\s*host|device\s*to\s*device)\b", re.I)
_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?[KMG]?$", re.I)


def _read_dmi(text: str) -> list[dict]:
    """ascend-dmi --bw tables: a section per direction (a heading naming it), a header with Size and
    Bandwidth (and maybe Execute Times), then one line per size."""
    out, direction, cols = [], None, None
    for number, line in enumerate(text.splitlines(), start=1):
        cells = [c for c in re.split(r"\s{2,}|\t|\|", line.strip()) if c.strip()]
        if not cells:
            continue
        if all(_NUMBER.match(c.strip()) for c in cells) and len(cells) >= 2:
            size_at, bw_at, et_at = cols or (0, len(cells) - 1, 1 if len(cells) >= 3 else None)
            if max(size_at, bw_at, et_at or 0) >= len(cells):
                raise CalibrationError(f"line {number}: {len(cells)} numbers, fewer than the header's columns")
            try:
                out.append({"size": _size(cells[size_at]), "value": _value(cells[bw_at], "GB/s"), "unit": "GB/s",
                            "direction": direction, "count": cells[et_at] if et_at is not None else None})
            except ValueError as e:
                raise CalibrationError(f"line {number}: {e}") from None
            continue
        low = [c.lower() for c in cells]
        if any("size" in c for c in low) and any("bandwidth" in c or "gb/s" in c for c in low):
            cols = (next(i for i, c in enumerate(low) if "size" in c),
                    next(i for i, c in enumerate(low) if "bandwidth" in c or "gb/s" in c),
                    next((i for i, c in enumerate(low) if "execute" in c or "times" in c), None))
            continue
        m = _HEADING.search(line)
        if m:
            direction = re.sub(r"\s+", " ", m.group(1).lower())
    return out


# -- fitting -----------------------------------------------------------------------------------------------
@dataclass
class Group:
    """The rows of one (direction, memory, pattern) and what their line a + b x bytes maps to."""
    key: tuple
    rows: list = field(default_factory=list)
    a: float = 0.0  # seconds per copy, fixed
    b: float = 0.0  # seconds per byte
    fixed_ok: bool = False
    rate_ok: bool = False
    why_fixed: str = ""
    why_rate: str = ""


def seconds_per_copy(row: dict) -> float:
    scale = V.UNITS[row["unit"]]
    if row["unit"] in ("GB/s", "GiB/s"):  # (a both-ways figure counts each copy's bytes twice)
        ways = 2 if row.get("both_ways") else 1
        return row["size_bytes"] * row["devices"] * ways / (row["value"] * scale)
    return row["value"] * scale


def _model_line(row: dict, base: str) -> tuple[float, float]:
    """The base config's own a and b for this kind of row: its per-copy time at two sizes."""
    small, big = dict(row, size_bytes=4096, count=4), dict(row, size_bytes=256 << 20, count=4)
    ts, tb = (V.replay(r, base) / 4 for r in (small, big))
    b = (tb - ts) / (big["size_bytes"] - small["size_bytes"])
    return ts - b * small["size_bytes"], b


def fit_group(g: Group, base: str) -> None:
    """Relative least squares of t = a + b n; each of a and b is kept only where the data shows it, the
    other then comes from the base config."""
    n = np.array([r["size_bytes"] for r in g.rows], dtype=float)
    t = np.array([seconds_per_copy(r) for r in g.rows])
    m = _tasks(g, base, n)  # the fixed cost is paid once per runtime task of an async copy
    a0, b0 = _model_line(g.rows[0], base)
    if len(set(n)) >= 2:
        (a, b), *_ = np.linalg.lstsq(np.stack([m / t, n / t], axis=1), np.ones_like(t), rcond=None)
    else:
        a, b = a0, b0
    g.fixed_ok = len(set(n)) >= 2 and a > 0 and float(np.max(a * m / (a * m + b * n))) >= FIXED_SHARE
    g.rate_ok = b > 0 and float(np.max(b * n / (a * m + b * n))) >= DATA_SHARE
    if not g.fixed_ok:
        g.why_fixed = ("one size only" if len(set(n)) < 2 else
                       f"at every size the fixed cost is under {FIXED_SHARE:.0%} of a copy's time: add smaller sizes")
        a = a0
        b = float(np.mean((t - a * m) / n)) if g.rate_ok or len(set(n)) < 2 else b
        g.rate_ok = b > 0 and float(np.max(b * n / (a * m + b * n))) >= DATA_SHARE
    if not g.rate_ok:
        g.why_rate = f"at every size the bytes take under {DATA_SHARE:.0%} of a copy's time: add larger sizes"
        b = b0
        if g.fixed_ok:
            a = float(np.mean((t - b * n) / m))
    if g.key[2] == "stream-sync":  # queued copies take the longer of the host's submit and the device's
        small = n.min() <= SMALL     # work, not their sum: only small ones show the submit (refine settles it)
        a, g.fixed_ok = (float(t[n.argmin()]), True) if small else (a0, False)
        g.why_fixed = "" if small else "no copy of at most 64 KiB: the device's work hides the host's submit"
    g.a, g.b = a, b


def _tasks(g: Group, base: str, n: np.ndarray) -> np.ndarray:
    """Runtime tasks per copy: async copies of pinned or device memory are split (docs/hardware.md#task-sizes);
    blocking and pageable copies are one transfer each."""
    direction, memory, pattern, dst = g.key
    if pattern == "sync" or memory == "pageable" or direction == "h2h":
        return np.ones_like(n)
    ends = {"h2d": (None, 0), "d2h": (0, None), "d2d": (0, 0), "p2p": (0, dst)}[direction]
    unit = V.private_runtime(base).copy_unit(*ends)
    return np.ceil(n / unit)


def fields_of(g: Group, product) -> dict[str, tuple[float, bool, str]]:
    """{config field: (value, determined, why not)} for a fitted group."""
    hw = product.hardware
    fixed_field, fixed = _fixed_field(g, hw)
    out = {fixed_field: (fixed, g.fixed_ok, g.why_fixed)} if fixed_field else {}
    rate_field, rate = _rate_field(g, hw)
    if rate_field is not None:
        out[rate_field] = (rate, g.rate_ok, g.why_rate)
    return out


def _fixed_field(g: Group, hw) -> tuple[str | None, float]:
    direction, memory, pattern, dst = g.key
    us = 1e6
    if pattern == "copy-sync":  # each copy and its synchronize: the wake, beyond two calls, the submit, the task
        rest = 2 * hw.call_overhead + hw.copy_submit + _latency(hw, _route(hw, direction, dst))
        return "hardware.sync_wait_us", (g.a - rest) * us
    if pattern == "stream-sync":  # copies queued back to back: the host's submit of each, beyond the call
        return "hardware.copy_submit_us", (g.a - hw.call_overhead) * us
    if direction == "h2h":  # a blocking host-to-host copy: the API call, then the CPU's copy
        return "hardware.call_overhead_us", g.a * us
    if memory == "pageable":  # the staging setup, beyond the call, the transfer latency and the round trip
        rest = hw.call_overhead + hw.latency(direction) + hw.sync_copy
        return "hardware.staging.setup_us", (g.a - rest) * us
    if pattern == "sync":  # the driver's round trip, beyond the call and the transfer latency
        return "hardware.sync_copy_us", (g.a - hw.call_overhead - _latency(hw, _route(hw, direction, dst))) * us
    # async: each sample starts one API call after its start event, which the per-copy cost carries / count
    a = g.a - hw.call_overhead / statistics.mean(r["count"] for r in g.rows)
    if direction in ("h2d", "d2h"):
        return "hardware.host_link.latency_us", a * us
    if direction == "p2p":
        link = _peer_field(hw, dst)
        return (f"{link}.latency_us", a * us) if link else (None, 0.0)
    return "hardware.sdma_latency_us", a * us


def _route(hw, direction: str, dst: int) -> str:
    """The hardware route of a group's copies (p2p: device 0 to `dst`)."""
    ends = {"h2d": (None, 0), "d2h": (0, None), "d2d": (0, 0), "p2p": (0, dst)}.get(direction, (0, 0))
    return hw.route(*ends) if hw.num_devices > max(e or 0 for e in ends) else "sdma"


def _peer_field(hw, dst: int) -> str | None:
    """The config table of the link a copy from device 0 to `dst` crosses (pair_link: the other die of a
    package), or None when it crosses none of them."""
    route = _route(hw, "p2p", dst)
    return "hardware.pair_link" if route == "sio" else "hardware.peer_link" if route in ("hccs", "ub") else None


def _latency(hw, route: str) -> float:
    return hw.latency(route)


def _rate_field(g: Group, hw) -> tuple[str | None, float]:
    direction, memory, _, dst = g.key
    hl = hw.host_link
    if g.b <= 0:
        return None, 0.0
    if direction == "h2h":
        return "hardware.host_memcpy_gbps", 1 / g.b / 1e9
    if memory == "pageable":
        return "hardware.staging.copy_gbps", 1 / g.b / 1e9
    if direction in ("h2d", "d2h"):
        if hl.pcie is not None:  # payload rate -> the share of the pcie-bench rate the DMA reaches
            wire = hl.wire_bytes(1 << 30, read=direction == "h2d") / (1 << 30)
            name = "read_efficiency" if direction == "h2d" and hl.read_efficiency else "efficiency"
            return f"hardware.host_link.{name}", wire / g.b / tlp_bandwidth(hl.pcie)
        if hl.per_engine:
            return "hardware.host_link.per_engine_gbps", 1 / g.b / 1e9
        return ("hardware.host_link.gbps" if direction == "h2d" else "hardware.host_link.up_gbps"), 1 / g.b / 1e9
    if direction == "p2p":
        link = _peer_field(hw, dst)
        return (f"{link}.gbps", 1 / g.b / 1e9) if link else (None, 0.0)
    return "hardware.memory_gbps", 2 / g.b / 1e9  # an on-chip copy reads and writes device memory


def _order(g: Group) -> int:
    """Host-to-host copies show the API call's cost, blocking copies the driver's round trip on top, and
    async and pageable copies build on both: fit them in that order."""
    direction, memory, pattern, _ = g.key
    return 0 if direction == "h2h" else 1 if pattern == "sync" and memory != "pageable" else 2 if \
        pattern != "copy-sync" else 3


def refine(rows: list[dict], base: str, start: dict[str, float], held: dict[str, float] | None = None,
           steps: int = 8) -> dict[str, float]:
    """Gauss-Newton on the model itself, from the line fit's values: the fields that make the replayed rows
    agree best with the measurements (relative residuals; fields in log space, so they stay positive).
    `held`: fields already fitted from other rows, set but not moved."""
    import tempfile

    names = list(start)
    x = np.log([start[k] for k in names])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fit.toml"

        def residual(logs: np.ndarray) -> np.ndarray:
            trial = {k: min(v, LIMITS.get(k, v)) for k, v in zip(names, np.exp(logs))}
            path.write_text(override(base, {**(held or {}), **trial}))
            return np.array([V.predict(r, str(path)) / r["value"] - 1 for r in rows])

        r = residual(x)
        for _ in range(steps):
            jac = np.stack([(residual(x + h) - r) / 1e-4 for h in np.eye(len(x)) * 1e-4], axis=1)
            dx, *_ = np.linalg.lstsq(jac, -r, rcond=None)
            dx = np.clip(dx, -1.0, 1.0)
            trial = residual(x + dx)
            if np.sum(trial ** 2) >= np.sum(r ** 2):
                break
            x, r = x + dx, trial
            if np.max(np.abs(dx)) < 1e-6:
                break
    return {k: min(v, LIMITS.get(k, v)) for k, v in zip(names, np.exp(x).tolist())}


def override(base: str, fields: dict[str, float]) -> str:
    """A config inheriting `base` with these fields set (a fit's trial point)."""
    inherit = base if not Path(base).exists() else str(Path(base).resolve())
    sections: dict[str, dict] = {}
    for full, value in fields.items():
        section, key = full.rsplit(".", 1)
        sections.setdefault(section, {})[key] = value
    lines = [f"inherit = {toml_string(inherit)}"]
    for section, values in sections.items():
        lines += [f"[{section}]", *(f"{k} = {float(v)!r}" for k, v in values.items()), f"[{section}.source]",
                  *(f'{k} = "fit"' for k in values)]
    return "\n".join(lines) + "\n"


def check(name: str, value: float, hw) -> None:
    """Refuse a fit the hardware model cannot hold."""
    if not np.isfinite(value) or value <= 0:
        raise CalibrationError(f"{name}: the fit gives {value:.3g}, not a positive number: the rows disagree "
                               f"with a fixed cost plus bytes over a rate (mixed patterns or servers?)")
    if name in LIMITS and value > 1.05:
        raise CalibrationError(f"{name}: the fit gives {value:.3f}, faster than PCIe Gen{hw.host_link.pcie.gen} "
                               f"x{hw.host_link.pcie.lanes} can carry: set the base config's link generation first")


# -- the whole calibration ---------------------------------------------------------------------------------
def calibrate(rows: list[dict], base: str, source: str, only: list[str] | None = None) -> dict:
    """Fit, then replay: {"fields": {name: value}, "kept": {name: why}, "rows": residual rows}."""
    product = config.load(base)
    groups: dict[tuple, Group] = {}
    for r in rows:
        if r["direction"] not in DIRECTIONS.values():
            continue  # (registration and kernel rows are no copies: no line to fit)
        key = (r["direction"], r["memory"], r["pattern"], r.get("dst_device", 1))
        groups.setdefault(key, Group(key)).rows.append(dict(r, product=product.name))
    fitted: dict[str, list] = {}
    kept: dict[str, str] = {}
    for g in sorted(groups.values(), key=_order):  # what later groups' times include is fitted first
        fit_group(g, base)
        found = fields_of(g, product)
        good = {name: value for name, (value, ok, _) in found.items() if ok and np.isfinite(value) and value > 0}
        for name, value in good.items():
            check(name, value, product.hardware)
        so_far = {name: float(np.mean([v for v, _ in vs])) for name, vs in fitted.items() if name not in good}
        good = refine(g.rows, base, good, so_far) if good else good
        for name, (value, ok, why) in found.items():
            if name in good:
                fitted.setdefault(name, []).append((good[name], g))
            else:
                kept.setdefault(name, why or f"the fit gives {value:.3g}")
    for name in only or []:
        if name not in FITTABLE:
            raise CalibrationError(f"{name}: not a field calibrate fits (it fits {', '.join(FITTABLE)})")
        if name not in fitted:
            raise CalibrationError(f"{name}: {kept.get(name) or 'no row of the data exercises it'}")
    fields = {name: float(np.mean([v for v, _ in vs])) for name, vs in fitted.items() if not only or name in only}
    for name, value in fields.items():
        check(name, value, product.hardware)
        kept.pop(name, None)
    if not fields:
        name, why = next(iter(kept.items()), ("(every field)", "no rows"))
        raise CalibrationError(f"{name}: {why}")
    return {"base": product.name, "source": source, "fields": fields, "kept": kept,
            "groups": {name: [g.key for _, g in vs] for name, vs in fitted.items() if name in fields},
            "input": [dict(r, product=product.name) for r in rows]}


def config_text(result: dict, name: str, residuals: dict[str, float], inherit: str) -> str:
    """The inheriting config: only the fitted fields, each citing the fit."""
    sections: dict[str, dict] = {}
    for full, value in result["fields"].items():
        section, key = full.rsplit(".", 1)
        sections.setdefault(section, {})[key] = value
    source = Path(result["source"]).name
    lines = [f"# Calibrated from {toml_string(result['source'])[1:-1]} by `acl-emu calibrate`; everything not set "
             f"here is {toml_string(result['base'])[1:-1]}'s.", f"inherit = {toml_string(inherit)}", "", "[product]",
             f"name = {toml_string(name)}",
             f"title = {toml_string(f'{config.load(inherit).title}, calibrated to {source}')}", ""]
    for section, values in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {float(f'{v:.6g}')!r}" for k, v in values.items()]
        lines.append(f"[{section}.source]")
        for k in values:
            residual = residuals[f"{section}.{k}"]
            lines.append(f"{k} = {toml_string(f'fit: {source}, residual {residual:.1f}%')}")
        lines.append("")
    return "\n".join(lines)


def residuals(result: dict, cfg: str) -> tuple[list[dict], dict[str, float]]:
    """Every input row replayed on the calibrated config; per fitted field, the median |error| of its rows."""
    out = []
    for r in result["input"]:
        model = V.predict(r, cfg)
        out.append({"row": r["id"], "direction": r["direction"], "memory": r["memory"], "pattern": r["pattern"], "dst": r.get("dst_device", 1),
                    "bytes": r["size_bytes"], "unit": r["unit"], "measured": r["value"], "model": model,
                    "error_pct": 100 * (model / r["value"] - 1)})
    per_field = {}
    for name, keys in result["groups"].items():
        errs = [abs(o["error_pct"]) for o in out if (o["direction"], o["memory"], o["pattern"], o["dst"]) in keys]
        per_field[name] = statistics.median(errs) if errs else 0.0
    return out, per_field
