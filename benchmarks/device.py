"""Device code on the CPU: the host cost of one kernel launch, and vector adds against numpy doing the same add.

Run from the repository root:  python benchmarks/device.py [--reps 5] [--launches 2000]

A C++ program built with `acl-emu c++` (a kernel library of two kernels, as the runtime's examples build theirs)
measures, with the thread's CPU clock around the calls:

- launch: an empty kernel of one block launched --launches times on a stream, then one synchronize; host CPU
  microseconds per launch (the launch call, its task, and its block run when the synchronize runs the stream),
  against the same loop of a bare function call (the floor);
- add 16 K halves over 8 blocks, double-buffered (TPipe, TQue, DataCopy, Add: the examples' add_custom), and add
  1 M floats over 8 blocks: the kernel's own run (launch to synchronize), against numpy adding the same arrays
  (np.add into a preallocated array) in this process.

Each figure is the best of --reps runs, the program and numpy interleaved; ratios only compare within one run.
Prints the date and the machine first.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from emu.capi import commands  # noqa: E402

KERNELS = r'''
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void empty() {}
template <typename T, int32_t TILE> class Adder {
public:
    __aicore__ inline void Run(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t total) {
        uint32_t per = total / GetBlockNum(), base = per * GetBlockIdx();
        xg.SetGlobalBuffer((__gm__ T *)x + base, per); yg.SetGlobalBuffer((__gm__ T *)y + base, per);
        zg.SetGlobalBuffer((__gm__ T *)z + base, per);
        pipe.InitBuffer(qx, 2, TILE * sizeof(T)); pipe.InitBuffer(qy, 2, TILE * sizeof(T));
        pipe.InitBuffer(qz, 2, TILE * sizeof(T));
        for (uint32_t at = 0; at < per; at += TILE) {
            LocalTensor<T> a = qx.AllocTensor<T>(), b = qy.AllocTensor<T>();
            DataCopy(a, xg[at], TILE); DataCopy(b, yg[at], TILE);
            qx.EnQue(a); qy.EnQue(b);
            a = qx.DeQue<T>(); b = qy.DeQue<T>();
            LocalTensor<T> c = qz.AllocTensor<T>();
            Add(c, a, b, TILE);
            qz.EnQue(c); qx.FreeTensor(a); qy.FreeTensor(b);
            c = qz.DeQue<T>();
            DataCopy(zg[at], c, TILE);
            qz.FreeTensor(c);
        }
    }
private:
    TPipe pipe;
    TQue<QuePosition::VECIN, 2> qx, qy;
    TQue<QuePosition::VECOUT, 2> qz;
    GlobalTensor<T> xg, yg, zg;
};
extern "C" __global__ __aicore__ void add_half(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n)
{ Adder<half, 128> op; op.Run(x, y, z, n); }
extern "C" __global__ __aicore__ void add_float(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n)
{ Adder<float, 8192> op; op.Run(x, y, z, n); }
void Empty(void *s) { empty<<<1, nullptr, s>>>(); }
void AddHalf(void *s, void *x, void *y, void *z, uint32_t n)
{ add_half<<<8, nullptr, s>>>((uint8_t *)x, (uint8_t *)y, (uint8_t *)z, n); }
void AddFloat(void *s, void *x, void *y, void *z, uint32_t n)
{ add_float<<<8, nullptr, s>>>((uint8_t *)x, (uint8_t *)y, (uint8_t *)z, n); }
'''

MAIN = r'''
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include "acl/acl.h"
void Empty(void *s);
void AddHalf(void *s, void *x, void *y, void *z, uint32_t n);
void AddFloat(void *s, void *x, void *y, void *z, uint32_t n);
__attribute__((noinline)) void bare(void *s) { asm volatile("" : : "r"(s) : "memory"); }
static double cpu_us() { timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static void *dev(size_t n) { void *p; aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST); aclrtMemset(p, n, 1, n); return p; }
int main(int argc, char **argv) {
    int launches = atoi(argv[1]);
    aclInit(nullptr); aclrtSetDevice(0);
    aclrtStream s; aclrtCreateStream(&s);
    Empty(s); aclrtSynchronizeStream(s);  /* (the first launch loads what the others reuse) */
    double t = cpu_us();
    for (int i = 0; i < launches; i++) Empty(s);
    aclrtSynchronizeStream(s);
    double launch = (cpu_us() - t) / launches;
    t = cpu_us();
    for (int i = 0; i < launches; i++) bare(s);
    double floor_ = (cpu_us() - t) / launches;
    const uint32_t nh = 16384, nf = 1 << 20;
    void *hx = dev(nh * 2), *hy = dev(nh * 2), *hz = dev(nh * 2);
    void *fx = dev(nf * 4), *fy = dev(nf * 4), *fz = dev(nf * 4);
    AddHalf(s, hx, hy, hz, nh); AddFloat(s, fx, fy, fz, nf); aclrtSynchronizeStream(s);
    t = cpu_us(); AddHalf(s, hx, hy, hz, nh); aclrtSynchronizeStream(s); double half_us = cpu_us() - t;
    t = cpu_us(); AddFloat(s, fx, fy, fz, nf); aclrtSynchronizeStream(s); double float_us = cpu_us() - t;
    printf("%f %f %f %f\n", launch, floor_, half_us, float_us);
    return 0;
}
'''


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
                 platform.processor())
    return f"{model}, {os.cpu_count()} cores, CPython {platform.python_version()}, numpy {np.__version__}"


def numpy_add(n: int, dtype, reps: int = 20) -> float:
    """Microseconds of np.add of two n-element arrays into a third (best of reps)."""
    x, y, z = np.ones(n, dtype), np.ones(n, dtype), np.empty(n, dtype)
    best = float("inf")
    for _ in range(reps):
        t = time.thread_time_ns()
        np.add(x, y, out=z)
        best = min(best, (time.thread_time_ns() - t) / 1e3)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--launches", type=int, default=2000)
    args = ap.parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {machine()}")
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        (work / "kernels.cpp").write_text(KERNELS)
        (work / "main.cpp").write_text(MAIN)
        exe = work / "bench"
        if commands.compile_command("c++", [str(work / "main.cpp"), str(work / "kernels.cpp"), "-O2", "-o",
                                            str(exe)]) != 0:
            return 1
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
        best = {k: float("inf") for k in ("launch", "floor", "half", "float", "np_half", "np_float")}
        for _ in range(args.reps):
            out = subprocess.run([str(exe), str(args.launches)], capture_output=True, text=True, env=env, check=True)
            launch, floor_, half_us, float_us = map(float, out.stdout.split())
            best.update(launch=min(best["launch"], launch), floor=min(best["floor"], floor_),
                        half=min(best["half"], half_us), float=min(best["float"], float_us))
            best["np_half"] = min(best["np_half"], numpy_add(16384, np.float16))
            best["np_float"] = min(best["np_float"], numpy_add(1 << 20, np.float32))
    print(f"host CPU microseconds, best of {args.reps} interleaved runs")
    print(f"launch of an empty kernel (1 block), per launch: {best['launch']:.1f} us "
          f"(a bare call: {best['floor'] * 1e3:.1f} ns; target: at most 50 us)")
    print(f"add 16 K halves, 8 blocks, double-buffered: {best['half']:.1f} us, numpy {best['np_half']:.1f} us, "
          f"{best['half'] / best['np_half']:.1f}x")
    print(f"add 1 M floats, 8 blocks: {best['float']:.1f} us, numpy {best['np_float']:.1f} us, "
          f"{best['float'] / best['np_float']:.2f}x (target: within 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
