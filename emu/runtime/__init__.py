"""The emulated ACL runtime: the semantics behind every API.

Call it directly for a Pythonic API (values returned, `AclError` raised), or
through `emu.acl` for pyACL's (ints in, `(values..., ret)` out). One runtime
per process, built from the product chosen with `emu.configure` (or the
ACL_EMU_PRODUCT environment variable; default 910B).

    from emu import runtime as rt
    rt.set_device(0)
    dev = rt.malloc(1 << 20)
"""
from __future__ import annotations

import os
import threading

from .. import config
from .batch import BatchOps
from .capture import Capture, CaptureOps, Model
from .copy2d import Copy2dOps
from .descriptors import DescriptorOps
from .core import Context, Core, Device, Event, Stream, api
from .hostmem import HostMemoryOps, PeerOps
from .launch import LaunchOps
from .memops import FillD32Ops, MemoryOps, PointerAttributes, correct_kind, ends


class Runtime(MemoryOps, Copy2dOps, BatchOps, DescriptorOps, FillD32Ops, HostMemoryOps, PeerOps, CaptureOps,
              LaunchOps, Core):
    """One emulated process: its devices, memory, streams, events and simulated machine."""


_current: Runtime | None = None
_lock = threading.Lock()


def configure(product: str | os.PathLike | None = None, *, functional: bool = True) -> Runtime:
    """Start a fresh emulated process on a product and make it the current one.

    product: a name from configs/ or a TOML path (default: $ACL_EMU_PRODUCT, else 910B).
    functional=False: timing-only, allocations get addresses but no bytes (per allocation:
    `malloc(..., functional=...)`). Call before acl.init(); the previous runtime is dropped.
    """
    global _current
    name = product or os.environ.get("ACL_EMU_PRODUCT") or config.DEFAULT_PRODUCT
    runtime = Runtime(config.load(name), functional=functional)
    with _lock:
        _current = runtime
    return runtime


def current() -> Runtime:
    """The process's runtime, created on first use."""
    rt = _current
    if rt is None:
        with _lock:
            rt = _current
        if rt is None:
            rt = configure()
    return rt


def _delegate(name: str):
    method = getattr(Runtime, name)

    def call(*args, **kwargs):
        return method(current(), *args, **kwargs)

    call.__name__ = name
    call.__doc__ = method.__doc__
    call.__wrapped__ = method
    return call


API_NAMES = sorted(n for n in dir(Runtime) if hasattr(getattr(Runtime, n), "acl_name"))
globals().update({n: _delegate(n) for n in API_NAMES + ["register_host", "host_array"]})

__all__ = ["Runtime", "Capture", "Model", "Context", "Device", "Event", "Stream", "PointerAttributes", "configure", "current",
           "correct_kind", "ends", "api", "API_NAMES", *API_NAMES, "register_host", "host_array"]
