"""Flow-level bandwidth sharing (models.network) on a bare simpy environment: closed forms by hand, and against
the recompute-everything reference (models.reference)."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
import simpy

from emu.models import Link, Network
from emu.models.clock import Clock
from emu.models.network import Lone
from emu.models.reference import ReferenceNetwork

GB = 1e9
MS = 1e-3


class Run:
    """A network on a fresh environment; `done[name]` is when each flow reported done."""

    def __init__(self, how="start", env=simpy.Environment, network=Network):
        self.env = env()
        self.net = network(self.env)
        self.done: dict[str, float] = {}
        self.events = 0
        self.how = how  # "start" (a Flow for every flow) or "send" (none for a flow alone on its links)

    def start(self, name, links, size, weights=None, tail=0.0):
        go = self.net.start if self.how == "start" else self.net.send
        return go(links, size, lambda: self.done.__setitem__(name, self.env.now), weights, tail)

    def at(self, t, name, links, size, weights=None, tail=0.0):
        """Start a flow at simulated time t."""
        def proc():
            yield self.env.timeout(t)
            self.start(name, links, size, weights, tail)
        self.env.process(proc())

    def run(self, until=None):
        """Run to the end (or `until`), counting the events processed."""
        env = self.env
        while env.peek() < math.inf and (until is None or env.peek() <= until):
            env.step()
            self.events += 1
        if until is not None and env.now < until:
            env.run(until=until)


def test_models_never_imports_emu():
    """models/ is installed as emu.models, but it stands alone: loaded as the repository's own top-level
    package, with emu nowhere to be found, every module imports and none pulls emu in."""
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    code = ("import sys; sys.path.insert(0, " + repr(str(repo)) + "); sys.modules['emu'] = None\n"
            "import pkgutil, importlib, models\n"
            "for m in pkgutil.iter_modules(models.__path__): importlib.import_module('models.' + m.name)\n"
            "bad = sorted(n for n in sys.modules if n.startswith('emu.'))\n"
            "assert not bad, bad\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- alone ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size, cap, tail", [(1e9, 10 * GB, 0.0), (4096, 52 * GB, 2e-6), (1 << 40, 40 * GB, 1e-3)])
def test_one_flow_alone_takes_size_over_capacity_plus_tail(size, cap, tail):
    r = Run()
    link = Link("l", cap)
    f = r.start("a", [link], size, tail=tail)
    assert f.rate == pytest.approx(cap, rel=1e-12)
    r.run()
    assert r.done["a"] == pytest.approx(size / cap + tail, rel=1e-9)
    assert not link.flows and not r.net.flows
    assert r.events == 1  # one timer for a flow that has its links to itself, tail included


def test_flow_on_a_path_runs_at_the_bottleneck():
    r = Run()
    fast, slow = Link("fast", 30 * GB), Link("slow", 10 * GB)
    r.start("a", [fast, slow], 1e9)
    r.run()
    assert r.done["a"] == pytest.approx(1e9 / (10 * GB), rel=1e-9)


def test_empty_flow_is_done_after_its_tail():
    r = Run()
    link = Link("l", GB)
    r.start("zero", [link], 0, tail=5e-6)
    r.start("nolinks", [], 1e6, tail=0.0)
    r.run()
    assert r.done["zero"] == pytest.approx(5e-6, rel=1e-9)
    assert r.done["nolinks"] == 0.0
    assert link.bytes == 0.0 and not link.flows


def test_link_rejects_non_positive_capacity():
    with pytest.raises(ValueError):
        Link("bad", 0.0)
    with pytest.raises(ValueError):
        Link("bad", -1.0)


# -- sharing ----------------------------------------------------------------------------------------------
def test_two_flows_together_each_get_half():
    r = Run()
    link, cap, size = Link("l", 10 * GB), 10 * GB, 1e9
    a = r.start("a", [link], size)
    b = r.start("b", [link], size)
    assert a.rate == pytest.approx(cap / 2) and b.rate == pytest.approx(cap / 2)
    r.run()
    assert r.done["a"] == pytest.approx(2 * size / cap, rel=1e-9)
    assert r.done["b"] == pytest.approx(2 * size / cap, rel=1e-9)


def test_two_flows_with_tails_share_then_each_adds_its_tail():
    r = Run()
    link, cap, size = Link("l", 10 * GB), 10 * GB, 1e9
    r.start("a", [link], size, tail=1e-3)
    r.start("b", [link], size, tail=3e-3)
    r.run()
    assert r.done["a"] == pytest.approx(2 * size / cap + 1e-3, rel=1e-9)
    assert r.done["b"] == pytest.approx(2 * size / cap + 3e-3, rel=1e-9)


def test_unequal_flows_share_then_the_longer_gets_everything():
    r = Run()
    cap, link = 8 * GB, Link("l", 8 * GB)
    r.start("small", [link], 1e9)
    r.start("big", [link], 3e9)
    r.run()
    assert r.done["small"] == pytest.approx(2e9 / cap, rel=1e-9)
    assert r.done["big"] == pytest.approx(4e9 / cap, rel=1e-9)  # work conserving


def test_other_direction_is_a_separate_link():
    r = Run()
    cap, size = 10 * GB, 1e9
    up, down = Link("pcie0.up", cap), Link("pcie0.down", cap)
    r.start("h2d", [down], size)
    r.start("d2h", [up], size)
    r.run()
    assert r.done["h2d"] == pytest.approx(size / cap, rel=1e-9)
    assert r.done["d2h"] == pytest.approx(size / cap, rel=1e-9)


def test_flow_on_another_link_is_unaffected():
    r = Run()
    cap, size = 10 * GB, 1e9
    l1, l2 = Link("l1", cap), Link("l2", cap)
    r.start("a", [l1], size)
    r.start("b", [l1], size)
    c = r.start("c", [l2], size)
    assert c.rate == pytest.approx(cap)
    r.run()
    assert r.done["c"] == pytest.approx(size / cap, rel=1e-9)
    assert r.done["a"] == pytest.approx(2 * size / cap, rel=1e-9)


@pytest.mark.parametrize("t1, size_b", [(0.02, 1e9), (0.05, 0.2e9), (0.09, 2e9)])
def test_flow_arriving_midway_slows_the_first_only_from_then_on(t1, size_b):
    """A (1 GB at 10 GB/s) alone until t1, then A and B at half rate until one ends, then the other alone."""
    cap, size_a = 10 * GB, 1e9
    r = Run()
    link = Link("l", cap)
    r.start("a", [link], size_a)
    r.at(t1, "b", [link], size_b)
    r.run()
    rem_a = size_a - cap * t1  # A's bytes left when B arrives
    first = t1 + 2 * min(rem_a, size_b) / cap  # the smaller remainder ends first, at half rate
    last = first + abs(rem_a - size_b) / cap  # the other one then runs alone
    if rem_a <= size_b:
        exp_a, exp_b = first, last
    else:
        exp_a, exp_b = last, first
    assert r.done["a"] == pytest.approx(exp_a, rel=1e-9)
    assert r.done["b"] == pytest.approx(exp_b, rel=1e-9)
    # the rate change applies from t1 only: before t1 A ran at full rate
    assert exp_a > size_a / cap


def test_flow_arriving_during_a_tail_does_not_share():
    """A's data is done at 0.1 s and its 50 ms tail uses no bandwidth: B, starting at 0.12 s, is alone."""
    cap = 10 * GB
    r = Run()
    link = Link("l", cap)
    r.start("a", [link], 1e9, tail=0.05)
    r.at(0.12, "b", [link], 1e9)
    r.run()
    assert r.done["a"] == pytest.approx(0.15, rel=1e-9)
    assert r.done["b"] == pytest.approx(0.12 + 0.1, rel=1e-9)


def test_flow_started_by_a_completion_shares_with_the_survivors():
    """A and B end together at 0.2 s; A's completion starts D on the same link as C (still running):
    from 0.2 s D and C share; nothing is lost or double counted."""
    cap = 10 * GB
    r = Run()
    l1, l2 = Link("l1", cap), Link("l2", cap)

    def a_done():
        r.done["a"] = r.env.now
        r.start("d", [l2], 1e9)

    r.net.start([l1], 1e9, a_done)
    r.start("b", [l1], 1e9)
    r.start("c", [l2], 5e9)
    r.run()
    assert r.done["a"] == pytest.approx(0.2, rel=1e-9)
    assert r.done["b"] == pytest.approx(0.2, rel=1e-9)
    # C alone moved 2e9 by 0.2 s; then C and D at 5 GB/s each: D ends at 0.4 s (C has 2e9 left), C alone: 0.6 s
    assert r.done["d"] == pytest.approx(0.4, rel=1e-9)
    assert r.done["c"] == pytest.approx(0.6, rel=1e-9)
    assert l1.bytes == pytest.approx(2e9, rel=1e-9) and l2.bytes == pytest.approx(6e9, rel=1e-9)
    assert not r.net.flows


def test_chains_of_zero_tail_flows_started_from_completions():
    """Each completion starts the next flow on the same link, at the same instant as other flows end."""
    cap = 10 * GB
    r = Run()
    link, other = Link("l", cap), Link("m", cap)
    left = [3]

    def next_one():
        r.done[f"chain{left[0]}"] = r.env.now
        left[0] -= 1
        if left[0] >= 0:
            r.net.start([link], 1e9, next_one)

    r.net.start([link], 1e9, next_one)
    r.start("x", [other], 1e9)  # ends with the first link of the chain
    r.start("y", [other], 1e9)
    r.run()
    assert [r.done[f"chain{i}"] for i in (3, 2, 1, 0)] == pytest.approx([0.1, 0.2, 0.3, 0.4], rel=1e-9)
    assert r.done["x"] == r.done["y"] == pytest.approx(0.2, rel=1e-9)


# -- max-min fairness -------------------------------------------------------------------------------------
def test_max_min_fairness_on_a_two_link_path():
    """A on L1+L2, B on L1, C on L2; L1 = 10 GB/s, L2 = 30 GB/s.

    Progressive filling: L1's fair share 10/2 = 5 < L2's 30/2 = 15, so L1 is the bottleneck: A = B = 5.
    L2 then has 30 - 5 = 25 left for C alone: C = 25.
    """
    r = Run()
    l1, l2 = Link("l1", 10 * GB), Link("l2", 30 * GB)
    a = r.start("a", [l1, l2], 1e9)
    b = r.start("b", [l1], 1e9)
    c = r.start("c", [l2], 10e9)
    assert a.rate == pytest.approx(5 * GB, rel=1e-12)
    assert b.rate == pytest.approx(5 * GB, rel=1e-12)
    assert c.rate == pytest.approx(25 * GB, rel=1e-12)
    r.run()
    # A and B end at 1e9 / 5e9 = 0.2 s; C has moved 25e9 * 0.2 = 5e9 and then has L2 to itself
    assert r.done["a"] == pytest.approx(0.2, rel=1e-9)
    assert r.done["b"] == pytest.approx(0.2, rel=1e-9)
    assert r.done["c"] == pytest.approx(0.2 + (10e9 - 5e9) / (30 * GB), rel=1e-9)


def test_max_min_fairness_bottleneck_on_the_second_link():
    """Swap the capacities: L2 = 6 is the bottleneck (6/2 = 3 < 40/2 = 20): A = C = 3, B = 40 - 3 = 37."""
    r = Run()
    l1, l2 = Link("l1", 40 * GB), Link("l2", 6 * GB)
    a = r.start("a", [l1, l2], 1e9)
    b = r.start("b", [l1], 1e9)
    c = r.start("c", [l2], 1e9)
    assert (a.rate, b.rate, c.rate) == (pytest.approx(3 * GB), pytest.approx(37 * GB), pytest.approx(3 * GB))
    r.run()
    t_b = 1e9 / (37 * GB)
    # after B leaves, A and C are both limited by L2: still 3 each; both end at 1e9 / 3e9
    assert r.done["b"] == pytest.approx(t_b, rel=1e-9)
    assert r.done["a"] == pytest.approx(1e9 / (3 * GB), rel=1e-9)
    assert r.done["c"] == pytest.approx(1e9 / (3 * GB), rel=1e-9)


def test_rates_never_overload_a_link():
    r = Run()
    links = [Link(f"l{i}", (i + 1) * GB) for i in range(4)]
    paths = [[0], [0, 1], [1, 2], [2, 3], [0, 3], [3], [1, 2, 3]]
    flows = [r.start(f"f{i}", [links[j] for j in p], 1e12) for i, p in enumerate(paths)]
    for link in links:
        used = sum(f.rate for f in flows if link in f.links)
        assert used <= link.capacity * (1 + 1e-9)
    # max-min: every flow crosses at least one saturated link on which it has a largest rate
    for f in flows:
        assert any(sum(g.rate for g in flows if l in g.links) >= l.capacity * (1 - 1e-9)
                   and all(f.rate >= g.rate * (1 - 1e-9) for g in flows if l in g.links) for l in f.links)


# -- weights ----------------------------------------------------------------------------------------------
def test_weight_two_alone_gets_half_the_rate():
    """An on-chip copy reads and writes HBM: 2 units of the link per unit of rate."""
    r = Run()
    cap = 16 * GB
    hbm = Link("hbm", cap)
    f = r.start("copy", [hbm], 1e9, weights=[2.0])
    assert f.rate == pytest.approx(cap / 2)
    r.run()
    assert r.done["copy"] == pytest.approx(2 * 1e9 / cap, rel=1e-9)
    assert hbm.bytes == pytest.approx(2e9, rel=1e-9)


def test_weight_two_and_weight_one_share_by_rate():
    """Progressive filling raises both rates together until 2r + r = C: r = C/3 each; the weight-2 flow
    uses twice the capacity (2C/3), i.e. the weight-1 flow gets half of what the weight-2 flow takes."""
    r = Run()
    cap = 30 * GB
    hbm = Link("hbm", cap)
    heavy = r.start("heavy", [hbm], 1e9, weights=[2.0])
    light = r.start("light", [hbm], 1e9, weights=[1.0])
    assert heavy.rate == pytest.approx(cap / 3) and light.rate == pytest.approx(cap / 3)
    r.run()
    assert r.done["heavy"] == r.done["light"] == pytest.approx(1e9 / (cap / 3), rel=1e-9)
    assert hbm.bytes == pytest.approx(3e9, rel=1e-9)


def test_weights_in_progressive_filling():
    """A on L1 (weight 2) and L2 (weight 1), B on L1, C on L2; 30 GB/s each.
    L1: 30 / (2 + 1) = 10, L2: 30 / (1 + 1) = 15 -> L1 first: A = B = 10; L2 left 30 - 10 = 20 -> C = 20."""
    r = Run()
    l1, l2 = Link("l1", 30 * GB), Link("l2", 30 * GB)
    a = r.start("a", [l1, l2], 1e9, weights=[2.0, 1.0])
    b = r.start("b", [l1], 1e9)
    c = r.start("c", [l2], 1e9)
    assert (a.rate, b.rate, c.rate) == (pytest.approx(10 * GB), pytest.approx(10 * GB), pytest.approx(20 * GB))


# -- cost: events per flow, not per byte --------------------------------------------------------------------
def _scenario(unit: float) -> Run:
    """Eight flows on three links, staggered starts, sizes in multiples of `unit` bytes."""
    r = Run()
    cap = 10 * GB
    links = [Link(f"l{i}", cap) for i in range(3)]
    plan = [(0, [0], 1), (0, [0], 3), (1, [0, 1], 2), (2, [1], 5), (3, [2], 1), (3, [1, 2], 4), (5, [0], 2),
            (6, [2], 7)]
    for i, (start, path, k) in enumerate(plan):
        r.at(start * unit / cap, f"f{i}", [links[j] for j in path], k * unit, tail=1e-7 * (i % 2))
    r.run()
    assert len(r.done) == len(plan)
    return r


def test_events_grow_with_flows_not_bytes():
    small, huge = _scenario(1024), _scenario(float(1 << 40))
    assert small.events == huge.events
    assert huge.events <= 6 * 8  # a few events per flow
    for name, t in small.done.items():  # and the same schedule, scaled
        tail = 1e-7 * (int(name[1:]) % 2)
        assert (t - tail) * (1 << 40) / 1024 == pytest.approx(huge.done[name] - tail, rel=1e-6)


@pytest.mark.parametrize("n", [1, 10, 100])
def test_events_linear_in_number_of_flows(n):
    r = Run()
    link = Link("l", 10 * GB)
    for i in range(n):
        r.at(i * 1e-4, f"f{i}", [link], 1e9)
    r.run()
    assert len(r.done) == n
    assert r.events <= 5 * n + 2
    assert r.done[f"f{n - 1}"] == pytest.approx(n * 1e9 / (10 * GB), rel=1e-9)  # work conserving


# -- bookkeeping ------------------------------------------------------------------------------------------
def test_link_bytes_and_utilisation():
    cap, size = 10 * GB, 1e9
    r = Run()
    link = Link("l", cap)
    other = Link("idle", cap)
    r.start("a", [link], size, tail=0.05)
    r.run(until=0.05)
    assert link.utilisation(r.env.now) == pytest.approx(1.0)
    r.run()
    assert r.done["a"] == pytest.approx(0.15, rel=1e-9)
    assert link.bytes == pytest.approx(size, rel=1e-9)
    r.env.run(until=0.4)
    # busy for the 0.1 s of data, not the tail: 0.1 / 0.4
    assert link.utilisation(0.4) == pytest.approx(0.25, rel=1e-9)
    assert other.utilisation(0.4) == 0.0 and other.bytes == 0.0
    assert link.utilisation(0.0) == 0.0


def test_link_bytes_with_sharing_and_gaps():
    """Two overlapping flows, an idle gap, a third flow: bytes add up, busy time counts the union."""
    cap = 10 * GB
    r = Run()
    link = Link("l", cap)
    r.start("a", [link], 1e9)  # shares with b until 0.2
    r.at(0.0, "b", [link], 1e9)
    r.at(0.5, "c", [link], 2e9)  # 0.5 .. 0.7
    r.run()
    r.env.run(until=1.0)
    assert link.bytes == pytest.approx(4e9, rel=1e-9)
    assert link.utilisation(1.0) == pytest.approx((0.2 + 0.2) / 1.0, rel=1e-9)
    assert r.done["c"] == pytest.approx(0.7, rel=1e-9)


# -- against the recompute-everything reference (models/reference.py) -----------------------------------------
def _reference(caps, flows):
    """The flows (start, links, weights, size, tail) on `ReferenceNetwork`: (report time of each, bytes per link,
    busy seconds per link)."""
    r = Run(network=ReferenceNetwork)
    links = _run_flows(r, caps, flows)
    return [r.done[k] for k in range(len(flows))], [link.bytes for link in links], [link.busy_time for link in links]


def _run_flows(r, caps, flows) -> list:
    """Start each flow (start, links, weights, size, tail) on `r` at its start time, run to the end; the links."""
    links = [Link(f"l{i}", c) for i, c in enumerate(caps)]
    for k, (start, path, weights, size, tail) in enumerate(flows):
        if start == 0.0:
            r.start(k, [links[j] for j in path], size, weights, tail)
        else:
            r.at(start, k, [links[j] for j in path], size, weights, tail)
    r.run()
    return links


_flow = st.tuples(
    st.sampled_from([0.0, 0.0, 0.1, 0.25, 0.5]),              # start
    st.sets(st.integers(0, 3), min_size=1, max_size=3),      # links
    st.sampled_from([1.0, 1.0, 2.0]),                         # weight
    st.sampled_from([0, 1e8, 5e8, 1e9, 1e9, 2e9, 3.5e9]),     # size
    st.sampled_from([0.0, 0.0, 0.01, 0.05, 0.1]),             # tail
)


@pytest.mark.parametrize("how", ["start", "send"])
@settings(max_examples=150, deadline=None)
@given(caps=st.lists(st.sampled_from([1e9, 2e9, 5e9, 10e9]), min_size=4, max_size=4),
       specs=st.lists(_flow, min_size=1, max_size=8))
def test_network_matches_the_reference(how, caps, specs):
    flows = [(start, sorted(links), [w] * len(links), size, tail) for start, links, w, size, tail in specs]
    expected, moved, busy = _reference(caps, flows)
    r = Run(how)
    links = _run_flows(r, caps, flows)
    assert sorted(r.done) == list(range(len(flows)))
    for k, t in enumerate(expected):
        assert r.done[k] == pytest.approx(t, rel=1e-9, abs=1e-12), (k, flows[k])
    end = max(expected) + 1.0
    for i, link in enumerate(links):
        assert link.bytes == pytest.approx(moved[i], rel=1e-9, abs=1e-3)
        assert not link.flows
        assert link.utilisation(end) == pytest.approx(busy[i] / end, rel=1e-9, abs=1e-12)
    assert r.events <= 6 * len(flows) + 2


def _program(how, caps, specs, env=simpy.Environment):
    """The flows of `specs` (as the fluid reference test draws them) started by `how` on an `env`: (report
    times, each link's bytes and busy seconds, the events processed)."""
    r = Run(how, env)
    links = [Link(f"l{i}", c) for i, c in enumerate(caps)]
    for k, (start, path, w, size, tail) in enumerate(specs):
        path = sorted(path)
        if start == 0.0:
            r.start(k, [links[j] for j in path], size, [w] * len(path), tail)
        else:
            r.at(start, k, [links[j] for j in path], size, [w] * len(path), tail)
    r.run()
    return r.done, [(link.bytes, link.busy_time, link.busy_since) for link in links], r.events


@settings(max_examples=200, deadline=None)
@given(caps=st.lists(st.sampled_from([1e9, 2e9, 5e9, 10e9]), min_size=4, max_size=4),
       specs=st.lists(_flow, min_size=1, max_size=8))
@example(caps=[2e9, 5e9, 5e9, 1e9], specs=[(0.0, {0}, 1.0, 0, 0.0), (0.0, {2}, 1.0, 1e8, 0.0),
                                           (0.5, {1, 2}, 1.0, 1e8, 0.0), (0.0, {0, 1, 2}, 1.0, 1e9, 0.0)])
def test_send_gives_exactly_what_start_gives(caps, specs):
    """`send` (no Flow for a flow alone on its links until another flow comes) and `start` (a Flow for
    every flow) give the same report times and link accounting, to the bit, in as many events; and so do the
    model's timers on a Clock (queue entries) and on a plain simpy environment (Call events). (Not always the
    same `Link.level`s: a lone flow sets its neck's level only, where a Flow that a re-rating reaches may fill
    another link it crosses at the same level; a finite level on a link that is no flow's neck is left over
    from an earlier filling either way, and a re-rating's check of it finds no flow to let go. The example
    below is one: caps 2, 5, 5, 1 GB/s; a 0 B flow on l0 and 100 MB on l2 at 0; 1 GB on l0-l2 at 0; 100 MB on
    l1-l2 at 0.5, as the 1 GB one ends.)"""
    assert _program("send", caps, specs) == _program("start", caps, specs)
    assert _program("send", caps, specs, Clock) == _program("send", caps, specs)


def test_clock_runs_timers_and_simpy_events_of_one_instant_in_the_order_they_were_scheduled():
    env, seen = Clock(), []
    env.call(1.0, seen.append, "timer 1")
    env.timeout(1.0).callbacks.append(lambda _: seen.append("event"))
    env.at(1.0, seen.append, "timer 2")
    env.call(0.5, seen.append, "first")
    env.at(-3.0, seen.append, "now")  # (a time passed: now)
    env.run()
    assert seen == ["now", "first", "timer 1", "event", "timer 2"] and env.now == 1.0


def test_clock_run_to_the_end_runs_processes_stops_and_failures_as_simpy_does():
    """`Clock.run()` is simpy's run, stepping timers in `Clock.step` and everything else in simpy's: processes
    interleave with timers, a failed event raises out of `run`, a `StopSimulation` from a callback ends the
    run with its value, and `run(until=...)` is simpy's."""
    from simpy.core import StopSimulation

    env, seen = Clock(), []

    def proc():
        yield env.timeout(1.0)
        seen.append(("proc", env.now))
        yield env.timeout(1.0)
        seen.append(("proc", env.now))
    env.process(proc())
    env.call(1.5, lambda _: seen.append(("timer", env.now)))
    assert env.run() is None
    assert seen == [("proc", 1.0), ("timer", 1.5), ("proc", 2.0)] and env.empty

    env.call(1.0, lambda _: seen.append("later"))
    env.timeout(0.5).callbacks.append(lambda _: (_ for _ in ()).throw(StopSimulation("stopped")))
    assert env.run() == "stopped" and env.now == 2.5 and "later" not in seen
    env.run()
    assert seen[-1] == "later" and env.now == 3.0

    def fails():
        yield env.timeout(1.0)
        raise ValueError("in a process")
    env.process(fails())
    with pytest.raises(ValueError, match="in a process"):
        env.run()
    env.call(5.0, lambda _: seen.append("until"))
    env.run(until=4.5)
    assert env.now == 4.5 and seen[-1] == "later"
    env.run()
    assert seen[-1] == "until" and env.now == 9.0


def test_a_lone_send_makes_no_flow_until_another_flow_comes():
    """A flow alone on its links is held by them as `lone`, not in `flows`; the next flow on one of its links
    while its data moves makes it a Flow, and the two share."""
    r = Run("send")
    a, b = Link("a", 1e9), Link("b", 1e9)
    first = r.start("x", [a, b], 1e9)
    assert first.__class__ is Lone and a.lone is first and b.lone is first and not a.flows and not b.flows
    r.at(0.5, "y", [b], 1e9)
    r.run()
    assert first.flow is not None and a.lone is None and b.lone is None
    assert r.done == {"x": pytest.approx(1.5), "y": pytest.approx(2.0)}  # (x: 0.5 alone, 1.0 at half; y then alone)
    assert a.bytes == b.bytes / 2 == pytest.approx(1e9)


def test_a_lone_send_done_before_the_next_leaves_without_a_flow():
    """The next flow after a lone flow's data is done (in its tail) finds its links free: neither shares, and
    the first never becomes a Flow."""
    r = Run("send")
    a = Link("a", 1e9)
    first = r.start("x", [a], 1e9, tail=0.5)
    r.at(1.2, "y", [a], 1e9)
    r.run()
    assert first.flow is None
    assert r.done == {"x": pytest.approx(1.5), "y": pytest.approx(2.2)}
    assert a.busy_time == pytest.approx(2.0) and a.bytes == pytest.approx(2e9)


def test_a_lone_flow_takes_its_links_as_given_and_leaves_the_sequence_alone():
    """`send` and `start` take a flow's links as any sequence (a tuple too) and never write into it; a lone
    flow on one link has that link as its neck, at the link's capacity over its weight."""
    env = Clock()
    net = Network(env)
    a, b = Link("a", 2e9), Link("b", 1e9)
    ends = []
    one, two = (a,), (a, b)
    lone = net.send(one, 1e9, lambda: ends.append(env.now), weights=(2.0,))
    assert one == (a,) and lone.neck is a and lone.rate == pytest.approx(1e9)
    env.run()
    net.start(two, 1e9, lambda: ends.append(env.now))
    env.run()
    assert two == (a, b) and ends == [pytest.approx(1.0), pytest.approx(2.0)]


@pytest.mark.parametrize("env_type", ["Clock", "simpy"])
def test_a_start_at_the_instant_a_service_clock_link_empties_leaves_every_report_due(env_type):
    """Flows on a link with a service clock whose data ends at the very instant another flow starts there, the
    start coming first (its event was scheduled before the link's timer): the start serves the link, which
    stops its clock and so supersedes its timer; the flows it drained still report then, and the new one after
    its own data (the network's timer is armed for the reports a start leaves in its heap)."""
    env = Clock() if env_type == "Clock" else simpy.Environment()
    net = Network(env)
    link = Link("l", 4e9)
    done = {}

    def begin(name, t):
        yield env.timeout(t)
        net.start([link], 1e8, lambda: done.setdefault(name, env.now))

    for i in range(4):  # four at once: a service clock; each ends at 0.1 s
        env.process(begin(f"f{i}", 0.0))
    env.process(begin("late", 0.1))
    env.run()
    assert done == {**{f"f{i}": pytest.approx(0.1) for i in range(4)}, "late": pytest.approx(0.125)}


_chain = st.tuples(
    st.sets(st.integers(0, 3), min_size=1, max_size=2),      # links
    st.sampled_from([1e8, 5e8, 1e9, 1e9, 2e9]),              # size
    st.sampled_from([0.0, 0.0, 0.0, 0.01]),                  # tail
    st.integers(1, 4),                                        # rounds: each restarts from its own completion
)


def _chains(specs, caps, push_every_report: bool):
    """Flows that restart from their own completions (a stream's copies), on a Clock: (reports in the order
    they came, with their times; each link's accounting)."""
    env = Clock()
    net = Network(env)
    if push_every_report:  # every report through the heap, as before zero-tail reports came along
        def due(f, when, done):
            f.state = 2  # DRAINED
            net._push(when, f)
        net._due = due
    links = [Link(f"l{i}", c) for i, c in enumerate(caps)]
    seen = []

    def begin(k, path, size, tail, left):
        def done():
            seen.append((k, left, env.now))
            if left > 1:
                begin(k, path, size, tail, left - 1)
        net.send([links[j] for j in sorted(path)], size, done, None, tail)

    for k, (path, size, tail, rounds) in enumerate(specs):
        begin(k, path, size, tail, rounds)
    env.run()
    return seen, [(link.bytes, link.busy_time, link.busy_since) for link in links]


@settings(max_examples=150, deadline=None)
@given(caps=st.lists(st.sampled_from([1e9, 2e9, 5e9]), min_size=4, max_size=4),
       specs=st.lists(_chain, min_size=1, max_size=10))
def test_zero_tail_reports_come_at_the_times_the_heap_gives(caps, specs):
    """In the timer's work, a flow with no tail reports with the others of that instant, without a round trip
    through the heap, when nothing in the heap comes before it (`Network._due`): the same reports at the same
    times, and the same link accounting, as with every report through the heap, on links with a service clock
    and on shared ones. (Within one instant the order may differ: a service-clock link's ends have a timer of
    their own, `_link_due`, so its zero-tail reports come in its timer's work rather than in the heap's.)"""
    (got, links), (want, want_links) = _chains(specs, caps, False), _chains(specs, caps, True)
    # The same instants up to rounding: the two orders of work at one instant re-rate a flow in different steps,
    # so a time may differ in its last bit (0.16 against 0.16000000000000003), never by more.
    key = lambda r: (round(r[2], 12), r[0], -r[1])  # noqa: E731
    got, want = sorted(got, key=key), sorted(want, key=key)
    assert [r[:2] for r in got] == [r[:2] for r in want]
    assert [r[2] for r in got] == pytest.approx([r[2] for r in want], rel=1e-12, abs=1e-15)
    flat = lambda accounts: [-1.0 if v is None else v for link in accounts for v in link]  # noqa: E731
    assert flat(links) == pytest.approx(flat(want_links), rel=1e-12, abs=1e-15)


# -- the reference itself, and as the machine's network ------------------------------------------------------
def test_the_reference_gives_the_closed_forms():
    """`ReferenceNetwork` by hand: a flow alone at its narrowest link plus its tail; two on a link share it,
    the longer then gets it all; weights count; a flow with no bytes reports after its tail."""
    r = Run(network=ReferenceNetwork)
    fast, slow, l = Link("fast", 30 * GB), Link("slow", 10 * GB), Link("l", 8 * GB)
    r.start("path", [fast, slow], 1e9, tail=1e-3)
    r.start("small", [l], 1e9)
    r.start("big", [l], 3e9, weights=[1.0])
    r.start("zero", [l], 0, tail=5e-6)
    r.run()
    assert r.done == {"path": pytest.approx(0.1 + 1e-3), "small": pytest.approx(2e9 / (8 * GB)),
                      "big": pytest.approx(4e9 / (8 * GB)), "zero": pytest.approx(5e-6)}
    assert l.bytes == pytest.approx(4e9) and l.busy_time == pytest.approx(0.5) and r.net.idle
    r = Run(network=ReferenceNetwork)
    r.start("w2", [slow], 1e9, weights=[2.0])
    r.start("w1", [slow], 1e9)
    r.run()  # both at 10/3 GB/s until w1 ends at 0.3 s; then w2 alone at 5 GB/s
    assert r.done == {"w1": pytest.approx(0.3), "w2": pytest.approx(0.3 + (1e9 - 0.3 * 10 / 3 * GB) / (5 * GB))}


def _machine_ends(network) -> list:
    """A small workload on an Atlas 910B machine: host-to-device copies of a few sizes on four streams of two
    devices (sharing the host links), a device-to-device copy and a kernel; the end time of every task."""
    import emu
    from emu.models import COPY, KERNEL, Machine, Task

    m = Machine(emu.config.load("910B").hardware, network=network)
    streams = [m.stream(f"s{i}", device=i % 2) for i in range(4)]
    tasks = []
    for i in range(12):
        s = streams[i % 4]
        size = (4 << 10, 1 << 20, 16 << 20)[i % 3]
        tasks.append(m.submit(s, Task(COPY, nbytes=size, device=s.device, src=None, dst=s.device), at=i * 1e-6))
    tasks.append(m.submit(streams[0], Task(COPY, nbytes=8 << 20, device=0, src=0, dst=1), at=0.0))
    tasks.append(m.submit(streams[1], Task(KERNEL, device=1, duration=2e-4), at=0.0))
    for t in tasks:
        m.wait(t)
    return [t.end for t in tasks]


def test_a_machine_on_the_reference_network_gives_the_default_task_times():
    """`Machine(hw, network=ReferenceNetwork(Clock()))`, the debug mode: the same task end times as the
    default network (to rounding), on a workload whose copies share links."""
    default = _machine_ends(None)
    reference = _machine_ends(ReferenceNetwork(Clock()))
    assert reference == pytest.approx(default, rel=1e-9, abs=1e-15)
    assert len(set(default)) > 4  # (the copies do overlap and end apart)


def test_a_machine_wants_its_network_on_a_clock():
    import emu
    from emu.models import Machine

    with pytest.raises(TypeError, match="Clock"):
        Machine(emu.config.load("910B").hardware, network=ReferenceNetwork(simpy.Environment()))


# -- the reference as a debug mode of the emulator (issue 29) -----------------------------------------------
def _copies_end(network: str) -> list[float]:
    import emu
    rt = emu.configure(product="A3", functional=False, network=network)
    rt.set_device(0)
    streams = [rt.create_stream() for _ in range(3)]
    host, dev, peer = rt.malloc_host(8 << 20), rt.malloc(8 << 20), None
    rt.set_device(2)
    peer = rt.malloc(8 << 20)
    rt.set_device(0)
    rt.memcpy_async(dev, 8 << 20, host, 8 << 20, 1, streams[0])
    rt.memcpy_async(peer, 8 << 20, dev, 8 << 20, 3, streams[1])
    rt.memcpy_async(host, 4 << 20, dev, 4 << 20, 2, streams[2])
    rt.synchronize_device()
    return sorted(float(r["end"]) for r in rt.records())


def test_configure_network_reference_gives_the_same_times():
    """emu.configure(network="reference") (acl-emu run --reference, ACL_EMU_NETWORK=reference) times the
    run on the max-min reference: the same task ends as the default flow model."""
    assert _copies_end("reference") == pytest.approx(_copies_end("flows"), rel=1e-9)


def test_an_unknown_network_is_refused():
    import emu
    with pytest.raises(ValueError, match="'fast' is not one of flows, reference"):
        emu.configure(network="fast")


def test_acl_emu_run_reference(tmp_path, capsys, monkeypatch):
    """`acl-emu run --reference` runs the bundled example on the reference: the same simulated time; the
    setting ends with the run."""
    import json
    import os

    from emu.cli import main
    monkeypatch.delenv("ACL_EMU_NETWORK", raising=False)
    runs = {}
    for flag in ([], ["--reference"]):
        assert main(["run", *flag, "--host-time", "calls", "--out", str(tmp_path), "--json"]) == 0
        runs[bool(flag)] = json.loads(capsys.readouterr().out)
    assert runs[True]["simulated_ms"] == pytest.approx(runs[False]["simulated_ms"], rel=1e-9)
    assert runs[True]["device_tasks"] == runs[False]["device_tasks"] > 0
    assert "ACL_EMU_NETWORK" not in os.environ
