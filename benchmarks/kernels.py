"""Throughput of emu.kernels against the equivalent numpy operation.

Run from the repository root:  python benchmarks/kernels.py [--reps N]

Each case times the kernel and its numpy baseline alternately in the same
process and keeps the best of N runs of each.  Also reports whether a fresh
process loads every kernel from Numba's on-disk cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from numpy.lib.stride_tricks import as_strided

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from emu import kernels  # noqa: E402

MiB = 1 << 20
BIG = 256 * MiB

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


def bench(kernel_fn, numpy_fn, reps):
    """Best-of-reps seconds for each, interleaved, alternating which goes first."""
    best_k = best_n = float("inf")
    for i in range(reps):
        order = ((kernel_fn, True), (numpy_fn, False)) if i % 2 == 0 else ((numpy_fn, False), (kernel_fn, True))
        for fn, is_kernel in order:
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            if is_kernel:
                best_k = min(best_k, dt)
            else:
                best_n = min(best_n, dt)
    return best_k, best_n


def strided(buf, height, width, pitch):
    return as_strided(buf, shape=(height, width), strides=(pitch, 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=9, help="timed runs per side (best is kept)")
    args = ap.parse_args()

    t_start = time.perf_counter()
    t0 = time.perf_counter()
    kernels.warmup()
    load_s = time.perf_counter() - t0

    # Two 256 MiB buffers, touched up front so page faults are not timed.
    src = np.random.default_rng(1).integers(0, 256, size=BIG + 4096, dtype=np.uint8)
    dst = np.zeros(BIG + 4096, dtype=np.uint8)
    dst.fill(1)

    rows = []  # (kernel, case, bytes, t_kernel, t_numpy, target, ok)

    def run(name, case, nbytes, kfn, nfn, target, check):
        tk, tn = bench(kfn, nfn, args.reps)
        kfn()
        ok = check()
        rows.append((name, case, nbytes, tk, tn, target, ok))

    for size in (64 * MiB, 256 * MiB):
        s, d = src[:size], dst[:size]
        run("copy", f"{size // MiB} MiB", size,
            lambda: kernels.copy(d, s), lambda: np.copyto(d, s), 0.9,
            lambda: np.array_equal(d, s))

    for width in (16, 64, 1000, 4096):
        pitch = width + 64
        height = BIG // pitch
        s2, d2 = strided(src, height, width, pitch), strided(dst, height, width, pitch)
        run("copy_2d", f"w={width} pitch={pitch} h={height}", width * height,
            lambda: kernels.copy_2d(dst, pitch, src, pitch, width, height),
            lambda: np.copyto(d2, s2), 1.0,
            lambda: np.array_equal(d2, s2))

    value = 0xDEADBEEF
    d32 = dst[:BIG].view(np.uint32)
    run("fill_u32", "256 MiB", BIG,
        lambda: kernels.fill_u32(dst[:BIG], value), lambda: d32.fill(value), 0.9,
        lambda: bool((d32 == value).all()))
    d8 = dst[:BIG]
    run("fill", "256 MiB", BIG,
        lambda: kernels.fill(d8, 0x5A), lambda: d8.fill(0x5A), 0.9,
        lambda: bool((d8 == 0x5A).all()))

    head = f"{'kernel':<9} {'case':<28} {'kernel GB/s':>11} {'numpy GB/s':>10} {'ratio':>6} {'target':>6}  result"
    print(head)
    print("-" * len(head))
    for name, case, nbytes, tk, tn, target, ok in rows:
        ratio = tn / tk
        verdict = "PASS" if ratio >= target else "BELOW"
        if not ok:
            verdict = "WRONG RESULT"
        print(f"{name:<9} {case:<28} {nbytes / tk / 1e9:>11.2f} {nbytes / tn / 1e9:>10.2f} "
              f"{ratio:>6.2f} {target:>5.1f}x  {verdict}")
    print(f"\nbest of {args.reps} runs each, interleaved; GB/s counts payload bytes written.")
    print(f"this process: kernels ready in {load_s:.2f} s")
    print(cache_probe())
    print(f"total {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
