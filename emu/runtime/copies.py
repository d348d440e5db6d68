"""Copy APIs: aclrtMemcpy, aclrtMemcpyAsync, aclrtMemcpyAsyncWithCondition (2D, batch and descriptor
copies are in copy2d.py, batch.py and descriptors.py)."""
from __future__ import annotations

import numpy as np

from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID
from ..memory import Region
from . import capture, peer, transfer
from .core import Core, Stream, api, fail
from ..constants import D2D, H2B2D, H2D, H2H


# -- copies ----------------------------------------------------------------------------------
def _check_copy_args(rt: Core, dst: int, src: int, kind: int) -> None:
    if dst == 0:
        fail(ACL_ERROR_INVALID_PARAM, "dst is null")
    if src == 0:
        fail(ACL_ERROR_INVALID_PARAM, "src is null")
    if not 0 <= kind <= 5:
        fail(ACL_ERROR_INVALID_PARAM, f"copy kind {kind} is not one of 0..5")


@api("aclrtMemcpy", sizes=("dest_max", "count"), pyacl="acl.rt.memcpy", params="iiiii")
def memcpy(rt: Core, dst: int, dest_max: int, src: int, count: int, kind: int) -> None:
    """Copy `count` bytes from `src` to `dst` and block this thread until done (aclrtMemcpy).

    The direction comes from the addresses; `kind` (aclrtMemcpyKind) is only range-checked (0..5).
    count must not exceed dest_max (107000); count 0, or dst == src, does nothing. Pageable host memory
    goes through the driver's staging (EP); a copy between devices needs peer access on most products
    (507899). Refused (107030) while a capture makes synchronous copies unsafe. On timing-only memory
    only the time passes."""
    if count == 0:
        return
    _check_copy_args(rt, dst, src, kind)
    if dest_max == 0:
        fail(ACL_ERROR_RT_PARAM_INVALID, "destMax is 0")
    if count > dest_max:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > destMax {dest_max}")
    if dst == src:
        return
    rt.current_context()
    capture.check_capture_safe(rt)
    plan = transfer.plan_copy(rt, dst, src, count, kind)  # the direction comes from the addresses
    peer.check_peer_copy(rt, plan.src, plan.dst)
    transfer.copy_now(rt, plan, "aclrtMemcpy")


def _memcpy_async(rt: Core, dst: int, dest_max: int, src: int, count: int, kind: int, stream: int,
                  what: str) -> None:
    if count == 0:
        return
    _check_copy_args(rt, dst, src, kind)
    handle = rt.lookup(stream, Stream, "stream") if stream else None  # G6 at the runtime's entry
    if count > dest_max:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > destMax {dest_max}")
    ctx = rt.current_context(implicit=False)
    plan = transfer.plan_copy(rt, dst, src, count, kind)
    ep = rt.ep_mode
    if kind == H2B2D and ep:
        if plan.src.is_device or not plan.dst.is_device:
            fail(ACL_ERROR_RT_PARAM_INVALID,
                 "HOST_TO_BUF_TO_DEVICE needs a host source and a device destination")
        plan.used, pageable = H2D, False
    else:
        if ep:  # corrected from where the pointers are
            plan.used = transfer.correct_kind(plan.sloc, plan.dloc, kind)
        # (transfer.UNREG, not Location.UNREGISTERED: an enum's member read through its class costs about ten
        # times a module's name)
        pageable = ep and plan.used not in (H2H, D2D) and transfer.UNREG in (plan.sloc, plan.dloc)
    if ep and plan.used == H2H:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an asynchronous host-to-host copy is not supported in EP mode")
    if dst == src:
        return
    peer.check_peer_copy(rt, plan.src, plan.dst)
    if pageable:  # pageable memory: synchronize the stream, then copy synchronously
        s = rt.stream_of(stream, check_context=False)
        transfer.sync_for_pageable(rt, s)
        transfer.copy_now(rt, plan, what)
        return
    if handle is None:
        s = ctx.default_stream
    elif handle.ctx is ctx:
        s = handle
    else:
        s = rt.stream_of(stream)  # raises the stream-context error
    if kind == H2B2D and ep:  # staged during the call, so src may be freed on return
        sr = plan.src
        staging = Region(0, count, Region.PINNED, buf=None if sr.virtual else np.empty(count, dtype=np.uint8))
        staging.virtual = sr.virtual
        rt.sanitize_host_span(what, sr, plan.soff, count, "r")  # the host reads the source now
        rt.tick(count / rt.product.hardware.host_memcpy_bandwidth)
        transfer.mover(rt, staging, 0, sr, plan.soff, count, what)()
        plan.src, plan.soff = staging, 0
    transfer.enqueue_copy(rt, s, plan, what)


@api("aclrtMemcpyAsync", sizes=("dest_max", "count"), pyacl="acl.rt.memcpy_async", params="iiiiii")
def memcpy_async(rt: Core, dst: int, dest_max: int, src: int, count: int, kind: int,
                 stream: int = 0) -> None:
    """Queue a copy of `count` bytes from `src` to `dst` on `stream` (0: the default stream) (aclrtMemcpyAsync).

    The bytes move when the task completes, in simulated time; on timing-only memory only the time passes.
    On EP products `kind` is corrected from where the pointers are (a kind they forbid raises 107000, a
    host-to-host copy 207000), and pageable host memory makes the copy synchronous: the stream is drained,
    then the copy is made; there HOST_TO_BUF_TO_DEVICE (5) stages `src` during the call, so it may be freed
    on return. count must not exceed dest_max (107000); count 0, or dst == src, does nothing."""
    _memcpy_async(rt, dst, dest_max, src, count, kind, stream, "aclrtMemcpyAsync")


@api("aclrtMemcpyAsyncWithCondition", sizes=("dest_max", "count"),
     pyacl="acl.rt.memcpy_async_with_condition", params="iiiiii")
def memcpy_async_with_condition(rt: Core, dst: int, dest_max: int, src: int, count: int, kind: int,
                                stream: int = 0) -> None:
    """Queue a copy as aclrtMemcpyAsync does, with the same checks (aclrtMemcpyAsyncWithCondition, which ACL
    deprecates in favour of aclrtMemcpyAsync)."""
    _memcpy_async(rt, dst, dest_max, src, count, kind, stream, "aclrtMemcpyAsyncWithCondition")
