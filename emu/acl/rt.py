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


def _b(name, method, params="", outputs=(), **kw):
    globals()[name] = _bind(f"acl.rt.{name}", getattr(_rt, method), params, outputs, **kw)


def _attributes(a):
    return {"location": {"id": a.id, "type": int(a.type)}, "page_size": a.page_size, "rsv": [0, 0, 0, 0]}


# devices and contexts
_b("set_device", "set_device", "i")
_b("reset_device", "reset_device", "i")
_b("reset_device_force", "reset_device_force", "i")
_b("get_device", "get_device", "", (0,))
_b("get_device_count", "get_device_count", "", (0,))
_b("get_run_mode", "get_run_mode", "", (0,))
_b("synchronize_device", "synchronize_device")
_b("create_context", "create_context", "i", (0,))
_b("destroy_context", "destroy_context", "i")
_b("set_context", "set_context", "i")
_b("get_context", "get_context", "", (0,))
# streams
_b("create_stream", "create_stream", "", (0,))
_b("create_stream_with_config", "create_stream_with_config", "ii", (0,))
_b("destroy_stream", "destroy_stream", "i")
_b("destroy_stream_force", "destroy_stream_force", "i")
_b("synchronize_stream", "synchronize_stream", "i")
_b("synchronize_stream_with_timeout", "synchronize_stream_with_timeout", "ii")
_b("stream_query", "stream_query", "i", (0,))
# events
_b("create_event", "create_event", "", (0,))
_b("create_event_with_flag", "create_event_with_flag", "i", (0,))
_b("create_event_ex_with_flag", "create_event_ex_with_flag", "i", (0,))
_b("destroy_event", "destroy_event", "i")
_b("record_event", "record_event", "ii")
_b("reset_event", "reset_event", "ii")
_b("stream_wait_event", "stream_wait_event", "ii")
_b("synchronize_event", "synchronize_event", "i")
_b("query_event_status", "query_event_status", "i", (0,))
_b("query_event_wait_status", "query_event_wait_status", "i", (0,))
_b("event_elapsed_time", "event_elapsed_time", "ii", (0.0,))
# memory
_b("malloc", "malloc", "ii", (0,))
_b("malloc_host", "malloc_host", "i", (0,))
_b("free", "free", "i")
_b("free_host", "free_host", "i")
_b("get_mem_info", "get_mem_info", "i", (0, 0))
_b("pointer_get_attributes", "pointer_get_attributes", "i", ({},), convert=_attributes)
# copies and memsets
_b("memcpy", "memcpy", "iiiii")
_b("memcpy_async", "memcpy_async", "iiiiii")
_b("memcpy_async_with_condition", "memcpy_async_with_condition", "iiiiii")
_b("memset", "memset", "iiii")
_b("memset_async", "memset_async", "iiiii")

# 2D, D32, descriptor, offset and batch copies (extensions for the C-only APIs: docs/api.md, the pyACL facade)
_b("memcpy2d", "memcpy2d", "iiiiiii")
_b("memcpy2d_async", "memcpy2d_async", "iiiiiiii")
_b("memset_d32", "memset_d32", "iiii")
_b("memset_d32_async", "memset_d32_async", "iiiii")
_b("get_memcpy_desc_size", "get_memcpy_desc_size", "i", (0,))
_b("set_memcpy_desc", "set_memcpy_desc", "iiiiio", (0,))
_b("memcpy_async_with_desc", "memcpy_async_with_desc", "iii")
_b("memcpy_async_with_offset", "memcpy_async_with_offset", "iiiiiiii")
_b("memcpy_batch", "memcpy_batch", "lllli" + _ATTRS + "li", (_SIZE_MAX,))
_b("memcpy_batch_async", "memcpy_batch_async", "lllli" + _ATTRS + "lii", (_SIZE_MAX,))
_b("memcpy_batch_v2", "memcpy_batch_v2", "lllli" + _ATTRS + "li")
_b("memcpy_batch_async_v2", "memcpy_batch_async_v2", "lllli" + _ATTRS + "lii")
# allocation with configs, host registration, peer access
_b("malloc_with_cfg", "malloc_with_cfg", "iio", (0,))
_b("malloc_host_with_cfg", "malloc_host_with_cfg", "io", (0,))
_b("host_register", "host_register", "iii", (0,))
_b("host_register_v2", "host_register_v2", "iii")
_b("host_get_device_pointer", "host_get_device_pointer", "ii", (0,))
_b("host_unregister", "host_unregister", "i")
_b("device_can_access_peer", "device_can_access_peer", "ii", (0,))
_b("device_enable_peer_access", "device_enable_peer_access", "ii")
_b("device_disable_peer_access", "device_disable_peer_access", "i")
_b("device_peer_access_status", "device_peer_access_status", "ii", (0,))
# host callbacks: launch_callback(fn, user_data, block_type, stream) runs fn(user_data) on the thread
# subscribed to the stream, inside its process_report(timeout_ms)
_b("subscribe_report", "subscribe_report", "ii")
_b("unsubscribe_report", "unsubscribe_report", "ii")
_b("launch_callback", "launch_callback", _OBJ + _OBJ + "ii")


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


def _launch_args(fn, buffers, stream, duration_us=None, nbytes=0, flops=0):
    return fn, buffers, stream, duration_us, nbytes, flops


def launch_kernel(*args, **kwargs):
    """ret = acl.rt.launch_kernel(fn, buffers, stream[, duration_us[, nbytes[, flops]]]): enqueue `fn(*views)`
    as a device task on `stream` (the emulator's stand-in for a kernel launch).

    buffers: a list of (dev_ptr, nbytes) or (dev_ptr, shape, dtype); give duration_us or a cost (nbytes of
    memory traffic, flops), finite numbers (the last three may be given by name). Arguments that cannot be
    read so (a wrong count, a str stream, an unknown dtype, a shape no array can have, an infinite cost)
    raise TypeError("acl.rt.launch_kernel args parse failed"); the runtime's refusals are return codes.
    """
    try:
        fn, buffers, stream, duration_us, nbytes, flops = _launch_args(*args, **kwargs)
        stream = _operator.index(stream)
        if not isinstance(buffers, (list, tuple)):
            raise TypeError
        buffers = [_kernel_buffer(b) for b in buffers]
        duration_us = None if duration_us is None else _finite(duration_us)
        nbytes, flops = _finite(nbytes), _finite(flops)
    except (TypeError, ValueError, OverflowError):
        raise TypeError("acl.rt.launch_kernel args parse failed") from None
    try:
        _rt.launch_kernel(fn, buffers, stream, duration_us=duration_us, nbytes=nbytes, flops=flops)
    except _AclError as err:
        return err.code
    return 0


launch_kernel.__qualname__ = "acl.rt.launch_kernel"
_install_missing(__name__)
