"""acl-emu: the CANN ACL runtime's memory APIs, emulated, with a timing model.

    import emu.acl as acl      # pyACL-compatible facade
    from emu import runtime    # the same APIs, Pythonic (values returned, AclError raised)
    emu.configure(product="A3")                      # host clock: API call costs only
    emu.configure(product="A3", host_time="wall")    # ... plus the host's wall time between calls
    emu.configure(records=10_000)                     # keep the last 10,000 task records (None: none)
    emu.install()              # `import acl` now imports the emulator
"""
from __future__ import annotations

import sys

from .constants import MemcpyKind
from .errors import AclError, NotEmulated
from .modeldecl import ModelDeclarationError, declare_model
from .runtime import configure, current

def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("acl-emu")
    except PackageNotFoundError:  # a checkout that was never installed
        return "0+unknown"


__version__ = _version()


def records():
    """The kept completed device tasks of the current run (every one unless `configure(records=...)` bounds
    them), as a numpy structured array (see Runtime.records)."""
    return current().records()


def write_trace(path) -> None:
    """Write the current run as a Chrome / Perfetto trace JSON."""
    current().write_trace(path)


def replay(profile, products=None, measured_on=None, host_memory: str = "as-profiled", **kwargs) -> dict:
    """A profiled step (an msprof timeline, a task_time CSV or MSPTI records) re-timed on each product and compared
    with what was measured (`emu.studies.replay.replay`; `emu.studies.replay_report` draws the result)."""
    from .studies import replay as _replay

    return _replay.replay(profile, products, measured_on, host_memory, **kwargs)


def install() -> None:
    """Make `import acl` (and acl.rt, acl.util, ...) import the emulator's facade."""
    from . import acl

    sys.modules["acl"] = acl
    for name in ("rt", "util", "media", "mdl", "op"):
        sys.modules[f"acl.{name}"] = getattr(acl, name)


__all__ = ["AclError", "MemcpyKind", "ModelDeclarationError", "NotEmulated", "configure", "declare_model", "current", "install", "records", "replay", "write_trace",
           "__version__"]
