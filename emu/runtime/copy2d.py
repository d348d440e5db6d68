"""aclrtMemcpy2d and aclrtMemcpy2dAsync (docs/conformance/copy2d_batch_descriptors.md): pitched copies.

The checks run in the reference runtime's order (docs/conformance/copy2d_batch_descriptors.md):
the ACL layer (memory.cpp CheckMemcpy2dParam), the C entry (api_c.cc rtMemcpy2d / rtMemcpy2dAsync),
the parameter checks (api_error.cc ApiErrorDecorator::MemCopy2DSync / MemCopy2DAsync), then the
implementation (api_impl.cc ApiImpl::MemCopy2DSync / MemCopy2DAsync) and the driver.

The bytes move through the pitched-copy kernel. The runtime issues a device-to-device 2D copy
as one task per row, a host<->device one as DMA tasks of at most the async copy unit each
(paying the per-row descriptor cost). The timing model runs either as one model task split
into those DMA tasks (`Task.chunk`: one flow of width x height bytes, a DMA task's fixed
cost per task, its record counting the tasks), so the emulator's memory and time do not
grow with the rows.
"""
from __future__ import annotations

from emu.models import COPY, Task

from .. import kernels
from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID
from ..memory import Region
from .core import Core, Stream, api, fail
from ..constants import D2D, D2H, DEFAULT, H2D
from .transfer import correct_kind
from . import capture, transfer

MAX_WIDTH = 5_000_000  # hicann/runtime src/runtime/core/inc/common/internal_error_define.hpp
MAX_HEIGHT = 5_242_880


def has_default_2d_stream(product) -> bool:
    """Whether a null stream of aclrtMemcpy2dAsync means the default stream: chips with
    RT_FEATURE_DEVICE_CTRL_SQ (runtime.cc Runtime::GetCurStream; config/910_B_93, 950), the configs'
    `memcpy2d_default_stream` feature."""
    return product.has("memcpy2d_default_stream")


# -- Copy2dOps -------------------------------------------------------------------------------------


def _acl_2d(dst, dpitch, src, spitch, width, height, kind) -> bool:
    """The ACL layer (memory.cpp CheckMemcpy2dParam); False means the zero-size shortcut."""
    if width == 0 or height == 0:
        return False
    if dst == 0:
        fail(ACL_ERROR_INVALID_PARAM, "dst is null")
    if src == 0:
        fail(ACL_ERROR_INVALID_PARAM, "src is null")
    if width > spitch or width > dpitch:
        fail(ACL_ERROR_INVALID_PARAM, f"width {width} is larger than a pitch (spitch {spitch}, dpitch {dpitch})")
    if kind not in (H2D, D2H, D2D, DEFAULT):
        fail(ACL_ERROR_INVALID_PARAM, f"kind {kind} is not HOST_TO_DEVICE, DEVICE_TO_HOST, DEVICE_TO_DEVICE "
                                      f"or DEFAULT")
    return True


def _limits_2d(width: int, height: int) -> None:
    """The runtime's parameter checks that the ACL layer leaves reachable
    (api_error.cc ApiErrorDecorator::MemCopy2DCheckParam)."""
    if height > MAX_HEIGHT:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"height {height} > {MAX_HEIGHT}")
    if width > MAX_WIDTH:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"width {width} > {MAX_WIDTH}")


def _null_stream_2d(rt: Core, stream: int) -> None:
    """A null stream (runtime.cc Runtime::GetCurStream): the current context's default stream on chips
    with a default stream for 2D copies, else 107000; no current context is 107000 too, not 107002."""
    if stream != 0:
        return
    if not has_default_2d_stream(rt.product):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"stream is null: aclrtMemcpy2dAsync needs an explicit stream on "
                                         f"{rt.product.name}")
    if rt.ctx is None:
        fail(ACL_ERROR_RT_PARAM_INVALID, "stream is null and there is no current context to take the "
                                         "default stream from")


def _deployment_2d(rt: Core) -> None:
    """No 2D copy in some deployments: 200I/500 A2 in RC mode, 310P with the control CPU open (207000; the
    aclrtMemcpy2d and aclrtMemcpy2dAsync constraints of hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md).

    The runtime has no check of its own (no chip or run-mode test on either path of hicann/runtime
    src/runtime/api/impl/api_error.cc ApiErrorDecorator::MemCopy2DSync / MemCopy2DAsync or api_impl.cc): the
    platform refuses, and the runtime first reaches the platform about the copy's memory when it asks the driver
    where the pointers are (GetLocationType -> NpuDriver::PtrGetRealLocation). So this runs there: after every
    check of the arguments (the size limits, the null stream, sync D2D) and the context check, before the
    location query and the kind correction (after which RC memory, all device memory, would give 107000)."""
    if rt.product.no_2d_copy:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"no 2D copy on {rt.product.name} in "
                                               f"{rt.product.deployment} mode")


def _plan_2d(rt: Core, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
             kind: int) -> transfer.CopyPlan:
    """The copy plan of a 2D copy: each end spans (height - 1) rows of its pitch plus one row."""
    return transfer.plan_copy(rt, dst, src, width * height, kind, dst_span=(height - 1) * dpitch + width,
                              src_span=(height - 1) * spitch + width)


def _move_2d(rt: Core, dst: Region, doff: int, dpitch: int, src: Region, soff: int, spitch: int,
             width: int, height: int, what: str, blocking: bool = False):
    """What moves a 2D copy's rows when its task completes; `blocking`: the task of the calling thread's
    blocking call, whose rows move once its lock is released (`transfer.unlocked`)."""
    owner = transfer.blocking_owner(rt, blocking)
    def move():
        if not transfer.has_bytes(rt, what, dst, src):
            return
        dn, sn = (height - 1) * dpitch + width, (height - 1) * spitch + width
        transfer.unlocked(rt, owner, width * height, kernels.copy_2d, dst.target(doff, dn), dpitch,
                          src.view(soff, sn), spitch, width, height)

    return move


def _copy_2d_now(rt: Core, plan: transfer.CopyPlan, dpitch: int, spitch: int, width: int, height: int,
                 what: str) -> None:
    """A blocking 2D copy. Like aclrtMemcpy it is one synchronous driver call (ApiImpl::MemCopy2DSync calls
    the driver's MemCopy2D with DEVMM_MEMCPY2D_SYNC, as MemCopySync calls its MemCopySync,
    hicann/runtime src/runtime/api/impl/api_impl.cc), so the host pays the same round trip."""
    transfer.copy_now(rt, plan, what, move=_move_2d(rt, plan.dst, plan.doff, dpitch, plan.src, plan.soff, spitch,
                                                    width, height, what, blocking=True), rows=height,
                      access=_access_2d(plan, dpitch, spitch, width, height))


def _access_2d(plan: transfer.CopyPlan, dpitch: int, spitch: int, width: int, height: int) -> tuple:
    """The rows a 2D copy reads and writes, for the sanitizer: (region, offset, width, mode, pitch, rows)."""
    return (plan.src, plan.soff, width, "r", spitch, height), (plan.dst, plan.doff, width, "w", dpitch, height)


@api("aclrtMemcpy2d", sizes=("dpitch", "spitch", "width", "height"), pyacl="acl.rt.memcpy2d", params="iiiiiii")
def memcpy2d(rt: Core, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
             kind: int) -> None:
    """Copy a matrix of `height` rows of `width` bytes from `src` (rows `spitch` bytes apart) to `dst` (rows
    `dpitch` apart) and block this thread until done (aclrtMemcpy2d).

    Host-to-device or device-to-host only: the kind is corrected from the pointers in every run mode and
    anything else raises 107000 (DEVICE_TO_DEVICE asked for: 207000). width or height 0 does nothing."""
    if not _acl_2d(dst, dpitch, src, spitch, width, height, kind):
        return
    rt.runtime_layer()  # the product gate, at the runtime's entry (api_c.cc rtMemcpy2d)
    _limits_2d(width, height)
    if kind == D2D:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "synchronous 2D copies are HOST_TO_DEVICE or DEVICE_TO_HOST only")
    rt.current_context(implicit=False)  # GetLocationType: the context comes before the locations
    _deployment_2d(rt)
    plan = _plan_2d(rt, dst, dpitch, src, spitch, width, height, kind)
    plan.used = correct_kind(plan.sloc, plan.dloc, kind)  # MemCopy2DSync corrects in every run mode
    if plan.used not in (H2D, D2H):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"a synchronous 2D copy from {plan.sloc.name} to {plan.dloc.name} "
                                         f"memory is not HOST_TO_DEVICE or DEVICE_TO_HOST")
    capture.check_capture_safe(rt)
    _copy_2d_now(rt, plan, dpitch, spitch, width, height, "aclrtMemcpy2d")


@api("aclrtMemcpy2dAsync", sizes=("dpitch", "spitch", "width", "height"),
     pyacl="acl.rt.memcpy2d_async", params="iiiiiiii")
def memcpy2d_async(rt: Core, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
                   kind: int, stream: int = 0) -> None:
    """Queue a 2D copy (as aclrtMemcpy2d: `width` x `height` bytes, rows `spitch` and `dpitch` apart) on
    `stream` (aclrtMemcpy2dAsync).

    A null stream is the default stream only on products with one for 2D copies, else 107000. On EP products
    the kind is corrected from the pointers, and pageable host memory makes the copy synchronous, as in
    aclrtMemcpyAsync. DEVICE_TO_DEVICE runs one task per row, on every product with 2D copies."""
    if not _acl_2d(dst, dpitch, src, spitch, width, height, kind):
        return
    rt.check_stream_handle(stream)  # the product gate, then the handle (api_c.cc rtMemcpy2dAsync)
    _null_stream_2d(rt, stream)
    _limits_2d(width, height)
    rt.current_context(implicit=False)  # MemcpyAsyncCheckLocation
    _deployment_2d(rt)
    plan = _plan_2d(rt, dst, dpitch, src, spitch, width, height, kind)
    if rt.product.ep_mode:
        plan.used = correct_kind(plan.sloc, plan.dloc, kind)
    if plan.used not in (H2D, D2H, D2D):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"a 2D copy from {plan.sloc.name} to {plan.dloc.name} memory "
                                         f"is not HOST_TO_DEVICE, DEVICE_TO_HOST or DEVICE_TO_DEVICE")
    what = "aclrtMemcpy2dAsync"
    if rt.product.ep_mode and plan.used != D2D and plan.pageable:  # pageable
        transfer.sync_for_pageable(rt, rt.stream_of(stream, check_context=False))
        _copy_2d_now(rt, plan, dpitch, spitch, width, height, what)
        return
    s = rt.stream_of(stream)
    _enqueue_2d(rt, s, plan, dpitch, spitch, width, height, what, per_row=plan.used == D2D)


def _enqueue_2d(rt: Core, s: Stream, plan: transfer.CopyPlan, dpitch: int, spitch: int, width: int,
                height: int, what: str, per_row: bool) -> None:
    move = _move_2d(rt, plan.dst, plan.doff, dpitch, plan.src, plan.soff, spitch, width, height, what)
    if per_row:  # the runtime's task per row, back to back: one model task of `height` row-sized chunks
        task = Task(COPY, nbytes=width * height, chunk=width, device=s.device, src=plan.s_dev, dst=plan.d_dev,
                    label=what, on_complete=move)
    else:
        rows = max(1, rt.product.async_copy_unit // width)  # rows in one DMA task of at most the copy unit
        task = Task(COPY, nbytes=width * height, rows=height, chunk=rows * width if height > rows else 0,
                    device=s.device, src=plan.s_dev, dst=plan.d_dev, label=what, on_complete=move)
    rt.submit(s, transfer.tagged(task, plan), _access_2d(plan, dpitch, spitch, width, height))
