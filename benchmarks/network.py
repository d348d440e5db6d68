"""Wall-time cost of the flow model's bandwidth sharing, against a naive reference measured in the same run.

Run from the repository root:  python benchmarks/network.py [--reps 5] [--sizes 10,100,1000] [--against TREE]

The reference (`naive`, below: models/reference.py's `ReferenceNetwork`) is the textbook algorithm: at every
flow start or end, advance every flow in flight and recompute every rate by progressive filling, then find the
next end by scanning them all. It is checked to give the same completion times as `models.network` in every
case before anything is timed. Cases, each with N = 10, 100, 1000 flows in flight, every flow restarted on its completion (as a
stream's next copy starts when the last ends) ROUNDS times, and more for a small N: a run has at least
EVENTS events, so that a run's fixed cost (making the environment, the network and the links) is not what a
small N measures:
  (a) shared:   N flows on one link (every event changes every rate);
  (b) disjoint: N/2 links with two flows each (an event changes two rates; the cost per event must not
                grow with N).
Reported: microseconds per flow event (a start or an end), best of --reps (of more for a short case: as many
as take SAMPLE seconds, up to MAX_REPS), interleaved, and the ratio; with
--against TREE, also the model of TREE/models/network.py (TREE/models loaded as a package of its own),
interleaved too.
With --model-only, the model alone (no reference, no check, no ratio): how its cost per event grows with N
where the reference would take minutes an event (e.g. `--cases disjoint --sizes 10,100,1000,10000`).
The model runs on the environment the machine gives it, its module's `Clock` (a simpy environment with the
model's own timers, whose `run` keeps the collector out, as the machine does), or a plain simpy environment
where the module has none (a version before the Clock); it starts its flows with `send`, as the machine
does (`start` in a version before it).

  (c) all-to-all: the emulator on an Atlas A3 (16 devices, timing-only, peer access on), every device
      copying 16 MiB to every other at once, one stream per pair; the 240 copies share the devices' links.
      Reported: host CPU microseconds per copy (time.process_time, best of --reps), and of that the part
      spent simulating (synchronize: queueing the copies excluded). With --against TREE (a
      source tree of another version, e.g. `git archive <commit>` unpacked, its emu/models, emu/configs and
      emu/validation linked to the tree's models, configs and validation), the same run on that tree in
      subprocesses, interleaved with this one's, checked first to give the same copy end times, and the ratio.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import simpy  # noqa: E402

# The flow model is emu.models (models/ as installed), imported where it is used: importing emu here would
# fix which tree's emu case (c) and benchmarks/instructions.py run, before they put theirs first on the path.

ROUNDS = 3
EVENTS = 600
SAMPLE = 1.0  # seconds: a case whose model and reference run shorter than this together runs more rounds,
MAX_REPS = 200  # up to this many (best of --reps at least)
CAPACITY = 10e9


def naive(links: dict[str, float], flows: list[tuple[str, list[str], float]], rounds: int) -> dict:
    """The same workload on the reference, models/reference.py's `ReferenceNetwork`: at every start and end,
    every flow advanced and every rate recomputed by progressive filling. Returns {name: time of its last
    completion}."""
    from emu.models import ReferenceNetwork

    return model(links, flows, rounds, make=ReferenceNetwork)


def model(links: dict[str, float], flows: list[tuple[str, list[str], float]], rounds: int, network=None,
          make=None) -> dict:
    """The workload (flows: (name, link names, size); each flow restarts `rounds` times) on emu.models.network
    (or on `network`, another version of that module; or on `make(env)`, e.g. the reference). Returns {name:
    time of its last completion}."""
    if network is None:
        import emu.models.network as network
    env = getattr(network, "Clock", simpy.Environment)()  # (as the machine runs it)
    net = (make or network.Network)(env)
    send = getattr(net, "send", net.start)  # (as the machine starts its flows; a version before `send`: start)
    objs = {name: network.Link(name, cap) for name, cap in links.items()}
    out = {}

    # As the machine starts its flows: the links made once (a route's), and one callback, done(owner), with the
    # flow's own state as its owner (the machine's: its _finish, with the task).
    def done(flow):
        name, path, size, left = flow
        if left > 1:
            send(path, size, done, None, 0.0, (name, path, size, left - 1))
        else:
            out[name] = env.now

    for name, path, size in flows:
        links = [objs[l] for l in path]
        send(links, size, done, None, 0.0, (name, links, size, rounds))
    env.run()
    return out


def workload(case: str, n: int):
    sizes = [1e6 * (1 + (i * 7919) % 1000 / 997) for i in range(n)]  # distinct sizes: one end per event
    if case == "shared":
        return {"l": CAPACITY}, [(f"f{i}", ["l"], sizes[i]) for i in range(n)]
    links = {f"l{k}": CAPACITY for k in range(n // 2)}
    return links, [(f"f{i}", [f"l{i // 2}"], sizes[i]) for i in range(n)]


class AllToAll:
    """Case (c)'s program on the emu package importable now: an Atlas A3 runtime, timing-only, peer access on
    between every pair of devices, two buffers and one stream per peer on each device (made here); `queue` then
    `synchronize` run one round of copies. benchmarks/instructions.py counts these same steps."""

    def __init__(self, nbytes: int = 16 << 20):
        import emu

        self.nbytes = nbytes
        self.rt = rt = emu.configure(product="A3", functional=False)
        self.n = n = rt.get_device_count()
        self.bufs, self.streams = {}, {}
        for d in range(n):
            rt.set_device(d)
            for p in range(n):
                if p != d:
                    try:
                        rt.device_enable_peer_access(p, 0)
                    except Exception:  # (a pair a product does not connect)
                        pass
            self.bufs[d] = (rt.malloc(nbytes * n), rt.malloc(nbytes * n))
            self.streams[d] = [rt.create_stream() for _ in range(n)]

    def queue(self) -> int:
        """Every device copies `nbytes` to every other, each pair on its own stream; returns the copies queued."""
        rt, n, nb, bufs = self.rt, self.n, self.nbytes, self.bufs
        copies = 0
        for d in range(n):
            rt.set_device(d)
            for p in range(n):
                if p != d:
                    rt.memcpy_async(bufs[p][1] + d * nb, nb, bufs[d][0] + p * nb, nb, 3, self.streams[d][p])
                    copies += 1
        return copies

    def synchronize(self) -> None:
        for d in range(self.n):
            self.rt.set_device(d)
            self.rt.synchronize_device()


def all_to_all(rounds: int = 1, nbytes: int = 16 << 20, clock=time.process_time) -> tuple[float, list[float], float]:
    """Case (c) on the emu package importable now: (microseconds per copy by `clock`, host CPU time by
    default; every copy's end time; of the microseconds per copy, those spent simulating (synchronizing))."""
    program = AllToAll(nbytes)
    gc.collect()
    t, copies, simulating = clock(), 0, 0.0
    for _ in range(rounds):
        copies += program.queue()
        queued = clock()
        program.synchronize()
        simulating += clock() - queued
    per_copy = (clock() - t) / copies * 1e6
    return per_copy, sorted(r.end for r in program.rt.machine.records), simulating / copies * 1e6


def all_to_all_child(tree: str | None, reps: int) -> dict:
    """In a fresh process (with `tree`, if given, first on sys.path): case (c), best of `reps`."""
    if tree:
        sys.path.insert(0, os.path.abspath(tree))
    import emu

    if tree and not emu.models.__file__.startswith(os.path.abspath(tree)):
        raise SystemExit(f"{tree}: its emu.models is {emu.models.__file__}, not the tree's")
    best, sim, ends = float("inf"), float("inf"), []
    for _ in range(reps):
        cpu, ends, simulating = all_to_all()
        best, sim = min(best, cpu), min(sim, simulating)
    return {"us": best, "sim": sim, "ends": ends}


def all_to_all_run(tree: str | None, reps: int) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps([tree, reps])]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])


def all_to_all_case(reps: int, against: str | None) -> None:
    """Case (c): this tree against `against`, each in subprocesses, interleaved; best of `reps` of each, the
    whole timed part and the simulating part apart."""
    here = {"us": float("inf"), "sim": float("inf")}
    there = dict(here)
    for _ in range(reps):  # each subprocess: the best of 2 (the first of a process pays for cold paths)
        mine = all_to_all_run(None, 2)
        here = {k: min(v, mine[k]) for k, v in here.items()}
        if against:
            other = all_to_all_run(against, 2)
            worst = max(abs(a - b) / b for a, b in zip(mine["ends"], other["ends"]))
            if len(mine["ends"]) != len(other["ends"]) or worst > 1e-9:
                raise SystemExit(f"all-to-all: copy end times differ from {against}'s by {worst:.2e}")
            there = {k: min(v, other[k]) for k, v in there.items()}
    copies = len(mine["ends"])
    print()
    print(f"{'case':18} {'copies':>6} {'us/copy':>12} {'against':>12} {'against/us':>12}")
    for key, name in (("us", "all2all"), ("sim", "  of it simulating")):
        if against:
            print(f"{name:18} {copies:6d} {here[key]:12.1f} {there[key]:12.1f} {there[key] / here[key]:12.2f}")
        else:
            print(f"{name:18} {copies:6d} {here[key]:12.1f} {'-':>12} {'-':>12}")
    if against:
        print(f"against: {against} (copy end times the same to 1e-9; host CPU time per copy, best of {reps} "
              f"processes x 2 runs each, interleaved; simulating: the synchronize calls, queueing excluded)")
    else:
        print(f"host CPU time per copy, best of {reps} processes x 2 runs each (simulating: the synchronize calls)")


def load_network(tree: str):
    """TREE/models/network.py, of TREE/models loaded as a package of its own (`against_models`): another
    version of the flow model, beside emu.models."""
    import importlib
    import importlib.util

    root = os.path.join(os.path.abspath(tree), "models")
    spec = importlib.util.spec_from_file_location("against_models", os.path.join(root, "__init__.py"),
                                                  submodule_search_locations=[root])
    package = importlib.util.module_from_spec(spec)
    sys.modules["against_models"] = package
    spec.loader.exec_module(package)
    return importlib.import_module("against_models.network")


def best_of(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        gc.collect()  # (what the run before left, a cycle through its closures, is not collected in this one)
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="10,100,1000")
    ap.add_argument("--against", metavar="TREE", help="the cases on this source tree too, for the ratio")
    ap.add_argument("--cases", default="shared,disjoint,all2all", help="which cases to run")
    ap.add_argument("--model-only", action="store_true",
                    help="time the model alone, without the reference (large N: the reference takes minutes)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(all_to_all_child(*json.loads(args.child))))
        return 0
    cases = args.cases.split(",")
    other = load_network(args.against) if args.against else None
    head = f"{'case':10} {'N':>5} {'events':>7} {'model us/ev':>12} {'naive us/ev':>12} {'naive/model':>12}"
    print(head + (f" {'against us/ev':>14} {'against/model':>14}" if other else ""))
    for case in [c for c in ("shared", "disjoint") if c in cases]:
        for n in (int(x) for x in args.sizes.split(",")):
            links, flows = workload(case, n)
            rounds = max(ROUNDS, -(-EVENTS // (2 * n)))
            t0 = time.perf_counter()
            got = model(links, flows, rounds)
            if not args.model_only:
                want = naive(links, flows, rounds)
                worst = max(abs(got[k] - want[k]) / want[k] for k in want)
                if worst > 1e-6:
                    raise SystemExit(f"{case} N={n}: completion times differ from the reference by {worst:.2e}")
            pair = time.perf_counter() - t0
            events = 2 * n * rounds
            reps = args.reps if n <= 100 or case == "disjoint" else max(1, args.reps // 2)
            reps = max(reps, min(MAX_REPS, int(SAMPLE / pair)))  # (short runs: more of them, as noise goes)
            m = n_ = a = float("inf")
            for _ in range(reps):  # interleaved
                m = min(m, best_of(lambda: model(links, flows, rounds), 1))
                if not args.model_only:
                    n_ = min(n_, best_of(lambda: naive(links, flows, rounds), 1))
                if other:
                    a = min(a, best_of(lambda: model(links, flows, rounds, other), 1))
            row = f"{case:10} {n:5d} {events:7d} {m / events * 1e6:12.2f} " + \
                (f"{'-':>12} {'-':>12}" if args.model_only else f"{n_ / events * 1e6:12.2f} {n_ / m:12.2f}")
            print(row + (f" {a / events * 1e6:14.2f} {a / m:14.2f}" if other else ""))
    if "all2all" in cases:
        all_to_all_case(args.reps, args.against)
    return 0


if __name__ == "__main__":
    sys.exit(main())
