"""Small synchronous calls through the pyACL facade, against a bare Python call and np.copyto of the same
bytes, measured in the same run.

Run from the repository root:  python benchmarks/small_calls.py [--reps 7] [--calls 2000]

Rows: a blocking aclrtMemcpy H2D of 64 B, 4 KiB and 64 KiB from page-locked memory; aclrtMemcpyAsync of
64 B then aclrtSynchronizeStream; aclrtMemsetD32 of 64 B. Each: microseconds per call (best of --reps
rounds, interleaved with the baselines, time.perf_counter), and its multiple of a bare Python function
call and of np.copyto of as many bytes. Target (issue 13): a 64 B aclrtMemcpy at most 15 us.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import numpy as np  # noqa: E402

import emu  # noqa: E402
import emu.acl as acl  # noqa: E402


def per_call(fn, calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    emu.configure("910B", functional=True)
    acl.init()
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream()
    big = 64 << 10
    host, _ = acl.rt.malloc_host(big)
    dev, _ = acl.rt.malloc(big, 0)

    def bare():
        pass

    cases = {
        "aclrtMemcpy H2D 64 B": (64, lambda: acl.rt.memcpy(dev, 64, host, 64, 1)),
        "aclrtMemcpy H2D 4 KiB": (4096, lambda: acl.rt.memcpy(dev, 4096, host, 4096, 1)),
        "aclrtMemcpy H2D 64 KiB": (big, lambda: acl.rt.memcpy(dev, big, host, big, 1)),
        "MemcpyAsync 64 B + SynchronizeStream": (64, lambda: (acl.rt.memcpy_async(dev, 64, host, 64, 1, stream),
                                                             acl.rt.synchronize_stream(stream))),
        "aclrtMemsetD32 64 B": (64, lambda: acl.rt.memset_d32(dev, 64, 7, 16)),
    }
    arrays = {n: (np.zeros(n, np.uint8), np.ones(n, np.uint8)) for n in {n for n, _ in cases.values()}}
    best = {name: float("inf") for name in cases}
    base_bare, base_copy = float("inf"), {n: float("inf") for n in arrays}
    for _, fn in cases.values():  # warm: kernels compiled, paths cached
        per_call(fn, 50)
    for _ in range(args.reps):
        base_bare = min(base_bare, per_call(bare, args.calls))
        for name, (n, fn) in cases.items():
            a, b = arrays[n]
            base_copy[n] = min(base_copy[n], per_call(lambda: np.copyto(a, b), args.calls))
            best[name] = min(best[name], per_call(fn, args.calls))
    print(f"{'call':40} {'us/call':>9} {'x bare call':>12} {'x np.copyto':>12}")
    print("-" * 76)
    for name, (n, _) in cases.items():
        t = best[name]
        print(f"{name:40} {t * 1e6:9.2f} {t / base_bare:12.0f} {t / base_copy[n]:12.1f}")
    print(f"baselines: a bare Python call {base_bare * 1e6:.3f} us; np.copyto of 64 B {base_copy[64] * 1e6:.3f} us "
          f"(best of {args.reps} rounds of {args.calls} calls, interleaved)")
    print(f"target: aclrtMemcpy H2D 64 B <= 15 us: {'met' if best['aclrtMemcpy H2D 64 B'] <= 15e-6 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
