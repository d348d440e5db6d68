"""Throughput of emu.kernels against the equivalent numpy operation, over a sweep of sizes.

Run from the repository root:  python benchmarks/kernels.py [--quick] [--reps N] [--only OP ...]
                               python benchmarks/kernels.py --crossover [--quick]

One table per operation (copy, copy_2d, fill, fill_u32), one row per size: our time per
call, numpy's, and the ratio numpy time / our time (>= 1: we are at least as fast).
The baselines: np.copyto for 1-D copies, np.copyto between strided 2-D views for
copy_2d, ndarray.fill on a uint8 (fill) or uint32 (fill_u32) array.

--against TREE instead times copy and fill of this tree against those of TREE/emu/kernels.py (another version,
e.g. a `git archive <commit>` unpacked), interleaved in one process, size by size.

--crossover instead times each compiled kernel with its cached stores (the C
library's memmove / memset) against its streaming stores, around the bands of
emu.kernels' `Crossover`s (placed by the last-level cache's size,
emu.kernels.CACHE_BYTES: they learn the rest from the calls; the sweep prints
what they learned) and NT_2D_MIN_WIDTH.

Each side is timed alternately in the same process (which side goes first alternates),
best of N runs.  A run of a small size is a loop of calls long enough to time (the same
count on both sides), so it includes each side's per-call overhead.  Buffers are touched
before timing, so page faults are not timed.  Also prints whether a fresh process loads
every kernel from Numba's on-disk cache, and the cold start of `acl-emu --help`
(benchmarks/startup.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from numpy.lib.stride_tricks import as_strided

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from emu import kernels  # noqa: E402

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

# 1-D copies: every power of two from 4 KiB to 1 GiB, and a few sizes that are not.
COPY_SIZES = sorted([1 << k for k in range(12, 31)]
                    + [5000, 100 * KiB + 3, 3 * MiB + 17, 40 * MiB + 9, 600 * MiB + 13])
COPY_SIZES_QUICK = [4 * KiB, 5000, 64 * KiB, 256 * KiB, 1 * MiB, 3 * MiB + 17, 8 * MiB, 16 * MiB,
                    32 * MiB, 64 * MiB, 256 * MiB]
FILL_SIZES = [4 * KiB, 5000, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 3 * MiB + 16, 8 * MiB, 16 * MiB,
              32 * MiB, 64 * MiB, 256 * MiB, 1 * GiB]
FILL_SIZES_QUICK = [4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 64 * MiB, 256 * MiB]
# 2-D copies: row widths (pitch = width + 64) at small, mid and large region sizes.
WIDTHS = [16, 64, 1000, 4096]
REGION_SIZES = [64 * KiB, 4 * MiB, 256 * MiB]
REGION_SIZES_QUICK = [64 * KiB, 4 * MiB, 64 * MiB]

RUN_SECONDS = 0.001  # a timed run of a small size loops for about this long

# A fresh interpreter imports the module, runs every kernel once on tiny
# arrays and reports, per dispatcher, cache hits and misses (= compilations).
_PROBE = """
import json, sys, time
sys.path.insert(0, {repo!r})
t0 = time.perf_counter()
import emu.kernels as k
k.warmup()
dt = time.perf_counter() - t0
out = {{name: [sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values())]
        for name, d in k.KERNELS.items()}}
print(json.dumps({{"seconds": dt, "kernels": out}}))
"""


def cache_probe():
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(repo=REPO)],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    if proc.returncode != 0:
        return f"on-disk cache: probe failed ({proc.stderr.strip().splitlines()[-1:]})"
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    missed = [n for n, (_, miss) in res["kernels"].items() if miss]
    unused = [n for n, (hit, miss) in res["kernels"].items() if not hit and not miss]
    if missed:
        msg = "on-disk cache: MISS, recompiled " + ", ".join(missed)
    else:
        msg = "on-disk cache: hit"
    if unused:
        msg += " (not exercised: " + ", ".join(unused) + ")"
    return msg + f"; fresh import + first calls took {res['seconds']:.2f} s"


def _loop(fn, k):
    t0 = time.perf_counter()
    for _ in range(k):
        fn()
    return (time.perf_counter() - t0) / k


def bench(ours, base, reps):
    """Best-of-reps seconds per call for each side, interleaved, alternating which goes first."""
    t = _loop(base, 1)
    k = max(1, int(RUN_SECONDS / max(t, 1e-9)))
    if k > 1:
        k = max(1, int(RUN_SECONDS / _loop(base, k)))
        _loop(ours, k)
    best_o = best_b = float("inf")
    for i in range(reps):
        if i % 2 == 0:
            best_o = min(best_o, _loop(ours, k))
            best_b = min(best_b, _loop(base, k))
        else:
            best_b = min(best_b, _loop(base, k))
            best_o = min(best_o, _loop(ours, k))
    return best_o, best_b


def fmt_size(n):
    for unit, div in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= div:
            q, r = divmod(n, div)
            return f"{q} {unit}" + (f"+{r}" if r else "")
    return f"{n} B"


class Table:
    def __init__(self, title, baseline):
        self.title = title
        self.baseline = baseline
        self.rows = []  # (label, nbytes, t_ours, t_base, ok)

    def run(self, label, nbytes, ours, base, check, reps):
        t_o, t_b = bench(ours, base, reps)
        ours()
        ok = check()
        self.rows.append((label, nbytes, t_o, t_b, ok))
        return t_b / t_o

    def print(self):
        print(f"\n{self.title}  (baseline: {self.baseline})")
        head = f"{'size':<28} {'ours us':>11} {'numpy us':>11} {'ratio':>6} {'ours GB/s':>9}"
        print(head)
        print("-" * len(head))
        for label, nbytes, t_o, t_b, ok in self.rows:
            flag = "" if ok else "  WRONG RESULT"
            print(f"{label:<28} {t_o * 1e6:>11.2f} {t_b * 1e6:>11.2f} {t_b / t_o:>6.2f} "
                  f"{nbytes / t_o / 1e9:>9.2f}{flag}")
        if self.rows:
            label, _, t_o, t_b, _ = min(self.rows, key=lambda r: r[3] / r[2])
            print(f"worst ratio {t_b / t_o:.2f} at {label}")

    def worst(self):
        return min((r[3] / r[2], self.title, r[0]) for r in self.rows) if self.rows else None

    def all_ok(self):
        return all(r[4] for r in self.rows)


def strided(buf, height, width, pitch):
    return as_strided(buf, shape=(height, width), strides=(pitch, 1))


NEVER = kernels.NEVER  # a threshold no size reaches


def crossover(quick, reps, only):
    """Cached vs streaming stores of each kernel, the measurement behind the thresholds."""
    k = kernels.KERNELS
    copy_sizes = ([3, 4, 5, 5.5, 6, 8, 16, 64, 256] if quick else
                  [2, 3, 4, 4.5, 5, 5.25, 5.5, 5.75, 6, 7, 8, 12, 16, 32, 64, 256, 1024])
    fill_sizes = ([8, 10, 12, 16, 24, 64] if quick else
                  [6, 8, 9, 10, 10.5, 11, 11.5, 12, 14, 16, 20, 24, 32, 64, 256])
    widths = [128, 256, 512, 1000, 4096]
    payloads = [8, 64]
    top = int(max(copy_sizes + fill_sizes + [p * 1.1 for p in payloads]) * MiB)
    src = np.random.default_rng(1).integers(0, 256, size=top + 4096, dtype=np.uint8)
    dst = np.empty(top + 4096, dtype=np.uint8)
    dst.fill(1)

    def table(title, cases):
        print(f"\n{title}")
        head = f"{'case':<24} {'cached GB/s':>11} {'streaming GB/s':>14} {'streaming/cached':>16}"
        print(head)
        print("-" * len(head))
        for label, nbytes, cached, streaming in cases:
            t_s, t_c = bench(streaming, cached, 2 * reps if nbytes < 64 * MiB else reps)
            print(f"{label:<24} {nbytes / t_c / 1e9:>11.2f} {nbytes / t_s / 1e9:>14.2f} {t_c / t_s:>16.2f}",
                  flush=True)

    def copy_case(mib):
        n = int(mib * MiB)
        d, s = dst[:n], src[:n]
        return (f"{mib:g} MiB", n, lambda: k["copy"](d, s, NEVER, NEVER), lambda: k["copy"](d, s, 0, NEVER))

    def fill_case(mib):
        n = int(mib * MiB)
        d = dst[:n]
        return (f"{mib:g} MiB", n, lambda: k["fill"](d, 0x5A, 1, NEVER, NEVER), lambda: k["fill"](d, 0x5A, 1, 0, NEVER))

    def copy_2d_case(payload, width):
        pitch = width + 64
        height = payload * MiB // width
        return (f"{payload} MiB w={width}", width * height,
                lambda: k["copy_2d"](dst, pitch, src, pitch, width, height, NEVER, 0),
                lambda: k["copy_2d"](dst, pitch, src, pitch, width, height, 0, 0))

    print(f"emu.kernels: last-level cache {kernels.CACHE_BYTES / MiB:g} MiB; copies {kernels.COPY_STORES!r}, "
          f"fills {kernels.FILL_STORES!r}, 2-D copies {kernels.COPY_2D_STORES!r}; NT_2D_MIN_WIDTH = "
          f"{kernels.NT_2D_MIN_WIDTH}")
    if "copy" in only:
        table("copy: memmove vs streaming stores", [copy_case(m) for m in copy_sizes])
    if "fill" in only or "fill_u32" in only:
        table("fill: memset vs streaming stores", [fill_case(m) for m in fill_sizes])
    if "copy_2d" in only:
        table("copy_2d (pitch = width + 64): memmove per row vs streaming rows",
              [copy_2d_case(p, w) for p in payloads for w in widths])
    print(f"\nbest of {reps} runs per side ({2 * reps} under 64 MiB), interleaved.")


def load_kernels(tree: str, cache_dir: str):
    """TREE/emu/kernels.py as a module of its own (another version of the kernels), its kernels made and
    compiled here with their Numba cache in `cache_dir`. (Cached in TREE's own __pycache__ under this
    module's name, they would break TREE afterwards: its `emu.kernels` would find entries it cannot load.)"""
    import importlib.util

    import numba

    path = os.path.join(os.path.abspath(tree), "emu", "kernels.py")
    saved = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = cache_dir  # (Numba places a kernel's cache when the kernel is made)
    try:
        spec = importlib.util.spec_from_file_location("against_kernels", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.warmup()  # (a tree with lazy kernels makes them here)
    finally:
        numba.config.CACHE_DIR = saved
    return module


def against(tree: str, quick: bool, reps: int) -> None:
    """copy and fill of this tree against TREE's, interleaved in this process, per size: us per call each and
    the ratio (> 1: this tree is faster)."""
    kernels.warmup()  # (this tree's kernels first: made with the cache in its own __pycache__)
    with tempfile.TemporaryDirectory() as cache_dir:
        _against(load_kernels(tree, cache_dir), tree, quick, reps)


def _against(other, tree: str, quick: bool, reps: int) -> None:
    sizes = COPY_SIZES_QUICK if quick else COPY_SIZES
    src = np.random.default_rng(1).integers(0, 256, size=max(sizes) + 4096, dtype=np.uint8)
    dst = np.empty(max(sizes) + 4096, dtype=np.uint8)
    dst.fill(1)
    print(f"{'op':6} {'size':>10} {'this tree us':>13} {'against us':>12} {'against/this':>13}")
    worst = (float("inf"), "")
    for op in ("copy", "fill"):
        for n in sizes:
            s, d = src[:n], dst[:n]
            if op == "copy":
                ours, theirs = (lambda: kernels.copy(d, s)), (lambda: other.copy(d, s))
            else:
                ours, theirs = (lambda: kernels.fill(d, 0x5A)), (lambda: other.fill(d, 0x5A))
            k = 5 * reps if n < MiB else 3 * reps if n < 64 * MiB else reps
            to, tt = bench(ours, theirs, k)
            worst = min(worst, (tt / to, f"{op} {fmt_size(n)}"))
            print(f"{op:6} {fmt_size(n):>10} {to * 1e6:13.2f} {tt * 1e6:12.2f} {tt / to:13.2f}")
    print(f"against: {tree}; worst against/this {worst[0]:.2f} ({worst[1]}); best of {reps} runs per side "
          f"({3 * reps} under 64 MiB, {5 * reps} under 1 MiB), interleaved")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer sizes, up to 256 MiB (about a minute)")
    ap.add_argument("--reps", type=int, default=None,
                    help="timed runs per side, best kept (default 7, 5 with --quick); "
                         "sizes under 64 MiB get three times as many, under 1 MiB five times")
    ap.add_argument("--only", nargs="+", choices=["copy", "copy_2d", "fill", "fill_u32"],
                    help="run only these tables")
    ap.add_argument("--no-startup", action="store_true", help="skip the cache probe and the cold-start timing")
    ap.add_argument("--crossover", action="store_true",
                    help="time cached against streaming stores around the thresholds, and nothing else")
    ap.add_argument("--against", metavar="TREE",
                    help="copy and fill against TREE's emu/kernels.py (another version), and nothing else")
    args = ap.parse_args()
    reps = args.reps or (5 if args.quick else 7)
    if args.against:
        against(args.against, args.quick, reps)
        return
    only = set(args.only or ["copy", "copy_2d", "fill", "fill_u32"])
    if args.crossover:
        kernels.warmup()
        crossover(args.quick, args.reps or (7 if args.quick else 11), only)
        return
    only = set(args.only or ["copy", "copy_2d", "fill", "fill_u32"])

    def reps_for(n):
        # Small sizes are the noisiest (a short run is easily disturbed), and cheap to repeat.
        return 5 * reps if n < MiB else 3 * reps if n < 64 * MiB else reps

    t_start = time.perf_counter()
    t0 = time.perf_counter()
    kernels.warmup()
    load_s = time.perf_counter() - t0

    copy_sizes = COPY_SIZES_QUICK if args.quick else COPY_SIZES
    fill_sizes = FILL_SIZES_QUICK if args.quick else FILL_SIZES
    regions = REGION_SIZES_QUICK if args.quick else REGION_SIZES
    top = max(copy_sizes + fill_sizes + regions)

    # One source and one destination, as large as the largest case, touched up front.
    src = np.random.default_rng(1).integers(0, 256, size=top + 4096, dtype=np.uint8)
    dst = np.empty(top + 4096, dtype=np.uint8)
    dst.fill(1)

    # Let the clock and the caches settle before the first timed case.
    spin_until = time.perf_counter() + 0.3
    while time.perf_counter() < spin_until:
        kernels.copy(dst[:64 * KiB], src[:64 * KiB])
        np.copyto(dst[:64 * KiB], src[:64 * KiB])

    tables = []
    if "copy" in only:
        t = Table("copy (1-D, disjoint)", "np.copyto(dst, src)")
        tables.append(t)
        for n in copy_sizes:
            s, d = src[:n], dst[:n]
            t.run(fmt_size(n), n, lambda: kernels.copy(d, s), lambda: np.copyto(d, s),
                  lambda: np.array_equal(d, s), reps_for(n))

    if "copy_2d" in only:
        t = Table("copy_2d (pitch = width + 64)", "np.copyto between strided 2-D views")
        tables.append(t)
        for region in regions:
            for width in WIDTHS:
                pitch = width + 64
                height = region // pitch
                s2, d2 = strided(src, height, width, pitch), strided(dst, height, width, pitch)
                t.run(f"{fmt_size(region)} w={width} h={height}", width * height,
                      lambda: kernels.copy_2d(dst, pitch, src, pitch, width, height),
                      lambda: np.copyto(d2, s2), lambda: np.array_equal(d2, s2), reps_for(region))

    if "fill" in only:
        t = Table("fill (memset of a byte)", "ndarray.fill on uint8")
        tables.append(t)
        for n in fill_sizes:
            d = dst[:n]
            t.run(fmt_size(n), n, lambda: kernels.fill(d, 0x5A), lambda: d.fill(0x5A),
                  lambda: bool((d == 0x5A).all()), reps_for(n))

    if "fill_u32" in only:
        t = Table("fill_u32 (memset_d32)", "ndarray.fill on the uint32 view")
        tables.append(t)
        value = 0xDEADBEEF
        for n in fill_sizes:
            n -= n % 4
            d = dst[:n]
            d32 = d.view(np.uint32)
            t.run(fmt_size(n), n, lambda: kernels.fill_u32(d, value), lambda: d32.fill(value),
                  lambda: bool((d32 == value).all()), reps_for(n))

    for t in tables:
        t.print()
    worst = min(t.worst() for t in tables if t.rows)
    print(f"\nworst ratio over all tables: {worst[0]:.2f} ({worst[1]}, {worst[2]})")
    if not all(t.all_ok() for t in tables):
        print("SOME RESULTS WERE WRONG")
    print(f"best of {reps} runs per side ({3 * reps} under 64 MiB, {5 * reps} under 1 MiB), interleaved; "
          "GB/s counts payload bytes written.")
    print(f"store paths learned in this run: copy {kernels.COPY_STORES!r}; fill {kernels.FILL_STORES!r}; "
          f"2-D copy {kernels.COPY_2D_STORES!r}")
    print(f"this process: kernels ready in {load_s:.2f} s")
    if not args.no_startup:
        print(cache_probe())
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import startup

        print(startup.report(runs=5))
    print(f"total {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
