"""What a C program's ACL call costs, against the same call from pyACL, in one run.

Run from the repository root:  python benchmarks/capi.py [--calls 20000] [--repeats 5]

Each row is one call measured both ways, interleaved, best of --repeats: a C program (built with
`acl-emu cc`) timing N calls with clock_gettime after a warm-up, and the same N calls through the pyACL
facade in this Python process. The ratio C / pyACL is what the C library adds to (or saves on) a call: the
C program pays the trip into the embedded interpreter and the argument conversion; pyACL pays its own
argument parsing. Prints the date and the machine with the figures (times vary 2x between days here; read
the ratios).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "acl/acl.h"

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    aclrtSetDevice(0);
    void *host, *dev; aclrtStream s;
    aclrtMallocHost(&host, 4096); aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST); aclrtCreateStream(&s);
    for (int i = 0; i < 500; i++) aclrtMemcpy(dev, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE);
    double t0 = now();
    for (int i = 0; i < n; i++) aclrtMemcpy(dev, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE);
    double t1 = now();
    for (int i = 0; i < n; i++) aclrtMemcpyAsync(dev, 64, host, 64, ACL_MEMCPY_HOST_TO_DEVICE, s);
    aclrtSynchronizeStream(s);
    double t2 = now();
    int32_t d;
    for (int i = 0; i < n; i++) aclrtGetDevice(&d);
    double t3 = now();
    printf("%g %g %g\n", (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n);
    return 0;
}
"""


def c_times(exe: Path, n: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    env["ACL_EMU_HOST_TIME"] = "calls"
    out = subprocess.run([str(exe), str(n)], capture_output=True, text=True, check=True, env=env).stdout
    return [float(x) for x in out.split()]


def pyacl_times(n: int) -> list[float]:
    import emu
    emu.configure(product="910B", functional=True, host_time="calls")
    import emu.acl as acl
    acl.rt.set_device(0)
    host, _ = acl.rt.malloc_host(4096)
    dev, _ = acl.rt.malloc(4096, 0)
    s, _ = acl.rt.create_stream()
    memcpy, memcpy_async, get_device = acl.rt.memcpy, acl.rt.memcpy_async, acl.rt.get_device
    for _ in range(500):
        memcpy(dev, 64, host, 64, 1)
    t0 = time.perf_counter()
    for _ in range(n):
        memcpy(dev, 64, host, 64, 1)
    t1 = time.perf_counter()
    for _ in range(n):
        memcpy_async(dev, 64, host, 64, 1, s)
    acl.rt.synchronize_stream(s)
    t2 = time.perf_counter()
    for _ in range(n):
        get_device()
    t3 = time.perf_counter()
    return [(t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from emu.capi import commands
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "calls.c", Path(tmp) / "calls"
        src.write_text(PROGRAM)
        if commands.compile_command("cc", [str(src), "-O2", "-o", str(exe)]) != 0:
            sys.exit("building the benchmark program failed")
        best_c, best_py = [float("inf")] * 3, [float("inf")] * 3
        for _ in range(args.repeats):  # interleaved: a slow moment of the machine hits both sides
            best_c = [min(a, b) for a, b in zip(best_c, c_times(exe, args.calls))]
            best_py = [min(a, b) for a, b in zip(best_py, pyacl_times(args.calls))]
    print(f"{datetime.date.today()} on {platform.node()} ({platform.machine()}, {os.cpu_count()} cores), "
          f"{args.calls} calls, best of {args.repeats}")
    print(f"{'call':40} {'C us':>8} {'pyACL us':>9} {'C/pyACL':>8}")
    for name, c, py in zip(("aclrtMemcpy 64 B H2D (blocking)", "aclrtMemcpyAsync 64 B H2D (queued)",
                            "aclrtGetDevice"), best_c, best_py):
        print(f"{name:40} {c * 1e6:8.2f} {py * 1e6:9.2f} {c / py:8.2f}")


if __name__ == "__main__":
    main()
