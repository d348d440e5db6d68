"""Read-only questions about a runtime's state that the studies ask: where a copy goes, how the latest one
ran, what a stream's tasks are called, when an event's record completed, the tasks and links of the run.

Each is a function taking the runtime first (`queries.stream_name(rt, s)`), for the Runtime class to bind
as a method. None is an ACL API: none makes a call, advances the host clock or shows in the call counts,
so a study that asks gets the same numbers as one that does not.
"""
from __future__ import annotations

from emu.models import COPY, STAGED
from emu.models import trace as _trace

from .core import Event, Stream
from .transfer import ends


def _live(rt, handle: int, typ, what: str):
    obj = rt.handles.get(int(handle))
    if not isinstance(obj, typ) or obj.destroyed:
        raise ValueError(f"{what} handle 0x{int(handle):x} is not a live {what}")
    return obj


def stream_name(rt, stream: int) -> str:
    """The name the device tasks of `stream` (a live stream handle) carry in the records and the trace, e.g.
    "dev0/stream5a000260". ValueError when `stream` is not a live stream."""
    return _live(rt, stream, Stream, "stream").m.name


def event_recorded_at(rt, event: int) -> float:
    """Simulated seconds at which the latest record of `event` (a live event handle) completed on its
    stream. ValueError when `event` is not a live event, was never recorded or its record has not
    completed yet."""
    record = _live(rt, event, Event, "event").record
    if record is None or record.end is None:
        raise ValueError(f"event 0x{int(event):x}: no completed record")
    return record.end


def copy_ends(rt, src: int, dst: int) -> tuple[int | None, int | None]:
    """(source device, destination device) of a copy from address `src` to address `dst`: the physical
    device whose memory each address is in, None for host memory (page-locked memory is device memory on
    an RC product). These are the ends the hardware model's `route` and `alone` take. ValueError when an
    address is in no memory the runtime knows."""
    regions = []
    for addr in (src, dst):
        region = rt.space.find(addr)
        if region is None:
            raise ValueError(f"address 0x{addr:x} is not memory this runtime knows")
        regions.append(region)
    return ends(*regions)


def copy_route(rt, src: int, dst: int) -> str:
    """The route a copy from address `src` to address `dst` takes ("h2d", "d2h", "sdma", "hccs", ...):
    the hardware model's route between `copy_ends(rt, src, dst)`."""
    return rt.product.hardware.route(*copy_ends(rt, src, dst))


def physical_devices(rt) -> list[int]:
    """The physical device behind each visible device id, in visible order (ASCEND_RT_VISIBLE_DEVICES may
    hide or reorder devices): ACL calls take visible ids, the hardware model physical ones."""
    return list(rt.visible)


def device_memory_used(rt, device: int) -> int:
    """Bytes of device memory allocated on visible device `device` (every live allocation, whatever
    context made it)."""
    return rt.space.used[rt.visible[device]]


def last_copy_kind(rt) -> str | None:
    """How the runtime ran the latest completed copy in the kept records: "copy" (DMA tasks) or "staged"
    (a pageable copy through pinned staging buffers); None when the records hold no copy."""
    for task in reversed(rt.machine.records):
        if task.kind in (COPY, STAGED):
            return task.kind
    return None


def completed_tasks(rt) -> list[dict]:
    """The kept completed device tasks (see `records=` of `emu.configure`), in completion order, each a
    dict: kind ("copy", "staged", "kernel", "fill", "marker", ...), stream (its name, None when it ran on
    no stream), device, engine (None when it held none), route, links (the names of the links it
    crossed), bytes, src and dst (devices, None for host memory), part (True for one DMA part of a batch or
    staged copy, whose whole is a task of its own), submit, start and end (simulated seconds; submit and
    start None when the task had none)."""
    return [{"kind": t.kind, "stream": t.stream.name if t.stream is not None else None, "device": t.device,
             "engine": t.engine, "route": t.route, "links": tuple(t.links), "bytes": t.nbytes, "src": t.src,
             "dst": t.dst, "part": t._parent is not None, "submit": t.submit, "start": t.start, "end": t.end}
            for t in rt.machine.records]


def link_usage(rt) -> dict[str, dict]:
    """Every link the run's copies have crossed so far, by name ("pcie0.down", "hccs0-1", ...):
    {"bytes": wire bytes carried, "capacity": wire bytes per second}. Wire bytes are the payload and its TLP
    headers on PCIe; the read requests an H2D sends upstream are not charged (Hardware.path)."""
    return {name: {"bytes": link.bytes, "capacity": link.capacity} for name, link in rt.machine.links.items()}


def chrome_trace(rt) -> dict:
    """The Chrome / Perfetto trace of the kept records that `rt.write_trace(path)` writes, as the dict it
    writes: json.dump of it is that file."""
    with rt.lock:
        tasks, calls = rt.machine.records.array(), rt.call_log.array()
        findings = rt.sanitize("trace_findings")
    return _trace.chrome_trace(tasks, calls, findings)
