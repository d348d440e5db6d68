"""The emulated ACL runtime: the semantics behind every API.

Call it directly for a Pythonic API (values returned, `AclError` raised), or
through `emu.acl` for pyACL's (ints in, `(values..., ret)` out). One runtime
per process, built from the product chosen with `emu.configure` (or the
ACL_EMU_PRODUCT environment variable; default 910B). Its host clock counts API
call costs only ("calls", the default) or also the host's wall time between
calls ("wall"): `emu.configure(host_time=...)` or ACL_EMU_HOST_TIME.

    from emu import runtime as rt
    rt.set_device(0)
    dev = rt.malloc(1 << 20)
"""
from __future__ import annotations

import os
import threading

from .. import config
from ..constants import MemcpyKind
from .batch import BatchOps
from .callbacks import CallbackDeadlock, CallbackError, CallbackOps, SocOps
from .capture import Capture, CaptureOps, Model
from .copy2d import Copy2dOps
from .descriptors import DescriptorOps
from .handles import DevicePointer, EventHandle, HostPointer, StreamHandle
from .core import HOST_TIME_ENV, HOST_TIME_MODES, Context, Core, Device, Event, Stream, api, parse_host_time
from .hostmem import HostMemoryOps, PeerOps
from .launch import LaunchOps
from .memops import FillD32Ops, MemoryOps, PointerAttributes, correct_kind, ends


class Runtime(MemoryOps, Copy2dOps, BatchOps, DescriptorOps, FillD32Ops, HostMemoryOps, PeerOps, CaptureOps,
              LaunchOps, CallbackOps, SocOps, Core):
    """One emulated process: its devices, memory, streams, events and simulated machine."""

    MemcpyKind = MemcpyKind  # aclrtMemcpyKind, at hand as rt.MemcpyKind.HOST_TO_DEVICE


_current: Runtime | None = None
_lock = threading.RLock()  # reentrant: current() holds it while configure() makes the first runtime


def host_time_from_env() -> tuple[str, float] | None:
    """$ACL_EMU_HOST_TIME as (mode, scale): "calls", "wall" or "wall:SCALE"; None when unset or empty.
    A bad value is a ValueError naming the variable."""
    text = os.environ.get(HOST_TIME_ENV, "").strip()
    return parse_host_time(text) if text else None


def configure(product: str | os.PathLike | None = None, *, functional: bool = True, host_time: str | None = None,
              host_time_scale: float | None = None, records="all") -> Runtime:
    """Start a fresh emulated process on a product and make it the current one.

    product: a name from configs/ or a TOML path (default: $ACL_EMU_PRODUCT, else 910B).
    functional=False: timing-only, allocations get addresses but no bytes (per allocation:
    `malloc(..., functional=...)`). Call before acl.init(); the previous runtime is dropped.

    host_time: what advances each host thread's virtual clock (the time events and
    traces see between calls):
      "calls"  only the API calls' own costs (call overhead, blocking waits): the same
               result on every run. The default here, so studies and tests are reproducible.
      "wall"   also the host's real wall time between the thread's calls (from the return
               of its previous API call to the entry of the next; the first call counts no
               gap, time inside the emulator's calls never counts), times host_time_scale:
               `time.sleep(2)` between two aclrtRecordEvent shows ~2000 ms, as on hardware;
               0.5 asks "what if my host work were 2x faster"; 0 is the same as "calls".
               The default of `acl-emu run`.
    Without host_time, $ACL_EMU_HOST_TIME decides: "calls", "wall" or "wall:SCALE" (e.g.
    wall:0.5; an explicit host_time_scale overrides its scale); unset, "calls".
    host_time_scale defaults to 1.0. Bad values raise ValueError.

    records: what the run keeps of its completed device tasks and its host API calls (what
    `records()`, `write_trace` and the run summary's trace show), as compact rows (63 bytes a
    task, 22 a call):
      "all"    every one (the default)
      N        the last N of each (an int >= 0): a bounded run of any length
      None     none
      a path or a writable file: none kept, each written as a JSON line
               ({"type": "task", ...RECORD fields} / {"type": "call", "api", "thread", "start",
               "end"}), a chunk at a time (`Runtime.flush_records()` writes out the rest; a path
               is also flushed and closed at exit); `models.trace.read_jsonl` reads it back.
    Counts (calls by API, bytes and tasks by route, the latest completion: `calls`,
    `record_totals()`) cover every task and call whatever is kept.
    """
    global _current
    name = product or os.environ.get("ACL_EMU_PRODUCT") or config.DEFAULT_PRODUCT
    scale = 1.0
    if host_time is None:
        host_time, scale = host_time_from_env() or ("calls", 1.0)
    if host_time_scale is not None:
        scale = host_time_scale
    runtime = Runtime(config.load(name), functional=functional, host_time=host_time, host_time_scale=scale,
                      records=records)
    with _lock:
        _current = runtime
    return runtime


def current() -> Runtime:
    """The process's runtime, created on first use: once, however many threads make the first call at
    the same time (they wait for the one that creates it)."""
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
_HELPERS = ["register_host", "host_array", "device_array", "start_thread", "stop_thread"]  # not ACL APIs
globals().update({n: _delegate(n) for n in API_NAMES + _HELPERS})

__all__ = ["Runtime", "Capture", "Model", "Context", "Device", "Event", "Stream", "PointerAttributes", "configure", "current",
           "host_time_from_env", "parse_host_time", "HOST_TIME_MODES", "HOST_TIME_ENV",
           "correct_kind", "ends", "api", "API_NAMES", *API_NAMES, "register_host", "host_array", "device_array",
           "start_thread", "stop_thread", "CallbackError", "CallbackDeadlock", "MemcpyKind", "StreamHandle",
           "EventHandle", "DevicePointer", "HostPointer"]
