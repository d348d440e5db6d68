"""Flow-level bandwidth sharing: links, flows, max-min fairness (SimGrid style).

A flow crosses one or more links, using `weight` units of each link's capacity
per unit of its own rate (an on-chip copy reads and writes HBM: weight 2).
Rates are max-min fair and recomputed only when a flow starts or ends; one
timer stays armed for the next thing to happen. A flow may end with a `tail`
(a fixed latency after its last byte) that uses no bandwidth: the flow leaves
its links when its data is done, and reports done `tail` seconds later. No
per-byte events, and one event per flow when it has its links to itself.
"""
from __future__ import annotations

from heapq import heappush
from typing import Callable

import simpy

EPS = 1e-12  # seconds: things due within this of each other happen together
INF = float("inf")


class Link:
    """One direction of a link (full duplex links are two of these), or a shared resource like HBM."""

    __slots__ = ("name", "capacity", "flows", "busy_since", "busy_time", "bytes")

    def __init__(self, name: str, capacity: float):
        if capacity <= 0:
            raise ValueError(f"link {name}: capacity must be > 0")
        self.name = name
        self.capacity = capacity  # wire bytes per second
        self.flows: list[Flow] = []
        self.busy_since: float | None = None
        self.busy_time = 0.0  # seconds with at least one flow
        self.bytes = 0.0  # wire bytes carried

    def utilisation(self, now: float) -> float:
        """Share of [0, now] the link carried data."""
        busy = self.busy_time + (now - self.busy_since if self.busy_since is not None else 0.0)
        return busy / now if now > 0 else 0.0

    def __repr__(self) -> str:
        return f"<Link {self.name} {self.capacity / 1e9:.1f} GB/s, {len(self.flows)} flows>"


class Flow:
    # Defaults live on the class: a flow sets only what it needs (flows are made by the hundred thousand).
    rate = 0.0
    counted = 0.0  # wire bytes already added to its links' byte counts
    finish = INF  # when its last byte arrives, at the current rates
    drained = False  # its data is done: it has left its links and waits out its tail
    lone = False  # started with no other data moving: its end is known; it stays on its links until another
    #               flow needs them or it ends (see Network.start)

    def __init__(self, links: list[Link], weights: list[float], size: float, tail: float,
                 on_done: Callable, now: float, owner=None):
        self.links = links
        self.weights = weights
        self.size = size
        self.remaining = size  # wire bytes left
        self.updated = self.start = now
        self.tail = tail
        self.on_done = on_done
        self.owner = owner

    def done(self) -> None:
        if self.owner is None:
            self.on_done()
        else:
            self.on_done(self.owner)


class Call:
    """A callback due at a simulated time: the smallest thing simpy's event loop can run (it needs
    `callbacks`, `_ok` and `_value`), lighter than a full simpy.Event for the model's own timers."""

    __slots__ = ("callbacks", "_ok", "_value")

    def __init__(self, callback, value):
        self.callbacks = [callback]
        self._ok = True
        self._value = value


def at(env: simpy.Environment, when: float, callback, value=None) -> None:
    """Run `callback(event)` (event._value is `value`) at simulated time `when`."""
    now = env._now
    heappush(env._queue, (when if when > now else now, 1, next(env._eid), Call(callback, value)))


class Network:
    def __init__(self, env: simpy.Environment):
        self.env = env
        self.flows: list[Flow] = []  # moving data
        self.draining: list[Flow] = []  # data done, waiting out their tail
        self._armed = INF  # when the pending timer fires
        self._next = INF  # when the next thing is due, at the current rates
        self._generation = 0
        self._settling = False

    def start(self, links: list[Link], size: float, on_done: Callable,
              weights: list[float] | None = None, tail: float = 0.0, owner=None) -> Flow:
        """Move `size` wire bytes across `links`; `on_done()` (or `on_done(owner)`) runs `tail` seconds
        after the last byte."""
        now = self.env._now
        flow = Flow(links, weights or [1.0] * len(links), size, tail, on_done, now, owner)
        if size <= 0 or not links:
            flow.finish = now
            flow.drained = True
            self.draining.append(flow)
            if not self._settling:
                self._arm()
            return flow
        if self.flows and not self._settling:  # (while settling, `_fire` has just brought every flow up to now)
            self._advance(now)
            self._retire(now)
        for link in links:  # lone flows on these links: off them if done, else they share from now
            for g in link.flows:
                if g.lone:
                    if g.finish <= now + EPS:
                        self._leave(g, now)
                    else:
                        self._activate(g, now)
                    break
        if not self.flows and not self._settling:  # no other data moving: no sharing to work out
            if len(links) == 1:
                flow.rate = rate = links[0].capacity / flow.weights[0]
            else:
                flow.rate = rate = min(link.capacity / w for link, w in zip(links, flow.weights))
            flow.finish = now + size / rate
            for link in links:
                if not link.flows:
                    link.busy_since = now
                link.flows.append(flow)
            flow.lone = True  # its end is known now: it waits with the draining flows
            self.draining.append(flow)
            due = flow.finish + tail
            for d in self.draining:
                if d.finish + d.tail < due:
                    due = d.finish + d.tail
            self._arm_at(due)
            return flow
        for link in links:
            if not link.flows:
                link.busy_since = now
            link.flows.append(flow)
        self.flows.append(flow)
        if not self._settling:  # (while settling, `_fire` shares once for every flow started)
            self._share(now)
            self._arm()
        return flow

    # -- internals ----------------------------------------------------------------------
    def _leave(self, f: Flow, now: float) -> None:
        """A flow's last byte has arrived: it leaves its links, with all its bytes counted."""
        for link, w in zip(f.links, f.weights):
            link.bytes += (f.size - f.counted) * w
            link.flows.remove(f)
            if not link.flows:
                link.busy_time += min(f.finish, now) - link.busy_since
                link.busy_since = None
        f.remaining = 0.0
        f.counted = f.size
        f.drained = True
        f.lone = False

    def _activate(self, f: Flow, now: float) -> None:
        """A lone flow still moving data meets another flow: from now on it shares like any other."""
        f.lone = False
        self.draining.remove(f)
        f.remaining = f.rate * (f.finish - now)
        moved = f.size - f.remaining - f.counted
        for link, w in zip(f.links, f.weights):
            link.bytes += moved * w
        f.counted += moved
        f.updated = now
        self.flows.append(f)

    def _advance(self, now: float) -> None:
        for f in self.flows:
            dt = now - f.updated
            if dt > 0:
                moved = min(f.rate * dt, f.remaining)
                f.remaining -= moved
                f.counted += moved
                for link, w in zip(f.links, f.weights):
                    link.bytes += moved * w
                f.updated = now

    def _retire(self, now: float) -> None:
        """Flows whose last byte has arrived leave their links (their tail needs no bandwidth)."""
        limit = now + EPS
        for f in self.flows:
            if f.finish <= limit:
                break
        else:
            return
        active = []
        for f in self.flows:
            if f.finish <= limit:
                self._leave(f, now)
                self.draining.append(f)
            else:
                active.append(f)
        self.flows = active

    def _share(self, now: float) -> None:
        """Max-min fair rates by progressive filling, and the finish time each implies."""
        flows = self.flows
        if len(flows) == 1:  # the common case: alone on its links
            f = flows[0]
            f.rate = min(link.capacity / w for link, w in zip(f.links, f.weights))
        elif max(len(f.links) for f in flows) == 1:  # one link each: a fair share of it
            load: dict[Link, float] = {}
            for f in flows:
                link = f.links[0]
                load[link] = load.get(link, 0.0) + f.weights[0]
            for f in flows:
                f.rate = f.links[0].capacity / load[f.links[0]]
        else:
            left = {}
            load: dict[Link, float] = {}
            for f in flows:
                f.rate = -1.0
                for link, w in zip(f.links, f.weights):
                    left[link] = link.capacity
                    load[link] = load.get(link, 0.0) + w
            unfixed = len(flows)
            while unfixed:
                best, share = None, INF
                for link, w in load.items():
                    if w > 1e-15 and left[link] / w < share:
                        best, share = link, left[link] / w
                if best is None:
                    break
                for f in best.flows:
                    if f.rate < 0:
                        f.rate = share
                        unfixed -= 1
                        for link, w in zip(f.links, f.weights):
                            left[link] -= share * w
                            load[link] -= w
            for f in flows:
                if f.rate < 0:
                    f.rate = 0.0
        for f in flows:
            f.finish = now + f.remaining / f.rate if f.rate > 0 else INF

    def _arm(self) -> None:
        t = INF
        for f in self.flows:
            due = f.finish
            for link in f.links:
                if len(link.flows) > 1:
                    break
            else:  # alone on its links: nothing can change it before its end
                due += f.tail
            if due < t:
                t = due
        for f in self.draining:
            due = f.finish + f.tail
            if due < t:
                t = due
        self._arm_at(t)

    def _arm_at(self, t: float) -> None:
        self._next = t
        if t < self._armed - EPS:
            self._armed = t
            self._generation += 1
            at(self.env, t, self._fire, self._generation)

    def _fire(self, event: simpy.Event) -> None:
        if event._value != self._generation:
            return  # superseded by an earlier timer
        self._armed = INF
        now = self.env._now
        if now < self._next - EPS:  # flows started since slowed the others down: nothing is due yet
            self._arm()
            return
        if self.flows:
            self._advance(now)
            self._retire(now)
        done, limit = None, now + EPS
        for f in self.draining:
            if f.finish + f.tail <= limit:
                done, waiting = [], []
                for g in self.draining:
                    (done if g.finish + g.tail <= limit else waiting).append(g)
                self.draining = waiting
                break
        if done:
            for f in done:
                if f.lone:
                    self._leave(f, now)
            self._settling = True  # flows the callbacks start now are shared once, below
            try:
                for f in done:
                    f.done()
            finally:
                self._settling = False
        if self.flows:
            self._share(now)
            if len(self.flows) == 1:  # one flow moving data, alone on its links: its end is known now
                f = self.flows[0]
                for link in f.links:
                    if len(link.flows) > 1:
                        break
                else:
                    f.lone = True
                    self.flows = []
                    self.draining.append(f)
        if self.flows or self.draining:
            self._arm()
