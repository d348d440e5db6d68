"""Host callbacks, pyACL's host threads and the SoC name.

Callbacks (aclrtSubscribeReport, aclrtLaunchCallback, aclrtProcessReport,
aclrtUnSubscribeReport; callback.cpp, api_error.cc, api_impl.cc, subscribe.cc):

- A host thread is subscribed to a stream (one thread per stream; a thread's
  streams all on one device; at most 128 threads, RT_THREAD_GROUP_ID_MAX).
  Thread ids are `threading.get_ident()` values, as `acl.util.start_thread`
  and `threading.Thread.ident` give them.
- `launch_callback(fn, user_data, block_type, stream)` enqueues a callback task.
  When the stream reaches it (simulated time), a report goes to the thread
  subscribed to the stream at that moment; that thread runs `fn(user_data)` in
  its own `process_report` call, without the runtime lock (the callback may
  call the API), its clock moved to at least the time the task was reached.
  ACL_CALLBACK_NO_BLOCK (0): the task completes when reached, later work on the
  stream goes on. ACL_CALLBACK_BLOCK (1): the stream waits until the callback
  has run; the task completes at the callback thread's time after it.
- `process_report(timeout_ms)` (-1: forever) runs every report that reached
  the thread by the time it wakes. It lets the devices run until a report
  arrives or the thread's clock plus the timeout (nothing arrives: the clock is
  moved there, ACL_ERROR_RT_REPORT_TIMEOUT), never past the other host
  threads' horizon (`Core.advance`; meanwhile it bounds them at its first
  report's time, else its deadline). When nothing in the simulation can bring
  it a report (no callback launched for its streams), it waits for other host
  threads to launch one: until their horizon passes its deadline (then it
  times out there), or, if the horizon stays below it for HORIZON_ESCAPE_S of
  wall time, when no other thread has called the runtime, or in
  host_time="wall" mode, in wall time up to the timeout; that wall wait moves
  its clock only in host_time="wall" mode.
- A thread that must wait for a blocking callback (synchronize, a sync copy)
  lets the callback threads run; when no thread can ever run it (the callback
  is queued for the waiting thread itself, or for threads that have exited or
  are waiting too) the wait raises `CallbackDeadlock` where the board would
  hang; through pyACL the call returns its code, 507046
  (ACL_ERROR_RT_STREAM_SYNC_TIMEOUT), with a RuntimeWarning naming the
  callback, its stream and the thread.
- `unsubscribe_report` first lets the thread run the reports of the stream that
  already reached it (while the thread lives, at most UNSUBSCRIBE_DRAIN_S of
  wall time); what is left, and callbacks the stream reaches after it, are
  dropped (a blocking one releases its stream). Callbacks on a capturing stream
  are not emulated.

pyACL's `acl.util.start_thread(fn, args)` / `stop_thread(id)`: `start_thread`
and `stop_thread` here (process-wide, not per runtime; not ACL APIs).

aclrtGetSocName: `SOC_NAMES` maps each product to the name the runtime
reports (runtime.cc Runtime::GetSocVersionByHardwareVer and its Init*SocType*,
platform/platform_config/*.ini). The product configs carry no SoC name, so the
mapping lives here; where a product has several bins, the one chosen is marked
assumed.
"""
from __future__ import annotations

import math
import threading
from collections import Counter, deque
from time import perf_counter
from typing import Callable

from emu.models import MARKER, Task
from emu.models.machine import HOSTFUNC

from .. import constants as C
from ..config import Product
from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_INTERNAL_ERROR, ACL_ERROR_RT_PARAM_INVALID,
                      ACL_ERROR_RT_REPORT_TIMEOUT, ACL_ERROR_RT_STREAM_NO_CB_REG, ACL_ERROR_RT_STREAM_SUBSCRIBE,
                      ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, ACL_ERROR_RT_THREAD_SUBSCRIBE, AclError, NotEmulated)
from .core import HORIZON_ESCAPE_S, TURN_S, Core, Stream, api, fail

MAX_CALLBACK_THREADS = 128  # RT_THREAD_GROUP_ID_MAX (runtime.hpp): one subscription group per thread
UNSUBSCRIBE_DRAIN_S = 5.0  # wall seconds unsubscribe waits for a live thread to run the stream's reached reports

# Runtime codes (errcode_manage.cc): RT_ERROR_SUBSCRIBE_STREAM -> ACL_ERROR_RT_STREAM_SUBSCRIBE (107011),
# RT_ERROR_SUBSCRIBE_THREAD -> ACL_ERROR_RT_THREAD_SUBSCRIBE (107012), RT_ERROR_STREAM_NO_CB_REG ->
# ACL_ERROR_RT_STREAM_NO_CB_REG (107015), the driver's DRV_ERROR_WAIT_TIMEOUT -> RT_ERROR_REPORT_TIMEOUT ->
# ACL_ERROR_RT_REPORT_TIMEOUT (507012), RT_ERROR_SUBSCRIBE_GROUP -> ACL_ERROR_RT_INTERNAL_ERROR (507000).

# aclrtGetSocName per product (by name, else by family). A: assumed. Each note cites the runtime function or
# the platform config it follows.
SOC_NAMES: dict[str, tuple[str, str]] = {
    "910B": ("Ascend910B3", "A: the 910B server has 64 GiB HBM (docs/hardware.md), so 910B1/B2/B3, not B4; "
                            "bin B3 assumed [hicann/runtime src/runtime/core/src/runtime.cc "
                            "Runtime::InitSocTypeFrom910BVersion; "
                            "hicann/runtime src/platform/platform_config/cann/Ascend910B3.ini]"),
    "A3": ("Ascend910_9391", "A: A3 dies report Ascend910_93xx; bin 9391 assumed "
                             "[hicann/runtime src/platform/platform_config/cann/Ascend910_9391.ini]"),
    "950DT": ("Ascend950DT_9571", "A: 950DT bins report Ascend950DT_95xx; 9571 assumed "
                                  "[hicann/runtime src/platform/platform_config/cann-dev/Ascend950DT_9571.ini]"),
    "950PR": ("Ascend950PR_9579", "A: 950PR bins report Ascend950PR_95xx; 9579 assumed "
                                  "[hicann/runtime src/platform/platform_config/cann-dev/Ascend950PR_9579.ini]"),
    "910": ("Ascend910A", "32 cores at 1.0 GHz (256 TFLOPS FP16) "
                          "[hicann/runtime src/runtime/core/src/runtime.cc Runtime::SocTypeInit]"),
    "310P": ("Ascend310P3", "a 310P that is not the 10-core bin "
                            "[hicann/runtime src/runtime/core/src/runtime.cc Runtime::Init310PSocType]"),
    "200I_A2": ("Ascend310B1", "Ascend310B, bin 1 or not reported "
                               "[hicann/runtime src/runtime/core/src/runtime.cc Runtime::InitSocTypeFrom310BVersion]"),
    "IPV350": ("Ascend350_354f", "A: CHIP_ASCEND_350 taken to be IPV350 (docs/conformance/products.md), bin 354f "
                                 "[hicann/runtime src/platform/platform_config/cann-dev/Ascend350_354f.ini]"),
}
SOC_BY_FAMILY = {"A2": "910B", "A3": "A3", "950": "950DT", "910": "910", "310P": "310P", "200I": "200I_A2",
                 "IPV350": "IPV350"}


def soc_name(product: Product) -> str | None:
    """The SoC name aclrtGetSocName reports on `product` (None if the emulator knows none)."""
    key = product.name if product.name in SOC_NAMES else None
    if key is None:
        key = next((k for k in ("950PR", "950DT") if product.name.startswith(k)), None) or \
            SOC_BY_FAMILY.get(product.family)
    return SOC_NAMES[key][0] if key in SOC_NAMES else None


class CallbackError(Exception):
    """A user callback run by process_report raised; `__cause__` is its exception. The report was still
    processed (a blocking callback released its stream)."""


class CallbackDeadlock(AclError, RuntimeError):
    """A host thread would wait forever for a blocking callback that no host thread can run (the callback is
    queued for the waiting thread itself, or for threads that have exited or are waiting too).

    On the board the call never returns. The Pythonic API raises this error; the pyACL facade returns its code,
    ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046: what the runtime reports for a stream whose work does not finish
    within the time its synchronize may wait), and shows the message, which names the callback, its stream and
    the thread it waits for, as a RuntimeWarning (`warns`)."""

    warns = True

    def __init__(self, message: str):
        super().__init__(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, message)


class _Report:
    __slots__ = ("fn", "data", "stream", "task", "block", "thread", "reached")

    def __init__(self, fn, data, stream: Stream, block: bool):
        self.fn = fn
        self.data = data
        self.stream = stream
        self.block = block
        self.task: Task | None = None
        self.thread: int | None = None
        self.reached = math.inf


class _CallbackState:
    """Subscriptions and reports of one runtime (guarded by the runtime lock)."""

    def __init__(self, cond: threading.Condition):
        self.cond = cond  # the runtime's `turns`: a thread waiting for a report also waits for another's call
        self.subs: dict[Stream, int] = {}  # stream -> subscribed thread id
        self.reports: dict[int, deque[_Report]] = {}  # thread id -> reached, not yet taken
        self.running: list[_Report] = []  # taken by a thread, callback not done
        self.expected: Counter = Counter()  # stream -> callbacks launched, not yet reached
        self.waiting: set[int] = set()  # threads waiting for a blocking callback (host_wait)

    def notify(self) -> None:
        try:
            self.cond.notify_all()
        except RuntimeError:  # not under the runtime lock (a bare simulation): nobody can be waiting
            pass

    def threads(self) -> set[int]:
        return set(self.subs.values())

    def streams_of(self, thread_id: int) -> list[Stream]:
        return [s for s, t in self.subs.items() if t == thread_id]


# pyACL's host threads, process-wide (acl.util.start_thread / stop_thread).
_threads: dict[int, threading.Thread] = {}
_threads_lock = threading.Lock()


def _alive(rt: Core, thread_id: int) -> bool:
    """Whether host thread `thread_id` runs (so it may yet process reports). In a C program a thread Python
    does not know counts as running: it may not have made its first ACL call yet (`Core.foreign_threads`)."""
    for t in threading.enumerate():
        if t.ident == thread_id:
            return t.is_alive()
    return rt.foreign_threads and thread_id not in rt.ended_threads


# -- SocOps ----------------------------------------------------------------------------------------


@api("aclrtGetSocName", pyacl="acl.get_soc_name", by_hand=True)
def get_soc_name(rt: Core) -> str:
    """The SoC name of the product, e.g. "Ascend910B3" (aclrtGetSocName); no context needed. 507000 for a
    product whose SoC name the emulator does not know (acl_rt_impl_base.cpp aclrtGetSocNameImpl)."""
    if rt.caller.gate is not None:
        rt.runtime_layer()
    name = soc_name(rt.product)
    if name is None:
        fail(ACL_ERROR_RT_INTERNAL_ERROR, f"no SoC name known for product {rt.product.name} "
                                          f"(family {rt.product.family})")
    return name


# -- CallbackOps -----------------------------------------------------------------------------------


# -- state ------------------------------------------------------------------------
def _callbacks(rt: Core) -> _CallbackState:
    return rt.family_state("callbacks", _new_state)


def _new_state(rt: Core) -> _CallbackState:
    """A runtime's callback state, made at its first use; from then on a wait for an open host function lets the
    callback threads run it (`_host_wait`)."""
    rt.machine.host_wait = lambda: _host_wait(rt)
    return _CallbackState(rt.turns)


def _purge_destroyed(rt: Core, cbs: _CallbackState) -> None:
    for s in [s for s in cbs.subs if s.destroyed]:
        del cbs.subs[s]


# -- subscriptions ------------------------------------------------------------------
@api("aclrtSubscribeReport", pyacl="acl.rt.subscribe_report", params="ii")
def subscribe_report(rt: Core, thread_id: int, stream: int = 0) -> None:
    """Have host thread `thread_id` run the callbacks of `stream` (0: the current context's default stream)
    (aclrtSubscribeReport).

    api_c.cc rtSubscribeReport (stream handle), ApiImpl::SubscribeReport (null stream: the current
    context's default stream, 107002 without one); on STARS chips it then creates an event
    (ApiImpl::EventCreate), which needs a current context even for an explicit stream (107002); CbSubscribe::Insert: the stream already subscribed
    -> 107011; the thread subscribed to streams of another device -> 107012; a 129th thread -> 507000.
    """
    s = rt.stream_of(stream, check_context=False)
    if rt.product.has("stars"):  # ApiImpl::SubscribeReport: ChipIsHaveStars -> EventCreate(RT_EVENT_DDSYNC_NS)
        rt.current_context()  # ApiImpl::EventCreate: CHECK_CONTEXT_VALID_WITH_RETURN -> 107002
    cbs = _callbacks(rt)
    _purge_destroyed(rt, cbs)
    owner = cbs.subs.get(s)
    if owner is not None:
        fail(ACL_ERROR_RT_STREAM_SUBSCRIBE, f"stream 0x{s.handle:x} is already subscribed (by thread {owner})")
    mine = cbs.streams_of(thread_id)
    if mine and mine[0].device != s.device:
        fail(ACL_ERROR_RT_THREAD_SUBSCRIBE, f"thread {thread_id} is subscribed to streams of device "
                                            f"{mine[0].device}; stream 0x{s.handle:x} is on device {s.device}")
    if not mine and len(cbs.threads()) >= MAX_CALLBACK_THREADS:
        fail(ACL_ERROR_RT_INTERNAL_ERROR, f"{MAX_CALLBACK_THREADS} threads are already subscribed "
                                          f"(RT_THREAD_GROUP_ID_MAX)")
    cbs.subs[s] = thread_id
    cbs.notify()


@api("aclrtUnSubscribeReport", pyacl="acl.rt.unsubscribe_report", params="ii")
def unsubscribe_report(rt: Core, thread_id: int, stream: int = 0) -> None:
    """Stop thread `thread_id` running the callbacks of `stream` (aclrtUnSubscribeReport).

    ApiImpl::UnSubscribeReport (null stream: the current context's default stream), CbSubscribe::Delete:
    the stream not subscribed -> 107011; subscribed by another thread -> 107012. Reports of the stream
    that already reached the thread are run first (see emu.runtime.callbacks); the rest are dropped.
    """
    s = rt.stream_of(stream, check_context=False)
    cbs = _callbacks(rt)
    _purge_destroyed(rt, cbs)
    owner = cbs.subs.get(s)
    if owner is None:
        fail(ACL_ERROR_RT_STREAM_SUBSCRIBE, f"stream 0x{s.handle:x} is not subscribed")
    if owner != thread_id:
        fail(ACL_ERROR_RT_THREAD_SUBSCRIBE, f"stream 0x{s.handle:x} is subscribed by thread {owner}, "
                                            f"not {thread_id}")
    me = threading.get_ident()
    limit = perf_counter() + UNSUBSCRIBE_DRAIN_S
    while owner != me and _alive(rt, owner) and perf_counter() < limit and (
            any(r.stream is s for r in cbs.reports.get(owner, ())) or
            any(r.stream is s for r in cbs.running)):
        rt.turn(TURN_S)
    if cbs.subs.get(s) == thread_id:
        del cbs.subs[s]
    queue = cbs.reports.get(owner)
    if queue:
        for r in [r for r in queue if r.stream is s]:
            queue.remove(r)
            _drop(rt, r)
        if not queue:
            del cbs.reports[owner]
    cbs.notify()


def _drop(rt: Core, r: _Report) -> None:
    """A report no thread will run: a blocking callback releases its stream."""
    if r.block and r.task is not None and not r.task._released:
        rt.machine.complete(r.task, rt.machine.now)


# -- launching ---------------------------------------------------------------------------
@api("aclrtLaunchCallback", pyacl="acl.rt.launch_callback", params="ooii")
def launch_callback(rt: Core, fn: Callable, user_data=None, block_type: int = C.ACL_CALLBACK_BLOCK,
                    stream: int = 0) -> None:
    """Enqueue `fn(user_data)` on `stream`, to run on the stream's subscribed thread (aclrtLaunchCallback).
    block_type ACL_CALLBACK_BLOCK (1): the stream waits until the callback has run; NO_BLOCK (0): it goes on.

    callback.cpp aclrtLaunchCallbackImpl: block_type not BLOCK (1) / NO_BLOCK (0) -> 100000; api_c.cc
    rtCallbackLaunch (stream handle); ApiErrorDecorator::CallbackLaunch: fn null -> 107000;
    ApiImpl::CallbackLaunch: no context -> 107002, a stream of another context -> 107003, a stream no
    thread subscribed to -> 107015.
    """
    if block_type not in (C.ACL_CALLBACK_NO_BLOCK, C.ACL_CALLBACK_BLOCK):
        fail(ACL_ERROR_INVALID_PARAM, f"block type {block_type}: expected ACL_CALLBACK_NO_BLOCK (0) or "
                                      f"ACL_CALLBACK_BLOCK (1)")
    rt.check_stream_handle(stream)
    if fn is None or not callable(fn):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"callback {fn!r} is not callable")
    s = rt.stream_of(stream)
    cbs = _callbacks(rt)
    _purge_destroyed(rt, cbs)
    if s not in cbs.subs:
        fail(ACL_ERROR_RT_STREAM_NO_CB_REG, f"stream 0x{s.handle:x} is not bound to any thread: call "
                                            f"aclrtSubscribeReport first")
    if s.capture is not None:
        raise NotEmulated("aclrtLaunchCallback on a capturing stream is not emulated by acl-emu")
    block = block_type == C.ACL_CALLBACK_BLOCK
    r = _Report(fn, user_data, s, block)
    label = f"callback {getattr(fn, '__qualname__', None) or type(fn).__name__}"
    if block:
        r.task = Task(HOSTFUNC, device=s.device, label=label, on_start=lambda: _reached(rt, r))
    else:
        r.task = Task(MARKER, device=s.device, label=label, on_complete=lambda: _reached(rt, r))
    cbs.expected[s] += 1
    rt.submit(s, r.task)
    cbs.notify()


def _reached(rt: Core, r: _Report) -> None:
    """The stream reached the callback task: report it to the stream's thread."""
    cbs = _callbacks(rt)
    cbs.expected[r.stream] -= 1
    if cbs.expected[r.stream] <= 0:
        del cbs.expected[r.stream]
    r.reached = rt.machine.now
    thread = cbs.subs.get(r.stream)
    if thread is None or r.stream.destroyed:
        _drop(rt, r)
        return
    r.thread = thread
    cbs.reports.setdefault(thread, deque()).append(r)
    cbs.notify()


# -- processing --------------------------------------------------------------------------
@api("aclrtProcessReport", pyacl="acl.rt.process_report", params="i", by_hand=True)
def process_report(rt: Core, timeout_ms: int = -1) -> None:
    """Run, on this thread, the callbacks that reached it; wait up to `timeout_ms` (-1: forever) for one
    (aclrtProcessReport).

    callback.cpp aclrtProcessReportImpl: timeout < -1 or 0 -> 100000; ApiImpl::ProcessReport: this
    thread subscribed to no stream -> 107012; nothing reported within the timeout -> 507012
    (NpuDriver::CqReportIrqWait). A callback that raises: CallbackError, after the others ran.
    """
    if timeout_ms < -1 or timeout_ms == 0:
        fail(ACL_ERROR_INVALID_PARAM, f"timeout {timeout_ms} ms: -1 waits forever, otherwise it must be > 0")
    if rt.caller.gate is not None:
        rt.runtime_layer()
    cbs = _callbacks(rt)
    me = threading.get_ident()
    _purge_destroyed(rt, cbs)
    if not cbs.streams_of(me):
        fail(ACL_ERROR_RT_THREAD_SUBSCRIBE, f"thread {me} is subscribed to no stream: call aclrtSubscribeReport")
    batch = _take_reports(rt, cbs, me, timeout_ms)
    st = rt.caller
    cbs.running.extend(batch)
    error: BaseException | None = None
    try:
        for r in batch:
            error = _run_callback(rt, cbs, r, st) or error
    finally:
        for r in batch:
            if r in cbs.running:
                cbs.running.remove(r)
        cbs.notify()
    if error is not None:
        raise CallbackError(f"a callback run by aclrtProcessReport raised {error!r}") from error


def _take_reports(rt: Core, cbs: _CallbackState, me: int, timeout_ms: int) -> list[_Report]:
    """Wait for this thread's next reports; move its clock to when it wakes; take what reached it by then.
    Meanwhile it bounds the other threads' waits at the time it will wake at (`Core.horizon`): its first
    report's, or its deadline."""
    st = rt.caller
    deadline = math.inf if timeout_ms == -1 else st.clock + timeout_ms / 1000.0

    def arrived() -> bool:
        return bool(cbs.reports.get(me))

    def until() -> float:
        queue = cbs.reports.get(me)
        return min(deadline, max(st.clock, queue[0].reached)) if queue else deadline

    st.until = until
    try:
        return _reports_by(rt, cbs, me, deadline, timeout_ms, arrived)
    finally:
        st.until = None


def _reports_by(rt: Core, cbs: _CallbackState, me: int, deadline: float, timeout_ms: int,
                arrived: Callable[[], bool]) -> list[_Report]:
    """`_take_reports`' wait: the devices run, within the horizon, until a report arrives or the deadline."""
    st = rt.caller
    wall_end = math.inf if timeout_ms == -1 else perf_counter() + timeout_ms / 1000.0
    held = [math.nan, 0.0]  # the other threads' horizon last seen and when it was last seen to move
    while True:
        queue = cbs.reports.get(me)
        if not queue:
            rt.advance(deadline, arrived)  # let the devices run until a report comes
            queue = cbs.reports.get(me)
        if queue:
            if queue[0].reached > deadline:  # one comes, but after this wait would have ended
                break
            return _take_batch(cbs, me, queue, st)
        mine = cbs.streams_of(me)
        if not mine:
            fail(ACL_ERROR_RT_THREAD_SUBSCRIBE, f"thread {me} was unsubscribed from its last stream")
        if any(cbs.expected[s] for s in mine) and rt.machine.env.peek() < math.inf:
            break  # a callback is on its way, later in simulated time than this wait
        if not _await_launch(rt, cbs, deadline, wall_end, timeout_ms, held):
            break
    st.clock = max(st.clock, deadline)
    fail(ACL_ERROR_RT_REPORT_TIMEOUT, f"no callback reported within {timeout_ms} ms of simulated time")


def _take_batch(cbs: _CallbackState, me: int, queue: deque, st) -> list[_Report]:
    wake = max(st.clock, queue[0].reached)
    st.clock = wake
    batch = []
    while queue and queue[0].reached <= wake:
        batch.append(queue.popleft())
    if not queue:
        del cbs.reports[me]
    return batch


def _await_launch(rt: Core, cbs: _CallbackState, deadline: float, wall_end: float, timeout_ms: int,
                  held: list) -> bool:
    """Nothing is on its way to this thread: wait for other host threads to launch a callback. False: the
    wait ends at its deadline in simulated time, the other threads' horizon having reached it (no callback
    they launch can reach it sooner). If the horizon stays below the deadline for HORIZON_ESCAPE_S of wall
    time (threads that compute without the runtime), or when no other thread has called the runtime, or in
    host_time="wall" mode, it waits in wall time up to the timeout, which moves its clock only in "wall" mode
    (507012); `held`: the horizon last seen and the wall time it last moved."""
    st = rt.caller
    limit = wall_end
    if deadline < math.inf and not rt.wall_scale and rt.bounding(st):
        h = rt.horizon(st)
        if h >= deadline:
            return False
        if h != held[0]:
            held[:] = [h, perf_counter()]
        limit = held[1] + HORIZON_ESCAPE_S
    left = limit - perf_counter()
    if left <= 0:
        if limit != wall_end:
            rt.escapes += 1
        fail(ACL_ERROR_RT_REPORT_TIMEOUT, f"no callback reported within {timeout_ms} ms")
    st.clock += rt.turn(min(left, TURN_S)) * rt.wall_scale
    return True


def _run_callback(rt: Core, cbs: _CallbackState, r: _Report, st) -> BaseException | None:
    """Run one callback without the runtime lock; complete a blocking one at this thread's time after it."""
    held = 0
    try:
        while True:  # release the (re-entrant) runtime lock entirely: the callback may call the API
            rt.lock.release()
            held += 1
    except RuntimeError:
        pass
    wall = rt.wall_scale
    error = None
    st.inside = False  # the callback's calls are its thread's own (they take their turn: Core.take_turn)
    try:
        rt.sanitize("callback_begin", r.task, r.block)  # (under the runtime's lock, which this thread let go)
        if wall:
            st.returned = perf_counter()  # the callback's own time counts, as between API calls
        r.fn(r.data)
    except Exception as exc:  # reported by process_report once the stream is released
        error = exc
    finally:
        for _ in range(held):
            rt.lock.acquire()
        rt.caller = st
        st.inside = True
        rt.sanitize("callback_end")
        if wall and st.returned is not None:
            st.clock += (perf_counter() - st.returned) * wall
        st.returned = None  # back inside the process_report call
        if r.block and not r.task._released:
            rt.machine.complete(r.task, st.clock)
    return error


def _host_wait(rt: Core) -> None:
    """Machine.host_wait: the simulation is stuck on blocking callbacks; let the callback threads run them."""
    cbs = _callbacks(rt)
    me = threading.get_ident()
    if not cbs.running:
        queued = [r for q in cbs.reports.values() for r in q if r.block]
        if not queued:
            raise CallbackDeadlock("the devices wait for a blocking callback no stream has reached")
        if all(r.thread == me or r.thread in cbs.waiting or not _alive(rt, r.thread) for r in queued):
            r = queued[0]
            why = ("is this thread, which is waiting for it" if r.thread == me else
                   "is itself waiting" if r.thread in cbs.waiting else "is not a running thread")
            raise CallbackDeadlock(f"{r.task.label} on stream 0x{r.stream.handle:x} waits for thread {r.thread} "
                                   f"to call aclrtProcessReport, and that thread {why}: it would wait forever")
    cbs.waiting.add(me)
    try:
        rt.turn(TURN_S)
    finally:
        cbs.waiting.discard(me)


# -- pyACL's host threads (acl.util.start_thread / stop_thread) ---------------------------------
def start_thread(rt: Core, fn: Callable, args=None) -> int:
    """Start a host thread running `fn(args)`; its id (for subscribe_report). Its host clock starts at the
    calling thread's. Not an ACL API."""
    if not callable(fn):
        raise TypeError(f"{fn!r} is not callable")
    child = rt.starting()  # its clock starts at this thread's, and it bounds the others from its start

    def run(fn_args):
        rt.adopt(child)
        fn(fn_args)

    t = threading.Thread(target=run, args=(args,), name=f"acl-thread-{getattr(fn, '__name__', 'fn')}",
                         daemon=True)
    rt.sanitize("thread_starting", t)
    with _threads_lock:
        t.start()
        _threads[t.ident] = t
    rt.adopt(child, t)
    return t.ident


def stop_thread(rt: Core, thread_id: int) -> None:
    """Wait for a thread of start_thread to return. Not an ACL API: an unknown id, or the calling
    thread itself, is ACL_ERROR_INVALID_PARAM."""
    with _threads_lock:
        t = _threads.get(thread_id)
        if t is None or t.ident == threading.get_ident():
            fail(ACL_ERROR_INVALID_PARAM, f"{thread_id} is not a thread started by start_thread"
                 if t is None else "a thread cannot stop itself")
        del _threads[thread_id]
    t.join()
    rt.sanitize("thread_joined", t)
