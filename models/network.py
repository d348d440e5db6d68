"""Flow-level bandwidth sharing: links, flows, max-min fairness (SimGrid style).

A flow crosses one or more links, using `weight` units of each link's capacity per unit of its own rate
(an on-chip copy reads and writes HBM: weight 2). Rates are max-min fair. A flow's start or end changes
only the rates of the flows it is connected to through shared links (its component), so only that
component is re-rated; flows started at the same instant are rated once, together.

One simpy timer stays armed for the next thing due. Since any end in a component re-rates the whole
component, only its earliest finish needs a place in the heap of due times. A flow may end with a `tail`
(a fixed latency after its last byte) that uses no bandwidth: it leaves its links when its data is done
and reports done `tail` seconds later. A flow alone on its links (the common case: a copy on an idle
link) is "lone": its end is known when it starts, so it costs one event, and it stays on its links until
another flow needs them or it ends. No per-byte events, and no scan of the flows that did not change.
"""
from __future__ import annotations

from heapq import heapify, heappop, heappush
from itertools import count
from typing import Callable

import simpy
from simpy.events import NORMAL

EPS = 1e-12  # seconds: things due within this of each other happen together
INF = float("inf")

# Flow states
MOVING = 0  # sharing its links with others; its rate changes with its component
LONE = 1  # alone on its links: its data end is known; it leaves them when another flow comes or it is done
DRAINED = 2  # its data is done: off its links, waiting out its tail
DONE = 3  # reported
SHARING = 4  # one of many flows on a link of their own (see Link.service): served at the link's level
SERVICE_FROM = 4  # flows alone together on one link before it keeps a service clock


class Link:
    """One direction of a link (full duplex links are two of these), or a shared resource like HBM."""

    __slots__ = ("name", "capacity", "flows", "busy_since", "busy_time", "bytes", "mark", "service", "served_at",
                 "weight", "tags", "version")

    def __init__(self, name: str, capacity: float):
        if not capacity > 0:
            raise ValueError(f"link {name}: capacity must be > 0")
        self.name = name
        self.capacity = capacity  # wire bytes per second
        self.flows: dict[Flow, None] = {}  # the flows on it, in arrival order
        self.busy_since: float | None = None
        self.busy_time = 0.0  # seconds with at least one flow
        self.bytes = 0.0  # wire bytes carried (brought up to date when its flows' rates change or they leave)
        self.mark = 0  # the last re-rating that visited it
        # When its flows cross no other link (and there are several), they all move at one level,
        # capacity / their summed weights, so they end in the order of their tags (the service at which
        # each has its last byte), whatever comes and goes: a start or an end costs O(log N), not O(N).
        self.service: float | None = None  # bytes each flow has moved since the clock began; None: no clock
        self.served_at = 0.0  # when `service` was brought up to date
        self.weight = 0.0  # its flows' summed weights
        self.tags: list = []  # heap of (tag, seq, flow)
        self.version = 0  # its entry in the network's heap is current while it carries this

    def utilisation(self, now: float) -> float:
        """Share of [0, now] the link carried data."""
        busy = self.busy_time + (now - self.busy_since if self.busy_since is not None else 0.0)
        return busy / now if now > 0 else 0.0

    def __repr__(self) -> str:
        return f"<Link {self.name} {self.capacity / 1e9:.1f} GB/s, {len(self.flows)} flows>"


class Flow:
    """`size` wire bytes moving across `links` at a max-min fair `rate`; `on_done()` (or `on_done(owner)`)
    runs `tail` seconds after its last byte."""

    __slots__ = ("links", "weights", "size", "remaining", "counted", "updated", "start", "tail", "on_done",
                 "owner", "rate", "finish", "state", "version", "mark", "tag")

    def __init__(self, links: list[Link], weights: list[float], size: float, tail: float,
                 on_done: Callable, now: float, owner=None):
        self.links = links
        self.weights = weights
        self.size = size
        self.remaining = size  # wire bytes left at `updated`
        self.counted = 0.0  # wire bytes already added to its links' byte counts
        self.updated = self.start = now
        self.tail = tail
        self.on_done = on_done
        self.owner = owner
        self.rate = 0.0
        self.finish = INF  # when its last byte arrives, at the current rates
        self.state = MOVING
        self.version = 0  # a heap entry is current while it carries the flow's version
        self.mark = 0
        self.tag = 0.0  # SHARING: the link's service at which its last byte arrives

    def done(self) -> None:
        if self.owner is None:
            self.on_done()
        else:
            self.on_done(self.owner)

    def __repr__(self) -> str:
        return f"<Flow {self.size:.0f} B over {[link.name for link in self.links]}>"


class Call:
    """A callback due at a simulated time: the smallest thing simpy's event loop can run (it needs
    `callbacks`, `_ok` and `_value`), lighter than a full simpy.Event for the model's own timers."""

    __slots__ = ("callbacks", "_ok", "_value")

    def __init__(self, callback, value):
        self.callbacks = [callback]
        self._ok = True
        self._value = value


def at(env: simpy.Environment, when: float, callback, value=None) -> None:
    """Run `callback(event)` (event._value is `value`) at simulated time `when` (now, if `when` has passed)."""
    delay = when - env.now
    env.schedule(Call(callback, value), NORMAL, delay if delay > 0 else 0.0)


class Network:
    """The flows in flight on a simpy environment and the max-min fair rates they share links at."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.flows: dict[Flow, None] = {}  # flows moving data and sharing a link
        self._heap: list = []  # (due, seq, version, flow): a data end (MOVING) or a report (LONE, DRAINED)
        self._seq = count()
        self._open = 0  # flows started and not yet reported
        self._armed = INF  # when the pending timer fires
        self._generation = 0
        self._settling = False  # reporting flows done: flows their callbacks start are rated once, after
        self._dirty: dict[Link, None] = {}  # links whose flows are re-rated when settling ends
        self._mark = 0

    def start(self, links: list[Link], size: float, on_done: Callable,
              weights: list[float] | None = None, tail: float = 0.0, owner=None) -> Flow:
        """Move `size` wire bytes across `links`; `on_done()` (or `on_done(owner)`) runs `tail` seconds
        after the last byte."""
        now = self.env.now
        flow = Flow(links, weights or [1.0] * len(links), size, tail, on_done, now, owner)
        self._open += 1
        if size <= 0 or not links:
            flow.finish = now
            flow.state = DRAINED
            self._push(now + tail, flow)
            if not self._settling:
                self._arm(now)
            return flow
        limit = now + EPS
        crowded = False
        freed = None  # links of flows that left: what they shared with is re-rated too
        for link in links:  # flows whose data is done by now leave first: the new flow does not share with them
            if link.flows:
                if link.service is not None:
                    self._serve(link, now)
                else:
                    for g in list(link.flows):
                        if g.finish <= limit:
                            was_moving = g.state == MOVING
                            self._retire(g, now)
                            if was_moving:
                                freed = (freed or []) + [x for x in g.links if x not in links]
                crowded = crowded or bool(link.flows)
        if freed:
            if self._settling:
                self._dirty.update(dict.fromkeys(freed))
            else:
                self._rerate(freed, now)
        if not crowded:  # alone on its links: its end is known now
            if len(links) == 1:
                flow.rate = rate = links[0].capacity / flow.weights[0]
            else:
                flow.rate = rate = min(link.capacity / w for link, w in zip(links, flow.weights))
            flow.finish = finish = now + size / rate
            flow.state = LONE
            for link in links:
                link.busy_since = now
                link.flows[flow] = None
            flow.version = 1
            heappush(self._heap, (finish + tail, next(self._seq), 1, flow))
            if not self._settling:
                self._arm(now)
            return flow
        if len(links) == 1 and links[0].service is not None:  # one more on a link with a service clock
            link = links[0]
            flow.state = SHARING
            flow.tag = link.service + size
            link.weight += flow.weights[0]
            link.flows[flow] = None
            heappush(link.tags, (flow.tag, next(self._seq), flow))
            self._push_link(link, now)
            if not self._settling:
                self._arm(now)
            return flow
        for link in links:
            if link.service is not None:
                self._stop_clock(link, now)
            if not link.flows:
                link.busy_since = now
            link.flows[flow] = None
        self.flows[flow] = None
        if self._settling:
            self._dirty.update(dict.fromkeys(links))
        else:
            self._rerate(links, now)
            self._arm(now)
        return flow

    # -- a flow's life ------------------------------------------------------------------------------
    def _push(self, due: float, f: Flow) -> None:
        f.version += 1
        heappush(self._heap, (due, next(self._seq), f.version, f))

    def _settle(self, f: Flow, now: float) -> None:
        """Bring a moving flow's bytes up to `now` at its current rate."""
        dt = now - f.updated
        if dt > 0:
            moved = f.rate * dt
            if moved > f.remaining:
                moved = f.remaining
            f.remaining -= moved
            f.counted += moved
            for link, w in zip(f.links, f.weights):
                link.bytes += moved * w
            f.updated = now

    def _leave(self, f: Flow, now: float) -> None:
        """A flow's last byte has arrived: it leaves its links, with all its bytes counted."""
        rest = f.size - f.counted
        for link, w in zip(f.links, f.weights):
            link.bytes += rest * w
            del link.flows[f]
            if not link.flows:
                link.busy_time += min(f.finish, now) - link.busy_since
                link.busy_since = None
        f.remaining = 0.0
        f.counted = f.size

    def _retire(self, f: Flow, now: float) -> None:
        """A flow whose data is done by `now` leaves its links and waits out its tail."""
        if f.state == MOVING:
            del self.flows[f]
            self._push(f.finish + f.tail, f)
        self._leave(f, now)
        f.state = DRAINED  # a lone flow's entry, at finish + tail, stands

    def _activate(self, f: Flow, now: float) -> None:
        """A lone flow still moving data meets another flow: from now on it shares like any other."""
        f.remaining = f.rate * (f.finish - now)
        moved = f.size - f.remaining - f.counted
        for link, w in zip(f.links, f.weights):
            link.bytes += moved * w
        f.counted += moved
        f.updated = now
        f.state = MOVING
        f.version += 1  # its report at finish + tail no longer stands
        self.flows[f] = None

    # -- links with a service clock -------------------------------------------------------------------
    def _start_clock(self, link: Link, comp: list[Flow], now: float) -> None:
        """Flows alone together on `link` (settled to now) move on its service clock from now on."""
        link.service, link.served_at = 0.0, now
        link.weight = 0.0
        tags = []
        for f in comp:
            del self.flows[f]
            f.state = SHARING
            f.tag = f.remaining
            f.version += 1
            link.weight += f.weights[0]
            tags.append((f.tag, next(self._seq), f))
        heapify(tags)
        link.tags = tags
        self._push_link(link, now)

    def _push_link(self, link: Link, now: float) -> None:
        """The link's next end in the network's heap."""
        link.version += 1
        level = link.capacity / link.weight
        heappush(self._heap, (now + (link.tags[0][0] - link.service) / level, next(self._seq), link.version, link))

    def _serve(self, link: Link, now: float) -> None:
        """Bring the link's clock to `now`; the flows whose last byte has arrived leave it (and report after
        their tail); the clock stops when none is left, else the heap gets its next end."""
        level = link.capacity / link.weight
        dt = now - link.served_at
        if dt > 0:
            link.service += level * dt
            link.bytes += link.capacity * dt  # work conserving: its flows fill it
            link.served_at = now
        tags, due = link.tags, link.service + level * EPS
        while tags and tags[0][0] <= due:
            f = heappop(tags)[2]
            link.weight -= f.weights[0]
            del link.flows[f]
            f.remaining, f.counted, f.finish = 0.0, f.size, now
            f.state = DRAINED
            self._push(now + f.tail, f)
        if not tags:
            link.busy_time += now - link.busy_since
            link.busy_since = None
            link.service = None
            link.version += 1
        elif link.weight <= 0:  # (only rounding left: restart the sum)
            link.weight = sum(f.weights[0] for _, _, f in tags)
        self._push_link(link, now) if tags else None

    def _stop_clock(self, link: Link, now: float) -> None:
        """A flow that crosses other links joins: the link's flows share like any others from now on."""
        self._serve(link, now)
        if link.service is None:
            return
        level = link.capacity / link.weight
        service = link.service
        for _, _, f in link.tags:
            f.remaining = f.tag - service
            f.counted = f.size - f.remaining  # the link's bytes already count what it moved
            f.rate, f.updated = level, now
            f.finish = now + f.remaining / level
            f.state = MOVING
            f.version += 1
            self.flows[f] = None
        link.tags = []
        link.service = None
        link.version += 1

    # -- rates ---------------------------------------------------------------------------------------
    def _rerate(self, seeds, now: float) -> None:
        """Re-rate the components (flows connected through shared links) of the `seeds` links."""
        self._mark += 1
        mark = self._mark
        limit = now + EPS
        seeds = list(seeds)
        for seed in seeds:  # (grows while it runs)
            if seed.mark == mark:
                continue
            seed.mark = mark
            stack, comp, links = [seed], [], []
            while stack:
                link = stack.pop()
                if link.service is not None:
                    self._stop_clock(link, now)
                links.append(link)
                for g in list(link.flows):
                    if g.mark == mark:
                        continue
                    g.mark = mark
                    if g.state == LONE:
                        if g.finish <= limit:
                            self._retire(g, now)
                            continue
                        self._activate(g, now)
                    else:
                        self._settle(g, now)
                        if g.finish <= limit:  # gone: what it shared with is re-rated too (its own component)
                            self._retire(g, now)
                            seeds.extend(g.links)
                            continue
                    comp.append(g)
                    for other in g.links:
                        if other.mark != mark:
                            other.mark = mark
                            stack.append(other)
            if comp:
                self._share(comp, links, now)

    def _share(self, comp: list[Flow], links: list[Link], now: float) -> None:
        """Max-min fair rates of one component by progressive filling; the heap gets its earliest finish."""
        if len(comp) == 1:
            f = comp[0]
            f.rate = min(link.capacity / w for link, w in zip(f.links, f.weights))
        elif len(links) == 1:  # every flow on the one link: the same rate, weights summed
            if len(comp) >= SERVICE_FROM:
                self._start_clock(links[0], comp, now)
                return
            level = links[0].capacity / sum(f.weights[0] for f in comp)
            for f in comp:
                f.rate = level
        else:
            _progressive_filling(comp, links)
        first, due = None, INF
        for f in comp:
            f.finish = now + f.remaining / f.rate if f.rate > 0 else INF
            f.version += 1  # their old entries no longer stand
            if f.finish < due:
                first, due = f, f.finish
        if len(comp) == 1:
            f = comp[0]
            for link in f.links:
                if len(link.flows) > 1:
                    break
            else:  # alone on its links: nothing can change it before its end
                del self.flows[f]
                f.state = LONE
                self._push(f.finish + f.tail, f)
                return
        if first is not None:  # the earliest finish, and any due with it
            limit = due + EPS
            for f in comp:
                if f.finish <= limit:
                    self._push(f.finish, f)

    # -- the timer ------------------------------------------------------------------------------------
    def _arm(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][2] != heap[0][3].version:
            heappop(heap)
        if len(heap) > 4 * self._open + 64:  # mostly superseded entries: keep the current ones
            heap[:] = [e for e in heap if e[2] == e[3].version]
            heapify(heap)
        if heap:
            t = heap[0][0]
            if t < self._armed - EPS:
                self._armed = t
                self._generation += 1
                self.env.schedule(Call(self._fire, self._generation), NORMAL, t - now if t > now else 0.0)

    def _fire(self, event) -> None:
        if event._value != self._generation:
            return  # superseded by an earlier timer
        self._armed = INF
        now = self.env.now
        limit = now + EPS
        heap, dirty, done = self._heap, self._dirty, []
        while heap and heap[0][0] <= limit:
            _, _, version, f = heappop(heap)
            if version != f.version:
                continue
            if f.__class__ is Link:  # the next end on a link with a service clock
                self._serve(f, now)
                continue
            if f.state == MOVING:  # its last byte: off its links, the rest of its component re-rated
                self._settle(f, now)
                dirty.update(dict.fromkeys(f.links))
                self._retire(f, now)
            else:  # a report due: a lone flow leaves its links now
                if f.state == LONE:
                    self._leave(f, now)
                f.state = DONE
                done.append(f)
        if done:
            self._open -= len(done)
            self._settling = True  # flows the callbacks start now are rated once, below
            try:
                for f in done:
                    f.done()
            finally:
                self._settling = False
        if dirty:
            self._dirty = {}
            self._rerate(dirty, now)
        self._arm(now)


def _progressive_filling(comp: list[Flow], links: list[Link]) -> None:
    """Weighted max-min rates: raise every unfixed flow's rate together; the link that fills first fixes
    the rate of its flows; repeat."""
    left: dict[Link, float] = {}
    load: dict[Link, float] = {}
    for link in links:
        left[link] = link.capacity
        load[link] = 0.0
    for f in comp:
        f.rate = -1.0
        for link, w in zip(f.links, f.weights):
            load[link] += w
    unfixed = len(comp)
    while unfixed:
        best, share = None, INF
        for link, w in load.items():
            if w > 1e-15 and left[link] / w < share:
                best, share = link, left[link] / w
        if best is None:
            break
        for f in best.flows:
            if f.rate < 0 and f.state == MOVING:
                f.rate = share
                unfixed -= 1
                for link, w in zip(f.links, f.weights):
                    left[link] -= share * w
                    load[link] -= w
    for f in comp:
        if f.rate < 0:
            f.rate = 0.0
