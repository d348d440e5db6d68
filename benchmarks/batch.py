"""Batch copies: host time per entry of aclrtMemcpyBatch and aclrtMemcpyBatchAsync (functional, page-locked host
memory to device 0), against a Python loop of np.copyto over the same slices, and against the code before the
batch copies were done in bulk.

Run from the repository root:  python benchmarks/batch.py [--reps N] [--base REV | --no-base]

Cases: 4096 entries of 64 B (sync, async), 64 entries of 64 KiB (sync, async). A sync measurement is one
rt.memcpy_batch call; an async one is rt.memcpy_batch_async and the rt.synchronize_stream that runs it. Each
round measures every case (ours, the np.copyto loop, the old code) one after the other, interleaved; the
figure is the best over --reps rounds (each the best of a few calls) of time.process_time.

The old code: the tree of REV (by default the parent of the commit that added this file; HEAD while it is
not committed), taken with `git archive` into a temporary folder (models, configs and validation linked
into its emu/ as the installed package has them), run in a child process that imports emu from there.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = sys.argv[sys.argv.index("--emu-root") + 1] if "--emu-root" in sys.argv else REPO
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import emu  # noqa: E402
import emu.models  # noqa: E402

CASES = [("sync", 4096, 64), ("async", 4096, 64), ("sync", 64, 64 << 10), ("async", 64, 64 << 10)]
INNER = 3  # calls per round and case: a round's figure is the best of them
H2D_ATTR = {"dst_loc": {"type": 1, "id": 0}, "src_loc": {"type": 0, "id": 0}, "rsv": bytes(16)}


class Case:
    """One batch (mode, k entries of n bytes) on a fresh runtime: `ours()` runs it, `baseline()` copies the
    same slices with np.copyto, one call per entry."""

    def __init__(self, mode: str, k: int, n: int):
        self.mode, self.k, self.n = mode, k, n
        self.rt = rt = emu.configure("910B", functional=True)
        rt.set_device(0)
        self.host, self.dev = rt.malloc_host(k * n), rt.malloc(k * n)
        self.dsts = [self.dev + i * n for i in range(k)]
        self.srcs = [self.host + i * n for i in range(k)]
        self.sizes = [n] * k
        self.stream = rt.create_stream()
        self.hbuf = rt.space.resolve(self.host, k * n)[0].view(0, k * n)
        self.hbuf[:] = np.random.default_rng(0).integers(0, 256, k * n, dtype=np.uint8)
        self.dbuf = rt.space.resolve(self.dev, k * n)[0].buffer()
        self.ours()
        assert np.array_equal(self.dbuf[:k * n], self.hbuf), "the batch did not copy"

    def ours(self) -> None:
        rt, k = self.rt, self.k
        if self.mode == "sync":
            rt.memcpy_batch(self.dsts, self.sizes, self.srcs, self.sizes, k, [H2D_ATTR], [0], 1)
        else:
            rt.memcpy_batch_async(self.dsts, self.sizes, self.srcs, self.sizes, k, [H2D_ATTR], [0], 1, self.stream)
            rt.synchronize_stream(self.stream)

    def baseline(self) -> None:
        d, h, n = self.dbuf, self.hbuf, self.n
        for off in range(0, self.k * n, n):
            np.copyto(d[off:off + n], h[off:off + n])


def best_call(fn) -> float:
    """The least process time of INNER calls of fn."""
    best = float("inf")
    for _ in range(INNER):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


# -- the old code, in a child process ----------------------------------------------------------------------

def serve() -> int:
    """The child: build every case, then for each line read ("ours" or "baseline", a case index) print the
    best call time; first a line naming where emu and emu.models came from."""
    cases = [Case(*c) for c in CASES]
    print(json.dumps({"emu": emu.__file__, "models": emu.models.__file__}), flush=True)
    for line in sys.stdin:
        what, i = json.loads(line)
        print(json.dumps(best_call(getattr(cases[i], what))), flush=True)
    return 0


def base_revision(rev: str | None) -> str:
    if rev:
        return rev
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", "benchmarks/batch.py"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return f"{added[-1]}^" if added else "HEAD"


class OldCode:
    """The child process running the cases on the tree of `rev`."""

    def __init__(self, rev: str, folder: str):
        self.rev = rev
        root = os.path.join(folder, "base-batch")
        archive = subprocess.run(["git", "archive", rev, "--prefix=base-batch/"], cwd=REPO, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        for name in ("models", "configs", "validation"):
            os.symlink(os.path.join("..", name), os.path.join(root, "emu", name))
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", "--emu-root", root],
                                     cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        where = json.loads(self.proc.stdout.readline())
        if not (where["emu"].startswith(root) and where["models"].startswith(root)):
            raise RuntimeError(f"the old code's child imported {where}, not the tree in {root}")

    def time(self, i: int) -> float:
        self.proc.stdin.write(json.dumps(["ours", i]) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=7, help="rounds (>= 5); each case's figure is its best round")
    p.add_argument("--base", default=None, help="the revision whose code is the old figure")
    p.add_argument("--no-base", action="store_true", help="skip the old code")
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--emu-root", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.serve:
        return serve()
    if not emu.__file__.startswith(REPO):
        raise RuntimeError(f"emu imported from {emu.__file__}, not from {REPO}")
    reps = max(args.reps, 5)
    cases = [Case(*c) for c in CASES]
    with tempfile.TemporaryDirectory() as folder:
        old = None if args.no_base else OldCode(base_revision(args.base), folder)
        best = {name: [float("inf")] * len(CASES) for name in ("ours", "baseline", "old")}
        for _ in range(reps):
            for i, case in enumerate(cases):
                best["ours"][i] = min(best["ours"][i], best_call(case.ours))
                best["baseline"][i] = min(best["baseline"][i], best_call(case.baseline))
                if old is not None:
                    best["old"][i] = min(best["old"][i], old.time(i))
        if old is not None:
            old.close()
    print(f"batch copies, host time per entry (best of {reps} interleaved rounds, time.process_time); "
          f"old code: {'-' if old is None else old.rev}")
    print(f"{'case':22} {'ours us':>9} {'np.copyto us':>13} {'old us':>9} {'ours/np.copyto':>15} {'old/ours':>9}")
    for i, (mode, k, n) in enumerate(CASES):
        ours, base, was = (best[name][i] / k * 1e6 for name in ("ours", "baseline", "old"))
        label = f"{mode} {k} x {n // 1024} KiB" if n >= 1024 else f"{mode} {k} x {n} B"
        was_col, ratio = (f"{was:9.3f}", f"{was / ours:9.1f}") if old is not None else (f"{'-':>9}", f"{'-':>9}")
        print(f"{label:22} {ours:9.3f} {base:13.3f} {was_col} {ours / base:15.2f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
