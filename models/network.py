"""Flow-level bandwidth sharing: links, flows, max-min fairness (SimGrid style).

A flow crosses one or more links, using `weight` units of each link's capacity
per unit of its own rate (an on-chip copy reads and writes HBM: weight 2).
Rates are max-min fair and recomputed only when a flow starts or ends; the
network keeps one timer armed for the next flow to finish. No per-byte events.
"""
from __future__ import annotations

from typing import Callable

import simpy

EPS = 1e-9  # seconds: flows finishing within this of each other finish together


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

    def __repr__(self) -> str:
        return f"<Link {self.name} {self.capacity / 1e9:.1f} GB/s, {len(self.flows)} flows>"


class Flow:
    __slots__ = ("links", "weights", "remaining", "rate", "updated", "on_done", "size", "start")

    def __init__(self, links: list[Link], weights: list[float], size: float, on_done: Callable[[], None]):
        self.links = links
        self.weights = weights
        self.size = size
        self.remaining = float(size)  # wire bytes left
        self.rate = 0.0
        self.updated = 0.0
        self.on_done = on_done
        self.start = 0.0


class Network:
    def __init__(self, env: simpy.Environment):
        self.env = env
        self.flows: list[Flow] = []
        self._armed = float("inf")  # when the pending timer fires
        self._generation = 0

    def start(self, links: list[Link], size: float, on_done: Callable[[], None],
              weights: list[float] | None = None) -> Flow:
        """Start moving `size` wire bytes across `links`; `on_done()` runs when they have all arrived."""
        now = self.env.now
        flow = Flow(links, weights or [1.0] * len(links), size, on_done)
        flow.start = flow.updated = now
        if size <= 0 or not links:
            on_done()
            return flow
        self._advance(now)
        for link in links:
            if not link.flows:
                link.busy_since = now
            link.flows.append(flow)
        self.flows.append(flow)
        self._share()
        self._arm()
        return flow

    # -- internals ----------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        for f in self.flows:
            dt = now - f.updated
            if dt:
                moved = f.rate * dt
                f.remaining -= moved
                for link, w in zip(f.links, f.weights):
                    link.bytes += moved * w
                f.updated = now

    def _share(self) -> None:
        """Max-min fair rates by progressive filling."""
        flows = self.flows
        if len(flows) == 1:  # the common case: alone on its links
            f = flows[0]
            f.rate = min(link.capacity / w for link, w in zip(f.links, f.weights))
            return
        left = {}
        for f in flows:
            f.rate = -1.0
            for link in f.links:
                left[link] = link.capacity
        unfixed = set(flows)
        while unfixed:
            best, share = None, float("inf")
            for link, cap in left.items():
                w = sum(wt for f in link.flows if f in unfixed for l2, wt in zip(f.links, f.weights) if l2 is link)
                if w > 0 and cap / w < share:
                    best, share = link, cap / w
            if best is None:
                break
            for f in [f for f in best.flows if f in unfixed]:
                f.rate = share
                unfixed.discard(f)
                for link, w in zip(f.links, f.weights):
                    left[link] -= share * w
        for f in unfixed:
            f.rate = 0.0

    def _next_finish(self) -> float:
        now = self.env.now
        return min((now + f.remaining / f.rate for f in self.flows if f.rate > 0), default=float("inf"))

    def _arm(self) -> None:
        t = self._next_finish()
        if t < self._armed - EPS:
            self._armed = t
            self._generation += 1
            timer = self.env.timeout(max(t - self.env.now, 0.0))
            gen = self._generation
            timer.callbacks.append(lambda _ev: self._fire(gen))

    def _fire(self, generation: int) -> None:
        if generation != self._generation:
            return  # superseded by an earlier timer
        self._armed = float("inf")
        now = self.env.now
        self._advance(now)
        done = [f for f in self.flows if f.rate > 0 and f.remaining <= f.rate * EPS + 1e-6]
        for f in done:
            f.remaining = 0.0
            self.flows.remove(f)
            for link in f.links:
                link.flows.remove(f)
                if not link.flows and link.busy_since is not None:
                    link.busy_time += now - link.busy_since
                    link.busy_since = None
        if self.flows:
            self._share()
            self._arm()
        for f in done:
            f.on_done()
