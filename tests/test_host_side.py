"""The host side of the server in the product config: per-engine and per-port host link rates (A3), a CPU's
pooled budget for the devices it serves, the driver round trip of a blocking copy, and the registration
cost that grows with the size registered."""
from __future__ import annotations

import numpy as np
import pytest

import emu
from emu import config
from emu.config import ConfigError
from emu.constants import ACL_MEMCPY_DEVICE_TO_HOST as D2H, ACL_MEMCPY_HOST_TO_DEVICE as H2D

GB = 1e9
MIB = 1 << 20


def _h2d_rates(product, lanes: list[tuple[int, int]], n: int = 512 * MIB) -> list[float]:
    """Payload GB/s of one pinned H2D copy per (device, stream index), all started together."""
    r = emu.configure(product=product, functional=False)
    streams: dict[tuple, int] = {}
    host = None
    jobs = []
    for dev, k in lanes:
        r.set_device(dev)
        host = host or r.malloc_host(n)
        jobs.append((dev, streams.setdefault((dev, k), r.create_stream()), r.malloc(n)))
    for dev, s, d in jobs:
        r.set_device(dev)
        r.memcpy_async(d, n, host, n, H2D, s)
    for dev, s, _ in jobs:
        r.set_device(dev)
        r.synchronize_stream(s)
    rec = r.records()
    rec = rec[rec["api"] == "aclrtMemcpyAsync"]
    return sorted(n / (row["end"] - row["start"]) / GB for row in rec)


# -- A3: what one die reaches alone, with more streams, and with the dies that share its CPU -----------------
def test_a3_one_copy_on_one_die_runs_at_one_engines_rate():
    """simpler PR #1971: 55.3-56.6 GB/s for one pinned copy at a time on one die."""
    hw = config.load("A3").hardware
    (rate,) = _h2d_rates("A3", [(0, 0)])
    assert rate == pytest.approx(hw.host_link.per_engine / GB, rel=0.01)
    assert 55 < rate < 58


def test_a3_more_streams_on_one_die_raise_its_rate_up_to_the_port():
    """hixl performance_en.md: 101.7 GB/s H2D with 4 streams on one die: two engines share the die's port."""
    hw = config.load("A3").hardware
    rates = _h2d_rates("A3", [(0, 0), (0, 1)])
    assert sum(rates) == pytest.approx(hw.host_link.capacity / GB, rel=0.01)
    assert sum(rates) > 1.7 * hw.host_link.per_engine / GB
    four = _h2d_rates("A3", [(0, k) for k in range(4)])
    assert sum(four) == pytest.approx(hw.host_link.capacity / GB, rel=0.01)  # the port, not 4 engines


def test_a3_device_to_host_does_not_gain_from_more_streams():
    """hixl performance_en.md: rD2H 54.2 GB/s with 4 streams, 54.4 GB/s with one."""
    r = emu.configure(product="A3", functional=False)
    r.set_device(0)
    n = 256 * MIB
    h, d = r.malloc_host(n), r.malloc(n)
    streams = [r.create_stream() for _ in range(4)]
    for s in streams:
        r.memcpy_async(h, n, d, n, D2H, s)
    for s in streams:
        r.synchronize_stream(s)
    rec = r.records()
    total = 4 * n / (rec["end"].max() - rec["start"].min()) / GB
    assert total == pytest.approx(r.product.hardware.host_link.capacity_up / GB, rel=0.02)


def test_a3_dies_of_one_cpu_share_its_pooled_budget():
    """CloudMatrix384: about 160 GB/s per Kunpeng CPU, pooled by the 4 dies it serves: two streams on each of
    4 dies would take 4 x 102 GB/s alone; together they get 160 GB/s, 40 per die."""
    hw = config.load("A3").hardware
    assert hw.host.devices_per_cpu == 4
    rates = _h2d_rates("A3", [(d, k) for d in range(4) for k in range(2)])
    assert sum(rates) == pytest.approx(hw.host.bandwidth / GB, rel=0.01)
    other_cpu = _h2d_rates("A3", [(d, k) for d in (0, 4) for k in range(2)])  # dies 0 and 4: two CPUs
    assert sum(other_cpu) == pytest.approx(2 * hw.host_link.capacity / GB, rel=0.01)


# -- 910B: the Kunpeng 920 host -----------------------------------------------------------------------------
def test_910b_default_is_the_kunpeng_920_pcie4_server():
    p = config.load("910B")
    hl = p.hardware.host_link
    assert hl.pcie.gen == 4 and p.hardware.host.cpu == "Kunpeng 920"
    assert "FlagPerf" in p.sources["hardware.host_link.efficiency"]
    gen5 = config.load("910B-Gen5")
    assert gen5.family == p.family and gen5.features == p.features
    assert gen5.hardware.host_link.capacity == pytest.approx(2 * hl.capacity)


def test_eight_910b_devices_at_once_each_keep_their_link():
    """Two Gen4 x16 devices per Kunpeng 920 stay below its budget: eight copies at once run at the solo rate."""
    (solo,) = _h2d_rates("910B", [(0, 0)])
    rates = _h2d_rates("910B", [(d, 0) for d in range(8)])
    assert rates == pytest.approx([solo] * 8, rel=1e-6)


def _config(tmp_path, body: str) -> str:
    path = tmp_path / "mine.toml"
    path.write_text('inherit = "910B"\n[product]\nname = "mine"\n' + body)
    return str(path)


def test_a_tight_cpu_budget_is_shared_by_the_devices_it_serves(tmp_path):
    cfg = _config(tmp_path, '[hardware.host]\ngbps = 30.0\n[hardware.host.source]\ngbps = "A: what-if"\n')
    together = _h2d_rates(cfg, [(0, 0), (1, 0)])  # devices 0 and 1: one CPU
    hl, n = config.load(cfg).hardware.host_link, 512 * MIB
    assert sum(together) == pytest.approx(30.0 * n / hl.wire_bytes(n, read=True), rel=0.01)  # (TLP headers too)
    apart = _h2d_rates(cfg, [(0, 0), (2, 0)])  # devices 0 and 2: two CPUs, each alone under 30 GB/s
    assert apart == pytest.approx([_h2d_rates(cfg, [(0, 0)])[0]] * 2, rel=1e-6)


def test_host_side_fields_are_checked_and_cited(tmp_path):
    with pytest.raises(ConfigError, match=r"hardware\.host\.gbps.*> 0"):
        config.load(_config(tmp_path, '[hardware.host]\ngbps = -1.0\n[hardware.host.source]\ngbps = "A: x"\n'))
    with pytest.raises(ConfigError, match=r"hardware\.host\.source\.pin_gbps"):
        config.load(_config(tmp_path, '[hardware.host]\npin_gbps = 5.0\n[hardware.host.source]\npin_gbps = ""\n'))
    with pytest.raises(ConfigError, match=r"hardware\.host_link\.efficiency"):
        config.load(_config(tmp_path, '[hardware.host_link]\nefficiency = 0\n'
                                      '[hardware.host_link.source]\nefficiency = "A: x"\n'))
    with pytest.raises(ConfigError, match=r"hardware\.staging\.copy_gbps"):
        config.load(_config(tmp_path, '[hardware.staging]\ncopy_gbps = "fast"\n'))


def test_a_cpu_budget_is_on_the_path_only_where_it_can_bind():
    """910B: two Gen4 x16 ports (2 x 26.9 GB/s) cannot fill a Kunpeng 920's 100 GB/s, so the budget is left off
    the path (max-min rates are the same without it, and each copy costs one link less to share); A3: four
    102 GB/s ports can exceed 160 GB/s."""
    b = config.load("910B").hardware
    assert [name for name, _, _ in b.path("h2d", None, 0, 0)[0]] == ["pcie0.down"]
    a3 = config.load("A3").hardware
    assert [name for name, _, _ in a3.path("h2d", None, 5, 0)[0]] == ["hccs5.down", "cpu1.down"]
    assert [name for name, _, _ in a3.path("d2h", 5, None, 0)[0]] == ["hccs5.up", "cpu1.up"]  # 4 x 57 > 160


def test_products_without_a_host_table_have_no_pooled_limit():
    hw = config.load("310P").hardware
    assert hw.host.bandwidth == 0
    links, _ = hw.path("h2d", None, 0, 0)
    assert not any(name.startswith("cpu") for name, _, _ in links)


# -- fixed costs ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("product", ["910B", "A3"])
def test_a_blocking_copy_pays_the_drivers_round_trip(product):
    """simpler PR #2234: a 4-64 B blocking aclrtMemcpy D2H costs 9.5 us on A3, flat in size: the API call,
    the staging setup (a host variable is pageable), the transfer latency and the driver's round trip."""
    r = emu.configure(product=product, functional=True)
    r.set_device(0)
    hw = r.product.hardware
    d = r.malloc(64)
    out = np.zeros(64, dtype=np.uint8)
    h = r.register_host(out)
    costs = []
    for n in (4, 64):
        c0 = r.clock
        r.memcpy(h, n, d, n, D2H)
        costs.append(r.clock - c0)
    fixed = hw.call_overhead + hw.staging.setup + hw.latency("d2h") + hw.sync_copy
    assert costs == pytest.approx([fixed, fixed], rel=1e-3)
    if product == "A3":
        assert costs[0] == pytest.approx(9.5e-6, rel=0.05)


@pytest.mark.parametrize("size", [4096, 1 << 20, 1 << 30])
def test_host_registration_cost_grows_with_the_size(size):
    r = emu.configure(product="910B", functional=False)
    r.set_device(0)
    hw = r.product.hardware
    buf = np.empty(size, dtype=np.uint8)
    ptr = r.register_host(buf)
    c0 = r.clock
    r.host_register(ptr, size, 0)
    assert r.clock - c0 == pytest.approx(hw.call_overhead + hw.host.register + size / hw.host.pin_bandwidth,
                                         rel=1e-9)
    assert hw.host.register_time(size) > hw.host.register_time(size // 2)
