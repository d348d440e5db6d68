"""Moving bytes: how a copy or fill finds its memory, when its bytes move, and the task that times it.

Shared by every copy and fill API (copies, fills, 2D, batch, descriptor copies). Copies and fills become
tasks on streams; the bytes move in the task's completion callback, at the simulated instant the task
ends. Synchronous APIs run the simulation until their own task completes.
"""
from __future__ import annotations

import sys

from emu.models import STAGED, Task

from .. import constants as C, kernels
from ..errors import ACL_ERROR_RT_PARAM_INVALID
from ..constants import D2D, D2H, DEFAULT, H2D, H2H, Location
from ..memory import Overrun, Region
from . import capture, streams
from .core import Core, Stream, fail


HOST, DEV, UNREG = Location.HOST, Location.DEVICE, Location.UNREGISTERED
ON_CHIP_UNIT = 4 << 30  # largest on-chip D2D task: hicann/runtime src/runtime/core/inc/spec/base_info.hpp


def roundup(n: int, unit: int) -> int:
    return (n + unit - 1) // unit * unit


# Kind auto-correction (docs/conformance/memory_copies_fills.md, aclrtMemcpyAsync;
# hicann/runtime src/runtime/api/impl/api_error.cc ApiErrorDecorator::MemcpyKindAutoCorrect):
# (src, dst) -> (forced kind, allowed kinds, what DEFAULT becomes).
_CORRECTION = {
    (HOST, DEV): (H2D, None, H2D),
    (DEV, HOST): (D2H, None, D2H),
    (HOST, HOST): (H2H, None, H2H),
    (DEV, DEV): (D2D, None, D2D),
    (UNREG, DEV): (None, {H2D, D2D}, H2D),
    (DEV, UNREG): (None, {D2H, D2D}, D2H),
    (HOST, UNREG): (None, {H2H, H2D}, H2H),
    (UNREG, HOST): (None, {H2H, D2H}, H2H),
    (UNREG, UNREG): (None, {H2H, H2D, D2H, D2D}, H2H),
}
# ... worked out for every kind the rule reads: (src, dst, kind) -> the kind used, None where it is forbidden.
# (Locations are IntEnum members: they hash as their ints do, with no Python-level __hash__.)
_CORRECTED = {(s, d, k): forced if forced is not None else default if k == DEFAULT else k if k in allowed else None
              for (s, d), (forced, allowed, default) in _CORRECTION.items() for k in (H2H, H2D, D2H, D2D, DEFAULT)}


def correct_kind(src: Location, dst: Location, kind: int) -> int:
    """The kind an EP-mode async copy really uses, from where its pointers are. A kind the locations forbid
    raises 107000; other kinds, and location pairs the table leaves alone, pass unchanged
    (hicann/runtime src/runtime/api/impl/api_error.cc ApiErrorDecorator::MemcpyKindAutoCorrect)."""
    try:
        used = _CORRECTED.get((src, dst, kind), kind)
    except TypeError:  # an unhashable number (a 0-d array): the table's entries compared as the rule compares them
        used = next((v for (s, d, k), v in _CORRECTED.items() if s == src and d == dst and k == kind), kind)
    if used is None:
        fail(ACL_ERROR_RT_PARAM_INVALID,
             f"kind {C.MEMCPY_KIND_NAMES[int(kind)]} does not fit a copy from {src.name} to {dst.name} memory")
    return used


def ends(src: Region, dst: Region) -> tuple[int | None, int | None]:
    """(source device, destination device) of a copy, None for host memory (a mapped alias is host memory)."""
    return src.end_device, dst.end_device


# -- the copy plan -----------------------------------------------------------------
class CopyPlan:
    """What a copy decides before anything is queued, worked out once (`plan_copy`): its ends (regions,
    offsets, where the bytes are, the devices: None for host memory), the kind the program asked for and
    the kind the runtime uses, and whether it goes through the driver's staging buffers (pageable host
    memory on an EP product). Every copy API (sync, async, batch, descriptor, offset) reads these."""

    __slots__ = ("dst", "doff", "dloc", "src", "soff", "sloc", "nbytes", "kind", "used", "s_dev", "d_dev", "device",
                 "staged")

    def __init__(self, rt: Core, dst: Region, doff: int, src: Region, soff: int, nbytes: int, kind: int,
                 used: int | None = None):
        self.dst, self.doff, self.src, self.soff, self.nbytes = dst, doff, src, soff, nbytes
        dloc, sloc = dst.location, src.location
        if dloc is UNREG:  # pageable memory may be registered (page-locked) in part: ask the address space
            dloc = rt.space.location(dst, dst.base + doff)
        if sloc is UNREG:
            sloc = rt.space.location(src, src.base + soff)
        self.dloc, self.sloc = dloc, sloc
        if type(kind) is not int:  # (int() only for an int subclass or other integer: a call less per copy)
            kind = int(kind)
        self.kind = kind
        self.used = kind if used is None else int(used)
        self.s_dev = s_dev = src.end_device  # as `ends` gives them
        self.d_dev = d_dev = dst.end_device
        # (locations are Location members, so `is` compares them as `==` would, without the enum's __eq__)
        self.staged = rt.ep_mode and ((s_dev is None and sloc is UNREG) or (d_dev is None and dloc is UNREG))
        # the device whose engines run it (the device end; the source of a copy between devices)
        self.device = d_dev if s_dev is None else s_dev

    @property
    def pageable(self) -> bool:
        """Pageable host memory at either end (what makes an async copy synchronous on EP products)."""
        return UNREG in (self.sloc, self.dloc)

    def __repr__(self) -> str:
        return (f"<CopyPlan {self.nbytes} B {self.src.describe()}+{self.soff} -> {self.dst.describe()}+{self.doff}, "
                f"kind {self.kind} used {self.used}{', staged' if self.staged else ''}>")


def plan_access(plan: CopyPlan) -> tuple:
    """The bytes a planned copy reads and writes, as the sanitizer takes them (`Core.submit`)."""
    return (plan.src, plan.soff, plan.nbytes, "r"), (plan.dst, plan.doff, plan.nbytes, "w")


def plan_copy(rt: Core, dst: int, src: int, nbytes: int, kind: int, *, correct: bool = False,
              dst_span: int | None = None, src_span: int | None = None) -> CopyPlan:
    """Resolve a copy of `nbytes` from `src` to `dst` (spans: the bytes each end covers, for 2D copies):
    the regions (107000 outside any allocation), and with `correct` the kind corrected from where the
    pointers are (`correct_kind`)."""
    if rt.caller.gate is not None:
        rt.runtime_layer()
    resolve = rt.space.resolve
    dn = nbytes if dst_span is None else dst_span
    sn = nbytes if src_span is None else src_span
    try:
        dr, doff = resolve(dst, dn if dn > 1 else 1)
    except Overrun as e:
        raise overrun(rt, e, "destination") from None
    try:
        sr, soff = resolve(src, sn if sn > 1 else 1)
    except Overrun as e:
        raise overrun(rt, e, "source") from None
    plan = CopyPlan(rt, dr, doff, sr, soff, nbytes, kind)
    if correct:
        plan.used = correct_kind(plan.sloc, plan.dloc, plan.used)
    return plan


def tagged(task: Task, plan: CopyPlan) -> Task:
    """`task`, carrying the kind its copy was asked as and the kind it runs as."""
    task.kind_asked, task.kind_used = plan.kind, plan.used
    return task


def copy_task(rt: Core, plan: CopyPlan, what: str, device: int | None = None, chunk: int = 0) -> Task:
    """The model task of a planned copy (on `device`, by default the plan's), which moves the bytes when it
    completes; it carries the kind asked and the kind used."""
    return Task.copy(plan.nbytes, plan.device if device is None else device, plan.s_dev, plan.d_dev, what,
                     mover(rt, plan.dst, plan.doff, plan.src, plan.soff, plan.nbytes, what), chunk, plan.kind,
                     plan.used)


# -- moving bytes ------------------------------------------------------------------
def has_bytes(rt: Core, what: str, *regions: Region) -> bool:
    """Whether a task's data effect on `regions` should happen now: not on freed memory (warned once: the
    bytes are dropped), not on timing-only memory (it has none)."""
    for r in regions:
        if r.freed:
            rt.space.warn_freed(r, what)
            return False
    for r in regions:
        if r.virtual:
            return False
    return True


# Copies up to this many bytes move by numpy's slice assignment (a memmove, safe for overlapping ranges),
# which costs less than a kernel's dispatch; the kernels' streaming stores and GIL release start far above.
SMALL_COPY = 4096
# A blocking call's own copy or fill of at least this many bytes moves them once the runtime's lock is released
# (`unlocked`, `Core.later`): from here the kernels release the GIL, so two threads' bytes move at once.
UNLOCKED_FROM = 64 << 10


def unlocked(rt: Core, owner, n: int, fn, *args) -> None:
    """fn(*args), which moves n bytes of a task. `owner`: for the task of a blocking call, the calling thread's
    state when the call made it (`blocking_owner`), else None. A blocking call's task of UNLOCKED_FROM bytes or
    more has its bytes moved by that thread, once its call has released the runtime's lock and before it
    returns (`Core.later`), whichever thread's wait completed the task; anything else moves now, under the lock.
    The regions were checked and their bytes made under the lock; `args` hold views of them."""
    if owner is None or n < UNLOCKED_FROM or not rt.later(owner, fn, *args):
        fn(*args)


def blocking_owner(rt: Core, blocking: bool):
    """The thread a blocking call's task belongs to (its state, read when the call makes the task), None for a
    queued task: what `unlocked` defers the task's bytes to."""
    return rt.caller if blocking else None


def mover(rt: Core, dst: Region, doff: int, src: Region, soff: int, n: int, what: str, blocking: bool = False):
    """What moves a copy's bytes when its task completes; `blocking`: the task of the calling thread's blocking
    call, whose bytes move once its lock is released (`unlocked`)."""
    dst.check_writable()  # a read-only destination is refused at the call, before anything is queued
    owner = blocking_owner(rt, blocking)
    def move():
        if (dst.freed or src.freed or dst.virtual or src.virtual) and not has_bytes(rt, what, dst, src):
            return  # (has_bytes is asked only when one of its refusals may apply: a call less per copy)
        if src.is_device and not src.materialized:  # never written: zeros
            if dst.materialized or not dst.is_device:
                unlocked(rt, owner, n, kernels.fill, dst.target(doff, n), 0)
            return
        if n <= SMALL_COPY:
            dst.target(doff, n)[...] = src.view(soff, n)
        else:
            unlocked(rt, owner, n, kernels.copy, dst.target(doff, n), src.view(soff, n))

    return move


def filler(rt: Core, dst: Region, off: int, n: int, value: int, what: str, blocking: bool = False,
           kernel=None):
    """What fills n bytes at `dst`+off with `value` when its task completes (`blocking`: as `mover`): a byte
    (kernels.fill), or with kernel=kernels.fill_u32 a 32-bit word."""
    dst.check_writable()
    owner = blocking_owner(rt, blocking)
    def fill():
        if has_bytes(rt, what, dst):
            unlocked(rt, owner, n, kernels.fill if kernel is None else kernel, dst.target(off, n), value)

    return fill


def locate(rt: Core, addr: int, nbytes: int, role: str = "memory") -> tuple[Region, int]:
    """(region, offset) of `nbytes` at `addr` for an API call (`role`: what the bytes are to the call, for the
    message when they run past the end of their buffer: `overrun`)."""
    if rt.caller.gate is not None:
        rt.runtime_layer()
    try:
        return rt.space.resolve(addr, max(nbytes, 1))
    except Overrun as e:
        raise overrun(rt, e, role) from None


# -- a call that would reach past the end of its buffer ------------------------------------------------------
class _Told:
    """The (API, call site) pairs whose overrun was said on stderr in this runtime: each is said once."""

    def __init__(self, _rt):
        self.sites: set = set()


def overrun(rt: Core, err: Overrun, role: str) -> Overrun:
    """A call would read or write past the end of a buffer (`err`, from the address space; `role`: "source",
    "destination" or "memory"). The emulator refuses it (100000) and never touches the bytes beyond: on an NPU
    the call would read (or overwrite) whatever lies there, and the program would go on with those bytes. The
    code alone does not say why, so the first time a call site does it a line on stderr names the call, the
    site (the script's file:line, a C program's file:line or function), the buffer and the overrun in bytes;
    under the sanitizer it is a finding (`Sanitizer.overrun`). Returns `err`, for the caller to raise."""
    from ..sanitize import sites

    api = sites.current_api() or "an ACL call"
    if role == "memory" and api.startswith("aclrtMemset"):  # (a fill writes the memory it is given)
        role = "destination"
    site = sites.user_site()
    told = rt.family_state("overruns", _Told).sites
    if (api, site) not in told:
        told.add((api, site))
        print(overrun_line(api, site, err, role), file=sys.stderr, flush=True)
    rt.sanitize("overrun", err.region, err.offset, err.nbytes, role, api, site)
    return err


def overrun_line(api: str, site: tuple, err: Overrun, role: str) -> str:
    """The line `overrun` says: the call, where, the buffer, the overrun, and what to do."""
    from ..sanitize import sites

    r = err.region
    where = "" if site == sites.UNKNOWN else f"{sites.short(site)}: "
    owner = f" (a {type(r.owner).__name__} object)" if r.owner is not None and r.kind == Region.PAGEABLE else ""
    left = r.size - err.offset
    what = f"its {role}, {err.nbytes} bytes at 0x{r.base + err.offset:x}, runs" if role != "memory" else \
        f"its {err.nbytes} bytes at 0x{r.base + err.offset:x} run"
    return (f"[acl-emu] {where}{api} refused ({err.name}, {err.code}): {what} {err.over} bytes past the end of "
            f"{r.describe()}{owner}. On an NPU the call would {_beyond(role)} whatever lies past the buffer; "
            f"acl-emu never reads or writes memory it does not know. Make the buffer {err.offset + err.nbytes} "
            f"bytes, or pass at most the {left} bytes it holds from that address (said once per call site)")


def _beyond(role: str) -> str:
    return {"source": "read", "destination": "overwrite"}.get(role, "read or overwrite")


def run_blocking(rt: Core, task: Task, access=None) -> None:
    """Run a task outside any stream and block this host thread until it completes. access: the bytes it
    reads and writes (see `Core.submit`), the calling thread's own accesses for the sanitizer."""
    if access is not None:
        rt.sanitize_host_access(task.label, access)
    dev = task.device
    s = rt.sync_streams.get(dev)
    if s is None or s.last is not None and s.last.end is None:  # (one per device: a blocking call waits
        s = rt.sync_streams[dev] = rt.machine.stream(f"dev{dev}/sync", dev)  # for its task, so it is idle)
    st = rt.caller
    if rt.bounding(st):  # other host threads: the devices run no further than their horizon (emu.runtime.core)
        rt.machine.submit(s, task, st.clock)
        rt.wait_for(task)
    else:
        end = rt.machine.blocking(s, task, st.clock)
        if end > st.clock:
            st.clock = end
    if task.error is not None:
        raise task.error


def pageable(rt: Core, r: Region, off: int) -> bool:
    return rt.space.location(r, r.base + off) == UNREG


def copy_now(rt: Core, plan: CopyPlan, what: str, *, move=None, rows: int = 0, access=None) -> None:
    """A blocking copy: the host waits for it, other streams go on. Pageable memory goes through
    the driver's staging pipeline; host-to-host copies are the CPU's. move: what moves the bytes (by default
    the plan's contiguous range, once the call releases the runtime's lock: `unlocked`); rows: row descriptors
    of a 2D copy (none when staged); access: the bytes it touches, for the sanitizer (by default the plan's
    ranges). The host also pays the driver's round trip
    (`hardware.sync_copy`), once the copy is done."""
    rt.sanitize_host_access(what, access or plan, None if access else plan_access)
    if move is None:
        move = mover(rt, plan.dst, plan.doff, plan.src, plan.soff, plan.nbytes, what, blocking=True)
    hw = rt.machine.hardware
    if plan.s_dev is None and plan.d_dev is None:
        rt.tick(plan.nbytes / hw.host_memcpy_bandwidth)
        move()
        return
    if plan.staged:
        task = tagged(Task(STAGED, nbytes=plan.nbytes, device=plan.device, src=plan.s_dev, dst=plan.d_dev,
                           label=what, on_complete=move), plan)
    else:
        task = Task.copy(plan.nbytes, plan.device, plan.s_dev, plan.d_dev, what, move, 0, plan.kind, plan.used)
        if rows:
            task.rows = rows
    run_blocking(rt, task)
    rt.caller.clock += hw.sync_copy  # the driver's round trip: the host is woken once it is done


def sync_for_pageable(rt: Core, s: Stream) -> None:
    """An async call on pageable memory: refused on a captured stream, else the stream is drained."""
    if s.capturing:
        fail(ACL_ERROR_RT_PARAM_INVALID, "pageable host memory cannot be captured: use aclrtMallocHost "
                                         "or aclrtHostRegister memory")
    capture.check_capture_safe(rt, converted=True)
    streams.drain(rt, s)


def copy_unit(rt: Core, s_dev: int | None, d_dev: int | None) -> int:
    """The largest task the runtime issues for a copy between these ends
    (hicann/runtime src/runtime/api/impl/api_impl.cc LaunchAsyncCopy;
    hicann/runtime src/runtime/core/inc/spec/base_info.hpp MEMCPY_ASYNC_UNIT_SIZE, MAX_MEMCPY_SIZE_OF_D2D).
    """
    unit = rt.copy_units.get((s_dev, d_dev))
    if unit is None:
        unit = rt.copy_units[(s_dev, d_dev)] = _copy_unit(rt, s_dev, d_dev)
    return unit


def _copy_unit(rt: Core, s_dev: int | None, d_dev: int | None) -> int:
    route = rt.product.hardware.route(s_dev, d_dev)
    if route in ("h2d", "d2h", "h2h"):
        return rt.product.async_copy_unit
    if route == "pcie-p2p":
        return 64 << 20
    if route == "ub":
        return 256 << 20
    return ON_CHIP_UNIT  # on-chip SDMA, SIO, HCCS


def enqueue_copy(rt: Core, s: Stream, plan: CopyPlan, what: str) -> None:
    """Queue a planned copy on `s`: the runtime's tasks of `copy_unit` bytes run back to back, one model
    task stands for them all."""
    s_dev, d_dev, src, dst = plan.s_dev, plan.d_dev, plan.src, plan.dst
    unit = rt.copy_units.get((s_dev, d_dev)) or copy_unit(rt, s_dev, d_dev)
    task = Task.copy(plan.nbytes, s.device, s_dev, d_dev, what,
                     None if (src.virtual or dst.virtual) and not (src.freed or dst.freed) else
                     mover(rt, dst, plan.doff, src, plan.soff, plan.nbytes, what), unit, plan.kind, plan.used)
    # the host builds and submits the copy's task (copy_submit); the access only if a sanitizer looks
    rt.submit(s, task, plan, rt.machine.hardware.copy_submit, plan_access)
