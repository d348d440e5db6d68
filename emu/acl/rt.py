"""acl.rt: pyACL's runtime functions (names, argument order and returns as pyACL).

Where each function comes from: its API's declaration, `@api("aclrtXxx", pyacl="acl.rt.xxx", params=...,
outputs=...)` on the family function in emu/runtime (`emu.runtime.APIS`); `declared(__name__)` binds them all
(`emu.acl._bind.bind`). Below are only the entries declared `by_hand` (a converter, special parsing), which
take their names and formats from the same declarations.
"""
from __future__ import annotations

import math as _math
import numbers as _numbers
import operator as _operator
import sys as _sys
import traceback as _traceback

import numpy as _np

from .. import runtime as _rt
from ..errors import AclError as _AclError
from ..runtime.callbacks import CallbackError as _CallbackError
from ._bind import bind_declared as _bind_declared, by_hand as _by_hand, declared as _declared
from ._bind import install_missing as _install_missing


def _attributes(a):
    return {"location": {"id": a.id, "type": int(a.type)}, "page_size": a.page_size, "rsv": [0, 0, 0, 0]}


globals().update(_declared(__name__))  # every API declared pyacl="acl.rt.<name>" but the by-hand ones below
pointer_get_attributes = _bind_declared(_rt.pointer_get_attributes, convert=_attributes)


def _printing_callback_errors(call):
    """As pyACL, an exception raised by a callback that process_report runs is printed, not raised."""

    def process_report(*args):
        try:
            return call(*args)
        except _CallbackError as err:
            cause = err.__cause__
            _traceback.print_exception(type(cause), cause, cause.__traceback__, file=_sys.stderr)
            return 0

    process_report.__qualname__, process_report.__doc__, process_report.api = call.__qualname__, call.__doc__, call.api
    return process_report


process_report = _printing_callback_errors(_bind_declared(_rt.process_report))

_MAX_BYTES = (1 << 63) - 1  # the largest array NumPy can make (its sizes are signed 64-bit)


def _finite(value) -> float:
    """A C double the kernel's cost takes: a real number, finite."""
    if not isinstance(value, _numbers.Real):
        raise TypeError
    if not _math.isfinite(float(value)):  # float(): OverflowError for an int too large for a double
        raise ValueError
    return value


def _kernel_buffer(arg):
    """(ptr, nbytes) or (ptr, shape, dtype) with ints, a tuple of ints and a NumPy dtype; anything else is
    passed on for the runtime to refuse with its code."""
    if not isinstance(arg, (tuple, list)) or len(arg) not in (2, 3):
        return arg
    if len(arg) == 2:
        return _operator.index(arg[0]), _operator.index(arg[1])
    ptr, shape, dtype = arg
    shape = tuple(_operator.index(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    dtype = _np.dtype(dtype)
    if any(d < 0 for d in shape):
        raise ValueError
    if _math.prod(shape) * dtype.itemsize > _MAX_BYTES:
        raise ValueError
    return _operator.index(ptr), shape, dtype


def _launch_args(fn, buffers, stream, duration_us=None, nbytes=0, flops=0, *, access=None):
    if not (access is None or isinstance(access, str) or
            isinstance(access, (list, tuple)) and all(isinstance(a, str) for a in access)):
        raise TypeError
    return fn, buffers, stream, duration_us, nbytes, flops, access


@_by_hand(_rt.launch_kernel)
def launch_kernel(*args, **kwargs):
    """ret = acl.rt.launch_kernel(fn, buffers, stream[, duration_us[, nbytes[, flops]]]): enqueue `fn(*views)`
    as a device task on `stream` (the emulator's stand-in for a kernel launch).

    buffers: a list of (dev_ptr, nbytes) or (dev_ptr, shape, dtype); give duration_us or a cost (nbytes of
    memory traffic, flops), finite numbers (the last three may be given by name). access (by name only): how
    the kernel uses each buffer, "r", "w" or "rw", for the sanitizer (see emu.runtime.launch_kernel). Arguments
    that cannot be read so (a wrong count, a str stream, an unknown dtype, a shape no array can have, an
    infinite cost) raise TypeError("acl.rt.launch_kernel args parse failed"); the runtime's refusals are
    return codes.
    """
    try:
        fn, buffers, stream, duration_us, nbytes, flops, access = _launch_args(*args, **kwargs)
        stream = _operator.index(stream)
        if not isinstance(buffers, (list, tuple)):
            raise TypeError
        buffers = [_kernel_buffer(b) for b in buffers]
        duration_us = None if duration_us is None else _finite(duration_us)
        nbytes, flops = _finite(nbytes), _finite(flops)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{launch_kernel.__qualname__} args parse failed") from None
    try:
        _rt.launch_kernel(fn, buffers, stream, duration_us=duration_us, nbytes=nbytes, flops=flops, access=access)
    except _AclError as err:
        return err.code
    return 0


_install_missing(__name__)  # a name not defined above: AttributeError "acl.rt.<name> is not emulated by acl-emu"
