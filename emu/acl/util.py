"""acl.util: moving between Python buffers and the int pointers ACL calls take.

As in pyACL, no data is copied: the pointer is the buffer's own address, and
an array made from a pointer views the memory behind it. The emulator also
learns here which host memory a program uses (pageable memory).
"""
from __future__ import annotations

import functools
import math
import operator
import warnings

import numpy as np

from .. import runtime as _rt
from ..errors import AclError
from ._bind import install_missing as _install_missing

_MAX_BYTES = (1 << 63) - 1  # NumPy's sizes are signed 64-bit

# NumPy's C type numbers (NPY_TYPES) -> dtype
_NPY_TYPES = {np.dtype(t).num: np.dtype(t) for t in set(np.sctypeDict.values())
              if np.dtype(t).kind in "biufc?"}


def _fail(name):
    return TypeError(f"acl.util.{name} args parse failed")


def _positional(count: int):
    """As pyACL's fixed formats: exactly `count` positional arguments, or TypeError "args parse failed"."""

    def wrap(fn):
        @functools.wraps(fn)
        def call(*args):
            if len(args) != count:
                raise _fail(fn.__name__)
            return fn(*args)

        call.__qualname__ = f"acl.util.{fn.__name__}"
        return call

    return wrap


@_positional(1)
def numpy_to_ptr(array) -> int:
    """The address of the array's data (no copy)."""
    if not isinstance(array, np.ndarray):
        raise _fail("numpy_to_ptr")
    warnings.warn("acl.util.numpy_to_ptr is deprecated, use acl.util.bytes_to_ptr", DeprecationWarning,
                  stacklevel=3)
    return _rt.register_host(array)


@_positional(1)
def bytes_to_ptr(data) -> int:
    """The address of a bytes object's internal buffer; the runtime may write into it."""
    if not isinstance(data, bytes):
        raise ValueError("acl.util.bytes_to_ptr: the argument must be bytes")
    return _rt.register_host(data)


def _host(ptr: int, nbytes: int, name: str) -> np.ndarray:
    """The host memory at `ptr`; memory the host cannot read (device memory, unknown memory) is a ValueError
    named after the acl.util function, as all its other errors are."""
    try:
        return _rt.host_array(ptr, nbytes)
    except AclError as e:
        raise ValueError(f"acl.util.{name}: {e.message}") from None
    except ValueError as e:
        raise ValueError(f"acl.util.{name}: {e}") from None


@_positional(3)
def ptr_to_numpy(ptr, shape, npy_type) -> np.ndarray:
    """A writable array of `shape` and NumPy type number `npy_type` over the memory at `ptr`."""
    try:
        ptr = operator.index(ptr)
        shape = tuple(operator.index(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        npy_type = operator.index(npy_type)
    except TypeError:
        raise _fail("ptr_to_numpy") from None
    dtype = _NPY_TYPES.get(npy_type)
    if dtype is None:
        raise ValueError(f"acl.util.ptr_to_numpy: {npy_type} is not a NumPy type number")
    if any(d < 0 for d in shape):
        raise ValueError(f"acl.util.ptr_to_numpy: negative dimension in {shape}")
    nbytes = math.prod(shape) * dtype.itemsize  # exact: a product past 64 bits is refused, not wrapped
    if nbytes > _MAX_BYTES or any(d > _MAX_BYTES for d in shape):
        raise ValueError(f"acl.util.ptr_to_numpy: shape {shape} of {dtype} is larger than any array "
                         f"({nbytes} bytes)")
    return _host(ptr, nbytes, "ptr_to_numpy").view(dtype).reshape(shape)


@_positional(2)
def ptr_to_bytes(ptr, size) -> bytes:
    """A new bytes object copied from `size` bytes at `ptr`."""
    try:
        ptr, size = operator.index(ptr), operator.index(size)
    except TypeError:
        raise _fail("ptr_to_bytes") from None
    if size < 0:
        raise ValueError("acl.util.ptr_to_bytes: negative size")
    return _host(ptr, size, "ptr_to_bytes").tobytes()


def start_thread(*args):
    """thread_id, ret = acl.util.start_thread(fn, args_list): a host thread running fn(args_list); its id is
    what subscribe_report takes."""
    if len(args) != 2 or not callable(args[0]):
        raise _fail("start_thread")
    return _rt.start_thread(*args), 0


def stop_thread(*args) -> int:
    """ret = acl.util.stop_thread(thread_id): wait for a thread of start_thread to return."""
    try:
        (thread_id,) = args
        thread_id = operator.index(thread_id)
    except (TypeError, ValueError):
        raise _fail("stop_thread") from None
    try:
        _rt.stop_thread(thread_id)
    except AclError as err:
        return err.code
    return 0


_install_missing(__name__)
