"""The sanitizer: hazards of ACL host code that only show on a busy NPU, found in an emulated run.

    emu.configure(sanitize=True)              # or "race,host,init", any of them
    ... run the program ...
    print(emu.current().sanitizer.report())    # or acl-emu run --sanitize script.py

Checks (compute-sanitizer's racecheck, memcheck, initcheck and synccheck, for the ACL runtime):
- race: accesses to overlapping bytes, at least one a write, that no happens-before edge orders (stream order,
  event record / wait, synchronize, callbacks, blocking calls, a thread's start and join, a ThreadPoolExecutor
  task's submit and result), across streams, devices and host threads, and between the entries of one batch
  copy; 2-D copies row by row at any height;
- host: the host and queued work: reading a destination or writing a source before the copy is known complete,
  a copy's source changed before a host thread waited for the copy (fingerprints at the enqueue and at that
  wait, functional mode), freeing or unregistering memory queued work uses, using freed memory, a call reaching
  past the end of its buffer, destroying a stream or releasing a device with work pending, waiting on an event
  never recorded;
- init: device bytes read (a copy's source, a kernel argument declared read) that nothing wrote.

The runtime calls the sanitizer's hooks (checker.Sanitizer) when one is configured; otherwise nothing is
checked and nothing costs. Layout: clocks.py (vector clocks), ranges.py (accesses per allocation, by byte
range), fingerprint.py (source fingerprints), sites.py (the user's file:line), checker.py (the hooks and the
checks), threads.py (the edges of the program's threads), report.py (text, JSON and the trace's arrows).
"""
from __future__ import annotations

from .checker import TOOLS, Sanitizer, parse_tools
from .report import Finding


class SanitizerError(AssertionError):
    """The sanitizer found hazards (`findings`); the message is the report."""

    def __init__(self, report: str, findings: list):
        super().__init__(report)
        self.findings = findings


def check(runtime) -> None:
    """Run the runtime's queued work to its end and raise SanitizerError with the report if the sanitizer found
    anything (a no-op when the runtime has no sanitizer)."""
    san = runtime.sanitizer
    if san is None:
        return
    if san.finish():
        raise SanitizerError(san.report(), list(san.findings))


__all__ = ["TOOLS", "Finding", "Sanitizer", "SanitizerError", "check", "parse_tools"]
