"""Bad input never crashes: random calls of every pyACL function with plausible and absurd integers return a
code (or raise the documented TypeError / ValueError), never an internal exception, and never write outside an
allocation."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import emu
import emu.acl as acl

# the facade's integer-only functions and their arity (pyACL parses fixed C formats)
INT_FUNCS = {
    name: fn for name, fn in vars(acl.rt).items()
    if callable(fn) and getattr(fn, "__qualname__", "").startswith("acl.rt.") and name not in (
        "memcpy_batch", "memcpy_batch_async", "memcpy_batch_v2", "memcpy_batch_async_v2", "malloc_with_cfg",
        "malloc_host_with_cfg", "set_memcpy_desc", "launch_kernel", "launch_callback")
}
ARITY = {"set_device": 1, "reset_device": 1, "reset_device_force": 1, "get_device": 0, "get_device_count": 0,
         "get_run_mode": 0, "synchronize_device": 0, "create_context": 1, "destroy_context": 1, "set_context": 1,
         "get_context": 0, "create_stream": 0, "create_stream_with_config": 2, "destroy_stream": 1,
         "destroy_stream_force": 1, "synchronize_stream": 1, "synchronize_stream_with_timeout": 2,
         "stream_query": 1, "create_event": 0, "create_event_with_flag": 1, "destroy_event": 1, "record_event": 2,
         "reset_event": 2, "stream_wait_event": 2, "synchronize_event": 1, "query_event_status": 1,
         "event_elapsed_time": 2, "malloc": 2, "malloc_host": 1, "free": 1, "free_host": 1, "get_mem_info": 1,
         "pointer_get_attributes": 1, "memcpy": 5, "memcpy_async": 6, "memcpy_async_with_condition": 6,
         "memset": 4, "memset_async": 5, "memcpy2d": 7, "memcpy2d_async": 8, "memset_d32": 4,
         "memset_d32_async": 5, "get_memcpy_desc_size": 1, "memcpy_async_with_desc": 3,
         "memcpy_async_with_offset": 8, "host_register": 3, "host_register_v2": 3, "host_get_device_pointer": 2,
         "host_unregister": 1, "device_can_access_peer": 2, "device_enable_peer_access": 2,
         "device_disable_peer_access": 1, "device_peer_access_status": 2, "create_event_ex_with_flag": 1,
         "query_event_wait_status": 1, "subscribe_report": 2, "unsubscribe_report": 2, "process_report": 1}


def test_every_integer_function_has_a_known_arity():
    assert set(INT_FUNCS) <= set(ARITY), set(INT_FUNCS) - set(ARITY)


@pytest.fixture(scope="module")
def world():
    """A runtime with real buffers, and one more allocation that must stay untouched."""
    emu.configure("910B")
    acl.init()
    acl.rt.set_device(0)
    s, _ = acl.rt.create_stream()
    ev, _ = acl.rt.create_event()
    h, _ = acl.rt.malloc_host(4096)
    d, _ = acl.rt.malloc(4096, 0)
    buffer = np.zeros(4096, dtype=np.uint8)  # pageable memory the calls may target
    guard = np.full(4096, 0xA5, dtype=np.uint8)  # another allocation no call names: nothing may spill into it
    emu.runtime.register_host(guard)
    return {"stream": s, "event": ev, "host": h, "dev": d, "buffer": buffer, "guard": guard,
            "pageable": emu.runtime.register_host(buffer)}


def values(world):
    w = world
    return st.one_of(
        st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 64, 4096, 4097, -1, 2 ** 31, 2 ** 64 - 1, 2 ** 63,
                         w["stream"], w["event"], w["host"], w["dev"], w["pageable"], w["host"] + 4000,
                         w["dev"] + 4095, w["pageable"] + 4095, 0xDEAD0000]),
        st.integers(min_value=-2 ** 70, max_value=2 ** 70),
    )


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_random_calls_return_codes_and_never_write_outside_allocations(world, data):
    name = data.draw(st.sampled_from(sorted(INT_FUNCS)))
    args = [data.draw(values(world)) for _ in range(ARITY[name])]
    if name in ("reset_device", "reset_device_force", "destroy_context", "destroy_stream", "destroy_stream_force",
                "destroy_event", "free", "free_host", "host_unregister"):
        args = [a if a not in (world["stream"], world["event"], world["host"], world["dev"]) else 0 for a in args]
        if name.startswith("reset_device"):
            args = [a if a != 0 else 7 for a in args]  # keep device 0 of the fixture alive
    if name in ("synchronize_stream_with_timeout",) and len(args) == 2:
        args[1] = min(abs(args[1]), 10)
    try:
        ret = INT_FUNCS[name](*args)
    except (TypeError, ValueError, OverflowError) as e:
        # integers beyond C's range are refused by the binding, as pyACL's parser refuses them
        assert "acl." in str(e) or isinstance(e, OverflowError) or "int" in str(e), (name, args, e)
        return
    code = ret if isinstance(ret, int) else ret[-1]
    assert isinstance(code, int) and code >= 0, (name, args, ret)
    assert (world["guard"] == 0xA5).all(), (name, args)
    assert not emu.current().space.invariant_violations(), (name, args)
