"""Instructions per async copy, counted by valgrind's callgrind: a measure the machine's noise does not move.

Run from the repository root:  python benchmarks/instructions.py [--copies 4000] [--against TREE]

Rows: benchmarks/model.py's headline workload (timing-only async 4 KiB H2D copies over 4 streams, then
synchronize), split into queueing (the API calls alone) and the whole; and the same simpy loop baseline.
Each figure is (instructions with N copies - instructions with 0) / N, in one process each, gc off and
PYTHONHASHSEED=0 and OPENBLAS_NUM_THREADS=1 (what is left varies by about 1%). --against TREE counts TREE's emulator too (a checkout
with emu/models, emu/configs and emu/validation linked, as for benchmarks/network.py). Needs valgrind.
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


def instructions(script: str, *args: str) -> int:
    """Instructions callgrind counts for `python script args`."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        # (OpenBLAS's idle worker threads move the count by thousands from run to run: one thread)
        env = dict(os.environ, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, script,
                        *args], check=True, capture_output=True, env=env)
        with open(out) as f:
            for line in f:
                if line.startswith("summary:"):
                    return int(line.split()[1])
    raise RuntimeError(f"callgrind wrote no summary for {script}")


def per_copy(script: str, n: int, *args: str) -> float:
    return (instructions(script, str(n), *args) - instructions(script, "0", *args)) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=4000)
    ap.add_argument("--against", metavar="TREE", help="another checkout to count the same way")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("benchmarks/instructions.py needs valgrind (callgrind): install it, or use benchmarks/model.py")
        return 2
    trees = [("this tree", REPO)] + ([(args.against, os.path.abspath(args.against))] if args.against else [])
    with tempfile.TemporaryDirectory() as tmp:
        loop = os.path.join(tmp, "simpy_loop.py")
        with open(loop, "w") as f:
            f.write(SIMPY_LOOP)
        base = per_copy(loop, args.copies)
        print(f"{'workload':34} {'queue':>10} {'total':>10} {'x simpy loop':>13}")
        for i, (name, root) in enumerate(trees):
            script = os.path.join(tmp, f"workload_{i}.py")
            with open(script, "w") as f:
                f.write(WORKLOAD.format(root=root))
            queue, total = per_copy(script, args.copies, "queue"), per_copy(script, args.copies, "sync")
            print(f"{name[:34]:34} {queue:10.0f} {total:10.0f} {total / base:13.2f}")
        print(f"{'simpy loop (request + timeout)':34} {'':>10} {base:10.0f} {1.0:13.2f}")
    print(f"instructions per async 4 KiB H2D copy over 4 streams, {args.copies} copies minus none "
          f"(callgrind, gc off, PYTHONHASHSEED=0, OPENBLAS_NUM_THREADS=1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
