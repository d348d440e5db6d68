"""PCIe effective bandwidth, after the pcie-bench model (Neugebauer et al., SIGCOMM 2018).

A frozen link record and pure functions of it. The physical rate is
GT/s x encoding x lanes / 8; the data-link layer spends a share of it on ACK and
flow-control DLLPs and SKIP ordered sets; every TLP carries at most MPS bytes of
payload behind a fixed overhead (framing, sequence number, header, LCRC).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}
# Ack/FC latency limits for x16 links, in symbols, per MPS (PCIe spec table used by pcie-bench).
ACK_LIMIT_X16 = {128: 144, 256: 168, 512: 182, 1024: 190, 2048: 198, 4096: 206}
DLLP_BYTES = 8  # one ACK and one UpdateFC DLLP per ack period
SKIP_SYMBOLS, SKIP_INTERVAL = 4, 1538  # a SKIP ordered set every 1538 symbols (Gen3+)
MWR_OVERHEAD = 24  # bytes per memory-write TLP: 4 framing/seq + 16 (4DW header, 64-bit) + 4 LCRC
CPL_OVERHEAD = 20  # bytes per completion-with-data TLP: 4 framing/seq + 12 (3DW header) + 4 LCRC
MRD_BYTES = 24  # a memory-read request TLP (no payload)


@dataclass(frozen=True)
class PcieLink:
    """One PCIe link's negotiated setup: generation, width, max payload size and max read request size. The
    functions below turn it into rates and wire bytes (the pcie-bench model, see the module docstring)."""

    gen: int
    lanes: int = 16
    mps: int = 256  # max payload size, bytes
    mrrs: int = 512  # max read request size, bytes

    def __post_init__(self):
        if self.gen not in GT_PER_S:
            raise ValueError(f"PCIe generation {self.gen} is not one of {sorted(GT_PER_S)}")
        if self.lanes not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"PCIe lanes {self.lanes} is not 1, 2, 4, 8, 16 or 32")
        if self.mps not in ACK_LIMIT_X16:
            raise ValueError(f"MPS {self.mps} is not one of {sorted(ACK_LIMIT_X16)}")
        if self.mrrs not in ACK_LIMIT_X16:
            raise ValueError(f"MRRS {self.mrrs} is not one of {sorted(ACK_LIMIT_X16)}")


def raw_bandwidth(link: PcieLink) -> float:
    """Bytes/s on the wire after line encoding, one direction."""
    return GT_PER_S[link.gen] * 1e9 * ENCODING[link.gen] * link.lanes / 8


def dll_efficiency(link: PcieLink) -> float:
    """Share of the raw rate left for TLPs after ACK/FC DLLPs and SKIP ordered sets."""
    dllp = 2 * DLLP_BYTES / ACK_LIMIT_X16[link.mps]
    skip = SKIP_SYMBOLS / SKIP_INTERVAL if link.gen >= 3 else 0.0
    return (1 - dllp) * (1 - skip)


def tlp_bandwidth(link: PcieLink) -> float:
    """Bytes/s available to TLPs (headers included), one direction."""
    return raw_bandwidth(link) * dll_efficiency(link)


def write_wire_bytes(link: PcieLink, size: int) -> int:
    """TLP bytes a DMA write of `size` bytes puts on the link."""
    return size + math.ceil(size / link.mps) * MWR_OVERHEAD


def read_wire_bytes(link: PcieLink, size: int) -> int:
    """TLP bytes the completions of a DMA read of `size` bytes bring back (requests travel the other way)."""
    return size + math.ceil(size / link.mps) * CPL_OVERHEAD


def read_request_bytes(link: PcieLink, size: int) -> int:
    """TLP bytes of the read requests a DMA read of `size` bytes sends upstream."""
    return math.ceil(size / link.mrrs) * MRD_BYTES


def effective_bandwidth(link: PcieLink, size: int, read: bool = False) -> float:
    """Payload bytes/s of one transfer of `size` bytes with the link to itself."""
    wire = read_wire_bytes(link, size) if read else write_wire_bytes(link, size)
    return tlp_bandwidth(link) * size / wire
