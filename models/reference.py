"""The textbook flow model, to check `network.Network` against: recompute everything at every change.

At every flow start and every event, `ReferenceNetwork` advances every flow in flight at its rate, recomputes
every rate by weighted progressive filling (raise every rate together; the link that fills first fixes the
rates of its flows; repeat), and arms one timer for the next data end. No incremental re-rating, no lone
flows, no service clocks, no batching of an instant's changes: each step is the definition. It costs
O(flows x links) an event, so it is for tests (tests/test_network*.py draw workloads and compare),
benchmarks (benchmarks/network.py's naive row) and debugging: `Machine(hw, network=ReferenceNetwork(Clock()))`
gives the task times of the default network, slowly.

It has `Network`'s interface where the machine and the tests use it: `env`, `send` / `start` (the same
arguments; `on_done(owner)`, or `on_done()` without an owner, runs `tail` seconds after the flow's last
byte), `idle` and `alone`, and it keeps the links' accounting as `Network` does (`Link.bytes`, `busy_time`,
`busy_since`: a link is busy while a flow moves data on it). It runs on a `clock.Clock` or any simpy
environment.
"""
from __future__ import annotations

from typing import Callable, Sequence

import simpy

from .clock import timer
from .network import Link

EPS = 1e-12  # seconds: data ends within this of the next one happen with it (as in `network.EPS`)
INF = float("inf")


class RefFlow:
    """A flow of the reference: `size` wire bytes across `links` (`weights` units of each per unit of its
    rate), `remaining` of them left, moving at `rate`."""

    __slots__ = ("links", "weights", "size", "remaining", "rate", "tail", "on_done", "owner")

    def __init__(self, links, weights, size: float, tail: float, on_done: Callable, owner):
        self.links, self.weights, self.size, self.tail = list(links), list(weights), size, tail
        self.on_done, self.owner = on_done, owner
        self.remaining = size
        self.rate = 0.0

    def __repr__(self) -> str:
        return f"<RefFlow {self.size:.0f} B over {[link.name for link in self.links]}>"


class ReferenceNetwork:
    """Max-min fair sharing of links among flows, recomputed from scratch at every change (see the module)."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._call = timer(env)
        self.flows: dict[RefFlow, None] = {}  # moving data, in the order they started
        self._open = 0  # started and not yet reported
        self._updated = env.now  # the flows' `remaining` are as of this time
        self._generation = 0  # the timer armed last; an earlier one does nothing

    @property
    def idle(self) -> bool:
        """No flow started and not yet reported."""
        return not self._open

    def start(self, links: Sequence[Link], size: float, on_done: Callable,
              weights: Sequence[float] | None = None, tail: float = 0.0, owner=None) -> RefFlow:
        """Move `size` wire bytes across `links`; `on_done(owner)` (or `on_done()`) runs `tail` seconds after
        the last byte. Returns its flow."""
        if not weights:
            weights = [1.0] * len(links)
        flow = RefFlow(links, weights, size, tail, on_done, owner)
        self._open += 1
        if size <= 0 or not links:
            self._call(tail, self._report, flow)
            return flow
        self._advance()
        now = self.env.now
        for link in links:
            if not any(link in f.links for f in self.flows):
                link.busy_since = now
        self.flows[flow] = None
        self._rerate_and_arm()
        return flow

    send = start  # (the machine's name: it does not look at the flow)

    def alone(self, links: Sequence[Link], weights: Sequence[float], size: float, start: float) -> float:
        """A flow from `start` with the network to itself (`Network.alone`): its links' accounting as its run
        would leave it, without the flow. Returns when its last byte arrives."""
        if size <= 0 or not links:
            return start
        finish = start + size / min(link.capacity / w for link, w in zip(links, weights))
        for link, w in zip(links, weights):
            link.bytes += size * w
            link.busy_time += finish - start
        return finish

    # -- every event: advance, recompute, arm ---------------------------------------------------------
    def _advance(self) -> None:
        """Every flow moves at its rate from the last update to now."""
        now = self.env.now
        dt = now - self._updated
        if dt > 0:
            for f in self.flows:
                f.remaining = max(f.remaining - f.rate * dt, 0.0)
        self._updated = now

    def _rerate_and_arm(self) -> None:
        """Every rate again, by progressive filling, and a timer for the next data end."""
        for f, rate in max_min_rates(self.flows).items():
            f.rate = rate
        if self.flows:
            self._generation += 1
            now = self.env.now
            finish = min(now + f.remaining / f.rate for f in self.flows)
            self._call(max(finish - now, 0.0), self._data_ends, self._generation)

    def _data_ends(self, generation: int, _event=None) -> None:
        """The timer: the flows whose data is done by now leave their links and report after their tail; the
        rest are re-rated."""
        if generation != self._generation:
            return  # superseded by a change since
        self._advance()
        now = self.env.now
        ended = [f for f in self.flows if f.remaining <= f.rate * EPS]
        for f in ended:
            del self.flows[f]
            self._leave(f, now)
        self._rerate_and_arm()
        for f in ended:
            if f.tail > 0:
                self._call(f.tail, self._report, f)
            else:
                self._report(f)

    def _leave(self, f: RefFlow, now: float) -> None:
        """`f`'s last byte has arrived: its bytes count on its links, and a link it leaves empty is idle."""
        f.remaining = 0.0
        for link, w in zip(f.links, f.weights):
            link.bytes += f.size * w
            if not any(link in g.links for g in self.flows):
                link.busy_time += now - link.busy_since
                link.busy_since = None

    def _report(self, f: RefFlow, _event=None) -> None:
        self._open -= 1
        if f.owner is None:
            f.on_done()
        else:
            f.on_done(f.owner)


def max_min_rates(flows) -> dict:
    """{flow: its weighted max-min fair rate} (flows: anything with `links` and `weights`), by progressive
    filling from scratch: of the links with flows not fixed yet, the one with the least room per unit of their
    weight fills first, fixing their rates at that level; then the next."""
    room: dict[Link, float] = {}  # capacity less the rates fixed so far
    load: dict[Link, float] = {}  # the summed weights of its flows not fixed yet
    loose: dict[Link, int] = {}  # how many of its flows are not fixed yet
    members: dict[Link, list] = {}
    for f in flows:
        for link, w in zip(f.links, f.weights):
            room[link] = link.capacity
            load[link] = load.get(link, 0.0) + w
            loose[link] = loose.get(link, 0) + 1
            members.setdefault(link, []).append(f)
    rates = {}
    while loose:
        neck = min(loose, key=lambda link: room[link] / load[link])
        level = room[neck] / load[neck]
        for f in members[neck]:
            if f in rates:
                continue
            rates[f] = level
            for link, w in zip(f.links, f.weights):
                room[link] -= level * w
                load[link] -= w
                loose[link] -= 1
                if not loose[link]:
                    del loose[link]
    return rates
