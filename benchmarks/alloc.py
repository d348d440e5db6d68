"""Small allocations and frees through the pyACL facade against numpy allocating the same, 100,000 blocks.

Run from the repository root:  python benchmarks/alloc.py [--blocks 100000] [--reps 3] [--quick]

Blocks: each row allocates --blocks blocks of one size, keeps them all alive, then frees them, in the order they
were allocated or in a random one (the same shuffled order on both sides). Ours: acl.rt.malloc / acl.rt.free
(device memory) or acl.rt.malloc_host / acl.rt.free_host (page-locked memory), on the 910B product, functional
or timing-only (`emu.configure(functional=...)`). numpy: np.empty and np.zeros of the same sizes, kept in a list,
then dropped one by one in the same order. The figure is microseconds per block (its allocation and its free),
the best of --reps interleaved runs (ours, np.empty, np.zeros, who goes first rotating), and ours against each
numpy side. Functional page-locked memory and np.zeros hold real bytes: their rows are capped at --max-bytes
(the block count they ran with is printed). Device memory's bytes come at first touch, so functional device
memory costs what timing-only does.

Live blocks: the cost of one allocation and one free while 1,000, 10,000 and 100,000 blocks of 4 KiB stay
alive (device memory; numpy: np.empty arrays), in steady state: each step allocates a block and frees a random
live one. Flat means the same cost at every count (the allocator is O(log n); it was O(n) before: 754 us an
allocation at 10,000 live blocks). Also the free ranges the allocator looked at per allocation
(`_Window.examined`), a count the machine's noise does not move.

Prints the date and the machine first: ratios from one run, never absolute times, compare across days on these
shared machines.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import numpy as np  # noqa: E402

import emu  # noqa: E402
import emu.acl as acl  # noqa: E402

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SIZES = (512, 4 * KiB, 64 * KiB)
LIVE = (1_000, 10_000, 100_000)
STEPS = 20_000  # allocation-and-free steps timed at each live count


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                 platform.processor())
    return (f"{model}, {os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}, "
            f"numpy {np.__version__}")


def fmt(n: int) -> str:
    return next(f"{n // d} {u}" for d, u in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB"), (1, "B")) if n >= d)


def fresh(functional: bool) -> None:
    """A new emulated process with a context on device 0."""
    emu.configure("910B", functional=functional)
    acl.init()
    acl.rt.set_device(0)


def api(memory: str):
    """(malloc(size) -> address, free(address)) through the facade."""
    if memory == "device":
        return (lambda n: acl.rt.malloc(n, 0)[0]), acl.rt.free
    return (lambda n: acl.rt.malloc_host(n)[0]), acl.rt.free_host


def ours(memory: str, functional: bool, size: int, order: list[int]) -> float:
    """Seconds per block: len(order) blocks allocated and kept, then freed in `order`."""
    fresh(functional)
    malloc, free = api(memory)
    n = len(order)
    t = time.perf_counter()
    ptrs = [malloc(size) for _ in range(n)]
    for i in order:
        free(ptrs[i])
    elapsed = time.perf_counter() - t
    assert all(ptrs), "an allocation failed"
    return elapsed / n


def numpy_side(make, size: int, order: list[int]) -> float:
    n = len(order)
    t = time.perf_counter()
    arrays = [make(size, np.uint8) for _ in range(n)]
    for i in order:
        arrays[i] = None
    return (time.perf_counter() - t) / n


def orders(n: int) -> dict[str, list[int]]:
    shuffled = list(range(n))
    random.Random(n).shuffle(shuffled)
    return {"in order": list(range(n)), "random": shuffled}


def blocks_table(blocks: int, reps: int, max_bytes: int) -> None:
    print(f"\n{blocks:,} blocks of each size allocated (kept alive), then freed; microseconds per block "
          f"(allocation + free), best of {reps} interleaved runs; ours / numpy (< 1: ours faster)")
    head = (f"{'memory':11} {'mode':11} {'size':>6} {'order':8} {'blocks':>7} {'ours':>7} {'np.empty':>8} "
            f"{'np.zeros':>8} {'/empty':>7} {'/zeros':>7}")
    print(head + "\n" + "-" * len(head), flush=True)
    for memory in ("device", "page-locked"):
        for functional in (True, False):
            for size in SIZES:
                for name in ("in order", "random"):
                    ours_n = blocks
                    if functional and memory == "page-locked":
                        ours_n = min(blocks, max_bytes // size)
                    zeros_n = min(blocks, max_bytes // size)
                    sides = {"ours": lambda: ours(memory, functional, size, orders(ours_n)[name]),
                             "empty": lambda: numpy_side(np.empty, size, orders(blocks)[name]),
                             "zeros": lambda: numpy_side(np.zeros, size, orders(zeros_n)[name])}
                    best = {k: float("inf") for k in sides}
                    keys = list(sides)
                    for r in range(reps):
                        for k in keys[r % 3:] + keys[:r % 3]:  # (who goes first rotates)
                            gc.collect()
                            best[k] = min(best[k], sides[k]())
                    count = f"{ours_n:,}" if ours_n == zeros_n == blocks else f"{ours_n // 1000}k/{zeros_n // 1000}k"
                    print(f"{memory:11} {'functional' if functional else 'timing-only':11} {fmt(size):>6} "
                          f"{name:8} {count:>7} {best['ours'] * 1e6:7.2f} {best['empty'] * 1e6:8.3f} "
                          f"{best['zeros'] * 1e6:8.3f} {best['ours'] / best['empty']:7.1f} "
                          f"{best['ours'] / best['zeros']:7.1f}", flush=True)
    print(f"(a count a/b: ours ran with a blocks, np.zeros with b, to hold at most {fmt(max_bytes)} of real bytes)")


def steady(live: int, steps: int, make, free, seed: int) -> float:
    """Seconds per step: with `live` blocks alive, each step makes one and frees a random live one."""
    rng = random.Random(seed)
    blocks = [make() for _ in range(live)]
    picks = [rng.randrange(live) for _ in range(steps)]
    t = time.perf_counter()
    for i in picks:
        new = make()
        free(blocks[i])
        blocks[i] = new
    elapsed = time.perf_counter() - t
    for b in blocks:
        free(b)
    return elapsed / steps


def live_table(live_counts, steps: int, reps: int) -> None:
    print(f"\nOne allocation and one free of 4 KiB while N blocks stay alive (device memory; numpy: np.empty), "
          f"microseconds per step, best of {reps} interleaved runs of {steps:,} steps; x N={live_counts[0]:,}: "
          f"the cost against the first row's (1.0: flat)")
    head = (f"{'live N':>8} {'mode':11} {'ours':>7} {'x first':>7} {'np.empty':>8} {'x first':>7} {'ours/np':>7} "
            f"{'ranges looked at':>16}")
    print(head + "\n" + "-" * len(head), flush=True)
    for functional in (True, False):
        first = None
        for live in live_counts:
            best_ours = best_np = float("inf")
            examined = 0.0
            for r in range(reps):
                for side in (("ours", "np") if r % 2 == 0 else ("np", "ours")):
                    gc.collect()
                    if side == "np":
                        best_np = min(best_np, steady(live, steps, lambda: np.empty(4 * KiB, np.uint8),
                                                      lambda a: None, live))
                        continue
                    fresh(functional)
                    window = emu.current().space.windows[0]
                    malloc, free = api("device")
                    before = window.examined
                    best_ours = min(best_ours, steady(live, steps, lambda: malloc(4 * KiB), free, live))
                    examined = (window.examined - before) / (live + steps)
            if first is None:
                first = (best_ours, best_np)
            print(f"{live:>8,} {'functional' if functional else 'timing-only':11} {best_ours * 1e6:7.2f} "
                  f"{best_ours / first[0]:7.2f} {best_np * 1e6:8.3f} {best_np / first[1]:7.2f} "
                  f"{best_ours / best_np:7.0f} {examined:16.2f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=100_000, help="blocks per row of the first table")
    ap.add_argument("--reps", type=int, default=3, help="interleaved runs per side; each figure is its best")
    ap.add_argument("--max-bytes", type=int, default=GiB, help="real bytes a row may hold (functional page-locked "
                                                                "memory, np.zeros)")
    ap.add_argument("--quick", action="store_true", help="10,000 blocks, live counts up to 10,000, 2 runs")
    ap.add_argument("--only", choices=("blocks", "live"), help="one table")
    args = ap.parse_args()
    blocks, reps, live = args.blocks, args.reps, LIVE
    if args.quick:
        blocks, reps, live = 10_000, 2, LIVE[:2]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}")
    if args.only != "live":
        blocks_table(blocks, reps, args.max_bytes)
    if args.only != "blocks":
        live_table(live, STEPS, reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
