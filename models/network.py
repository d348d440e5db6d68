"""Flow-level bandwidth sharing: links, flows, max-min fairness (SimGrid style).

A flow crosses one or more links, using `weight` units of each link's capacity per unit of its own rate
(an on-chip copy reads and writes HBM: weight 2). Rates are max-min fair: those progressive filling gives,
raising every rate together and fixing a flow's rate at the level where one of its links fills.

Re-rating is partial. A change (a flow starting or ending) alters nothing progressive filling does below a
level `theta`: the old rate of a flow that ends (no link of it fills below that), or, for a flow that starts,
the smallest fair share capacity / summed weights over its links (no link of it can fill below that). So the
flows rated below `theta` keep their rates, and only the flows at `theta` or above that are connected to the
change through links are re-rated, by progressive filling on the capacity the others leave. Only a flow whose
rate changed is brought up to date and gets a new due time in the heap. The changes made at one instant (the
flows that end then, those their completions start, those started at that instant) are re-rated once,
together, before simulated time moves on.

One simpy timer stays armed for the next thing due. A flow may end with a `tail` (a fixed latency after its
last byte) that uses no bandwidth: it leaves its links when its data is done and reports done `tail` seconds
later. A flow alone on its links (the common case: a copy on an idle link) is "lone": its end is known when it
starts, so it costs one event, and it stays on its links until another flow needs them or it ends. Flows
alone together on one link move on the link's service clock (see Link.service). No per-byte events, and no
scan of the flows that did not change.
"""
from __future__ import annotations

from heapq import heapify, heappop, heappush, heapreplace
from itertools import count
from typing import Callable

import simpy
from simpy.events import NORMAL

EPS = 1e-12  # seconds: things due within this of each other happen together
INF = float("inf")
TIES = 1e-9  # a flow rated within this (relative) of `theta` is re-rated too: re-rating more is always safe

# Flow states
MOVING = 0  # sharing its links with others; its rate changes with theirs
LONE = 1  # alone on its links: its data end is known; it leaves them when another flow comes or it is done
DRAINED = 2  # its data is done: off its links, waiting out its tail
DONE = 3  # reported
SHARING = 4  # one of many flows on a link of their own (see Link.service): served at the link's level
SERVICE_FROM = 4  # flows alone together on one link before it keeps a service clock


class Link:
    """One direction of a link (full duplex links are two of these), or a shared resource like HBM."""

    __slots__ = ("name", "capacity", "flows", "busy_since", "busy_time", "bytes", "multi", "mark", "left", "load",
                 "service", "served_at", "weight", "tags", "version")

    def __init__(self, name: str, capacity: float):
        if not capacity > 0:
            raise ValueError(f"link {name}: capacity must be > 0")
        self.name = name
        self.capacity = capacity  # wire bytes per second
        self.flows: dict[Flow, float] = {}  # the flows on it, in arrival order, and the weight each has on it
        self.busy_since: float | None = None
        self.busy_time = 0.0  # seconds with at least one flow
        self.bytes = 0.0  # wire bytes carried (brought up to date when its flows' rates change or they leave)
        self.multi = 0  # how many of its flows cross other links too
        # Scratch of a re-rating (valid while `mark` is the network's current mark): the capacity the flows
        # not re-rated leave, and the summed weights of the re-rated flows not yet given a rate.
        self.mark = 0
        self.left = 0.0
        self.load = 0.0
        # When its flows cross no other link (and there are several), they all move at one level,
        # capacity / their summed weights, so they end in the order of their tags (the service at which
        # each has its last byte), whatever comes and goes: a start or an end costs O(log N), not O(N).
        self.service: float | None = None  # bytes each flow has moved since the clock began; None: no clock
        self.served_at = 0.0  # when `service` was brought up to date
        self.weight = 0.0  # its flows' summed weights, while it keeps a service clock
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

    __slots__ = ("net", "links", "weights", "size", "remaining", "counted", "updated", "start", "tail", "on_done",
                 "owner", "speed", "share", "finish", "state", "version", "mark", "tag")

    def __init__(self, net: Network, links: list[Link], weights: list[float], size: float, tail: float,
                 on_done: Callable, now: float, owner=None):
        self.net = net
        self.links = links
        self.weights = weights
        self.size = size
        self.remaining = size  # wire bytes left at `updated`
        self.counted = 0.0  # wire bytes already added to its links' byte counts
        self.updated = self.start = now
        self.tail = tail
        self.on_done = on_done
        self.owner = owner
        self.speed = INF  # its rate; INF until it is first rated (so a re-rating never leaves it out)
        self.share = 0.0  # scratch of a re-rating: its new rate, < 0 while not yet fixed
        self.finish = INF  # when its last byte arrives, at the current rates
        self.state = MOVING
        self.version = 0  # a heap entry is current while it carries the flow's version
        self.mark = 0  # the re-rating that took it in
        self.tag = 0.0  # SHARING: the link's service at which its last byte arrives

    @property
    def rate(self) -> float:
        """Its max-min fair rate, in wire bytes per second, counting every change made so far."""
        net = self.net
        if net._dirty:
            net._flush(net.env.now)
        return self.speed

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
    """The flows in flight on a simpy environment and the max-min fair rates they share links at.

    Changes wait in `_dirty` (the links they touched), `_theta` (the lowest level they can alter) and `_added`
    (the flows started and not yet rated) until `_flush` re-rates them together: at the end of the timer's
    work for an instant, at a zero-delay event after a start made outside it, or when a flow's rate is read.
    """

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.flows: dict[Flow, None] = {}  # flows moving data and sharing a link
        self._heap: list = []  # (due, seq, version, flow or link): a data end (MOVING), a report (LONE, DRAINED),
        #                        or a link's next end (service clock)
        self._seq = count()
        self._open = 0  # flows started and not yet reported
        self._armed = INF  # when the pending timer fires
        self._generation = 0
        self._firing = False  # the timer is at work: it re-rates what changed when it is done
        self._flush_due = False  # a zero-delay event will re-rate what changed
        self._dirty: dict[Link, None] = {}  # links whose flows are re-rated by the next flush
        self._theta = INF  # the lowest rate the pending changes can alter
        self._added: list[Flow] = []  # flows started since the last flush
        self._mark = 0

    def start(self, links: list[Link], size: float, on_done: Callable,
              weights: list[float] | None = None, tail: float = 0.0, owner=None) -> Flow:
        """Move `size` wire bytes across `links`; `on_done()` (or `on_done(owner)`) runs `tail` seconds
        after the last byte."""
        now = self.env.now
        flow = Flow(self, links, weights or [1.0] * len(links), size, tail, on_done, now, owner)
        self._open += 1
        if size <= 0 or not links:
            flow.finish = now
            flow.state = DRAINED
            self._push(now + tail, flow)
            if not self._firing:
                self._arm(now)
            return flow
        crowded = False
        for link in links:  # flows whose data is done by now leave first: the new flow does not share with them
            if link.flows:
                if link.service is not None:
                    self._serve(link, now)
                else:
                    self._drain_due(link, now)
                crowded = crowded or bool(link.flows)
        if not crowded:
            self._start_lone(flow, now)
        elif len(links) == 1 and links[0].service is not None:
            self._start_sharing(flow, links[0], now)
        else:
            self._start_moving(flow, now)
        return flow

    # -- a flow's life ------------------------------------------------------------------------------
    def _start_lone(self, flow: Flow, now: float) -> None:
        """Alone on its links: its end is known now."""
        links, weights = flow.links, flow.weights
        if len(links) == 1:
            flow.speed = rate = links[0].capacity / weights[0]
        else:
            flow.speed = rate = min(link.capacity / w for link, w in zip(links, weights))
        flow.finish = finish = now + flow.size / rate
        flow.state = LONE
        multi = len(links) > 1
        for link, w in zip(links, weights):
            link.busy_since = now
            link.flows[flow] = w
            link.multi += multi
        flow.version = 1
        heappush(self._heap, (finish + flow.tail, next(self._seq), 1, flow))
        if not self._firing:
            self._arm(now)

    def _start_sharing(self, flow: Flow, link: Link, now: float) -> None:
        """One more on a link with a service clock."""
        flow.state = SHARING
        flow.tag = link.service + flow.size
        w = flow.weights[0]
        link.weight += w
        link.flows[flow] = w
        heappush(link.tags, (flow.tag, next(self._seq), flow))
        self._push_link(link, now)
        if not self._firing:
            self._arm(now)

    def _start_moving(self, flow: Flow, now: float) -> None:
        """Among others: rated with the other changes of this instant, at the next flush."""
        links = flow.links
        multi = len(links) > 1
        for link, w in zip(links, flow.weights):
            if link.service is not None:
                self._stop_clock(link, now)
            if not link.flows:
                link.busy_since = now
            link.flows[flow] = w
            link.multi += multi
        self.flows[flow] = None
        self._added.append(flow)
        self._changed(links)

    def _changed(self, links: list[Link]) -> None:
        """The flows on `links` are re-rated at the next flush: the timer's, when it is at work, else a
        zero-delay event's (so the changes of this instant are re-rated together)."""
        self._dirty.update(dict.fromkeys(links))
        if not self._firing and not self._flush_due:
            self._flush_due = True
            self.env.schedule(Call(self._flush_event, None), NORMAL, 0.0)

    def _push(self, due: float, f: Flow) -> None:
        f.version += 1
        heappush(self._heap, (due, next(self._seq), f.version, f))

    def _settle(self, f: Flow, now: float) -> None:
        """Bring a moving flow's bytes up to `now` at its current rate."""
        dt = now - f.updated
        if dt > 0:
            moved = f.speed * dt
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
        multi = len(f.links) > 1
        for link, w in zip(f.links, f.weights):
            link.bytes += rest * w
            del link.flows[f]
            link.multi -= multi
            if not link.flows:
                link.busy_time += min(f.finish, now) - link.busy_since
                link.busy_since = None
        f.remaining = 0.0
        f.counted = f.size

    def _drain(self, f: Flow, now: float) -> None:
        """A moving flow's data is done by `now`: it leaves its links (the flows it shared them with are
        re-rated at the next flush) and waits out its tail."""
        del self.flows[f]
        self._leave(f, now)
        if f.speed < self._theta:
            self._theta = f.speed
        self._changed(f.links)
        f.state = DRAINED
        self._push(f.finish + f.tail, f)

    def _drain_due(self, link: Link, now: float) -> None:
        """The flows on `link` whose data is done by now leave it (a lone one's report, at finish + tail,
        stands)."""
        limit = now + EPS
        for g in [g for g in link.flows if g.finish <= limit]:
            if g.state == MOVING:
                self._drain(g, now)
            else:
                self._leave(g, now)
                g.state = DRAINED

    def _activate(self, f: Flow, now: float) -> None:
        """A lone flow still moving data meets another flow: from now on it shares like any other (at its
        rate until a re-rating changes it)."""
        f.remaining = f.speed * (f.finish - now) if f.finish > now else 0.0
        moved = f.size - f.remaining - f.counted
        for link, w in zip(f.links, f.weights):
            link.bytes += moved * w
        f.counted += moved
        f.updated = now
        f.state = MOVING
        self.flows[f] = None
        self._push(f.finish, f)  # its data end; its report at finish + tail no longer stands

    # -- links with a service clock -------------------------------------------------------------------
    def _start_clock(self, link: Link, now: float) -> None:
        """The flows alone together on `link` move on its service clock from now on."""
        link.service, link.served_at = 0.0, now
        link.weight = 0.0
        tags = []
        for f, w in link.flows.items():
            self._settle(f, now)
            del self.flows[f]
            f.state = SHARING
            f.tag = f.remaining
            f.version += 1
            link.weight += w
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
            f.speed, f.updated = level, now
            f.finish = now + f.remaining / level
            f.state = MOVING
            self.flows[f] = None
            self._push(f.finish, f)
        link.tags = []
        link.service = None
        link.version += 1

    # -- rates ---------------------------------------------------------------------------------------
    def _flush_event(self, event) -> None:
        self._flush_due = False
        now = self.env.now
        if self._dirty:
            self._flush(now)
        self._arm(now)  # (a rate read may have flushed already)

    def _flush(self, now: float) -> None:
        """Re-rate the pending changes together."""
        dirty, theta, added = self._dirty, self._theta, self._added
        self._dirty, self._theta, self._added = {}, INF, []
        for f in added:  # no link of a new flow fills below its smallest fair share
            if f.state == MOVING:
                for link in f.links:
                    share = link.capacity / sum(link.flows.values())
                    if share < theta:
                        theta = share
        self._rerate(dirty, theta, now)

    def _rerate(self, seeds, theta: float, now: float) -> None:
        """Re-rate the flows rated at `theta` or above that are connected to the `seeds` links through
        links; the others keep their rates and leave their share of those links to them."""
        self._mark += 1
        mark = self._mark
        cut = theta * (1.0 - TIES)
        flows, links = self._gather(seeds, cut, mark, now)
        _fill(links, mark)
        heap, seq = self._heap, self._seq
        for f in flows:
            rate = f.share
            if rate == f.speed:
                continue
            if f.updated < now:
                self._settle(f, now)
            f.speed = rate
            f.finish = finish = now + f.remaining / rate if rate > 0 else INF
            f.version += 1
            for link in f.links:
                if len(link.flows) > 1:
                    heappush(heap, (finish, next(seq), f.version, f))
                    break
            else:  # alone on its links: nothing can change it before its end
                del self.flows[f]
                f.state = LONE
                heappush(heap, (finish + f.tail, next(seq), f.version, f))
        for link in seeds:
            if link.multi == 0 and len(link.flows) >= SERVICE_FROM and link.service is None:
                self._start_clock(link, now)

    def _gather(self, seeds, cut: float, mark: int, now: float) -> tuple[list[Flow], list[Link]]:
        """The flows rated at `cut` or above (new flows are rated INF) reachable from `seeds` through such
        flows, marked with `mark` and not yet given a rate (share < 0); the links they cross, each with the
        capacity the other flows leave (`left`) and their summed weights on it (`load`)."""
        flows, links, stack = [], [], []
        for link in seeds:
            if link.mark != mark:
                link.mark = mark
                stack.append(link)
        while stack:
            link = stack.pop()
            if link.service is not None:
                self._stop_clock(link, now)
            links.append(link)
            left, load = link.capacity, 0.0
            for g, w in link.flows.items():
                if g.mark == mark:
                    load += w
                    continue
                if g.state == LONE:
                    self._activate(g, now)
                if g.speed >= cut:
                    g.mark = mark
                    g.share = -1.0
                    flows.append(g)
                    load += w
                    for other in g.links:
                        if other.mark != mark:
                            other.mark = mark
                            stack.append(other)
                else:
                    left -= g.speed * w
            link.left, link.load = left, load
        return flows, links

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
        heap, done = self._heap, []
        self._firing = True  # flows the callbacks start are rated once, below, with the rest
        try:
            while heap and heap[0][0] <= limit:
                _, _, version, f = heappop(heap)
                if version != f.version:
                    continue
                if f.__class__ is Link:  # the next end on a link with a service clock
                    self._serve(f, now)
                elif f.state == MOVING:  # its last byte: off its links, the flows it shared them with re-rated
                    self._settle(f, now)
                    self._drain(f, now)
                else:  # a report due: a lone flow leaves its links now
                    if f.state == LONE:
                        self._leave(f, now)
                    f.state = DONE
                    done.append(f)
            if done:
                self._open -= len(done)
                for f in done:
                    f.done()
        finally:
            self._firing = False
        if self._dirty:
            self._flush(now)
        self._arm(now)


def _fill(links: list[Link], mark: int) -> None:
    """Weighted max-min rates by progressive filling of the flows marked `mark` with share < 0, on the
    capacity `left` of `links` (each with the summed weights `load` of those flows on it): raise their rates
    together; the link whose fair share left / load is smallest fills first and fixes the rate of its flows;
    repeat. A link's fair share only grows as flows crossing it are fixed elsewhere (they take no more than
    it), so a heap of stale shares is checked and pushed back when its top has grown."""
    heap = [(link.left / link.load, i, link) for i, link in enumerate(links) if link.load > 1e-15]
    heapify(heap)
    while heap:
        share, i, link = heap[0]
        load = link.load
        if load <= 1e-15:  # every flow on it was fixed elsewhere
            heappop(heap)
            continue
        level = link.left / load
        if level > share:
            heapreplace(heap, (level, i, link))
            continue
        heappop(heap)
        if level < 0.0:  # (rounding)
            level = 0.0
        for f in link.flows:
            if f.mark == mark and f.share < 0.0:
                f.share = level
                for other, w in zip(f.links, f.weights):
                    other.left -= level * w
                    other.load -= w
