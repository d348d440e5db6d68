"""aclrtMemcpy2d and aclrtMemcpy2dAsync (spec 9.3, 9.4): pitched copies.

The bytes move through the pitched-copy kernel. A device-to-device 2D copy is
issued as one task per row, as the runtime does; host<->device ones as DMA
tasks of at most the async copy unit each.
"""
from __future__ import annotations

from models import COPY, STAGED, Task

from .. import kernels
from ..errors import ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_PARAM_INVALID
from ..memory import Location, Region
from .core import Core, Stream, api, fail
from .memops import D2D, D2H, DEFAULT, H2D, correct_kind, ends

MAX_WIDTH = 5_000_000  # [source internal_error_define.hpp]
MAX_HEIGHT = 5_242_880


class Copy2dOps:
    """Mixed into `Runtime`."""

    def _check_2d(self: Core, dst, dpitch, src, spitch, width, height, kind, stream: int | None = None) -> bool:
        """ACL-layer checks, the stream handle (async: the runtime's C entry), then the runtime's parameter
        checks; False means the zero-size shortcut."""
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
        if stream is not None:
            self.check_stream_handle(stream)
        if height > MAX_HEIGHT:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"height {height} > {MAX_HEIGHT}")
        if width > MAX_WIDTH:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"width {width} > {MAX_WIDTH}")
        return True

    def _locate_2d(self: Core, addr: int, pitch: int, width: int, height: int) -> tuple[Region, int]:
        return self.locate(addr, (height - 1) * pitch + width)

    def _move_2d(self: Core, dst: Region, doff: int, dpitch: int, src: Region, soff: int, spitch: int,
                 width: int, height: int, what: str):
        def move():
            if not self.has_bytes(what, dst, src):
                return
            dn, sn = (height - 1) * dpitch + width, (height - 1) * spitch + width
            kernels.copy_2d(dst.view(doff, dn), dpitch, src.view(soff, sn), spitch, width, height)

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

    @api("aclrtMemcpy2d")
    def memcpy2d(self: Core, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
                 kind: int) -> None:
        """Synchronous 2D copy: host-to-device or device-to-host only."""
        if not self._check_2d(dst, dpitch, src, spitch, width, height, kind):
            return
        if kind == D2D:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "synchronous 2D copies are HOST_TO_DEVICE or DEVICE_TO_HOST only")
        if self.product.no_2d_copy:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"no 2D copy on {self.product.name} in "
                                                   f"{self.product.deployment} mode")
        dr, doff = self._locate_2d(dst, dpitch, width, height)
        sr, soff = self._locate_2d(src, spitch, width, height)
        sloc, dloc = self.space.location(sr, src), self.space.location(dr, dst)
        final = correct_kind(sloc, dloc, kind) if self.product.ep_mode else kind
        if final not in (H2D, D2H):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"a synchronous 2D copy from {sloc.name} to {dloc.name} memory "
                                             f"is not HOST_TO_DEVICE or DEVICE_TO_HOST")
        self.current_context()
        self.check_capture_safe()
        self._copy_2d_now(dr, doff, dpitch, sr, soff, spitch, width, height, "aclrtMemcpy2d")

    @api("aclrtMemcpy2dAsync")
    def memcpy2d_async(self: Core, dst: int, dpitch: int, src: int, spitch: int, width: int, height: int,
                       kind: int, stream: int = 0) -> None:
        if not self._check_2d(dst, dpitch, src, spitch, width, height, kind, stream):
            return
        if self.product.no_2d_copy:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"no 2D copy on {self.product.name} in "
                                                   f"{self.product.deployment} mode")
        self.current_context(implicit=False)
        dr, doff = self._locate_2d(dst, dpitch, width, height)
        sr, soff = self._locate_2d(src, spitch, width, height)
        sloc, dloc = self.space.location(sr, src), self.space.location(dr, dst)
        final = correct_kind(sloc, dloc, kind) if self.product.ep_mode else kind
        if final not in (H2D, D2H, D2D):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"a 2D copy from {sloc.name} to {dloc.name} memory "
                                             f"is not HOST_TO_DEVICE, DEVICE_TO_HOST or DEVICE_TO_DEVICE")
        if final == D2D and not self.product.has("memcpy2d_async_d2d"):
            fail(ACL_ERROR_INVALID_PARAM, f"asynchronous 2D DEVICE_TO_DEVICE copies are not supported on "
                                          f"{self.product.name}")
        what = "aclrtMemcpy2dAsync"
        if self.product.ep_mode and final != D2D and Location.UNREGISTERED in (sloc, dloc):  # pageable
            s = self.stream_of(stream, check_context=False)
            self.sync_for_pageable(s)
            self._copy_2d_now(dr, doff, dpitch, sr, soff, spitch, width, height, what)
            return
        s = self.stream_of(stream)
        self._enqueue_2d(s, dr, doff, dpitch, sr, soff, spitch, width, height, what, per_row=final == D2D)

    def _enqueue_2d(self: Core, s: Stream, dr, doff, dpitch, sr, soff, spitch, width, height, what,
                    per_row: bool) -> None:
        s_dev, d_dev = ends(sr, dr)
        rows = 1 if per_row else max(1, self.product.async_copy_unit // width)
        for r in range(0, height, rows):
            h = min(rows, height - r)
            self.submit(s, Task(COPY, nbytes=width * h, rows=0 if per_row else h, device=s.device, src=s_dev,
                                dst=d_dev, label=what, on_complete=self._move_2d(dr, doff + r * dpitch, dpitch, sr, soff + r * spitch,
                                                          spitch, width, h, what)))
