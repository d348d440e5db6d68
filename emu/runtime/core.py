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

Host threads and simulated time (conservative synchronization). The devices
run in one simulated time; each host thread has its own clock. The threads
that bound the others are those that have called the API (`Core.threads`),
still run (not ended, nor in `Core.ended_threads`) and are not idle where an
escape found them. A thread's bound is its clock, or, while it waits, the
time it will wake at (none while that is unknown: a thread waiting for a task
or a report bounds nothing until it has come). A thread that waits (a
synchronize, an event wait, aclrtProcessReport, a query's catch-up) lets
simulated time pass only up to the horizon, the smallest bound of the others
(`Core.horizon`, `Core.advance`); and an API call starts only when no other
thread's bound is below its clock (the earliest clock calls first, between
equal clocks the older thread: `Core.take_turn`). So no thread finds the
devices already past its clock when it queues work, a thread's calls see the
other threads' earlier calls, and simulated time does not depend on how the
OS interleaves the threads (for threads that talk to each other only through
the runtime). Held back, a thread waits (the runtime lock released) for
another thread's next call; after HORIZON_ESCAPE_S of wall time it goes on
without the threads that hold it (see there: the run is then no longer
guaranteed to be reproducible; `Core.escapes` counts it). A blocking copy or
fill waits so too (`transfer.run_blocking`).
This is the "calls" host-time mode's promise (a run repeats exactly); its price
is that threads take turns in simulated-time order, so their calls do not run
at once. In "wall" mode the host's wall time drives the clocks and no run
repeats another anyway: there the threads run freely and bound nothing.

fork(). A child process gets a working runtime: the parent's state as it was at
the fork (devices, contexts, streams, memory and its bytes), as the reference
runtime's own state is inherited (hicann/runtime registers no fork handler in
src/runtime or src/acl and checks no process id on its calls). So that the state
is consistent and nothing in it is held by a thread the child does not have, the
fork waits for every runtime's lock (and for the kernels' first compilation) and
holds them across it, as the reference's log library holds its own
(src/dfx/log/liblog/slog/dlog_core.c, pthread_atfork(DlogAtForkParpare,
DlogAtForkParent, DlogAtForkChild)); in the child, only the forking thread is
left in `Core.threads`, the others are ended threads (`_fork_hooks`). Python's
os.fork runs these hooks itself; a C program's fork() runs them through the
library (emu/capi/native.c).
"""
from __future__ import annotations

import functools
import inspect
import math
import os
import sys
import threading
import weakref
from collections import Counter
from itertools import count
from numbers import Real
from time import perf_counter

from emu.models import Clock, Machine, ReferenceNetwork, Task, trace
from emu.models.trace import ALL, CHUNK

from .. import constants as C
from ..config import Product
from ..errors import (ACL_ERROR_RT_CONTEXT_NULL, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_DEVICEID,
                      ACL_ERROR_RT_INVALID_HANDLE, ACL_ERROR_RT_MEMORY_ALLOCATION, ACL_ERROR_RT_STREAM_CAPTURED,
                      ACL_ERROR_RT_STREAM_CONTEXT, AclError, set_recent_error)
from ..memory import AddressSpace
from .handles import EventHandle, StreamHandle

_handles = count(0x5A000010, 16)  # handle values look like pointers and are never reused


def new_handle() -> int:
    """A new handle value (a stream's, an event's, a context's, a model's...): pointer-like, never reused."""
    return next(_handles)

# Wall seconds a waiting thread lets the other threads' horizon hold it before it goes on without them (the
# escape): far longer than a program's own work between two runtime calls (a loop's bookkeeping, a print, a
# numpy check of an output: milliseconds, even with the GIL shared on a loaded machine), so a run that keeps
# calling the runtime never takes it; short enough that a thread that computes, sleeps or joins without
# calling the runtime (a main thread in join, a test runner that made the runtime) costs the waiting thread
# under a second, once per stretch (the threads it waited for no longer bound until their next call). Once it
# fires, simulated time depends on the wall clock: the run is no longer guaranteed to be reproducible.
HORIZON_ESCAPE_S = 0.5
TURN_S = 0.05  # wall seconds between two looks while a thread waits for another's call (the horizon, a report)

HOST_TIME_MODES = ("calls", "wall")
HOST_TIME_ENV = "ACL_EMU_HOST_TIME"
# What a handle argument usually is: an int, or a handle the Pythonic runtime returned (an int too), known by its
# class alone (`lookup`)
_HANDLE_CLASSES = frozenset((int, StreamHandle, EventHandle))


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


def _size_args(fn, names: tuple) -> tuple[tuple[int, str], ...]:
    """(position after the runtime, name) of each argument of `fn` in `names`."""
    params = list(inspect.signature(fn).parameters)[1:]
    return tuple((params.index(n), n) for n in names)


def _as_size_t(where: tuple, args: tuple, kwargs: dict) -> tuple:
    """The arguments at `where` read as C's size_t reads them: a negative Python int is the huge unsigned
    value it is in C (so `count > destMax`, capacity and range checks refuse it, and no byte moves), never a
    negative count."""
    for i, n in where:
        if i < len(args):
            a = args[i]
            if a.__class__ is int and a < 0:
                args = (*args[:i], a % _SIZE_T, *args[i + 1:])
        else:
            a = kwargs.get(n)
            if a.__class__ is int and a < 0:
                kwargs[n] = a % _SIZE_T
    return args


class Declaration:
    """One ACL API, declared once by `@api(...)` on its family function: the source of `Runtime.<name>`, the
    module function `emu.runtime.<name>` and the pyACL facade entry `<pyacl>` (see `emu.runtime.APIS`).

    acl: the C name ("aclrtMemcpyAsync"); name: the Python name, the family function's ("memcpy_async");
    family: its module ("copies"); method: the decorated function, which `Runtime` binds as a method.
    pyacl: the facade's qualified name ("acl.rt.memcpy_async"), None if the facade has none; params, outputs,
    optional: its argument formats, failure values and omittable trailing arguments (`emu.acl._bind.bind`);
    by_hand: the facade module writes the entry itself (a converter, special parsing), taking `pyacl`,
    `params` and `outputs` from here (`emu.acl._bind.bind_declared`, `by_hand`). feature: the chip feature
    (`Product.has`) without which the product refuses the whole API (`Core.feature_gate`), None if none."""

    __slots__ = ("acl", "name", "family", "method", "pyacl", "params", "outputs", "optional", "by_hand", "feature")

    def __init__(self, acl: str, method, pyacl: str | None, params: str, outputs: tuple, optional: int,
                 by_hand: bool, feature: str | None = None):
        wrapped = method.__wrapped__
        self.acl, self.method, self.name = acl, method, wrapped.__name__
        self.family = wrapped.__module__.rsplit(".", 1)[-1]
        self.pyacl, self.params, self.outputs, self.optional, self.by_hand = pyacl, params, outputs, optional, by_hand
        self.feature = feature
        if pyacl is not None and pyacl.rsplit(".", 1)[-1] != self.name:
            raise ValueError(f"{acl}: pyACL name {pyacl!r} does not end in the function's name {self.name!r}")

    @property
    def facade_module(self) -> str | None:
        """The facade module of the pyACL entry: "acl.rt" for "acl.rt.memcpy_async", "acl" for "acl.init"."""
        return None if self.pyacl is None else self.pyacl.rsplit(".", 1)[0]

    def __repr__(self) -> str:
        return f"<API {self.acl}: {self.family}.{self.name}, pyACL {self.pyacl}>"


def api(name: str, gate: bool = True, sizes: tuple = (), *, pyacl: str | None = None, params: str = "",
        outputs: tuple = (), optional: int = 0, by_hand: bool = False, feature: str | None = None):
    """Declare the family function below as the ACL API `name`, once for all its surfaces, and wrap it:
    lock, host clock, product gate, error message.

    The declaration (`Declaration`, on the wrapper as `.api`) is all that is written of an API outside its
    function: `emu.runtime` makes `Runtime.<function name>`, the module function `emu.runtime.<function name>`
    and the facade entry `pyacl` from it (`emu.runtime.APIS`).
    pyacl: the pyACL facade's name, "acl.rt.<function name>" (or acl.mdl., acl.media., acl.); None: no facade
    entry. params: one letter per facade argument (i int, l list of ints, s str, a batch attributes, o
    object); outputs: the facade's values on failure, one per output; optional: how many trailing arguments
    may be omitted. by_hand: the facade module writes the entry itself from this declaration.

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

    feature: a chip feature (`Product.has`, e.g. "p2p") the whole API needs: on a product without it the
    API fails with 207000 where the method calls `Core.feature_gate()`, the step of the validation order at
    which the reference runtime checks its chip (an argument-dependent need calls `Core.require_feature`).

    sizes: the names of the arguments the C API declares size_t (sizes, counts, pitches, widths,
    heights, offsets), read as C reads them (see `_as_size_t`).
    """

    def wrap(fn):
        method = _api_method(fn, name, gate, sizes, feature)
        method.api = Declaration(name, method, pyacl, params, tuple(outputs), optional, by_hand, feature)
        return method

    return wrap


def _api_method(fn, name: str, gate: bool, sizes: tuple, feature: str | None = None):
    """`fn` wrapped as the ACL API `name` (see `api`). What depends only on `fn` is worked out here, once."""
    where = _size_args(fn, sizes)
    spots = tuple(i for i, _ in where)  # the size_t positions, worked out once
    need = max(spots, default=-1) + 1  # fewer positional arguments: a size came by keyword (or is missing)
    needs = None if feature is None else (name, feature)  # what `Core.feature_gate` checks

    @functools.wraps(fn)
    def call(self: "Core", *args, **kwargs):
        if where:  # sizes given by keyword or negative are read as size_t; the common case is one test each
            if len(args) < need:
                args = _as_size_t(where, args, kwargs)
            else:
                for i in spots:
                    a = args[i]
                    if type(a) is int and a < 0:  # (type() is cheaper than reading __class__)
                        args = _as_size_t(where, args, kwargs)
                        break
        st = self._tls.state  # this thread's state, for the rest of the call
        lock = self.lock
        lock.acquire()  # (acquire and release: half the cost of `with`'s context-manager protocol)
        try:
            self.caller = st
            wall = self.wall_scale
            if wall:  # host_time="wall": the host's own time since this thread's previous call
                _wall_gap(st, wall)
            outer = st.gate, st.needs, st.inside  # (a call made inside another: the outer's, given back after)
            if not st.inside and (len(self.threads) > 1 or not st.known):  # (see `Core.enter`)
                self.enter(st)
            st.inside = True
            t0 = st.clock
            st.clock = t0 + self.call_overhead
            st.gate = name if gate and name in self._unsupported else None
            st.needs = needs
            try:
                if kwargs:
                    return fn(self, *args, **kwargs)
                return fn(self, *args)  # (no keywords, the usual call: no dict merged for the call)
            except AclError as err:
                _failed(name, err)
                raise
            except MemoryError:  # numpy's, anywhere in the call: the runtime's out-of-memory code, not a traceback
                raise _failed(name, _out_of_host_memory(name)) from None
            finally:
                st.gate, st.needs, st.inside = outer
                calls = self._calls  # the call log's pending tuples, turned into compact rows by the chunk
                calls.append((name, st.ident, t0, st.clock))
                if len(calls) >= CHUNK:
                    self.call_log.flush()
                if wall:
                    st.returned = perf_counter()
                if self.sleepers:  # threads wait for a clock to move (`Core.turn`): this one moved
                    self.turns.notify_all()
        finally:
            lock.release()
            if st.moves:  # bytes the call's blocking tasks left to move once the lock is released (`Core.later`)
                _move_unlocked(st, wall)

    call.acl_name = name
    return call


def _wall_gap(st: "ThreadState", wall: float) -> None:
    """host_time="wall": the thread's clock gains the wall time since its previous call returned, times the
    scale (read once on entry, inside the lock); `returned` is None while inside a call (no gap for nested ones)."""
    now = perf_counter()
    last, st.returned = st.returned, None
    if last is not None:
        st.clock += (now - last) * wall


def _move_unlocked(st: "ThreadState", wall: float) -> None:
    """Run what the call left in `st.moves`, in order, the runtime's lock released (by this call; a nested call's
    run under its caller's lock). In "wall" host-time mode the host's time since the call then starts after
    them: they are the call's own time."""
    moves, st.moves = st.moves, []
    for fn, args in moves:
        fn(*args)
    if wall:
        st.returned = perf_counter()


def _failed(name: str, err: AclError) -> AclError:
    """What a failed call leaves: its message (the API's name if it had none) as the thread's recent error."""
    if not err.message:
        err.message = f"{name} failed"
    set_recent_error(f"{name}: {err}")
    return err


def _out_of_host_memory(name: str) -> AclError:
    """The error of a call that ran out of host memory (a MemoryError escaped it, numpy's or any other):
    207001, the code the runtime reports for an allocation it cannot make, so that no MemoryError escapes an
    API. The places that allocate functional memory's bytes refuse before that (`emu.memory.HostBudget`,
    `emu.memory.host_bytes`); this is the last guard."""
    return AclError(ACL_ERROR_RT_MEMORY_ALLOCATION, f"{name} ran out of host memory (MemoryError): the host "
                                                    f"could not give the bytes it needed")


def fail(code: int, message: str) -> None:
    raise AclError(code, message)


class ThreadState:
    """What the runtime knows of one host thread, and the per-call context of the API call it is making.

    ctx: its current context; clock: its virtual time (simulated seconds); gate: the API name whose product
    gate the `api` decorator deferred to the call's first runtime-layer step (None: nothing pending); needs:
    the (API name, chip feature) the call's declaration needs, for `Core.feature_gate` (None: none);
    ident: its thread id; capture_modes, exchange_mode: the capture modes it began and its
    aclmdlRICaptureThreadExchangeMode; returned: (host_time="wall") the wall time its previous call returned;
    moves: the byte movement the call in progress leaves for after the runtime's lock (`Core.later`).
    thread: its `threading.Thread`; known: it has made an API call (it is in `Core.threads`), seq: the how-manieth
    (a tie between two clocks goes to the older thread); inside: an API call of it is in progress; until: while it
    waits, what gives the simulated time it will wake at (math.inf while that is not known), else None;
    stalled: the clock at which a waiting thread's escape found it holding the horizon (see `bounds`).

    During an API call, `Core.caller` is the calling thread's ThreadState: the family modules read the
    call's clock and pending gate there (`rt.caller`), never through thread-local lookups of their own.
    """

    __slots__ = ("ctx", "clock", "gate", "needs", "ident", "capture_modes", "exchange_mode", "returned", "moves",
                 "thread", "known", "seq", "inside", "until", "stalled")

    def __init__(self):
        self.ctx = None
        self.clock = 0.0
        self.returned: float | None = None  # perf_counter() at the last return; None: no call yet
        self.gate = None
        self.needs = None
        self.ident = threading.get_ident()
        self.capture_modes: dict[int, int] = {}
        self.exchange_mode = C.ACL_MODEL_RI_CAPTURE_MODE_GLOBAL
        self.moves: list[tuple] = []  # (fn, args) to run once the API call in progress releases the lock
        self.thread = threading.current_thread()
        self.known = False
        self.seq = 0
        self.inside = False
        self.until = None
        self.stalled: float | None = None

    def bound(self) -> float:
        """The earliest simulated time at which this thread may still queue work: its clock, or while it waits
        the time it will wake at (math.inf while not known)."""
        until = self.until
        return self.clock if until is None else until()

    def bounds(self) -> bool:
        """Whether it bounds the other threads' waits: not when it is idle at the clock where an escape found
        it (until its next call moves its clock)."""
        return self.until is not None or self.clock != self.stalled


class _Handles(dict):
    """Handle -> live context, stream, event or modelRI. A destroyed object is dropped: by the runtime as it
    destroys it, and, for one marked destroyed elsewhere, by a sweep each time the table has doubled. Handles
    are never reused (`new_handle`), so a dropped handle is one the table does not know, which gives the code
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
        self.state = ThreadState()


class Context:
    """A context (aclrtContext) of a device: its default stream and the streams created in it. `primary`:
    the device's primary context, the one aclrtSetDevice makes current."""

    def __init__(self, device: "Device", primary: bool):
        self.handle = new_handle()
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
        self.handle = 0 if default else new_handle()
        self.ctx = ctx
        self.device = ctx.device.id  # its context's device id (a plain attribute: read for every queued task)
        self.m = mstream  # the models.Stream the tasks run on
        self.flags = flags
        self.priority = priority
        self.default = default
        self.destroyed = False
        self.capture = None  # the active Capture while this stream is being captured

    @property
    def capturing(self) -> bool:
        return self.capture is not None

    def __repr__(self) -> str:
        return f"<Stream {self.m.name}>"


# Stream flags that make synchronize and query return at once (ApiErrorDecorator::StreamSynchronize).
NO_SYNC_STREAM_FLAGS = C.ACL_STREAM_PERSISTENT | C.ACL_STREAM_DEVICE_USE_ONLY | C.ACL_STREAM_CPU_SCHEDULE
# The ACL stream flags aclrtCreateStreamWithConfig maps; every other bit is dropped (stream.cpp).
STREAM_FLAGS = (C.ACL_STREAM_FAST_LAUNCH | C.ACL_STREAM_FAST_SYNC | C.ACL_STREAM_PERSISTENT | C.ACL_STREAM_HUGE
                 | C.ACL_STREAM_CPU_SCHEDULE | C.ACL_STREAM_DEVICE_USE_ONLY)


class Event:
    """An event (aclrtEvent): its ACL_EVENT_* flags, its device, its latest record and the stream waits on it.

    ex: made by aclrtCreateEventExWithFlag (the runtime's "new mode" event, the only kind a capture
    may record)."""

    def __init__(self, flags: int, device: int, ex: bool = False):
        self.handle = new_handle()
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
    sanitize: the sanitizer's checks (see `emu.sanitize.parse_tools`: True, "race,host,init", ...); the
    runtime calls its hooks (`sanitizer`, None when off) wherever work is queued, waited for or released.
    network: the link-sharing model, "flows" (models.network, the default) or "reference" (the max-min
    reference that recomputes every rate at every change: the same times, slowly; for debugging the model).
    """

    def __init__(self, product: Product, functional: bool = True, host_time: str = "calls",
                 host_time_scale: float = 1.0, records=ALL, sanitize=None, network: str = "flows"):
        self.product = product
        self.functional = functional
        self._host_time = check_host_time(host_time, host_time_scale)
        self.wall_scale = self._host_time[1] if host_time == "wall" else 0.0  # the api decorator's test: 0 = off
        self.lock = threading.RLock()
        self.space = AddressSpace(product.device_count, product.memory_bytes, functional)
        policy, sink = trace.parse_keep(records)  # one sink (one file) for tasks and calls
        self.machine = Machine(product.hardware, records=sink or policy, network=_network(network))
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
        # The per-call context: the calling thread's ThreadState, set by the `api` decorator on entry (under
        # the lock) and read by the family modules for the call's clock and pending product gate.
        self.caller: ThreadState = self._state
        self._unsupported = product.unsupported
        self.ep_mode = product.ep_mode
        self.copy_units: dict[tuple, int] = {}  # (src device, dst device) -> the runtime's task size
        self.sync_streams: dict = {}  # device -> the model stream its blocking copies and fills run on
        # A C program's runtime (emu.capi): its threads are Python's only from their first ACL call on, so a
        # thread Python does not know may be one that has not called yet (see callbacks._alive).
        self.foreign_threads = False
        self.ended_threads: set[int] = set()  # a C program's threads that have ended (no longer running)
        # The host threads that have called the API (thread id -> state; an ended one is dropped when met), and
        # what lets a waiting thread wait for their next call: `turns` (on the runtime lock), `sleepers` (how
        # many wait on it), `escapes` (how many times a wait went on without them: see HORIZON_ESCAPE_S).
        self._families: dict[str, object] = {}  # a family module's own state on this runtime (`family_state`)
        self.threads: dict[int, ThreadState] = {}
        self.turns = threading.Condition(self.lock)
        self.sleepers = 0
        self.escapes = 0
        self._seqs = count()
        _forkable[next(_core_numbers)] = self  # (its lock is held across a fork: see `_fork_hooks`)
        # emu.sanitize.Sanitizer when configured, None when off. The family modules reach it only through the
        # hooks below (`sanitize`, `sanitize_host_access`, `sanitize_host_span`, `submit`), each one
        # `is not None` test. (An instance attribute, not a class default: CPython 3.11 does not specialize a
        # read through the instance that finds the class's.)
        self.sanitizer = None
        if sanitize:
            from ..sanitize import Sanitizer, parse_tools

            tools = parse_tools(sanitize)
            if tools:
                self.sanitizer = Sanitizer(self, tools)

    def gate(self, name: str) -> None:
        """The product gate, the one place it fires: an API this product does not support fails with 207000.

        Called by `runtime_layer` (the gate the `api` decorator deferred to the call's first runtime-layer
        step), or by a method declared `api(..., gate=False)` at the step of its ACL layer where the reference
        runtime checks. A product *capability* a call needs (`Product.has`, e.g. "p2p", "stars") is not this
        gate: each gives the code its own rule names, next to that rule."""
        if name in self.product.unsupported:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 f"{name} is not supported on {self.product.name} ({self.product.title})")

    def feature_gate(self) -> None:
        """The chip-feature gate of the API being called, the one place it fires: an API declared
        `api(..., feature=f)` fails with 207000 (ACL_ERROR_RT_FEATURE_NOT_SUPPORT) on a product without `f`.
        The method calls it at the step of its validation order where the reference runtime checks the chip."""
        needs = self.caller.needs
        if needs is not None and needs[1] not in self.product.features:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                 f"{needs[0]} needs the chip feature {needs[1]!r}, which {self.product.name} lacks")

    def require_feature(self, feature: str, what: str, code: int = ACL_ERROR_RT_FEATURE_NOT_SUPPORT) -> None:
        """A chip feature a call needs for some values of its arguments (`what`: those values, for the
        message): `code` (by default 207000) on a product without it. A feature the whole API needs is
        declared instead (`api(..., feature=...)`, `feature_gate`)."""
        if feature not in self.product.features:
            fail(code, f"{what}: not supported on {self.product.name} (no chip feature {feature!r})")

    # -- the sanitizer's hooks: the one place that tests whether it is on ------------------------------
    def sanitize(self, hook: str, *args):
        """Call the sanitizer's `hook` (e.g. "freed", "joined", "stream_created") with `args`, under the
        runtime's (re-entrant) lock, and return what it returns; nothing (None) when the sanitizer is off. For
        a hook whose arguments cost work to build, see `sanitize_host_access`, `sanitize_host_span` and
        `submit`."""
        san = self.sanitizer
        if san is not None:
            with self.lock:  # (held already inside an API call; not by a callback or a pyACL thread)
                return getattr(san, hook)(*args)
        return None

    def sanitize_host_access(self, what: str, access, build=None) -> None:
        """The host thread touches bytes now (a blocking copy, a view of memory): the sanitizer's
        `host_access`. access: the (region, offset, nbytes, mode) tuples; or, with `build`, what
        `build(access)` makes them from, called only when the sanitizer is on (so accesses nobody checks
        cost nothing to build). (Fixed arguments, no *args: this is on the path of every blocking copy.)"""
        san = self.sanitizer
        if san is not None:
            san.host_access(access if build is None else build(access), what)

    def sanitize_host_span(self, what: str, region, offset: int, nbytes: int, mode: str) -> None:
        """`sanitize_host_access` of one range ("r", "w" or "rw"), its tuple built only when the sanitizer is on."""
        san = self.sanitizer
        if san is not None:
            san.host_access(((region, offset, nbytes, mode),), what)

    def runtime_layer(self) -> None:
        """The call has passed the ACL layer: apply the product gate the decorator deferred."""
        name = self.caller.gate
        if name is not None:
            self.caller.gate = None
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
    def _state(self) -> ThreadState:
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

    def family_state(self, name: str, make):
        """The state the family module `name` keeps on this runtime (callbacks: subscriptions and reports;
        inference: the loaded models), made by `make(self)` at its first use, under the runtime's lock."""
        state = self._families.get(name)
        if state is None:
            with self.lock:
                state = self._families.get(name)
                if state is None:
                    state = self._families[name] = make(self)
        return state

    def later(self, owner: ThreadState, fn, *args) -> bool:
        """Have the thread of `owner` run fn(*args) once its API call in progress has released the runtime's
        lock, before the call returns: the bytes of the call's own blocking task, which no other task or thread
        is ordered after until the call returns, move while other threads' calls go on. The task may complete
        in another thread's wait (under "calls" host time the waits take turns); its bytes are still the
        owner's to move, never the completing thread's, which may return (and its caller free a buffer) first.
        False, and nothing kept, when `owner` is neither the caller nor waiting in a call (a task whose blocking
        call has ended): the caller then moves the bytes at once. `args` hold the task's buffers (numpy views
        keep their memory alive even if another thread frees the region meanwhile)."""
        if owner is not self.caller and owner.until is None:
            return False
        owner.moves.append((fn, args))
        return True

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
        """A Chrome / Perfetto trace of the kept records (models.chrome): host threads, a process per device (streams,
        DMA engines, AI core, its links), lanes so no two slices of a track overlap, counters and call-to-task arrows
        (and, with the sanitizer, an arrow between the two calls of each finding)."""
        with self.lock:
            tasks, calls = self.machine.records.array(), self.call_log.array()
            findings = self.sanitize("trace_findings")
        trace.write_chrome_trace(path, tasks, calls, findings)

    def catch_up(self) -> None:
        """Let the devices run up to this host thread's time, before the host looks at their state (once the
        other host threads' horizon has reached it: see the module's docstring)."""
        st = self.caller
        if self.bounding(st):
            self.advance(st.clock, _never)
        self.machine.run_until(self.clock)

    def wait_for(self, task: Task) -> None:
        """Block this host thread until `task` completes."""
        if task.end is None and self.bounding(self.caller):
            self.wait_until(task)
        end = self.machine.wait(task)
        self.clock = max(self.clock, end)
        san = self.sanitizer
        if san is not None:
            san.joined(task)

    # -- host threads and simulated time (see the module's docstring) -------------------------------
    def enter(self, st: ThreadState) -> None:
        """An API call of `st`'s thread begins (not one made inside another): at its first, the thread joins
        `threads` (from then on it bounds the other threads' waits); when there are several, the call takes
        its turn (`take_turn`), but in "wall" host-time mode (where the host's own time drives the clocks,
        and no run repeats another: the threads run freely, as before threads took turns)."""
        if not st.known:
            self._join(st)
        if len(self.threads) > 1 and not self.wall_scale:
            self.take_turn(st)

    def _join(self, st: ThreadState) -> None:
        st.known = True
        st.seq = next(self._seqs)
        self.threads[st.ident] = st

    def starting(self) -> ThreadState:
        """The state of a host thread the calling thread is about to start (acl.util.start_thread): its clock
        starts at the starting thread's; `adopt` makes it the new thread's, which bounds the others' waits from
        its start, not from its first call."""
        st = ThreadState()
        st.clock = self._tls.state.clock
        return st

    def adopt(self, st: ThreadState, thread: threading.Thread | None = None) -> None:
        """`st` (from `starting`) is the state of `thread` once it has started, by default the calling thread's
        (the thread itself calls this first); it joins `threads` at whichever of the two calls comes first."""
        with self.lock:
            if thread is None:
                self._tls.state = st
                thread = threading.current_thread()
            st.ident, st.thread = thread.ident, thread
            if not st.known:
                self._join(st)

    def take_turn(self, st: ThreadState) -> None:
        """An API call of `st`'s thread starts once no other host thread may still make one at an earlier
        simulated time (the earliest clock calls first; between equal clocks, the older thread): the other
        threads' bounds must not be below its clock. It waits (`turn`) for their calls, and goes on after
        HORIZON_ESCAPE_S without those that compute, sleep or join without the runtime."""
        since = None
        while True:
            ahead = [o for o in self.bounding(st) if not _before(st, o)]
            if not ahead:
                return
            if since is None:
                since = perf_counter()
            elif perf_counter() - since >= HORIZON_ESCAPE_S:
                self._pass_over(ahead)
                return
            self.turn(TURN_S)

    def foreign_thread(self, ident: int, running: bool) -> None:
        """A C program's thread `ident` made its first ACL call (running; pthread ids are reused, so one that ended
        may run again) or, having made some, has ended: `ended_threads`, which waits and callbacks read."""
        if running:
            self.ended_threads.discard(ident)
        else:
            self.ended_threads.add(ident)

    def forked(self) -> None:
        """In the child of a fork (the runtime's lock held, see `_fork_hooks`): the forking thread is the only
        one left. The others leave `threads`, so no wait or turn waits for them (their `threading` objects are
        stopped in the child, and a C thread's would fail its `is_alive`); a C program's are ended threads (a
        callback for one fails its wait, as for any thread that has ended). Nobody sleeps on `turns` (its
        waiters were theirs)."""
        me = threading.get_ident()
        gone = [ident for ident in self.threads if ident != me]
        for ident in gone:
            del self.threads[ident]
        if self.foreign_threads:
            self.ended_threads.update(gone)
            self.ended_threads.discard(me)
        self.sleepers = 0
        self.turns.notify_all()  # (wakes no one: it drops the waiters the other threads left)

    def _running(self, st: ThreadState) -> bool:
        """Whether the thread of `st` still runs (a C program's thread that ended is in `ended_threads`)."""
        return st.ident not in self.ended_threads and st.thread.is_alive()

    def bounding(self, st: ThreadState) -> list[ThreadState]:
        """The other host threads that bound the waits of `st`'s thread: those that have called the API, still
        run and are not idle where an escape found them; none in "wall" host-time mode (see `enter`). Ended
        ones leave `threads`."""
        if len(self.threads) < 2:  # (a program of one thread: the test on every blocking call and wait)
            return []
        out = []
        for ident, other in list(self.threads.items()):
            if other is st:
                continue
            if not self._running(other):
                if self.threads.get(ident) is other:
                    del self.threads[ident]
            elif other.bounds():
                out.append(other)
        return out if not self.wall_scale else []

    def horizon(self, st: ThreadState | None = None) -> float:
        """The simulated time up to which the thread of `st` (by default the caller) may let the devices run
        while it waits: the smallest bound (`ThreadState.bound`) of the other host threads; math.inf when
        no other thread bounds it."""
        others = self.bounding(self.caller if st is None else st)
        return min([o.bound() for o in others], default=math.inf)

    def turn(self, seconds: float) -> float:
        """Wait up to `seconds` of wall time, the runtime lock released, for another thread's call or report
        (`turns`); the wall time waited. Called inside an API call."""
        st = self.caller
        t0 = perf_counter()
        self.sleepers += 1
        try:
            self.turns.wait(seconds)
        finally:
            self.sleepers -= 1
            self.caller = st  # another thread's call set it while the lock was free
        return perf_counter() - t0

    def advance(self, limit: float, stop) -> bool:
        """Let the devices run, one event at a time, until `stop()` holds or nothing is due by `limit`, never
        past the horizon; where the horizon stops it, wait (`turn`) for the other threads' next calls. After
        HORIZON_ESCAPE_S of wall time stopped there, go on without the threads that hold it (the run is
        then no longer guaranteed to be reproducible). True when `stop()` holds."""
        st, machine = self.caller, self.machine
        peek = machine.env.peek
        since = None  # perf_counter() when the horizon stopped it
        while not stop():
            due = peek()
            if due > limit or due == math.inf:
                return False
            h = self.horizon(st)
            if due <= h:
                held = lambda: stop() or self.horizon(st) < h  # (h inf too: a waiting thread's wake becomes known)
                machine.step_until(min(limit, h), held)
                since = None
                continue
            if since is None:
                since = perf_counter()
                self.turns.notify_all()  # what it ran may have woken a waiting thread: let it look
            elif perf_counter() - since >= HORIZON_ESCAPE_S:
                self._escape(st, h, stop)
                since = None
                continue
            self.turn(TURN_S)
        return True

    def _escape(self, st: ThreadState, h: float, stop) -> None:
        """The horizon `h` held the thread of `st` for HORIZON_ESCAPE_S: the threads that hold it are passed
        over (`_pass_over`). If only waiting threads hold it, the next instant runs anyway."""
        if not self._pass_over([o for o in self.bounding(st) if o.clock <= h]):
            self.machine.step_until(self.machine.env.peek(), stop)

    def _pass_over(self, holding: list[ThreadState]) -> list[ThreadState]:
        """The escape (HORIZON_ESCAPE_S): those of `holding` that do not wait compute, sleep or join without the
        runtime; they bound nothing until their next call (`ThreadState.bounds`). Returns them."""
        self.escapes += 1
        idle = [o for o in holding if o.until is None]
        for o in idle:
            o.stalled = o.clock
        return idle

    def wait_until(self, task: Task, limit: float = math.inf) -> None:
        """Let the devices run, within the horizon, until `task` completes or nothing is due by `limit`
        (simulated seconds); meanwhile this thread bounds the others at the time it will wake at. Open
        host functions are left to the callback threads (`Machine.host_wait`)."""
        st, machine = self.caller, self.machine
        st.until = lambda: limit if task.end is None else min(limit, max(st.clock, task.end))
        self.turns.notify_all()  # its bound went up: threads it held may go on

        def done() -> bool:
            return task.end is not None

        try:
            while not self.advance(limit, done):
                if machine.env.peek() < math.inf or not (machine.host_open and machine.host_wait is not None):
                    return  # due only past `limit`, or nothing can complete it (`Machine.wait` says so)
                machine.host_wait()
        finally:
            st.until = None

    def woken(self) -> None:
        """A synchronize call that joined work returns `sync_wait` after it was done: the driver's round trip
        to learn of a completion (the completion queue, the thread's wake), once per call."""
        self.clock = self.clock + self.product.hardware.sync_wait

    def current_context(self, implicit: bool = True) -> Context:
        """The thread's context, else 107002; `implicit` paths may first open the aclInit default device."""
        st = self.caller
        if st.gate is not None:
            self.runtime_layer()
        ctx = st.ctx
        if ctx is not None and ctx.destroyed:
            st.ctx = ctx = None
        if ctx is None and implicit and self.default_device is not None:
            self.open_device(self.default_device)
            ctx = self.ctx
        if ctx is None:
            fail(ACL_ERROR_RT_CONTEXT_NULL, "no current context: call aclrtSetDevice first")
        return ctx

    # -- handles -----------------------------------------------------------------
    def lookup(self, handle: int, typ, what: str):
        """The live `typ` (Stream, Event, Context...) a handle names, else 107017 (TypeError for a non-int)."""
        if self.caller.gate is not None:
            self.runtime_layer()
        if handle.__class__ not in _HANDLE_CLASSES and not (isinstance(handle, int) and not isinstance(handle, bool)):
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
        s = self.lookup(handle, Stream, "stream")
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
        if self.caller.gate is not None:
            self.runtime_layer()
        if handle != 0:
            self.lookup(handle, Stream, "stream")

    def event_of(self, handle: int) -> Event:
        return self.lookup(handle, Event, "event")


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
        if self.caller.gate is not None:
            self.runtime_layer()
        if not isinstance(device_id, int) or not 0 <= device_id < len(self.visible):
            fail(ACL_ERROR_RT_INVALID_DEVICEID,
                 f"device {device_id} is not one of the {len(self.visible)} visible devices of "
                 f"{self.product.name}")
        return self.devices[self.visible[device_id]]

    def new_context(self, dev: Device, primary: bool) -> Context:
        """A new context of `dev` with its default stream, registered as a live handle."""
        ctx = Context(dev, primary)
        m = self.machine.stream(f"dev{dev.id}/ctx{ctx.handle:x}/default", dev.id)
        ctx.default_stream = Stream(ctx, m, default=True)
        dev.contexts.append(ctx)
        self.handles[ctx.handle] = ctx
        return ctx

    def open_device(self, device_id: int) -> None:
        """What aclrtSetDevice does once its checks pass: a reference on the device (its primary context made
        if needed) and the primary context current."""
        dev = self.physical(device_id)
        if dev.refcount == 0 or dev.primary is None:
            dev.primary = self.new_context(dev, primary=True)
        dev.refcount += 1
        self.ctx = dev.primary


    def submit(self, stream: Stream, task: Task, access=None, cost: float = 0.0, build=None) -> Task:
        """Queue a task on a stream, the one place of the order every queued task follows: the sanitizer sees
        it, then on a capturing stream it is recorded into the graph instead, else the host pays `cost`
        (seconds: building and submitting it, as a copy's task does) and the machine queues it. access: the
        bytes it reads and writes, for the sanitizer ((region, offset, nbytes, mode) tuples; see
        `emu.sanitize.Sanitizer.queued`); or, with `build`, what `build(access)` makes them from, called only
        when the sanitizer is on."""
        san = self.sanitizer
        if san is not None:
            san.queued(stream, task, access if build is None else build(access))
        if stream.capture is not None:
            stream.capture.tasks.append(task)
            return task
        st = self.caller
        if cost:
            st.clock += cost
        return self.machine.submit(stream.m, task, st.clock)


def _never() -> bool:
    return False


def _before(st: ThreadState, other: ThreadState) -> bool:
    """Whether a call of `st`'s thread may start before `other`'s thread does anything more: its clock is not
    past the time `other` wakes at, if it waits; else it is earlier than `other`'s clock (or as early, and
    its thread older)."""
    until = other.until
    if until is not None:
        return st.clock <= until()
    return st.clock < other.clock or (st.clock == other.clock and st.seq < other.seq)


# -- fork (see the module's docstring) ---------------------------------------------------------------------------
_forkable: "weakref.WeakValueDictionary[int, Core]" = weakref.WeakValueDictionary()  # live runtimes, by age
_core_numbers = count()
# Locks taken outside a runtime's lock that a fork must not leave held by a thread the child does not have: the
# byte kernels' first load (emu.kernels, emu.batch_kernels: Numba imported and the kernels compiled) and Numba's
# compiler lock, each taken only once its module is imported, in this order (the order the loads take them in).
_FORK_LOCKS = (("emu.kernels", "_load_lock"), ("emu.batch_kernels", "_load_lock"),
               ("numba.core.compiler_lock", "global_compiler_lock"))
_held_across_fork: list = []


def _before_fork() -> None:
    """Wait for every runtime's lock (oldest first), then the loading locks, and hold them across the fork: no
    thread is then inside a runtime's state or a kernel's compilation."""
    held = [core.lock for _, core in sorted(_forkable.items())]
    for module, name in _FORK_LOCKS:
        lock = getattr(sys.modules.get(module), name, None)
        if lock is not None:
            held.append(lock)
    for lock in held:
        lock.acquire()
    _held_across_fork[:] = held


def _release_fork_locks() -> None:
    held, _held_across_fork[:] = list(_held_across_fork), []
    for lock in reversed(held):
        lock.release()


def _after_fork_in_child() -> None:
    """The child: each runtime keeps only the forking thread (`Core.forked`), then the locks are released."""
    for _, core in sorted(_forkable.items()):
        if core.lock in _held_across_fork:
            core.forked()
    _release_fork_locks()


def _fork_hooks() -> None:
    """Hold the runtimes' locks across os.fork (and a C program's fork(), through the library)."""
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_parent=_release_fork_locks,
                            after_in_child=_after_fork_in_child)


_fork_hooks()


NETWORKS = ("flows", "reference")


def _network(name: str):
    """The machine's network for `Core(network=name)`: None (the machine's own default) or the reference."""
    if name not in NETWORKS:
        raise ValueError(f"network {name!r} is not one of {', '.join(NETWORKS)}")
    return ReferenceNetwork(Clock()) if name == "reference" else None
