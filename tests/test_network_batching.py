"""The flow model's incremental re-rating (models.network): changes of one instant are re-rated once, together,
and a re-rating replays progressive filling over the links a change reaches only. Checked against a full
progressive filling after every re-rating, and against the recompute-everything reference (models.reference)."""
from __future__ import annotations

import math
import random

import pytest
import simpy

from emu.models import Link, Network
from emu.models.clock import Clock
from emu.models.reference import ReferenceNetwork, max_min_rates

GB = 1e9


def counting(net: Network) -> list:
    """Count the network's re-ratings: the list grows by one per re-rating."""
    calls = []
    rerate = net._rerate

    def counted(*args):
        calls.append(args)
        return rerate(*args)

    net._rerate = counted
    return calls


def full_max_min(flows) -> dict:
    """Weighted max-min rates of `flows` (anything with links and weights) by progressive filling from scratch."""
    return max_min_rates(flows)


def naive(caps: dict[str, float], flows: list[tuple[str, list[str], float]], rounds: int) -> dict:
    """On the reference (every rate recomputed at every event): flows (name, link names, size), each restarted
    from its own completion `rounds` times. Returns {name: time of its last completion}."""
    env = Clock()
    return in_rounds(env, ReferenceNetwork(env).send, caps, flows, rounds)


def in_rounds(env, send, caps: dict[str, float], flows: list, rounds: int) -> dict:
    """Each flow (name, link names, size) sent with `send(links, size, done)` and sent again from its own
    completion, `rounds` times in all; {name: time of its last completion}."""
    links = {name: Link(name, cap) for name, cap in caps.items()}
    out = {}

    def begin(name, path, size, left):
        def done():
            if left > 1:
                begin(name, path, size, left - 1)
            else:
                out[name] = env.now
        send(path, size, done)

    for name, path, size in flows:
        begin(name, [links[p] for p in path], size, rounds)
    env.run()
    return out


# -- one re-rating per instant ----------------------------------------------------------------------------
def test_flows_started_at_one_instant_are_rated_once():
    env = simpy.Environment()
    net = Network(env)
    calls = counting(net)
    link = Link("l", 10 * GB)
    done = {}
    for i in range(8):
        net.start([link], (i + 1) * 1e8, lambda i=i: done.__setitem__(i, env.now))
    assert not calls  # nothing rated yet: the instant's starts wait for each other
    env.run()
    assert len(calls) == 1  # the eight shared one link from the start: one re-rating (then a service clock)
    # equal shares: the k-th smallest ends when k of them have moved it, the rest at the same pace
    for i in range(8):
        expected = sum(min(j + 1, i + 1) * 1e8 for j in range(8)) / (10 * GB)
        assert done[i] == pytest.approx(expected, rel=1e-9)


def _fan(batched: bool) -> tuple[dict, int]:
    """Sixteen flows over a 4 x 4 crossbar (out link i, in link j), all started at t = 1 ms, by a process;
    one by one (each rated before the next starts: reading its rate re-rates it) or together."""
    env = simpy.Environment()
    net = Network(env)
    calls = counting(net)
    outs = [Link(f"out{i}", (10 + i) * GB) for i in range(4)]
    ins = [Link(f"in{j}", (25 - 3 * j) * GB) for j in range(4)]
    done = {}

    def go():
        yield env.timeout(1e-3)
        for i in range(4):
            for j in range(4):
                f = net.start([outs[i], ins[j]], (1 + (i * 4 + j) % 5) * 1e8,
                              lambda key=(i, j): done.__setitem__(key, env.now))
                if not batched:
                    assert f.rate > 0

    env.process(go())
    env.run()
    return done, len(calls)


def test_same_instant_batching_gives_the_times_of_one_by_one():
    together, rated_together = _fan(batched=True)
    one_by_one, rated_one_by_one = _fan(batched=False)
    assert together.keys() == one_by_one.keys() and len(together) == 16
    for key, t in one_by_one.items():
        assert together[key] == pytest.approx(t, rel=1e-9), key
    assert rated_one_by_one - rated_together >= 14  # the sixteen starts: one re-rating instead of fifteen


def test_flows_their_completions_start_are_rated_with_the_ends():
    """Four flows end together; each completion starts two more on shared links: one re-rating at that
    instant, not one per end or start."""
    env = simpy.Environment()
    net = Network(env)
    links = [Link(f"l{i}", 10 * GB) for i in range(4)]
    done = {}

    def restart(i):
        done[i] = env.now
        net.start([links[i], links[(i + 1) % 4]], 1e9, lambda: done.__setitem__(("a", i), env.now))
        net.start([links[i]], 2e9, lambda: done.__setitem__(("b", i), env.now))

    for i in range(4):
        net.start([links[i]], 1e9, lambda i=i: restart(i))
    calls = counting(net)
    env.run(until=0.1 + 1e-9)
    assert all(done[i] == pytest.approx(0.1, rel=1e-12) for i in range(4))
    assert len(calls) == 1
    env.run()
    assert len(done) == 12


def test_a_rate_read_counts_the_starts_of_this_instant():
    env = simpy.Environment()
    net = Network(env)
    a, b = Link("a", 10 * GB), Link("b", 30 * GB)
    f = net.start([a, b], 1e9, lambda: None)
    g = net.start([a], 1e9, lambda: None)
    h = net.start([b], 1e9, lambda: None)
    assert (f.rate, g.rate, h.rate) == (pytest.approx(5 * GB), pytest.approx(5 * GB), pytest.approx(25 * GB))


# -- only what a change reaches -------------------------------------------------------------------------------
def test_a_change_leaves_the_flows_it_does_not_reach_alone():
    """Two flows on each of two links; one ends: the other link's flows keep their rates and due times."""
    env = simpy.Environment()
    net = Network(env)
    a, b = Link("a", 10 * GB), Link("b", 10 * GB)
    short = net.start([a], 1e8, lambda: None)
    long_a = net.start([a], 1e9, lambda: None)
    b1, b2 = net.start([b], 1e9, lambda: None), net.start([b], 2e9, lambda: None)
    assert short.rate == long_a.rate == b1.rate == b2.rate == pytest.approx(5 * GB)
    versions = b1.version, b2.version
    env.run(until=0.02 + 1e-9)  # the short flow ends at 20 ms
    assert long_a.rate == pytest.approx(10 * GB)
    assert (b1.version, b2.version) == versions
    assert b1.rate == b2.rate == pytest.approx(5 * GB)


def test_a_flow_held_back_elsewhere_keeps_its_rate_when_a_flow_it_shares_with_slows():
    """A and B share the narrow link n; A also crosses the wide link w, where C runs held back by its own
    narrow link m. A new flow on n slows A: w gives C nothing more, C's rate and due time stand."""
    env = simpy.Environment()
    net = Network(env)
    n, w, m = Link("n", 4 * GB), Link("w", 100 * GB), Link("m", 3 * GB)
    a = net.start([n, w], 1e9, lambda: None)
    net.start([n], 1e9, lambda: None)
    c = net.start([w, m], 1e9, lambda: None)
    assert (a.rate, c.rate) == (pytest.approx(2 * GB), pytest.approx(3 * GB))
    version = c.version
    net.start([n], 1e9, lambda: None)
    assert a.rate == pytest.approx(4 * GB / 3)
    assert c.version == version and c.rate == pytest.approx(3 * GB)


# -- against references -----------------------------------------------------------------------------------
def _mesh_run(seed: int):
    """Random flows on a random mesh: 1 to 3 links each, weights 1 or 2, tails, starts at t = 0 (from the
    host), later (from processes) and from completions (restarts). After every re-rating, every flow on a link
    is checked against progressive filling from scratch."""
    rng = random.Random(seed)
    env = simpy.Environment()
    net = Network(env)
    links = [Link(f"l{i}", rng.choice([1, 2, 3, 10, 10, 25]) * GB) for i in range(rng.randint(2, 10))]
    carried: dict[Link, float] = {}
    checks = []
    rerate = net._rerate

    def checked(*args):
        rerate(*args)
        moving = [f for link in links for f in link.flows]
        for f, want in full_max_min(list(dict.fromkeys(moving))).items():
            assert f.speed == pytest.approx(want, rel=1e-9), (seed, env.now, f)
        checks.append(len(moving))

    net._rerate = checked

    def begin(left: int):
        path = rng.sample(links, rng.randint(1, min(3, len(links))))
        weights = [rng.choice([1.0, 1.0, 2.0]) for _ in path]
        size = rng.choice([1e6, 5e6, 1e7, 3e7, 1e8])
        for link, w in zip(path, weights):
            carried[link] = carried.get(link, 0.0) + size * w
        net.start(path, size, lambda: begin(left - 1) if left > 1 else None, weights,
                  rng.choice([0.0, 0.0, 1e-4, 1e-3]))

    def later(t: float, left: int):
        yield env.timeout(t)
        begin(left)

    for _ in range(rng.randint(1, 30)):
        if rng.random() < 0.3:
            begin(rng.randint(1, 4))
        else:
            env.process(later(rng.choice([0.0, 1e-3, rng.random() * 1e-2]), rng.randint(1, 4)))
    env.run()
    assert not net.flows and all(not link.flows for link in links)
    for link in links:  # every flow's bytes, counted once
        assert link.bytes == pytest.approx(carried.get(link, 0.0), rel=1e-9)
    return checks


def test_every_rerating_matches_progressive_filling_from_scratch():
    sizes = [n for seed in range(60) for n in _mesh_run(seed)]
    assert len(sizes) > 1000 and max(sizes) >= 20  # (the runs do share links, many at a time)


@pytest.mark.parametrize("nodes, rounds", [(6, 2), (10, 1)])
def test_all_to_all_on_a_mesh_matches_the_naive_reference(nodes, rounds):
    """Every node sends to every other over its out link and the other's in link (and, for neighbours, a
    direct link of their own), restarting `rounds` times: the same completion times as recomputing every rate
    at every event."""
    rng = random.Random(nodes)
    caps = {f"out{i}": rng.choice([20, 40, 50]) * GB for i in range(nodes)}
    caps.update({f"in{i}": rng.choice([30, 40]) * GB for i in range(nodes)})
    flows = []
    for i in range(nodes):
        for j in range(nodes):
            if i == j:
                continue
            if j == i ^ 1:  # neighbours: a direct link
                caps[f"d{i}-{j}"] = 25 * GB
                path = [f"d{i}-{j}"]
            else:
                path = [f"out{i}", f"in{j}"]
            flows.append((f"{i}>{j}", path, 1e6 * (1 + rng.randrange(1000) / 997)))
    want = naive(caps, flows, rounds)
    env = simpy.Environment()
    got = in_rounds(env, Network(env).start, caps, flows, rounds)
    assert got.keys() == want.keys()
    worst = max(abs(got[k] - want[k]) / want[k] for k in want)
    assert worst < 1e-9, worst


def test_rates_of_flows_never_exceed_any_link():
    """A dense mesh mid-run: every link carries at most its capacity, and every flow crosses a full link
    on which no flow is faster (max-min)."""
    env = simpy.Environment()
    net = Network(env)
    rng = random.Random(7)
    links = [Link(f"l{i}", rng.choice([5, 10, 20]) * GB) for i in range(8)]
    flows = [net.start(rng.sample(links, 2), 1e9 * rng.randint(1, 5), lambda: None) for _ in range(40)]
    env.run(until=0.05)
    alive = [f for f in flows if f.state in (0, 1)]
    assert alive
    for link in links:
        assert sum(f.rate for f in alive if link in f.links) <= link.capacity * (1 + 1e-9)
    for f in alive:
        assert any(math.isclose(sum(g.rate for g in alive if link in g.links), link.capacity, rel_tol=1e-9)
                   and all(f.rate >= g.rate * (1 - 1e-9) for g in alive if link in g.links) for link in f.links)


@pytest.mark.parametrize("n", [4, 10, 30])
@pytest.mark.parametrize("how", ["start", "send"])
@pytest.mark.parametrize("env_type", [simpy.Environment, Clock])
def test_flows_restarted_on_a_link_with_a_service_clock_match_the_naive_reference(n, how, env_type):
    """N flows alone together on one link move on its service clock; each restarts from its own completion (its
    end and its next start at one instant, the link's next end set once the timer's work is done), as a
    stream's copies do: the same completion times as recomputing every rate at every event."""
    rng = random.Random(n)
    flows = [(f"f{i}", ["l"], 1e6 * (1 + rng.randrange(1000) / 997)) for i in range(n)]
    rounds = 4
    want = naive({"l": 10 * GB}, flows, rounds)
    env = env_type()
    net = Network(env)
    link = Link("l", 10 * GB)
    go = getattr(net, how)
    got = {}

    def begin(name, size, left):
        def done():
            if left > 1:
                begin(name, size, left - 1)
            else:
                got[name] = env.now
        go([link], size, done)

    for name, _, size in flows:
        begin(name, size, rounds)
    env.run()
    assert got.keys() == want.keys()
    assert max(abs(got[k] - want[k]) / want[k] for k in want) < 1e-9
    assert link.service is None and not link.flows and net.idle
    assert link.bytes == pytest.approx(rounds * sum(size for _, _, size in flows), rel=1e-9)


def test_a_clock_keeps_the_collector_out_while_it_runs_and_restores_it():
    """`Clock.run` disables the collector for the run, as the machine does (the model makes no reference
    cycles), and gives it back as it found it, also when the run raises."""
    import gc

    seen = []
    env = Clock()
    env.call(1.0, lambda _: seen.append(gc.isenabled()))
    assert gc.isenabled()
    env.run()
    assert seen == [False] and gc.isenabled()

    def boom(_):
        raise ValueError("boom")
    env.call(1.0, boom)
    with pytest.raises(ValueError):
        env.run()
    assert gc.isenabled()
    gc.disable()
    try:
        env.call(1.0, lambda _: seen.append(gc.isenabled()))
        env.run()
        assert seen[-1] is False and not gc.isenabled()  # (off before: off after)
    finally:
        gc.enable()
