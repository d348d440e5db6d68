"""PCIe effective bandwidth (models.pcie): the pcie-bench formulas against the table of
docs/hardware.md#pcie-efficiency-model."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emu.models import pcie
from emu.models.pcie import (PcieLink, dll_efficiency, effective_bandwidth, raw_bandwidth, read_request_bytes,
                         read_wire_bytes, tlp_bandwidth, write_wire_bytes)

GB = 1e9
LARGE = 1 << 30  # a transfer large enough that per-transfer effects vanish

# docs/hardware.md#pcie-efficiency-model: x16 raw rates and write limits (GB/s) at MPS 128 / 256 / 512.
RAW_X16 = {3: 15.75, 4: 31.5, 5: 63.0}
WRITE_LIMITS_X16 = {
    (3, 128): 11.8, (3, 256): 13.0, (3, 512): 13.7,
    (4, 128): 23.5, (4, 256): 26.0, (4, 512): 27.4,
    (5, 128): 47.0, (5, 256): 52.0, (5, 512): 54.8,
}
GT = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}


# -- raw rate ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gen", [3, 4, 5])
def test_raw_bandwidth_x16_matches_table(gen):
    """GT/s x 128/130 x 16 lanes / 8. The table prints 63.0 for Gen5 (exactly 63.015), so the table
    value is checked to its printed precision and the formula exactly."""
    got = raw_bandwidth(PcieLink(gen=gen, lanes=16)) / GB
    assert got == pytest.approx(GT[gen] * 128 / 130 * 16 / 8, rel=1e-12)
    digits = len(str(RAW_X16[gen]).split(".")[1])
    assert abs(got - RAW_X16[gen]) <= 0.5 * 10 ** -digits + 1e-9
    if gen < 5:
        assert got == pytest.approx(RAW_X16[gen], abs=0.01)


@pytest.mark.parametrize("gen, expected", [(1, 4.0), (2, 8.0)])
def test_raw_bandwidth_gen1_gen2_use_8b10b(gen, expected):
    assert raw_bandwidth(PcieLink(gen=gen, lanes=16)) / GB == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16])
def test_raw_bandwidth_scales_with_lanes(lanes):
    x16 = raw_bandwidth(PcieLink(gen=4, lanes=16))
    assert raw_bandwidth(PcieLink(gen=4, lanes=lanes)) == pytest.approx(x16 * lanes / 16, rel=1e-12)


def test_dll_efficiency_skip_ordered_sets_only_from_gen3():
    """Gen1-2 pay ACK/FC DLLPs only; Gen3+ also lose 4 symbols in 1538 to SKIP ordered sets."""
    g2, g3 = PcieLink(gen=2, mps=256), PcieLink(gen=3, mps=256)
    dllp = 1 - 2 * pcie.DLLP_BYTES / pcie.ACK_LIMIT_X16[256]
    assert dll_efficiency(g2) == pytest.approx(dllp, rel=1e-12)
    assert dll_efficiency(g3) == pytest.approx(dllp * (1 - 4 / 1538), rel=1e-12)
    assert tlp_bandwidth(g3) == pytest.approx(raw_bandwidth(g3) * dll_efficiency(g3), rel=1e-12)


# -- the table of limits ----------------------------------------------------------------------------------
@pytest.mark.parametrize("gen, mps", sorted(WRITE_LIMITS_X16))
def test_large_write_effective_bandwidth_matches_table(gen, mps):
    link = PcieLink(gen=gen, lanes=16, mps=mps)
    got = effective_bandwidth(link, LARGE) / GB
    assert got == pytest.approx(WRITE_LIMITS_X16[(gen, mps)], abs=0.1)
    # and it is the closed form: TLP rate x payload share of a full TLP
    assert got * GB == pytest.approx(tlp_bandwidth(link) * mps / (mps + pcie.MWR_OVERHEAD), rel=1e-9)


@pytest.mark.parametrize("gen", [3, 4, 5])
def test_larger_mps_is_faster(gen):
    rates = [effective_bandwidth(PcieLink(gen=gen, mps=m), LARGE) for m in (128, 256, 512, 1024, 2048, 4096)]
    assert rates == sorted(rates)
    assert len(set(rates)) == len(rates)


def test_each_generation_doubles_the_rate():
    """Gen3 -> Gen4 -> Gen5 double GT/s with the same encoding and DLL overheads."""
    for mps in (128, 256, 512):
        r3, r4, r5 = (effective_bandwidth(PcieLink(gen=g, mps=mps), LARGE) for g in (3, 4, 5))
        assert r4 == pytest.approx(2 * r3, rel=1e-12)
        assert r5 == pytest.approx(2 * r4, rel=1e-12)


# -- never above the wire ---------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(size=st.integers(min_value=1, max_value=1 << 30),
       gen=st.sampled_from([1, 2, 3, 4, 5, 6]),
       lanes=st.sampled_from([1, 2, 4, 8, 16, 32]),
       mps=st.sampled_from(sorted(pcie.ACK_LIMIT_X16)),
       read=st.booleans())
def test_effective_bandwidth_never_exceeds_raw(size, gen, lanes, mps, read):
    link = PcieLink(gen=gen, lanes=lanes, mps=mps)
    eff = effective_bandwidth(link, size, read=read)
    assert 0 < eff < tlp_bandwidth(link) < raw_bandwidth(link)
    # payload share of the wire bytes, exactly
    wire = read_wire_bytes(link, size) if read else write_wire_bytes(link, size)
    assert eff == pytest.approx(tlp_bandwidth(link) * size / wire, rel=1e-12)
    assert wire > size


# -- TLP overheads ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mps", [128, 256, 512])
def test_small_transfers_pay_a_header_each(mps):
    link = PcieLink(gen=5, mps=mps)
    assert write_wire_bytes(link, 64) == 64 + pcie.MWR_OVERHEAD
    assert write_wire_bytes(link, 1) == 1 + pcie.MWR_OVERHEAD
    assert write_wire_bytes(link, mps) == mps + pcie.MWR_OVERHEAD
    assert write_wire_bytes(link, mps + 1) == mps + 1 + 2 * pcie.MWR_OVERHEAD
    mib = 1 << 20
    assert write_wire_bytes(link, mib) == mib + (mib // mps) * pcie.MWR_OVERHEAD
    small, large = effective_bandwidth(link, 64), effective_bandwidth(link, mib)
    assert small < large
    assert small == pytest.approx(tlp_bandwidth(link) * 64 / (64 + pcie.MWR_OVERHEAD), rel=1e-12)


@pytest.mark.parametrize("size", [1, 64, 256, 4096, 1 << 20, (1 << 30) + 3])
def test_read_completions_cost_less_than_write_tlps(size):
    """Completions carry a 3DW header (20 B with framing and LCRC), writes a 4DW one (24 B)."""
    link = PcieLink(gen=4, mps=256)
    tlps = math.ceil(size / 256)
    assert read_wire_bytes(link, size) == size + tlps * pcie.CPL_OVERHEAD
    assert write_wire_bytes(link, size) == size + tlps * pcie.MWR_OVERHEAD
    assert pcie.CPL_OVERHEAD < pcie.MWR_OVERHEAD
    assert read_wire_bytes(link, size) < write_wire_bytes(link, size)
    assert effective_bandwidth(link, size, read=True) > effective_bandwidth(link, size, read=False)


@pytest.mark.parametrize("mrrs, size, requests", [
    (512, 1, 1), (512, 512, 1), (512, 513, 2), (512, 4096, 8),
    (128, 4096, 32), (4096, 4096, 1), (4096, 1 << 20, 256),
])
def test_read_requests_per_mrrs(mrrs, size, requests):
    link = PcieLink(gen=4, mps=256, mrrs=mrrs)
    assert read_request_bytes(link, size) == requests * pcie.MRD_BYTES


def test_read_requests_do_not_depend_on_mps():
    a, b = PcieLink(gen=4, mps=128, mrrs=512), PcieLink(gen=4, mps=512, mrrs=512)
    assert read_request_bytes(a, 1 << 20) == read_request_bytes(b, 1 << 20) == (1 << 20) // 512 * pcie.MRD_BYTES


# -- validation -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    dict(gen=0), dict(gen=7), dict(gen=-1),
    dict(gen=4, lanes=0), dict(gen=4, lanes=3), dict(gen=4, lanes=64),
    dict(gen=4, mps=0), dict(gen=4, mps=100), dict(gen=4, mps=8192),
    dict(gen=4, mrrs=64), dict(gen=4, mrrs=8192),
])
def test_bad_link_is_rejected(kwargs):
    with pytest.raises(ValueError):
        PcieLink(**kwargs)


def test_link_record_is_frozen():
    link = PcieLink(gen=5)
    with pytest.raises(Exception):
        link.gen = 4  # type: ignore[misc]
    assert (link.lanes, link.mps, link.mrrs) == (16, 256, 512)
