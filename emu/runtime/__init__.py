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

Where each API comes from: its one declaration, `@api("aclXxx", pyacl=..., params=...)` on its function in
a family module (devices.py, streams.py, ...). `APIS` collects them, family by family in `FAMILIES`' order
and in each module's order of definition; from it this module makes every method `Runtime.<name>` (the
family function itself) and every module function `emu.runtime.<name>` (calling the current runtime's
method), and `emu.acl` every facade entry (`emu.acl._bind.declared`). So `grep -rn 'def memcpy_async'
emu/runtime` finds `rt.memcpy_async`, and `emu.runtime.APIS` lists them all. The helpers that are no ACL
API (`register_host`, `host_array`, ...) are bound by hand below.
"""
from __future__ import annotations

import os
import threading

from .. import config
from ..constants import MemcpyKind
from . import (allocation, batch, binaries, callbacks, capture, copies, copy2d, descriptors, devices, fills, hostmem,
               inference, launch, peer, streams, transfer)
from .callbacks import CallbackDeadlock, CallbackError
from .capture import Capture, Model
from .core import (HOST_TIME_ENV, HOST_TIME_MODES, Context, Core, Declaration, Device, Event, Stream, api,
                   parse_host_time)
from .handles import DevicePointer, EventHandle, HostPointer, StreamHandle
from .allocation import PointerAttributes
from .transfer import correct_kind, ends


# The family modules that declare the ACL APIs, in the order `APIS` lists them (within a module: the order of
# definition). A new family module goes here.
FAMILIES = (devices, streams, allocation, copies, fills, copy2d, batch, descriptors, hostmem, peer, capture, launch,
            binaries, callbacks, inference)


def _declarations(families) -> tuple:
    """The `Declaration` of every API the family modules define (`@api`), in order; each once."""
    found = []
    for module in families:
        family = module.__name__.rsplit(".", 1)[-1]
        found += [fn.api for fn in vars(module).values()
                  if callable(fn) and isinstance(getattr(fn, "api", None), Declaration) and fn.api.family == family]
    for what in ("name", "acl", "pyacl"):
        seen = [getattr(d, what) for d in found if getattr(d, what) is not None]
        doubled = sorted({v for v in seen if seen.count(v) > 1})
        if doubled:
            raise ValueError(f"APIs declared twice ({what}): {doubled}")
    return tuple(found)


APIS = _declarations(FAMILIES)  # every ACL API's declaration: the one source of its three surfaces


class Runtime(Core):
    """One emulated process: its devices, memory, streams, events and simulated machine.

    Its state is `Core`'s (core.py): product, memory, machine, handles, each host thread's context and
    clock. Every API is a function of its family's module taking the runtime first, declared there with
    `@api(...)` and set here as the method of its name from that declaration (`APIS`)."""

    MemcpyKind = MemcpyKind  # aclrtMemcpyKind, at hand as rt.MemcpyKind.HOST_TO_DEVICE

    # The ACL APIs are set on the class from their declarations after it (`APIS`); these helpers are no ACL API.
    register_host = allocation.register_host  # (allocation.py)
    host_array = allocation.host_array
    device_array = allocation.device_array
    can_access = peer.can_access  # (peer.py)
    check_peer_copy = peer.check_peer_copy
    check_capture_safe = capture.check_capture_safe  # (capture.py)
    start_thread = callbacks.start_thread  # report threads (callbacks.py)
    stop_thread = callbacks.stop_thread

    # what a copy between two ends is split into (a query) (transfer.py)
    copy_unit = transfer.copy_unit


for _d in APIS:  # Runtime.<name>: each declared family function, as a method
    if _d.name in vars(Runtime):
        raise ValueError(f"Runtime.{_d.name} is bound by hand and declared as {_d.acl}")
    setattr(Runtime, _d.name, _d.method)
del _d


_current: Runtime | None = None
_lock = threading.RLock()  # reentrant: current() holds it while configure() makes the first runtime


def host_time_from_env() -> tuple[str, float] | None:
    """$ACL_EMU_HOST_TIME as (mode, scale): "calls", "wall" or "wall:SCALE"; None when unset or empty.
    A bad value is a ValueError naming the variable."""
    text = os.environ.get(HOST_TIME_ENV, "").strip()
    return parse_host_time(text) if text else None


def configure(product: str | os.PathLike | None = None, *, functional: bool = True, host_time: str | None = None,
              host_time_scale: float | None = None, records="all", sanitize=None, network: str | None = None) -> Runtime:
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

    sanitize: check the program for the hazards of asynchronous work (`emu.sanitize`): True or
    "all" for every check, or some of "race,host,init" (a comma-separated string or a list);
    None or False (the default) for none, at no cost. The runtime's `sanitizer` holds what it
    finds: `sanitizer.finish()` runs the queued work to its end and returns the findings,
    `sanitizer.report()` gives them as text, `sanitizer.to_dict()` as JSON-ready data. In
    timing-only mode every check runs but the fingerprint of a copy's source (bytes the host
    changed before the copy ran), and the report says so. A bad value raises ValueError.

    network: how the model shares links between copies: "flows" (the default) or "reference" (the
    max-min reference, recomputing every rate at every change: the same times, far slower; to check the
    model on your own workload). Without it, $ACL_EMU_NETWORK decides, else "flows".
    """
    global _current
    name = product or os.environ.get("ACL_EMU_PRODUCT") or config.DEFAULT_PRODUCT
    scale = 1.0
    if host_time is None:
        host_time, scale = host_time_from_env() or ("calls", 1.0)
    if host_time_scale is not None:
        scale = host_time_scale
    runtime = Runtime(config.load(name), functional=functional, host_time=host_time, host_time_scale=scale,
                      records=records, sanitize=sanitize,
                      network=network or os.environ.get("ACL_EMU_NETWORK") or "flows")
    with _lock:
        _current = runtime
    return runtime


def configured() -> Runtime | None:
    """The process's runtime if one has been made (by `configure` or a first call), else None; unlike
    `current`, it creates none."""
    return _current


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
        rt = _current  # (`current()` inlined: a frame less on every call once the runtime exists)
        return method(rt if rt is not None else current(), *args, **kwargs)

    call.__name__ = name
    call.__doc__ = method.__doc__
    call.__wrapped__ = method
    return call


API_NAMES = sorted(d.name for d in APIS)
HELPERS = ["register_host", "host_array", "device_array", "start_thread", "stop_thread"]  # not ACL APIs

# The module's functions, one per declared API (`APIS`), each calling the current runtime's method of the same
# name (`current()`); then the helpers'.
globals().update({d.name: _delegate(d.name) for d in APIS})
register_host = _delegate("register_host")
host_array = _delegate("host_array")
device_array = _delegate("device_array")
start_thread = _delegate("start_thread")
stop_thread = _delegate("stop_thread")

__all__ = ["Runtime", "Capture", "Model", "Context", "Device", "Event", "Stream", "PointerAttributes", "configure", "configured", "current",
           "host_time_from_env", "parse_host_time", "HOST_TIME_MODES", "HOST_TIME_ENV",
           "correct_kind", "ends", "api", "Declaration", "APIS", "FAMILIES", "API_NAMES", *API_NAMES, "register_host", "host_array", "device_array",
           "start_thread", "stop_thread", "CallbackError", "CallbackDeadlock", "MemcpyKind", "StreamHandle",
           "EventHandle", "DevicePointer", "HostPointer"]
