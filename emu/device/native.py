"""The block runner (runner.c) built once into the cache and called through ctypes, and kernels' records read.

`run(entry, blocks, args, ub_size, npu_arch, window)` runs a launch's blocks on the calling thread without the GIL
and returns a `Result`: how it ended, the block and address of a fault, the printf text, what the blocks did, and
(with a window of global memory) the byte ranges they read and wrote there.
"""
from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..capi.build import cached, compile_library, compiler

HERE = Path(__file__).resolve().parent
INCLUDE = HERE / "include"
RUNNER = HERE / "runner.c"
LIBRARY = "libacl_emu_device.so"

OK, FAULT, TRAP, FAILED = 0, 1, 2, 3


class _Result(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("block", ctypes.c_uint32), ("signal", ctypes.c_int),
                ("address", ctypes.c_uint64), ("message", ctypes.c_char * 512), ("output", ctypes.c_void_p),
                ("output_len", ctypes.c_size_t), ("gm_to_ub", ctypes.c_uint64), ("ub_to_gm", ctypes.c_uint64),
                ("vector_bytes", ctypes.c_uint64), ("vector_calls", ctypes.c_uint64), ("cpu_ns", ctypes.c_uint64),
                ("spans", ctypes.c_void_p), ("n_spans", ctypes.c_size_t), ("coarse", ctypes.c_int)]


SPAN = np.dtype([("lo", "<u8"), ("hi", "<u8"), ("block", "<u4"), ("write", "<u4")])  # runner.c's Span


class KernelInfo(ctypes.Structure):
    """acl_emu_kernel_info (acl_emu_launch.h): a kernel's record in its library."""
    _fields_ = [("abi", ctypes.c_uint32), ("nparams", ctypes.c_uint32), ("name", ctypes.c_char_p),
                ("entry", ctypes.c_void_p), ("offsets", ctypes.POINTER(ctypes.c_uint32)),
                ("sizes", ctypes.POINTER(ctypes.c_uint32)), ("pointers", ctypes.POINTER(ctypes.c_uint8)),
                ("args_size", ctypes.c_uint32), ("flags", ctypes.c_uint32)]


ABI = 2  # ACL_EMU_BLOCK_ABI
GM_CHECKED = 1  # ACL_EMU_KERNEL_GM_CHECKED: the kernel's own loads and stores report global memory


@dataclass(frozen=True)
class Kernel:
    """A kernel as its record describes it."""
    name: str
    entry: int
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    pointers: tuple[bool, ...]
    args_size: int
    checked: bool = False  # its own loads and stores of global memory are reported (GM_CHECKED)


@dataclass(frozen=True)
class Result:
    status: int
    block: int
    signal: int
    address: int
    message: str
    output: bytes
    gm_to_ub: int
    ub_to_gm: int
    vector_bytes: int
    vector_calls: int
    cpu_ns: int
    spans: np.ndarray  # SPAN records: what the blocks touched in the window, by block, mode and address
    coarse: bool  # the spans were joined across gaps (a kernel touching very many scattered ranges)


def kernel(address: int) -> Kernel | None:
    """The kernel whose record is at `address`, None when it is not one (another ABI)."""
    k = KernelInfo.from_address(address)
    if k.abi != ABI or k.nparams > 1024:
        return None
    n = k.nparams
    return Kernel(k.name.decode(errors="replace"), k.entry, tuple(k.offsets[i] for i in range(n)),
                  tuple(k.sizes[i] for i in range(n)), tuple(bool(k.pointers[i]) for i in range(n)), k.args_size,
                  bool(k.flags & GM_CHECKED))


def _key() -> str:
    h = hashlib.sha256()
    for part in (RUNNER.read_bytes(), (INCLUDE / "acl_emu_block.h").read_bytes(), " ".join(compiler()).encode()):
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()[:16]


def library_path() -> Path:
    """The runner library, built first if the cache does not have it (emu.capi.build.cached)."""
    return cached("device", _key(), LIBRARY, _build) / LIBRARY


def _build(work: Path) -> None:
    compile_library([*compiler(), "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-U_FORTIFY_SOURCE",
                     "-D_FORTIFY_SOURCE=0", f"-I{INCLUDE}", str(RUNNER), "-o", str(work / LIBRARY), "-lpthread"],
                    LIBRARY)


_lib: ctypes.CDLL | None = None


def _library() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(str(library_path()))
        lib.acl_emu_run.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint64,
                                    ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint64, ctypes.POINTER(_Result))
        lib.acl_emu_run.restype = ctypes.c_int
        lib.acl_emu_free.argtypes = (ctypes.c_void_p,)
        lib.acl_emu_write.argtypes = (ctypes.c_char_p, ctypes.c_size_t)
        _lib = lib
    return _lib


def run(entry: int, blocks: int, args: list[bytes], ub_size: int, npu_arch: int,
        window: tuple[int, int] = (0, 0)) -> Result:
    """Run `blocks` blocks of the kernel entry at `entry` on `args` (each argument's bytes); with `window`
    (host address, bytes: a device's arena), keep the ranges of it the blocks read and wrote."""
    lib = _library()
    buffers = [ctypes.create_string_buffer(a, max(len(a), 1)) for a in args]
    table = (ctypes.c_void_p * max(len(args), 1))(*(ctypes.addressof(b) for b in buffers))
    out = _Result()
    lib.acl_emu_run(entry, blocks, table, ub_size, npu_arch, window[0], window[1], ctypes.byref(out))
    text = ctypes.string_at(out.output, out.output_len) if out.output else b""
    if out.output:
        lib.acl_emu_free(out.output)
    spans = np.frombuffer(ctypes.string_at(out.spans, out.n_spans * SPAN.itemsize), SPAN) if out.n_spans else \
        np.empty(0, SPAN)
    if out.spans:
        lib.acl_emu_free(out.spans)
    return Result(out.status, out.block, out.signal, out.address, out.message.decode(errors="replace"), text,
                  out.gm_to_ub, out.ub_to_gm, out.vector_bytes, out.vector_calls, out.cpu_ns, spans,
                  bool(out.coarse))


def write(text: bytes) -> None:
    """The launch's printf output on the process's stdout, after what the program printed before it."""
    _library().acl_emu_write(text, len(text))
