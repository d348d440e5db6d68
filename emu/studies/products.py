"""`acl-emu products`: the product configs side by side, and where each number comes from.

This module describes the configs as plain data; `products_report` prints them (the table, the sources).
"""
from __future__ import annotations

from .. import config
from .common import human_bytes


def describe(p: config.Product) -> dict:
    hw = p.hardware
    hl = hw.host_link
    host = (f"PCIe Gen{hl.pcie.gen} x{hl.pcie.lanes} MPS {hl.pcie.mps}" if hl.pcie is not None else hl.kind.upper())
    host += f" {hl.capacity / 1e9:.1f} GB/s" + (f" (shared by {hl.shared_by})" if hl.shared_by > 1 else "")
    if hl.capacity_up != hl.capacity:
        host += f", up {hl.capacity_up / 1e9:.1f}"
    if hl.per_engine:
        host += f", {hl.per_engine / 1e9:g} per engine"
    h = hw.host
    cpu = (f"{h.cpu}, {h.devices_per_cpu} dev/CPU" + (f", {h.bandwidth / 1e9:g} GB/s pooled" if h.bandwidth else "")
           if h.bandwidth or h.cpu != "unknown" else "not described (no pooled limit)")
    links = []
    for link, what in ((hw.pair_link, "pair"), (hw.peer_link, hw.peer_link and hw.peer_link.topology)):
        if link is not None:
            engine = f", {link.per_engine / 1e9:g} per engine" if link.per_engine else ""
            links.append(f"{link.kind.upper()} {what} {link.bandwidth / 1e9:g} GB/s{engine}")
    groups = [sorted(g) for g in p.peer_groups]
    return {
        "product": p.name,
        "title": p.title,
        "family": p.family,
        "mode": p.deployment,
        "devices": p.device_count,
        "memory": f"{human_bytes(p.memory_bytes)} {p.memory_kind}",
        "memory_gbps": hw.memory_bandwidth / 1e9,
        "host_link": host,
        "host": cpu,
        "device_links": ", ".join(links) or "through the host",
        "peer_groups": groups,
        "engines": hw.engines_per_device,
        "unsupported": sorted(p.unsupported),
        "features": sorted(p.features),
        "sources": p.sources,
        "values": {k: p.values.get(k) for k in p.sources},
        "config": str(p.path),
    }


def products(names: list[str] | None = None) -> list[dict]:
    return [describe(config.load(n)) for n in (names or config.available())]
