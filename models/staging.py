"""The pageable staging pipeline: how the driver moves a copy from or to pageable host memory.

The host's pages cannot be read by the DMA engines, so the driver copies through a few page-locked
buffers of `staging.chunk_bytes`: to the device, the CPU fills buffer i while the DMA drains another;
from the device, the DMA fills a buffer and one CPU thread copies the buffers out in order. A buffer is
reused once its DMA (to the device) or its copy-out (from the device) is done. The CPU copies at
`staging.copy_bandwidth`; `staging.setup` is paid once per copy.
"""
from __future__ import annotations

from typing import Callable, Generator

import simpy

from .hardware import Staging


def chunk_sizes(nbytes: int, chunk: int) -> list[int]:
    """The sizes of the staged chunks of an `nbytes` copy (one empty chunk for an empty copy)."""
    return [min(chunk, nbytes - off) for off in range(0, nbytes, chunk)] or [0]


def pipeline(env: simpy.Environment, staging: Staging, nbytes: int, to_device: bool,
             dma: Callable[[int], simpy.Event]) -> Generator:
    """A simpy process moving `nbytes` through the staging buffers; `dma(size)` starts the DMA of one chunk
    and returns the event of its end. The process ends when the last byte has arrived."""
    yield env.timeout(staging.setup)
    per_byte = 1.0 / staging.copy_bandwidth
    buffers = staging.buffers
    done: list[simpy.Event] = []
    sizes = chunk_sizes(nbytes, staging.chunk_bytes)
    if to_device:
        for i, size in enumerate(sizes):
            if i >= buffers:
                yield done[i - buffers]
            yield env.timeout(size * per_byte)
            done.append(dma(size))
        yield env.all_of(done)
        return

    def copy_out(moved: simpy.Event, previous: simpy.Event | None, size: int):
        yield moved
        if previous is not None:
            yield previous
        yield env.timeout(size * per_byte)

    for i, size in enumerate(sizes):
        if i >= buffers:
            yield done[i - buffers]
        done.append(env.process(copy_out(dma(size), done[-1] if done else None, size)))
    yield done[-1]
