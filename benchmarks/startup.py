"""Cold start of `acl-emu --help`, as a multiple of `python -c "import numpy"`.

Run from the repository root:  python benchmarks/startup.py [--runs N]

Each command runs in a fresh process, the commands taking turns (interleaved),
best of N wall times each.  `acl-emu --help` is the console script installed
next to this interpreter when there is one, else `python -m emu --help`.  For
reference, also a bare interpreter and the first functional copy, which is where
Numba is imported and the kernels load (from Numba's on-disk cache once warm).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_FIRST_COPY = ("import numpy as np; from emu import kernels; "
               "a = np.zeros(4096, np.uint8); kernels.copy(a, np.ones(4096, np.uint8)); assert a.all()")


def cli_command():
    script = os.path.join(os.path.dirname(sys.executable), "acl-emu")
    if os.path.exists(script):
        return [script, "--help"], "acl-emu --help"
    return [sys.executable, "-m", "emu", "--help"], "python -m emu --help"


def commands():
    cli, cli_label = cli_command()
    return [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ('python -c "import numpy"', [sys.executable, "-c", "import numpy"]),
        (cli_label, cli),
        ("import emu + first copy", [sys.executable, "-c", _FIRST_COPY]),
    ]


def measure(runs=5):
    """Best wall seconds of `runs` fresh processes per command, interleaved: {label: seconds}."""
    cmds = commands()
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for _, argv in cmds:  # warm the OS file cache (and Numba's on-disk cache)
        subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    best = {label: float("inf") for label, _ in cmds}
    for i in range(runs):
        order = cmds if i % 2 == 0 else cmds[::-1]
        for label, argv in order:
            t0 = time.perf_counter()
            subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)
            best[label] = min(best[label], time.perf_counter() - t0)
    return best


def report(runs=5):
    """The cold-start lines, ready to print."""
    best = measure(runs)
    base = best['python -c "import numpy"']
    cli_label = cli_command()[1]
    lines = [f"cold start, best of {runs} fresh processes each, interleaved:"]
    for label, seconds in best.items():
        lines.append(f"  {label:<28} {seconds * 1e3:8.1f} ms  {seconds / base:5.2f}x import numpy")
    lines.append(f"{cli_label} cold start: {best[cli_label] / base:.2f}x python -c \"import numpy\"")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="fresh processes per command (best is kept)")
    args = ap.parse_args()
    print(report(args.runs))


if __name__ == "__main__":
    main()
