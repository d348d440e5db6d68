"""Functional copies and fills through the pyACL facade against numpy on the same memory, 4 KiB to 1 GiB, and
two threads' aggregate against one's.

Run from the repository root:  python benchmarks/functional.py [--sizes 4K,64K,...] [--reps N] [--no-threads]
                                                               [--host-time calls|wall]

Per size n (page-locked host memory and device memory of the 910B product, functional mode), medians of
interleaved runs (ours, numpy, ours, ... which goes first alternating), as ratios numpy time / our time
(>= 1: as fast as numpy):

* copy: acl.rt.memcpy H2D of n bytes vs np.copyto between the same two buffers; kernel: emu.kernels.copy
  between them vs np.copyto (the bytes alone, without the call's fixed cost: about 5 us, the timing model's);
* d32: acl.rt.memset_d32 of n / 4 words on the device vs ndarray.fill of the uint32 view of the same bytes;
* 2d: acl.rt.memcpy2d H2D, rows of 1024 bytes 1088 apart, vs the assignment between the strided 2-D views;
* batch (64 KiB and up): acl.rt.memcpy_batch of n / 64 KiB entries of 64 KiB vs a loop of np.copyto;
* threads: each of two threads copies its own buffers with acl.rt.memcpy (then np.copyto) as fast as it can;
  the aggregate bytes per second of two threads against one's, for both, and ours against numpy's. In the
  default "calls" host-time mode the two threads' calls take turns in simulated-time order (the price of a run
  that repeats exactly: emu.runtime.core); `--host-time wall` lets them run freely.

A run of a small size loops for about RUN_SECONDS on the slower side (the same count on both sides). Every buffer
is written before the first timed run (no page fault is timed) and each side runs once before its runs are timed.
Prints the date and the machine (CPU, cores, the last-level cache the kernels read) first: ratios from one run,
never absolute times, compare across days on these shared machines.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
from numpy.lib.stride_tricks import as_strided  # noqa: E402

import emu  # noqa: E402
import emu.acl as acl  # noqa: E402
from emu import kernels  # noqa: E402
from emu.studies.common import parse_sizes  # noqa: E402

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
SIZES = "4K,64K,1M,4M,16M,64M,256M,1G"
RUN_SECONDS = 0.02
WIDTH, PITCH = 1024, 1088  # 2-D rows
ENTRY = 64 * KiB  # batch entries
H2D = 1
ATTR = {"dst_loc": {"type": 1, "id": 0}, "src_loc": {"type": 0, "id": 0}, "rsv": bytes(16)}


def fmt(n: int) -> str:
    return next(f"{n // d}{u}" for d, u in ((GiB, "G"), (MiB, "M"), (KiB, "K"), (1, "B")) if n >= d)


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                 platform.processor())
    llc = getattr(kernels, "CACHE_BYTES", None)
    cache = f"last-level cache {llc / MiB:g} MiB (as emu.kernels reads it)" if llc else "cache size not read"
    return (f"{model}, {os.cpu_count()} cores, {cache}, {platform.python_implementation()} "
            f"{platform.python_version()}, numpy {np.__version__}")


class Buffers:
    """n bytes of page-locked host memory and n of device memory (2-D: height rows PITCH apart), written once,
    with their numpy views."""

    def __init__(self, rt, n: int, pitched: bool = False):
        self.n, self.rt = n, rt
        self.height = max(1, n // WIDTH)
        self.span = (self.height - 1) * PITCH + WIDTH if pitched else n
        self.host, _ = acl.rt.malloc_host(self.span)
        self.dev, _ = acl.rt.malloc(self.span, 0)
        self.h = rt.space.resolve(self.host, self.span)[0].view(0, self.span)
        self.d = rt.space.resolve(self.dev, self.span)[0].buffer()[:self.span]
        self.h[:] = 7
        self.d[:] = 1

    def free(self) -> None:
        acl.rt.free_host(self.host)
        acl.rt.free(self.dev)


def loop(fn, k: int) -> float:
    t = time.perf_counter()
    for _ in range(k):
        fn()
    return (time.perf_counter() - t) / k


def medians(ours, base, reps: int) -> tuple[float, float]:
    """Median seconds per call of each side over `reps` interleaved runs (which side first alternating)."""
    k = max(1, int(RUN_SECONDS / max(loop(ours, 1), loop(base, 1), 1e-9)))
    to, tb = [], []
    for i in range(reps):
        first, second = ((ours, to), (base, tb)) if i % 2 == 0 else ((base, tb), (ours, to))
        first[1].append(loop(first[0], k))
        second[1].append(loop(second[0], k))
    return statistics.median(to), statistics.median(tb)


def copy_case(rt, n: int, reps: int) -> tuple[float, float]:
    b = Buffers(rt, n)
    try:
        to, tb = medians(lambda: acl.rt.memcpy(b.dev, n, b.host, n, H2D), lambda: np.copyto(b.d, b.h), reps)
        assert np.array_equal(b.d, b.h)
        tk, tb2 = medians(lambda: kernels.copy(b.d, b.h), lambda: np.copyto(b.d, b.h), reps)
        return tb / to, tb2 / tk
    finally:
        b.free()


def d32_case(rt, n: int, reps: int) -> float:
    b = Buffers(rt, n)
    try:
        d32 = b.d.view(np.uint32)
        to, tb = medians(lambda: acl.rt.memset_d32(b.dev, n, 0xA1B2C3D4, n // 4), lambda: d32.fill(0xA1B2C3D4),
                         reps)
        acl.rt.memset_d32(b.dev, n, 0x01020304, n // 4)
        assert (d32 == 0x01020304).all()
        return tb / to
    finally:
        b.free()


def copy2d_case(rt, n: int, reps: int) -> float:
    b = Buffers(rt, n, pitched=True)
    try:
        h = b.height
        d2, h2 = (as_strided(a, shape=(h, WIDTH), strides=(PITCH, 1)) for a in (b.d, b.h))

        def base():
            d2[...] = h2

        to, tb = medians(lambda: acl.rt.memcpy2d(b.dev, PITCH, b.host, PITCH, WIDTH, h, H2D), base, reps)
        assert np.array_equal(d2, h2)
        return tb / to
    finally:
        b.free()


def batch_case(rt, n: int, reps: int) -> float | None:
    k = n // ENTRY
    if not 1 <= k <= 4096:  # (a synchronous batch holds at most 4096 entries)
        return None
    b = Buffers(rt, n)
    try:
        offs = range(0, n, ENTRY)
        dsts, srcs, sizes = [b.dev + o for o in offs], [b.host + o for o in offs], [ENTRY] * k
        slices = [(b.d[o:o + ENTRY], b.h[o:o + ENTRY]) for o in offs]

        def base():
            for d, s in slices:
                np.copyto(d, s)

        to, tb = medians(lambda: acl.rt.memcpy_batch(dsts, sizes, srcs, sizes, k, [ATTR], [0], 1), base, reps)
        assert np.array_equal(b.d, b.h)
        return tb / to
    finally:
        b.free()


def aggregate(fns, setup, k: int) -> float:
    """Seconds for len(fns) threads to make k calls each of their own fn (setup first, in each thread), started
    together."""
    barrier = threading.Barrier(len(fns) + 1)

    def run(fn):
        setup()
        barrier.wait()
        for _ in range(k):
            fn()

    threads = [threading.Thread(target=run, args=(fn,)) for fn in fns]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def threads_case(rt, n: int, reps: int) -> tuple[float, float, float]:
    """(our 2 threads' aggregate / our 1 thread's, numpy's 2 / numpy's 1, our 2 threads' / numpy's 2), medians
    of interleaved runs."""
    bufs = [Buffers(rt, n), Buffers(rt, n)]
    try:
        ours = [lambda b=b: acl.rt.memcpy(b.dev, n, b.host, n, H2D) for b in bufs]
        numpy = [lambda b=b: np.copyto(b.d, b.h) for b in bufs]
        k = max(2, int(5 * RUN_SECONDS / max(loop(ours[0], 1), loop(numpy[0], 1), 1e-9)))
        runs = {key: [] for key in ("o1", "o2", "n1", "n2")}
        for i in range(reps):
            order = [("o1", ours[:1]), ("n1", numpy[:1]), ("o2", ours), ("n2", numpy)]
            for key, fns in order if i % 2 == 0 else order[::-1]:
                setup = (lambda: acl.rt.set_device(0)) if key[0] == "o" else (lambda: None)
                runs[key].append(len(fns) * k * n / aggregate(fns, setup, k))
        m = {key: statistics.median(v) for key, v in runs.items()}
        return m["o2"] / m["o1"], m["n2"] / m["n1"], m["o2"] / m["n2"]
    finally:
        for b in bufs:
            b.free()


def reps_for(n: int, reps: int) -> int:
    """Fewer runs at the top (a 1 GiB copy takes a tenth of a second, and the machine is shared)."""
    return reps if n <= 64 * MiB else max(3, reps // 2) if n <= 256 * MiB else 3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=SIZES, help=f"comma-separated sizes (default {SIZES})")
    ap.add_argument("--reps", type=int, default=9, help="interleaved runs per side (fewer from 256M up)")
    ap.add_argument("--no-threads", action="store_true", help="skip the two-thread columns")
    ap.add_argument("--host-time", choices=("calls", "wall"), default="calls",
                    help="the runtime's host-time mode (calls: threads take turns; wall: they run freely)")
    args = ap.parse_args()
    rt = emu.configure("910B", functional=True, host_time=args.host_time)
    acl.init()
    acl.rt.set_device(0)
    kernels.warmup()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}")
    print(f"numpy time / ours (>= 1: ours as fast), medians of {args.reps} interleaved runs (fewer from 256M up), "
          f"host time {args.host_time!r}")
    head = (f"{'size':>5} {'memcpy':>7} {'kernel':>6} {'d32':>6} {'2d':>6} {'batch':>6}"
            + ("" if args.no_threads else f" {'ours 2T/1T':>10} {'np 2T/1T':>9} {'2T ours/np':>10}"))
    print(head + "\n" + "-" * len(head), flush=True)
    for n in parse_sizes(args.sizes):
        r = reps_for(n, args.reps)
        row = [*copy_case(rt, n, r), d32_case(rt, n, r), copy2d_case(rt, n, r), batch_case(rt, n, r)]
        cells = " ".join(f"{x:>{w}.2f}" if x is not None else f"{'-':>{w}}" for x, w in zip(row, (7, 6, 6, 6, 6)))
        if not args.no_threads:
            cells += " {:>10.2f} {:>9.2f} {:>10.2f}".format(*threads_case(rt, n, r))
        print(f"{fmt(n):>5} {cells}", flush=True)
    print(f"copy store paths learned: {kernels.COPY_STORES!r}; fill: {kernels.FILL_STORES!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
