"""The hardware a product is built from, as the timing model sees it.

Frozen records plus pure functions of them. `models` knows nothing of ACL: the
product loader in `emu.config` builds a `Hardware` from a config's [hardware]
section and hands it over.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

from .pcie import PcieLink, read_wire_bytes, tlp_bandwidth, write_wire_bytes

HOST = None  # the host end of a route


class Tlp(NamedTuple):
    """What PCIe adds to a route's payload: a TLP of at most `payload` bytes carries `overhead` bytes more."""
    payload: int
    overhead: int


class Plan(NamedTuple):
    """The plan of the copies between two ends (`Hardware.plan`): their `route`; `spec`, the links they cross,
    ((link name, capacity, weight), ...); `latency`, the fixed cost of each DMA task; `tlp`, where the route
    crosses the PCIe host link, else None."""
    route: str
    spec: tuple
    latency: float
    tlp: Tlp | None


@dataclass(frozen=True)
class HostLink:
    """How the host reaches a device: PCIe (pcie-bench efficiency) or a link given by its effective rate."""
    kind: str  # "pcie", "hccs" or "ub"
    latency: float  # seconds per transfer (doorbell, descriptor fetch, completion)
    pcie: PcieLink | None = None
    bandwidth: float = 0.0  # bytes/s per direction when not PCIe
    shared_by: int = 1  # devices behind one physical link (Atlas 300I Duo: 2 chips, one x16)
    efficiency: float = 1.0  # PCIe: share of the pcie-bench rate a DMA reaches (root complex, DMA engine)
    per_engine: float = 0.0  # bytes/s one DMA engine moves over this link; 0: no limit below the port's
    bandwidth_up: float = 0.0  # bytes/s device to host when it differs from `bandwidth` (not PCIe)
    read_efficiency: float = 0.0  # PCIe: the share host-to-device copies (DMA reads) reach; 0: `efficiency`

    @property
    def capacity(self) -> float:
        """Wire bytes per second, host to device: on PCIe the device reads host memory (read_efficiency)."""
        if self.pcie is not None:
            return tlp_bandwidth(self.pcie) * (self.read_efficiency or self.efficiency)
        return self.bandwidth * self.efficiency

    @property
    def capacity_up(self) -> float:
        """Wire bytes per second, device to host: on PCIe the device writes host memory (efficiency)."""
        if self.pcie is not None:
            return tlp_bandwidth(self.pcie) * self.efficiency
        return (self.bandwidth_up or self.bandwidth) * self.efficiency

    def wire_bytes(self, size: int, read: bool) -> float:
        if self.pcie is None:
            return float(size)
        return float(read_wire_bytes(self.pcie, size) if read else write_wire_bytes(self.pcie, size))


@dataclass(frozen=True)
class Host:
    """The host side of the server: which CPU serves which devices, and what it can carry at once.

    `bandwidth` is one CPU's budget for device traffic, per direction, pooled by the `devices_per_cpu`
    devices it serves (its memory, root complex or UB ports, whichever binds first); 0: no limit
    beyond each device's own link. Registering host memory costs `register` seconds plus the size
    over `pin_bandwidth` (the driver pins and maps every page).
    """
    cpu: str = "unknown"
    devices_per_cpu: int = 8
    bandwidth: float = 0.0
    register: float = 0.0
    pin_bandwidth: float = float("inf")

    def cpu_of(self, device: int) -> int:
        return device // self.devices_per_cpu

    def register_time(self, size: int) -> float:
        return self.register + size / self.pin_bandwidth


@dataclass(frozen=True)
class DeviceLink:
    """A device-to-device interconnect.

    topology "mesh": a dedicated link per ordered pair (HCCS full mesh); "switch": each device
    has one port out and one in, shared by all its peers (UB, an HCCS switch). `per_engine`: what one
    copy (one DMA engine) moves over it at most, below the link's own rate (0: no such limit).
    """
    kind: str  # "hccs", "ub", "sio"
    bandwidth: float  # bytes/s per direction
    latency: float
    topology: str = "mesh"
    per_engine: float = 0.0


@dataclass(frozen=True)
class Staging:
    """The driver's pipeline for pageable host memory: CPU memcpy into pinned chunks, DMA from them."""
    chunk_bytes: int
    buffers: int
    setup: float  # seconds of fixed cost per pageable copy (pinning, bookkeeping)
    copy_bandwidth: float  # bytes/s the driver fills (or drains) staging chunks at


@dataclass(frozen=True)
class Hardware:
    """What the timing model knows of one server: its devices (engines, compute, memory), the host and its
    link to each device, the links between devices and the staging pipeline, in SI units (seconds, bytes
    per second). Built from a product config (`emu.config.load(...).hardware`); frozen, so a what-if is a
    new record (`dataclasses.replace`), never an edit. `route` and `path` say which links a copy crosses;
    `alone` is the closed-form time of a transfer with the machine to itself."""

    num_devices: int
    engines_per_device: int  # SDMA engines a device runs copies on concurrently
    call_overhead: float  # seconds of host time per API call
    host_memcpy_bandwidth: float  # bytes/s of one CPU thread copying host memory
    host_memset_bandwidth: float  # bytes/s of one CPU thread filling host memory
    memory_bandwidth: float  # bytes/s of device memory (HBM or DDR), reads + writes
    peak_flops: float  # FLOP/s a kernel reaches at best
    sdma_latency: float  # seconds of fixed cost of an on-chip copy or fill
    row_overhead: float  # seconds per row descriptor of a 2D copy
    kernel_slots: int  # kernels a device runs at once
    host_link: HostLink
    staging: Staging
    sync_copy: float = 0.0  # seconds a blocking copy adds: the driver's round trip (submit, wait, wake)
    sync_wait: float = 0.0  # seconds a synchronize adds when it waits: the host is woken after the completion
    copy_submit: float = 0.0  # host seconds an async copy's enqueue adds to its call (building the task)
    launch: float = 0.0  # host seconds a kernel launch adds to its call (arguments, the task)
    kernel_dispatch: float = 0.0  # device seconds a kernel holds its AI cores before its work starts
    host: Host = field(default_factory=Host)
    peer_link: DeviceLink | None = None  # between devices of one peer group
    pair_link: DeviceLink | None = None  # between the two dies of a package (SIO)
    peer_groups: tuple = ()

    def kernel_duration(self, nbytes: float = 0, flops: float = 0) -> float:
        """Roofline: a kernel takes as long as its memory traffic or its arithmetic, whichever is longer."""
        return max(nbytes / self.memory_bandwidth, flops / self.peak_flops)

    @cached_property
    def _peers(self) -> frozenset:
        """Every (a, b) of devices in one peer group (`route` asks on every copy)."""
        return frozenset((a, b) for g in self.peer_groups for a in g for b in g)

    def same_group(self, a: int, b: int) -> bool:
        return (a, b) in self._peers

    @cached_property
    def _plans(self) -> dict:
        return {}  # (fill, src, dst) -> `plan`

    def plan(self, fill: bool, src: int | None, dst: int | None) -> Plan:
        """The `Plan` (route, ((link name, capacity, weight), ...), latency, TLP) of the copies between two ends
        (`fill`: of the fills of `dst`'s memory), from which each machine builds its route (`Machine._path`);
        worked out once per Hardware. TLP: (payload, overhead) per TLP where the route crosses the PCIe host
        link, else None."""
        key = (fill, src, dst)
        plan = self._plans.get(key)
        if plan is None:
            route = "fill" if fill else self.route(src, dst)
            if route == "h2h":
                plan = Plan(route, (), 0.0, None)
            else:
                links, _ = self.path(route, src, dst, 0)
                tlp = None
                if self.host_link.pcie is not None and route in ("h2d", "d2h", "pcie-p2p"):
                    p = self.host_link.pcie
                    tlp = Tlp(p.mps, self.host_link.wire_bytes(p.mps, read=route == "h2d") - p.mps)
                plan = Plan(route, tuple(links), self.sdma_latency if fill else self.latency(route), tlp)
            self._plans[key] = plan
        return plan

    def route(self, src: int | None, dst: int | None) -> str:
        """The path a copy between two ends takes (None is the host), as the runtime would choose it."""
        if src is HOST and dst is HOST:
            return "h2h"
        if src is HOST:
            return "h2d"
        if dst is HOST:
            return "d2h"
        if src == dst:
            return "sdma"
        if self.pair_link is not None and src // 2 == dst // 2:
            return "sio"
        if self.peer_link is not None and self.same_group(src, dst):
            return self.peer_link.kind
        return "pcie-p2p"  # through the host's root complex

    def path(self, route: str, src: int | None, dst: int | None, nbytes: int) -> tuple[list, float]:
        """([(link name, capacity, weight)], wire bytes) a copy takes; `route` from `route()`, or "fill"."""
        if route == "fill":  # a memset writes the device's memory
            return [(f"dev{dst}.hbm", self.memory_bandwidth, 1.0)], float(nbytes)
        if route == "sdma":  # on-chip: reads and writes the same memory
            return [(f"dev{src}.hbm", self.memory_bandwidth, 2.0)], float(nbytes)
        hl = self.host_link
        if route in ("h2d", "d2h", "pcie-p2p"):
            def port(dev: int, direction: str) -> tuple:
                return f"{hl.kind}{dev // hl.shared_by}.{direction}", hl.capacity if direction == "down" \
                    else hl.capacity_up, 1.0

            def cpu(dev: int, direction: str) -> list:
                """The CPU's pooled budget, where its devices' ports together could exceed it (else it never
                binds and max-min rates are the same without it)."""
                h = self.host
                ports = -(-h.devices_per_cpu // hl.shared_by)
                binds = 0 < h.bandwidth < ports * (hl.capacity if direction == "down" else hl.capacity_up)
                return [(f"cpu{h.cpu_of(dev)}.{direction}", h.bandwidth, 1.0)] if binds else []
            # The read requests an H2D sends upstream (about 4% of its bytes at MRRS 512) are not charged:
            # H2D and D2H each keep a full direction, as the flow model's closed forms say.
            if route == "h2d":  # the device reads host memory: the completions come down
                return [port(dst, "down"), *cpu(dst, "down")], hl.wire_bytes(nbytes, read=True)
            if route == "d2h":  # the device writes host memory
                return [port(src, "up"), *cpu(src, "up")], hl.wire_bytes(nbytes, read=False)
            return [port(src, "up"), port(dst, "down")], hl.wire_bytes(nbytes, read=False)
        pl = self.pair_link if route == "sio" else self.peer_link
        if route == "sio" or pl.topology == "mesh":
            return [(f"{pl.kind}{src}->{dst}", pl.bandwidth, 1.0)], float(nbytes)
        return [(f"{pl.kind}{src}.out", pl.bandwidth, 1.0), (f"{pl.kind}{dst}.in", pl.bandwidth, 1.0)], float(nbytes)

    def alone(self, src: int | None, dst: int | None, nbytes: int, chunk: int = 0, engines: int = 1) -> float:
        """Seconds a copy takes with the machine to itself: latency (once per runtime task of `chunk` bytes)
        + wire bytes / bottleneck rate. engines > 1: its bytes spread over that many DMA engines (streams)."""
        route = self.route(src, dst)
        if route == "h2h":
            return nbytes / self.host_memcpy_bandwidth
        _, wire = self.path(route, src, dst, nbytes)
        tasks = -(-nbytes // chunk) if chunk and nbytes else 1
        return self.latency(route) * tasks + wire / self.rate(src, dst, engines)

    def rate(self, src: int | None, dst: int | None, engines: int = 1) -> float:
        """Wire bytes per second copies between two ends get on `engines` DMA engines at once: the route's
        narrowest link, or what the engines move over it, if less (A3: one engine 57 GB/s over the host
        link, the die's port 102 GB/s)."""
        route = self.route(src, dst)
        links, _ = self.path(route, src, dst, 0)
        rate = min(cap / w for _, cap, w in links)
        cap = self.per_engine(route)
        return min(rate, cap * engines) if cap else rate  # one task holds one engine

    def per_engine(self, route: str) -> float:
        """Bytes/s one DMA engine (one copy task) moves on `route`; 0: no limit below the links'."""
        if route in ("h2d", "d2h"):
            return self.host_link.per_engine
        link = self.pair_link if route == "sio" else self.peer_link if route in ("hccs", "ub") else None
        return link.per_engine if link is not None else 0.0

    def latency(self, route: str) -> float:
        if route in ("h2d", "d2h", "pcie-p2p"):
            return self.host_link.latency
        if route == "sio":
            return self.pair_link.latency
        if route in ("hccs", "ub"):
            return self.peer_link.latency
        return self.sdma_latency
