"""Fill APIs: aclrtMemset, aclrtMemsetAsync, aclrtMemsetD32, aclrtMemsetD32Async."""
from __future__ import annotations

import warnings

from emu.models import COPY, FILL, Task

from .. import kernels
from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_PARAM_INVALID, AclError
from ..constants import Location
from ..memory import Region, is_device_address
from . import capture, transfer
from .core import Core, Stream, api, fail

_FILLABLE = (Location.HOST, Location.DEVICE, Location.HOST_NUMA)  # what MemsetD32 fills (read per call)


# memset block: hicann/runtime src/runtime/core/inc/context/context.hpp MEM_BLOCK_SIZE
MEMSET_BLOCK = 64 << 20


# -- memsets ------------------------------------------------------------------------------------
def _fill_host_now(rt: Core, r: Region, off: int, n: int, value: int, what: str) -> None:
    rt.sanitize_host_span(what, r, off, n, "w")
    rt.tick(n / rt.product.hardware.host_memset_bandwidth)
    transfer.filler(rt, r, off, n, value, what, blocking=True)()


@api("aclrtMemset", sizes=("max_count", "count"), pyacl="acl.rt.memset", params="iiii")
def memset(rt: Core, ptr: int, max_count: int, value: int, count: int) -> None:
    """Fill `count` bytes at `ptr` with the low byte of `value` and block this thread until done (aclrtMemset).

    count must not exceed max_count (107000); count 0 does nothing. Host memory is filled by the CPU at once.
    Refused (107030) while a capture makes synchronous memsets unsafe."""
    if count == 0:
        return
    if ptr == 0:
        fail(ACL_ERROR_INVALID_PARAM, "devPtr is null")
    rt.current_context()
    capture.check_capture_safe(rt)
    if count > max_count:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > maxCount {max_count}")
    r, off = transfer.locate(rt, ptr, count)
    value &= 0xFF
    if not r.is_device:
        _fill_host_now(rt, r, off, count, value, "aclrtMemset")
        return
    transfer.run_blocking(rt, Task(FILL, nbytes=count, device=r.device, label="aclrtMemset",
                           on_complete=transfer.filler(rt, r, off, count, value, "aclrtMemset", blocking=True)),
                          ((r, off, count, "w"),))


@api("aclrtMemsetAsync", sizes=("max_count", "count"), pyacl="acl.rt.memset_async", params="iiiii")
def memset_async(rt: Core, ptr: int, max_count: int, value: int, count: int, stream: int = 0) -> None:
    """Queue a fill of `count` bytes at `ptr` with the low byte of `value` on `stream` (0: the default stream)
    (aclrtMemsetAsync).

    A host target is filled at once on the calling thread, not in stream order. A device target is one
    memset task where the product has one, else the runtime's 64 MiB blocks: a block filled on the host and
    copied to the device, then copied on the device into the rest."""
    if count == 0:
        return
    if ptr == 0:
        fail(ACL_ERROR_INVALID_PARAM, "devPtr is null")
    rt.check_stream_handle(stream)
    if count > max_count:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > maxCount {max_count}")
    rt.current_context()  # api_impl.cc ApiImpl::MemsetAsync: CurrentContext() may open the default device
    s = rt.stream_of(stream)
    r, off = transfer.locate(rt, ptr, count)
    value &= 0xFF
    if not r.is_device:  # host targets: filled now, on the calling thread, not stream-ordered
        _fill_host_now(rt, r, off, count, value, "aclrtMemsetAsync")
        return
    what = "aclrtMemsetAsync"
    if rt.product.has("memset_task") and r.device == s.device:  # 950: one memset task
        rt.submit(s, Task(FILL, nbytes=count, device=s.device, label=what,
                            on_complete=transfer.filler(rt, r, off, count, value, what)), ((r, off, count, "w"),))
        return
    # the runtime's block scheme: fill a pinned block on the host, copy it to the first block,
    # then replicate it on the device into the remaining blocks and the tail
    first = min(MEMSET_BLOCK, count)
    rt.tick(first / rt.product.hardware.host_memset_bandwidth)
    for b in range(0, count, MEMSET_BLOCK):
        m = min(MEMSET_BLOCK, count - b)
        rt.submit(s, Task(COPY, nbytes=m, device=s.device, src=None if b == 0 else r.device, dst=r.device,
                            label=what, on_complete=transfer.filler(rt, r, off + b, m, value, what)),
                  ((r, off + b, m, "w"),))


def _d32_target(rt: Core, ptr: int, mem_size: int, n: int) -> tuple[Region, int] | None:
    """The ACL-layer checks; None means nothing to do."""
    if n == 0:
        return None
    if ptr == 0:
        fail(ACL_ERROR_INVALID_PARAM, "ptr is null")
    if ptr % 4:
        fail(ACL_ERROR_INVALID_PARAM, f"ptr 0x{ptr:x} is not 4-byte aligned")
    if mem_size < 4 * n:
        fail(ACL_ERROR_INVALID_PARAM, f"memSize {mem_size} < 4 * N = {4 * n}")
    # memory.cpp IsAclPinnedMemory: the attribute query's own error (107000) is returned as is
    if rt.space.find(ptr) is None and is_device_address(ptr):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{ptr:x} is in no device allocation: unknown memory type")
    r, off = transfer.locate(rt, ptr, 4 * n)
    loc = rt.space.location(r, ptr)
    if loc not in _FILLABLE:
        fail(ACL_ERROR_INVALID_PARAM, f"0x{ptr:x} is {loc.name} memory: MemsetD32 needs memory "
                                      f"allocated by ACL")
    return r, off


def _d32(rt: Core, ptr: int, mem_size: int, value: int, n: int, stream: int | None) -> None:
    """The ACL layer (memory.cpp aclrtMemsetD32Impl / AsyncImpl), then the standard-SoC runtime
    (api_c_standard_soc.cc rtMemsetD32 / Async -> api_impl_standard_soc.cc ApiImpl::MemsetD32 / Async),
    which has no chip gate: every product whose config does not list the API fills the memory."""
    what = "aclrtMemsetD32" if stream is None else "aclrtMemsetD32Async"
    target = _d32_target(rt, ptr, mem_size, n)
    if target is None or not _d32_runtime_present(rt, what):
        return
    r, off = target
    if stream is not None:
        rt.check_stream_handle(stream)  # rtMemsetD32Async validates the handle first, host target or not
    rt.current_context()  # ApiImpl::CurrentContext() may open the configured default device
    value &= 0xFFFFFFFF
    if not r.is_device:  # host target: filled now; the async variant ignores the stream
        rt.sanitize_host_span(what, r, off, 4 * n, "w")
        rt.tick(4 * n / rt.product.hardware.host_memset_bandwidth)
        transfer.filler(rt, r, off, 4 * n, value, what, blocking=True, kernel=kernels.fill_u32)()
    elif stream is None:
        _d32_device_sync(rt, r, off, 4 * n, value, what)
    else:
        _d32_device_async(rt, rt.stream_of(stream), r, off, 4 * n, value, what)


def _d32_runtime_present(rt: Core, what: str) -> bool:
    """A product whose config lists the API has the stub runtime (api_c_stub.cc rtMemsetD32 returns
    207000 at once); the ACL layer reports that 207000 as success (docs/conformance/memory_copies_fills.md,
    aclrtMemsetD32 row 7)."""
    try:
        rt.gate(what)
    except AclError as e:
        warnings.warn(f"{what}: {e.message}; the ACL layer reports success and nothing is written",
                      RuntimeWarning, stacklevel=5)
        return False
    return True


def _d32_device_sync(rt: Core, r: Region, off: int, nbytes: int, value: int, what: str) -> None:
    block = rt.product.async_copy_unit  # per block: fill a pinned temporary, then a blocking H2D
    for b in range(0, nbytes, block):
        m = min(block, nbytes - b)
        rt.tick(m / rt.product.hardware.host_memset_bandwidth)
        fill = transfer.filler(rt, r, off + b, m, value, what, blocking=True, kernel=kernels.fill_u32)
        transfer.run_blocking(rt, Task(COPY, nbytes=m, device=r.device, src=None, dst=r.device, label=what,
                                       on_complete=fill), ((r, off + b, m, "w"),))


def _d32_device_async(rt: Core, s: Stream, r: Region, off: int, nbytes: int, value: int, what: str) -> None:
    if rt.product.has("memset_task") and r.device == s.device:
        fill = transfer.filler(rt, r, off, nbytes, value, what, kernel=kernels.fill_u32)
        rt.submit(s, Task(FILL, nbytes=nbytes, device=s.device, label=what, on_complete=fill),
                  ((r, off, nbytes, "w"),))
        return
    block = rt.product.async_copy_unit
    for b in range(0, nbytes, block):  # the pinned temporary is filled at enqueue
        m = min(block, nbytes - b)
        rt.tick(m / rt.product.hardware.host_memset_bandwidth)
        fill = transfer.filler(rt, r, off + b, m, value, what, kernel=kernels.fill_u32)
        rt.submit(s, Task(COPY, nbytes=m, device=s.device, src=None, dst=r.device, label=what, on_complete=fill),
                  ((r, off + b, m, "w"),))


@api("aclrtMemsetD32", gate=False, sizes=("mem_size", "n"), pyacl="acl.rt.memset_d32", params="iiii")
def memset_d32(rt: Core, ptr: int, mem_size: int, value: int, n: int) -> None:
    """Fill `n` 32-bit words at `ptr` with `value` and block this thread until done (aclrtMemsetD32).

    `ptr`: 4-byte aligned memory ACL allocated, host or device (pageable memory raises 100000), with
    mem_size >= 4 * n; n 0 does nothing. Where the product's config lists the API as unsupported, the
    ACL layer reports success and nothing is written (with a RuntimeWarning)."""
    _d32(rt, ptr, mem_size, value, n, None)


@api("aclrtMemsetD32Async", gate=False, sizes=("mem_size", "n"), pyacl="acl.rt.memset_d32_async", params="iiiii")
def memset_d32_async(rt: Core, ptr: int, mem_size: int, value: int, n: int, stream: int = 0) -> None:
    """Queue a fill of `n` 32-bit words at `ptr` with `value` on `stream` (0: the default stream)
    (aclrtMemsetD32Async). The checks are aclrtMemsetD32's, then the stream handle (107017); a host target is
    filled at once and the stream ignored."""
    _d32(rt, ptr, mem_size, value, n, stream)
