"""`acl-emu products`: the product configs side by side, and where each number comes from."""
from __future__ import annotations

import json
import shutil
import textwrap

from .. import config
from .common import format_table, human_bytes

RUNTIME_URL = "https://github.com/hicann/runtime/blob/681ef7610df13c8128982901142a2c869ddbb53e/"


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
        "values": {k: p.values.get(k) for k in p.sources},
        "config": str(p.path),
    }


def show_value(field: str, value) -> str:
    """A config value as the config gives it, made readable: a byte count in binary units when it is a whole
    number of them (68719476736 -> 64 GiB), a list comma-separated, other numbers plain."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int) and field.endswith("_bytes"):
        return human_bytes(value) if value >= 1024 and value % 1024 == 0 else f"{value} B"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ", ".join(show_value(field, v) if not isinstance(v, list) else "[" + show_value(field, v) + "]"
                         for v in value) or "(none)"
    return str(value)


def sources_table(sources: dict, values: dict, width: int | None = None) -> str:
    """field, value and source of every cited field, the value and source wrapped to fit `width` columns."""
    width = width or max(80, shutil.get_terminal_size((120, 24)).columns)
    rows = [(k, show_value(k, values.get(k)), v) for k, v in sorted(sources.items())]
    fw = max(len("field"), *(len(f) for f, _, _ in rows))
    vw = min(max(len("value"), *(len(v) for _, v, _ in rows)), 24)
    sw = max(30, width - fw - vw - 4)
    out = [f"{'field'.ljust(fw)}  {'value'.ljust(vw)}  source", f"{'-' * fw}  {'-' * vw}  {'-' * min(sw, 40)}"]
    for f, v, src in rows:
        vl = textwrap.wrap(v, vw, break_on_hyphens=False) or [""]
        sl = textwrap.wrap(src, sw, break_on_hyphens=False, break_long_words=False) or [""]
        for i in range(max(len(vl), len(sl))):
            out.append(f"{(f if i == 0 else '').ljust(fw)}  {(vl[i] if i < len(vl) else '').ljust(vw)}  "
                       f"{sl[i] if i < len(sl) else ''}".rstrip())
    return "\n".join(out)


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
            print(sources_table(r["sources"], r["values"]))
        print("\nC confirmed, 3P third party, A assumed, fit fitted to measurements (acl-emu validate); "
              f"'hicann/runtime <path>' is {RUNTIME_URL}<path>; docs/... are pages of acl-emu's repository")
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
