"""Memory APIs: allocation, pointer attributes, copies and memsets.

Copies and fills become tasks on streams; the bytes move in the task's
completion callback, at the simulated instant the task ends. Synchronous APIs
run the simulation until their own task completes.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from emu.models import COPY, FILL, STAGED, Task

from .. import constants as C
from .. import kernels
from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_MEMORY_TYPE,
                      ACL_ERROR_RT_MEMORY_ALLOCATION, ACL_ERROR_RT_PARAM_INVALID, AclError)
from ..memory import HOST_PAGE, HUGE_1G, HUGE_PAGE, Location, Region, is_device_address, writable_view
from .core import Core, Stream, api, fail
from .handles import DevicePointer, HostPointer

H2H, H2D, D2H, D2D, DEFAULT, H2B2D = 0, 1, 2, 3, 4, 5
HOST, DEV, UNREG = Location.HOST, Location.DEVICE, Location.UNREGISTERED
ON_CHIP_UNIT = 4 << 30  # largest on-chip D2D task: hicann/runtime src/runtime/core/inc/spec/base_info.hpp
# memset block: hicann/runtime src/runtime/core/inc/context/context.hpp MEM_BLOCK_SIZE
MEMSET_BLOCK = 64 << 20


_DDR_ATTRS = frozenset({C.ACL_DDR_MEM, C.ACL_DDR_MEM_HUGE, C.ACL_DDR_MEM_NORMAL,
                        C.ACL_DDR_MEM_P2P_HUGE, C.ACL_DDR_MEM_P2P_NORMAL})
_HUGE1G_ATTRS = frozenset({C.ACL_HBM_MEM_HUGE1G, C.ACL_HBM_MEM_P2P_HUGE1G, C.ACL_MEM_HUGE1G, C.ACL_MEM_P2P_HUGE1G})


def roundup(n: int, unit: int) -> int:
    return (n + unit - 1) // unit * unit


@dataclass(frozen=True)
class PointerAttributes:
    """aclrtPtrAttributes, what aclrtPointerGetAttributes returns: the location type (aclrtMemLocationType),
    the device id (0 for host memory) and the page size in bytes."""
    type: int  # aclrtMemLocationType
    id: int  # device id for DEVICE, 0 for host memory
    page_size: int


# Kind auto-correction (docs/conformance/memory_copies_fills.md, aclrtMemcpyAsync;
# hicann/runtime src/runtime/api/impl/api_error.cc ApiErrorDecorator::MemcpyKindAutoCorrect):
# (src, dst) -> (forced kind, allowed kinds, what DEFAULT becomes).
_CORRECTION = {(int(a), int(b)): rule for (a, b), rule in {
    (HOST, DEV): (H2D, None, H2D),
    (DEV, HOST): (D2H, None, D2H),
    (HOST, HOST): (H2H, None, H2H),
    (DEV, DEV): (D2D, None, D2D),
    (UNREG, DEV): (None, {H2D, D2D}, H2D),
    (DEV, UNREG): (None, {D2H, D2D}, D2H),
    (HOST, UNREG): (None, {H2H, H2D}, H2H),
    (UNREG, HOST): (None, {H2H, D2H}, H2H),
    (UNREG, UNREG): (None, {H2H, H2D, D2H, D2D}, H2H),
}.items()}


def correct_kind(src: Location, dst: Location, kind: int) -> int:
    """The kind an EP-mode async copy really uses, from where its pointers are. A kind the locations forbid
    raises 107000; other kinds, and location pairs the table leaves alone, pass unchanged
    (hicann/runtime src/runtime/api/impl/api_error.cc ApiErrorDecorator::MemcpyKindAutoCorrect)."""
    if kind not in (H2H, H2D, D2H, D2D, DEFAULT):
        return kind
    rule = _CORRECTION.get((int(src), int(dst)))  # (plain ints hash faster than enum members)
    if rule is None:
        return kind  # pairs the table leaves alone pass unchanged
    forced, allowed, default = rule
    if forced is not None:
        return forced
    if kind == DEFAULT:
        return default
    if kind not in allowed:
        fail(ACL_ERROR_RT_PARAM_INVALID,
             f"kind {C.MEMCPY_KIND_NAMES[kind]} does not fit a copy from {src.name} to {dst.name} memory")
    return kind


def ends(src: Region, dst: Region) -> tuple[int | None, int | None]:
    """(source device, destination device) of a copy, None for host memory (a mapped alias is host memory)."""
    return (src.device if src.is_device and src.origin != "alias" else None,
            dst.device if dst.is_device and dst.origin != "alias" else None)


class MemoryOps:
    """Mixed into `Runtime`."""

    # -- moving bytes ------------------------------------------------------------------
    def has_bytes(self: Core, what: str, *regions: Region) -> bool:
        """Whether a task's data effect on `regions` should happen now: not on freed memory (warned once: the
        bytes are dropped), not on timing-only memory (it has none)."""
        for r in regions:
            if r.freed:
                self.space.warn_freed(r, what)
                return False
        for r in regions:
            if r.virtual:
                return False
        return True

    def _mover(self: Core, dst: Region, doff: int, src: Region, soff: int, n: int, what: str):
        dst.check_writable()  # a read-only destination is refused at the call, before anything is queued
        def move():
            if not self.has_bytes(what, dst, src):
                return
            if src.is_device and not src.materialized:  # never written: zeros
                if dst.materialized or not dst.is_device:
                    kernels.fill(dst.target(doff, n), 0)
                return
            kernels.copy(dst.target(doff, n), src.view(soff, n))

        return move

    def _filler(self: Core, dst: Region, off: int, n: int, value: int, what: str):
        dst.check_writable()
        def fill():
            if self.has_bytes(what, dst):
                kernels.fill(dst.target(off, n), value)

        return fill

    def locate(self: Core, addr: int, nbytes: int) -> tuple[Region, int]:
        if self._st.gate is not None:
            self.runtime_layer()
        return self.space.resolve(addr, max(nbytes, 1))

    def run_blocking(self: Core, task: Task) -> None:
        """Run a task outside any stream and block this host thread until it completes."""
        dev = task.device
        self.machine.submit(self.machine.stream(f"dev{dev}/sync", dev), task, self.clock)
        self.wait_for(task)
        if task.error is not None:
            raise task.error

    def pageable(self: Core, r: Region, off: int) -> bool:
        return self.space.location(r, r.base + off) == UNREG

    def _copy_now(self: Core, dst: Region, doff: int, src: Region, soff: int, n: int, what: str) -> None:
        """A blocking copy: the host waits for it, other streams go on. Pageable memory goes through
        the driver's staging pipeline; host-to-host copies are the CPU's."""
        s_dev, d_dev = ends(src, dst)
        move = self._mover(dst, doff, src, soff, n, what)
        if s_dev is None and d_dev is None:
            self.tick(n / self.product.hardware.host_memcpy_bandwidth)
            move()
            return
        staged = self.product.ep_mode and (  # on the board (RC, control CPU) there is no staging
            (s_dev is None and self.pageable(src, soff)) or (d_dev is None and self.pageable(dst, doff)))
        self.run_blocking(Task(STAGED if staged else COPY, nbytes=n, device=d_dev if s_dev is None else s_dev,
                               src=s_dev, dst=d_dev, label=what, on_complete=move))
        self.tick(self.product.hardware.sync_copy)  # the driver's round trip: the host is woken once it is done

    def sync_for_pageable(self: Core, s: Stream) -> None:
        """An async call on pageable memory: refused on a captured stream, else the stream is drained."""
        if s.capturing:
            fail(ACL_ERROR_RT_PARAM_INVALID, "pageable host memory cannot be captured: use aclrtMallocHost "
                                             "or aclrtHostRegister memory")
        self.check_capture_safe(converted=True)
        self._drain(s)

    def copy_unit(self: Core, s_dev: int | None, d_dev: int | None) -> int:
        """The largest task the runtime issues for a copy between these ends
        (hicann/runtime src/runtime/api/impl/api_impl.cc LaunchAsyncCopy;
        hicann/runtime src/runtime/core/inc/spec/base_info.hpp MEMCPY_ASYNC_UNIT_SIZE, MAX_MEMCPY_SIZE_OF_D2D).
        """
        unit = self._units.get((s_dev, d_dev))
        if unit is None:
            unit = self._units[(s_dev, d_dev)] = self._copy_unit(s_dev, d_dev)
        return unit

    def _copy_unit(self: Core, s_dev: int | None, d_dev: int | None) -> int:
        route = self.product.hardware.route(s_dev, d_dev)
        if route in ("h2d", "d2h", "h2h"):
            return self.product.async_copy_unit
        if route == "pcie-p2p":
            return 64 << 20
        if route == "ub":
            return 256 << 20
        return ON_CHIP_UNIT  # on-chip SDMA, SIO, HCCS

    def _enqueue_copy(self: Core, s: Stream, dst: Region, doff: int, src: Region, soff: int, n: int,
                      what: str) -> None:
        """Split into the runtime's task sizes (`copy_unit`) and queue on `s`."""
        s_dev = src.device if src.is_device and src.origin != "alias" else None
        d_dev = dst.device if dst.is_device and dst.origin != "alias" else None
        unit = self.copy_unit(s_dev, d_dev)
        move = None if (src.virtual or dst.virtual) and not (src.freed or dst.freed) else \
            self._mover(dst, doff, src, soff, n, what)
        # the runtime's tasks of `unit` bytes run back to back: one model task stands for them all
        self.submit(s, Task.copy(n, s.device, s_dev, d_dev, what, move, unit))

    # -- allocation ----------------------------------------------------------------------
    def _alloc_device(self: Core, device: int, nbytes: int, policy: int, origin: str = "malloc",
                      functional: bool | None = None) -> Region:
        p = policy if 0 <= policy <= 7 else C.ACL_MEM_MALLOC_HUGE_FIRST  # unknown -> default
        # npu_driver.cc NpuDriver::transMemAttribute gates only the three 2 MiB / 4 KiB P2P policies on the
        # chip's P2P flag; HUGE1G_ONLY_P2P (7) is gated by the 1 GiB page flag alone (below)
        if p in (3, 4, 5) and not self.product.has("p2p"):
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"P2P malloc policies need peer access, which "
                                                   f"{self.product.name} lacks")
        nbytes = roundup(nbytes, 32)
        space = self.space
        if p in (6, 7):
            if not self.product.has("huge1g"):
                fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"1 GiB pages are not available on {self.product.name}")
            return space.alloc_device(device, roundup(nbytes, HUGE_1G), HUGE_1G, HUGE_1G, policy, origin, functional)
        if p in (1, 4):
            return space.alloc_device(device, roundup(nbytes, HUGE_PAGE), HUGE_PAGE, HUGE_PAGE, policy, origin, functional)
        if p in (0, 3) and nbytes > (1 << 20):
            try:
                return space.alloc_device(device, roundup(nbytes, HUGE_PAGE), HUGE_PAGE, HUGE_PAGE, policy, origin, functional)
            except AclError as e:
                if e.code != ACL_ERROR_RT_MEMORY_ALLOCATION:
                    raise  # otherwise fall back to normal pages
        return space.alloc_device(device, nbytes, 64, HOST_PAGE, policy, origin, functional)

    @api("aclrtMalloc", sizes=("size",))
    def malloc(self: Core, size: int, policy: int = C.ACL_MEM_MALLOC_HUGE_FIRST, *,
               functional: bool | None = None) -> int:
        """Allocate `size` bytes of device memory on the current device (aclrtMalloc); returns the address.

        policy (aclrtMemMallocPolicy): by default huge pages above 1 MiB, else normal ones; an unknown value is
        the default. The allocation is `size` rounded up to 32 plus the product's padding; out of memory
        raises 207001. functional=False: an address range without bytes (timing-only); None: the runtime's
        (`configure(functional=...)`)."""
        if size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "size is 0")
        pad = 0 if policy in (6, 7) else self.product.malloc_padding
        if size < 0 or size + 32 + pad > C.SIZE_MAX:
            fail(ACL_ERROR_INVALID_PARAM, f"size {size} overflows once rounded and padded")
        ctx = self.current_context()
        return DevicePointer(self._alloc_device(ctx.device.id, roundup(size, 32) + pad, policy,
                                                functional=functional).base, self)

    def _driver_allocation(self: Core, ptr: int, what: str) -> Region:
        """The device allocation the driver's halMemFree releases at `ptr` (npu_driver_mem.cc
        NpuDriver::DevMemFree, the end of both aclrtFree and acldvppFree), else 107000 with nothing freed:
        an address in no allocation, inside one but not at its start, host memory (page-locked, pageable, or
        RC page-locked memory: aclrtFreeHost's), or the device address of a mapped host registration (its
        pages are the host's: aclrtHostUnregister releases it, and the registration stays intact)."""
        r = self.space.find(ptr)
        if r is None:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{what}: 0x{ptr:x} is in no device allocation")
        if r.origin == "alias":
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{what}: 0x{ptr:x} is the device address of a mapped host "
                                             f"registration, not a device allocation: release it with "
                                             f"aclrtHostUnregister")
        if not r.is_device or r.origin == "malloc_host":
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{what}: 0x{ptr:x} is host memory ({r.describe()}), not a device "
                                             f"allocation" + (": free it with aclrtFreeHost"
                                                              if r.origin == "malloc_host" else ""))
        if r.base != ptr:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{what}: 0x{ptr:x} is {ptr - r.base} bytes inside {r.describe()}, "
                                             f"not its start")
        return r

    @api("aclrtFree")
    def free(self: Core, ptr: int) -> None:
        """Free the device allocation that starts at `ptr` (aclrtFree), whether aclrtMalloc, aclrtMallocWithCfg or
        acldvppMalloc made it, at once: tasks still queued on it drop their bytes, with a warning. Any other
        address (host memory, inside an allocation, a mapped registration's device address) raises 107000."""
        if ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "devPtr is null")
        self.runtime_layer()
        self.space.free_device(self._driver_allocation(ptr, "aclrtFree"))

    @api("aclrtMallocHost", sizes=("size",))
    def malloc_host(self: Core, size: int, *, functional: bool | None = None) -> int:
        """Allocate `size` bytes of page-locked host memory (aclrtMallocHost); returns the address.

        Needs a current context (107002). In RC and control-CPU deployments it is device memory, as on the
        board. functional=False: an address range without bytes (timing-only); None: the runtime's."""
        if size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "size is 0")
        if size < 0 or size > C.SIZE_MAX - 32:
            fail(ACL_ERROR_INVALID_PARAM, f"size {size} is out of range")
        self.current_context()
        return HostPointer(self._alloc_host(roundup(size, 32), functional).base, self)

    def _alloc_host(self: Core, nbytes: int, functional: bool | None = None) -> Region:
        """Page-locked host memory; in RC mode host memory is device memory (normal pages)
        (hicann/runtime docs/zh/api_ref/11-02_host_memory_management.md, aclrtMallocHost)."""
        if not self.product.ep_mode:
            return self.space.alloc_device(self.current_context().device.id, nbytes, 64, HOST_PAGE,
                                           origin="malloc_host", functional=functional)
        try:
            return self.space.alloc_pinned(nbytes, functional=functional)
        except (MemoryError, ValueError):  # numpy refuses sizes beyond what the machine can address
            fail(ACL_ERROR_RT_MEMORY_ALLOCATION, f"cannot allocate {nbytes} bytes of page-locked host memory")

    @api("aclrtFreeHost")
    def free_host(self: Core, ptr: int) -> None:
        """Free memory of aclrtMallocHost, and the host registrations inside it, at once (aclrtFreeHost). Device
        memory, or an address that is not the start of such an allocation, raises 107000."""
        if ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "hostPtr is null")
        self.runtime_layer()
        r = self.space.find(ptr)
        if r is not None and r.is_device and r.origin != "malloc_host":
            fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{ptr:x} is device memory: free it with aclrtFree")
        if r is None or r.origin != "malloc_host" or r.base != ptr:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{ptr:x} is not the start of an aclrtMallocHost allocation")
        for reg in self.space.registrations_overlapping(r.base, r.size):
            self.space.unregister(reg)
        if r.is_device:
            self.space.free_device(r)
        else:
            self.space.free_pinned(r)

    @api("aclrtGetMemInfo")
    def get_mem_info(self: Core, attr: int) -> tuple[int, int]:
        """(free, total) bytes of the current device's memory of kind `attr` (aclrtMemAttr 0..17, else 107016)
        (aclrtGetMemInfo). A DDR attribute on an HBM product is (0, 0)."""
        if not 0 <= attr <= 17:
            fail(ACL_ERROR_RT_INVALID_MEMORY_TYPE, f"memory attribute {attr} is not one of 0..17")
        dev = self.current_context().device.id
        if self.product.memory_kind == "HBM" and attr in _DDR_ATTRS:
            return 0, 0  # no DDR device memory on an HBM product
        # npu_driver_mem.cc NpuDriver::MemGetInfoEx: a 1 GiB page attribute on a chip without 1 GiB pages is
        # FEATURE_NOT_SUPPORT, except on the DDR chips (dc, mini_v3), whose driver first maps every attribute
        # its table lacks (the 1 GiB ones included) to DDR: there the query reports the whole memory
        if attr in _HUGE1G_ATTRS and not self.product.has("huge1g") and self.product.memory_kind == "HBM":
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, f"memory attribute {attr} (1 GiB pages) is not supported on "
                                                   f"{self.product.name}")
        total = self.space.capacity
        return total - self.space.used[dev], total

    @api("aclrtPointerGetAttributes")
    def pointer_get_attributes(self: Core, ptr: int) -> PointerAttributes:
        """Where `ptr` is (aclrtPointerGetAttributes): a PointerAttributes(type, id, page_size) whose type is
        DEVICE (id: the device), HOST (page-locked or registered memory) or UNREGISTERED (other host memory).
        An address in the device range that no allocation holds raises 107000."""
        if ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "ptr is null")
        self.runtime_layer()
        r = self.space.find(ptr)
        if r is None:
            if is_device_address(ptr):
                fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{ptr:x} is in no device allocation: unknown memory type")
            return PointerAttributes(Location.UNREGISTERED, 0, HOST_PAGE)
        if r.is_device:
            return PointerAttributes(Location.DEVICE, self.visible.index(r.device), r.page_size)
        return PointerAttributes(self.space.location(r, ptr), 0, r.page_size)

    # -- host memory shown by the program ---------------------------------------------------
    def register_host(self: Core, obj) -> int:
        """Make a numpy array's or bytes-like object's memory usable as pageable host memory; returns its
        address (what acl.util.bytes_to_ptr and numpy_to_ptr give). Not an ACL API."""
        with self.lock:
            return self.space.register_host(obj)[0]

    def host_array(self: Core, ptr: int, nbytes: int) -> np.ndarray:
        """A uint8 array over `nbytes` of known host memory at `ptr` (acl.util): writable, except over memory
        the program showed read-only, where a write through the array raises instead of changing it. Device
        memory raises ValueError, memory the emulator does not know AclError. Not an ACL API."""
        with self.lock:
            r = self.space.find(ptr)
            if r is not None and r.is_device and r.origin != "malloc_host":
                raise ValueError(f"0x{ptr:x} is device memory: the host cannot read it directly; "
                                 f"copy it to the host with aclrtMemcpy first")
            r, off = self.space.resolve(ptr, max(nbytes, 1))
            if r.kind != Region.PAGEABLE:
                return r.buffer()[off:off + nbytes]
            # memory the program showed read-only (a read-only array, a one-byte bytes object) stays read-only
            return writable_view(ptr, nbytes, keep=r.owner, readonly=r.readonly)

    def device_array(self: Core, ptr: int, shape, dtype, *, writable: bool = False) -> np.ndarray:
        """A numpy view of device memory at `ptr` as an array of `shape` and `dtype`, for inspection in a
        notebook or a test: the bytes as they are now (work still queued has not run: synchronize first).
        Read-only unless writable=True (a write through it changes device memory outside the timing model).

        Functional memory only: a timing-only allocation has no bytes and raises ValueError, as do host
        memory (see `host_array`), an address in no device allocation, a freed one, and a shape that does not
        fit between `ptr` and the allocation's end. Not an ACL API."""
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise TypeError(f"dtype {dtype} holds Python objects, not bytes: use a numeric dtype")
        dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in dims):
            raise ValueError(f"shape {shape!r} is not a tuple of sizes >= 0")
        nbytes = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
        with self.lock:
            r = self.space.find(ptr)
            if r is None or r.freed:
                raise ValueError(f"0x{int(ptr):x} is in no device allocation")
            if not r.is_device or r.origin == "malloc_host":
                raise ValueError(f"0x{int(ptr):x} is host memory ({r.describe()}): use host_array(ptr, nbytes) "
                                 f"and .view(dtype)")
            if r.virtual:
                raise ValueError(f"{r.describe()} is timing-only: it has no bytes to show (allocate it in functional "
                                 f"mode: emu.configure(functional=True) or malloc(..., functional=True))")
            off = ptr - r.base
            if off + nbytes > r.size:
                raise ValueError(f"{dims} x {dtype} is {nbytes} bytes from 0x{int(ptr):x}: {off + nbytes - r.size} "
                                 f"bytes past the end of {r.describe()}")
            view = r.buffer()[off:off + nbytes].view(dtype).reshape(dims)
        if not writable:
            view.flags.writeable = False
        return view

    # -- copies ----------------------------------------------------------------------------------
    def _check_copy_args(self, dst: int, src: int, kind: int) -> None:
        if dst == 0:
            fail(ACL_ERROR_INVALID_PARAM, "dst is null")
        if src == 0:
            fail(ACL_ERROR_INVALID_PARAM, "src is null")
        if not 0 <= kind <= 5:
            fail(ACL_ERROR_INVALID_PARAM, f"copy kind {kind} is not one of 0..5")

    @api("aclrtMemcpy", sizes=("dest_max", "count"))
    def memcpy(self: Core, dst: int, dest_max: int, src: int, count: int, kind: int) -> None:
        """Copy `count` bytes from `src` to `dst` and block this thread until done (aclrtMemcpy).

        The direction comes from the addresses; `kind` (aclrtMemcpyKind) is only range-checked (0..5).
        count must not exceed dest_max (107000); count 0, or dst == src, does nothing. Pageable host memory
        goes through the driver's staging (EP); a copy between devices needs peer access on most products
        (507899). Refused (107030) while a capture makes synchronous copies unsafe. On timing-only memory
        only the time passes."""
        if count == 0:
            return
        self._check_copy_args(dst, src, kind)
        if dest_max == 0:
            fail(ACL_ERROR_RT_PARAM_INVALID, "destMax is 0")
        if count > dest_max:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > destMax {dest_max}")
        if dst == src:
            return
        self.current_context()
        self.check_capture_safe()
        dr, doff = self.locate(dst, count)
        sr, soff = self.locate(src, count)
        self.check_peer_copy(sr, dr)
        self._copy_now(dr, doff, sr, soff, count, "aclrtMemcpy")

    def _memcpy_async(self: Core, dst: int, dest_max: int, src: int, count: int, kind: int, stream: int,
                      what: str) -> None:
        if count == 0:
            return
        self._check_copy_args(dst, src, kind)
        handle = self._lookup(stream, Stream, "stream") if stream else None  # G6 at the runtime's entry
        if count > dest_max:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > destMax {dest_max}")
        ctx = self.current_context(implicit=False)
        dr, doff = self.locate(dst, count)
        sr, soff = self.locate(src, count)
        ep = self._ep
        if kind == H2B2D and ep:
            if sr.is_device or not dr.is_device:
                fail(ACL_ERROR_RT_PARAM_INVALID,
                     "HOST_TO_BUF_TO_DEVICE needs a host source and a device destination")
            final, pageable = H2D, False
        else:
            sloc, dloc = self.space.location(sr, src), self.space.location(dr, dst)
            final = correct_kind(sloc, dloc, kind) if ep else kind
            pageable = ep and final not in (H2H, D2D) and UNREG in (sloc, dloc)
        if ep and final == H2H:
            fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "an asynchronous host-to-host copy is not supported in EP mode")
        if dst == src:
            return
        self.check_peer_copy(sr, dr)
        if pageable:  # pageable memory: synchronize the stream, then copy synchronously
            s = self.stream_of(stream, check_context=False)
            self.sync_for_pageable(s)
            self._copy_now(dr, doff, sr, soff, count, what)
            return
        if handle is None:
            s = ctx.default_stream
        elif handle.ctx is ctx:
            s = handle
        else:
            s = self.stream_of(stream)  # raises the stream-context error
        if kind == H2B2D and ep:  # staged during the call, so src may be freed on return
            staging = Region(0, count, Region.PINNED, buf=None if sr.virtual else np.empty(count, dtype=np.uint8))
            staging.virtual = sr.virtual
            self.tick(count / self.product.hardware.host_memcpy_bandwidth)
            self._mover(staging, 0, sr, soff, count, what)()
            sr, soff = staging, 0
        self._enqueue_copy(s, dr, doff, sr, soff, count, what)

    @api("aclrtMemcpyAsync", sizes=("dest_max", "count"))
    def memcpy_async(self: Core, dst: int, dest_max: int, src: int, count: int, kind: int,
                     stream: int = 0) -> None:
        """Queue a copy of `count` bytes from `src` to `dst` on `stream` (0: the default stream) (aclrtMemcpyAsync).

        The bytes move when the task completes, in simulated time; on timing-only memory only the time passes.
        On EP products `kind` is corrected from where the pointers are (a kind they forbid raises 107000, a
        host-to-host copy 207000), and pageable host memory makes the copy synchronous: the stream is drained,
        then the copy is made; there HOST_TO_BUF_TO_DEVICE (5) stages `src` during the call, so it may be freed
        on return. count must not exceed dest_max (107000); count 0, or dst == src, does nothing."""
        self._memcpy_async(dst, dest_max, src, count, kind, stream, "aclrtMemcpyAsync")

    @api("aclrtMemcpyAsyncWithCondition", sizes=("dest_max", "count"))
    def memcpy_async_with_condition(self: Core, dst: int, dest_max: int, src: int, count: int, kind: int,
                                    stream: int = 0) -> None:
        """Queue a copy as aclrtMemcpyAsync does, with the same checks (aclrtMemcpyAsyncWithCondition, which ACL
        deprecates in favour of aclrtMemcpyAsync)."""
        self._memcpy_async(dst, dest_max, src, count, kind, stream, "aclrtMemcpyAsyncWithCondition")

    # -- memsets ------------------------------------------------------------------------------------
    def _fill_host_now(self: Core, r: Region, off: int, n: int, value: int, what: str) -> None:
        self.tick(n / self.product.hardware.host_memset_bandwidth)
        self._filler(r, off, n, value, what)()

    @api("aclrtMemset", sizes=("max_count", "count"))
    def memset(self: Core, ptr: int, max_count: int, value: int, count: int) -> None:
        """Fill `count` bytes at `ptr` with the low byte of `value` and block this thread until done (aclrtMemset).

        count must not exceed max_count (107000); count 0 does nothing. Host memory is filled by the CPU at once.
        Refused (107030) while a capture makes synchronous memsets unsafe."""
        if count == 0:
            return
        if ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "devPtr is null")
        self.current_context()
        self.check_capture_safe()
        if count > max_count:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > maxCount {max_count}")
        r, off = self.locate(ptr, count)
        value &= 0xFF
        if not r.is_device:
            self._fill_host_now(r, off, count, value, "aclrtMemset")
            return
        self.run_blocking(Task(FILL, nbytes=count, device=r.device, label="aclrtMemset",
                               on_complete=self._filler(r, off, count, value, "aclrtMemset")))

    @api("aclrtMemsetAsync", sizes=("max_count", "count"))
    def memset_async(self: Core, ptr: int, max_count: int, value: int, count: int, stream: int = 0) -> None:
        """Queue a fill of `count` bytes at `ptr` with the low byte of `value` on `stream` (0: the default stream)
        (aclrtMemsetAsync).

        A host target is filled at once on the calling thread, not in stream order. A device target is one
        memset task where the product has one, else the runtime's 64 MiB blocks: a block filled on the host and
        copied to the device, then copied on the device into the rest."""
        if count == 0:
            return
        if ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "devPtr is null")
        self.check_stream_handle(stream)
        if count > max_count:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"count {count} > maxCount {max_count}")
        self.current_context()  # api_impl.cc ApiImpl::MemsetAsync: CurrentContext() may open the default device
        s = self.stream_of(stream)
        r, off = self.locate(ptr, count)
        value &= 0xFF
        if not r.is_device:  # host targets: filled now, on the calling thread, not stream-ordered
            self._fill_host_now(r, off, count, value, "aclrtMemsetAsync")
            return
        what = "aclrtMemsetAsync"
        if self.product.has("memset_task") and r.device == s.device:  # 950: one memset task
            self.submit(s, Task(FILL, nbytes=count, device=s.device, label=what,
                                on_complete=self._filler(r, off, count, value, what)))
            return
        # the runtime's block scheme: fill a pinned block on the host, copy it to the first block,
        # then replicate it on the device into the remaining blocks and the tail
        first = min(MEMSET_BLOCK, count)
        self.tick(first / self.product.hardware.host_memset_bandwidth)
        for b in range(0, count, MEMSET_BLOCK):
            m = min(MEMSET_BLOCK, count - b)
            self.submit(s, Task(COPY, nbytes=m, device=s.device, src=None if b == 0 else r.device, dst=r.device,
                                label=what, on_complete=self._filler(r, off + b, m, value, what)))

    # -- DVPP memory (acl.media) --------------------------------------------------------------------
    @api("acldvppMalloc", sizes=("size",))
    def dvpp_malloc(self: Core, size: int) -> int:
        """Allocate `size` bytes of device memory for DVPP on the current device (acldvppMalloc); returns the
        address. As aclrtMalloc with the default policy; acldvppFree or aclrtFree releases it."""
        if size == 0:
            fail(ACL_ERROR_INVALID_PARAM, "size is 0")
        ctx = self.current_context()
        return self._alloc_device(ctx.device.id, roundup(size, 32) + self.product.malloc_padding,
                                  C.ACL_MEM_MALLOC_HUGE_FIRST, origin="dvpp").base

    @api("acldvppFree")
    def dvpp_free(self: Core, ptr: int) -> None:
        """Free device memory at the start of a device allocation, whichever API made it (acldvppFree).

        api_impl.cc ApiImpl::DevDvppFree: the pointer's location must be DEVICE (107000 otherwise, host
        memory and a mapped registration's device address included), then the driver's halMemFree, which
        releases a device allocation at its start, whichever API made it (see `_driver_allocation`)."""
        if ptr == 0:
            fail(ACL_ERROR_INVALID_PARAM, "devPtr is null")
        self.runtime_layer()
        self.space.free_device(self._driver_allocation(ptr, "acldvppFree"))


class FillD32Ops:
    """aclrtMemsetD32 / aclrtMemsetD32Async (docs/conformance/memory_copies_fills.md), mixed into `Runtime`."""

    def _d32_target(self: Core, ptr: int, mem_size: int, n: int) -> tuple[Region, int] | None:
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
        if self.space.find(ptr) is None and is_device_address(ptr):
            fail(ACL_ERROR_RT_PARAM_INVALID, f"0x{ptr:x} is in no device allocation: unknown memory type")
        r, off = self.locate(ptr, 4 * n)
        loc = self.space.location(r, ptr)
        if loc not in (HOST, DEV, Location.HOST_NUMA):
            fail(ACL_ERROR_INVALID_PARAM, f"0x{ptr:x} is {loc.name} memory: MemsetD32 needs memory "
                                          f"allocated by ACL")
        return r, off

    def _d32_filler(self: Core, r: Region, off: int, n: int, value: int, what: str):
        r.check_writable()
        def fill():
            if self.has_bytes(what, r):
                kernels.fill_u32(r.target(off, n), value)

        return fill

    def _d32(self: Core, ptr: int, mem_size: int, value: int, n: int, stream: int | None) -> None:
        """The ACL layer (memory.cpp aclrtMemsetD32Impl / AsyncImpl), then the standard-SoC runtime
        (api_c_standard_soc.cc rtMemsetD32 / Async -> api_impl_standard_soc.cc ApiImpl::MemsetD32 / Async),
        which has no chip gate: every product whose config does not list the API fills the memory."""
        what = "aclrtMemsetD32" if stream is None else "aclrtMemsetD32Async"
        target = self._d32_target(ptr, mem_size, n)
        if target is None or not self._d32_runtime_present(what):
            return
        r, off = target
        if stream is not None:
            self.check_stream_handle(stream)  # rtMemsetD32Async validates the handle first, host target or not
        self.current_context()  # ApiImpl::CurrentContext() may open the configured default device
        value &= 0xFFFFFFFF
        if not r.is_device:  # host target: filled now; the async variant ignores the stream
            self.tick(4 * n / self.product.hardware.host_memset_bandwidth)
            self._d32_filler(r, off, 4 * n, value, what)()
        elif stream is None:
            self._d32_device_sync(r, off, 4 * n, value, what)
        else:
            self._d32_device_async(self.stream_of(stream), r, off, 4 * n, value, what)

    def _d32_runtime_present(self: Core, what: str) -> bool:
        """A product whose config lists the API has the stub runtime (api_c_stub.cc rtMemsetD32 returns
        207000 at once); the ACL layer reports that 207000 as success (docs/conformance/memory_copies_fills.md,
        aclrtMemsetD32 row 7)."""
        try:
            self.gate(what)
        except AclError as e:
            warnings.warn(f"{what}: {e.message}; the ACL layer reports success and nothing is written",
                          RuntimeWarning, stacklevel=5)
            return False
        return True

    def _d32_device_sync(self: Core, r: Region, off: int, nbytes: int, value: int, what: str) -> None:
        block = self.product.async_copy_unit  # per block: fill a pinned temporary, then a blocking H2D
        for b in range(0, nbytes, block):
            m = min(block, nbytes - b)
            self.tick(m / self.product.hardware.host_memset_bandwidth)
            self.run_blocking(Task(COPY, nbytes=m, device=r.device, src=None, dst=r.device, label=what,
                                   on_complete=self._d32_filler(r, off + b, m, value, what)))

    def _d32_device_async(self: Core, s: Stream, r: Region, off: int, nbytes: int, value: int, what: str) -> None:
        if self.product.has("memset_task") and r.device == s.device:
            self.submit(s, Task(FILL, nbytes=nbytes, device=s.device, label=what,
                                on_complete=self._d32_filler(r, off, nbytes, value, what)))
            return
        block = self.product.async_copy_unit
        for b in range(0, nbytes, block):  # the pinned temporary is filled at enqueue
            m = min(block, nbytes - b)
            self.tick(m / self.product.hardware.host_memset_bandwidth)
            self.submit(s, Task(COPY, nbytes=m, device=s.device, src=None, dst=r.device, label=what,
                                on_complete=self._d32_filler(r, off + b, m, value, what)))

    @api("aclrtMemsetD32", gate=False, sizes=("mem_size", "n"))
    def memset_d32(self: Core, ptr: int, mem_size: int, value: int, n: int) -> None:
        """Fill `n` 32-bit words at `ptr` with `value` and block this thread until done (aclrtMemsetD32).

        `ptr`: 4-byte aligned memory ACL allocated, host or device (pageable memory raises 100000), with
        mem_size >= 4 * n; n 0 does nothing. Where the product's config lists the API as unsupported, the
        ACL layer reports success and nothing is written (with a RuntimeWarning)."""
        self._d32(ptr, mem_size, value, n, None)

    @api("aclrtMemsetD32Async", gate=False, sizes=("mem_size", "n"))
    def memset_d32_async(self: Core, ptr: int, mem_size: int, value: int, n: int, stream: int = 0) -> None:
        """Queue a fill of `n` 32-bit words at `ptr` with `value` on `stream` (0: the default stream)
        (aclrtMemsetD32Async). The checks are aclrtMemsetD32's, then the stream handle (107017); a host target is
        filled at once and the stream ignored."""
        self._d32(ptr, mem_size, value, n, stream)
