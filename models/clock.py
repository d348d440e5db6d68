"""The model's clock: simpy's environment with timers of its own. The one module that touches simpy's private state.

Everything else in models/ uses the names here (`Clock`, `timer`, `Call`, `gc_pause`, `gc_resume`) and simpy's
public API (`now`, `peek`, `step`, `run`, `event`, `process`, `timeout`, `schedule`, `simpy.core.EmptySchedule`).

The contract with simpy (checked for the installed simpy by tests/test_clock_contract.py; simpy 4.1, pinned
below 5 in pyproject.toml). In `simpy.core.Environment`:

  * `__init__` sets three private attributes: `_now`, the simulated time; `_queue`, a plain list kept as a
    `heapq` heap of the scheduled events; `_eid`, an `itertools.count` giving each entry its serial.
  * simpy reads and writes the time only as `self._now` (`__init__`, `schedule`, `step`) and shows it as the
    read-only property `now`. A `Clock` turns that around: its time is a plain instance attribute `now` (so
    the model's busy paths read `env.now` at the cost of a field, not of a property call) and `_now` is a
    property over it, for simpy's own code.
  * A heap entry is a 4-tuple `(time, priority, serial, event)`: `schedule(event, priority, delay)` pushes
    `(self._now + delay, priority, next(self._eid), event)` (priority `simpy.events.URGENT` = 0 or `NORMAL` = 1;
    -1 for an event a `StopSimulation` interrupted). Serials never repeat, so no comparison of two entries
    reaches their fourth item.
  * `step()` pops the smallest entry, sets `_now` to its time, sets the event's `callbacks` to None and calls
    each of the old ones with the event, then raises the event's `_value` if its `_ok` is false (unless it
    has a `_defused` attribute); on an empty queue it raises `simpy.core.EmptySchedule`.
  * `peek()` is `_queue[0][0]` (inf when empty), and `run()` calls `self.step()` until `StopSimulation` or
    `EmptySchedule`, so a subclass's `step` runs every entry.

What the clock adds on that contract:

  * a timer (`Clock.call`, `Clock.at`) is a 5-tuple `(time, NORMAL, serial, callback, value)` pushed on
    `_queue` with a serial from `_eid`: ordered with simpy's events exactly as an event scheduled then with
    `NORMAL` priority would be. `Clock.step` runs a timer as `callback(value)` (it tells a timer from simpy's
    entries by its length, 5) and leaves every 4-tuple to simpy's `step`. A timer costs one tuple, where an
    event costs an object and `schedule`; the model makes a few per task.
  * `Clock.empty` (`not _queue`) and `Clock.skip` (moves the time with nothing scheduled) serve a blocking call
    that runs alone (`Machine.blocking`).
  * On any other simpy environment, `timer(env)` schedules a `Call`: the least simpy's `step` accepts as an
    event (`callbacks`, `_ok`, `_value`), through the public `schedule`.
"""
from __future__ import annotations

import gc
from functools import partial
from heapq import heappop, heappush
from typing import Callable

import simpy
from simpy.events import NORMAL

__all__ = ["Call", "Clock", "gc_pause", "gc_resume", "timer"]

TIMER_ENTRY = 5  # items in a timer's entry in `_queue`; simpy's own entries have four


class Clock(simpy.Environment):
    """simpy's environment with its time as a plain attribute (`now`), its own timers (`call`, `at`), and two
    things more for a blocking call that runs alone (`empty`, `skip`). See the module's docstring for what it
    relies on in simpy."""

    now = 0.0  # (shadows simpy's `now` property: each clock keeps its time in its own `now`, set in __init__)

    def _get_now(self) -> float:
        return self.now

    def _set_now(self, t: float) -> None:
        self.now = t

    _now = property(_get_now, _set_now, doc="simpy's name for the time: the clock's `now`")

    def call(self, delay: float, callback: Callable, value=None) -> None:
        """Run `callback(value)` `delay` seconds from now (`schedule`'s time: now + delay)."""
        heappush(self._queue, (self.now + delay, NORMAL, next(self._eid), callback, value))

    def at(self, when: float, callback: Callable, value=None) -> None:
        """Run `callback(value)` at simulated time `when` (now, if `when` has passed)."""
        delay = when - self.now
        self.call(delay if delay > 0 else 0.0, callback, value)

    def step(self) -> None:
        """Process the next entry: a timer runs its callback here, an event goes through simpy's `step`."""
        queue = self._queue
        if queue and len(queue[0]) == TIMER_ENTRY:
            self.now, _, _, callback, value = heappop(queue)
            callback(value)
        else:
            super().step()

    def run(self, until=None):
        """simpy's `run` (stepping through `step`), with the collector kept out while it runs, as the machine
        runs the model (`gc_pause`)."""
        enabled = gc_pause()
        try:
            return super().run(until)
        finally:
            gc_resume(enabled)

    @property
    def empty(self) -> bool:
        """Nothing is scheduled (what `peek() == inf` says, without the IndexError peek raises inside)."""
        return not self._queue

    def skip(self, delay: float) -> None:
        """Move the clock `delay` ahead, to the time a timer scheduled `delay` from now would step it to
        (`call` computes now + delay). Only with nothing scheduled: an event due meanwhile would run late."""
        if self._queue:
            raise RuntimeError("Clock.skip: events are scheduled; step to them instead")
        self.now = self.now + delay


class Call:
    """A timer on a simpy environment that is not a `Clock` (whose timers are lighter still: `Clock.call`):
    the smallest thing simpy's `step` can run as an event (it needs `callbacks`, `_ok` and `_value`). simpy
    calls `callback(event)`; `timer` makes it `partial(callback, value)`, so the model's timer callbacks take
    the event as a second, unused argument."""

    __slots__ = ("callbacks", "_ok", "_value")

    def __init__(self, callback):
        self.callbacks = [callback]
        self._ok = True
        self._value = None


def timer(env: simpy.Environment) -> Callable[[float, Callable, object], None]:
    """`call(delay, callback, value)` on `env`: runs `callback(value)` `delay` seconds from now (a Clock's
    own timer), or `callback(value, event)` (a `Call` event on another simpy environment)."""
    if isinstance(env, Clock):
        return env.call

    def call(delay: float, callback: Callable, value=None) -> None:
        env.schedule(Call(partial(callback, value)), NORMAL, delay)
    return call


def gc_pause() -> bool:
    """The simulation allocates many short-lived objects and makes no reference cycles: keep the collector out
    of it. Returns whether it was enabled, for `gc_resume` (two plain calls: cheaper than a context manager,
    which a small blocking call would pay on every call)."""
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    return enabled


def gc_resume(enabled: bool) -> None:
    if enabled:
        gc.enable()
