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

from emu.models import COPY, STAGED, Task

from .. import kernels
from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID
from ..memory import Location, Region
from .core import Core, Stream, api, fail
from .memops import D2D, D2H, DEFAULT, H2D, correct_kind, ends

MAX_WIDTH = 5_000_000  # hicann/runtime src/runtime/core/inc/common/internal_error_define.hpp
MAX_HEIGHT = 5_242_880


def has_default_2d_stream(product) -> bool:
    """Whether a null stream of aclrtMemcpy2dAsync means the default stream: chips with
    RT_FEATURE_DEVICE_CTRL_SQ (runtime.cc Runtime::GetCurStream; config/910_B_93, 950), the configs'
    `memcpy2d_default_stream` feature."""
    return product.has("memcpy2d_default_stream")


class Copy2dOps:
    """Mixed into `Runtime`."""

    @staticmethod
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

    @staticmethod
    def _limits_2d(width: int, height: int) -> None:
        """The runtime's parameter checks that the ACL layer leaves reachable
        (api_error.cc ApiErrorDecorator::MemCopy2DCheckParam)."""
        if height > MAX_HEIGHT:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"height {height} > {MAX_HEIGHT}")
        if width > MAX_WIDTH:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"width {width} > {MAX_WIDTH}")

    def _null_stream_2d(self: Core, stream: int) -> None:
        """A null stream (runtime.cc Runtime::GetCurStream): the current context's default stream on chips
        with a default stream for 2D copies, else 107000; no current context is 107000 too, not 107002."""
        if stream != 0:
            return
        if not has_default_2d_stream(self.product):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"stream is null: aclrtMemcpy2dAsync needs an explicit stream on "
                                             f"{self.product.name}")
        if self.ctx is None:
            fail(ACL_ERROR_RT_PARAM_INVALID, "stream is null and there is no current context to take the "
                                             "default stream from")

    def _runtime_entry_2d(self: Core) -> None:
        """The runtime layer begins: the product gate, then no 2D copy in some deployments
        (docs/conformance/copy2d_batch_descriptors.md rows 2S6 and 2A6, from the API reference
        hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md). The source has no check of its own for
        the latter (the driver would refuse), so it is applied as the product gate is."""
        self.runtime_layer()
        if self.product.no_2d_copy:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"no 2D copy on {self.product.name} in "
                                                   f"{self.product.deployment} mode")

    def _locate_2d(self: Core, addr: int, pitch: int, width: int, height: int) -> tuple[Region, int]:
        return self.locate(addr, (height - 1) * pitch + width)

    def _move_2d(self: Core, dst: Region, doff: int, dpitch: int, src: Region, soff: int, spitch: int,
                 width: int, height: int, what: str):
        def move():
            if not self.has_bytes(what, dst, src):
                return
            dn, sn = (height - 1) * dpitch + width, (height - 1) * spitch + width
            kernels.copy_2d(dst.target(doff, dn), dpitch, src.view(soff, sn), spitch, width, height)

        return move

    def _copy_2d_now(self: Core, dr, doff, dpitch, sr, soff, spitch, width, height, what) -> None:
        s_dev, d_dev = ends(sr, dr)
        move = self._move_2d(dr, doff, dpitch, sr, soff, spitch, width, height, what)
        if s_dev is None and d_dev is None:  # both ends in host memory: the CPU copies
            self.tick(width * height / self.product.hardware.host_memcpy_bandwidth)
            move()
            return
        staged = self.product.ep_mode and (
            (s_dev is None and self.pageable(sr, soff)) or (d_dev is None and self.pageable(dr, doff)))
        self.run_blocking(Task(STAGED if staged else COPY, nbytes=width * height, rows=0 if staged else height,
                               device=d_dev if s_dev is None else s_dev, src=s_dev, dst=d_dev, label=what,
                               on_complete=move))

    def _locations_2d(self: Core, dst, dpitch, src, spitch, width, height):
        dr, doff = self._locate_2d(dst, dpitch, width, height)
        sr, soff = self._locate_2d(src, spitch, width, height)
        return dr, doff, sr, soff, self.space.location(sr, src), self.space.location(dr, dst)

    @api("aclrtMemcpy2d", sizes=("dpitch", "spitch", "width", "height"))
    def memcpy2d(self: Core, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
                 kind: int) -> None:
        """Copy a matrix of `height` rows of `width` bytes from `src` (rows `spitch` bytes apart) to `dst` (rows
        `dpitch` apart) and block this thread until done (aclrtMemcpy2d).

        Host-to-device or device-to-host only: the kind is corrected from the pointers in every run mode and
        anything else raises 107000 (DEVICE_TO_DEVICE asked for: 207000). width or height 0 does nothing."""
        if not self._acl_2d(dst, dpitch, src, spitch, width, height, kind):
            return
        self._runtime_entry_2d()
        self._limits_2d(width, height)
        if kind == D2D:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "synchronous 2D copies are HOST_TO_DEVICE or DEVICE_TO_HOST only")
        self.current_context(implicit=False)  # GetLocationType: the context comes before the locations
        dr, doff, sr, soff, sloc, dloc = self._locations_2d(dst, dpitch, src, spitch, width, height)
        final = correct_kind(sloc, dloc, kind)  # MemCopy2DSync corrects in every run mode
        if final not in (H2D, D2H):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"a synchronous 2D copy from {sloc.name} to {dloc.name} memory "
                                             f"is not HOST_TO_DEVICE or DEVICE_TO_HOST")
        self.check_capture_safe()
        self._copy_2d_now(dr, doff, dpitch, sr, soff, spitch, width, height, "aclrtMemcpy2d")

    @api("aclrtMemcpy2dAsync", sizes=("dpitch", "spitch", "width", "height"))
    def memcpy2d_async(self: Core, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
                       kind: int, stream: int = 0) -> None:
        """Queue a 2D copy (as aclrtMemcpy2d: `width` x `height` bytes, rows `spitch` and `dpitch` apart) on
        `stream` (aclrtMemcpy2dAsync).

        A null stream is the default stream only on products with one for 2D copies, else 107000. On EP products
        the kind is corrected from the pointers, and pageable host memory makes the copy synchronous, as in
        aclrtMemcpyAsync. DEVICE_TO_DEVICE runs one task per row, on products that allow it (else 100000)."""
        if not self._acl_2d(dst, dpitch, src, spitch, width, height, kind):
            return
        self._runtime_entry_2d()
        self.check_stream_handle(stream)
        self._null_stream_2d(stream)
        self._limits_2d(width, height)
        self.current_context(implicit=False)  # MemcpyAsyncCheckLocation
        dr, doff, sr, soff, sloc, dloc = self._locations_2d(dst, dpitch, src, spitch, width, height)
        final = correct_kind(sloc, dloc, kind) if self.product.ep_mode else kind
        if final not in (H2D, D2H, D2D):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"a 2D copy from {sloc.name} to {dloc.name} memory "
                                             f"is not HOST_TO_DEVICE, DEVICE_TO_HOST or DEVICE_TO_DEVICE")
        what = "aclrtMemcpy2dAsync"
        if self.product.ep_mode and final != D2D and Location.UNREGISTERED in (sloc, dloc):  # pageable
            self.sync_for_pageable(self.stream_of(stream, check_context=False))
            self._copy_2d_now(dr, doff, dpitch, sr, soff, spitch, width, height, what)
            return
        s = self.stream_of(stream)
        if final == D2D and not self.product.has("memcpy2d_async_d2d"):
            fail(ACL_ERROR_INVALID_PARAM, f"asynchronous 2D DEVICE_TO_DEVICE copies are not supported on "
                                          f"{self.product.name}")
        self._enqueue_2d(s, dr, doff, dpitch, sr, soff, spitch, width, height, what, per_row=final == D2D)

    def _enqueue_2d(self: Core, s: Stream, dr, doff, dpitch, sr, soff, spitch, width, height, what,
                    per_row: bool) -> None:
        s_dev, d_dev = ends(sr, dr)
        if per_row:  # the runtime's task per row, back to back: one model task of `height` row-sized chunks
            self.submit(s, Task(COPY, nbytes=width * height, chunk=width, device=s.device, src=s_dev, dst=d_dev,
                                label=what, on_complete=self._move_2d(dr, doff, dpitch, sr, soff, spitch, width,
                                                                      height, what)))
            return
        rows = max(1, self.product.async_copy_unit // width)  # rows in one DMA task of at most the copy unit
        self.submit(s, Task(COPY, nbytes=width * height, rows=height, chunk=rows * width if height > rows else 0,
                            device=s.device, src=s_dev, dst=d_dev, label=what,
                            on_complete=self._move_2d(dr, doff, dpitch, sr, soff, spitch, width, height, what)))
