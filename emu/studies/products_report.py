"""The product configs printed: one table side by side, and per product the source of every number.

Everything here reads `products.products` rows (plain data) and nothing else.
"""
from __future__ import annotations

import shutil
import textwrap

from .common import format_table, human_bytes

RUNTIME_URL = "https://github.com/hicann/runtime/blob/681ef7610df13c8128982901142a2c869ddbb53e/"
COLUMNS = [("product", "product"), ("family", "family"), ("mode", "mode"), ("devices", "devices"),
           ("memory", "memory/device"), ("memory_gbps", "mem GB/s"), ("host_link", "host link"), ("host", "host side"),
           ("device_links", "device links"), ("engines", "SDMA"), ("unsupported", "APIs unsupported")]


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


def report(rows: list[dict], sources: bool = False) -> str:
    """What `acl-emu products` prints: the table, the APIs each product lacks, and with `sources` every cited
    field of each product with its value and source."""
    table = [{**r, "unsupported": len(r["unsupported"]), "memory_gbps": r["memory_gbps"]} for r in rows]
    lines = [format_table(table, COLUMNS)]
    for r in rows:
        if r["unsupported"]:
            lines += ["", f"{r['product']} does not support: {', '.join(r['unsupported'])}"]
    if sources:
        for r in rows:
            lines += ["", f"{r['product']} ({r['config']}):", sources_table(r["sources"], r["values"])]
        lines += ["", "C confirmed, 3P third party, A assumed, fit fitted to measurements (acl-emu validate); "
                      f"'hicann/runtime <path>' is {RUNTIME_URL}<path>; docs/... are pages of acl-emu's repository"]
    else:
        lines += ["", "Every number carries its source: acl-emu products --sources "
                      "(C confirmed, 3P third party, A assumed, fit fitted to measurements: acl-emu validate)"]
    return "\n".join(lines)
