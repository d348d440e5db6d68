"""A batch's alike lanes that all get an engine at once run in step, as one flow (`Machine._bundle`): one lane's
bytes with k times a lane's weight on the shared links, across each lane's own engine link. The rule: max-min
fairness gives that flow what it gives each of k separate lanes, alone or beside other flows, so every task ends
when it would with a flow a lane, and every link carries the same bytes (within rounding)."""
from __future__ import annotations

import numpy as np
import pytest

import emu
from emu.models import machine as machine_mod

MIB = 1 << 20
H2D = 1
TO_DEV = {"dst_loc": {"type": 1, "id": 0}, "src_loc": {"type": 0, "id": 0}}
TO_HOST = {"dst_loc": {"type": 0, "id": 0}, "src_loc": {"type": 1, "id": 0}}


def program(product: str, entries: int, size: int, beside: str):
    """A blocking batch of `entries` alike entries while `beside` runs: nothing, an async copy on the same
    link that started before it, or an async batch of the other direction. (records, link bytes)."""
    r = emu.configure(product=product, functional=False)
    r.set_device(0)
    n = entries * size
    host, dev, host2, dev2 = r.malloc_host(n), r.malloc(n), r.malloc_host(n), r.malloc(n)
    s = r.create_stream()
    offs = [i * size for i in range(entries)]
    if beside == "copy":
        r.memcpy_async(dev2, n, host2, n // 3, H2D, s)
    elif beside == "batch":
        r.memcpy_batch_async([host2 + o for o in offs], [size] * entries, [dev2 + o for o in offs],
                             [size] * entries, entries, [TO_HOST], [0], 1, s)
    r.memcpy_batch([dev + o for o in offs], [size] * entries, [host + o for o in offs], [size] * entries, entries,
                   [TO_DEV], [0], 1)
    r.synchronize_device()
    return r.records(), {name: link.bytes for name, link in r.machine.links.items()}


@pytest.mark.parametrize("product", ["910B", "A3", "950PR", "950DT"])
@pytest.mark.parametrize("beside", ["nothing", "copy", "batch"])
@pytest.mark.parametrize("entries,size", [(16, 64 << 10), (64, 1 << 20), (4096, 64)])
def test_lanes_in_step_end_when_a_flow_a_lane_would(product, beside, entries, size):
    together = program(product, entries, size, beside)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(machine_mod.Machine, "_in_step", lambda self, alike, lanes, pool: False)
        apart = program(product, entries, size, beside)
    (rec_a, links_a), (rec_b, links_b) = together, apart
    assert len(rec_a) == len(rec_b)
    for field in ("submit", "start", "end"):
        np.testing.assert_allclose(np.sort(rec_a[field]), np.sort(rec_b[field]), rtol=1e-9, atol=1e-15,
                                   err_msg=field)
    for field in ("bytes", "tasks", "device", "route"):
        assert sorted(rec_a[field].tolist()) == sorted(rec_b[field].tolist()), field
    assert links_a.keys() == links_b.keys()
    for name in links_a:
        assert links_a[name] == pytest.approx(links_b[name], rel=1e-9), name


def test_lanes_in_step_need_an_engine_each_at_once():
    """With an engine of the device busy, the lanes cannot all start together: they run a flow each (and the
    one that waits for the engine starts later)."""
    r = emu.configure(product="910B", functional=False)
    r.set_device(0)
    host, dev = r.malloc_host(64 * MIB), r.malloc(64 * MIB)
    s = r.create_stream()
    r.memcpy_async(dev, 64 * MIB, host, 64 * MIB, H2D, s)  # (holds an engine)
    offs = [i * MIB for i in range(32)]
    r.memcpy_batch([dev + o for o in offs], [MIB] * 32, [host + o for o in offs], [MIB] * 32, 32, [TO_DEV], [0], 1)
    lanes = r.records()
    lanes = lanes[(lanes["api"] == "aclrtMemcpyBatch") & (lanes["kind"] == "copy")]
    assert len(set(lanes["start"].tolist())) == 2  # (three start at once, the fourth when the copy ends)
