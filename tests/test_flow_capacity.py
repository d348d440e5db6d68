"""Links never carry more than their capacity, whatever the mix of flows, on every product config.

Two views. On the bare network, random flows (some started from other flows' completions, the path
the overlap planner exercises) are checked against a reference max-min simulator that recomputes every
rate at every event. On each product's machine, random copies on many streams are checked from their
records alone: over any interval, the wire bytes of the flows that ran entirely inside it fit in the
link's capacity times its length, and a copy that shared no link with anything ran at its full rate.
"""
from __future__ import annotations

import math

import pytest
import simpy
from hypothesis import example, given, settings
from hypothesis import strategies as st

from emu import config
from emu.models import COPY, HOST, Link, Machine, Network, Task

PRODUCTS = config.available()
GB = 1e9


# -- a reference: every rate recomputed at every event ----------------------------------------------------
def reference(caps: list[float], flows: list[tuple]) -> dict[int, float]:
    """flows: (start, link ids, size, parent) -- a flow with a parent starts when its parent ends.
    Returns when each flow ends, by progressive filling recomputed at every start and end."""
    start = {i: f[0] for i, f in enumerate(flows) if f[3] is None}
    left = {i: f[2] for i, f in enumerate(flows)}
    active: set[int] = set()
    done: dict[int, float] = {}
    now = 0.0
    while len(done) < len(flows):
        for i, t in list(start.items()):
            if t <= now + 1e-15:
                active.add(i)
                del start[i]
        rate = _maxmin(caps, {i: flows[i][1] for i in active})
        t_end = min((now + left[i] / rate[i] for i in active), default=math.inf)
        t_next = min([t_end, *start.values()])
        for i in active:
            left[i] -= rate[i] * (t_next - now)
        now = t_next
        for i in [i for i in active if left[i] <= 1e-6 * flows[i][2] + 1e-9]:
            active.discard(i)
            done[i] = now
            for j, f in enumerate(flows):
                if f[3] == i:
                    start[j] = now
    return done


def _maxmin(caps: list[float], paths: dict[int, tuple]) -> dict[int, float]:
    rate: dict[int, float] = {}
    left = list(caps)
    while len(rate) < len(paths):
        share, best = math.inf, None
        for link in range(len(caps)):
            n = sum(1 for i, p in paths.items() if i not in rate and link in p)
            if n and left[link] / n < share:
                share, best = left[link] / n, link
        for i, p in paths.items():
            if i not in rate and best in p:
                rate[i] = share
                for link in p:
                    left[link] -= share
    return rate


_flow = st.tuples(st.sampled_from([0.0, 0.0, 0.05, 0.1, 0.3]),
                  st.lists(st.integers(0, 2), min_size=1, max_size=2, unique=True).map(tuple),
                  st.sampled_from([1e8, 5e8, 1e9, 3e9]),
                  st.integers(-1, 7))


@settings(max_examples=150, deadline=None)
@given(st.lists(_flow, min_size=1, max_size=8))
# four flows on one link keep a service clock; a fifth starts at the instant they end, before the link's own timer
@example([(0.0, (1,), 1e8, 0), (0.0, (1,), 1e8, 1), (0.0, (1,), 1e8, -1), (0.1, (1,), 1e8, -1), (0.0, (0,), 1e8, 0),
          (0.0, (1,), 1e8, -1)])
def test_network_matches_a_reference_that_recomputes_every_rate(raw):
    caps = [10 * GB, 4 * GB, 25 * GB]
    flows = [(t, links, size, parent if 0 <= parent < i else None) for i, (t, links, size, parent) in enumerate(raw)]
    expected = reference(caps, flows)
    env = simpy.Environment()
    net = Network(env)
    links = [Link(f"l{k}", c) for k, c in enumerate(caps)]
    done: dict[int, float] = {}

    def launch(i):
        def on_done():
            done[i] = env.now
            for j, f in enumerate(flows):
                if f[3] == i:
                    launch(j)
        net.start([links[k] for k in flows[i][1]], flows[i][2], on_done)

    def at(t, i):
        yield env.timeout(t)
        launch(i)

    for i, f in enumerate(flows):
        if f[3] is None:
            env.process(at(f[0], i))
    env.run()
    assert done.keys() == expected.keys()
    for i in expected:
        assert done[i] == pytest.approx(expected[i], rel=1e-6, abs=1e-12), (i, flows)


def test_flow_started_by_a_completion_shares_with_a_lone_flow():
    """The overlap planner's case: a flow alone on a link (its end known, kept off the shared list) meets a
    flow that another flow's completion starts. They share from then on; neither runs at the solo rate."""
    env = simpy.Environment()
    net = Network(env)
    a, b = Link("a", 10 * GB), Link("b", 10 * GB)
    done = {}
    net.start([a], 10e9, lambda: done.__setitem__("long", env.now))
    net.start([b], 1e9, lambda: (done.__setitem__("short", env.now),
                                 net.start([a], 5e9, lambda: done.__setitem__("next", env.now))))
    env.run()
    assert done["short"] == pytest.approx(0.1)
    assert done["next"] == pytest.approx(0.1 + 5e9 / 5e9)  # half of the link for 1 s
    assert done["long"] == pytest.approx(1.5)  # 9 GB left at 0.1 s: 5 GB at half rate, 4 GB alone
    assert a.bytes == pytest.approx(15e9)


# -- every product's machine, from the records ------------------------------------------------------------
def _ends(hw) -> list[tuple]:
    """(src, dst) pairs a copy can take on this product: host links, on-chip, and peers where there are any."""
    d = min(hw.num_devices, 4)
    pairs = [(HOST, 0), (0, HOST), (HOST, d - 1), (d - 1, HOST), (0, 0)]
    if d > 1:
        pairs += [(0, 1), (1, 0), (0, d - 1)]
    return pairs


_copy = st.tuples(st.sampled_from([0.0, 0.0, 20e-6, 100e-6, 1e-3]), st.integers(0, 99),
                  st.sampled_from([4096, 1 << 20, 8 << 20, 64 << 20, (96 << 20) + 5]))


@pytest.mark.parametrize("product", PRODUCTS)
@settings(max_examples=25, deadline=None)
@given(copies=st.lists(_copy, min_size=1, max_size=12))
def test_no_link_carries_more_than_its_capacity(product, copies):
    hw = config.load(product).hardware
    m = Machine(hw)
    ends = _ends(hw)
    tasks = []
    for i, (t, pick, n) in enumerate(copies):
        src, dst = ends[pick % len(ends)]
        dev = dst if src is HOST else src
        tasks.append(m.submit(m.stream(f"s{i}", dev), Task(COPY, nbytes=n, device=dev, src=src, dst=dst), at=t))
    for task in tasks:
        m.wait(task)
    per_link: dict[str, list] = {}
    data_end = {}  # the last byte's arrival: the end less the per-transfer latency
    for task in tasks:
        links, wire = hw.path(task.route, task.src, task.dst, task.nbytes)
        if task.route in ("h2d", "d2h") and hw.host_link.per_engine:  # one DMA engine's own limit (A3)
            links = [*links, (f"dev{task.device}.dma{task.engine}", hw.host_link.per_engine, 1.0)]
        data_end[task] = task.end - hw.latency(task.route)
        for name, cap, weight in links:
            per_link.setdefault(name, []).append((task.start, data_end[task], wire * weight, cap))
    for name, flows in per_link.items():
        cap = flows[0][3]
        times = sorted({f[0] for f in flows} | {f[1] for f in flows})
        for i, a in enumerate(times):
            for b in times[i + 1:]:
                inside = sum(f[2] for f in flows if f[0] >= a - 1e-15 and f[1] <= b + 1e-15)
                assert inside <= cap * (b - a) * (1 + 1e-9) + 1.0, (product, name, a, b)
    for task in tasks:  # alone on its links for its whole life: the full rate
        links = {name for name, _, _ in hw.path(task.route, task.src, task.dst, task.nbytes)[0]}
        shared = any(other is not task and other.start < data_end[task] and task.start < data_end[other]
                     and links & {nm for nm, _, _ in hw.path(other.route, other.src, other.dst, 0)[0]}
                     for other in tasks)
        if not shared:
            assert task.end - task.start == pytest.approx(hw.alone(task.src, task.dst, task.nbytes), rel=1e-9)


@pytest.mark.parametrize("product", ["910B", "A3"])
def test_the_machine_keeps_the_flows_of_task_shapes_and_forgets_them_past_its_bound(product, monkeypatch):
    """`Machine._shape` keeps a task shape's flow (route, links, wire bytes, tail) by (kind, ends, bytes, chunk,
    rows); past _SHAPES_KEPT shapes it starts again. Every copy, first met, met again, or met after the memo was
    cleared, takes what the formula gives: `Hardware.alone` with its chunk."""
    from emu.models import machine as model

    monkeypatch.setattr(model, "_SHAPES_KEPT", 64)
    hw = config.load(product).hardware
    m = Machine(hw)
    s = m.stream("s", 0)
    shapes = [(4096 + 17 * i, (1 << 16) if i % 3 == 0 else 0) for i in range(64 + 40)]
    sizes = []
    for n, chunk in shapes + shapes[:50]:
        m.blocking(s, Task(COPY, nbytes=n, device=0, src=HOST, dst=0, chunk=chunk), m.now)
        row = m.records[-1]
        assert row.end - row.start == pytest.approx(hw.alone(HOST, 0, n, chunk), rel=1e-12)
        sizes.append(len(m._shapes))
    assert max(sizes) == 64 and min(sizes[64:]) < 64  # it filled to its bound, then started again
    assert list(m._paths) == [(COPY, HOST, 0)]  # the route itself is built once
    costs = []
    monkeypatch.setattr(m, "_cost", lambda *a: costs.append(a) or Machine._cost(m, *a))
    for _ in range(3):  # a shape met again is served from the memo: its cost is worked out once
        m.blocking(s, Task(COPY, nbytes=12345, device=0, src=HOST, dst=0), m.now)
    assert len(costs) == 1
