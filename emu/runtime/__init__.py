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
from . import allocation, batch, callbacks, capture, copies, copy2d, descriptors, fills, hostmem, launch, peer, transfer
from .callbacks import CallbackDeadlock, CallbackError
from .capture import Capture, Model
from .core import HOST_TIME_ENV, HOST_TIME_MODES, Context, Core, Device, Event, Stream, api, parse_host_time
from .handles import DevicePointer, EventHandle, HostPointer, StreamHandle
from .allocation import PointerAttributes
from .transfer import correct_kind, ends


class Runtime(Core):
    """One emulated process: its devices, memory, streams, events and simulated machine.

    The state and the device, context, stream and event APIs are `Core`'s (core.py); every other API is a
    function of its family's module taking the runtime first, bound here by name."""

    MemcpyKind = MemcpyKind  # aclrtMemcpyKind, at hand as rt.MemcpyKind.HOST_TO_DEVICE

    has_bytes = transfer.has_bytes
    _mover = transfer._mover
    _filler = transfer._filler
    locate = transfer.locate
    run_blocking = transfer.run_blocking
    pageable = transfer.pageable
    _copy_now = transfer._copy_now
    sync_for_pageable = transfer.sync_for_pageable
    copy_unit = transfer.copy_unit
    _copy_unit = transfer._copy_unit
    _enqueue_copy = transfer._enqueue_copy
    _alloc_device = allocation._alloc_device
    malloc = allocation.malloc
    _driver_allocation = allocation._driver_allocation
    free = allocation.free
    malloc_host = allocation.malloc_host
    _alloc_host = allocation._alloc_host
    free_host = allocation.free_host
    get_mem_info = allocation.get_mem_info
    pointer_get_attributes = allocation.pointer_get_attributes
    register_host = allocation.register_host
    host_array = allocation.host_array
    device_array = allocation.device_array
    _check_copy_args = copies._check_copy_args
    memcpy = copies.memcpy
    _memcpy_async = copies._memcpy_async
    memcpy_async = copies.memcpy_async
    memcpy_async_with_condition = copies.memcpy_async_with_condition
    _fill_host_now = fills._fill_host_now
    memset = fills.memset
    memset_async = fills.memset_async
    dvpp_malloc = allocation.dvpp_malloc
    dvpp_free = allocation.dvpp_free
    _d32_target = fills._d32_target
    _d32_filler = fills._d32_filler
    _d32 = fills._d32
    _d32_runtime_present = fills._d32_runtime_present
    _d32_device_sync = fills._d32_device_sync
    _d32_device_async = fills._d32_device_async
    memset_d32 = fills.memset_d32
    memset_d32_async = fills.memset_d32_async
    _match = batch._match
    _entry = batch._entry
    _part = batch._part
    _run_batch = batch._run_batch
    _runtime_entry = batch._runtime_entry
    _batch_sync = batch._batch_sync
    _batch_async = batch._batch_async
    _batch_async_ub = batch._batch_async_ub
    _batch_async_loop = batch._batch_async_loop
    _batch = batch._batch
    memcpy_batch = batch.memcpy_batch
    memcpy_batch_async = batch.memcpy_batch_async
    memcpy_batch_v2 = batch.memcpy_batch_v2
    memcpy_batch_async_v2 = batch.memcpy_batch_async_v2
    get_soc_name = callbacks.get_soc_name
    _callbacks = property(callbacks._callbacks)
    _purge_destroyed = callbacks._purge_destroyed
    _wait_wall = callbacks._wait_wall
    subscribe_report = callbacks.subscribe_report
    unsubscribe_report = callbacks.unsubscribe_report
    _drop = callbacks._drop
    launch_callback = callbacks.launch_callback
    _reached = callbacks._reached
    process_report = callbacks.process_report
    _take_reports = callbacks._take_reports
    _run_callback = callbacks._run_callback
    _host_wait = callbacks._host_wait
    start_thread = callbacks.start_thread
    stop_thread = callbacks.stop_thread
    _thread_modes = capture._thread_modes
    check_capture_safe = capture.check_capture_safe
    _capture_stream = capture._capture_stream
    _capturable = staticmethod(capture._capturable)
    _capture_context = capture._capture_context
    _release_capture = capture._release_capture
    ri_capture_begin = capture.ri_capture_begin
    ri_capture_get_info = capture.ri_capture_get_info
    ri_capture_end = capture.ri_capture_end
    ri_capture_thread_exchange_mode = capture.ri_capture_thread_exchange_mode
    _check_model_context = capture._check_model_context
    ri_execute_async = capture.ri_execute_async
    ri_destroy = capture.ri_destroy
    _acl_2d = staticmethod(copy2d._acl_2d)
    _limits_2d = staticmethod(copy2d._limits_2d)
    _null_stream_2d = copy2d._null_stream_2d
    _runtime_entry_2d = copy2d._runtime_entry_2d
    _locate_2d = copy2d._locate_2d
    _move_2d = copy2d._move_2d
    _copy_2d_now = copy2d._copy_2d_now
    _locations_2d = copy2d._locations_2d
    memcpy2d = copy2d.memcpy2d
    memcpy2d_async = copy2d.memcpy2d_async
    _enqueue_2d = copy2d._enqueue_2d
    _stars = descriptors._stars
    _desc_aligned = staticmethod(descriptors._desc_aligned)
    _desc_lookup = descriptors._desc_lookup
    _desc_on_device = staticmethod(descriptors._desc_on_device)
    get_memcpy_desc_size = descriptors.get_memcpy_desc_size
    set_memcpy_desc = descriptors.set_memcpy_desc
    _read_desc = descriptors._read_desc
    memcpy_async_with_desc = descriptors.memcpy_async_with_desc
    _enqueue_indirect = descriptors._enqueue_indirect
    memcpy_async_with_offset = descriptors.memcpy_async_with_offset
    malloc_with_cfg = allocation.malloc_with_cfg
    malloc_host_with_cfg = allocation.malloc_host_with_cfg
    _host_malloc_va_flag = staticmethod(allocation._host_malloc_va_flag)
    _driver_host_register = hostmem._driver_host_register
    _host_range = hostmem._host_range
    _check_not_registered = hostmem._check_not_registered
    _record = hostmem._record
    host_register = hostmem.host_register
    host_register_v2 = hostmem.host_register_v2
    host_get_device_pointer = hostmem.host_get_device_pointer
    host_unregister = hostmem.host_unregister
    can_access = peer.can_access
    _visible_env = peer._visible_env
    _driver_id = peer._driver_id
    _below_max = staticmethod(peer._below_max)
    _driver_device = peer._driver_device
    _p2p_feature = peer._p2p_feature
    _default_device_context = peer._default_device_context
    _current_device = peer._current_device
    device_can_access_peer = peer.device_can_access_peer
    _current_and_peer = peer._current_and_peer
    device_enable_peer_access = peer.device_enable_peer_access
    device_disable_peer_access = peer.device_disable_peer_access
    device_peer_access_status = peer.device_peer_access_status
    check_peer_copy = peer.check_peer_copy
    _kernel_arg = launch._kernel_arg
    launch_kernel = launch.launch_kernel


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
