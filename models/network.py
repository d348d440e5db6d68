"""Flow-level bandwidth sharing: links, flows, max-min fairness (SimGrid style).

A flow crosses one or more links, using `weight` units of each link's capacity per unit of its own rate
(an on-chip copy reads and writes HBM: weight 2). Rates are max-min fair: those progressive filling gives,
raising every rate together and fixing a flow's rate at the level where one of its links fills.

Re-rating is incremental. Progressive filling fills links in the order of their levels (the rate at which
a link fills, fixing the rates of the flows on it not fixed yet); each link keeps the level it filled at and
each flow its neck (the link that fixed it). A change (flows starting or ending) alters the filling only where
a link's flows change, so `_rerate` replays it over those links alone, in the order of their levels, taking
every flow it has not touched at its old rate: a link is filled again when one of its flows came, went or
changed rate, or when its neck lets it go (the neck no longer fills at its old level). A link on which no flow
has its neck cannot use what a flow that slows down or leaves gives up, so it is left alone. Only a flow
whose rate changed is brought up to date and gets a new due time in the heap. The changes made at one
instant (the flows that end then, those their completions start, those started at that instant) are
re-rated once, together, before simulated time moves on.

One timer stays armed for the next thing in the heap (`clock.timer`: on a `Clock`, a plain entry in simpy's
queue). A flow may end with a `tail` (a fixed latency after its last byte) that uses no bandwidth: it
leaves its links when its data is done and reports done `tail` seconds later; with no tail, it reports in the
timer's work that found its data done. A flow alone on its links (the common case: a copy on an idle link) is
"lone": its end is known when it starts, so it costs one timer, and it stays on its links until another flow
needs them or it ends; started by `send`, it is a small `Lone` record, made a `Flow` only if another flow
comes while its data moves. Flows alone together on one link move on the link's service clock (see
Link.service), with a timer of the link's own for its next end (`_link_due`), set once when the work of an
instant (the ends due, the reports, the flows their completions start) is done. No per-byte events, and no
scan beyond the links a change reaches. A `Clock` keeps the collector out while it runs, as the machine does.
The model reads simulated time as `env.now` (on a `Clock`, a plain attribute) and touches no private state of
simpy's: models/clock.py does that, for the timers.
"""
from __future__ import annotations

from heapq import heapify, heappop, heappush
from itertools import count
from typing import Callable, Sequence

import simpy

from .clock import timer

EPS = 1e-12  # seconds: things due within this of each other happen together
INF = float("inf")
TIE = 1e-12  # rates within this (relative) of each other are the same rate
_ABOVE = 1.0 + TIE  # a level times this: just above it (within TIE)
_UNIT = (1.0,)  # the weights of a flow on one link that gave none
_uids = count()

# What a re-rating's queue holds for a link, in this order at one level
FILL = 0  # fill at this level (if the entry is still the link's latest)
CHECK = 1  # its old level: the flows it fixed and has not fixed again by now will move

# Flow states
MOVING = 0  # sharing its links with others; its rate changes with theirs
LONE = 1  # alone on its links: its data end is known; it leaves them when another flow comes or it is done
DRAINED = 2  # its data is done: off its links, waiting out its tail
DONE = 3  # reported
SHARING = 4  # one of many flows on a link of their own (see Link.service): served at the link's level
LONE_VERSION = 1  # the version of a flow alone on its links since its start (its report: `_report_lone`)
SERVICE_FROM = 4  # flows alone together on one link before it keeps a service clock

# The records kept as plain tuples: they are built at every start, end and re-rated flow (a NamedTuple's
# construction would cost there), and compared in heaps in field order. Their fields, named once here; code
# reads them by unpacking into these names, or a lone field through the index below.
HEAP_ENTRY = ("due", "seq", "version", "flow")  # Network._heap: a data end (MOVING) or a report (LONE, DRAINED)
TAG_ENTRY = ("tag", "seq", "flow")  # Link.tags, the service clock's heap: a SHARING flow's last byte
QUEUE_ENTRY = ("level", "kind", "uid", "stamp", "link")  # a re-rating's queue (`_rerate`): FILL or CHECK
LINK_TIMER = ("link", "version")  # the argument of a service-clock link's own timer (`_link_due`)
_DUE, _VERSION, _FLOW = (HEAP_ENTRY.index(name) for name in ("due", "version", "flow"))
_TAG = TAG_ENTRY.index("tag")


class Link:
    """One direction of a link (full duplex links are two of these), or a shared resource like HBM."""

    __slots__ = ("name", "uid", "capacity", "flows", "busy_since", "busy_time", "bytes", "multi", "level", "mark",
                 "filled", "stamp", "service", "served_at", "weight", "tags", "version", "lone")

    def __init__(self, name: str, capacity: float):
        if not capacity > 0:
            raise ValueError(f"link {name}: capacity must be > 0")
        self.name = name
        self.uid = next(_uids)  # orders the entries of links at one level in a re-rating's queue
        self.capacity = capacity  # wire bytes per second
        self.flows: dict[Flow, float] = {}  # the flows on it, in arrival order, and the weight each has on it
        self.busy_since: float | None = None
        self.busy_time = 0.0  # seconds with at least one flow
        self.bytes = 0.0  # wire bytes carried (a flow's are counted when it leaves; a service clock's as it runs)
        self.multi = 0  # how many of its flows cross other links too
        # The rate at which it last filled, fixing the rates of the flows it is the neck of. INF: it is the neck
        # of no flow (a finite level where it is the neck of none left is harmless: its check finds none).
        self.level = INF
        self.mark = 0  # the last re-rating that touched it
        self.filled = 0  # the last re-rating in which it filled
        self.stamp = 0  # its FILL entry in the re-rating's queue stands while it carries this
        # When its flows cross no other link (and there are several), they all move at one level,
        # capacity / their summed weights, so they end in the order of their tags (the service at which
        # each has its last byte), whatever comes and goes: a start or an end costs O(log N), not O(N).
        self.service: float | None = None  # bytes each flow has moved since the clock began; None: no clock
        self.served_at = 0.0  # when `service` was brought up to date
        self.weight = 0.0  # its flows' summed weights, while it keeps a service clock
        self.tags: list = []  # heap of TAG_ENTRY: (tag, seq, flow)
        self.version = 0  # its entry in the network's heap is current while it carries this
        self.lone: Lone | None = None  # a flow alone on it (and its other links) that no flow has met yet

    def utilisation(self, now: float) -> float:
        """Share of [0, now] the link carried data."""
        busy = self.busy_time + (now - self.busy_since if self.busy_since is not None else 0.0)
        return busy / now if now > 0 else 0.0

    def __repr__(self) -> str:
        return f"<Link {self.name} {self.capacity / 1e9:.1f} GB/s, {len(self.flows)} flows>"


class Flow:
    """`size` wire bytes moving across `links` at a max-min fair `rate`; `on_done(owner)` runs `tail` seconds
    after its last byte. (`Network.start` and `send` make them; a flow started without an owner reports
    through `_call`.)"""

    __slots__ = ("net", "links", "weights", "size", "remaining", "counted", "updated", "start", "tail", "on_done",
                 "owner", "speed", "neck", "share", "finish", "state", "version", "mark", "tag")

    def __init__(self, net: Network, links: list[Link], weights: Sequence[float], size: float, tail: float,
                 on_done: Callable, now: float, owner):
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
        self.speed = INF  # its rate (`rate` counts the changes not re-rated yet)
        self.neck: Link | None = None  # the link that fixed its rate, at the link's level (None until rated)
        self.share = 0.0  # in the re-rating that touched it (`mark`): its new rate, < 0 until it is fixed
        self.finish = INF  # when its last byte arrives, at the current rates
        self.state = MOVING
        self.version = 0  # a heap entry is current while it carries the flow's version
        self.mark = 0  # the last re-rating that touched it
        self.tag = 0.0  # SHARING: the link's service at which its last byte arrives

    @property
    def rate(self) -> float:
        """Its max-min fair rate, in wire bytes per second, counting every change made so far (the changes of
        this instant are re-rated now, if they were waiting)."""
        net = self.net
        if net._dirty:
            net._flush(net.env.now)
        return self.speed

    def __repr__(self) -> str:
        return f"<Flow {self.size:.0f} B over {[link.name for link in self.links]}>"


class Lone:
    """A flow alone on its links since its start, that no other flow has met (`Network.send`): its end is known,
    and its links hold it as their `lone` instead of in `flows`. It becomes a `Flow` (`flow`) when another
    flow comes to one of its links before its data is done (`Network._met`); a lone copy on an idle link, the
    common case, never needs one."""

    __slots__ = ("links", "weights", "size", "start", "finish", "tail", "on_done", "owner", "rate", "neck", "flow")

    def __init__(self, links: list[Link], weights: Sequence[float], size: float, start: float, tail: float,
                 on_done: Callable, owner):
        self.links, self.weights, self.size, self.start, self.tail = links, weights, size, start, tail
        self.on_done, self.owner = on_done, owner
        self.neck, self.rate = neck, rate = _neck(links, weights)
        self.finish = start + size / rate
        self.flow: Flow | None = None

    def __repr__(self) -> str:
        return f"<Lone {self.size:.0f} B over {[link.name for link in self.links]}>"


class Network:
    """The flows in flight on a simpy environment and the max-min fair rates they share links at.

    Changes wait in `_dirty` (the links they touched) until `_flush` re-rates them together: at the end of the
    timer's work for an instant, at a zero-delay event after a start made outside it, or when a rate is read.
    """

    def __init__(self, env: simpy.Environment):
        self.env = env
        self._call = timer(env)  # schedules the model's timers
        self.flows: dict[Flow, None] = {}  # flows moving data and sharing a link
        self._heap: list = []  # HEAP_ENTRY: (due, seq, version, flow), a data end or a report
        self._seq = count()
        self._open = 0  # flows started and not yet reported
        self._armed = INF  # when the pending timer fires
        self._generation = 0
        self._firing = False  # the timer is at work: it re-rates what changed when it is done
        self._flush_due = False  # a zero-delay event will re-rate what changed
        self._dirty: dict[Link, None] = {}  # links whose flows are re-rated by the next flush
        self._added: list[Flow] = []  # flows started since the last flush
        self._relink: dict[Link, None] = {}  # service-clock links whose next end the timer's work changed
        self._mark = 0

    def start(self, links: list[Link], size: float, on_done: Callable,
              weights: Sequence[float] | None = None, tail: float = 0.0, owner=None) -> Flow:
        """Move `size` wire bytes across `links`; `on_done()` (or `on_done(owner)`) runs `tail` seconds
        after the last byte. Returns its Flow (`send` starts it without making one when it is alone)."""
        flow = self.send(links, size, on_done, weights, tail, owner)
        return flow if flow.__class__ is not Lone else self._met(flow)

    def send(self, links: list[Link], size: float, on_done: Callable,
             weights: Sequence[float] | None = None, tail: float = 0.0, owner=None) -> Flow | Lone:
        """`start`, for a caller that does not look at the flow: one alone on its links is a `Lone`."""
        now = self.env.now
        if not weights:
            weights = _UNIT if len(links) == 1 else [1.0] * len(links)
        if owner is None:  # one calling convention for the reports: on_done(owner)
            on_done, owner = _call, on_done
        self._open += 1
        if size <= 0 or not links:
            return self._send_empty(links, weights, size, tail, on_done, now, owner)
        link = links[0]
        if link.service is not None and len(links) == 1:  # one more on a link with a service clock
            if link.served_at != now:  # (served at this instant: what was due then has left)
                self._serve(link, now)
            if link.service is not None:
                flow = Flow(self, links, weights, size, tail, on_done, now, owner)
                self._start_sharing(flow, link, now)
                return flow
        if self._clear_finished(links, now):  # (a lone link with a service clock took the flow above)
            flow = Flow(self, links, weights, size, tail, on_done, now, owner)
            self._start_moving(flow, now)
            return flow
        return self._send_lone(links, weights, size, tail, on_done, now, owner)

    def _send_empty(self, links, weights, size: float, tail: float, on_done: Callable, now: float, owner) -> Flow:
        """A flow with no bytes or no links: it moves nothing and reports `tail` from now."""
        flow = Flow(self, links, weights, size, tail, on_done, now, owner)
        flow.finish = now
        flow.state = DRAINED
        self._push(now + tail, flow)
        if not self._firing:
            self._arm(now)
        return flow

    def _clear_finished(self, links: list[Link], now: float) -> bool:
        """Before a flow starts on `links`: the flows there whose data is done by now leave first (the new flow
        does not share with them), and a lone flow still moving becomes a Flow. Returns whether any flow is
        left on them (the new one shares; nothing here starts a service clock)."""
        crowded = False
        limit = now + EPS
        heap = self._heap
        due = heap and heap[0][_DUE] <= limit  # else no moving flow's data is done by now (a lone one may be)
        for link in links:
            lone = link.lone
            if lone is not None:  # (the usual case: the flow before, alone, done or not)
                if lone.finish <= limit:
                    self._leave_lone(lone, now)
                else:
                    self._met(lone)
            flows = link.flows
            if flows:
                if link.service is not None:
                    self._serve(link, now)
                elif len(flows) == 1:
                    for g in flows:
                        break
                    if g.finish <= limit:
                        self._drain_due(g, now)
                elif due:
                    for g in list(flows):
                        if g.finish <= limit:
                            self._drain_due(g, now)
                crowded = crowded or bool(flows)
        return crowded

    def _send_lone(self, links, weights, size: float, tail: float, on_done: Callable, now: float, owner) -> Lone:
        """A flow alone on its links: its end is known now; its neck is the link that holds it back most."""
        lone = Lone(links, weights, size, now, tail, on_done, owner)
        lone.neck.level = lone.rate
        for link in links:
            link.busy_since = now
            link.lone = lone
        # its report is a timer of its own, not an entry in the heap: it stands unless another flow comes while
        # its data moves (`_met`, then `_activate` gives the flow a new version and a heap entry)
        self._call(lone.finish + tail - now, self._report_lone, lone)
        return lone

    @property
    def idle(self) -> bool:
        """No flow started and not yet reported."""
        return not self._open

    def alone(self, links: list[Link], weights: list[float], size: float, start: float) -> float:
        """A flow that starts at `start` and ends with no other flow on the network meanwhile (the caller knows
        it: nothing is in flight and nothing is due before it ends): its links' accounting, as `start` and its
        end would leave it, without the flow. Returns when its last byte arrives."""
        if size <= 0 or not links:
            return start
        neck, rate = _neck(links, weights)
        neck.level = rate
        finish = start + size / rate
        for link, w in zip(links, weights):
            link.bytes += size * w
            link.busy_time += finish - start
        return finish

    # -- a flow's life ------------------------------------------------------------------------------

    def _report_lone(self, lone: Lone, _event=None) -> None:
        """A flow lone since its start reports, `tail` after its last byte, unless another flow came meanwhile."""
        f = lone.flow
        if f is None:  # alone to the end
            if lone.links[0].lone is lone:  # (still on its links: no flow came after its data was done)
                self._leave_lone(lone, self.env.now)
            self._open -= 1
            lone.on_done(lone.owner)
            return
        if f.version != LONE_VERSION:
            return  # it shared a link after all: the heap reports it
        if f.state == LONE:
            self._leave(f, self.env.now)
        f.state = DONE
        self._open -= 1
        f.on_done(f.owner)

    def _met(self, lone: Lone) -> Flow:
        """Another flow comes to a link of `lone` while its data moves: it becomes the Flow `start` makes of a
        flow alone on its links (lone since its start; its report stands until it shares)."""
        f = Flow(self, lone.links, lone.weights, lone.size, lone.tail, lone.on_done, lone.start, lone.owner)
        f.speed, f.neck, f.finish, f.state, f.version = lone.rate, lone.neck, lone.finish, LONE, LONE_VERSION
        multi = len(f.links) > 1
        for link, w in zip(f.links, f.weights):
            link.lone = None
            link.flows[f] = w
            link.multi += multi
        lone.flow = f
        return f

    @staticmethod
    def _leave_lone(lone: Lone, now: float) -> None:
        """`lone`'s last byte has arrived by `now`: it leaves its links, its bytes and busy time counted (as
        `_leave` counts a flow's)."""
        finish = lone.finish if lone.finish < now else now
        size = lone.size
        for link, w in zip(lone.links, lone.weights):
            link.lone = None
            link.bytes += size * w
            link.busy_time += finish - link.busy_since
            link.busy_since = None

    def _start_sharing(self, flow: Flow, link: Link, now: float) -> None:
        """One more on a link with a service clock."""
        flow.state = SHARING
        flow.tag = tag = link.service + flow.size
        w = flow.weights[0]
        link.weight += w
        link.flows[flow] = w
        heappush(link.tags, (tag, next(self._seq), flow))  # TAG_ENTRY
        if self._firing:  # its next end is set when the timer's work is done (`_done`)
            self._relink[link] = None
        else:
            self._push_link(link, now)

    def _start_moving(self, flow: Flow, now: float) -> None:
        """Among others: rated with the other changes of this instant, at the next flush."""
        links = flow.links
        multi = len(links) > 1
        for link, w in zip(links, flow.weights):
            if link.service is not None:
                self._stop_clock(link, now)
            elif len(link.flows) == 1:  # a lone flow there shares from now on
                for g in link.flows:
                    if g.state == LONE:
                        self._activate(g, now)
            elif not link.flows:
                link.busy_since = now
            link.flows[flow] = w
            link.multi += multi
        self.flows[flow] = None
        self._added.append(flow)
        self._changed(links)

    def _changed(self, links) -> None:
        """The flows on `links` are re-rated at the next flush: the timer's, when it is at work, else a
        zero-delay event's (so the changes of this instant are re-rated together)."""
        self._dirty.update(dict.fromkeys(links))
        if not self._firing and not self._flush_due:
            self._flush_due = True
            self._call(0.0, self._flush_event)

    def _push(self, due: float, f: Flow) -> None:
        f.version += 1
        heappush(self._heap, (due, next(self._seq), f.version, f))  # HEAP_ENTRY

    @staticmethod
    def _settle(f: Flow, now: float) -> None:
        """Bring a moving flow's bytes left up to `now` at its current rate."""
        moved = f.speed * (now - f.updated)
        f.remaining = f.remaining - moved if moved < f.remaining else 0.0
        f.updated = now

    def _leave(self, f: Flow, now: float) -> None:
        """A flow's last byte has arrived: it leaves its links, with all its bytes counted."""
        rest = f.size - f.counted
        links = f.links
        for link, w in zip(links, f.weights):
            link.bytes += rest * w
            flows = link.flows
            del flows[f]
            if not flows:
                link.busy_time += (f.finish if f.finish < now else now) - link.busy_since
                link.busy_since = None
        if len(links) > 1:
            for link in links:
                link.multi -= 1
        f.remaining = 0.0
        f.counted = f.size

    def _drain(self, f: Flow, now: float, done: list | None = None) -> None:
        """A moving flow's data is done by `now`: it leaves its links (the flows it shared them with are
        re-rated at the next flush) and waits out its tail (`_due`)."""
        del self.flows[f]
        self._leave(f, now)
        self._changed([link for link in f.links if link.level < INF])  # (a link no flow's neck: none gains)
        self._due(f, f.finish + f.tail, done)

    def _due(self, f: Flow, due: float, done: list | None) -> None:
        """A flow whose data is done reports at `due`: from the heap (the timer armed for it, when this is not
        the timer's work, which arms it when done: a start that serves a link, at the instant the link's own
        timer was due, comes first); or, in the timer's work (`done`: the reports it makes), with them when it
        has no tail and nothing in the heap comes before it."""
        heap = self._heap
        if done is not None and f.tail <= 0.0 and (not heap or heap[0][_DUE] > due):
            f.state = DONE
            done.append(f)
        else:
            f.state = DRAINED
            self._push(due, f)
            if not self._firing:
                self._arm(self.env.now)

    def _drain_due(self, f: Flow, now: float) -> None:
        """A flow whose data is done by now leaves its links (a lone one's report, at finish + tail, stands)."""
        if f.state == MOVING:
            self._drain(f, now)
        else:
            self._leave(f, now)
            f.state = DRAINED

    def _activate(self, f: Flow, now: float) -> None:
        """A lone flow still moving data meets another flow: from now on it shares like any other (at its
        rate until a re-rating changes it)."""
        f.remaining = f.speed * (f.finish - now) if f.finish > now else 0.0
        f.updated = now
        f.state = MOVING
        self.flows[f] = None
        self._push(f.finish, f)  # its data end; its report at finish + tail no longer stands

    # -- links with a service clock -------------------------------------------------------------------
    def _start_clock(self, link: Link, now: float) -> None:
        """The flows alone together on `link` (moving: their bytes left are at their rate until now, a new
        one's all left) move on its service clock from now on."""
        link.service, link.served_at = 0.0, now
        link.weight = 0.0
        tags = []
        for f, w in link.flows.items():
            if f.updated < now:
                self._settle(f, now)
            link.bytes += (f.size - f.remaining - f.counted) * w  # from now on the clock counts its bytes
            f.counted = f.size - f.remaining
            del self.flows[f]
            f.state = SHARING
            f.tag = f.remaining
            f.version += 1
            link.weight += w
            tags.append((f.tag, next(self._seq), f))  # TAG_ENTRY
        heapify(tags)
        link.tags = tags
        self._push_link(link, now)

    def _push_link(self, link: Link, now: float) -> None:
        """A timer of the link's own for its next end (`_link_due`); the one before no longer stands."""
        link.version = version = link.version + 1
        self._call((link.tags[0][_TAG] - link.service) / (link.capacity / link.weight), self._link_due,
                   (link, version))  # LINK_TIMER

    def _link_due(self, entry: tuple, _event=None) -> None:
        """The next end on a link with a service clock: the flows whose last byte has arrived leave it, those
        with no tail report now, and what their completions start is rated with them (as the timer's work,
        `_fire`, does for the heap)."""
        link, version = entry  # LINK_TIMER
        if version != link.version:
            return  # superseded: its flows changed since
        now = self.env.now
        heap = self._heap
        top = heap[0] if heap else None
        done = []
        self._firing = True
        try:
            self._serve(link, now, done)
            self._relink[link] = None
            self._report(done)
        finally:
            self._done(now)
        if heap and heap[0] is not top:  # (reports with a tail, or flows the re-rating changed)
            self._arm(now)

    def _serve(self, link: Link, now: float, done: list | None = None) -> None:
        """Bring the link's clock to `now`; the flows whose last byte has arrived leave it (and report after
        their tail: `_due`); the clock stops when none is left. (The link's timer stands while only time passes;
        its caller sets a new one when the flows change: `_push_link`.)"""
        level = link.capacity / link.weight
        dt = now - link.served_at
        if dt > 0:
            link.service += level * dt
            link.bytes += link.capacity * dt  # work conserving: its flows fill it
            link.served_at = now
        tags, due = link.tags, link.service + level * EPS
        while tags and tags[0][_TAG] <= due:
            _tag, _seq, f = heappop(tags)
            link.weight -= f.weights[0]
            del link.flows[f]
            f.remaining, f.counted, f.finish = 0.0, f.size, now
            self._due(f, now + f.tail, done)
        if not tags:
            link.busy_time += now - link.busy_since
            link.busy_since = None
            link.service = None
            link.version += 1
        elif link.weight <= 0:  # (only rounding left: restart the sum)
            link.weight = sum(f.weights[0] for _tag, _seq, f in tags)

    def _stop_clock(self, link: Link, now: float) -> None:
        """A flow that crosses other links joins: the link's flows share like any others from now on."""
        self._serve(link, now)
        if link.service is None:
            return
        level = link.capacity / link.weight
        service = link.service
        for _tag, _seq, f in link.tags:
            f.remaining = f.tag - service
            f.counted = f.size - f.remaining  # the link's bytes already count what it moved
            f.speed, f.updated = level, now
            f.neck = link
            f.finish = now + f.remaining / level
            f.state = MOVING
            self.flows[f] = None
            self._push(f.finish, f)
        link.tags = []
        link.service = None
        link.level = level
        link.version += 1

    # -- rates ---------------------------------------------------------------------------------------
    def _flush_event(self, _=None, _event=None) -> None:
        self._flush_due = False
        now = self.env.now
        if self._dirty:
            self._flush(now)
        self._arm(now)  # (a rate read may have flushed already)

    def _flush(self, now: float) -> None:
        """Re-rate the pending changes together."""
        dirty, added = self._dirty, self._added
        self._dirty, self._added = {}, []
        self._rerate(dirty, added, now)

    def _rerate(self, seeds, added: list[Flow], now: float) -> None:
        """Progressive filling again, over the links it can change only: the `seeds` (where flows came or
        went) and the links their changes reach. Each flow it fixes at a new rate moves on at that rate from
        now."""
        self._mark += 1
        run = self._mark
        queue, changed = [], []
        for f in added:  # not fixed yet
            f.mark = run
            f.share = -1.0
        for link in seeds:
            if link.multi:  # (flows on it cross other links)
                _touch(link, run, queue, 0.0)
            elif len(link.flows) >= SERVICE_FROM:
                self._start_clock(link, now)
            elif link.flows:
                self._fill_alone(link, run, changed)
        while queue:
            level, kind, _uid, stamp, link = heappop(queue)  # QUEUE_ENTRY
            if link.filled == run:
                continue
            if kind == FILL:
                if stamp == link.stamp:
                    _fill(link, level, run, queue, changed)
            else:
                _check(link, level, run, queue)
        heap, seq = self._heap, self._seq
        for f in changed:
            rate = f.share
            updated, left = f.updated, f.remaining
            if updated < now:  # its bytes left, at its old rate (a new flow's are all left)
                moved = f.speed * (now - updated)
                f.remaining = left = left - moved if moved < left else 0.0
                f.updated = now
            f.speed = rate
            f.finish = finish = now + left / rate if rate > 0 else INF
            f.version = version = f.version + 1
            for link in f.links:
                if len(link.flows) > 1:
                    heappush(heap, (finish, next(seq), version, f))  # HEAP_ENTRY
                    break
            else:  # alone on its links: nothing can change it before its end
                del self.flows[f]
                f.state = LONE
                heappush(heap, (finish + f.tail, next(seq), f.version, f))  # HEAP_ENTRY

    @staticmethod
    def _fill_alone(link: Link, run: int, changed: list) -> None:
        """The flows on `link` cross no other link: they all move at its capacity / their summed weights."""
        level = link.capacity / sum(link.flows.values())
        link.filled = run
        link.level = level
        tie = TIE * level
        for f in link.flows:
            f.mark = run
            f.neck = link
            if -tie <= f.speed - level <= tie:  # its old rate: it keeps it exactly
                f.share = f.speed
            else:
                f.share = level
                changed.append(f)

    # -- the timer ------------------------------------------------------------------------------------
    def _arm(self, now: float) -> None:
        heap = self._heap
        while heap and heap[0][_VERSION] != heap[0][_FLOW].version:  # (superseded)
            heappop(heap)
        if len(heap) > 4 * self._open + 64:  # mostly superseded entries: keep the current ones
            heap[:] = [e for e in heap if e[_VERSION] == e[_FLOW].version]
            heapify(heap)
        if heap:
            t = heap[0][_DUE]
            if t < self._armed - EPS:
                self._armed = t
                self._generation += 1
                self._call(t - now if t > now else 0.0, self._fire, self._generation)

    def _fire(self, generation: int, _event=None) -> None:
        if generation != self._generation:
            return  # superseded by an earlier timer
        self._armed = INF
        now = self.env.now
        limit = now + EPS
        heap, done = self._heap, []
        self._firing = True  # flows the callbacks start are rated once, below, with the rest
        try:
            while heap and heap[0][_DUE] <= limit:
                _due, _seq, version, f = heappop(heap)
                if version != f.version:
                    continue
                if f.state == MOVING:  # its last byte: off its links, the flows it shared them with re-rated
                    self._settle(f, now)
                    self._drain(f, now, done)
                else:  # a report due: a lone flow leaves its links now
                    if f.state == LONE:
                        self._leave(f, now)
                    f.state = DONE
                    done.append(f)
            self._report(done)
        finally:
            self._done(now)
        self._arm(now)

    def _report(self, done: list) -> None:
        """The flows of `done` report, in order (their callbacks may start flows: they wait for `_done`)."""
        if done:
            self._open -= len(done)
            for f in done:
                f.on_done(f.owner)

    def _done(self, now: float) -> None:
        """The timer's work for this instant is done: the service-clock links it changed get their next end,
        and what changed is re-rated, once."""
        self._firing = False
        if self._relink:
            for link in self._relink:
                if link.service is not None:
                    self._push_link(link, now)
            self._relink = {}
        if self._dirty:
            self._flush(now)


# -- the steps of a re-rating (`Network._rerate`): functions of the links, their flows and the run's queue ----

def _touch(link: Link, run: int, queue: list, floor: float) -> None:
    """A flow on `link` came, went, moved or will move: (re)place it in the queue at the level it fills
    at as far as the run knows (never below `floor`, the run's level now); the first time, also at its old
    level, to let go of the flows it fixed there if it has not filled by then (when it fixed any the run has
    not touched: no flow takes it as its neck later in the run without its filling). (No link here keeps a
    service clock: `start` stopped it. A lone flow here keeps its rate: it is alone on its links.)

    The level it fills at: a flow the run fixed takes its new rate, one not fixed yet (or one this link is the
    neck of) the level, one the run has not touched its old rate if that is lower (its neck fixes it first);
    INF if it never fills."""
    if link.filled == run:
        return
    room, free, top, fixes = link.capacity, 0.0, 0.0, False
    for f, w in link.flows.items():
        if f.mark == run:
            share = f.share
            if share < 0.0:
                free += w
            else:
                room -= share * w
        elif f.neck is link:  # (a flow the run has not touched whose neck is here)
            free += w
            fixes = True
        else:  # held below the level, as it most often is (checked below)
            speed = f.speed
            room -= speed * w
            if speed > top:
                top = speed
    if top * free >= room and top > 0.0:  # some are held at or above the level: those take the level instead
        room, free = _unheld(link, run, room, free)
    if link.mark != run:  # (a link that fixes none of the flows the run has not touched has nothing to let go)
        link.mark = run
        if fixes and link.level < INF:
            heappush(queue, (link.level * _ABOVE, CHECK, link.uid, 0, link))  # QUEUE_ENTRY
    link.stamp = stamp = link.stamp + 1
    level = room / free if free > 0.0 else INF
    if level < INF:
        heappush(queue, (level if level > floor else floor, FILL, link.uid, stamp, link))  # QUEUE_ENTRY


def _fill(link: Link, level: float, run: int, queue: list, changed: list) -> None:
    """`link` fills at `level`: it fixes the rates of its flows not fixed yet (a flow the run has not touched
    whose neck's old level is below `level` is fixed already, there). A flow fixed at a new rate touches its
    other links; one fixed at its old rate touches those of them that counted it as not fixed yet."""
    link.filled = run
    link.level = INF
    tie = TIE * level
    for f in link.flows:
        if f.mark == run:
            if f.share >= 0.0:
                continue
            loose = f.links  # (the run's links count it as not fixed)
        else:
            neck = f.neck
            if neck is not link and neck.level * _ABOVE < level:
                continue  # past its neck's check: fixed there, at its old rate (as the queue's order has it)
            loose = (neck,)  # (its neck counts it as not fixed)
            f.mark = run
        f.share = level
        f.neck = link
        link.level = level
        if -tie <= f.speed - level <= tie:  # its old rate
            f.share = f.speed
            for other in loose:
                if other is not link and other.mark == run:
                    _touch(other, run, queue, level)
        else:
            changed.append(f)
            slower = level < f.speed
            for other in f.links:  # (a link that is no flow's neck cannot use what a slower flow leaves)
                if other is not link and (other.mark == run or other.level < INF or not slower):
                    _touch(other, run, queue, level)


def _check(link: Link, level: float, run: int, queue: list) -> None:
    """The run reaches the old `level` of `link` and the link has not filled: the flows it fixed there
    (and the run has not touched) are not fixed yet; their other links see them so."""
    for f in link.flows:
        if f.neck is link and f.mark != run:
            f.mark = run
            f.share = -1.0
            for other in f.links:
                if other is not link:
                    _touch(other, run, queue, level)


def _neck(links: list[Link], weights: list[float]) -> tuple[Link, float]:
    """(the link that holds a flow alone on `links` back most, the rate it allows): the first of the
    narrowest, capacity / weight."""
    neck, rate = links[0], links[0].capacity / weights[0]
    if len(links) > 1:  # (one link, the usual case: it is the neck)
        for link, w in zip(links, weights):
            if link.capacity / w < rate:
                neck, rate = link, link.capacity / w
    return neck, rate


def _call(fn: Callable) -> None:
    """The report of a flow started without an owner: `on_done()`."""
    fn()


def _unheld(link: Link, run: int, room: float, free: float) -> tuple[float, float]:
    """`_touch`'s count of `link` (room: its capacity less the rates the level does not set; free: the weights
    it sets) where some flows the run has not touched move at or above the level it found: those take the level
    instead, fastest first, while they are."""
    held = sorted([(f.speed, w) for f, w in link.flows.items() if f.mark != run and f.neck is not link],
                  reverse=True)
    for speed, w in held:
        if speed * free < room:
            break
        room += speed * w
        free += w
    return room, free
