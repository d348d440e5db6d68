"""The routes the timing model times, as the validation table and every result name them.

A route is one kind of work whose time rests on its own config fields: a host-link copy of page-locked or
pageable memory, a blocking or queued small copy (fixed costs), an on-chip copy, a peer copy over each kind
of device link, the 2-D, batch and fill paths, host registration, kernel launch and events. Each product
config lists the routes no independent public measurement checks (`[validation] unvalidated`); results that
depend on one say so (`unvalidated`). `acl-emu validate` reports the independent rows route by route.
"""
from __future__ import annotations

SMALL = 64 << 10  # a copy of at most this many bytes is timed by its fixed costs (its route is a "small" one)

ROUTES = {
    "h2d": "host to device, page-locked (pinned or registered) host memory",
    "d2h": "device to host, page-locked (pinned or registered) host memory",
    "h2d-pageable": "host to device from pageable memory, through the driver's staging buffers",
    "d2h-pageable": "device to host into pageable memory, through the driver's staging buffers",
    "blocking-small": "a copy of at most 64 KiB the host waits for (blocking, or async and synchronized): the calls, "
                      "the driver's round trip, the transfer latency",
    "async-small": "queued copies of at most 64 KiB: the per-task fixed cost of the DMA",
    "d2d": "device to device on one device (on-chip SDMA)",
    "p2p-hccs": "device to device over an HCCS link (910B: within a server's mesh)",
    "p2p-sio": "device to device between the two dies of one package (A3: SIO)",
    "p2p-ub": "device to device between packages over the switched fabric (A3, 950: UB / HCCS)",
    "p2p-pcie": "device to device through the host's PCIe root complex",
    "memcpy2d": "2-D copies (row descriptors)",
    "batch": "batch copies (aclrtMemcpyBatch family)",
    "memset": "device fills (aclrtMemset family)",
    "register": "host memory registration (aclrtHostRegister)",
    "launch": "kernel launch and dispatch on the device",
    "event": "event record and stream wait (cross-stream ordering)",
}

_PEER = {"hccs": "p2p-hccs", "sio": "p2p-sio", "ub": "p2p-ub", "pcie-p2p": "p2p-pcie"}


def of_copy(hw_route: str, memory: str = "pinned", nbytes: int | None = None, blocking: bool = False) -> str:
    """The route of one copy: `hw_route` is the hardware model's route of its ends (`Hardware.route`: "h2d",
    "d2h", "sdma", "hccs", "sio", "ub", "pcie-p2p"), `memory` the host memory's kind ("pinned", "registered",
    "pageable" or "device"). A copy of at most SMALL bytes is a small one, whatever its ends: one the host
    waits for (blocking, or of pageable memory, which the driver copies before the call returns) or a queued
    one."""
    if nbytes is not None and nbytes <= SMALL:
        return "blocking-small" if blocking or memory == "pageable" else "async-small"
    if hw_route in ("h2d", "d2h"):
        return hw_route + "-pageable" if memory == "pageable" else hw_route
    if hw_route == "sdma":
        return "d2d"
    if hw_route in _PEER:
        return _PEER[hw_route]
    raise ValueError(f"route {hw_route!r} is not one the model times (host-to-host copies are the CPU's)")


def of_product(product) -> list[str]:
    """The routes a product has: every host and on-device route, its peer routes (those some pair of its
    devices takes), 2-D copies unless refused, batch copies and registration where the product has them."""
    hw = product.hardware
    out = ["h2d", "d2h", "h2d-pageable", "d2h-pageable", "blocking-small", "async-small", "d2d"]
    if product.has("p2p"):
        n = product.device_count
        kinds = {hw.route(a, b) for a in range(n) for b in range(n) if a != b}
        out += [_PEER[k] for k in ("hccs", "sio", "ub", "pcie-p2p") if k in kinds]
    if not product.no_2d_copy:
        out.append("memcpy2d")
    if product.has("batch_copy"):
        out.append("batch")
    out.append("memset")
    if product.has("host_register"):
        out.append("register")
    return out + ["launch", "event"]


def unvalidated(product, routes) -> list[str]:
    """Those of `routes` that no independent measurement checks on `product`, in ROUTES order."""
    used = set(routes)
    return [r for r in ROUTES if r in used and r in product.unvalidated]


def note(product, routes) -> str:
    """One line for a result that depends on `routes`: which of them are unvalidated on this product."""
    missing = unvalidated(product, routes)
    if not missing:
        return f"every route this result depends on is checked against an independent measurement on {product.name}"
    return (f"unvalidated on {product.name} (no independent measurement; see acl-emu validate): "
            + ", ".join(missing))
