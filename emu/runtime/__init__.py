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
from . import (allocation, batch, callbacks, capture, copies, copy2d, descriptors, devices, fills, hostmem, launch,
               peer, streams, transfer)
from .callbacks import CallbackDeadlock, CallbackError
from .capture import Capture, Model
from .core import HOST_TIME_ENV, HOST_TIME_MODES, Context, Core, Device, Event, Stream, api, parse_host_time
from .handles import DevicePointer, EventHandle, HostPointer, StreamHandle
from .allocation import PointerAttributes
from .transfer import correct_kind, ends


class Runtime(Core):
    """One emulated process: its devices, memory, streams, events and simulated machine.

    Its state is `Core`'s (core.py): product, memory, machine, handles, each host thread's context and
    clock. Every API is a function of its family's module taking the runtime first, bound here by name."""

    MemcpyKind = MemcpyKind  # aclrtMemcpyKind, at hand as rt.MemcpyKind.HOST_TO_DEVICE

    # initialisation, devices and contexts (devices.py)
    init = devices.init
    finalize = devices.finalize
    set_device = devices.set_device
    reset_device = devices.reset_device
    reset_device_force = devices.reset_device_force
    get_device = devices.get_device
    get_device_count = devices.get_device_count
    get_run_mode = devices.get_run_mode
    synchronize_device = devices.synchronize_device
    create_context = devices.create_context
    destroy_context = devices.destroy_context
    set_context = devices.set_context
    get_context = devices.get_context

    # streams and events (streams.py)
    create_stream = streams.create_stream
    create_stream_with_config = streams.create_stream_with_config
    destroy_stream = streams.destroy_stream
    destroy_stream_force = streams.destroy_stream_force
    synchronize_stream = streams.synchronize_stream
    synchronize_stream_with_timeout = streams.synchronize_stream_with_timeout
    stream_query = streams.stream_query
    create_event = streams.create_event
    create_event_with_flag = streams.create_event_with_flag
    create_event_ex_with_flag = streams.create_event_ex_with_flag
    destroy_event = streams.destroy_event
    record_event = streams.record_event
    reset_event = streams.reset_event
    stream_wait_event = streams.stream_wait_event
    synchronize_event = streams.synchronize_event
    query_event_status = streams.query_event_status
    query_event_wait_status = streams.query_event_wait_status
    event_elapsed_time = streams.event_elapsed_time

    # allocation (allocation.py)
    malloc = allocation.malloc
    free = allocation.free
    malloc_host = allocation.malloc_host
    free_host = allocation.free_host
    get_mem_info = allocation.get_mem_info
    pointer_get_attributes = allocation.pointer_get_attributes
    register_host = allocation.register_host
    host_array = allocation.host_array
    device_array = allocation.device_array
    dvpp_malloc = allocation.dvpp_malloc
    dvpp_free = allocation.dvpp_free
    malloc_with_cfg = allocation.malloc_with_cfg
    malloc_host_with_cfg = allocation.malloc_host_with_cfg

    # copies (copies.py)
    memcpy = copies.memcpy
    memcpy_async = copies.memcpy_async
    memcpy_async_with_condition = copies.memcpy_async_with_condition

    # fills (fills.py)
    memset = fills.memset
    memset_async = fills.memset_async
    memset_d32 = fills.memset_d32
    memset_d32_async = fills.memset_d32_async

    # 2D copies (copy2d.py)
    memcpy2d = copy2d.memcpy2d
    memcpy2d_async = copy2d.memcpy2d_async

    # batch copies (batch.py)
    memcpy_batch = batch.memcpy_batch
    memcpy_batch_async = batch.memcpy_batch_async
    memcpy_batch_v2 = batch.memcpy_batch_v2
    memcpy_batch_async_v2 = batch.memcpy_batch_async_v2

    # descriptor and offset copies (descriptors.py)
    get_memcpy_desc_size = descriptors.get_memcpy_desc_size
    set_memcpy_desc = descriptors.set_memcpy_desc
    memcpy_async_with_desc = descriptors.memcpy_async_with_desc
    memcpy_async_with_offset = descriptors.memcpy_async_with_offset

    # host memory registration (hostmem.py)
    host_register = hostmem.host_register
    host_register_v2 = hostmem.host_register_v2
    host_get_device_pointer = hostmem.host_get_device_pointer
    host_unregister = hostmem.host_unregister

    # peer access (peer.py)
    can_access = peer.can_access
    device_can_access_peer = peer.device_can_access_peer
    device_enable_peer_access = peer.device_enable_peer_access
    device_disable_peer_access = peer.device_disable_peer_access
    device_peer_access_status = peer.device_peer_access_status
    check_peer_copy = peer.check_peer_copy

    # graph capture (capture.py)
    check_capture_safe = capture.check_capture_safe
    ri_capture_begin = capture.ri_capture_begin
    ri_capture_get_info = capture.ri_capture_get_info
    ri_capture_end = capture.ri_capture_end
    ri_capture_thread_exchange_mode = capture.ri_capture_thread_exchange_mode
    ri_execute_async = capture.ri_execute_async
    ri_destroy = capture.ri_destroy

    # kernel launch (launch.py)
    launch_kernel = launch.launch_kernel

    # callbacks, report threads and the SoC name (callbacks.py)
    get_soc_name = callbacks.get_soc_name
    subscribe_report = callbacks.subscribe_report
    unsubscribe_report = callbacks.unsubscribe_report
    launch_callback = callbacks.launch_callback
    process_report = callbacks.process_report
    start_thread = callbacks.start_thread
    stop_thread = callbacks.stop_thread

    # what a copy between two ends is split into (a query) (transfer.py)
    copy_unit = transfer.copy_unit


_current: Runtime | None = None
_lock = threading.RLock()  # reentrant: current() holds it while configure() makes the first runtime


def host_time_from_env() -> tuple[str, float] | None:
    """$ACL_EMU_HOST_TIME as (mode, scale): "calls", "wall" or "wall:SCALE"; None when unset or empty.
    A bad value is a ValueError naming the variable."""
    text = os.environ.get(HOST_TIME_ENV, "").strip()
    return parse_host_time(text) if text else None


def configure(product: str | os.PathLike | None = None, *, functional: bool = True, host_time: str | None = None,
              host_time_scale: float | None = None, records="all", sanitize=None) -> Runtime:
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
    """
    global _current
    name = product or os.environ.get("ACL_EMU_PRODUCT") or config.DEFAULT_PRODUCT
    scale = 1.0
    if host_time is None:
        host_time, scale = host_time_from_env() or ("calls", 1.0)
    if host_time_scale is not None:
        scale = host_time_scale
    runtime = Runtime(config.load(name), functional=functional, host_time=host_time, host_time_scale=scale,
                      records=records, sanitize=sanitize)
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


API_NAMES = sorted(n for n in dir(Runtime) if hasattr(getattr(Runtime, n), "acl_name"))
_HELPERS = ["register_host", "host_array", "device_array", "start_thread", "stop_thread"]  # not ACL APIs

# The module's functions: each calls the current runtime's method of the same name (`current()`).
# initialisation, devices and contexts (devices.py)
init = _delegate("init")
finalize = _delegate("finalize")
set_device = _delegate("set_device")
reset_device = _delegate("reset_device")
reset_device_force = _delegate("reset_device_force")
get_device = _delegate("get_device")
get_device_count = _delegate("get_device_count")
get_run_mode = _delegate("get_run_mode")
synchronize_device = _delegate("synchronize_device")
create_context = _delegate("create_context")
destroy_context = _delegate("destroy_context")
set_context = _delegate("set_context")
get_context = _delegate("get_context")
# streams and events (streams.py)
create_stream = _delegate("create_stream")
create_stream_with_config = _delegate("create_stream_with_config")
destroy_stream = _delegate("destroy_stream")
destroy_stream_force = _delegate("destroy_stream_force")
synchronize_stream = _delegate("synchronize_stream")
synchronize_stream_with_timeout = _delegate("synchronize_stream_with_timeout")
stream_query = _delegate("stream_query")
create_event = _delegate("create_event")
create_event_with_flag = _delegate("create_event_with_flag")
create_event_ex_with_flag = _delegate("create_event_ex_with_flag")
destroy_event = _delegate("destroy_event")
record_event = _delegate("record_event")
reset_event = _delegate("reset_event")
stream_wait_event = _delegate("stream_wait_event")
synchronize_event = _delegate("synchronize_event")
query_event_status = _delegate("query_event_status")
query_event_wait_status = _delegate("query_event_wait_status")
event_elapsed_time = _delegate("event_elapsed_time")
# allocation (allocation.py)
malloc = _delegate("malloc")
free = _delegate("free")
malloc_host = _delegate("malloc_host")
free_host = _delegate("free_host")
get_mem_info = _delegate("get_mem_info")
pointer_get_attributes = _delegate("pointer_get_attributes")
register_host = _delegate("register_host")
host_array = _delegate("host_array")
device_array = _delegate("device_array")
dvpp_malloc = _delegate("dvpp_malloc")
dvpp_free = _delegate("dvpp_free")
malloc_with_cfg = _delegate("malloc_with_cfg")
malloc_host_with_cfg = _delegate("malloc_host_with_cfg")
# copies (copies.py)
memcpy = _delegate("memcpy")
memcpy_async = _delegate("memcpy_async")
memcpy_async_with_condition = _delegate("memcpy_async_with_condition")
# fills (fills.py)
memset = _delegate("memset")
memset_async = _delegate("memset_async")
memset_d32 = _delegate("memset_d32")
memset_d32_async = _delegate("memset_d32_async")
# 2D copies (copy2d.py)
memcpy2d = _delegate("memcpy2d")
memcpy2d_async = _delegate("memcpy2d_async")
# batch copies (batch.py)
memcpy_batch = _delegate("memcpy_batch")
memcpy_batch_async = _delegate("memcpy_batch_async")
memcpy_batch_v2 = _delegate("memcpy_batch_v2")
memcpy_batch_async_v2 = _delegate("memcpy_batch_async_v2")
# descriptor and offset copies (descriptors.py)
get_memcpy_desc_size = _delegate("get_memcpy_desc_size")
set_memcpy_desc = _delegate("set_memcpy_desc")
memcpy_async_with_desc = _delegate("memcpy_async_with_desc")
memcpy_async_with_offset = _delegate("memcpy_async_with_offset")
# host memory registration (hostmem.py)
host_register = _delegate("host_register")
host_register_v2 = _delegate("host_register_v2")
host_get_device_pointer = _delegate("host_get_device_pointer")
host_unregister = _delegate("host_unregister")
# peer access (peer.py)
device_can_access_peer = _delegate("device_can_access_peer")
device_enable_peer_access = _delegate("device_enable_peer_access")
device_disable_peer_access = _delegate("device_disable_peer_access")
device_peer_access_status = _delegate("device_peer_access_status")
# graph capture (capture.py)
ri_capture_begin = _delegate("ri_capture_begin")
ri_capture_get_info = _delegate("ri_capture_get_info")
ri_capture_end = _delegate("ri_capture_end")
ri_capture_thread_exchange_mode = _delegate("ri_capture_thread_exchange_mode")
ri_execute_async = _delegate("ri_execute_async")
ri_destroy = _delegate("ri_destroy")
# kernel launch (launch.py)
launch_kernel = _delegate("launch_kernel")
# callbacks, report threads and the SoC name (callbacks.py)
get_soc_name = _delegate("get_soc_name")
subscribe_report = _delegate("subscribe_report")
unsubscribe_report = _delegate("unsubscribe_report")
launch_callback = _delegate("launch_callback")
process_report = _delegate("process_report")
start_thread = _delegate("start_thread")
stop_thread = _delegate("stop_thread")

__all__ = ["Runtime", "Capture", "Model", "Context", "Device", "Event", "Stream", "PointerAttributes", "configure", "configured", "current",
           "host_time_from_env", "parse_host_time", "HOST_TIME_MODES", "HOST_TIME_ENV",
           "correct_kind", "ends", "api", "API_NAMES", *API_NAMES, "register_host", "host_array", "device_array",
           "start_thread", "stop_thread", "CallbackError", "CallbackDeadlock", "MemcpyKind", "StreamHandle",
           "EventHandle", "DevicePointer", "HostPointer"]
