"""Instructions per copy, counted by valgrind's callgrind: a measure the machine's noise does not move.

Run from the repository root:  python benchmarks/instructions.py [--copies 4000] [--cases headline,small,batch,all2all]
                                                                  [--against TREE]

Cases:
  headline: benchmarks/model.py's headline workload (timing-only async 4 KiB H2D copies over 4 streams, then
            synchronize), split into queueing (the API calls alone) and the whole; and the same simpy loop
            baseline. Each figure is (instructions with N copies - instructions with 0) / N.
  small:    a blocking 64 B H2D `acl.rt.memcpy` through the facade (benchmarks/small_calls.py's first row),
            functional: (instructions with 4N calls - with N) / 3N, after 300 calls of warm-up.
  batch:    an acl.rt.memcpy_batch of 64 entries of 64 KiB, page-locked host to device, functional (the bytes
            included) against a loop of np.copyto over the same slices, and timing-only (the call without its
            bytes): (4N calls - N) / 3N, N = copies / 100.
  all2all:  benchmarks/network.py's case (c), the Atlas A3 all-to-all (240 copies of 16 MiB), its timed part
            (the copies queued, then every device synchronized): (three runs - one run) / 2 / 240.
Each count runs in a process of its own, gc off, PYTHONHASHSEED=0 and OPENBLAS_NUM_THREADS=1 (what is left
varies by about 1%). --against TREE counts TREE's emulator too (a checkout with emu/models, emu/configs and
emu/validation linked, as for benchmarks/network.py). Needs valgrind. Instructions are not time: code that
runs many instructions a cycle (numpy's loops) gains less from fewer of them than interpreted code does.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKLOAD = """
import gc, sys
sys.path.insert(0, {root!r})
gc.disable()
import emu
n, sync = int(sys.argv[1]), sys.argv[2] == "sync"
rt = emu.configure(product="910B", functional=False)
rt.set_device(0)
streams = [rt.create_stream() for _ in range(4)]
host, dev = rt.malloc_host(4096 * 4), rt.malloc(4096 * 4)
copy = rt.memcpy_async
for i in range(200):  # warm up every path once
    copy(dev + (i % 4) * 4096, 4096, host + (i % 4) * 4096, 4096, 1, streams[i % 4])
rt.synchronize_device()
for i in range(n):
    k = i % 4
    copy(dev + k * 4096, 4096, host + k * 4096, 4096, 1, streams[k])
if sync:
    rt.synchronize_device()
"""

SIMPY_LOOP = """
import gc, sys
gc.disable()
import simpy
n = int(sys.argv[1])
env = simpy.Environment()
engines = simpy.Resource(env, capacity=4)
def stream(k):
    for _ in range(k):
        with engines.request() as req:
            yield req
            yield env.timeout(2e-6)
for _ in range(4):
    env.process(stream(n // 4))
env.run()
"""


SMALL_CALL = """
import gc, sys
sys.path.insert(0, {root!r})
gc.disable()
import emu, emu.acl as acl
emu.configure("910B", functional=True)
acl.init()
acl.rt.set_device(0)
host, _ = acl.rt.malloc_host(65536)
dev, _ = acl.rt.malloc(65536, 0)
memcpy = acl.rt.memcpy
if memcpy(dev, 64, host, 64, 1) != 0:
    raise SystemExit("acl.rt.memcpy of 64 B did not return 0: nothing to count")
for _ in range(300 + int(sys.argv[1])):
    memcpy(dev, 64, host, 64, 1)
"""

BATCH_CALL = """
import gc, sys
sys.path.insert(0, {root!r})
gc.disable()
import emu, emu.acl as acl
emu.configure("910B", functional=sys.argv[2] == "functional")
acl.init()
acl.rt.set_device(0)
E, N = 64 << 10, 64
host, _ = acl.rt.malloc_host(E * N)
dev, _ = acl.rt.malloc(E * N, 0)
attr = {{"dst_loc": {{"type": 1, "id": 0}}, "src_loc": {{"type": 0, "id": 0}}, "rsv": bytes(16)}}
args = ([dev + i * E for i in range(N)], [E] * N, [host + i * E for i in range(N)], [E] * N, N, [attr], [0], 1)
if acl.rt.memcpy_batch(*args)[1] != 0:
    raise SystemExit("acl.rt.memcpy_batch did not return 0: nothing to count")
for _ in range(30 + int(sys.argv[1])):
    acl.rt.memcpy_batch(*args)
"""

COPYTO_LOOP = """
import gc, sys
gc.disable()
import numpy as np
E, N = 64 << 10, 64
src, dst = np.ones(E * N, np.uint8), np.zeros(E * N, np.uint8)
for _ in range(30 + int(sys.argv[1])):
    for i in range(N):
        np.copyto(dst[i * E:(i + 1) * E], src[i * E:(i + 1) * E])
"""

ALL_TO_ALL = """
import gc, sys
sys.path.insert(0, {benchmarks!r})
from network import AllToAll  # benchmarks/network.py's case (c), on the emu first on the path
sys.path.insert(0, {root!r})
gc.disable()
warm = AllToAll()  # warm up every path once
warm.queue()
warm.synchronize()
runs = int(sys.argv[1])
for i in range(3):  # as many setups in every process; the timed part `runs` times
    program = AllToAll()
    if i < runs:
        program.queue()
        program.synchronize()
"""


def instructions(script: str, *args: str) -> int:
    """Instructions callgrind counts for `python script args`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        # (OpenBLAS's idle worker threads move the count by thousands from run to run: one thread)
        env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1")
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, script,
                              *args], capture_output=True, text=True, env=env)
        if run.returncode:
            raise RuntimeError(f"{script} {' '.join(args)} failed under callgrind:\n" + run.stderr[-2000:])
        with open(out) as f:
            for line in f:
                if line.startswith("summary:"):
                    return int(line.split()[1])
    raise RuntimeError(f"callgrind wrote no summary for {script}")


def per_copy(script: str, n: int, *args: str) -> float:
    return (instructions(script, str(n), *args) - instructions(script, "0", *args)) / n


def write(tmp: str, name: str, text: str) -> str:
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def headline(tmp: str, trees: list, copies: int) -> None:
    base = per_copy(write(tmp, "simpy_loop.py", SIMPY_LOOP), copies)
    print(f"{'headline':34} {'queue':>10} {'total':>10} {'x simpy loop':>13}")
    for i, (name, root) in enumerate(trees):
        script = write(tmp, f"headline_{i}.py", WORKLOAD.format(root=root))
        queue, total = per_copy(script, copies, "queue"), per_copy(script, copies, "sync")
        print(f"{name[:34]:34} {queue:10.0f} {total:10.0f} {total / base:13.2f}")
    print(f"{'simpy loop (request + timeout)':34} {'':>10} {base:10.0f} {1.0:13.2f}")
    print(f"instructions per async 4 KiB H2D copy over 4 streams, {copies} copies minus none")


def small(tmp: str, trees: list, copies: int) -> None:
    n = max(copies // 4, 1)
    print(f"{'small (64 B acl.rt.memcpy H2D)':34} {'per call':>10}")
    for i, (name, root) in enumerate(trees):
        script = write(tmp, f"small_{i}.py", SMALL_CALL.format(root=root))
        got = (instructions(script, str(4 * n)) - instructions(script, str(n))) / (3 * n)
        print(f"{name[:34]:34} {got:10.0f}")
    print(f"instructions per blocking 64 B acl.rt.memcpy through the facade, {4 * n} calls minus {n}")


def all2all(tmp: str, trees: list, _copies: int) -> None:
    print(f"{'all2all (A3, 240 x 16 MiB)':34} {'per copy':>10}")
    for i, (name, root) in enumerate(trees):
        text = ALL_TO_ALL.format(benchmarks=os.path.join(REPO, "benchmarks"), root=root)
        script = write(tmp, f"all2all_{i}.py", text)
        got = (instructions(script, "3") - instructions(script, "1")) / 2 / 240
        print(f"{name[:34]:34} {got:10.0f}")
    print("instructions per copy of the all-to-all's timed part (queue, then synchronize), three runs minus one")


def batch(tmp: str, trees: list, copies: int) -> None:
    n = max(copies // 100, 1)
    loop = write(tmp, "copyto_loop.py", COPYTO_LOOP)
    base = (instructions(loop, str(4 * n)) - instructions(loop, str(n))) / (3 * n)
    print(f"{'batch (64 x 64 KiB memcpy_batch)':34} {'per batch':>10} {'x copyto loop':>14} {'timing-only':>12}")
    for i, (name, root) in enumerate(trees):
        script = write(tmp, f"batch_{i}.py", BATCH_CALL.format(root=root))
        got, bare = ((instructions(script, str(4 * n), mode) - instructions(script, str(n), mode)) / (3 * n)
                     for mode in ("functional", "timing-only"))
        print(f"{name[:34]:34} {got:10.0f} {got / base:14.2f} {bare:12.0f}")
    print(f"{'np.copyto loop over the same slices':34} {base:10.0f} {1.0:14.2f}")
    print(f"instructions per acl.rt.memcpy_batch (page-locked host to device): functional, the bytes included; "
          f"timing-only, the call without them; {4 * n} calls minus {n}")


CASES = {"headline": headline, "small": small, "all2all": all2all, "batch": batch}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=4000)
    ap.add_argument("--cases", default="headline,small,batch,all2all", help="which cases to count (comma-separated)")
    ap.add_argument("--against", metavar="TREE", help="another checkout to count the same way")
    args = ap.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r}: the cases are {', '.join(CASES)}")
    if shutil.which("valgrind") is None:
        print("benchmarks/instructions.py needs valgrind (callgrind): install it, or use benchmarks/model.py")
        return 2
    trees = [("this tree", REPO)] + ([(args.against, os.path.abspath(args.against))] if args.against else [])
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases):
            if i:
                print()
            CASES[case](tmp, trees, args.copies)
    print("(callgrind, gc off, PYTHONHASHSEED=0, OPENBLAS_NUM_THREADS=1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
