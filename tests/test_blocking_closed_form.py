"""A blocking copy or fill with nothing else in flight runs in closed form (`Machine.blocking`): its end is
known when it starts, so the clock moves there (`Clock.skip`) instead of a stream step, an engine request, a
flow and its report; so does a blocking batch whose lanes run in step (`Machine._bundle`). The rule: the
outcome is exactly that of `submit` + `wait` — the same records (times, engine, route, links), host clock,
link bytes, busy time and levels — whatever the product and whatever else the program has in flight (then the
closed form must not apply)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import emu
from emu.models import machine as machine_mod
from emu.models import network as network_mod
from emu.models.clock import Clock

KIB, MIB = 1 << 10, 1 << 20
H2H, H2D, D2H, D2D = 0, 1, 2, 3


def submit_and_wait(self, stream, task, submit):
    """`Machine.blocking` without its closed form."""
    self.submit(stream, task, submit)
    return self.wait(task)


OPS = st.lists(st.tuples(st.sampled_from(["memcpy", "memset", "d32", "async", "sync_stream", "memcpy2d", "batch",
                                          "batch_uneven"]),
                         st.sampled_from([H2D, D2H, D2D, H2H]),
                         st.sampled_from([0, 1, 64, 4 * KIB, 3 * MIB + 5, 65 * MIB])),
               min_size=1, max_size=12)


def run(product: str, ops, functional: bool = False):
    """The program `ops` on a fresh runtime: (records, host clock after each op, link accounting, call log)."""
    r = emu.configure(product=product, functional=functional)
    r.set_device(0)
    n = 66 * MIB
    host, dev = r.malloc_host(n), r.malloc(n)
    host2, dev2 = r.malloc_host(n), r.malloc(n)
    s = r.create_stream()
    ends = {H2D: (dev, host), D2H: (host, dev), D2D: (dev2, dev), H2H: (host2, host)}
    clocks = []
    for op, kind, size in ops:
        if op.startswith("batch") and kind not in (H2D, D2H):
            kind = H2D  # (a batch entry has one end on the device)
        dst, src = ends[kind]
        try:
            call(r, op, kind, size, dst, src, dev, n, s)
            clocks.append(r.clock)
        except emu.AclError as e:  # (a refused call must be refused alike)
            clocks.append((e.code, r.clock))
    r.synchronize_device()
    links = {name: (link.bytes, link.busy_time, link.level) for name, link in r.machine.links.items()}
    return r.records(), clocks, links, r.host_calls


def call(r, op, kind, size, dst, src, dev, n, s) -> None:
    if op == "memcpy":
        r.memcpy(dst, n, src, size, kind)
    elif op == "memset":
        r.memset(dev, n, 7, size)
    elif op == "d32":
        r.memset_d32(dev, n, 7, size // 4)
    elif op == "async":
        r.memcpy_async(dst, n, src, size, kind, s)
    elif op == "sync_stream":
        r.synchronize_stream(s)
    elif op.startswith("batch"):
        batch(r, kind, size, dst, src, uneven=op == "batch_uneven")
    else:
        w = max(size // 64, 1)
        r.memcpy2d(dst, 2 * w, src, 2 * w, w, min(64, size) or 1, kind)


def batch(r, kind, size, dst, src, uneven: bool) -> None:
    """A blocking batch of 32 entries of size // 32 bytes (its lanes in step), or of 33 with the last one larger
    (lanes of unequal length: no closed form); host-to-device or device-to-host."""
    e = max(size // 32, 1)
    sizes = [e] * 32 + ([2 * e] if uneven else [])
    offs = [i * e for i in range(len(sizes))]
    loc = {"dst_loc": {"type": 1 if kind == H2D else 0, "id": 0}, "src_loc": {"type": 0 if kind == H2D else 1, "id": 0}}
    r.memcpy_batch([dst + o for o in offs], sizes, [src + o for o in offs], sizes, len(sizes), [loc], [0], 1)


def same(a, b) -> None:
    recs_a, clocks_a, links_a, calls_a = a
    recs_b, clocks_b, links_b, calls_b = b
    assert recs_a.dtype == recs_b.dtype
    for field in recs_a.dtype.names:
        if field == "stream":  # (names carry handles, which differ between runtimes: compare the pattern)
            np.testing.assert_array_equal(np.unique(recs_a[field], return_inverse=True)[1],
                                          np.unique(recs_b[field], return_inverse=True)[1], err_msg=field)
        else:
            np.testing.assert_array_equal(recs_a[field], recs_b[field], err_msg=field)
    assert clocks_a == clocks_b
    assert links_a == links_b
    assert calls_a == calls_b


@pytest.mark.parametrize("product", ["910B", "A3", "950PR", "310P", "200I_A2"])
@settings(max_examples=12, deadline=None)
@given(ops=OPS)
def test_closed_form_gives_what_submit_and_wait_give(product, ops):
    fast = run(product, ops)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(machine_mod.Machine, "blocking", submit_and_wait)
        slow = run(product, ops)
    same(fast, slow)


@pytest.fixture
def started(monkeypatch) -> list:
    """A 1 for each flow the network starts (`Network.send`) from here on."""
    flows = []
    send = network_mod.Network.send
    monkeypatch.setattr(network_mod.Network, "send", lambda self, *a, **k: flows.append(1) or send(self, *a, **k))
    return flows


def test_closed_form_applies_only_when_nothing_else_is_in_flight(started):
    """A lone blocking copy starts no flow; one behind an async copy in flight shares the link like any other."""
    r = emu.configure(product="910B", functional=False)
    r.set_device(0)
    host, dev = r.malloc_host(64 * MIB), r.malloc(64 * MIB)
    r.memcpy(dev, 64 * MIB, host, 64 * MIB, H2D)
    assert started == []
    s = r.create_stream()
    r.memcpy_async(dev, 64 * MIB, host, 64 * MIB, H2D, s)
    r.memcpy(dev, 64 * MIB, host, 64 * MIB, H2D)
    assert len(started) == 2
    rec = r.records()
    assert rec["end"][-1] > rec["end"][0]  # (the two shared the host link)


def test_a_batch_in_step_runs_in_closed_form_and_an_uneven_one_does_not(started):
    """A lone blocking batch of alike entries starts no flow; one of unequal entries runs its lanes' flows."""
    r = emu.configure(product="A3", functional=False)
    r.set_device(0)
    host, dev = r.malloc_host(64 * MIB), r.malloc(64 * MIB)
    batch(r, H2D, 64 * MIB, dev, host, uneven=False)
    assert started == []
    assert len(r.records()) == 1 + r.machine.hardware.engines_per_device  # (a record a lane, and the batch's)
    batch(r, H2D, 32 * MIB, dev, host, uneven=True)
    assert started


def test_closed_form_moves_the_bytes():
    r = emu.configure(product="910B", functional=True)
    r.set_device(0)
    h, d, back = r.malloc_host(4096), r.malloc(4096), r.malloc_host(4096)
    data = np.arange(4096, dtype=np.uint32).astype(np.uint8)
    r.host_array(h, 4096)[:] = data
    r.memcpy(d, 4096, h, 4096, H2D)
    r.memcpy(back, 4096, d, 4096, D2H)
    np.testing.assert_array_equal(r.host_array(back, 4096), data)


def test_clock_skip_lands_where_a_timer_would():
    """Rule: `Clock.skip(delay)` leaves the clock where a timer scheduled `delay` ahead and stepped leaves it
    (simpy computes now + delay), to the last bit, so the closed form's times are the stream path's."""
    for now, delay in ((0.0, 1e-6), (0.1, 3e-7), (1.2345678901, 2.2e-9), (7e-5, 1e-17)):
        timer, clock = Clock(initial_time=now), Clock(initial_time=now)
        timer.timeout(delay)
        timer.step()
        assert clock.empty and timer.empty
        clock.skip(delay)
        assert clock.now == timer.now


def test_clock_skip_refuses_with_events_scheduled():
    """Rule: the clock never skips past a scheduled event (it would run late): skip raises and moves nothing."""
    clock = Clock()
    clock.timeout(1.0)
    assert not clock.empty
    with pytest.raises(RuntimeError, match="events are scheduled"):
        clock.skip(2.0)
    assert clock.now == 0.0 and clock.peek() == 1.0
