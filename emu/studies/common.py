"""What the studies and their reports share: sizes, tables, files, figures, progress, and timing ACL calls
with events."""
from __future__ import annotations

import csv
import functools
import io
import json
import logging
import math
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import constants as C
from ..models.atomic import atomic_write, sweep_stale

# Sizes are binary: K, M, G, T are 2^10, 2^20, 2^30, 2^40 bytes, written as the letter alone (either case: 64M,
# 64m) or with iB (64MiB). KB/MB/GB (decimal for some, binary for others) and a lowercase b (bits: 64Mb) are
# refused, naming these forms; a bare number is bytes, and so is a number with B (4096B).
SIZE_FORMS = "4096 (bytes), 4K or 4KiB, 64M or 64MiB, 1G or 1GiB, 1T (K, M, G, T are binary: 1K = 1024 bytes)"
SIZE_HELP = "K, M, G, T are binary (1K = 1024 bytes; 64M = 64MiB); KB, MB and Mb are refused as ambiguous"
_SIZE = re.compile(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*")
_BINARY = re.compile(r"(?P<p>[KMGTkmgt])(?:[iI]B)?")
_POWERS = {"K": 10, "M": 20, "G": 30, "T": 40}


def size_unit(suffix: str, text: str) -> int:
    """The bytes of one unit `suffix` ('' or 'B': 1; K / KiB: 1024; ...), or ValueError saying why the suffix is
    refused (ambiguous decimal-or-binary KB/MB, bits) and which forms are accepted."""
    if suffix in ("", "B"):
        return 1
    m = _BINARY.fullmatch(suffix)
    if m:
        return 1 << _POWERS[m.group("p").upper()]
    shown = f"{str(text).strip()[:40]!r}"
    if re.fullmatch(r"[KMGTkmgt][iI]?b|b", suffix):
        raise ValueError(f"{shown} reads as bits ({suffix}), not bytes: sizes are bytes; write {SIZE_FORMS}")
    if re.fullmatch(r"[KMGTkmgt]B", suffix):
        p, number = suffix[0].upper(), str(text).strip()[:-len(suffix)].strip()
        raise ValueError(f"{shown} is ambiguous ({suffix}: decimal 10^{_POWERS[p] // 10 * 3} or binary "
                         f"2^{_POWERS[p]} bytes?): write {number}{p} or {number}{p}iB for binary; accepted: "
                         f"{SIZE_FORMS}")
    raise ValueError(f"{shown} is not a size: write {SIZE_FORMS}")


def parse_size(text: str, limit: int = 1 << 40) -> int:
    """'4K' -> 4096, '1.5M' -> 1572864, '64' -> 64, '64MiB' -> 67108864 (binary units; see size_unit for the
    refused ambiguous forms); at most `limit` bytes (1 TiB: more than any product's device memory)."""
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise ValueError(f"{str(text)[:40]!r} is not a size: write {SIZE_FORMS}")
    value = float(m.group(1)) * size_unit(m.group(2), text)
    if not math.isfinite(value) or value > limit:
        raise ValueError(f"{str(text)[:40]!r}: more than {limit // (1 << 40)} TiB "
                         "(larger than any product's device memory)" if limit % (1 << 40) == 0 else
                         f"{str(text)[:40]!r}: more than {limit} bytes")
    if value <= 0 or value != int(value):
        raise ValueError(f"{text!r} is not a positive whole number of bytes")
    return int(value)


class TooLarge(ValueError):
    """A whole number past its limit (`parse_whole`)."""


def parse_whole(t: str, limit: int, text: str | None = None) -> int:
    """One whole number (ASCII digits, an optional sign) of `text` (by default `t` itself), at most `limit`:
    refused past it before int() reads its digits. ValueError "'<text>': '<t>' is not a whole number", or
    TooLarge "'<text>': <t> is more than <limit>". The one reader of whole numbers: `emu.studies.args` and
    calibrate's CSV columns use it with their own lower bounds and messages."""
    text = t if text is None else text
    t = t.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", t):
        raise ValueError(f"{text!r}: {t!r} is not a whole number")
    if len(t.lstrip("+-").lstrip("0")) > len(str(limit)) or int(t) > limit:
        raise TooLarge(f"{text!r}: {t[:24]}{'...' if len(t) > 24 else ''} is more than {limit}")
    return int(t)


def parse_sizes(text: str, limit: int = 1 << 40) -> list[int]:
    """'4K..1G' -> powers of two from 4 KiB to 1 GiB; '4K,1M,64M' -> those sizes (each at most `limit`)."""
    if ".." in text:
        lo, hi = (parse_size(t, limit) for t in text.split("..", 1))
        if lo > hi:
            raise ValueError(f"{text!r}: the range runs backwards")
        out, s = [], lo
        while s <= hi:
            out.append(s)
            s *= 2
        return out
    return [parse_size(t, limit) for t in text.split(",") if t.strip()]


def covered(starts, ends) -> float:
    """The time (in the spans' unit) at least one [start, end] span covers: their union's length. Spans with a
    non-finite start or end are left out; no span covers 0."""
    starts, ends = np.asarray(starts, dtype=float), np.asarray(ends, dtype=float)
    ok = np.isfinite(starts) & np.isfinite(ends)
    if not ok.any():
        return 0.0
    order = np.argsort(starts[ok], kind="stable")
    s, e = starts[ok][order], ends[ok][order]
    reach = np.maximum.accumulate(e)  # the latest end so far: a start past it opens a new stretch
    first = np.flatnonzero(np.r_[True, s[1:] > reach[:-1]])  # each stretch's first span
    last = np.r_[first[1:] - 1, len(s) - 1]
    return sum((reach[last] - s[first]).tolist(), 0.0)  # the stretches' lengths added in time order


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:g} {unit}" if unit == "B" else f"{n:.4g} {unit}"
        n /= 1024
    return f"{n} B"


def size_label(n: float) -> str:
    """A size as every plot's axis writes it: 4KiB, 1MiB, 1.5GiB (binary units, no space)."""
    return human_bytes(n).replace(" ", "")


def size_axis(ax, sizes=None) -> None:
    """A log2 message-size x axis labelled in `size_label` style (ticks at `sizes`, at most about 8 of them,
    or every power of 4)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    ax.set_xscale("log", base=2)
    if sizes:
        step = max(1, -(-len(sizes) // 8))
        ax.set_xticks(sizes[::step], [size_label(s) for s in sizes[::step]])
        ax.minorticks_off()
    else:
        ax.xaxis.set_major_locator(LogLocator(base=4))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: size_label(x)))
    ax.set_xlabel("message size")


def same_curves(curves: dict[str, list], rel: float = 1e-9) -> list[tuple[list[str], list]]:
    """Curves (name -> [(x, y)...]) grouped where they coincide (every y within `rel`): ([names], points), so a
    plot draws each shape once and names every curve it stands for."""
    groups: list[tuple[list[str], list]] = []
    for name, pts in curves.items():
        for names, ref in groups:
            if len(ref) == len(pts) and all(xa == xb and (ya == yb or (ya is not None and yb is not None and
                                            abs(ya - yb) <= rel * max(abs(ya), abs(yb))))
                                            for (xa, ya), (xb, yb) in zip(ref, pts)):
                names.append(name)
                break
        else:
            groups.append(([name], pts))
    return groups


def peak_text(points) -> str:
    """ "peak 25.1 GB/s at 64MiB" for [(bytes, gbps)...] points ("" when none has a value)."""
    pts = [(b, g) for b, g in points if g is not None and math.isfinite(g)]
    if not pts:
        return ""
    b, g = max(pts, key=lambda p: p[1])
    return f"peak {g:.3g} GB/s at {size_label(b)}"


def format_table(rows: Sequence[dict], columns: Sequence[tuple[str, str]] | None = None) -> str:
    """A plain-text table; columns are (key, header) pairs (default: every key of the first row)."""
    if not rows:
        return "(no rows)"
    columns = columns or [(k, k) for k in rows[0]]

    def cell(v) -> str:
        if isinstance(v, float):
            return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.4e}"
        return str(v)

    body = [[cell(r.get(k, "")) for k, _ in columns] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, (_, h) in enumerate(columns)]
    numeric = [all(isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool) for r in rows)
               for k, _ in columns]  # right-align columns of numbers only, not names that look like one
    line = "  ".join(h.ljust(w) for (_, h), w in zip(columns, widths))
    out = [line, "-" * len(line)]
    for b in body:
        out.append("  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(b, widths, numeric)))
    return "\n".join(out)


class Landing:
    """The files of one run land together: each is written under a temporary name beside its final one
    (same extension, so writers that go by it still work), and all are renamed into place only once every
    one is written. An interrupted run (an error, Ctrl-C) leaves the previous run's files as they were and
    no partial file behind; the partial files of a run killed outright (kill -9) are removed by the next
    `Landing` in that folder, once their process is gone.

        with Landing(out) as land:
            write_csv(land("table.csv"), rows)
            plot(result, land("plot.png"))
        land.paths  # {"table.csv": out/"table.csv", ...}
    """

    def __init__(self, directory):
        self.dir = ensure_dir(directory)
        sweep_stale(self.dir)
        self.staged: list[tuple[Path, Path]] = []

    def __call__(self, name: str) -> Path:
        final = self.dir / name
        tmp = final.with_name(f".partial-{os.getpid()}-{final.name}")
        self.staged.append((tmp, final))
        return tmp

    @property
    def paths(self) -> dict[str, Path]:
        return {final.name: final for _, final in self.staged}

    def __enter__(self) -> "Landing":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            for tmp, final in self.staged:
                os.replace(tmp, final)
        else:
            for tmp, _ in self.staged:
                tmp.unlink(missing_ok=True)


def write_csv(path: Path, rows: Sequence[dict]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "w", newline="") as f:
        if rows:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return path


def write_json(path: Path, data) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "w") as f:
        json.dump(data, f, indent=2, default=jsonable)
    return path


def jsonable(o):
    """What json cannot write itself (its `default`): arrays and numpy numbers as lists and numbers, paths as
    strings."""
    if hasattr(o, "tolist"):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


def _in_jupyter() -> bool:
    """Whether this process is a Jupyter kernel (its stderr is no TTY, but a carriage return redraws the line)."""
    shell = sys.modules.get("IPython")
    ip = getattr(shell, "get_ipython", lambda: None)() if shell else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def quiet() -> bool:
    """The `emu` logger was set quieter than INFO (`acl-emu -q`, or a program's own logging setup): no progress
    bars, no informational lines."""
    return logging.getLogger("emu").level > logging.INFO


class Progress:
    """A one-line progress bar with the elapsed time and an estimate of the time left, on a terminal or in a
    Jupyter notebook; silent when the output is neither (a pipe, a file, CI logs) or when the `emu` logger is
    quieter than INFO (`acl-emu -q`). The line is clipped to the terminal's width (shutil.get_terminal_size,
    $COLUMNS; 80 when it is unknown), one column short of it, so it never wraps: the bar shrinks first, then the
    note is cut."""

    def __init__(self, total: int, label: str = "", stream=None):
        self.total = max(total, 1)
        self.label = label
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = ((hasattr(self.stream, "isatty") and self.stream.isatty()) or
                        (stream is None and _in_jupyter())) and not quiet()
        self._t0 = time.perf_counter()

    def line(self, note: str = "", width: int | None = None) -> str:
        """The bar as drawn now: at most `width` - 1 characters (default: the terminal's width)."""
        width = max((width or shutil.get_terminal_size((80, 24)).columns) - 1, 10)
        frac = min(self.done / self.total, 1.0)
        elapsed = time.perf_counter() - self._t0
        left = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        stats = f"{self.done}/{self.total} {elapsed:.1f}s, ETA {left:.1f}s"
        label = self.label[:max(width - len(stats) - 1, 0)]  # the counts and the ETA come first
        room = width - len(label) - len(stats) - 4  # the spaces and '[', ']'
        bars = min(30, room) if room >= 5 else 0
        bar = f"[{'#' * int(frac * bars):<{bars}}]" if bars else ""
        text = " ".join(part for part in (label, bar, stats, note) if part)
        return text[:width].ljust(width)

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        if self.enabled:
            self.stream.write("\r" + self.line(note))
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
        logging.getLogger(__name__).debug("%s: %d of %d steps in %.2f s", self.label or "progress", self.done,
                                          self.total, time.perf_counter() - self._t0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@functools.cache
def _figure_class():
    from matplotlib.figure import Figure

    class StudyFigure(Figure):
        """A Figure that renders itself as PNG for Jupyter, whatever backend the kernel uses."""

        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
            return buffer.getvalue()

    return StudyFigure


def figure(**kwargs):
    """A new matplotlib Figure (kwargs as for `Figure`, e.g. figsize) that touches no global state: pyplot is
    not imported, no backend is chosen and nothing is registered, so a study can be drawn inside a user's
    Jupyter kernel or script without changing their matplotlib setup. It shows itself in a notebook (as
    PNG) and `save_figure` writes it."""
    return _figure_class()(**kwargs)


def save_figure(fig, path) -> Path:
    """Lay out a matplotlib figure and write it as PNG; return the path."""
    fig.tight_layout()
    path = Path(path)
    with atomic_write(path, "wb") as f:
        fig.savefig(f, dpi=110, format=path.suffix.lstrip(".").lower() or "png")
    return path


def event_time(rt, stream: int, fn) -> float:
    """Seconds of simulated time `fn()` (which enqueues work on `stream`) takes, measured with two events
    and aclrtEventElapsedTime, as a user would on hardware."""
    start, stop = rt.create_event(), rt.create_event()
    rt.record_event(start, stream)
    fn()
    rt.record_event(stop, stream)
    rt.synchronize_event(stop)
    ms = rt.event_elapsed_time(start, stop)
    rt.destroy_event(start)
    rt.destroy_event(stop)
    return ms / 1e3


def ensure_dir(path) -> Path:
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    return p


def host_buffer(rt, memory: str, n: int, keep: list) -> int:
    """A host buffer of `n` bytes of the given kind. Pageable and registered memory are numpy buffers the
    program shows the runtime; np.empty of a large size is mapped lazily, and a timing-only copy never
    touches it, so a 1 GiB buffer costs address space, not RAM."""
    if memory == "pinned":
        return rt.malloc_host(n)
    buf = np.empty(n, dtype=np.uint8)
    keep.append(buf)
    ptr = rt.register_host(buf)
    if memory == "registered":
        rt.host_register_v2(ptr, n, C.ACL_HOST_REG_PINNED)
    return ptr


def release_host(rt, memory: str, ptr: int) -> None:
    if memory == "pinned":
        rt.free_host(ptr)
    elif memory == "registered":
        rt.host_unregister(ptr)
