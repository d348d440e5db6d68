"""Process, thread, device, context, stream and event state of the emulated runtime.

One `Runtime` per emulated process. Every public method is an ACL API: it
checks its arguments in the reference runtime's order (ACL layer first, then
the runtime's C entry and parameter checks) and raises `AclError` with the
code the real runtime returns. A global lock makes concurrent calls from
several threads safe; the current context and the host's virtual clock are
per thread, as in ACL.

The host clock advances by each call's cost (`call_overhead`, plus the time a
blocking call waits). What the host does between calls is counted by the
runtime's host-time mode (`HOST_TIME_MODES`): "calls" ignores it (the pure
call-cost clock, reproducible), "wall" adds the real wall time between this
thread's previous return and its next call, times a scale.
"""
from __future__ import annotations

import functools
import inspect
import hashlib
import json
import math
import os
import threading
from collections import Counter
from itertools import count
from numbers import Real
from time import perf_counter

from emu.models import MARKER, Machine, Task, trace
from emu.models.trace import ALL, CHUNK

from .. import constants as C
from ..config import Product
from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_REPEAT_FINALIZE,
                      ACL_ERROR_REPEAT_INITIALIZE, ACL_ERROR_RT_CONTEXT_NULL,
                      ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, ACL_ERROR_RT_DRV_INTERNAL_ERROR,
                      ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                      ACL_ERROR_RT_INTERNAL_ERROR, ACL_ERROR_RT_INVALID_DEVICEID, ACL_ERROR_RT_INVALID_HANDLE,
                      ACL_ERROR_RT_NO_DEVICE, ACL_ERROR_RT_NO_EVENT_RESOURCE, ACL_ERROR_RT_NO_STREAM_RESOURCE,
                      ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_STREAM_CAPTURED, ACL_ERROR_RT_STREAM_CONTEXT, ACL_ERROR_RT_EVENT_CAPTURED,
                      ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ACL_ERROR_RT_CAPTURE_DEPENDENCY, ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT, AclError, set_recent_error)
from ..memory import AddressSpace
from .handles import EventHandle, StreamHandle

_handles = count(0x5A000010, 16)  # handle values look like pointers and are never reused

HOST_TIME_MODES = ("calls", "wall")
HOST_TIME_ENV = "ACL_EMU_HOST_TIME"


def check_host_time(mode: str, scale) -> tuple[str, float]:
    """A valid (mode, scale) pair, or ValueError: mode "calls" or "wall", scale a finite number >= 0."""
    if mode not in HOST_TIME_MODES:
        raise ValueError(f"host_time {mode!r}: expected 'calls' or 'wall'")
    if isinstance(scale, bool) or not isinstance(scale, Real) or not math.isfinite(scale) or scale < 0:
        raise ValueError(f"host_time_scale {scale!r}: expected a finite number >= 0")
    return mode, float(scale)


def parse_host_time(text: str, source: str = HOST_TIME_ENV) -> tuple[str, float]:
    """Parse "calls", "wall" or "wall:SCALE" (as in $ACL_EMU_HOST_TIME); ValueError names `source`."""
    mode, sep, scale_text = text.strip().lower().partition(":")
    mode, scale_text = mode.strip(), scale_text.strip()
    try:
        if mode not in HOST_TIME_MODES or (sep and mode != "wall"):
            raise ValueError
        scale = float(scale_text) if sep else 1.0
        return check_host_time(mode, scale)
    except ValueError:
        raise ValueError(f"{source}={text!r}: expected 'calls', 'wall' or 'wall:SCALE' "
                         f"(SCALE a number >= 0, e.g. wall:0.5)") from None


_SIZE_T = 1 << 64


def _c_sizes(fn, names: tuple):
    """`fn` with the arguments `names` read as C's size_t reads them: a negative Python int is the huge
    unsigned value it is in C (so `count > destMax`, capacity and range checks refuse it, and no byte
    moves), never a negative count."""
    params = list(inspect.signature(fn).parameters)[1:]
    where = tuple((params.index(n), n) for n in names)

    @functools.wraps(fn)
    def read(self, *args, **kwargs):
        for i, n in where:
            if i < len(args):
                a = args[i]
                if a.__class__ is int and a < 0:
                    args = (*args[:i], a % _SIZE_T, *args[i + 1:])
            else:
                a = kwargs.get(n)
                if a.__class__ is int and a < 0:
                    kwargs[n] = a % _SIZE_T
        return fn(self, *args, **kwargs)

    return read


def api(name: str, gate: bool = True, sizes: tuple = ()):
    """Mark a method as the ACL API `name`: lock, host clock, product gate, error message.

    Host clock: the call costs `call_overhead`; in "wall" host-time mode the thread's
    clock first gains the wall time since its previous call returned (times the
    scale). The wall clock is read only in that mode, once on entry (inside the
    lock, so waiting for another thread's call is not counted) and once on return.

    The product gate (an API the product does not support fails with 207000)
    belongs to the runtime layer, so on a product without the API it fires at
    the method's first runtime-layer step (a context, handle or address lookup),
    after the ACL layer's argument checks and shortcuts.
    gate=False leaves the gate to the method (see `Core.gate`), for APIs whose
    ACL layer treats the runtime's "not supported" specially.

    sizes: the names of the arguments the C API declares size_t (sizes, counts, pitches, widths,
    heights, offsets), read as C reads them (see `_c_sizes`).
    """

    def wrap(fn):
        if sizes:
            fn = _c_sizes(fn, sizes)

        @functools.wraps(fn)
        def call(self: "Core", *args, **kwargs):
            with self.lock:
                st = self._st = self._state  # this thread's state, for the rest of the call
                wall = self._wall
                if wall:  # host_time="wall": the host's own time since this thread's previous call
                    now = perf_counter()
                    last, st.returned = st.returned, None  # None while inside a call: no gap for nested ones
                    if last is not None:
                        st.clock += (now - last) * wall
                t0 = st.clock
                st.clock = t0 + self.call_overhead
                st.gate = name if gate and name in self._unsupported else None
                try:
                    return fn(self, *args, **kwargs)
                except AclError as err:
                    if not err.message:
                        err.message = f"{name} failed"
                    set_recent_error(f"{name}: {err}")
                    raise
                finally:
                    st.gate = None
                    calls = self._calls  # the call log's pending tuples, turned into compact rows by the chunk
                    calls.append((name, st.ident, t0, st.clock))
                    if len(calls) >= CHUNK:
                        self.call_log.flush()
                    if wall:
                        st.returned = perf_counter()

        call.acl_name = name
        return call

    return wrap


def fail(code: int, message: str) -> None:
    raise AclError(code, message)


class _ThreadState:
    """Per host thread: current context, virtual clock, deferred product gate, capture modes,
    and (host_time="wall") the wall time its previous API call returned."""

    __slots__ = ("ctx", "clock", "gate", "ident", "capture_modes", "exchange_mode", "returned")

    def __init__(self):
        self.ctx = None
        self.clock = 0.0
        self.returned: float | None = None  # perf_counter() at the last return; None: no call yet
        self.gate = None
        self.ident = threading.get_ident()
        self.capture_modes: dict[int, int] = {}
        self.exchange_mode = 0  # aclmdlRICaptureMode GLOBAL


class _Handles(dict):
    """Handle -> live context, stream, event or modelRI. A destroyed object is dropped: by the runtime as it
    destroys it, and, for one marked destroyed elsewhere, by a sweep each time the table has doubled. Handles
    are never reused (`_handles`), so a dropped handle is one the table does not know, which gives the code
    a destroyed handle gives (107017 for a stream or event, ...): no object is kept for it."""

    __slots__ = ("_sweep_at",)
    _SWEEP_MIN = 1024

    def __init__(self):
        super().__init__()
        self._sweep_at = self._SWEEP_MIN

    def __setitem__(self, handle: int, obj) -> None:
        dict.__setitem__(self, handle, obj)
        if len(self) >= self._sweep_at:
            for h in [h for h, o in self.items() if getattr(o, "destroyed", False)]:
                del self[h]
            self._sweep_at = max(self._SWEEP_MIN, 2 * len(self))


class _PerThread(threading.local):
    def __init__(self):
        self.state = _ThreadState()


class Context:
    """A context (aclrtContext) of a device: its default stream and the streams created in it. `primary`:
    the device's primary context, the one aclrtSetDevice makes current."""

    def __init__(self, device: "Device", primary: bool):
        self.handle = next(_handles)
        self.device = device
        self.primary = primary
        self.destroyed = False
        self.streams: list[Stream] = []
        self.default_stream: Stream | None = None
        self.capture_modes: dict[int, int] = {}  # active captures per mode (aclmdlRICaptureMode)


class Stream:
    """A stream (aclrtStream) of a context; its tasks run on `m`, a stream of the timing model. A context's
    default stream has handle 0."""

    def __init__(self, ctx: Context, mstream, flags: int = 0, priority: int = 0, default: bool = False):
        self.handle = 0 if default else next(_handles)
        self.ctx = ctx
        self.m = mstream  # the models.Stream the tasks run on
        self.flags = flags
        self.priority = priority
        self.default = default
        self.destroyed = False
        self.capture = None  # the active Capture while this stream is being captured

    @property
    def device(self) -> int:
        return self.ctx.device.id

    @property
    def capturing(self) -> bool:
        return self.capture is not None

    def __repr__(self) -> str:
        return f"<Stream {self.m.name}>"


# aclrtEventWaitStatus
EVENT_WAIT_STATUS_COMPLETE = 0
EVENT_WAIT_STATUS_NOT_READY = 1

# Stream flags that make synchronize and query return at once (ApiErrorDecorator::StreamSynchronize).
_NO_SYNC_STREAM_FLAGS = C.ACL_STREAM_PERSISTENT | C.ACL_STREAM_DEVICE_USE_ONLY | C.ACL_STREAM_CPU_SCHEDULE
# The ACL stream flags aclrtCreateStreamWithConfig maps; every other bit is dropped (stream.cpp).
_STREAM_FLAGS = 0x3F


class Event:
    """An event (aclrtEvent): its ACL_EVENT_* flags, its device, its latest record and the stream waits on it.

    ex: made by aclrtCreateEventExWithFlag (the runtime's "new mode" event, the only kind a capture
    may record)."""

    def __init__(self, flags: int, device: int, ex: bool = False):
        self.handle = next(_handles)
        self.flags = flags
        self.device = device
        self.ex = ex
        self.record: Task | None = None  # the latest record's marker task
        self.waits: list[Task] = []  # stream-wait tasks on this event not yet seen complete
        self.destroyed = False
        self.capture = None  # the Capture its latest record went into

    @property
    def captured(self) -> bool:
        """Event::IsCapturing: its latest record went into a capture that is still active."""
        cap = self.capture
        return cap is not None and cap.stream.capture is cap

    @property
    def can_wait(self) -> bool:
        """Event::IsEventWithoutWaitTask is false: one of DDSYNC_NS, DDSYNC, EXTERNAL, IPC."""
        return bool(self.flags & (C.ACL_EVENT_SYNC | C.ACL_EVENT_DDSYNC | C.ACL_EVENT_EXTERNAL | C.ACL_EVENT_IPC))

    @property
    def timed(self) -> bool:
        return bool(self.flags & C.ACL_EVENT_TIME_LINE)


class Device:
    """A device's state: the references aclrtSetDevice and aclrtCreateContext hold on it, its primary
    context, its contexts and how many events it has."""

    def __init__(self, device_id: int):
        self.id = device_id
        self.refcount = 0
        self.primary: Context | None = None
        self.contexts: list[Context] = []
        self.events = 0
        self.regions: set = set()

    @property
    def streams(self) -> int:
        return sum(len(c.streams) + 1 for c in self.contexts)


class Core:
    """The whole emulated process.

    host_time: "calls" (the host clock counts only API call costs) or "wall" (it also
    counts the host's real wall time between a thread's API calls, times host_time_scale).
    records: what the run keeps of its device tasks and host API calls (see `configure`): "all", an int N
    (the last N of each), None (none), or a path / writable file (each written as a JSON line, none
    kept). Counts (calls by API, bytes by route, the latest completion) cover every one whatever is kept.
    """

    def __init__(self, product: Product, functional: bool = True, host_time: str = "calls",
                 host_time_scale: float = 1.0, records=ALL):
        self.product = product
        self.functional = functional
        self._host_time = check_host_time(host_time, host_time_scale)
        self._wall = self._host_time[1] if host_time == "wall" else 0.0  # the api decorator's test: 0 = off
        self.lock = threading.RLock()
        self.space = AddressSpace(product.device_count, product.memory_bytes, functional)
        policy, sink = trace.parse_keep(records)  # one sink (one file) for tasks and calls
        self.machine = Machine(product.hardware, records=sink or policy)
        self.call_log = trace.CallLog(sink or policy)
        self._calls = self.call_log.pending
        self.visible = self._visible_devices()
        self.devices = [Device(i) for i in range(product.device_count)]
        self.handles = _Handles()  # live handles only: a destroyed one is dropped (see _Handles)
        self.init_refcount = 0
        self.finalized = False
        self.init_hash: str | None = None
        self.default_device: int | None = None
        self.call_overhead = product.hardware.call_overhead
        self.peers: set[tuple[int, int]] = set()  # (device, peer): device may access peer's memory
        self.descriptors: dict[int, tuple[int, int, int]] = {}  # desc address -> (src, dst, count) last set
        self._tls = _PerThread()
        self._st = self._state  # the calling thread's state while an API call holds the lock
        self._unsupported = product.unsupported
        self._ep = product.ep_mode
        self._units: dict[tuple, int] = {}  # (src device, dst device) -> the runtime's task size

    def gate(self, name: str) -> None:
        """The product gate: an API this product does not support fails with 207000."""
        if name in self.product.unsupported:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 f"{name} is not supported on {self.product.name} ({self.product.title})")

    def runtime_layer(self) -> None:
        """The call has passed the ACL layer: apply the product gate the decorator deferred."""
        name = self._st.gate
        if name is not None:
            self._st.gate = None
            self.gate(name)

    @property
    def calls(self) -> Counter:
        """How many times each ACL API was called (every call, whatever the records keep)."""
        with self.lock:
            return Counter(self.call_log.counter())

    @property
    def host_calls(self) -> list[tuple]:
        """(api, host thread, start, end) of each kept API call, in call order; times in simulated seconds."""
        with self.lock:
            return self.call_log.array().tolist()

    @property
    def host_time(self) -> str:
        """"calls" or "wall": whether the host's time between API calls advances its clock."""
        return self._host_time[0]

    @property
    def host_time_scale(self) -> float:
        """In "wall" mode, the factor on the host's wall time between calls (0: as "calls")."""
        return self._host_time[1]

    @property
    def _state(self) -> _ThreadState:
        return self._tls.state

    # -- thread state and the host clock ------------------------------------------
    @property
    def ctx(self) -> Context | None:
        st = self._tls.state
        ctx = st.ctx
        if ctx is not None and ctx.destroyed:
            st.ctx = ctx = None
        return ctx

    @ctx.setter
    def ctx(self, value: Context | None) -> None:
        self._tls.state.ctx = value

    @property
    def clock(self) -> float:
        """This host thread's virtual time, in simulated seconds."""
        return self._tls.state.clock

    @clock.setter
    def clock(self, t: float) -> None:
        self._tls.state.clock = t

    def tick(self, seconds: float | None = None) -> None:
        """Spend host time (one API call by default). The devices run lazily: see `catch_up`."""
        self.clock = self.clock + (self.product.hardware.call_overhead if seconds is None else seconds)

    # -- what happened --------------------------------------------------------------------
    def records(self):
        """The kept completed device tasks (all of them by default; see `records=` of `configure`) as a numpy
        structured array (models.trace.RECORD): api, kind, stream, device, engine, route, links, bytes, tasks,
        submit, start, end; times in simulated seconds; in completion order."""
        with self.lock:
            return self.machine.records.array()

    def record_totals(self) -> dict:
        """Counters over every completed device task, whatever the records keep: tasks, end (the latest
        completion, simulated seconds), bytes_by_route and tasks_by_route (copies and fills; "memset" for
        fills)."""
        with self.lock:
            return self.machine.records.totals()

    def flush_records(self) -> None:
        """Write what the logs hold to the records file (records=path or file); a no-op otherwise."""
        with self.lock:
            self.machine.records.flush()
            self.call_log.flush()
            sink = self.machine.records.sink or self.call_log.sink
            if sink is not None:
                sink.flush()

    def write_trace(self, path) -> None:
        """A Chrome / Perfetto trace of the kept records: host threads, streams, engines and links."""
        with self.lock:
            tasks, calls = self.machine.records.array(), self.call_log.array()
        trace.write_chrome_trace(path, tasks, calls)

    def catch_up(self) -> None:
        """Let the devices run up to this host thread's time, before the host looks at their state."""
        self.machine.run_until(self.clock)

    def wait_for(self, task: Task) -> None:
        """Block this host thread until `task` completes."""
        end = self.machine.wait(task)
        self.clock = max(self.clock, end)

    def current_context(self, implicit: bool = True) -> Context:
        """The thread's context, else 107002; `implicit` paths may first open the aclInit default device."""
        if self._st.gate is not None:
            self.runtime_layer()
        ctx = self.ctx
        if ctx is None and implicit and self.default_device is not None:
            self._set_device(self.default_device)
            ctx = self.ctx
        if ctx is None:
            fail(ACL_ERROR_RT_CONTEXT_NULL, "no current context: call aclrtSetDevice first")
        return ctx

    # -- handles -----------------------------------------------------------------
    def _lookup(self, handle: int, typ, what: str):
        if self._st.gate is not None:
            self.runtime_layer()
        if handle.__class__ is not int:
            if isinstance(handle, bool) or not hasattr(handle, "__index__"):
                raise TypeError(f"{what} handle must be an int, got {type(handle).__name__} {handle!r}")
            handle = handle.__index__()
        obj = self.handles.get(handle)
        if not isinstance(obj, typ) or obj.destroyed:
            fail(ACL_ERROR_RT_INVALID_HANDLE, f"{what} handle 0x{handle:x} is not a live {what}")
        return obj

    def stream_of(self, handle: int, check_context: bool = True) -> Stream:
        """Resolve a stream handle: 0 is the current context's default stream; a handle that is not a live
        stream is 107017, a stream of another context (check_context) 107003."""
        if handle == 0:
            return self.current_context().default_stream
        s = self._lookup(handle, Stream, "stream")
        if check_context:
            ctx = self.current_context()
            if s.ctx is not ctx:
                fail(ACL_ERROR_RT_STREAM_CONTEXT,
                     f"stream 0x{handle:x} belongs to a context of device {s.device}, "
                     f"not to the current context (device {ctx.device.id})")
        return s

    def check_not_capturing(self, s: Stream) -> None:
        if s.capture is not None:
            fail(ACL_ERROR_RT_STREAM_CAPTURED, f"stream 0x{s.handle:x} is being captured")

    def check_stream_handle(self, handle: int) -> None:
        if self._st.gate is not None:
            self.runtime_layer()
        if handle != 0:
            self._lookup(handle, Stream, "stream")

    def event_of(self, handle: int) -> Event:
        return self._lookup(handle, Event, "event")

    # -- init / finalize ------------------------------------------------------------
    @api("aclInit")
    def init(self, config_path: str | None = None) -> None:
        """Initialise ACL (aclInit), optionally from a JSON config file.

        config_path: None or a JSON file; its "defaultDevice" (an id, or {"default_device": id}) is the device
        a thread without a context opens on its first call that needs one. Raises 100002 if ACL is already
        initialised; 100000 for a file that cannot be read or is not JSON, or (after aclFinalize) for a config
        other than the first one."""
        if self.init_refcount > 0:
            self.init_refcount += 1
            fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit was already called")
        content = b""
        if config_path:
            try:
                with open(config_path, "rb") as f:
                    content = f.read()
            except OSError as e:
                fail(ACL_ERROR_INVALID_PARAM, f"cannot read config {config_path}: {e.strerror}")
        digest = hashlib.sha256(content).hexdigest()
        if self.finalized and self.init_hash is not None and digest != self.init_hash:
            fail(ACL_ERROR_INVALID_PARAM, "aclInit after aclFinalize with a different config")
        if content.strip():
            try:
                cfg = json.loads(content)
            except ValueError as e:
                fail(ACL_ERROR_INVALID_PARAM, f"config {config_path} is not JSON: {e}")
            dd = cfg.get("defaultDevice") if isinstance(cfg, dict) else None
            if isinstance(dd, dict):
                dd = dd.get("default_device")
            if dd is not None:
                try:
                    self.default_device = int(dd)
                except (TypeError, ValueError, OverflowError):
                    fail(ACL_ERROR_INVALID_PARAM, f"defaultDevice {dd!r} is not a device id")
        self.init_hash = self.init_hash or digest
        self.init_refcount = 1
        self.finalized = False

    @api("aclFinalize")
    def finalize(self) -> None:
        """Finalise ACL (aclFinalize); a second call raises 100037. Devices, memory and streams stay as they are."""
        if self.finalized:
            fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize was already called")
        self.finalized = True
        self.init_refcount = 0

    # -- devices --------------------------------------------------------------------
    def _visible_devices(self) -> list[int]:
        spec = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
        n = self.product.device_count
        if not spec:
            return list(range(n))
        try:
            ids = [int(x) for x in spec.split(",") if x.strip()]
        except ValueError:
            return []
        return [i for i in ids if 0 <= i < n]

    def physical(self, device_id: int) -> "Device":
        if self._st.gate is not None:
            self.runtime_layer()
        if not isinstance(device_id, int) or not 0 <= device_id < len(self.visible):
            fail(ACL_ERROR_RT_INVALID_DEVICEID,
                 f"device {device_id} is not one of the {len(self.visible)} visible devices of "
                 f"{self.product.name}")
        return self.devices[self.visible[device_id]]

    def _new_context(self, dev: Device, primary: bool) -> Context:
        ctx = Context(dev, primary)
        m = self.machine.stream(f"dev{dev.id}/ctx{ctx.handle:x}/default", dev.id)
        ctx.default_stream = Stream(ctx, m, default=True)
        dev.contexts.append(ctx)
        self.handles[ctx.handle] = ctx
        return ctx

    def _set_device(self, device_id: int) -> None:
        dev = self.physical(device_id)
        if dev.refcount == 0 or dev.primary is None:
            dev.primary = self._new_context(dev, primary=True)
        dev.refcount += 1
        self.ctx = dev.primary

    @api("aclrtSetDevice")
    def set_device(self, device_id: int) -> None:
        """Make `device_id` (an index into the visible devices) this thread's current device (aclrtSetDevice).

        The first set creates the device's primary context and its default stream; each set holds a reference
        that aclrtResetDevice releases. An id outside the visible devices (ASCEND_RT_VISIBLE_DEVICES) raises
        107001."""
        self._set_device(device_id)

    def _release_context(self, ctx: Context) -> None:
        for s in [ctx.default_stream, *ctx.streams]:
            if not s.m.idle:
                self.wait_for(s.m.last)
            s.destroyed = True
            self.handles.pop(s.handle, None)
        ctx.streams.clear()
        ctx.destroyed = True
        self.handles.pop(ctx.handle, None)
        ctx.device.contexts.remove(ctx)
        if self.ctx is ctx:
            self.ctx = None

    def _release_device(self, dev: Device) -> None:
        """The device's contexts, streams and allocations go. Host registrations stay, with the device
        addresses of mapped ones: the runtime keeps them in process-wide tables (register_memory.cc
        g_pinnedHost / g_mappedHost / g_mappedPair) that rtDeviceReset does not touch; aclrtHostUnregister
        releases them."""
        for ctx in list(dev.contexts):
            self._release_context(ctx)
        dev.primary = None
        dev.refcount = 0
        for r in [r for r in self.space.regions() if r.is_device and r.device == dev.id and r.origin != "alias"]:
            self.space.free_device(r)

    @api("aclrtResetDevice")
    def reset_device(self, device_id: int) -> None:
        """Release one reference on `device_id` held by aclrtSetDevice or aclrtCreateContext (aclrtResetDevice).

        At the last one the device's contexts and streams go (after their queued tasks complete), and so does
        its device memory; host registrations stay. A device that is not set raises 507007."""
        dev = self.physical(device_id)
        if dev.refcount <= 0:
            fail(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, f"device {device_id} is not set (or already reset)")
        dev.refcount -= 1
        if dev.refcount == 0:
            self._release_device(dev)

    @api("aclrtResetDeviceForce")
    def reset_device_force(self, device_id: int) -> None:
        """Release `device_id` whatever its reference count, as aclrtResetDevice does at the last reference
        (aclrtResetDeviceForce). A device that is not set (or already reset) raises 507007."""
        dev = self.physical(device_id)
        if dev.refcount <= 0:
            fail(ACL_ERROR_RT_CONTEXT_RELEASE_ERROR, f"device {device_id} is not set (or already reset)")
        self._release_device(dev)

    @api("aclrtGetDevice")
    def get_device(self) -> int:
        """This thread's current device id (aclrtGetDevice); without a context, the aclInit default device, else
        107002."""
        ctx = self.ctx
        if ctx is None:
            if self.default_device is not None:
                return self.default_device
            fail(ACL_ERROR_RT_CONTEXT_NULL, "no current device: call aclrtSetDevice first")
        return self.visible.index(ctx.device.id)

    @api("aclrtGetDeviceCount")
    def get_device_count(self) -> int:
        """How many devices are visible (aclrtGetDeviceCount): the product's, or those ASCEND_RT_VISIBLE_DEVICES
        names (207004 when it names none of them)."""
        if not self.visible:
            fail(ACL_ERROR_RT_NO_DEVICE, "ASCEND_RT_VISIBLE_DEVICES names no device of this product")
        return len(self.visible)

    @api("aclrtGetRunMode")
    def get_run_mode(self) -> int:
        """ACL_HOST (1) on an EP deployment (the host drives a card), ACL_DEVICE (0) on RC and control-CPU ones
        (the program runs on the board) (aclrtGetRunMode)."""
        return C.ACL_HOST if self.product.ep_mode else C.ACL_DEVICE

    @api("aclrtSynchronizeDevice")
    def synchronize_device(self) -> None:
        """Block this thread until every stream of the current context, its default stream included, is drained
        (aclrtSynchronizeDevice). A task that failed on one raises 507899."""
        ctx = self.current_context()
        for s in [ctx.default_stream, *ctx.streams]:
            self._drain(s)

    # -- contexts -------------------------------------------------------------------
    @api("aclrtCreateContext")
    def create_context(self, device_id: int) -> int:
        """Create a context on `device_id` and make it this thread's current one (aclrtCreateContext); returns its
        handle. Like aclrtSetDevice it holds a reference on the device (creating its primary context first if
        needed), which aclrtDestroyContext releases."""
        dev = self.physical(device_id)
        if dev.refcount == 0 or dev.primary is None:
            dev.primary = self._new_context(dev, primary=True)
        dev.refcount += 1
        ctx = self._new_context(dev, primary=False)
        self.ctx = ctx
        return ctx.handle

    @api("aclrtDestroyContext")
    def destroy_context(self, handle: int) -> None:
        """Destroy a context of aclrtCreateContext (aclrtDestroyContext): its streams go (after their queued
        tasks), and its reference on the device, the last of which releases the device as aclrtResetDevice does.

        context.cpp: aclrtDestroyContextImpl; ApiErrorDecorator::ContextDestroy; ApiImpl::ContextDestroy:
        a context that is not live, or the primary one, is RT_ERROR_CONTEXT_NULL (107002)."""
        if handle == 0:
            fail(ACL_ERROR_INVALID_PARAM, "context is null")
        ctx = self._live_context(handle, ACL_ERROR_RT_CONTEXT_NULL)
        if ctx.primary:
            fail(ACL_ERROR_RT_CONTEXT_NULL, "the primary context cannot be destroyed: aclrtResetDevice releases it")
        dev = ctx.device
        self._release_context(ctx)
        dev.refcount -= 1
        if dev.refcount == 0:
            self._release_device(dev)

    @api("aclrtSetCurrentContext")
    def set_context(self, handle: int) -> None:
        """Make context `handle` this thread's current context, and its device the current device
        (aclrtSetCurrentContext).

        context.cpp: aclrtSetCurrentContextImpl; ApiErrorDecorator::ContextSetCurrent:
        CHECK_CONTEXT_VALID_WITH_RETURN(ctx, RT_ERROR_INVALID_VALUE) -> 107000 for a context that is not live."""
        if handle == 0:
            fail(ACL_ERROR_INVALID_PARAM, "context is null")
        self.ctx = self._live_context(handle, ACL_ERROR_RT_PARAM_INVALID)

    def _live_context(self, handle: int, code: int) -> Context:
        if self._st.gate is not None:
            self.runtime_layer()
        ctx = self.handles.get(handle)
        if not isinstance(ctx, Context) or ctx.destroyed:
            fail(code, f"context 0x{handle:x} is not a live context")
        return ctx

    @api("aclrtGetCurrentContext")
    def get_context(self) -> int:
        """This thread's current context handle (aclrtGetCurrentContext); 107002 without one (the aclInit default
        device is not opened)."""
        return self.current_context(implicit=False).handle

    # -- streams ---------------------------------------------------------------------
    def _new_stream(self, flags: int = 0, priority: int = 0) -> int:
        ctx = self.current_context()
        dev = ctx.device
        if dev.streams >= self.product.max_streams:
            fail(ACL_ERROR_RT_NO_STREAM_RESOURCE,
                 f"device {dev.id} already has {self.product.max_streams} streams, the limit on "
                 f"{self.product.name}")
        s = Stream(ctx, None, flags=flags, priority=priority)
        s.m = self.machine.stream(f"dev{dev.id}/stream{s.handle:x}", dev.id)
        ctx.streams.append(s)
        self.handles[s.handle] = s
        return StreamHandle(s.handle, self)

    @api("aclrtCreateStream")
    def create_stream(self) -> int:
        """Create a stream in the current context (aclrtCreateStream); returns its handle. Past the product's stream
        limit per device (default streams included): 207008."""
        return self._new_stream()

    @api("aclrtCreateStreamWithConfig")
    def create_stream_with_config(self, priority: int, flag: int) -> int:
        """Create a stream in the current context with a priority (clamped to 0..7) and ACL_STREAM_* flags
        (aclrtCreateStreamWithConfig); returns its handle. HUGE on a product without it raises 207000;
        DEVICE_USE_ONLY combined with another flag, 107000.

        acl stream.cpp: aclrtCreateStreamWithConfigImpl (unknown bits dropped), then
        api_error.cc: ApiErrorDecorator::StreamCreate / CheckStreamFlags, api_impl.cc: ApiImpl::StreamCreate."""
        self.runtime_layer()
        flag &= _STREAM_FLAGS
        if flag & C.ACL_STREAM_HUGE and not self.product.has("huge_stream"):  # RT_FEATURE_STREAM_HUGE_DEPTH
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"ACL_STREAM_HUGE streams are not supported on {self.product.name}")
        if flag & C.ACL_STREAM_DEVICE_USE_ONLY and flag != C.ACL_STREAM_DEVICE_USE_ONLY:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"stream flag 0x{flag:x}: ACL_STREAM_DEVICE_USE_ONLY must stand alone")
        prio = (int(priority) + 2**31) % 2**32 - 2**31  # the runtime reads the uint32 as int32
        return self._new_stream(flags=flag, priority=min(max(prio, 0), 7))

    def _drain(self, s: Stream) -> None:
        if not s.m.idle:
            self.wait_for(s.m.last)
        if s.m.failed:
            task, s.m.failed[:] = s.m.failed[0], []
            fail(ACL_ERROR_RT_DRV_INTERNAL_ERROR, f"{task.label} on {s.m.name} failed: {task.error}")

    def _destroy_stream(self, handle: int, wait: bool) -> None:
        """api_c_stream.cc: rtStreamDestroy(Force); ApiErrorDecorator::StreamDestroy; ApiImpl::StreamDestroy."""
        if handle == 0:
            fail(ACL_ERROR_INVALID_PARAM, "stream is null")
        s = self._lookup(handle, Stream, "stream")
        self.check_not_capturing(s)
        self.stream_of(handle)  # 107002 without a context, 107003 from another context
        if wait and not s.m.idle:
            self.wait_for(s.m.last)
        s.destroyed = True
        self.handles.pop(handle, None)
        if s in s.ctx.streams:
            s.ctx.streams.remove(s)

    @api("aclrtDestroyStream")
    def destroy_stream(self, handle: int) -> None:
        """Destroy a stream of the current context once its queued tasks complete (aclrtDestroyStream).

        A null handle raises 100000, a stream being captured 107027, a stream of another context 107003."""
        self._destroy_stream(handle, wait=True)

    @api("aclrtDestroyStreamForce")
    def destroy_stream_force(self, handle: int) -> None:
        """Destroy a stream at once, without waiting for its queued tasks (aclrtDestroyStreamForce); the checks are
        aclrtDestroyStream's."""
        self._destroy_stream(handle, wait=False)

    def _sync_target(self, handle: int, timeout_ms: int = -1) -> Stream | None:
        """The checks synchronize and query share, in order: the handle (107017), a zero timeout (107000),
        a capturing stream (107027), the flags that return at once (None), no context (107002).
        A stream of another context is allowed (ApiImpl::StreamSynchronize switches context)."""
        s = None if handle == 0 else self._lookup(handle, Stream, "stream")
        if self._st.gate is not None:
            self.runtime_layer()
        if timeout_ms == 0:
            fail(ACL_ERROR_RT_PARAM_INVALID, "timeout 0 ms: must be -1 (forever) or > 0")
        if s is not None:
            self.check_not_capturing(s)
            if s.flags & _NO_SYNC_STREAM_FLAGS:
                return None
        ctx = self.current_context()
        return s if s is not None else ctx.default_stream

    @api("aclrtSynchronizeStream")
    def synchronize_stream(self, handle: int = 0) -> None:
        """Block this thread until every task queued on stream `handle` (0: the default stream) has completed
        (aclrtSynchronizeStream); a stream created PERSISTENT, DEVICE_USE_ONLY or CPU_SCHEDULE returns at
        once. A task that failed raises 507899; a stream being captured, 107027.

        stream.cpp: aclrtSynchronizeStreamImpl; ApiErrorDecorator::StreamSynchronize; ApiImpl::StreamSynchronize."""
        s = self._sync_target(handle)
        if s is not None:
            self._drain(s)

    @api("aclrtSynchronizeStreamWithTimeout")
    def synchronize_stream_with_timeout(self, handle: int, timeout_ms: int) -> None:
        """As aclrtSynchronizeStream, waiting at most `timeout_ms` of simulated time (-1: forever)
        (aclrtSynchronizeStreamWithTimeout). Past it, this thread's clock is at the deadline and 507046 is
        raised; a timeout of 0 or below -1 raises 107000.

        stream.cpp: aclrtSynchronizeStreamWithTimeoutImpl (timeout < -1 -> 107000), then as synchronize."""
        if timeout_ms < -1:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"timeout {timeout_ms} ms: must be -1 (forever) or > 0")
        s = self._sync_target(handle, timeout_ms)
        if s is None:
            return
        if timeout_ms > 0 and not s.m.idle:
            deadline = self.clock + timeout_ms / 1000.0
            self.machine.run_until(deadline)
            if not s.m.last.completed:
                self.clock = deadline
                fail(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT,
                     f"stream not complete after {timeout_ms} ms of simulated time")
        self._drain(s)

    @api("aclrtStreamQuery")
    def stream_query(self, handle: int = 0) -> int:
        """ACL_STREAM_STATUS_COMPLETE (0) when every task queued on stream `handle` (0: the default stream) has
        completed by this thread's time, else ACL_STREAM_STATUS_NOT_READY (1) (aclrtStreamQuery).

        stream.cpp: aclrtStreamQueryImpl; ApiErrorDecorator::StreamQuery; ApiImpl::StreamQuery."""
        s = self._sync_target(handle)
        if s is None:
            return C.ACL_STREAM_STATUS_COMPLETE
        self.catch_up()
        return C.ACL_STREAM_STATUS_COMPLETE if s.m.idle else C.ACL_STREAM_STATUS_NOT_READY

    # -- events -----------------------------------------------------------------------
    def _new_event(self, flags: int, ex: bool = False) -> int:
        dev = self.current_context().device
        if dev.events >= self.product.max_events:
            fail(ACL_ERROR_RT_NO_EVENT_RESOURCE, f"device {dev.id} has no event left")
        ev = Event(flags, dev.id, ex)
        dev.events += 1
        self.handles[ev.handle] = ev
        return EventHandle(ev.handle, self)

    @api("aclrtCreateEvent")
    def create_event(self) -> int:
        """Create an event on the current device with the default flags 0x0E (aclrtCreateEvent): timed, can be
        waited on and reset; returns its handle. Past the product's event limit per device: 207007."""
        return self._new_event(C.ACL_EVENT_DEFAULT_FLAGS)

    @api("aclrtCreateEventWithFlag")
    def create_event_with_flag(self, flag: int) -> int:
        """Create an event with ACL_EVENT_* flags (aclrtCreateEventWithFlag); returns its handle.

        `flag` must set a bit of 0x3F and no higher one (no IPC events here), with DEVICE_USE_ONLY (0x10) and
        EXTERNAL (0x20) only alone; otherwise 107000."""
        if flag & 0x3F == 0:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{flag:x} sets no known bit")
        if flag > 0x3F:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{flag:x} is out of range (IPC events unsupported)")
        for solo in (C.ACL_EVENT_DEVICE_USE_ONLY, C.ACL_EVENT_EXTERNAL):
            if flag & solo and flag != solo:
                fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{solo:x} cannot be combined with others")
        return self._new_event(flag)

    @api("aclrtCreateEventExWithFlag")
    def create_event_ex_with_flag(self, flag: int) -> int:
        """Create a "new mode" event, the only kind a capture may record (aclrtCreateEventExWithFlag); returns
        its handle. `flag`: an OR of SYNC 0x1, CAPTURE_STREAM_PROGRESS 0x2, DDSYNC 0x4 and TIME_LINE 0x8, or
        IPC 0x40 alone (207000 on products without IPC events); otherwise 107000.

        src/runtime/api/impl/api_error.cc: ApiErrorDecorator::EventCreateEx, then api_impl.cc: EventCreateEx."""
        self.runtime_layer()
        for solo in (C.ACL_EVENT_DEVICE_USE_ONLY, C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC):
            if flag & solo and flag & ~solo:
                fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{flag:x}: 0x{solo:x} cannot be combined with others")
        if flag == C.ACL_EVENT_IPC and not self.product.has("ipc_event"):  # RT_FEATURE_IPC_EVENT
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"IPC events are not supported on {self.product.name}")
        known = C.ACL_EVENT_SYNC | C.ACL_EVENT_CAPTURE_STREAM_PROGRESS | C.ACL_EVENT_DDSYNC | \
            C.ACL_EVENT_TIME_LINE | C.ACL_EVENT_IPC
        if flag & known == 0 or flag > known:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"event flag 0x{flag:x}: expected an OR of 0x1, 0x2, 0x4, 0x8, "
                                             f"or 0x40 alone")
        return self._new_event(flag, ex=True)

    @api("aclrtDestroyEvent")
    def destroy_event(self, handle: int) -> None:
        """Destroy an event (aclrtDestroyEvent); records and waits already queued still run."""
        if handle == 0:
            fail(ACL_ERROR_INVALID_PARAM, "event is null")
        ev = self.event_of(handle)
        ev.destroyed = True
        self.handles.pop(handle, None)
        self.devices[ev.device].events -= 1

    def submit(self, stream: Stream, task: Task) -> Task:
        """Queue a task on a stream; on a capturing stream it is recorded into the graph instead."""
        if stream.capture is not None:
            stream.capture.tasks.append(task)
            return task
        return self.machine.submit(stream.m, task, self._st.clock)

    @staticmethod
    def _check_event_not_captured(ev: Event) -> None:
        if ev.captured:
            fail(ACL_ERROR_RT_EVENT_CAPTURED, f"event 0x{ev.handle:x} was recorded in a capture")

    def _event_and_stream(self, event: int, stream: int, what: str) -> tuple[Event, Stream | None]:
        """The C entry's handle checks (event, then stream: 107017) and the decorator's MC2 rule (107000)."""
        if event == 0:
            fail(ACL_ERROR_INVALID_PARAM, "event is null")
        ev = self.event_of(event)
        s = None if stream == 0 else self._lookup(stream, Stream, "stream")
        if self._st.gate is not None:
            self.runtime_layer()
        if ev.flags & C.ACL_EVENT_DEVICE_USE_ONLY:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"a DEVICE_USE_ONLY event cannot be {what} from the host")
        return ev, s

    @staticmethod
    def _check_ipc_not_captured(ev: Event, s: Stream | None) -> None:
        if ev.flags == C.ACL_EVENT_IPC and s is not None and s.capture is not None:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an IPC event cannot be used on a capturing stream")

    @staticmethod
    def _check_capturable(ev: Event, s: Stream) -> None:
        """ApiImpl::EventRecord / StreamWaitEvent / EventReset: on a capturing stream only an
        aclrtCreateEventExWithFlag event (or an EXTERNAL one, which is never captured) is allowed."""
        if s.capture is not None and not ev.ex and ev.flags != C.ACL_EVENT_EXTERNAL:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an event of aclrtCreateEvent / aclrtCreateEventWithFlag cannot "
                                                   "be used on a capturing stream: use aclrtCreateEventExWithFlag")

    @api("aclrtRecordEvent")
    def record_event(self, event: int, stream: int = 0) -> None:
        """Queue a record of `event` on `stream` (0: the default stream) (aclrtRecordEvent): the record
        completes when every earlier task on the stream has. On a capturing stream it goes into the capture:
        only aclrtCreateEventExWithFlag (or EXTERNAL) events may be recorded there, others raise 207000.

        event.cpp: aclrtRecordEventImpl; api_c.cc: rtEventRecord; ApiErrorDecorator::EventRecord; ApiImpl::EventRecord."""
        ev, _ = self._event_and_stream(event, stream, "recorded")
        s = self.stream_of(stream)
        self._check_ipc_not_captured(ev, s)
        self._check_capturable(ev, s)
        if s.capture is not None and ev.flags != C.ACL_EVENT_EXTERNAL and not ev.can_wait:
            return  # ApiImpl::EventRecord: an Ex event without wait capability is not captured; 0
        task = self.submit(s, Task(MARKER, device=s.device, label=f"record event 0x{event:x}"))
        if s.capture is None:
            ev.record, ev.capture = task, None
        elif ev.flags != C.ACL_EVENT_EXTERNAL:
            ev.capture = s.capture  # a captured record runs only when the model does: the live one stays

    @api("aclrtResetEvent")
    def reset_event(self, event: int, stream: int = 0) -> None:
        """Forget the latest record of `event` (aclrtResetEvent), at once: `stream` is checked, nothing is
        queued on it. An event that cannot be waited on (no SYNC, DDSYNC, EXTERNAL or IPC flag), or made by
        aclrtCreateEventExWithFlag, raises 207000.

        event.cpp: aclrtResetEventImpl; api_c.cc: rtEventReset; ApiErrorDecorator::EventReset; ApiImpl::EventReset."""
        ev, _ = self._event_and_stream(event, stream, "reset")
        if ev.flags == C.ACL_EVENT_IPC:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an IPC event cannot be reset")
        if not ev.can_wait:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"an event of flag 0x{ev.flags:x} (no ACL_EVENT_SYNC) cannot be reset")
        ctx = self.current_context()
        if ev.ex:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an aclrtCreateEventExWithFlag event cannot be reset")
        s = self.stream_of(stream)
        if s is not ctx.default_stream:
            self._check_capturable(ev, s)
        ev.record = None

    @api("aclrtStreamWaitEvent")
    def stream_wait_event(self, stream: int, event: int) -> None:
        """Make the tasks queued next on `stream` (0: the default stream) wait for the latest record of
        `event` (aclrtStreamWaitEvent); an event never recorded is no wait. An event that cannot be waited on
        (no SYNC, DDSYNC, EXTERNAL or IPC flag) raises 207000.

        stream.cpp: aclrtStreamWaitEventImpl; api_c_stream.cc: rtStreamWaitEvent (stream handle, then event);
        ApiErrorDecorator::StreamWaitEvent; ApiImpl::StreamWaitEvent."""
        if event == 0:
            fail(ACL_ERROR_INVALID_PARAM, "event is null")
        if stream != 0:
            self._lookup(stream, Stream, "stream")
        ev, _ = self._event_and_stream(event, stream, "waited on")
        self._check_ipc_not_captured(ev, None if stream == 0 else self.handles[stream])
        if not ev.can_wait:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"event flag 0x{ev.flags:x} has no ACL_EVENT_SYNC: it cannot be waited on")
        s = self.stream_of(stream)
        if ev.captured:
            return self._wait_captured_event(ev, s)
        self._check_capturable(ev, s)
        if s.capture is not None and ev.record is not None:
            fail(ACL_ERROR_RT_CAPTURE_DEPENDENCY, "the event was recorded outside the capture: a captured stream "
                                                  "cannot wait on it (see ACL_EVENT_WAIT_EXTERNAL)")
        if ev.record is not None:
            wait = self.submit(s, Task(MARKER, device=s.device, waits=(ev.record,), label=f"wait event 0x{event:x}"))
            n = len(ev.waits)
            if n >= 32 and n & (n - 1) == 0:  # at each power of two: keep only the waits still pending
                ev.waits = [t for t in ev.waits if not t.completed]
            ev.waits.append(wait)

    def _wait_captured_event(self, ev: Event, s: Stream) -> None:
        """ApiImpl::StreamWaitEvent on a capturing event: the default stream cannot join a capture (107031);
        a wait inside the event's own capture follows from stream order."""
        if s is s.ctx.default_stream:
            fail(ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT, "the default stream cannot wait on an event being captured")
        if s.capture is not ev.capture:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "waiting on a captured event from a stream outside that capture "
                                                   "(multi-stream capture) is not emulated")

    @api("aclrtSynchronizeEvent")
    def synchronize_event(self, event: int) -> None:
        """Block this thread until the latest record of `event` has completed (aclrtSynchronizeEvent); at once if it
        was never recorded. An EXTERNAL event raises 207000, one recorded into an active capture 107028."""
        if event == 0:
            fail(ACL_ERROR_INVALID_PARAM, "event is null")
        ev = self.event_of(event)
        if ev.flags & C.ACL_EVENT_EXTERNAL:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an EXTERNAL event cannot be synchronized")
        self._check_event_not_captured(ev)
        if ev.record is not None:
            self.wait_for(ev.record)

    @api("aclrtQueryEventStatus")
    def query_event_status(self, event: int) -> int:
        """ACL_EVENT_RECORDED_STATUS_COMPLETE (1) when the latest record of `event` has completed by this thread's
        time, else ACL_EVENT_RECORDED_STATUS_NOT_READY (0), also for an event never recorded
        (aclrtQueryEventStatus)."""
        if event == 0:
            fail(ACL_ERROR_INVALID_PARAM, "event is null")
        ev = self.event_of(event)
        if ev.flags & C.ACL_EVENT_EXTERNAL:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an EXTERNAL event cannot be queried")
        self._check_event_not_captured(ev)
        self.catch_up()
        done = ev.record is not None and ev.record.completed
        return C.ACL_EVENT_RECORDED_STATUS_COMPLETE if done else C.ACL_EVENT_RECORDED_STATUS_NOT_READY

    @api("aclrtQueryEventWaitStatus")
    def query_event_wait_status(self, event: int) -> int:
        """Whether the stream waits on `event` are over (aclrtQueryEventWaitStatus): COMPLETE (0) when the
        event cannot be waited on or every stream wait on it has completed by this thread's time, else
        NOT_READY (1).

        src/runtime/api/impl/api_impl_event_common.cc: ApiImplEvent::EventQueryWaitStatus; Event::QueryEventWaitStatus."""
        if event == 0:
            fail(ACL_ERROR_INVALID_PARAM, "event is null")
        ev = self.event_of(event)
        if ev.ex:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an aclrtCreateEventExWithFlag event has no wait status")
        if ev.flags in (C.ACL_EVENT_EXTERNAL, C.ACL_EVENT_IPC):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"an event of flag 0x{ev.flags:x} has no wait status")
        self._check_event_not_captured(ev)
        self.catch_up()
        ev.waits = [t for t in ev.waits if not t.completed]
        if ev.waits and ev.can_wait:
            return EVENT_WAIT_STATUS_NOT_READY
        return EVENT_WAIT_STATUS_COMPLETE

    @api("aclrtEventElapsedTime")
    def event_elapsed_time(self, start: int, end: int) -> float:
        """Milliseconds of simulated time from the completion of `start`'s latest record to that of `end`'s
        (aclrtEventElapsedTime); negative if `end` completed first. Both must be recorded (else 507000), created
        with ACL_EVENT_TIME_LINE and complete (else 107006)."""
        if start == 0 or end == 0:
            fail(ACL_ERROR_INVALID_PARAM, "event is null")
        a, b = self.event_of(start), self.event_of(end)
        self._check_event_not_captured(a)
        self._check_event_not_captured(b)
        if (a.flags | b.flags) & (C.ACL_EVENT_EXTERNAL | C.ACL_EVENT_IPC):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "EXTERNAL / IPC events have no elapsed time")
        if a.record is None or b.record is None:
            fail(ACL_ERROR_RT_INTERNAL_ERROR, "both events must be recorded first")
        if not (a.timed and b.timed):
            fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "an event created without ACL_EVENT_TIME_LINE has no timestamp")
        self.catch_up()
        if not (a.record.completed and b.record.completed):
            fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "an event has not completed yet: synchronize first")
        return (b.record.end - a.record.end) * 1000.0

