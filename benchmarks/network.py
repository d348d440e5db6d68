"""Wall-time cost of the flow model's bandwidth sharing, against a naive reference measured in the same run.

Run from the repository root:  python benchmarks/network.py [--reps 5] [--sizes 10,100,1000]

The reference (`naive`, below) is the textbook algorithm: at every flow start or end, advance every flow
in flight and recompute every rate by progressive filling, then find the next end by scanning them all.
It is checked to give the same completion times as `models.network` in every case before anything is
timed. Cases, each with N = 10, 100, 1000 flows in flight, every flow restarted ROUNDS times on its
completion (as a stream's next copy starts when the last ends):
  (a) shared:   N flows on one link (every event changes every rate);
  (b) disjoint: N/2 links with two flows each (an event changes two rates; the cost per event must not
                grow with N).
Reported: microseconds per flow event (a start or an end), best of --reps, interleaved, and the ratio.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import simpy  # noqa: E402

from models.network import Link, Network  # noqa: E402

ROUNDS = 3
CAPACITY = 10e9


def naive(links: dict[str, float], flows: list[tuple[str, list[str], float]], rounds: int) -> dict:
    """Recompute-everything max-min sharing. flows: (name, link names, size); each flow restarts `rounds`
    times. Returns {name: time of its last completion}."""
    t, left, active, out = 0.0, {n: rounds for n, _, _ in flows}, {}, {}
    for name, path, size in flows:
        active[name] = [path, size, size, 0.0]  # path, size, remaining, rate
    while active:
        cap, load, unfixed = dict(links), {}, set(active)
        for name in active:
            for link in active[name][0]:
                load[link] = load.get(link, 0) + 1
        while unfixed:
            link = min((l for l in load if load[l] > 0), key=lambda l: cap[l] / load[l])
            share = cap[link] / load[link]
            for name in [n for n in unfixed if link in active[n][0]]:
                active[name][3] = share
                unfixed.discard(name)
                for other in active[name][0]:
                    cap[other] -= share
                    load[other] -= 1
        dt = min(f[2] / f[3] for f in active.values())
        t += dt
        for name in list(active):
            f = active[name]
            f[2] -= f[3] * dt
            if f[2] <= f[1] * 1e-9:
                left[name] -= 1
                if left[name]:
                    f[2] = f[1]
                else:
                    out[name] = t
                    del active[name]
    return out


def model(links: dict[str, float], flows: list[tuple[str, list[str], float]], rounds: int) -> dict:
    """The same workload on models.network."""
    env = simpy.Environment()
    net = Network(env)
    objs = {name: Link(name, cap) for name, cap in links.items()}
    out = {}

    def begin(name, path, size, left):
        def done():
            if left > 1:
                begin(name, path, size, left - 1)
            else:
                out[name] = env.now
        net.start([objs[l] for l in path], size, done)

    for name, path, size in flows:
        begin(name, path, size, rounds)
    env.run()
    return out


def workload(case: str, n: int):
    sizes = [1e6 * (1 + (i * 7919) % 1000 / 997) for i in range(n)]  # distinct sizes: one end per event
    if case == "shared":
        return {"l": CAPACITY}, [(f"f{i}", ["l"], sizes[i]) for i in range(n)]
    links = {f"l{k}": CAPACITY for k in range(n // 2)}
    return links, [(f"f{i}", [f"l{i // 2}"], sizes[i]) for i in range(n)]


def best_of(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="10,100,1000")
    args = ap.parse_args()
    print(f"{'case':10} {'N':>5} {'events':>7} {'model us/ev':>12} {'naive us/ev':>12} {'naive/model':>12}")
    for case in ("shared", "disjoint"):
        for n in (int(x) for x in args.sizes.split(",")):
            links, flows = workload(case, n)
            got, want = model(links, flows, ROUNDS), naive(links, flows, ROUNDS)
            worst = max(abs(got[k] - want[k]) / want[k] for k in want)
            if worst > 1e-6:
                raise SystemExit(f"{case} N={n}: completion times differ from the reference by {worst:.2e}")
            events = 2 * n * ROUNDS
            reps = args.reps if n <= 100 or case == "disjoint" else max(1, args.reps // 2)
            m = n_ = float("inf")
            for _ in range(reps):  # interleaved
                m = min(m, best_of(lambda: model(links, flows, ROUNDS), 1))
                n_ = min(n_, best_of(lambda: naive(links, flows, ROUNDS), 1))
            print(f"{case:10} {n:5d} {events:7d} {m / events * 1e6:12.2f} {n_ / events * 1e6:12.2f} {n_ / m:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
