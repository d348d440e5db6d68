"""A product's AI Core as device code sees it, and how long a kernel launch takes from what its blocks did.

A launch's blocks are spread over min(blockDim, vector cores) cores, in waves. Each block takes the longest of
its three pipes, each from its share of what the launch did (the blocks of a launch are taken to do alike):

- its global-memory traffic (DataCopy both ways) at one core's rate to global memory, `gm_bytes_per_cycle`;
- the bytes its vector instructions processed at the vector unit's width, `vector_bytes_per_cycle`;
- its scalar code: device cycles of `scalar_cycles_per_ns` per nanosecond the host spent running the blocks, for
  a kernel that issued no DataCopy and no vector instruction (otherwise the host's time is mostly the emulation
  of those, not the kernel's own scalar code, and the scalar part is not counted).

and the launch takes its waves times that, at least its whole traffic at the device memory's bandwidth.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import NamedTuple


class Work(NamedTuple):
    """What a launch's blocks did, in all (emu.device.native.Result)."""
    gm_bytes: int  # DataCopy between global memory and the Unified Buffer, both ways
    vector_bytes: int  # bytes the vector instructions produced
    host_ns: int  # the host's CPU time running the blocks


@dataclass(frozen=True)
class AICore:
    npu_arch: int  # __NPU_ARCH__
    ub_bytes: int  # one core's Unified Buffer
    vector_cores: int  # the cores a vector kernel's blocks run on at once
    clock_hz: float
    vector_bytes_per_cycle: float
    gm_bytes_per_cycle: float  # one core's rate to global memory
    scalar_cycles_per_ns: float  # device cycles a kernel's scalar code takes per host nanosecond running it

    def launch(self, block_dim: int, work: Work, memory_bandwidth: float) -> tuple[float, str]:
        """(seconds, how they were found) of a launch of `block_dim` blocks that did `work`."""
        cores = min(block_dim, self.vector_cores)
        waves = math.ceil(block_dim / cores)
        scalar = work.gm_bytes == 0 and work.vector_bytes == 0
        pipes = {
            "global memory": work.gm_bytes / block_dim / self.gm_bytes_per_cycle,
            "vector": work.vector_bytes / block_dim / self.vector_bytes_per_cycle,
            "scalar": work.host_ns / block_dim * self.scalar_cycles_per_ns if scalar else 0.0,
        }
        bound = max(pipes, key=pipes.get)
        seconds = waves * pipes[bound] / self.clock_hz
        hbm = work.gm_bytes / memory_bandwidth
        if hbm > seconds:
            return hbm, f"estimated: device-memory-bound, {cores} cores"
        return seconds, f"estimated: {bound}-bound, {cores} cores x {waves} wave(s)"


# -- a launch's label: what the trace, the msprof export and the run summary say of it ---------------------------
class KernelLabel(NamedTuple):
    """A kernel task's label read back (`kernel_label`)."""
    name: str
    block_dim: int | None  # None: a kernel without one (a Python kernel, a model)
    how: str | None  # how its time was found; None when the label does not say


def label(name: str, block_dim: int, how: str | None = None) -> str:
    """The label of a launch of device code: "name<<<blockDim>>>", then " [how its time was found]" once its
    time is known (emu.device.declared, or `AICore.launch`); `kernel_label` reads it back."""
    return f"{name}<<<{block_dim}>>>" + (f" [{how}]" if how else "")


# (a record keeps a label's first characters only, models.trace.RECORD "api": a how cut short has no closing bracket)
_KERNEL_LABEL = re.compile(r"^(?P<name>.*?)<<<(?P<dim>\d+)>>>(?: \[(?P<how>.*?)\]?)?$", re.S)


def kernel_label(text: str) -> KernelLabel:
    """The kernel's name, blockDim and how its time was found, from a kernel task's label (`label`). A how cut
    short (a record's label) ends in "..."; a label of another shape (a Python kernel's own name, a model's) is its
    name, with no blockDim and no how."""
    m = _KERNEL_LABEL.match(text)
    if m is None:
        return KernelLabel(text, None, None)
    how = m.group("how") or None
    if how is not None and not text.endswith("]"):
        how = how.rstrip(" ,;:") + "..."
    return KernelLabel(m.group("name"), int(m.group("dim")), how)
