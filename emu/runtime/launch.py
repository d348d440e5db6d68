"""Device kernels: work enqueued as a kernel task on a stream.

Two kinds. A Python function (aclrtLaunchKernel, `launch_kernel`) runs at the task's simulated start, in stream
order, on numpy views of the device buffers it is given; its duration is declared, in microseconds, or follows
from a declared cost (bytes moved and FLOPs) through the product's roofline. Device code compiled for the CPU
(emu.device) is queued by `queue_device_code`, whatever launched it (`launch_device_code`: `k<<<...>>>` and the
aclrtlaunch_<k> stubs; binaries.py: aclrtLaunchKernelWithConfig on a kernel binary); its blocks run when the task
starts and its time follows from what they did.
"""
from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from emu.models import KERNEL, Task, Work, aicore

from .. import device
from ..device import declared, native
from ..sanitize import kernels as sanitize_kernels
from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_HANDLE,
                      ACL_ERROR_RT_PARAM_INVALID, ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, DeviceException)
from ..memory import Region, device_of, is_device_address, window_of
from .core import Core, api, fail
from . import transfer


# -- LaunchOps -------------------------------------------------------------------------------------


_ACCESS = ("r", "w", "rw")


def _access(access, n: int) -> list[str]:
    """Each buffer's declared use ("r", "w" or "rw"; "u": undeclared, read or written as far as the sanitizer
    knows (`emu.sanitize.ranges.UNDECLARED`), never checked for initialisation)."""
    if access is None:
        return ["u"] * n
    if isinstance(access, str):
        access = [access] * n
    if not isinstance(access, (list, tuple)):
        fail(ACL_ERROR_INVALID_PARAM, f"access {access!r}: expected one of 'r', 'w', 'rw' per buffer ({n})")
    access = [str(a).lower() for a in access]
    if len(access) != n or not all(a in _ACCESS for a in access):
        fail(ACL_ERROR_INVALID_PARAM, f"access {access!r}: expected one of 'r', 'w', 'rw' per buffer ({n})")
    return access


def _kernel_arg(rt: Core, arg) -> tuple[Region, int, int, tuple, np.dtype]:
    if isinstance(arg, (tuple, list)) and len(arg) == 2:
        ptr, nbytes = arg
        shape, dtype = (int(nbytes),), np.dtype(np.uint8)
    elif isinstance(arg, (tuple, list)) and len(arg) == 3:
        ptr, shape, dtype = arg
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    else:
        fail(ACL_ERROR_INVALID_PARAM, f"kernel argument {arg!r}: expected (ptr, nbytes) or (ptr, shape, dtype)")
    r, off = transfer.locate(rt, int(ptr), int(nbytes))
    reg = None if r.is_device else rt.space.registration(int(ptr))
    mapped = reg is not None and reg.alias is None and reg.region.va_flag
    if not (r.is_device or mapped):  # a VA-consistent mapping: the device uses the host address
        fail(ACL_ERROR_INVALID_PARAM, f"kernel argument 0x{int(ptr):x} is {r.location.name} memory: kernels "
                                      f"take device memory (or a mapped device alias)")
    return r, off, int(nbytes), shape, dtype


@api("aclrtLaunchKernel", pyacl="acl.rt.launch_kernel", by_hand=True)
def launch_kernel(rt: Core, fn: Callable, buffers: Sequence = (), stream: int = 0, *,
                  duration_us: float | None = None, nbytes: float = 0, flops: float = 0,
                  name: str | None = None, access=None) -> None:
    """Enqueue `fn(*views)` as a kernel task on `stream` (aclrtLaunchKernel: the emulator's stand-in for a
    kernel launch); `buffers` are (ptr, nbytes) or (ptr, shape, dtype) of device memory.

    Give `duration_us`, or the kernel's cost (`nbytes` of memory traffic, `flops`) for a roofline duration.
    `fn` runs at the task's simulated start, in stream order, on numpy views of the buffers; when a buffer
    is timing-only memory it does not run, and the task only takes its time.

    access: how the kernel uses each buffer, "r", "w" or "rw" (one string for all, or one per buffer), for
    the sanitizer: a buffer declared read is checked for bytes nothing wrote, one declared "r" is not
    taken to be written. Undeclared, a buffer may be read or written: a conflict whatever the kernel does
    (with a write of other work) is a finding; one only if the kernel writes it is a finding when its run
    is seen changing the buffer (functional mode), else a possible hazard in the report's notes, with a hint
    to declare access=. Undeclared buffers are not checked for initialisation.
    """
    if fn is None:  # kernel.cpp: aclrtLaunchKernelImpl: a null funcHandle
        fail(ACL_ERROR_INVALID_PARAM, "fn is null")
    if not callable(fn):  # api_c.cc: rtLaunchKernelByFuncHandleV3: an invalid funcHandle, before the stream
        fail(ACL_ERROR_RT_INVALID_HANDLE, f"fn {fn!r} is not callable: not a kernel")
    rt.check_stream_handle(stream)
    if duration_us is None:
        if not (nbytes or flops):
            fail(ACL_ERROR_INVALID_PARAM, "a kernel needs duration_us or a cost (nbytes, flops)")
        duration = rt.product.hardware.kernel_duration(nbytes, flops)
    elif duration_us < 0:
        fail(ACL_ERROR_INVALID_PARAM, f"duration_us {duration_us} < 0")
    else:
        duration = duration_us * 1e-6
    s = rt.stream_of(stream)
    args = [_kernel_arg(rt, a) for a in buffers]
    modes = _access(access, len(args))
    label = name or getattr(fn, "__name__", "kernel")

    def run():  # on timing-only memory the kernel only takes time
        if transfer.has_bytes(rt, label, *(r for r, *_ in args)):
            fn(*(r.view(off, n).view(dtype).reshape(shape) for r, off, n, shape, dtype in args))

    rt.tick(rt.product.hardware.launch)  # the host packs the arguments and submits the kernel's task
    rt.submit(s, Task(KERNEL, device=s.device, label=label, duration=duration, nbytes=int(nbytes), on_start=run),
              tuple((r, off, n, mode) for (r, off, n, _, _), mode in zip(args, modes)))


# -- device code compiled for the CPU (emu.device) -----------------------------------------------------------------
MAX_BLOCK_DIM = 65535  # the launch's blockDim: 1 .. 65535 (docs of aclrtLaunchKernelWithConfig, numBlocks)


@api("aclEmuLaunchKernel", pyacl=None)
def launch_device_code(rt: Core, kernel: int, block_dim: int, stream: int, args: int, args_size: int) -> None:
    """Queue a kernel compiled for the CPU (emu.device: its record at `kernel`, its arguments packed at `args`)
    for `block_dim` blocks on `stream` (aclEmuLaunchKernel): what `k<<<blockDim, l2ctrl, stream>>>(...)`,
    aclrtlaunch_<k> and ACLRT_LAUNCH_KERNEL call. A null kernel or arguments of another size than the record's:
    100000; a record of another acl-emu: 107017; blockDim outside 1..65535: 107000. The launch is a kernel task
    whose blocks run when it starts; a fault or trap is 507035 at the next synchronize (`queue_device_code`)."""
    if kernel == 0:
        fail(ACL_ERROR_INVALID_PARAM, "kernel is null")
    k = native.kernel(kernel)
    if k is None:
        fail(ACL_ERROR_RT_INVALID_HANDLE, f"0x{kernel:x} is not a kernel's record of this acl-emu (built by "
                                          f"another version? rebuild the kernel library)")
    check_block_dim(block_dim)
    if args_size != k.args_size or (args_size and args == 0):
        fail(ACL_ERROR_INVALID_PARAM, f"{k.name}: {args_size} bytes of arguments, the kernel takes {k.args_size}")
    queue_device_code(rt, k, block_dim, stream, ctypes.string_at(args, args_size) if args_size else b"")


def check_block_dim(block_dim: int) -> None:
    """A launch's blockDim is 1 to 65535 (the docs of aclrtLaunchKernelWithConfig, numBlocks), else 107000."""
    if not 1 <= block_dim <= MAX_BLOCK_DIM:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"blockDim {block_dim}: must be 1 to {MAX_BLOCK_DIM}")


def queue_device_code(rt: Core, k, block_dim: int, stream: int, packed: bytes, keep=None,
                      binary: str | None = None) -> None:
    """Queue kernel `k` (an emu.device.native.Kernel) for `block_dim` blocks on `stream`, its arguments `packed` as
    its record lays them out: the one path of every launch of device code (aclEmuLaunchKernel, and
    aclrtLaunchKernelWithConfig in binaries.py). `keep`: what the arguments point to that the launch owns (a
    placeholder's bytes), kept until the blocks have run. `binary`: the kernel binary's file, if it came from one.

    Its time is declared, if a declaration beside the program or the binary names the kernel for this product
    (emu.device.declared; a wrong declaration: 100000 saying why), else estimated from what its blocks did
    (models.aicore). A launch whose memory was freed before it ran does not run (warned once), as a copy's
    bytes are dropped.

    When the task starts, its blocks run (emu.device.native); a block that faults, traps or fails a check fails
    the task with the vector core's exception, 507035, reported at the next synchronize of its stream
    (hicann/runtime src/runtime/core/src/task/davinci_kernel_task_v100.cc SetStarsResultForDavinciTask: a
    vector-only kernel's exception), and the tasks behind it still run. On a product without an AI Core: 207000."""
    try:
        core = device.aicore(rt.product)
    except LookupError as e:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, str(e))
    try:
        fixed = declared.declared(k.name, rt.product.name, block_dim, Path(binary) if binary else None)
    except declared.DeclarationError as e:
        fail(ACL_ERROR_INVALID_PARAM, str(e))
    rt.check_stream_handle(stream)
    s = rt.stream_of(stream)
    values = [packed[o:o + n] for o, n in zip(k.offsets, k.sizes)]
    task = Task(KERNEL, device=s.device, label=aicore.label(k.name, block_dim), duration=0.0)

    def run():
        if fixed is not None:
            task.duration, how = fixed
            task.label = aicore.label(k.name, block_dim, how)  # (the trace's row says how its time was found)
        if not transfer.has_bytes(rt, task.label, *(r for r, *_ in reach)):
            return  # freed memory (warned) or timing-only memory (no bytes): the kernel only takes its time
        arena = rt.space.arena(s.device) if k.checked and rt.sanitize("wants_ranges") else None
        ran = native.run(k.entry, block_dim, [_host_pointer(rt, v) if p else v for v, p in zip(values, k.pointers)],
                         core.ub_bytes, core.npu_arch, (arena.base, arena.span) if arena is not None else (0, 0))
        if arena is not None:
            rt.sanitize("kernel_ran", task, *_touched(rt, s.device, arena, ran.spans))
        if ran.output:
            native.write(ran.output)
        if fixed is None:
            task.duration, how = core.launch(block_dim, Work(ran.gm_to_ub + ran.ub_to_gm, ran.vector_bytes,
                                                             ran.cpu_ns), rt.product.hardware.memory_bandwidth)
            task.label = aicore.label(k.name, block_dim, how)
        if ran.status != native.OK:
            raise DeviceException(ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, _exception(k.name, block_dim, ran))

    run.keep = keep  # (the launch's own bytes live as long as its task can run)
    reach = _reach(rt, values, k.pointers, s.device if k.checked else None)
    task.on_start = run
    rt.tick(rt.product.hardware.launch)  # the host packs the arguments and submits the kernel's task
    rt.submit(s, task, reach)


def _host_pointer(rt: Core, value: bytes) -> bytes:
    """A global-memory pointer argument as the kernel running on the CPU takes it: an address of a device's
    window at its place in the device's arena (emu.arena: an allocation's bytes, or what the device would reach
    there), a mapped registration's device address at its host bytes, anything else as it is."""
    addr = int.from_bytes(value, "little")
    if not is_device_address(addr):
        return value
    r = rt.space.find(addr)
    if r is not None and r.origin == "alias":
        return (r.buffer().__array_interface__["data"][0] + addr - r.base).to_bytes(len(value), "little")
    if r is not None:
        r.buffer()  # (its bytes made, if this is their first use)
    arena, offset = rt.space.arena(device_of(addr)), addr - window_of(device_of(addr))
    if arena is None or not arena.holds(offset, 1):
        return value
    return (arena.base + offset).to_bytes(len(value), "little")


def _reach(rt: Core, values: list[bytes], pointers: tuple[bool, ...], device: int | None) -> tuple:
    """What the sanitizer takes the launch to touch when it is queued: the whole of every allocation a pointer
    argument is in, read or written: "k" on `device` (a kernel whose loads and stores are reported: its run
    tells which bytes, `_touched`), else "u" (undeclared)."""
    out = []
    for v, p in zip(values, pointers):
        r = rt.space.find(int.from_bytes(v, "little")) if p else None
        if r is not None and r.is_device:
            out.append((r, 0, r.size, "k" if r.device == device and r.origin != "alias" else "u"))
    return tuple(out)


def _touched(rt: Core, device: int, arena, spans) -> tuple:
    """What a run touched in `device`'s memory, from the runner's spans (host addresses in its arena): {Region:
    (reads, writes)}, each a sanitize.kernels.merged list of offsets, and the accesses past what a program asked
    for, one per allocation and block ((region, lo, hi, how, block, asked), offsets; how: 1 read, 2 written,
    3 both) or in no allocation ((None, address, address end, how, block, 0)). (An allocation's first access
    makes its bytes, so every allocation touched is one.)"""
    window = window_of(device)
    by_region: dict = {}
    past: dict = {}  # (region or None, block) -> [region, lo, hi, how, block, asked]

    def beyond(region, lo: int, hi: int, write: int, block: int, asked: int) -> None:
        was = past.get((region, block))
        if was is None:
            past[region, block] = [region, lo, hi, 2 if write else 1, block, asked]
        else:
            was[1], was[2], was[3] = min(was[1], lo), max(was[2], hi), was[3] | (2 if write else 1)

    for lo, hi, block, write in spans.tolist():
        a, end = window + lo - arena.base, window + hi - arena.base
        for r in rt.space.regions_in(a, end - a):
            if not r.is_device or r.origin == "alias":
                continue
            if a < r.base:
                beyond(None, a, r.base, write, block, 0)
                a = r.base
            lo_r, hi_r = a - r.base, min(end, r.end) - r.base
            by_region.setdefault(r, ([], []))[write].append((lo_r, hi_r))
            if hi_r > r.asked:
                beyond(r, max(lo_r, r.asked), hi_r, write, block, r.asked)
            a = r.end
        if a < end:
            beyond(None, a, end, write, block, 0)
    touched = {r: (sanitize_kernels.merged(reads), sanitize_kernels.merged(writes))
               for r, (reads, writes) in by_region.items()}
    return touched, [tuple(p) for p in past.values()]


def _exception(name: str, block_dim: int, ran) -> str:
    where = f"kernel {name}, block {ran.block} of {block_dim}"
    if ran.status == native.FAULT:
        what = {11: "SIGSEGV", 7: "SIGBUS", 8: "SIGFPE", 4: "SIGILL", 5: "SIGTRAP"}.get(ran.signal, f"signal {ran.signal}")
        return f"{where}: {what} at address 0x{ran.address:x} (outside the device's memory): an AI Core exception"
    if ran.status == native.TRAP:
        return f"{where}: {ran.message}: an AI Core exception"
    return f"{where}: {ran.message}"
