"""acl.rt: pyACL's runtime functions (names, argument order and returns as pyACL)."""
from __future__ import annotations

import math as _math
import numbers as _numbers
import operator as _operator
import sys as _sys
import traceback as _traceback

import numpy as _np

from .. import runtime as _rt
from ..constants import SIZE_MAX as _SIZE_MAX
from ..errors import AclError as _AclError
from ..runtime.callbacks import CallbackError as _CallbackError
from ._bind import ATTRS as _ATTRS, OBJ as _OBJ, bind as _bind, install_missing as _install_missing


def _attributes(a):
    return {"location": {"id": a.id, "type": int(a.type)}, "page_size": a.page_size, "rsv": [0, 0, 0, 0]}


# devices and contexts
set_device = _bind("acl.rt.set_device", _rt.set_device, "i")
reset_device = _bind("acl.rt.reset_device", _rt.reset_device, "i")
reset_device_force = _bind("acl.rt.reset_device_force", _rt.reset_device_force, "i")
get_device = _bind("acl.rt.get_device", _rt.get_device, "", (0,))
get_device_count = _bind("acl.rt.get_device_count", _rt.get_device_count, "", (0,))
get_run_mode = _bind("acl.rt.get_run_mode", _rt.get_run_mode, "", (0,))
synchronize_device = _bind("acl.rt.synchronize_device", _rt.synchronize_device)
create_context = _bind("acl.rt.create_context", _rt.create_context, "i", (0,))
destroy_context = _bind("acl.rt.destroy_context", _rt.destroy_context, "i")
set_context = _bind("acl.rt.set_context", _rt.set_context, "i")
get_context = _bind("acl.rt.get_context", _rt.get_context, "", (0,))
# streams
create_stream = _bind("acl.rt.create_stream", _rt.create_stream, "", (0,))
create_stream_with_config = _bind("acl.rt.create_stream_with_config", _rt.create_stream_with_config, "ii", (0,))
destroy_stream = _bind("acl.rt.destroy_stream", _rt.destroy_stream, "i")
destroy_stream_force = _bind("acl.rt.destroy_stream_force", _rt.destroy_stream_force, "i")
synchronize_stream = _bind("acl.rt.synchronize_stream", _rt.synchronize_stream, "i")
synchronize_stream_with_timeout = _bind("acl.rt.synchronize_stream_with_timeout", _rt.synchronize_stream_with_timeout,
                                        "ii")
stream_query = _bind("acl.rt.stream_query", _rt.stream_query, "i", (0,))
# events
create_event = _bind("acl.rt.create_event", _rt.create_event, "", (0,))
create_event_with_flag = _bind("acl.rt.create_event_with_flag", _rt.create_event_with_flag, "i", (0,))
create_event_ex_with_flag = _bind("acl.rt.create_event_ex_with_flag", _rt.create_event_ex_with_flag, "i", (0,))
destroy_event = _bind("acl.rt.destroy_event", _rt.destroy_event, "i")
record_event = _bind("acl.rt.record_event", _rt.record_event, "ii")
reset_event = _bind("acl.rt.reset_event", _rt.reset_event, "ii")
stream_wait_event = _bind("acl.rt.stream_wait_event", _rt.stream_wait_event, "ii")
synchronize_event = _bind("acl.rt.synchronize_event", _rt.synchronize_event, "i")
query_event_status = _bind("acl.rt.query_event_status", _rt.query_event_status, "i", (0,))
query_event_wait_status = _bind("acl.rt.query_event_wait_status", _rt.query_event_wait_status, "i", (0,))
event_elapsed_time = _bind("acl.rt.event_elapsed_time", _rt.event_elapsed_time, "ii", (0.0,))
# memory
malloc = _bind("acl.rt.malloc", _rt.malloc, "ii", (0,))
malloc_host = _bind("acl.rt.malloc_host", _rt.malloc_host, "i", (0,))
free = _bind("acl.rt.free", _rt.free, "i")
free_host = _bind("acl.rt.free_host", _rt.free_host, "i")
get_mem_info = _bind("acl.rt.get_mem_info", _rt.get_mem_info, "i", (0, 0))
pointer_get_attributes = _bind("acl.rt.pointer_get_attributes", _rt.pointer_get_attributes, "i", ({},),
                               convert=_attributes)
# copies and memsets
memcpy = _bind("acl.rt.memcpy", _rt.memcpy, "iiiii")
memcpy_async = _bind("acl.rt.memcpy_async", _rt.memcpy_async, "iiiiii")
memcpy_async_with_condition = _bind("acl.rt.memcpy_async_with_condition", _rt.memcpy_async_with_condition, "iiiiii")
memset = _bind("acl.rt.memset", _rt.memset, "iiii")
memset_async = _bind("acl.rt.memset_async", _rt.memset_async, "iiiii")

# 2D, D32, descriptor, offset and batch copies (extensions for the C-only APIs: docs/api.md, the pyACL facade)
memcpy2d = _bind("acl.rt.memcpy2d", _rt.memcpy2d, "iiiiiii")
memcpy2d_async = _bind("acl.rt.memcpy2d_async", _rt.memcpy2d_async, "iiiiiiii")
memset_d32 = _bind("acl.rt.memset_d32", _rt.memset_d32, "iiii")
memset_d32_async = _bind("acl.rt.memset_d32_async", _rt.memset_d32_async, "iiiii")
get_memcpy_desc_size = _bind("acl.rt.get_memcpy_desc_size", _rt.get_memcpy_desc_size, "i", (0,))
set_memcpy_desc = _bind("acl.rt.set_memcpy_desc", _rt.set_memcpy_desc, "iiiiio", (0,))
memcpy_async_with_desc = _bind("acl.rt.memcpy_async_with_desc", _rt.memcpy_async_with_desc, "iii")
memcpy_async_with_offset = _bind("acl.rt.memcpy_async_with_offset", _rt.memcpy_async_with_offset, "iiiiiiii")
memcpy_batch = _bind("acl.rt.memcpy_batch", _rt.memcpy_batch, "lllli" + _ATTRS + "li", (_SIZE_MAX,))
memcpy_batch_async = _bind("acl.rt.memcpy_batch_async", _rt.memcpy_batch_async, "lllli" + _ATTRS + "lii", (_SIZE_MAX,))
memcpy_batch_v2 = _bind("acl.rt.memcpy_batch_v2", _rt.memcpy_batch_v2, "lllli" + _ATTRS + "li")
memcpy_batch_async_v2 = _bind("acl.rt.memcpy_batch_async_v2", _rt.memcpy_batch_async_v2, "lllli" + _ATTRS + "lii")
# allocation with configs, host registration, peer access
malloc_with_cfg = _bind("acl.rt.malloc_with_cfg", _rt.malloc_with_cfg, "iio", (0,))
malloc_host_with_cfg = _bind("acl.rt.malloc_host_with_cfg", _rt.malloc_host_with_cfg, "io", (0,))
host_register = _bind("acl.rt.host_register", _rt.host_register, "iii", (0,))
host_register_v2 = _bind("acl.rt.host_register_v2", _rt.host_register_v2, "iii")
host_get_device_pointer = _bind("acl.rt.host_get_device_pointer", _rt.host_get_device_pointer, "ii", (0,))
host_unregister = _bind("acl.rt.host_unregister", _rt.host_unregister, "i")
device_can_access_peer = _bind("acl.rt.device_can_access_peer", _rt.device_can_access_peer, "ii", (0,))
device_enable_peer_access = _bind("acl.rt.device_enable_peer_access", _rt.device_enable_peer_access, "ii")
device_disable_peer_access = _bind("acl.rt.device_disable_peer_access", _rt.device_disable_peer_access, "i")
device_peer_access_status = _bind("acl.rt.device_peer_access_status", _rt.device_peer_access_status, "ii", (0,))
# host callbacks: launch_callback(fn, user_data, block_type, stream) runs fn(user_data) on the thread
# subscribed to the stream, inside its process_report(timeout_ms)
subscribe_report = _bind("acl.rt.subscribe_report", _rt.subscribe_report, "ii")
unsubscribe_report = _bind("acl.rt.unsubscribe_report", _rt.unsubscribe_report, "ii")
launch_callback = _bind("acl.rt.launch_callback", _rt.launch_callback, _OBJ + _OBJ + "ii")


def _printing_callback_errors(call):
    """As pyACL, an exception raised by a callback that process_report runs is printed, not raised."""

    def process_report(*args):
        try:
            return call(*args)
        except _CallbackError as err:
            cause = err.__cause__
            _traceback.print_exception(type(cause), cause, cause.__traceback__, file=_sys.stderr)
            return 0

    process_report.__qualname__, process_report.__doc__ = call.__qualname__, call.__doc__
    return process_report


process_report = _printing_callback_errors(_bind("acl.rt.process_report", _rt.process_report, "i"))

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
        raise TypeError("acl.rt.launch_kernel args parse failed") from None
    try:
        _rt.launch_kernel(fn, buffers, stream, duration_us=duration_us, nbytes=nbytes, flops=flops, access=access)
    except _AclError as err:
        return err.code
    return 0


launch_kernel.__qualname__ = "acl.rt.launch_kernel"
_install_missing(__name__)  # a name not defined above: AttributeError "acl.rt.<name> is not emulated by acl-emu"
