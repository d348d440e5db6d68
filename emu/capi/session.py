"""A C program's run on the emulator: set up at its first ACL call, summarised at its exit.

`acl-emu run ./prog` passes its options in the environment ($ACL_EMU_NATIVE_RUN, JSON: `settings`); the
program's library configures the runtime from them (as `acl-emu run script.py` does for a script) and, when
the program exits, writes the summary, the trace, the msprof timeline and the sanitizer's findings, and
leaves the summary as JSON where `acl-emu run` reads it to print. A program started without `acl-emu run`
runs on the product of $ACL_EMU_PRODUCT (default 910B), functional, and writes nothing at its exit.

Either way the runtime takes the program's own memory as pageable host memory at its real addresses, and
threads Python does not know yet as the program's.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..sanitize import sites as sanitize_sites
from . import sites as c_sites

ENV = "ACL_EMU_NATIVE_RUN"
_started: dict = {}


def settings() -> dict | None:
    """What `acl-emu run` asked for: product, host_time, host_time_scale, sanitize, out, msprof, result (the
    path of the summary JSON), program; None when the program was not started by it."""
    text = os.environ.get(ENV)
    if not text:
        return None
    try:
        spec = json.loads(text)
    except ValueError:
        print(f"acl-emu: ${ENV} is not JSON; running with the defaults", file=sys.stderr)
        return None
    return spec if isinstance(spec, dict) else None


def start() -> None:
    """Configure the runtime for the program (once)."""
    if _started:
        return
    import emu

    spec = settings()
    _started["spec"] = spec
    if spec is not None:  # what `acl-emu run` resolved: the product's path, the host time, the checks
        emu.configure(product=spec.get("product"), host_time=spec.get("host_time"),
                      host_time_scale=spec.get("host_time_scale"), sanitize=spec.get("sanitize"))
    rt = emu.current()
    rt.space.adopt_raw_host = True  # the program's own memory is pageable host memory at its addresses
    rt.foreign_threads = True  # its pthreads are Python's from their first call
    sanitize_sites.foreign = c_sites.site  # the sanitizer's reports name the program's file:line


def finish() -> None:
    """At the program's exit: the run's results, when `acl-emu run` started it."""
    spec = _started.get("spec")
    if spec is None:
        return
    import emu
    from ..studies.runsummary import run_result

    rt = emu.current()
    out = spec.get("out")
    result = run_result(rt, Path(out) if out else None, spec.get("program"), msprof=spec.get("msprof"))
    if rt.sanitizer is not None:  # (the report as text: `acl-emu run` prints it, with no sanitizer of its own)
        result["sanitizer_report"] = rt.sanitizer.report()
        result["sanitizer_findings"] = len(rt.sanitizer.findings)
    if spec.get("result"):
        from emu.models.atomic import atomic_write
        with atomic_write(spec["result"]) as f:
            json.dump(result, f)
