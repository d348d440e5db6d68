"""`acl-emu products`: the product configs side by side, and where each number comes from."""
from __future__ import annotations

import json

from .. import config
from .common import format_table, human_bytes


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
    if hw.pair_link is not None:
        links.append(f"{hw.pair_link.kind.upper()} pair {hw.pair_link.bandwidth / 1e9:g} GB/s")
    if hw.peer_link is not None:
        links.append(f"{hw.peer_link.kind.upper()} {hw.peer_link.topology} {hw.peer_link.bandwidth / 1e9:g} GB/s")
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
        "config": str(p.path),
    }


def products(names: list[str] | None = None) -> list[dict]:
    return [describe(config.load(n)) for n in (names or config.available())]


def main(args) -> int:
    rows = products(args.products)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = [{**r, "unsupported": len(r["unsupported"]), "memory_gbps": r["memory_gbps"]} for r in rows]
    print(format_table(table, [("product", "product"), ("family", "family"), ("mode", "mode"),
                               ("devices", "devices"), ("memory", "memory/device"), ("memory_gbps", "mem GB/s"),
                               ("host_link", "host link"), ("host", "host side"),
                               ("device_links", "device links"),
                               ("engines", "SDMA"), ("unsupported", "APIs unsupported")]))
    for r in rows:
        if r["unsupported"]:
            print(f"\n{r['product']} does not support: {', '.join(r['unsupported'])}")
    if args.sources:
        for r in rows:
            print(f"\n{r['product']} ({r['config']}):")
            print(format_table([{"field": k, "source": v} for k, v in sorted(r["sources"].items())]))
    else:
        print("\nEvery number carries its source: acl-emu products --sources "
              "(C confirmed, 3P third party, A assumed, fit fitted to measurements: acl-emu validate)")
    return 0


def _products_arg(text: str) -> list[str]:
    """Product names or config paths, each one loading."""
    import argparse

    from ..cli import product_arg
    from .common import products_arg

    names = products_arg(text)
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a comma-separated list of products")
    return [product_arg(n) for n in names]


def add_parser(sub) -> None:
    p = sub.add_parser("products", help="the product configs and where their numbers come from")
    p.add_argument("--products", type=_products_arg, help="comma-separated product names (default: all)")
    p.add_argument("--sources", action="store_true", help="list the source of every number")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=main)
