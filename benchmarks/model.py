"""Wall-time cost of the timing model, against a plain simpy loop measured in the same run.

Run from the repository root:  python benchmarks/model.py [--copies N] [--reps 5]

1. N async 4 KiB H2D copies over 4 streams through the emulator (timing-only),
   per copy, vs a simpy loop doing one resource request and one timeout per copy, interleaved, each the
   best of --reps rounds (at least 5: the machines these run on move by 10-40% from one moment to the next).
   Target: within 2x.
2. Scaling: 10x the copies costs at most 12x the wall time.
3. Size independence: 1,000 copies of 1 GiB vs 1,000 copies of 4 KiB on one stream, within 20%
   (and, for information, on 4 streams, where the large copies also share the link).
4. Sharing: per copy, against the same simpy loop (interleaved, best of max(5, --reps)), for information:
   --shared-copies async 4 MiB H2D copies on 16 streams, all on the one host link (the flows share it), and
   the Atlas A3 all-to-all of benchmarks/network.py (case c: 16 devices, each copying 16 MiB to each other,
   240 copies at once over the devices' links).
With --against TREE (a source tree of another version, e.g. `git archive <commit>` unpacked, its emu/models,
emu/configs and emu/validation linked to the tree's models, configs and validation, as for benchmarks/network.py),
only row 1 runs, on that tree and on this one, in fresh processes, alternately, best of max(5, --reps) of each,
each process with its own simpy loop: the emulator's us/copy on both (CPU time of the process, so that other
processes on a busy machine count less) and each one's ratio to its loop.

5. Memory: bytes of resident memory per recorded copy (RSS growth over --memory-copies timing-only
   async copies, each run in a fresh process) under records="all", the last 1000, and None.
   Each copy is one device task and one host API call; "all" keeps both as compact rows.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import simpy  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from network import all_to_all  # noqa: E402  (benchmarks/network.py, case c)

H2D = 1
STREAMS = 4


def simpy_loop(n: int, clock=time.perf_counter) -> float:
    """The baseline: per copy, one request of a 4-engine resource and one timeout."""
    env = simpy.Environment()
    engines = simpy.Resource(env, capacity=4)

    def stream(k: int):
        for _ in range(k):
            with engines.request() as req:
                yield req
                yield env.timeout(2e-6)

    for _ in range(STREAMS):
        env.process(stream(n // STREAMS))
    t = clock()
    env.run()
    return clock() - t


def emulator(n: int, size: int, nstreams: int = STREAMS, clock=time.perf_counter) -> float:
    """n async H2D copies of `size` bytes, round robin over `nstreams` streams, then synchronize."""
    import emu  # (here, not at the top: a --against child puts another tree first on the path)

    rt = emu.configure(product="910B", functional=False)
    rt.set_device(0)
    streams = [rt.create_stream() for _ in range(nstreams)]
    host = rt.malloc_host(size * nstreams)
    dev = rt.malloc(size * nstreams)
    copy = rt.memcpy_async
    gc.collect()
    t = clock()
    for i in range(n):
        k = i % nstreams
        copy(dev + k * size, size, host + k * size, size, H2D, streams[k])
    rt.synchronize_device()
    wall = clock() - t
    assert len(rt.machine.records) >= n
    return wall


def a2a(_=None) -> float:
    """The A3 all-to-all (benchmarks/network.py, case c): wall seconds per copy."""
    return all_to_all(clock=time.perf_counter)[0] / 1e6


def per_copy(fn, n: int, *args) -> float:
    """fn(n, *args) (wall seconds for n copies), per copy."""
    return fn(n, *args) / n


def _rss() -> int:
    """Resident set size of this process, in bytes (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_child(n: int, records, traced: bool = False) -> dict:
    """In a fresh process: RSS growth (or, traced, the Python and numpy memory still allocated, by
    tracemalloc) over n timing-only async 4 KiB H2D copies on 4 streams."""
    import emu

    rt = emu.configure(product="910B", functional=False, records=records)
    rt.set_device(0)
    streams = [rt.create_stream() for _ in range(STREAMS)]
    host, dev = rt.malloc_host(4096 * STREAMS), rt.malloc(4096 * STREAMS)
    copy = rt.memcpy_async
    for i in range(10_000):  # warm up: code paths, the first chunks of rows, the allocator's arenas
        copy(dev, 4096, host, 4096, H2D, streams[i % STREAMS])
    rt.synchronize_device()
    rt.flush_records()
    gc.collect()
    if traced:
        tracemalloc.start()
    before = _rss()
    for i in range(n):
        k = i % STREAMS
        copy(dev + k * 4096, 4096, host + k * 4096, 4096, H2D, streams[k])
    rt.synchronize_device()
    rt.flush_records()  # the pending tasks and calls become rows too
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] if traced else _rss() - before
    return {"bytes": grown, "kept": len(rt.machine.records), "tasks": rt.record_totals()["tasks"]}


def memory(n: int, records, traced: bool = False) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--memory-child",
                          json.dumps([n, records, traced])], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def headline_child(tree: str | None, n: int) -> dict:
    """In a fresh process (with `tree`, if given, first on sys.path): row 1 once, after a warm-up, and the simpy
    loop once; seconds of this process's CPU time each (another process on the machine does not count)."""
    if tree:
        sys.path.insert(0, os.path.abspath(tree))
    import emu

    if tree and not emu.models.__file__.startswith(os.path.abspath(tree)):
        raise SystemExit(f"{tree}: its emu.models is {emu.models.__file__}, not the tree's")
    emulator(n // 10, 4096)  # (the first run of a process pays for cold paths)
    return {"emu": emulator(n, 4096, clock=time.process_time), "simpy": simpy_loop(n, clock=time.process_time)}


def against(tree: str, n: int, reps: int) -> None:
    """Row 1 on this tree and on `tree`, alternately in fresh processes; best of `reps` each."""
    best = {None: [float("inf")] * 2, tree: [float("inf")] * 2}
    for _ in range(reps):
        for which in (None, tree):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--headline-child",
                                  json.dumps([which, n])], capture_output=True, text=True, check=True, cwd="/")
            got = json.loads(out.stdout.strip().splitlines()[-1])
            best[which] = [min(best[which][0], got["emu"]), min(best[which][1], got["simpy"])]
    print()
    print(f"{'row 1 (' + str(n) + ' async 4 KiB H2D, 4 streams)':42} {'us/copy':>10} {'simpy':>10} {'ratio':>7}")
    print("-" * 82)
    for which, name in ((None, "this tree"), (tree, tree)):
        e, b = best[which]
        print(f"{name[:42]:42} {e / n * 1e6:10.2f} {b / n * 1e6:10.2f} {e / b:7.2f}")
    here, there = best[None][0], best[tree][0]
    print(f"this tree / {tree}: {here / there:.3f} (fresh processes, alternately, best of {reps} each)")


def best_of(reps: int, *runs) -> list[float]:
    """Best wall time of each (fn, *args) over `reps` rounds, the runs interleaved within each round so that
    a noisy moment of the machine hits all of them alike."""
    times = [float("inf")] * len(runs)
    for _ in range(reps):
        for i, (fn, *args) in enumerate(runs):
            times[i] = min(times[i], fn(*args))
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=5, help="rounds; each row is its best (at least 5)")
    ap.add_argument("--shared-copies", type=int, default=10_000)
    ap.add_argument("--memory-copies", type=int, default=100_000)
    ap.add_argument("--against", metavar="TREE", help="row 1 on another source tree too (see above)")
    ap.add_argument("--memory-child", help=argparse.SUPPRESS)
    ap.add_argument("--headline-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        print(json.dumps(memory_child(*json.loads(args.memory_child))))
        return 0
    if args.headline_child:
        print(json.dumps(headline_child(*json.loads(args.headline_child))))
        return 0
    if args.against:
        against(args.against, args.copies, max(5, args.reps))
        return 0
    n, k, args.reps = args.copies, 1000, max(5, args.reps)
    base, emu_t, small = best_of(args.reps, (simpy_loop, n), (emulator, n, 4096), (emulator, n // 10, 4096))
    t4k, t1g, c4k, c1g = best_of(5 * args.reps, (emulator, k, 4096, 1), (emulator, k, 1 << 30, 1),
                                 (emulator, k, 4096), (emulator, k, 1 << 30))
    s = args.shared_copies
    base_s, shared, base_a, all2all = best_of(max(5, args.reps), (per_copy, simpy_loop, s),
                                              (per_copy, emulator, s, 4 << 20, 16), (per_copy, simpy_loop, s), (a2a,))
    rows = [
        (f"{n} async 4 KiB H2D, 4 streams", emu_t / n * 1e6, base / n * 1e6, emu_t / base, "<= 2.0"),
        (f"scaling {n // 10} -> {n} copies", small / (n // 10) * 1e6, emu_t / n * 1e6, emu_t / small, "<= 12.0"),
        (f"{k} copies of 1 GiB vs 4 KiB, 1 stream", t1g / k * 1e6, t4k / k * 1e6, t1g / t4k, "<= 1.2"),
        # on 4 streams the 1 GiB copies also share the link (4 kilobyte ones never overlap): the extra cost is
        # the rate recomputation at each start and end, not the size
        (f"{k} copies of 1 GiB vs 4 KiB, 4 streams", c1g / k * 1e6, c4k / k * 1e6, c1g / c4k, "-"),
        # many flows at once on links they share: a start or an end re-rates the flows it reaches
        (f"{s} async 4 MiB H2D, 16 streams, one link", shared * 1e6, base_s * 1e6, shared / base_s, "-"),
        ("A3 all-to-all, 240 x 16 MiB, 16 devices", all2all * 1e6, base_a * 1e6, all2all / base_a, "-"),
    ]
    print(f"{'case':42} {'us/copy':>10} {'baseline':>10} {'ratio':>7} {'target':>8}")
    print("-" * 82)
    for name, a, b, r, target in rows:
        verdict = "" if target == "-" else ("PASS" if r <= float(target.split()[-1]) else "ABOVE")
        print(f"{name:42} {a:10.2f} {b:10.2f} {r:7.2f} {target:>8}  {verdict}")
    print("baseline of rows 1, 5 and 6: a simpy loop with one resource request and one timeout per copy, same run")
    m = args.memory_copies
    print()
    print(f"{f'records policy ({m} copies)':42} {'B/copy':>10} {'traced':>10} {'kept':>10}")
    print("-" * 82)
    for label, policy in (('"all"', "all"), ("the last 1000", 1000), ("None", None)):
        rss, traced = memory(m, policy), memory(m, policy, traced=True)
        print(f"{label:42} {rss['bytes'] / m:10.1f} {traced['bytes'] / m:10.1f} {rss['kept']:10d}")
    print("B/copy: RSS growth of a fresh process per timing-only async copy (one device task and one API call),")
    print("after 10,000 copies of warm-up; traced: the memory still allocated after the copies (tracemalloc)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
