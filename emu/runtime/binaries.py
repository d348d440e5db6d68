"""Kernel binaries: libraries of device code a program loads, looks kernels up in by name and launches with an
argument list it builds (aclrtBinaryLoadFromFile, aclrtBinaryGetFunction, aclrtKernelArgs*,
aclrtLaunchKernelWithConfig).

A binary is a kernel library built by the emulator's toolkit: a shared library of kernels compiled for the CPU
(emu.device), which `ascendc_fatbin_library` writes to <install prefix>/fatbin/<target>/<target>.o and
`acl-emu c++ -shared -fPIC kernel.cpp -o kernels.o` builds. Its kernels are its `acl_emu_kernel_<name>` symbols
(each returns the kernel's record, emu.device.native.Kernel); loading reads them off the ELF dynamic symbol
table, so a file that is no such library is refused at load. Its code stays mapped after aclrtBinaryUnLoad (a
launch still queued runs); its handles die.

The checks, their order and codes are the reference's (hicann/runtime): the ACL layer, src/acl/aclrt_impl/
kernel.cpp (null arguments and sizes that must be positive: 100000; the generic handler of libascendcl refuses a
null output first, with the same code), then the runtime layer, src/runtime/api/api_c_kernel.cc (rts*: a handle
that is not a live binary, function, argument list or parameter: 107017, api_handle_guard.cc
Validate*HandleForApi, runtime_handle_guard.cc ValidateInnerObject), api/impl/api_error.cc (ApiErrorDecorator)
and api/impl/api_impl.cc (ApiImpl), core/src/kernel/binary_loader.cc (BinaryLoader) and
core/src/kernel/args/para_convertor.cc (ConvertLaunchCfgToTaskCfg):

- Loading: a path that cannot be read, a file or data that is not a kernel binary, a bad load option: 107000
  (RT_ERROR_INVALID_VALUE: BinaryLoader::ParseLoadOptions, ReadBinaryFile, LoadNonCpu). A kernel name the binary
  does not hold: 107000 (ApiImpl::BinaryGetFunctionByName).
- Arguments: one argument list per host thread, re-initialised by each aclrtKernelArgsInit (ApiImpl::KernelArgsInit:
  a thread_local handle; the parameters of the previous list die). Each parameter sits at the next 8-byte
  boundary (NON_CPU_KERNEL_ARGS_ALIGN_SIZE) of a 64 KiB buffer (MAX_ARGS_BUFF_SIZE), at most 128 of them
  (MAX_PARAM_CNT): past either, 107000. A value is copied from the host at aclrtKernelArgsAppend; a placeholder
  is a pointer whose bytes the program writes in the buffer aclrtKernelArgsGetPlaceHolderBuffer gives, after
  the parameters. Appending after a buffer was asked for, or after aclrtKernelArgsFinalize: 207000
  (RT_ERROR_FEATURE_NOT_SUPPORT). A parameter that is no placeholder has no buffer: 107000.
- Launch: the list must be finalised (107000, ApiErrorDecorator::CheckNonArgsHandle) and the launch's
  configuration valid (107000: CheckKernelLaunchCfg, ConvertLaunchCfgToTaskCfg). At the launch the runtime takes
  the list's bytes (placeholders' included) as they are; each placeholder argument is the address of its bytes
  in the launch's own copy of them (on hardware, in the arguments' device memory), so the program may reuse the
  list at once. The emulator then checks the list against the kernel's record, which the reference cannot (a
  device kernel reads what it is given): as many parameters as the kernel has, each of the size the kernel's
  parameter has, else 107000 naming it. The launch runs as every launch of device code does (launch.queue_device_code).
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading

from .. import files
from ..device import native
from ..errors import (ACL_ERROR_INVALID_PARAM, ACL_ERROR_RT_FEATURE_NOT_SUPPORT, ACL_ERROR_RT_INVALID_HANDLE,
                      ACL_ERROR_RT_PARAM_INVALID)
from ..memory import is_device_address
from .core import Core, api, fail, new_handle
from . import launch, transfer

MAX_PARAM_CNT = 128  # core/src/kernel/args/args_handle_allocator.hpp
MAX_ARGS_BUFF_SIZE = 64 * 1024  # (ibid.)
ARGS_ALIGN = 8  # core/inc/runtime.hpp NON_CPU_KERNEL_ARGS_ALIGN_SIZE
PREFIX = "acl_emu_kernel_"  # a kernel's record in its library (emu/device/rewrite.py)

# aclrtBinaryLoadOptionType (acl_rt.h) and the magics ACL_RT_BINARY_LOAD_OPT_MAGIC takes (RT_DEV_BINARY_MAGIC_ELF,
# _AIVEC, _AICUBE: pkg_inc/runtime/rt_external_kernel.h)
OPT_LAZY_LOAD, OPT_MAGIC, OPT_CPU_KERNEL_MODE = 1, 2, 3
ELF_MAGICS = (0x43554245, 0x41415246, 0x41494343)
# aclrtLaunchKernelAttrId (acl_rt.h)
(LAUNCH_ATTR_SCHEM_MODE, LAUNCH_ATTR_DYN_UBUF_SIZE, LAUNCH_ATTR_ENGINE_TYPE, LAUNCH_ATTR_BLOCKDIM_OFFSET,
 LAUNCH_ATTR_BLOCK_TASK_PREFETCH, LAUNCH_ATTR_DATA_DUMP, LAUNCH_ATTR_TIMEOUT, LAUNCH_ATTR_TIMEOUT_US,
 LAUNCH_ATTR_ENABLE_PROFILING) = range(1, 10)
SCHEM_MODE_END = 2  # pkg_inc/runtime/runtime/base.h RT_SCHEM_MODE_END


class _Option(ctypes.Structure):  # aclrtBinaryLoadOption (and aclrtLaunchKernelAttr: the same layout)
    _fields_ = [("type", ctypes.c_int32), ("value", ctypes.c_uint32 * 4)]


class _Options(ctypes.Structure):  # aclrtBinaryLoadOptions (and aclrtLaunchKernelCfg)
    _fields_ = [("options", ctypes.POINTER(_Option)), ("count", ctypes.c_size_t)]


class Binary:
    """A loaded kernel binary: its kernels' records by name, and the function handles given out for them."""

    def __init__(self, source: str, lib: ctypes.CDLL, kernels: dict, path: str | None = None):
        self.handle = new_handle()
        self.source, self.lib, self.kernels = source, lib, kernels
        self.path = path  # its file, if it was loaded from one (its declared kernel times lie beside it)
        self.functions: dict[str, Function] = {}
        self.destroyed = False


class Function:
    """An aclrtFuncHandle: one kernel of a loaded binary."""

    def __init__(self, binary: Binary, kernel):
        self.handle = new_handle()
        self.binary, self.kernel = binary, kernel
        self.destroyed = False


class Param:
    """An aclrtParamHandle: one parameter of an argument list; a placeholder's bytes start at `data` once asked for."""

    def __init__(self, args: "Args", placeholder: bool, offset: int, size: int):
        self.handle = new_handle()
        self.args, self.placeholder, self.offset, self.size, self.data = args, placeholder, offset, size, 0
        self.destroyed = False


class Args:
    """An aclrtArgsHandle: a host thread's one argument list (ApiImpl::KernelArgsInit's thread_local handle), over
    a buffer of MAX_ARGS_BUFF_SIZE bytes the program writes placeholders' bytes into."""

    def __init__(self):
        self.handle = new_handle()
        self.buffer = ctypes.create_string_buffer(MAX_ARGS_BUFF_SIZE)
        self.function: Function | None = None
        self.params: list[Param] = []
        self.size = 0
        self.buffers_given = self.finalized = False
        self.destroyed = False

    def reset(self, function: Function) -> None:
        for p in self.params:  # (ReinitKernelArgsEmbeddedHandle: the previous list's parameter handles die)
            p.destroyed = True
        self.function, self.params, self.size = function, [], 0
        self.buffers_given = self.finalized = False

    def next_offset(self) -> int:
        return -(-self.size // ARGS_ALIGN) * ARGS_ALIGN


class BinaryDescription:
    """An aclrtBinary (aclrtCreateBinary): the data and length aclrtBinaryLoad reads, not copied until then."""

    def __init__(self, data, length: int):
        self.handle = new_handle()
        self.data, self.length = data, length
        self.destroyed = False


class _State:
    def __init__(self):
        self.args: dict[int, Args] = {}  # host thread ident -> its argument list


def _state(rt: Core) -> _State:
    return rt.family_state("binaries", lambda _: _State())


def _register(rt: Core, obj):
    rt.handles[obj.handle] = obj
    return obj


def _forget(rt: Core, obj) -> None:
    obj.destroyed = True
    rt.handles.pop(obj.handle, None)


# -- what a kernel binary is ------------------------------------------------------------------------------------------

def kernel_names(data: bytes) -> list[str]:
    """The kernels a kernel library exports (its defined `acl_emu_kernel_<name>` symbols), read off its ELF dynamic
    symbol table; ValueError saying why `data` is no kernel library."""
    if data[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    if len(data) < 64 or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    e_type, machine = struct.unpack_from("<HH", data, 16)
    if e_type != 3:  # ET_DYN
        kind = {1: "an object file (link it with -shared)", 2: "an ELF executable"}.get(e_type, f"an ELF file of "
                                                                                           f"type {e_type}")
        device = " (a device binary of CANN's compiler holds AI Core code, which acl-emu does not run)" \
            if e_type == 2 else ""
        raise ValueError(f"{kind} for machine {machine}, not a shared library{device}")
    try:
        names = _dynamic_symbols(data)
    except (struct.error, IndexError, ValueError):
        raise ValueError("a damaged ELF file") from None
    kernels = sorted({n[len(PREFIX):] for n in names if n.startswith(PREFIX)})
    if not kernels:
        raise ValueError("a shared library that exports no kernel (no acl_emu_kernel_<name> symbol)")
    return kernels


def _dynamic_symbols(data: bytes) -> list[str]:
    """The names of the symbols an ELF64 file defines in its dynamic symbol tables (SHT_DYNSYM)."""
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    entsize, count = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * entsize) for i in range(count)]
    names = []
    for _, kind, _, _, offset, size, link, _, _, symsize in sections:
        if kind != 11 or not symsize:  # SHT_DYNSYM
            continue
        strings = sections[link][4]
        for at in range(offset, offset + size, symsize):
            name_at, _, _, shndx = struct.unpack_from("<IBBH", data, at)
            if shndx != 0:  # (defined here)
                start = strings + name_at
                names.append(data[start:data.index(b"\0", start)].decode(errors="replace"))
    return names


def _open(rt: Core, source: str, data: bytes, path: str | None) -> Binary:
    """The kernel library `data` (read from `path`, or given in memory), loaded and its kernels' records read."""
    try:
        names = kernel_names(data)
    except ValueError as e:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{source} is not a kernel binary built by acl-emu's toolkit ({e}): build "
                                         f"one with ascendc_fatbin_library (the toolkit of `acl-emu config --env`) "
                                         f"or `acl-emu c++ -shared -fPIC kernel.cpp -o kernels.o`")
    fd = None
    try:
        if path is None:  # (data in memory: loaded from a file of its own that has no name)
            fd = os.memfd_create("acl-emu-kernels", 0)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            path = f"/proc/self/fd/{fd}"
        lib = ctypes.CDLL(path)
    except OSError as e:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{source}: the kernel binary cannot be loaded: {e}")
    finally:
        if fd is not None:
            os.close(fd)
    kernels = {}
    for name in names:
        record = getattr(lib, PREFIX + name)
        record.restype, record.argtypes = ctypes.c_void_p, ()
        k = native.kernel(record())
        if k is None:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{source}: kernel {name} was built by another version of acl-emu "
                                             f"(its record's ABI differs): rebuild the binary")
        kernels[name] = k
    return _register(rt, Binary(source, lib, kernels, None if fd is not None else path))


def _entries(rt: Core, address: int, what: str, field: str) -> list:
    """The (type, value) entries of the aclrtBinaryLoadOptions or aclrtLaunchKernelCfg at `address` (an array and
    its count): 107000 when the array is null."""
    head = _struct(rt, address, _Options, what)
    if not head.options:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{what}->{field} is null ({what} is not)")
    return _array(rt, ctypes.cast(head.options, ctypes.c_void_p).value, _Option, head.count, f"{what}->{field}")


def _load_options(rt: Core, options, from_file: bool) -> None:
    """BinaryLoader::ParseLoadOptions: each option checked in order (107000); an AI CPU kernel mode asked for with
    a valid value is refused after them (207000: the emulator runs AI Core kernels only). `options`: the address
    of an aclrtBinaryLoadOptions (0: none), or, as pyACL gives them, {"type": t, "value": v} dicts (or (t, v)
    pairs)."""
    if not options:
        return
    if isinstance(options, int):
        pairs = [(x.type, x.value[0]) for x in _entries(rt, options, "options", "options")]
    else:
        pairs = [(int(x["type"]), int(x["value"])) if isinstance(x, dict) else (int(x[0]), int(x[1]))
                 for x in options]
    cpu = False
    for kind, value in pairs:
        if kind == OPT_LAZY_LOAD:
            if value not in (0, 1):
                fail(ACL_ERROR_RT_PARAM_INVALID, f"isLazyLoad {value}: must be 0 or 1")
        elif kind == OPT_MAGIC:
            if from_file:
                fail(ACL_ERROR_RT_PARAM_INVALID, "ACL_RT_BINARY_LOAD_OPT_MAGIC is for loading from data")
            if value not in ELF_MAGICS:
                fail(ACL_ERROR_RT_PARAM_INVALID, f"magic 0x{value:x}: must be one of "
                                                 + ", ".join(f"0x{m:x}" for m in ELF_MAGICS))
        elif kind == OPT_CPU_KERNEL_MODE:
            mode = value - (1 << 32) if value >= 1 << 31 else value
            if mode not in ((0, 1) if from_file else (2,)):
                fail(ACL_ERROR_RT_PARAM_INVALID, f"cpuKernelMode {mode}: must be "
                                                 + ("0 or 1 from a file" if from_file else "2 from data"))
            cpu = True
        else:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"load option type {kind}: must be 1 to 3")
    if cpu:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "AI CPU kernels (ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE) "
                                               "are not emulated: acl-emu runs AI Core kernels")


def _host_bytes(rt: Core, data, length: int, what: str) -> bytes:
    """`length` bytes of host memory at `data`, or of a bytes-like object. An address is resolved as every call's
    host memory is (transfer.locate: a C program's own memory at its address; through pyACL, memory the emulator
    knows, else 100000); a device address is 107000 (the host cannot read it: the reference's memcpy_s fails)."""
    if not isinstance(data, int):
        view = memoryview(data).cast("B")
        if len(view) < length:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{what} holds {len(view)} bytes, not {length}")
        return bytes(view[:length])
    if is_device_address(data):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{what} 0x{data:x} is a device address: the host reads these bytes (for a "
                                         f"device pointer argument, give the address of the variable that holds it)")
    r, off = transfer.locate(rt, data, length, what)
    if r.is_device:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{what} 0x{data:x} is device memory: the host reads these bytes")
    return bytes(length) if r.virtual else r.view(off, length).tobytes()


def _struct(rt: Core, address: int, kind, what: str):
    """The C struct `kind` at `address` of host memory (read as `_host_bytes` reads)."""
    return kind.from_buffer_copy(_host_bytes(rt, address, ctypes.sizeof(kind), what))


def _array(rt: Core, address: int, kind, count: int, what: str) -> list:
    size = ctypes.sizeof(kind)
    data = _host_bytes(rt, address, size * count, what) if count else b""
    return [kind.from_buffer_copy(data, i * size) for i in range(count)]


# -- binaries --------------------------------------------------------------------------------------------------------

@api("aclrtCreateBinary", sizes=("data_len",), pyacl="acl.rt.create_binary", params="ii", outputs=(0,))
def create_binary(rt: Core, data, data_len: int) -> int:
    """An aclrtBinary of `data_len` bytes at `data` (an address, or a bytes-like object), for aclrtBinaryLoad
    (aclrtCreateBinary): the bytes are read when it loads, not now. From C a failure is NULL (kernel.cpp
    aclrtCreateBinaryImpl: null data)."""
    if not data:
        fail(ACL_ERROR_INVALID_PARAM, "data is null")
    return _register(rt, BinaryDescription(data, data_len)).handle


def _description(rt: Core, binary: int) -> BinaryDescription:
    d = rt.handles.get(binary)
    if not isinstance(d, BinaryDescription):  # (the ACL layer casts what it is given: kernel.cpp)
        fail(ACL_ERROR_INVALID_PARAM, f"0x{binary:x} is not an aclrtBinary of aclrtCreateBinary")
    return d


@api("aclrtDestroyBinary", pyacl="acl.rt.destroy_binary", params="i")
def destroy_binary(rt: Core, binary: int) -> None:
    """Destroy an aclrtBinary (aclrtDestroyBinary; a binary loaded from it stays loaded). Null, or a value
    aclrtCreateBinary did not give: 100000 (kernel.cpp aclrtDestroyBinaryImpl checks the pointer only)."""
    if not binary:
        fail(ACL_ERROR_INVALID_PARAM, "binary is null")
    _forget(rt, _description(rt, binary))


@api("aclrtBinaryLoad", pyacl="acl.rt.binary_load", params="i", outputs=(0,))
def binary_load(rt: Core, binary: int) -> int:
    """Load the kernel binary an aclrtBinary holds (aclrtBinaryLoad); returns its aclrtBinHandle.

    kernel.cpp aclrtBinaryLoadImpl (null: 100000), then rtBinaryLoadWithoutTilingKey: null data or a length of 0,
    107000 (ApiErrorDecorator::BinaryLoadWithoutTilingKey); no current context, 107002 (ApiImpl); not a kernel
    binary, 107000."""
    if not binary:
        fail(ACL_ERROR_INVALID_PARAM, "binary is null")
    d = _description(rt, binary)
    rt.runtime_layer()
    if not d.data:
        fail(ACL_ERROR_RT_PARAM_INVALID, "the binary's data is null")
    if d.length == 0:
        fail(ACL_ERROR_RT_PARAM_INVALID, "the binary's length is 0")
    rt.current_context()
    return _open(rt, f"aclrtBinary 0x{binary:x}", _host_bytes(rt, d.data, d.length, "the binary's data"), None).handle


@api("aclrtBinaryLoadFromFile", pyacl="acl.rt.binary_load_from_file", params="so", outputs=(0,),
     optional=1)
def binary_load_from_file(rt: Core, path: str | None, options=0) -> int:
    """Load the kernel binary at `path` (aclrtBinaryLoadFromFile); returns its aclrtBinHandle. `options`: an
    aclrtBinaryLoadOptions (its address from C; from Python, (type, value) pairs), or none.

    kernel.cpp aclrtBinaryLoadFromFileImpl (null path: 100000), then BinaryLoader::Load: the options
    (ParseLoadOptions: an unknown type, a lazy-load value but 0 or 1, a magic (for data only): 107000; AI CPU
    kernels: 207000), then the file (ReadBinaryFile: a path that cannot be read, 107000), then its kernels (not a
    kernel binary built by acl-emu's toolkit, or one of another acl-emu version: 107000)."""
    if path is None:
        fail(ACL_ERROR_INVALID_PARAM, "binPath is null")
    rt.runtime_layer()
    _load_options(rt, options, True)
    real = os.path.realpath(path)
    try:
        data = files.read_bytes(real, files.BINARY_BYTES, "a kernel binary")
    except files.FileRefused as e:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"path {path} cannot be accessed ({e.why})")
    return _open(rt, path, data, real).handle


@api("aclrtBinaryLoadFromData", sizes=("length",), pyacl="acl.rt.binary_load_from_data", params="iio",
     outputs=(0,), optional=1)
def binary_load_from_data(rt: Core, data, length: int, options=0) -> int:
    """Load the kernel binary of `length` bytes at `data` (an address, or a bytes-like object)
    (aclrtBinaryLoadFromData); returns its aclrtBinHandle. `options` as for aclrtBinaryLoadFromFile.

    kernel.cpp aclrtBinaryLoadFromDataImpl (null data: 100000), ApiErrorDecorator::BinaryLoadFromData (a length
    of 0: 107000), then BinaryLoader::Load: the options (107000; an AI CPU kernel mode but 2: 107000, 2: 207000),
    then the data (not a kernel binary: 107000)."""
    if not data:
        fail(ACL_ERROR_INVALID_PARAM, "data is null")
    rt.runtime_layer()
    if length == 0:
        fail(ACL_ERROR_RT_PARAM_INVALID, "length is 0")
    _load_options(rt, options, False)
    return _open(rt, f"the {length} bytes of data", _host_bytes(rt, data, length, "data"), None).handle


@api("aclrtBinaryGetFunction", pyacl="acl.rt.binary_get_function", params="is", outputs=(0,))
def binary_get_function(rt: Core, binary: int, name: str | None) -> int:
    """The kernel `name` of a loaded binary (aclrtBinaryGetFunction); returns its aclrtFuncHandle, the same one
    each time. Null: 100000 (kernel.cpp aclrtBinaryGetFunctionImpl); a binary that is not loaded: 107017
    (rtsFuncGetByName); a name the binary does not hold: 107000 (ApiImpl::BinaryGetFunctionByName)."""
    if not binary:
        fail(ACL_ERROR_INVALID_PARAM, "binHandle is null")
    if name is None:
        fail(ACL_ERROR_INVALID_PARAM, "kernelName is null")
    b = rt.lookup(binary, Binary, "binary")
    f = b.functions.get(name)
    if f is None:
        k = b.kernels.get(name)
        if k is None:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{b.source} holds no kernel {name!r} "
                                             f"(it holds {', '.join(b.kernels)})")
        f = b.functions[name] = _register(rt, Function(b, k))
    return f.handle


@api("aclrtBinaryUnLoad", pyacl="acl.rt.binary_unload", params="i")
def binary_unload(rt: Core, binary: int) -> None:
    """Unload a binary (aclrtBinaryUnLoad): its handle and its functions' die (launches already queued still run).
    Null: 100000 (kernel.cpp aclrtBinaryUnLoadImpl); not a loaded binary (unloaded already): 107017
    (rtBinaryUnLoad's ValidateProgramHandleForApi)."""
    if not binary:
        fail(ACL_ERROR_INVALID_PARAM, "binHandle is null")
    b = rt.lookup(binary, Binary, "binary")
    for f in b.functions.values():
        _forget(rt, f)
    _forget(rt, b)


# -- argument lists ---------------------------------------------------------------------------------------------------

def _args(rt: Core, handle: int) -> Args:
    return rt.lookup(handle, Args, "argument list (aclrtArgsHandle)")


@api("aclrtKernelArgsInit", pyacl="acl.rt.kernel_args_init", params="i", outputs=(0,))
def kernel_args_init(rt: Core, function: int) -> int:
    """Start the argument list of a launch of `function` (aclrtKernelArgsInit); returns its aclrtArgsHandle: the
    calling thread's one list, the same handle each time, emptied (ApiImpl::KernelArgsInit: a thread_local
    handle; the parameter handles of its previous use die). Null: 100000 (kernel.cpp); not a live function
    (its binary unloaded): 107017 (rtsKernelArgsInit)."""
    if not function:
        fail(ACL_ERROR_INVALID_PARAM, "funcHandle is null")
    f = rt.lookup(function, Function, "function")
    lists = _state(rt).args
    a = lists.get(threading.get_ident())
    if a is None:
        a = lists[threading.get_ident()] = _register(rt, Args())
    a.reset(f)
    return a.handle


def _room(a: Args, nbytes: int) -> int:
    """Where the next parameter of `nbytes` goes (its 8-byte boundary); 107000 past MAX_PARAM_CNT parameters or
    the buffer's end (ApiImpl::KernelArgsAppend / AppendPlaceHolder)."""
    if len(a.params) + 1 > MAX_PARAM_CNT:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"more than {MAX_PARAM_CNT} parameters")
    offset = a.next_offset()
    if offset + nbytes > MAX_ARGS_BUFF_SIZE:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"the arguments would take {offset + nbytes} bytes, more than "
                                         f"{MAX_ARGS_BUFF_SIZE}")
    return offset


def _not_after_buffers(a: Args) -> None:
    if a.buffers_given:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "no parameter may be appended once a placeholder's "
                                               "buffer was asked for (aclrtKernelArgsGetPlaceHolderBuffer)")


def _not_finalized(a: Args) -> None:
    if a.finalized:
        fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "the argument list is finalized (aclrtKernelArgsFinalize)")


@api("aclrtKernelArgsAppend", sizes=("param_size",), pyacl="acl.rt.kernel_args_append", params="iii",
     outputs=(0,))
def kernel_args_append(rt: Core, args: int, param, param_size: int) -> int:
    """Append a parameter's value to an argument list (aclrtKernelArgsAppend): `param_size` bytes copied now from
    `param` (a host address, as C gives it: a device pointer argument is the address of the variable holding
    it, with size 8; or a bytes-like object); returns its aclrtParamHandle.

    kernel.cpp aclrtKernelArgsAppendImpl (null args or param, size 0: 100000); not a live list: 107017; then
    ApiImpl::KernelArgsAppend: finalized, or a placeholder's buffer asked for already: 207000; past 128
    parameters or 64 KiB: 107000; a `param` the host cannot read (a device address): 107000 (its memcpy_s)."""
    if not args:
        fail(ACL_ERROR_INVALID_PARAM, "argsHandle is null")
    if param is None or (isinstance(param, int) and param == 0):
        fail(ACL_ERROR_INVALID_PARAM, "param is null")
    if param_size <= 0:
        fail(ACL_ERROR_INVALID_PARAM, f"paramSize {param_size}: must be greater than 0")
    a = _args(rt, args)
    _not_finalized(a)
    _not_after_buffers(a)
    offset = _room(a, param_size)
    value = _host_bytes(rt, param, param_size, "param")
    ctypes.memmove(ctypes.addressof(a.buffer) + offset, value, param_size)
    p = _register(rt, Param(a, False, offset, param_size))
    a.params.append(p)
    a.size = offset + param_size
    return p.handle


@api("aclrtKernelArgsAppendPlaceHolder", pyacl="acl.rt.kernel_args_append_place_holder", params="i",
     outputs=(0,))
def kernel_args_append_place_holder(rt: Core, args: int) -> int:
    """Append a placeholder to an argument list (aclrtKernelArgsAppendPlaceHolder): a pointer parameter whose
    bytes the program writes in the buffer aclrtKernelArgsGetPlaceHolderBuffer gives; at the launch the kernel
    gets their address. Returns its aclrtParamHandle.

    kernel.cpp (null: 100000); not a live list: 107017; ApiImpl::KernelArgsAppendPlaceHolder: a placeholder's
    buffer asked for already, or finalized: 207000; past 128 parameters or 64 KiB: 107000."""
    if not args:
        fail(ACL_ERROR_INVALID_PARAM, "argsHandle is null")
    a = _args(rt, args)
    _not_after_buffers(a)
    _not_finalized(a)
    offset = _room(a, 8)
    p = _register(rt, Param(a, True, offset, 8))
    a.params.append(p)
    a.size = offset + 8
    return p.handle


@api("aclrtKernelArgsGetPlaceHolderBuffer", sizes=("data_size",),
     pyacl="acl.rt.kernel_args_get_place_holder_buffer", params="iii", outputs=(0,))
def kernel_args_get_place_holder_buffer(rt: Core, args: int, param: int, data_size: int) -> int:
    """The host address of `data_size` bytes for a placeholder's data (aclrtKernelArgsGetPlaceHolderBuffer),
    after the list's parameters (at the next 8-byte boundary); the program writes them before the launch.

    kernel.cpp (null, size 0: 100000); not a live list or parameter: 107017 (a parameter of another list too);
    ApiImpl::KernelArgsGetPlaceHolderBuffer: a parameter that is no placeholder, 107000; finalized, 207000; past
    64 KiB, 107000."""
    if not args:
        fail(ACL_ERROR_INVALID_PARAM, "argsHandle is null")
    if not param:
        fail(ACL_ERROR_INVALID_PARAM, "paramHandle is null")
    if data_size <= 0:
        fail(ACL_ERROR_INVALID_PARAM, f"dataSize {data_size}: must be greater than 0")
    a = _args(rt, args)
    p = rt.lookup(param, Param, "parameter (aclrtParamHandle)")
    if p.args is not a:
        fail(ACL_ERROR_RT_INVALID_HANDLE, f"parameter 0x{param:x} is not one of argument list 0x{args:x}")
    if not p.placeholder:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"parameter 0x{param:x} is a value (aclrtKernelArgsAppend), "
                                         f"not a placeholder: it has no buffer")
    _not_finalized(a)
    offset = a.next_offset()
    if offset + data_size > MAX_ARGS_BUFF_SIZE:
        fail(ACL_ERROR_RT_PARAM_INVALID, f"the arguments would take {offset + data_size} bytes, more than "
                                         f"{MAX_ARGS_BUFF_SIZE}")
    a.buffers_given = True
    p.data = offset
    a.size = offset + data_size
    return ctypes.addressof(a.buffer) + offset


@api("aclrtKernelArgsFinalize", pyacl="acl.rt.kernel_args_finalize", params="i")
def kernel_args_finalize(rt: Core, args: int) -> None:
    """Mark an argument list complete (aclrtKernelArgsFinalize): it may be launched, and takes no more
    parameters. Null: 100000 (kernel.cpp); not a live list: 107017; no current context: 107002
    (ApiImpl::KernelArgsFinalize)."""
    if not args:
        fail(ACL_ERROR_INVALID_PARAM, "argsHandle is null")
    a = _args(rt, args)
    rt.current_context()
    a.finalized = True


def _launch_config(rt: Core, cfg) -> None:
    """An aclrtLaunchKernelCfg's attributes (its address from C; from Python, (id, value) pairs, a value an int),
    checked as ApiErrorDecorator CheckKernelLaunchCfg and ConvertLaunchCfgToTaskCfg do (107000). They change
    nothing the emulator models: a kernel's time is what its blocks did."""
    if not cfg:
        return
    if isinstance(cfg, int):
        attrs = [(x.type, bytes(x.value)) for x in _entries(rt, cfg, "cfg", "attrs")]
    else:
        attrs = [(int(x["id"]), int(x["value"]).to_bytes(16, "little")) if isinstance(x, dict)
                 else (int(x[0]), int(x[1]).to_bytes(16, "little")) for x in cfg]
    ids = [i for i, _ in attrs]
    if LAUNCH_ATTR_TIMEOUT in ids and LAUNCH_ATTR_TIMEOUT_US in ids:
        fail(ACL_ERROR_RT_PARAM_INVALID, "ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT and "
                                         "ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US cannot both be given")
    last = {i: v[0] for i, v in attrs}  # (each uint8 attribute: the last given)
    for attr, limit, what in ((LAUNCH_ATTR_SCHEM_MODE, SCHEM_MODE_END - 1, "schemMode"),
                              (LAUNCH_ATTR_BLOCK_TASK_PREFETCH, 1, "isBlockTaskPrefetch"),
                              (LAUNCH_ATTR_DATA_DUMP, 1, "isDataDump"),
                              (LAUNCH_ATTR_ENABLE_PROFILING, 1, "enableProfiling")):
        if last.get(attr, 0) > limit:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"{what} {last[attr]}: must be 0 to {limit}")
    for i in ids:
        if not LAUNCH_ATTR_SCHEM_MODE <= i <= LAUNCH_ATTR_ENABLE_PROFILING:
            fail(ACL_ERROR_RT_PARAM_INVALID, f"launch attribute {i}: must be "
                                             f"{LAUNCH_ATTR_SCHEM_MODE} to {LAUNCH_ATTR_ENABLE_PROFILING}")


def _packed(a: Args, k) -> tuple[bytes, ctypes.Array]:
    """The list's parameters as kernel `k`'s record lays them out, and the launch's own copy of the list's bytes
    (the placeholders' data among them, which their arguments point to); 107000 when the list does not match the
    kernel's parameters in number or sizes (the emulator's check: see the module's docstring)."""
    where = f"kernel {k.name}"
    if len(a.params) != len(k.sizes):
        fail(ACL_ERROR_RT_PARAM_INVALID, f"{where} takes {len(k.sizes)} parameters, the argument list holds "
                                         f"{len(a.params)}")
    copy = ctypes.create_string_buffer(ctypes.string_at(a.buffer, a.size), max(a.size, 1))
    out = bytearray(k.args_size)
    for i, (p, size, offset) in enumerate(zip(a.params, k.sizes, k.offsets)):
        if p.size != size:
            what = "a placeholder (a pointer of 8 bytes)" if p.placeholder else f"{p.size} bytes"
            fail(ACL_ERROR_RT_PARAM_INVALID, f"parameter {i} takes {size} bytes, the argument list gives "
                                             f"{what}")
        value = (ctypes.addressof(copy) + p.data).to_bytes(8, "little") if p.placeholder else \
            copy.raw[p.offset:p.offset + p.size]
        out[offset:offset + size] = value
    return bytes(out), copy


@api("aclrtLaunchKernelWithConfig", pyacl="acl.rt.launch_kernel_with_config", params="iiioii", optional=1)
def launch_kernel_with_config(rt: Core, function: int, num_blocks: int, stream: int, cfg, args: int,
                              reserve: int = 0) -> None:
    """Queue `function` for `num_blocks` blocks on `stream` with a finalized argument list
    (aclrtLaunchKernelWithConfig), as every launch of device code runs (launch.queue_device_code: its blocks run
    when the task starts; a fault or trap is 507035 at the next synchronize). `cfg`: an aclrtLaunchKernelCfg or
    none.

    kernel.cpp aclrtLaunchKernelWithConfigImpl: null function or list, numBlocks 0, reserve not null: 100000;
    rtsLaunchKernelWithConfig: not a live function (its binary unloaded), list or stream: 107017;
    ApiErrorDecorator::LaunchKernelV2: a list not finalized (CheckNonArgsHandle) or a bad configuration
    (CheckKernelLaunchCfg, then ConvertLaunchCfgToTaskCfg): 107000; no current context: 107002; numBlocks past
    65535: 107000. Then the emulator's check of the list against the kernel (107000), and a product without an
    AI Core: 207000."""
    if not function:
        fail(ACL_ERROR_INVALID_PARAM, "funcHandle is null")
    if num_blocks <= 0:
        fail(ACL_ERROR_INVALID_PARAM, f"numBlocks {num_blocks}: must be greater than 0")
    if not args:
        fail(ACL_ERROR_INVALID_PARAM, "argsHandle is null")
    if reserve:
        fail(ACL_ERROR_INVALID_PARAM, "reserve is a reserved parameter and must be null")
    f = rt.lookup(function, Function, "function")
    a = _args(rt, args)
    rt.check_stream_handle(stream)
    if not a.finalized:
        fail(ACL_ERROR_RT_PARAM_INVALID, "the argument list is not finalized "
                                         "(aclrtKernelArgsFinalize)")
    _launch_config(rt, cfg)
    rt.current_context()
    launch.check_block_dim(num_blocks)
    packed, copy = _packed(a, f.kernel)
    launch.queue_device_code(rt, f.kernel, num_blocks, stream, packed, keep=copy, binary=f.binary.path)
