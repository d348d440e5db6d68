"""The contract models/clock.py relies on in simpy (see its docstring), checked against the installed simpy: a
simpy release that breaks it fails here, not as wrong times somewhere in the model."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import NORMAL, URGENT

from emu.models.clock import TIMER_ENTRY, Call, Clock, timer

MODELS = Path(__file__).resolve().parent.parent / "models"


# -- simpy's side -----------------------------------------------------------------------------------------
def test_an_environment_keeps_its_time_queue_and_serials_in_private_attributes():
    env = simpy.Environment(initial_time=2.5)
    assert env._now == 2.5 and env.now == 2.5
    assert type(env._queue) is list and env._queue == []
    assert isinstance(env._eid, itertools.count)
    assert isinstance(vars(simpy.Environment)["now"], property)  # (what a Clock shadows with a plain attribute)
    assert URGENT == 0 and NORMAL == 1


def test_schedule_pushes_time_priority_serial_event_entries():
    env = simpy.Environment(initial_time=1.0)
    first = env.timeout(2.0)
    urgent = env.event()
    env.schedule(urgent, URGENT, 0.5)
    entries = sorted(env._queue)
    assert [len(e) for e in entries] == [4, 4]
    assert entries[0][:2] == (1.5, URGENT) and entries[0][3] is urgent
    assert entries[1][:2] == (3.0, NORMAL) and entries[1][3] is first
    serials = [entries[1][2], entries[0][2]]
    assert serials[1] == serials[0] + 1 and next(env._eid) == serials[1] + 1  # (one count, in order of scheduling)
    assert env.peek() == env._queue[0][0] == 1.5


def test_step_pops_the_entry_sets_the_time_and_runs_the_callbacks_with_the_event():
    env, seen = simpy.Environment(), []
    ev = env.timeout(3.0, value="v")
    ev.callbacks.append(lambda e: seen.append((e, env._now)))
    env.step()
    assert seen == [(ev, 3.0)] and ev.callbacks is None and env._queue == []
    with pytest.raises(EmptySchedule):
        env.step()
    bad = env.event()
    bad.fail(ValueError("failed"))
    with pytest.raises(ValueError, match="failed"):
        env.step()


def test_step_accepts_the_least_event_a_call_is():
    env, seen = simpy.Environment(), []
    env.schedule(Call(lambda e: seen.append(type(e))), NORMAL, 1.0)
    env.step()
    assert seen == [Call] and env.now == 1.0


def test_run_steps_through_the_subclass_step():
    class Counting(simpy.Environment):
        steps = 0

        def step(self):
            self.steps += 1
            super().step()

    env = Counting()
    env.timeout(1.0)
    env.timeout(2.0)
    env.run()
    assert env.steps == 3  # (two events, then the step that finds the queue empty)


def test_a_stopped_run_puts_the_event_back_as_a_four_item_entry():
    env = simpy.Environment()
    ev = env.timeout(1.0)
    ev.callbacks.append(lambda _: (_ for _ in ()).throw(StopSimulation("stop")))
    ev.callbacks.append(lambda _: None)
    assert env.run() == "stop"
    assert [len(e) for e in env._queue] == [4] and env._queue[0][1] == -1


def test_simpy_reads_and_writes_the_time_only_as_now_underscore():
    """A Clock keeps its time in a plain `now`, simpy's `_now` a property over it: every way simpy moves or
    reads the time (`__init__`, `schedule`, `step`, `run(until)`, processes) agrees with the clock's `now`."""
    env = Clock(initial_time=5.0)
    assert vars(env)["now"] == 5.0 and env._now == 5.0
    seen = []

    def proc():
        yield env.timeout(1.0)
        seen.append(env.now)
        yield env.timeout(0.5)
        seen.append(env._now)
    env.process(proc())
    env.run(until=6.25)
    assert seen == [6.0] and env.now == 6.25 == env._now
    env.run()
    assert seen == [6.0, 6.5] and env.now == 6.5 and vars(env)["now"] == 6.5


# -- the clock on it ----------------------------------------------------------------------------------------
def test_a_timer_is_a_five_item_entry_on_simpys_queue_with_simpys_serials():
    env = Clock(initial_time=1.0)
    env.timeout(1.0)
    env.call(1.0, print, "x")
    timer_entry = max(env._queue, key=len)
    assert len(timer_entry) == TIMER_ENTRY == 5
    assert timer_entry[:2] == (2.0, NORMAL) and timer_entry[3:] == (print, "x")
    assert timer_entry[2] == min(env._queue, key=len)[2] + 1  # (the serial after the timeout's)


def test_timers_and_simpy_events_at_one_time_run_in_the_order_they_were_scheduled():
    env, seen = Clock(), []
    for i in range(4):
        env.call(1.0, seen.append, f"timer {i}")
        env.timeout(1.0, value=f"event {i}").callbacks.append(lambda e: seen.append(e.value))
    env.run()
    assert seen == [x for i in range(4) for x in (f"timer {i}", f"event {i}")] and env.now == 1.0
    env.call(0.0, seen.append, "timer now")

    def proc():
        seen.append("process")
        yield env.timeout(0.0)
    env.process(proc())  # (its start is URGENT: before the NORMAL timer of this instant scheduled earlier)
    env.run()
    assert seen[-2:] == ["process", "timer now"]


def test_skip_and_empty_go_by_the_queue():
    env = Clock()
    assert env.empty
    env.skip(0.25)
    assert env.now == 0.25 and env.peek() == float("inf")
    env.call(1.0, lambda _: None)
    assert not env.empty
    with pytest.raises(RuntimeError):
        env.skip(1.0)
    env.step()
    assert env.empty and env.now == 1.25


def test_timer_picks_the_clocks_own_timers_and_events_elsewhere():
    clock, env, seen = Clock(), simpy.Environment(), []
    assert timer(clock) == clock.call
    timer(clock)(1.0, seen.append, "clock")
    timer(env)(1.0, lambda value, event: seen.append((value, type(event))), "env")
    clock.run()
    env.run()
    assert seen == ["clock", ("env", Call)] and clock.now == env.now == 1.0


def test_no_other_model_module_touches_simpys_private_state():
    """clock.py is the one adapter: the rest of models/ uses its names and simpy's public API only."""
    private = re.compile(r"\._now\b|\._queue\b|\._eid\b|\._ok\b|\._value\b|_defused|\bNORMAL\b|\bURGENT\b")
    for path in sorted(MODELS.glob("*.py")):
        if path.name != "clock.py":
            hits = [line for line in path.read_text().splitlines() if private.search(line)]
            assert not hits, (path.name, hits)
