"""The hardware a product is built from, as the timing model sees it.

A frozen record plus pure functions of it. `models` knows nothing of ACL: the
product loader in `emu.config` builds a `Hardware` from a config's [hardware]
section and hands it over.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Routes a transfer can take. Each is a (bandwidth, latency) pair for now; the
# flow-level link model refines what a route crosses.
ROUTES = ("h2d", "d2h", "d2d", "p2p", "h2h")


@dataclass(frozen=True)
class Route:
    bandwidth: float  # bytes per second, effective
    latency: float  # seconds, fixed cost per transfer

    def duration(self, nbytes: int) -> float:
        return self.latency + nbytes / self.bandwidth


@dataclass(frozen=True)
class Hardware:
    routes: dict[str, Route]
    engines_per_device: int  # DMA (SDMA) engines a device runs copies on concurrently
    call_overhead: float  # seconds of host time per API call
    host_memcpy_bandwidth: float  # bytes/s of one CPU thread copying host memory
    host_memset_bandwidth: float  # bytes/s of one CPU thread filling host memory
    device_fill_bandwidth: float  # bytes/s of a device memset (writes HBM)
    memory_bandwidth: float  # bytes/s of device memory (HBM or DDR), read + write
    peak_flops: float  # FLOP/s a kernel can reach at best
    extra: dict = field(default_factory=dict)

    def route(self, name: str) -> Route:
        return self.routes[name]

    @classmethod
    def from_dict(cls, d: dict) -> "Hardware":
        """Build from a config's [hardware] table (units: GB/s = 1e9 B/s, us)."""
        routes = {}
        for name in ROUTES:
            r = d["routes"][name]
            routes[name] = Route(bandwidth=float(r["gbps"]) * 1e9, latency=float(r["latency_us"]) * 1e-6)
        return cls(
            routes=routes,
            engines_per_device=int(d["engines_per_device"]),
            call_overhead=float(d["call_overhead_us"]) * 1e-6,
            host_memcpy_bandwidth=float(d["host_memcpy_gbps"]) * 1e9,
            host_memset_bandwidth=float(d["host_memset_gbps"]) * 1e9,
            device_fill_bandwidth=float(d["device_fill_gbps"]) * 1e9,
            memory_bandwidth=float(d["memory_gbps"]) * 1e9,
            peak_flops=float(d["peak_tflops"]) * 1e12,
        )

    def kernel_duration(self, nbytes: float = 0, flops: float = 0) -> float:
        """Roofline: a kernel takes as long as its memory traffic or its arithmetic, whichever is longer."""
        return max(nbytes / self.memory_bandwidth, flops / self.peak_flops)
