"""Descriptor and offset copies: copies whose addresses live in device memory.

The checks run in the reference runtime's order (docs/conformance/copy2d_batch_descriptors.md): the ACL
layer (memory.cpp), the C entries (api_c_memory.cc rtsGetMemcpyDescSize / rtsSetMemcpyDesc /
rtsMemcpyAsyncWithDesc; api_c_standard_soc.cc rtMemcpyAsyncWithOffset / rtMemcpyD2DAddrAsync), the
parameter checks (api_error.cc ApiErrorDecorator::SetMemcpyDesc / MemcpyAsyncWithDesc / MemcpyAsyncPtr /
MemcpyAsync) and the implementation (api_impl.cc, api_impl_david.cc).

aclrtSetMemcpyDesc writes a record {resv x3, len, src, dst} into device memory;
aclrtMemcpyAsyncWithDesc reads it when its task runs, so a record rewritten
before then changes what is copied. aclrtMemcpyAsyncWithOffset reads its base
addresses from 8-byte device slots, also when it runs.
"""
from __future__ import annotations

import struct

import numpy as np

from emu.models import COPY, Task

from .. import constants as C
from .. import kernels
from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID
from .core import Core, Stream, api, fail
from .transfer import ends
from . import transfer

MAX_DESC_COPY = 4 << 30  # hicann/runtime src/runtime/core/inc/spec/base_info.hpp MAX_MEMCPY_SIZE_OF_D2D
MAX_OFFSET = 0xFFFF_FFFF_FFFF
# the V1 descriptor record (hicann/runtime pkg_inc/runtime/runtime/mem.h)
_RECORD = struct.Struct("<3IIQQ")  # resv0..2, len, src, dst: 32 bytes (V1)


# -- DescriptorOps ---------------------------------------------------------------------------------


def _stars(rt: Core, kind: int) -> None:
    """The chip's descriptor copies (the declared feature "stars"), then their one kind."""
    rt.feature_gate()
    if kind != C.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"descriptor copies take kind INNER_DEVICE_TO_DEVICE (6), not {kind}")


def _desc_aligned(desc: int) -> None:
    if desc % 64:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"descriptor 0x{desc:x} is not 64-byte aligned")


def _desc_lookup(rt: Core, desc: int):
    """The descriptor's memory (its attribute query: lookup errors propagate)."""
    return transfer.locate(rt, desc, rt.product.memcpy_desc_size)


def _desc_on_device(desc: int, r) -> None:
    if not r.is_device:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"descriptor 0x{desc:x} is not in device memory")


@api("aclrtGetMemcpyDescSize", feature="stars", pyacl="acl.rt.get_memcpy_desc_size", params="i", outputs=(0,))
def get_memcpy_desc_size(rt: Core, kind: int) -> int:
    """The size in bytes of a memcpy descriptor on this product (aclrtGetMemcpyDescSize). kind must be
    INNER_DEVICE_TO_DEVICE (6), on a product with descriptor copies; else 207000."""
    if not 0 <= kind < 8:
        fail(ACL_ERROR_INVALID_PARAM, f"kind {kind} is not one of 0..7")
    _stars(rt, kind)
    return rt.product.memcpy_desc_size


@api("aclrtSetMemcpyDesc", feature="stars", sizes=("count",), pyacl="acl.rt.set_memcpy_desc", params="iiiiio",
     outputs=(0,))
def set_memcpy_desc(rt: Core, desc: int, kind: int, src: int, dst: int, count: int, config=None) -> int:
    """Write the record of a copy of `count` bytes from `src` to `dst` (device memory of one device) into the
    descriptor at `desc` (64-byte aligned device memory), by a synchronous host-to-device copy
    (aclrtSetMemcpyDesc); returns desc. kind: INNER_DEVICE_TO_DEVICE (6); config must be None."""
    if desc == 0:
        fail(ACL_ERROR_INVALID_PARAM, "desc is null")
    if not 0 <= kind < 8:
        fail(ACL_ERROR_INVALID_PARAM, f"kind {kind} is not one of 0..7")
    if src == 0 or dst == 0:
        fail(ACL_ERROR_INVALID_PARAM, "src is null" if src == 0 else "dst is null")
    if count == 0:
        fail(ACL_ERROR_INVALID_PARAM, "count is 0")
    if config is not None:
        fail(ACL_ERROR_INVALID_PARAM, "config is reserved and must be null")
    _stars(rt, kind)
    if count > MAX_DESC_COPY:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > 4 GiB")
    _desc_aligned(desc)  # ApiErrorDecorator::SetMemcpyDesc: alignment, then the three lookups
    r, off = _desc_lookup(rt, desc)
    dr, _ = transfer.locate(rt, dst, count)
    sr, _ = transfer.locate(rt, src, count)
    _desc_on_device(desc, r)
    if not (sr.is_device and dr.is_device and sr.device == dr.device):
        fail(ACL_ERROR_RT_PARAM_INVALID, "src and dst must both be device memory of one device")
    rt.current_context()  # ApiImpl::SetMemcpyDesc (implicit default device)
    record = np.zeros(rt.product.memcpy_desc_size, dtype=np.uint8)
    _RECORD.pack_into(record, 0, 0, 0, 0, count & 0xFFFFFFFF, src, dst)
    rt.descriptors[desc] = (src, dst, count)
    staging = rt.space.alloc_pinned(record.size, functional=True)
    try:
        staging.buffer()[:] = record
        transfer.copy_now(rt, transfer.CopyPlan(rt, r, off, staging, 0, record.size, C.H2D), "aclrtSetMemcpyDesc")
    finally:
        rt.space.free_pinned(staging)
    return desc


def _read_desc(rt: Core, r, off: int, desc: int) -> tuple[int | None, int | None, int]:
    if r.virtual:
        return None, None, rt.descriptors[desc][2]
    _, _, _, n, src, dst = _RECORD.unpack_from(r.view(off, _RECORD.size).tobytes())
    return src, dst, n


@api("aclrtMemcpyAsyncWithDesc", feature="stars", pyacl="acl.rt.memcpy_async_with_desc", params="iii")
def memcpy_async_with_desc(rt: Core, desc: int, kind: int, stream: int) -> None:
    """Queue on `stream` the copy the descriptor at `desc` describes (aclrtMemcpyAsyncWithDesc). The record is
    read when the task starts, so rewriting it before then changes what is copied. kind:
    INNER_DEVICE_TO_DEVICE (6); the stream must be given (0 raises 100000)."""
    if desc == 0:
        fail(ACL_ERROR_INVALID_PARAM, "desc is null")
    if not 0 <= kind < 8:
        fail(ACL_ERROR_INVALID_PARAM, f"kind {kind} is not one of 0..7")
    if stream == 0:
        fail(ACL_ERROR_INVALID_PARAM, "stream is null: descriptor copies need an explicit stream")
    rt.feature_gate()
    rt.check_stream_handle(stream)
    _stars(rt, kind)
    r, off = _desc_lookup(rt, desc)  # ApiErrorDecorator::MemcpyAsyncWithDesc: location, then alignment
    _desc_on_device(desc, r)
    _desc_aligned(desc)
    s = rt.stream_of(stream)  # ApiImpl::MemcpyAsyncPtr: context (107002), then the stream's (107003)
    _enqueue_indirect(rt, s, "aclrtMemcpyAsyncWithDesc", lambda: _read_desc(rt, r, off, desc), 0, 0, kind,
                      ((r, off, rt.product.memcpy_desc_size),), rt.descriptors.get(desc))


def _indirect_access(of: tuple) -> tuple:
    """What an indirect copy reads and writes, for the sanitizer, as its addresses read now: the slots or the
    descriptor, and the copy's ends (those last set, in timing-only mode). of: (rt, resolve, doff, soff,
    slots, known) of `_enqueue_indirect` (built only when the sanitizer is on, `Core.submit`)."""
    rt, resolve, doff, soff, slots, known = of
    access = [(r, off, n, "r") for r, off, n in slots]
    try:
        src, dst, n = resolve()
        if src is None and known is not None:
            src, dst, n = known
        if src is not None and n:
            sr, so = transfer.locate(rt, src + soff, n)
            dr, do = transfer.locate(rt, dst + doff, n)
            access += [(sr, so, n, "r"), (dr, do, n, "w")]
    except Exception:  # addresses the task itself will refuse when it starts
        pass
    return tuple(access)


def _enqueue_indirect(rt: Core, s: Stream, what: str, resolve, doff: int, soff: int, kind: int, slots=(),
                      known=None) -> None:
    """A copy whose (src, dst, count) are read from device memory when its task starts (device to device on
    one device, whatever kind was asked). slots: the (region, offset, nbytes) it reads them from; known: the
    (src, dst, count) last set, where the memory holds no bytes."""
    plan = {}
    task = Task(COPY, device=s.device, src=s.device, dst=s.device, label=what)
    task.kind_asked, task.kind_used = int(kind), C.D2D

    def start():
        src, dst, n = resolve()
        task.nbytes = n
        if src is None:  # timing-only: nothing to read, nothing to move
            return
        sr, so = transfer.locate(rt, src + soff, n)
        dr, do = transfer.locate(rt, dst + doff, n)
        plan.update(sr=sr, so=so, dr=dr, do=do, n=n)
        task.src, task.dst = ends(sr, dr)

    def complete():
        if plan and transfer.has_bytes(rt, what, plan["dr"], plan["sr"]):
            kernels.copy(plan["dr"].target(plan["do"], plan["n"]), plan["sr"].view(plan["so"], plan["n"]))

    task.on_start, task.on_complete = start, complete
    rt.submit(s, task, (rt, resolve, doff, soff, slots, known), 0.0, _indirect_access)


@api("aclrtMemcpyAsyncWithOffset", gate=False, feature="d2d_by_offset",
     sizes=("dest_max", "dst_offset", "count", "src_offset"),
     pyacl="acl.rt.memcpy_async_with_offset", params="iiiiiiii")
def memcpy_async_with_offset(rt: Core, dst: int, dest_max: int, dst_offset: int, src: int, count: int,
                             src_offset: int, kind: int, stream: int = 0) -> None:
    """Queue on `stream` a copy of `count` bytes from *src + src_offset to *dst + dst_offset
    (aclrtMemcpyAsyncWithOffset): dst and src are the addresses of 8-byte device-memory slots holding the
    base addresses, read when the task starts. kind: INNER_DEVICE_TO_DEVICE (6); count 0 does nothing."""
    if count == 0:
        return
    if kind != C.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"kind must be INNER_DEVICE_TO_DEVICE (6), not {kind}")
    rt.gate("aclrtMemcpyAsyncWithOffset")
    rt.feature_gate()
    rt.check_stream_handle(stream)
    if dst == 0 or src == 0:
        fail(ACL_ERROR_RT_PARAM_INVALID, "dst is null" if dst == 0 else "src is null")
    if count > dest_max:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > destMax {dest_max}")
    if count > MAX_DESC_COPY:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > 4 GiB")
    for name, v in (("srcDataOffset", src_offset), ("dstDataOffset", dst_offset)):
        if v > MAX_OFFSET:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{name} {v} is larger than 0xFFFFFFFFFFFF")
    if dst_offset >= dest_max:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"dstDataOffset {dst_offset} >= destMax {dest_max}")
    if count > dest_max - dst_offset:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > destMax - dstDataOffset = {dest_max - dst_offset}")
    rt.current_context(implicit=False)  # ApiErrorDecorator::MemcpyAsync, before the locations
    ss, ss_off = transfer.locate(rt, src, 8)
    ds, ds_off = transfer.locate(rt, dst, 8)
    for name, r in (("src", ss), ("dst", ds)):
        if not r.is_device:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{name} must be the address of an 8-byte slot in device memory")
    s = rt.stream_of(stream)

    def resolve():
        if ds.virtual or ss.virtual:
            return None, None, count
        d = int(ds.view(ds_off, 8).view(np.uint64)[0])
        sv = int(ss.view(ss_off, 8).view(np.uint64)[0])
        return sv, d, count

    _enqueue_indirect(rt, s, "aclrtMemcpyAsyncWithOffset", resolve, dst_offset, src_offset, kind,
                      ((ss, ss_off, 8), (ds, ds_off, 8)))
