"""Multi-device traffic: every device swaps KV-cache blocks with the host while the devices exchange with
their peers, all at once. How long does the step take, and which link is the bottleneck?

One step, on a fresh timing-only runtime: each of `devices` devices brings `blocks` KV blocks of
`block_bytes` in from page-locked host memory (H2D) and writes as many out (D2H), dealt over `streams`
streams, while it sends `peer_bytes` to the next device of a ring (peer access enabled). The step ends when
every device is done. Each run is independent and deterministic, so a grid of them runs on `sweep.execute`
(serially or on Dask) and gives the same table either way.

    from emu.studies import sweep, traffic
    runs = [dict(product="A3", devices=16, block_bytes=2 << 20, blocks=32, peer_bytes=256 << 20, streams=2)]
    rows = sweep.execute(traffic.run_one, runs)

Row: the parameters, step_ms, issue_ms (the host thread's time to issue every copy, call after call),
host_gbps (every device's host bytes over the step), peer_gbps (ring bytes over the step), and the busiest
link and its share of the step (`busiest_link`, `busiest_util`).
"""
from __future__ import annotations

from .. import config
from ..constants import D2D, D2H, H2D
from ..runtime import queries

PARAMETERS = ("product", "devices", "block_bytes", "blocks", "peer_bytes", "streams")


def run_one(params: dict) -> dict:
    """One step with these parameters (PARAMETERS); returns the parameters and the step's metrics."""
    from ..runtime import Runtime

    p = config.load(params["product"])
    n, block, blocks = params["devices"], params["block_bytes"], params["blocks"]
    peer, nstreams = params["peer_bytes"], params["streams"]
    if not 1 <= n <= p.device_count:
        raise ValueError(f"{p.name} has {p.device_count} devices, not {n}")
    if block <= 0 or blocks <= 0 or nstreams <= 0 or peer < 0:
        raise ValueError("block_bytes, blocks and streams must be positive and peer_bytes >= 0")
    rt = Runtime(p, functional=False)
    plan = []
    for d in range(n):
        rt.set_device(d)
        nxt = (d + 1) % n
        if peer and n > 1:
            rt.device_enable_peer_access(nxt, 0)
        streams = [rt.create_stream() for _ in range(nstreams)]
        ring = rt.create_stream()
        host_in, host_out = rt.malloc_host(block * blocks), rt.malloc_host(block * blocks)
        dev_in, dev_out = rt.malloc(block * blocks), rt.malloc(block * blocks)
        out = rt.malloc(max(peer, 1))
        plan.append((d, streams, ring, host_in, host_out, dev_in, dev_out, out))
    inboxes = {}
    for d in range(n):
        rt.set_device(d)
        inboxes[d] = rt.malloc(max(peer, 1))
    t0 = max(rt.clock, 0.0)
    for d, streams, ring, host_in, host_out, dev_in, dev_out, out in plan:
        rt.set_device(d)
        for b in range(blocks):
            s = streams[b % nstreams]
            rt.memcpy_async(dev_in + b * block, block, host_in + b * block, block, H2D, s)
            rt.memcpy_async(host_out + b * block, block, dev_out + b * block, block, D2H, s)
        if peer and n > 1:
            dst = inboxes[(d + 1) % n]
            rt.memcpy_async(dst, peer, out, peer, D2D, ring)
    issued = rt.clock - t0  # the host thread's time to issue every copy (one thread, call by call)
    for d in range(n):
        rt.set_device(d)
        rt.synchronize_device()
    step = rt.record_totals()["end"] - t0
    usage = queries.link_usage(rt)
    utils = {name: u["bytes"] / (u["capacity"] * step) for name, u in usage.items() if step > 0 and u["capacity"]}
    busiest = max(utils, key=utils.get) if utils else ""
    host_bytes = 2 * n * blocks * block
    ring_bytes = n * peer if n > 1 else 0
    return {**{k: params[k] for k in PARAMETERS}, "step_ms": step * 1e3, "issue_ms": issued * 1e3,
            "host_gbps": host_bytes / step / 1e9 if step > 0 else 0.0,
            "peer_gbps": ring_bytes / step / 1e9 if step > 0 else 0.0,
            "busiest_link": busiest, "busiest_util": utils.get(busiest, 0.0)}
