"""Wall-time cost of the sanitizer (`emu.configure(sanitize=True)`, `acl-emu run --sanitize`), against the same
run without it, measured in the same process, interleaved, best of --reps.

Run from the repository root:  python benchmarks/sanitize.py [--copies N] [--reps R] [--loops K]

1. benchmarks/model.py's workload: N async 4 KiB H2D copies round robin over 4 streams, timing-only
   (model.emulator), with every check on vs off. Timing-only: no source fingerprints.
2. A functional 256 MiB copy loop: K times an async 256 MiB H2D from page-locked memory, then the D2H back,
   then synchronize, bytes moving; with every check on (so each H2D source is fingerprinted when queued and
   again at the synchronize that first orders the copy before the host) vs off.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from contextlib import contextmanager

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import emu  # noqa: E402
import model  # noqa: E402  (benchmarks/model.py: its emulator loop)

H2D, D2H = 1, 2
BIG = 256 << 20


@contextmanager
def sanitizing(checks):
    """model.emulator configures its own runtime (it imports emu inside the function, so this module's emu is
    the one it calls): make that runtime a sanitized one."""
    configure = emu.configure
    emu.configure = lambda *a, **k: configure(*a, sanitize=checks, **k)
    try:
        yield
    finally:
        emu.configure = configure


def model_loop(n: int, checks) -> float:
    with sanitizing(checks):
        wall = model.emulator(n, 4096)
    san = emu.current().sanitizer
    assert checks is None or (san is not None and not san.findings), san and san.report()
    return wall


def copy_loop(loops: int, checks) -> float:
    """K functional 256 MiB H2D + D2H round trips, each synchronized: wall seconds."""
    rt = emu.configure(product="910B", functional=True, sanitize=checks)
    rt.set_device(0)
    s = rt.create_stream()
    host, back, dev = rt.malloc_host(BIG), rt.malloc_host(BIG), rt.malloc(BIG)
    rt.host_array(host, BIG)[:] = 7
    rt.memcpy_async(dev, BIG, host, BIG, H2D, s)  # warm up: device pages, kernels
    rt.synchronize_stream(s)
    gc.collect()
    t = time.perf_counter()
    for i in range(loops):
        rt.memcpy_async(dev, BIG, host, BIG, H2D, s)
        rt.memcpy_async(back, BIG, dev, BIG, D2H, s)
        rt.synchronize_stream(s)
    wall = time.perf_counter() - t
    san = rt.sanitizer
    assert checks is None or not san.findings, san.report()
    for p in (dev,):
        rt.free(p)
    for p in (host, back):
        rt.free_host(p)
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=100_000, help="copies of the model.py workload")
    ap.add_argument("--loops", type=int, default=4, help="256 MiB round trips")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    n = args.copies
    off, on = model.best_of(args.reps, (model_loop, n, None), (model_loop, n, "all"))
    big_off, big_on = model.best_of(args.reps, (copy_loop, args.loops, None), (copy_loop, args.loops, "all"))
    rows = [
        (f"model.py: {n} async 4 KiB H2D, 4 streams (timing-only)", off / n * 1e6, on / n * 1e6, on / off, "us/copy"),
        (f"{args.loops} x 256 MiB H2D + D2H, functional", big_off / args.loops * 1e3,
         big_on / args.loops * 1e3, big_on / big_off, "ms/loop"),
    ]
    print(f"{'case':58} {'off':>10} {'on':>10} {'ratio':>7}")
    print("-" * 90)
    for name, a, b, r, unit in rows:
        print(f"{name:58} {a:10.2f} {b:10.2f} {r:7.2f}  {unit}")
    print(f"on: emu.configure(sanitize=True) (race, host, init); off: no sanitizer. Same process, interleaved, "
          f"best of {args.reps}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
