"""acl-emu: the CANN ACL runtime's memory APIs, emulated, with a timing model.

    import emu.acl as acl      # pyACL-compatible facade
    from emu import runtime    # the same APIs, Pythonic (values returned, AclError raised)
    emu.configure(product="A3")                      # host clock: API call costs only
    emu.configure(product="A3", host_time="wall")    # ... plus the host's wall time between calls
    emu.configure(records=10_000)                     # keep the last 10,000 task records (None: none)
    emu.install()              # `import acl` now imports the emulator

Importing `emu` is light: it loads only `emu.constants` and `emu.errors` (the pytest plugin, a module of this
package, is loaded in every pytest run of an environment that has acl-emu installed). The runtime (numpy,
simpy, the product configs) is imported on the first use of a name that needs it: `configure` and `current`
are `emu.runtime`'s own functions, `declare_model` and `ModelDeclarationError` `emu.modeldecl`'s, each
imported by `__getattr__` below when first asked for (_LAZY).
"""
from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

from .constants import MemcpyKind
from .errors import AclError, NotEmulated

if TYPE_CHECKING:  # the names _LAZY gives, for type checkers and readers
    from .modeldecl import ModelDeclarationError, declare_model
    from .runtime import configure, current

# The package's names that live in a heavier module: {name: the module that defines it}. `emu.configure` is
# `emu.runtime.configure` itself (the same object, its signature and docstring), imported when first asked for.
_LAZY = {"configure": "emu.runtime", "current": "emu.runtime",
        "declare_model": "emu.modeldecl", "ModelDeclarationError": "emu.modeldecl"}


def __getattr__(name: str):
    """A _LAZY name, `__version__`, or a submodule not imported yet (`import emu; emu.runtime.configure()`)."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name == "__version__":
        return _version()
    if name.startswith("_"):
        raise AttributeError(f"module 'emu' has no attribute {name!r}")
    return _submodule(name)


def _submodule(name: str):
    """emu.<name> imported, or AttributeError when there is no such module."""
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module 'emu' has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, "__version__"})


def _version() -> str:
    """The installed acl-emu version ("0+unknown" in a checkout that was never installed); `emu.__version__`."""
    from importlib.metadata import PackageNotFoundError, version as installed

    try:
        return installed("acl-emu")
    except PackageNotFoundError:  # a checkout that was never installed
        return "0+unknown"


def records():
    """The kept completed device tasks of the current run (every one unless `configure(records=...)` bounds
    them), as a numpy structured array (see Runtime.records)."""
    from .runtime import current as _current

    return _current().records()


def write_trace(path) -> None:
    """Write the current run as a Chrome / Perfetto trace JSON."""
    from .runtime import current as _current

    _current().write_trace(path)


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
