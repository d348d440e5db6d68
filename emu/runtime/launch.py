"""Device kernels: a user function enqueued as a task on a stream (an Ascend C program's myKernel<<<...>>>).

The function runs at the task's simulated start, in stream order, on numpy
views of the device buffers it is given. Its duration is declared, in
microseconds, or follows from a declared cost (bytes moved and FLOPs) through
the product's roofline.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from emu.models import KERNEL, Task

from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_INVALID_HANDLE
from ..memory import Region
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
