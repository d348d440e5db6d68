"""The walk of one call through the emulator: which functions of emu/ and models/ a pyACL
`acl.rt.memcpy_async` (functional, 64 KiB H2D from page-locked memory) and the
`acl.rt.synchronize_stream` that runs it call, in order, with the files they are in.

Run from the repository root:  python benchmarks/walk.py [--list]

Prints the number of calls (frames entered), distinct functions and files, and how often the walk
changes file; --list prints every call.
"""
from __future__ import annotations

import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import emu  # noqa: E402
import emu.acl as acl  # noqa: E402

N = 64 << 10
OURS = (os.path.join(REPO, "emu"), os.path.join(REPO, "models"))


def walk(fn) -> list[tuple[str, str, int]]:
    """(file, function, depth) of every call into the project's code while fn() runs."""
    calls, depth = [], [0]

    def hook(frame, event, arg):
        if event == "call":
            depth[0] += 1
            path = frame.f_code.co_filename
            if path.startswith(OURS):
                calls.append((os.path.relpath(path, REPO), frame.f_code.co_qualname, depth[0]))
        elif event == "return":
            depth[0] -= 1

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def main() -> int:
    emu.configure("910B", functional=True)
    acl.init()
    acl.rt.set_device(0)
    stream, _ = acl.rt.create_stream()
    host, _ = acl.rt.malloc_host(N)
    dev, _ = acl.rt.malloc(N, 0)
    for _ in range(3):  # warm: kernels compiled, paths cached
        acl.rt.memcpy_async(dev, N, host, N, 1, stream)
        acl.rt.synchronize_stream(stream)
    for label, fn in (("memcpy_async", lambda: acl.rt.memcpy_async(dev, N, host, N, 1, stream)),
                      ("synchronize_stream", lambda: acl.rt.synchronize_stream(stream))):
        calls = walk(fn)
        files = [f for f, _, _ in calls]
        changes = sum(1 for a, b in zip(files, files[1:]) if a != b)
        print(f"{label}: {len(calls)} calls, {len({(f, q) for f, q, _ in calls})} functions, "
              f"{len(set(files))} files, {changes} file changes, deepest {max(d for _, _, d in calls)} frames")
        if "--list" in sys.argv:
            for f, q, d in calls:
                print(f"  {'  ' * (d - 1)}{q}  ({f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
