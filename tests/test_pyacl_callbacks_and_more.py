"""The APIs public pyACL scripts call beyond memory: acl.get_soc_name, acl.rt.get_run_mode, the Ex event
bindings, the host callback family (subscribe_report, launch_callback, process_report, unsubscribe_report)
and acl.util.start_thread / stop_thread. Codes and checks: emu/runtime/callbacks.py."""
from __future__ import annotations

import dataclasses
import sys
import threading
import time

import numpy as np
import pytest

import emu
from emu import AclError, runtime as rt_module
from emu.runtime.callbacks import SOC_NAMES, CallbackDeadlock, CallbackError
from emu.models import Machine, MARKER, Task
from emu.models.machine import HOSTFUNC

from helpers import code

BLOCK, NO_BLOCK = 1, 0
H2D, D2H = 1, 2
STATUS_COMPLETE, STATUS_NOT_READY = 0, 1  # aclrtStreamStatus
EVENT_COMPLETE, EVENT_NOT_READY = 1, 0  # aclrtEventRecordedStatus
JOIN_S = 20.0  # wall seconds a test waits for a helper thread before failing


def _noop(_):
    pass


def _kernel(rt, stream, ms):
    rt.launch_kernel(lambda: None, [], stream, duration_us=ms * 1000.0)


class Worker:
    """A host thread looping on process_report, as pyACL samples write it; records each callback's thread
    and host clock."""

    def __init__(self, rt, timeout_ms=50, ctx=None):
        self.rt, self.timeout_ms, self.ctx = rt, timeout_ms, ctx
        self.run = True
        self.codes: list[int] = []
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        self.id = self.thread.ident

    def _loop(self):
        if self.ctx is not None:
            self.rt.set_context(self.ctx)
        while self.run:
            self.codes.append(code(self.rt.process_report, self.timeout_ms))

    def stop(self):
        self.run = False
        self.thread.join(JOIN_S)
        assert not self.thread.is_alive()


# ------------------------------------------------------------------ acl.get_soc_name

def test_get_soc_name_returns_the_products_soc_name_string(acl):
    name = acl.get_soc_name()
    assert isinstance(name, str)  # pyACL: name = acl.get_soc_name(), no ret
    assert name == "Ascend910B3"


@pytest.mark.parametrize("product", sorted(SOC_NAMES))
def test_get_soc_name_every_product_reports_an_ascend_soc(fresh, product):
    r = fresh(product)
    name = r.get_soc_name()
    assert name == SOC_NAMES[product][0]
    assert name.startswith("Ascend")


def test_get_soc_name_of_an_inheriting_product_follows_its_family(fresh):
    r = fresh("910B-Gen5")
    assert r.get_soc_name() == SOC_NAMES["910B"][0]


def test_get_soc_name_needs_no_init_no_device_no_context(acl):
    assert acl.rt.get_context() == (0, 107002)
    assert acl.get_soc_name() == "Ascend910B3"


def test_get_soc_name_unknown_soc_is_none_in_pyacl_and_an_error_in_the_runtime(acl):
    r = emu.current()
    r.product = dataclasses.replace(r.product, name="custom", family="custom")
    assert acl.get_soc_name() is None
    with pytest.raises(AclError):
        r.get_soc_name()


def test_get_soc_name_takes_no_arguments(acl):
    with pytest.raises(TypeError, match="acl.get_soc_name args parse failed"):
        acl.get_soc_name(0)


# ------------------------------------------------------------------ acl.rt.get_run_mode

@pytest.mark.parametrize("product, mode", [("910B", 1), ("A3", 1), ("310P", 1), ("200I_A2", 0), ("IPV350", 0)])
def test_get_run_mode_returns_mode_then_ret_host_on_ep_device_on_rc(product, mode):
    emu.configure(product=product)
    import emu.acl as acl

    assert acl.rt.get_run_mode() == (mode, 0)  # ACL_HOST = 1, ACL_DEVICE = 0


# ------------------------------------------------------------------ Ex events

def test_create_event_ex_with_flag_returns_event_then_ret(acl):
    acl.rt.set_device(0)
    ev, ret = acl.rt.create_event_ex_with_flag(0x8)
    assert ret == 0 and ev != 0
    assert acl.rt.destroy_event(ev) == 0


def test_create_event_ex_with_flag_failure_returns_zero_then_the_code(acl):
    acl.rt.set_device(0)
    # no known bit (docs/conformance/devices_streams_events.md#events)
    assert acl.rt.create_event_ex_with_flag(0) == (0, 107000)
    with pytest.raises(TypeError, match="acl.rt.create_event_ex_with_flag args parse failed"):
        acl.rt.create_event_ex_with_flag()


def test_query_event_wait_status_returns_status_then_ret(acl):
    acl.rt.set_device(0)
    ev, _ = acl.rt.create_event()
    status, ret = acl.rt.query_event_wait_status(ev)
    assert ret == 0 and status in (0, 1)
    assert acl.rt.query_event_wait_status(0) == (0, 100000)
    with pytest.raises(TypeError, match="acl.rt.query_event_wait_status args parse failed"):
        acl.rt.query_event_wait_status("event")


# ------------------------------------------------------------------ subscribe_report

def test_subscribe_report_stream_already_subscribed_is_107011(rt):
    s = rt.create_stream()
    rt.subscribe_report(111, s)
    assert code(rt.subscribe_report, 111, s) == 107011  # same thread again
    assert code(rt.subscribe_report, 222, s) == 107011  # another thread


def test_subscribe_report_a_thread_on_streams_of_two_devices_is_107012(rt):
    s0 = rt.create_stream()
    rt.set_device(1)
    s1 = rt.create_stream()
    rt.subscribe_report(111, s0)
    assert code(rt.subscribe_report, 111, s1) == 107012
    rt.subscribe_report(222, s1)  # another thread may take it
    rt.subscribe_report(222, 0)  # and device 1's default stream (the current context's)


def test_subscribe_report_one_thread_many_streams_of_one_device(rt):
    a, b = rt.create_stream(), rt.create_stream()
    rt.subscribe_report(111, a)
    rt.subscribe_report(111, b)
    rt.subscribe_report(111, 0)


def test_subscribe_report_a_129th_thread_is_507000(rt):
    streams = [rt.create_stream() for _ in range(129)]
    for i, s in enumerate(streams[:128]):
        rt.subscribe_report(1000 + i, s)
    assert code(rt.subscribe_report, 5000, streams[128]) == 507000  # RT_ERROR_SUBSCRIBE_GROUP
    rt.subscribe_report(1000, streams[128])  # a thread already subscribed takes no new group


def test_subscribe_report_default_stream_without_a_context_is_107002(acl):
    assert acl.rt.subscribe_report(111, 0) == 107002


def test_subscribe_report_a_stream_that_is_not_one_is_107017(acl):
    acl.rt.set_device(0)
    assert acl.rt.subscribe_report(111, 0x1234) == 107017


def test_subscribe_report_a_destroyed_stream_frees_its_subscription(rt):
    s = rt.create_stream()
    rt.subscribe_report(111, s)
    rt.destroy_stream(s)
    t = rt.create_stream()
    rt.subscribe_report(222, t)
    assert code(rt.unsubscribe_report, 111, s) == 107017  # the handle is gone


# ------------------------------------------------------------------ unsubscribe_report

def test_unsubscribe_report_stream_not_subscribed_is_107011(rt):
    s = rt.create_stream()
    assert code(rt.unsubscribe_report, 111, s) == 107011


def test_unsubscribe_report_by_a_thread_that_did_not_subscribe_it_is_107012(rt):
    s = rt.create_stream()
    rt.subscribe_report(111, s)
    assert code(rt.unsubscribe_report, 222, s) == 107012
    rt.unsubscribe_report(111, s)
    assert code(rt.unsubscribe_report, 111, s) == 107011


def test_unsubscribe_report_then_subscribe_again(rt):
    s = rt.create_stream()
    rt.subscribe_report(111, s)
    rt.unsubscribe_report(111, s)
    rt.subscribe_report(222, s)


# ------------------------------------------------------------------ launch_callback

def test_launch_callback_on_a_stream_no_thread_subscribed_to_is_107015(rt):
    s = rt.create_stream()
    assert code(rt.launch_callback, _noop, None, BLOCK, s) == 107015
    rt.subscribe_report(111, s)
    rt.unsubscribe_report(111, s)
    assert code(rt.launch_callback, _noop, None, BLOCK, s) == 107015


@pytest.mark.parametrize("block_type", [2, -1, 7])
def test_launch_callback_block_type_other_than_block_or_no_block_is_100000(rt, block_type):
    s = rt.create_stream()
    rt.subscribe_report(111, s)
    assert code(rt.launch_callback, _noop, None, block_type, s) == 100000


def test_launch_callback_fn_not_callable_is_107000(rt):
    s = rt.create_stream()
    rt.subscribe_report(111, s)
    assert code(rt.launch_callback, None, None, BLOCK, s) == 107000
    assert code(rt.launch_callback, 42, None, BLOCK, s) == 107000


def test_launch_callback_checks_block_type_before_the_stream(rt):
    assert code(rt.launch_callback, _noop, None, 5, 0x1234) == 100000  # ACL layer first
    assert code(rt.launch_callback, None, None, BLOCK, 0x1234) == 107017  # then the stream handle, then fn


def test_launch_callback_stream_of_another_context_is_107003(rt):
    s = rt.create_stream()
    rt.subscribe_report(111, s)
    rt.create_context(0)  # now current: s belongs to the primary context
    assert code(rt.launch_callback, _noop, None, BLOCK, s) == 107003


def test_launch_callback_without_a_context_is_107002(acl):
    assert acl.rt.launch_callback(_noop, [], BLOCK, 0) == 107002


def test_launch_callback_on_a_capturing_stream_is_not_emulated(rt):
    s = rt.create_stream()
    rt.subscribe_report(111, s)
    rt.ri_capture_begin(s, 0)
    with pytest.raises(emu.NotEmulated, match="not emulated"):
        rt.launch_callback(_noop, None, BLOCK, s)


# ------------------------------------------------------------------ process_report

@pytest.mark.parametrize("timeout", [0, -2, -100])
def test_process_report_timeout_zero_or_below_minus_one_is_100000(rt, timeout):
    rt.subscribe_report(threading.get_ident(), 0)
    assert code(rt.process_report, timeout) == 100000


def test_process_report_on_a_thread_subscribed_to_no_stream_is_107012(rt):
    assert code(rt.process_report, 10) == 107012
    rt.subscribe_report(threading.get_ident() + 1, 0)  # some other thread
    assert code(rt.process_report, -1) == 107012


def test_process_report_nothing_launched_times_out_with_507012_without_moving_the_clock(rt):
    rt.subscribe_report(threading.get_ident(), 0)
    c0 = rt.clock
    t0 = time.perf_counter()
    assert code(rt.process_report, 30) == 507012
    assert time.perf_counter() - t0 >= 0.025  # waited for other host threads, in wall time
    assert rt.clock == pytest.approx(c0 + rt.call_overhead)  # host_time="calls": only the call's cost


def test_process_report_callback_later_in_simulated_time_times_out_at_the_deadline(rt):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)
    ran = []
    _kernel(rt, s, 1000.0)  # 1 s
    rt.launch_callback(ran.append, "x", BLOCK, s)
    c0 = rt.clock
    assert code(rt.process_report, 100) == 507012
    assert rt.clock == pytest.approx(c0 + rt.call_overhead + 0.1)  # a simulated wait, no wall wait
    assert ran == []
    rt.process_report(-1)
    assert ran == ["x"]
    assert rt.clock >= 1.0


def test_process_report_runs_every_report_that_reached_the_thread_in_one_call(rt):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)
    ran = []
    for i in range(3):
        rt.launch_callback(ran.append, i, NO_BLOCK, s)
    rt.synchronize_stream(s)
    rt.process_report(10)
    assert ran == [0, 1, 2]
    assert code(rt.process_report, 10) == 507012


def test_process_report_a_callback_that_raises_is_reported_after_the_stream_is_released(rt):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)

    def bad(_):
        raise ValueError("boom")

    rt.launch_callback(bad, None, BLOCK, s)
    with pytest.raises(CallbackError) as ei:
        rt.process_report(-1)
    assert isinstance(ei.value.__cause__, ValueError)
    rt.synchronize_stream(s)  # the blocking task was completed all the same


def test_process_report_in_pyacl_prints_a_callback_exception_and_returns_0(acl, capsys):
    acl.rt.set_device(0)
    acl.rt.subscribe_report(threading.get_ident(), 0)

    def bad(_):
        raise ValueError("boom")

    assert acl.rt.launch_callback(bad, [], BLOCK, 0) == 0
    assert acl.rt.process_report(-1) == 0
    assert "ValueError: boom" in capsys.readouterr().err
    assert acl.rt.synchronize_stream(0) == 0


def test_process_report_args_parse(acl):
    with pytest.raises(TypeError, match="acl.rt.process_report args parse failed"):
        acl.rt.process_report()
    with pytest.raises(TypeError, match="acl.rt.process_report args parse failed"):
        acl.rt.process_report(1.5)


def test_launch_callback_args_parse_four_arguments(acl):
    with pytest.raises(TypeError, match="acl.rt.launch_callback args parse failed"):
        acl.rt.launch_callback(_noop, [], BLOCK)
    with pytest.raises(TypeError, match="acl.rt.launch_callback args parse failed"):
        acl.rt.launch_callback(_noop, [], "block", 0)


# ------------------------------------------------------------------ blocking, non-blocking

def test_blocking_callback_holds_later_work_on_the_stream_until_it_has_run(rt):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)
    ev = rt.create_event()
    rt.launch_callback(_noop, None, BLOCK, s)
    rt.record_event(ev, s)
    rt.clock += 10.0  # ten simulated seconds later, the callback has still not run
    assert rt.stream_query(s) == STATUS_NOT_READY
    assert rt.query_event_status(ev) == EVENT_NOT_READY
    rt.process_report(-1)
    assert rt.query_event_status(ev) == EVENT_COMPLETE
    assert rt.stream_query(s) == STATUS_COMPLETE


def test_blocking_callback_sees_the_work_before_it_and_not_the_work_after_it(rt):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)
    n = 64
    d = rt.malloc(n)
    seen = []

    def look(i):
        out = np.zeros(n, dtype=np.uint8)
        rt.memcpy(rt.register_host(out), n, d, n, D2H)
        seen.append((i, int(out[0])))

    for i in range(1, 4):
        rt.memset_async(d, n, i, n, s)
        rt.launch_callback(look, i, BLOCK, s)
    for _ in range(3):
        rt.process_report(-1)
    assert seen == [(1, 1), (2, 2), (3, 3)]


def test_non_blocking_callback_lets_later_work_run_before_it_has_run(rt):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)
    ran = []
    ev = rt.create_event()
    rt.launch_callback(ran.append, 1, NO_BLOCK, s)
    rt.record_event(ev, s)
    rt.synchronize_stream(s)
    assert rt.query_event_status(ev) == EVENT_COMPLETE
    assert ran == []
    rt.process_report(10)
    assert ran == [1]


def test_callback_thread_clock_moves_to_at_least_the_time_the_stream_reached_the_callback(rt):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)
    at = []
    _kernel(rt, s, 20.0)
    rt.launch_callback(lambda _: at.append(rt.clock), None, BLOCK, s)
    rt.process_report(-1)
    assert at[0] >= 0.020


def test_blocking_callback_completes_at_the_callback_threads_time_after_it(rt):
    s = rt.create_stream()
    worker = Worker(rt, ctx=rt.get_context())
    rt.subscribe_report(worker.id, s)
    a, b = rt.create_event_with_flag(0x8), rt.create_event_with_flag(0x8)
    rt.record_event(a, s)

    def slow(_):
        for _ in range(100):  # 100 API calls on the callback thread
            rt.get_device()

    rt.launch_callback(slow, None, BLOCK, s)
    rt.record_event(b, s)
    rt.synchronize_stream(s)
    rt.unsubscribe_report(worker.id, s)
    worker.stop()
    assert rt.event_elapsed_time(a, b) >= 100 * rt.call_overhead * 1000.0


def test_in_wall_host_time_a_blocking_callbacks_own_time_delays_its_stream():
    r = emu.configure(product="910B", host_time="wall")
    r.set_device(0)
    s = r.create_stream()
    r.subscribe_report(threading.get_ident(), s)
    a, b = r.create_event_with_flag(0x8), r.create_event_with_flag(0x8)
    r.record_event(a, s)
    r.launch_callback(lambda _: time.sleep(0.05), None, BLOCK, s)
    r.record_event(b, s)
    r.process_report(-1)
    r.synchronize_stream(s)
    assert r.event_elapsed_time(a, b) >= 50.0


def test_callback_runs_on_the_subscribed_thread(rt):
    s = rt.create_stream()
    worker = Worker(rt, ctx=rt.get_context())
    rt.subscribe_report(worker.id, s)
    where = []
    rt.launch_callback(lambda _: where.append(threading.get_ident()), None, NO_BLOCK, s)
    rt.launch_callback(lambda _: where.append(threading.get_ident()), None, BLOCK, s)
    rt.synchronize_stream(s)
    rt.unsubscribe_report(worker.id, s)
    worker.stop()
    assert where == [worker.id, worker.id]
    assert threading.get_ident() not in where


def test_callback_may_launch_work_while_its_stream_waits(rt):
    s, other = rt.create_stream(), rt.create_stream()
    worker = Worker(rt, ctx=rt.get_context())
    rt.subscribe_report(worker.id, s)
    n = 32
    d = rt.malloc(n)
    rt.launch_callback(lambda _: (rt.memset_async(d, n, 7, n, other), rt.synchronize_stream(other)), None,
                       BLOCK, s)
    rt.synchronize_stream(s)
    rt.unsubscribe_report(worker.id, s)
    worker.stop()
    out = np.zeros(n, dtype=np.uint8)
    rt.memcpy(rt.register_host(out), n, d, n, D2H)
    assert (out == 7).all()


# ------------------------------------------------------------------ waiting forever

def test_waiting_for_a_blocking_callback_queued_for_this_very_thread_raises_instead_of_hanging(rt):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)
    rt.launch_callback(_noop, None, BLOCK, s)
    with pytest.raises(CallbackDeadlock, match="wait forever") as e:
        rt.synchronize_stream(s)
    assert e.value.code == 507046  # ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, what pyACL returns
    rt.process_report(-1)  # the thread can still run it, and the stream goes on
    rt.synchronize_stream(s)


def test_pyacl_sync_on_a_blocking_callback_this_thread_must_run_returns_507046_with_a_warning(acl):
    """On the board, aclrtSynchronizeStream waits forever for a blocking callback queued for the very thread
    that waits (subscribed with its own id), and the program hangs. pyACL gives no exception, only codes, so
    the facade returns the code the runtime reports when a stream's work cannot finish within the time its
    synchronize may wait: ACL_ERROR_RT_STREAM_SYNC_TIMEOUT (507046), which aclrtSynchronizeStreamWithTimeout
    returns when its timeout passes (rt_error_codes.h; "forever" never passes, so the timeout is the nearest
    code the reference runtime has). A RuntimeWarning and acl.get_recent_err_msg() say why: which callback,
    on which stream, waits for which thread. The thread can still run it, and the stream then goes on. (The
    Pythonic API raises CallbackDeadlock, an AclError with that code.)"""
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    s, _ = acl.rt.create_stream()
    me = threading.get_ident()
    assert acl.rt.subscribe_report(me, s) == 0
    ran = []
    assert acl.rt.launch_callback(ran.append, "x", BLOCK, s) == 0
    with pytest.warns(RuntimeWarning, match=f"callback list.append on stream 0x{s:x} waits for thread {me}"):
        assert acl.rt.synchronize_stream(s) == 507046
    assert "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT" in acl.get_recent_err_msg() and "wait forever" in \
        acl.get_recent_err_msg()
    assert ran == [] and acl.rt.process_report(-1) == 0 and ran == ["x"]
    assert acl.rt.synchronize_stream(s) == 0


def test_a_callback_deadlock_is_an_acl_error_with_the_stream_sync_timeout_code_that_the_facade_warns_of():
    err = CallbackDeadlock("callback f on stream 0x10 waits for thread 1")
    assert isinstance(err, AclError) and isinstance(err, RuntimeError)
    assert err.code == 507046 and err.warns and not AclError(507046).warns


def test_waiting_for_a_blocking_callback_of_a_thread_that_has_exited_raises(rt):
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    s = rt.create_stream()
    rt.subscribe_report(t.ident, s)
    rt.launch_callback(_noop, None, BLOCK, s)
    with pytest.raises(CallbackDeadlock, match="not a running thread"):
        rt.synchronize_stream(s)


# ------------------------------------------------------------------ unsubscribe and pending callbacks

def test_unsubscribe_drops_callbacks_the_stream_reaches_after_it_and_releases_the_stream(rt):
    s = rt.create_stream()
    rt.subscribe_report(threading.get_ident(), s)
    ran = []
    _kernel(rt, s, 5.0)
    rt.launch_callback(ran.append, 1, BLOCK, s)
    rt.unsubscribe_report(threading.get_ident(), s)
    rt.synchronize_stream(s)
    assert ran == []


def test_unsubscribe_lets_the_thread_run_the_reports_that_already_reached_it(rt):
    s = rt.create_stream()
    worker = Worker(rt, timeout_ms=20, ctx=rt.get_context())
    rt.subscribe_report(worker.id, s)
    ran = []
    for i in range(5):
        rt.launch_callback(ran.append, i, NO_BLOCK, s)
    rt.synchronize_stream(s)
    rt.unsubscribe_report(worker.id, s)
    worker.stop()
    assert ran == [0, 1, 2, 3, 4]


# ------------------------------------------------------------------ acl.util.start_thread / stop_thread

def test_start_thread_runs_fn_with_args_list_and_returns_its_id_then_ret(acl):
    got = []
    tid, ret = acl.util.start_thread(lambda args: got.append((args, threading.get_ident())), [1, "a"])
    assert ret == 0 and isinstance(tid, int)
    assert acl.util.stop_thread(tid) == 0  # waits for it to return
    assert got == [([1, "a"], tid)]


def test_stop_thread_of_an_id_start_thread_did_not_give_is_100000(acl):
    assert acl.util.stop_thread(12345) == 100000
    tid, _ = acl.util.start_thread(_noop, [])
    assert acl.util.stop_thread(tid) == 0
    assert acl.util.stop_thread(tid) == 100000  # already stopped


def test_start_thread_and_stop_thread_args_parse(acl):
    with pytest.raises(TypeError, match="acl.util.start_thread args parse failed"):
        acl.util.start_thread(_noop)
    with pytest.raises(TypeError, match="acl.util.start_thread args parse failed"):
        acl.util.start_thread("not callable", [])
    with pytest.raises(TypeError, match="acl.util.stop_thread args parse failed"):
        acl.util.stop_thread("1")


# ------------------------------------------------------------------ the machine: a task the host completes

def test_machine_hostfunc_task_holds_its_stream_until_the_host_completes_it():
    m = Machine(emu.config.load("910B").hardware)
    s = m.stream("s", 0)
    reached = []
    h = m.submit(s, Task(HOSTFUNC, label="host", on_start=lambda: reached.append(m.now)), at=0.001)
    after = m.submit(s, Task(MARKER, label="after"), at=0.001)
    m.run_until(1.0)
    assert reached == [pytest.approx(0.001)] and not h.completed and not after.completed
    assert m.host_open == 1
    m.complete(h, at=0.5)
    with pytest.raises(ValueError):
        m.complete(h, at=0.6)  # once
    assert m.wait(after) == pytest.approx(1.0)  # the machine was already at 1.0
    assert h.completed and m.host_open == 0


def test_machine_wait_calls_host_wait_while_only_the_host_can_finish_the_task():
    m = Machine(emu.config.load("910B").hardware)
    s = m.stream("s", 0)
    h = m.submit(s, Task(HOSTFUNC, label="host"), at=0.0)
    after = m.submit(s, Task(MARKER, label="after"), at=0.0)
    calls = []

    def host_wait():
        calls.append(m.now)
        m.complete(h, at=0.25)

    with pytest.raises(RuntimeError, match="host"):
        m.wait(after)  # no hook: it says so instead of hanging
    m.host_wait = host_wait
    assert m.wait(after) == pytest.approx(0.25)
    assert len(calls) == 1


def test_machine_step_until_stops_at_the_event_that_satisfies_it():
    m = Machine(emu.config.load("910B").hardware)
    s = m.stream("s", 0)
    a = m.submit(s, Task(MARKER, label="a"), at=0.1)
    b = m.submit(s, Task(MARKER, label="b"), at=0.2)
    m.step_until(1.0, lambda: a.completed)
    assert a.completed and not b.completed and m.now == pytest.approx(0.1)
    m.step_until(0.15, lambda: False)
    assert not b.completed and m.now == pytest.approx(0.1)  # nothing due by 0.15: time does not move


# ------------------------------------------------------------------ a pyACL script, end to end

SCRIPT_N = 4


def _pyacl_script():
    """What CANN's python samples do: a callback thread from acl.util.start_thread looping on
    process_report, subscribed to a stream; work and blocking callbacks on the stream; synchronize;
    unsubscribe; stop the thread."""
    import acl

    ACL_SUCCESS, ACL_MEM_MALLOC_HUGE_FIRST, ACL_CALLBACK_BLOCK = 0, 0, 1
    state = {"run": True, "seen": [], "threads": set(), "codes": []}

    def callback_thread(args_list):
        context, timeout = args_list
        assert acl.rt.set_context(context) == ACL_SUCCESS
        while state["run"]:
            state["codes"].append(acl.rt.process_report(timeout))

    def check_output(user_data):
        index, dev, size, host = user_data
        state["threads"].add(threading.get_ident())
        assert acl.rt.memcpy(host, size, dev, size, D2H) == ACL_SUCCESS
        state["seen"].append((index, acl.util.ptr_to_bytes(host, size)))

    assert acl.init() == ACL_SUCCESS
    assert acl.rt.set_device(0) == ACL_SUCCESS
    context, ret = acl.rt.create_context(0)
    assert ret == ACL_SUCCESS
    stream, ret = acl.rt.create_stream()
    assert ret == ACL_SUCCESS
    size = 16
    dev, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == ACL_SUCCESS
    host, ret = acl.rt.malloc_host(size)
    assert ret == ACL_SUCCESS

    tid, ret = acl.util.start_thread(callback_thread, [context, 50])
    assert ret == ACL_SUCCESS
    assert acl.rt.subscribe_report(tid, stream) == ACL_SUCCESS
    for i in range(SCRIPT_N):
        data = bytes([i + 1]) * size
        assert acl.rt.memcpy_async(dev, size, acl.util.bytes_to_ptr(data), size, H2D, stream) == ACL_SUCCESS
        assert acl.rt.launch_callback(check_output, [i, dev, size, host], ACL_CALLBACK_BLOCK, stream) == 0
    assert acl.rt.synchronize_stream(stream) == ACL_SUCCESS
    assert acl.rt.unsubscribe_report(tid, stream) == ACL_SUCCESS
    state["run"] = False
    assert acl.util.stop_thread(tid) == ACL_SUCCESS

    assert acl.rt.free_host(host) == ACL_SUCCESS
    assert acl.rt.free(dev) == ACL_SUCCESS
    assert acl.rt.destroy_stream(stream) == ACL_SUCCESS
    assert acl.rt.destroy_context(context) == ACL_SUCCESS
    assert acl.rt.reset_device(0) == ACL_SUCCESS
    assert acl.finalize() == ACL_SUCCESS
    return tid, state


def test_pyacl_script_subscribe_launch_callbacks_process_report_in_a_started_thread_unsubscribe(installed_acl):
    done = {}
    runner = threading.Thread(target=lambda: done.setdefault("result", _pyacl_script()), daemon=True)
    runner.start()
    runner.join(JOIN_S)
    assert not runner.is_alive(), "the script hung"
    tid, state = done["result"]
    assert state["seen"] == [(i, bytes([i + 1]) * 16) for i in range(SCRIPT_N)]  # each after its copy only
    assert state["threads"] == {tid}
    assert set(state["codes"]) <= {0, 107012, 507012}
    calls = rt_module.current().calls
    assert calls["aclrtLaunchCallback"] == SCRIPT_N and calls["aclrtSubscribeReport"] == 1
