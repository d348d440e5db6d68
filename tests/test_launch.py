"""Kernel launch (acl.rt.launch_kernel / runtime.launch_kernel): the seeds' myKernel<<<...>>>.

A Python function enqueued on a stream, run at its simulated start in stream order on numpy views
of device memory; its duration is declared or follows from a roofline of the product's memory
bandwidth and peak FLOP/s.
"""
from __future__ import annotations

import numpy as np
import pytest

import emu
import emu.acl as acl
from emu import AclError
from helpers import code

pytestmark = pytest.mark.filterwarnings("ignore:acl.util.numpy_to_ptr is deprecated:DeprecationWarning")

H2D, D2H = 1, 2
NORMAL_ONLY = 2
NPY_UINT8 = 2
TIME_LINE_EVENT = 0x8 | 0x1  # ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC
N = 4096

INVALID_PARAM = 100000
INVALID_HANDLE = 107017
DRV_INTERNAL_ERROR = 507899


def pattern(n=N, seed=0):
    return ((np.arange(n) * 7 + seed) % 251).astype(np.uint8)


def peek(rt, ptr, n=N):
    r, off = rt.space.resolve(ptr, n)
    if r.is_device and not r.materialized:
        return np.zeros(n, dtype=np.uint8)
    return r.view(off, n).copy()


def pinned(rt, n=N, fill=0):
    h = rt.malloc_host(n)
    view = acl.util.ptr_to_numpy(h, (n,), NPY_UINT8)
    view[:] = fill
    return h, view


def kernel_records(rt, label):
    return [t for t in rt.machine.records if t.kind == "kernel" and t.label == label]


def nop(*views):
    pass


# ---------------------------------------------------------------------------
# What the function sees, and when it runs
# ---------------------------------------------------------------------------

def test_kernel_gets_uint8_views_of_device_memory(rt):
    s = rt.create_stream()
    a, b = rt.malloc(N, NORMAL_ONLY), rt.malloc(2 * N, NORMAL_ONLY)
    got = {}

    def k(x, y):
        got["x"], got["y"] = (x.dtype, x.shape), (y.dtype, y.shape)
        x[:] = 7
        y[:N] = x + 1

    rt.launch_kernel(k, [(a, N), (b, 2 * N)], s, duration_us=1)
    rt.synchronize_stream(s)
    assert got == {"x": (np.uint8, (N,)), "y": (np.uint8, (2 * N,))}
    assert (peek(rt, a) == 7).all()  # writes through the views land in device memory
    assert (peek(rt, b, N) == 8).all()


def test_kernel_gets_typed_views_for_ptr_shape_dtype(rt):
    s = rt.create_stream()
    a = rt.malloc(N, NORMAL_ONLY)
    out = rt.malloc(N, NORMAL_ONLY)
    seen = {}

    def k(x, y):
        seen["x"], seen["y"] = (x.dtype, x.shape), (y.dtype, y.shape)
        x[:] = np.arange(x.size, dtype=np.float32).reshape(x.shape)
        y[:] = x.sum()

    rt.launch_kernel(k, [(a, (32, 32), np.float32), (out, 512, "int64")], s, duration_us=1)
    rt.synchronize_stream(s)
    assert seen == {"x": (np.dtype(np.float32), (32, 32)), "y": (np.dtype(np.int64), (512,))}
    np.testing.assert_array_equal(peek(rt, a).view(np.float32), np.arange(1024, dtype=np.float32))
    assert (peek(rt, out).view(np.int64) == sum(range(1024))).all()


def test_kernel_runs_at_its_simulated_start_in_stream_order(rt):
    n = 8 << 20
    s = rt.create_stream()
    h, view = pinned(rt, n)
    view[:] = pattern(n)
    d, out = rt.malloc(n, NORMAL_ONLY), rt.malloc(n, NORMAL_ONLY)
    seen = {}

    def k(src, dst):
        seen["now"] = rt.machine.now
        seen["src"] = src.copy()
        dst[:] = src[::-1]

    rt.memcpy_async(d, n, h, n, H2D, s)
    rt.launch_kernel(k, [(d, n), (out, n)], s, duration_us=100)
    assert "now" not in seen  # queued behind the 8 MiB H2D, not run at launch
    rt.synchronize_stream(s)
    (task,) = kernel_records(rt, "k")
    h2d = [t for t in rt.machine.records if t.label == "aclrtMemcpyAsync" and t.stream is task.stream][-1]
    assert seen["now"] == task.start  # the function ran at the kernel's simulated start...
    assert task.start >= h2d.end  # ...after the copy before it on the stream
    np.testing.assert_array_equal(seen["src"], pattern(n))
    np.testing.assert_array_equal(peek(rt, out, n), pattern(n)[::-1])


def test_kernel_on_stream_b_waiting_for_event_after_h2d_on_stream_a_sees_the_data(rt):
    n = 8 << 20
    a, b, c = rt.create_stream(), rt.create_stream(), rt.create_stream()
    h, view = pinned(rt, n)
    view[:] = pattern(n, 3)
    d = rt.malloc(n, NORMAL_ONLY)
    ev = rt.create_event()
    seen = {}

    def waited(x):
        seen["waited"] = x.copy()

    def unordered(x):
        seen["unordered"] = x.copy()

    rt.memcpy_async(d, n, h, n, H2D, a)
    rt.record_event(ev, a)
    rt.stream_wait_event(b, ev)
    rt.launch_kernel(waited, [(d, n)], b, duration_us=1)
    rt.launch_kernel(unordered, [(d, n)], c, duration_us=1)  # no wait: runs while the H2D is in flight
    rt.synchronize_stream(b)
    rt.synchronize_stream(c)
    np.testing.assert_array_equal(seen["waited"], pattern(n, 3))
    assert not seen["unordered"].any()


# ---------------------------------------------------------------------------
# Duration: declared, or the roofline
# ---------------------------------------------------------------------------

def _timed(rt, launch):
    """Elapsed ms between two events around one launch on stream s.

    A leading 1 ms kernel keeps the stream busy, so the host's own call overhead between the
    record and the launch (and the launch's own host time) does not show in the measurement; the
    kernel's dispatch (hardware.kernel_dispatch, device time) does.
    """
    s = rt.create_stream()
    start, stop = rt.create_event_with_flag(TIME_LINE_EVENT), rt.create_event_with_flag(TIME_LINE_EVENT)
    rt.launch_kernel(nop, [], s, duration_us=1000)
    rt.record_event(start, s)
    launch(s)
    rt.record_event(stop, s)
    rt.synchronize_stream(s)
    return rt.event_elapsed_time(start, stop)


@pytest.mark.parametrize("us", [0.5, 37.0, 2500.0])
def test_duration_us_is_what_an_event_pair_measures(rt, us):
    d = rt.malloc(N, NORMAL_ONLY)
    dispatch = rt.product.hardware.kernel_dispatch
    ms = _timed(rt, lambda s: rt.launch_kernel(nop, [(d, N)], s, duration_us=us))
    assert ms == pytest.approx(us / 1000 + dispatch * 1e3, rel=1e-6)  # events see the dispatch too
    (task,) = kernel_records(rt, "nop")[-1:]
    assert task.end - task.start == pytest.approx(us * 1e-6, rel=1e-9)  # the span is the work alone


def test_duration_zero_is_allowed(rt):
    ms = _timed(rt, lambda s: rt.launch_kernel(nop, [], s, duration_us=0))
    assert ms == pytest.approx(rt.product.hardware.kernel_dispatch * 1e3, abs=1e-9)  # only the dispatch


@pytest.mark.parametrize("product", ["910B", "200I_A2"])
def test_roofline_memory_bound(fresh, product):
    rt = fresh(product)
    rt.set_device(0)
    hw = emu.current().product.hardware
    nbytes = hw.memory_bandwidth * 3e-3  # 3 ms of memory traffic
    flops = hw.peak_flops * 1e-3  # 1 ms of arithmetic
    expected = max(nbytes / hw.memory_bandwidth, flops / hw.peak_flops)
    assert expected == pytest.approx(3e-3)
    ms = _timed(rt, lambda s: rt.launch_kernel(nop, [], s, nbytes=nbytes, flops=flops))
    assert ms == pytest.approx((expected + hw.kernel_dispatch) * 1e3, rel=1e-6)


@pytest.mark.parametrize("product", ["910B", "200I_A2"])
def test_roofline_compute_bound(fresh, product):
    rt = fresh(product)
    rt.set_device(0)
    hw = emu.current().product.hardware
    nbytes = 1 << 20
    flops = hw.peak_flops * 2e-3  # 2 ms of arithmetic
    expected = max(nbytes / hw.memory_bandwidth, flops / hw.peak_flops)
    assert expected == pytest.approx(2e-3)
    ms = _timed(rt, lambda s: rt.launch_kernel(nop, [], s, flops=flops, nbytes=nbytes))
    assert ms == pytest.approx((expected + hw.kernel_dispatch) * 1e3, rel=1e-6)


def test_roofline_uses_the_products_numbers(fresh):
    """The same cost takes longer on a product with slower memory."""
    times = {}
    for product in ("910B", "200I_A2"):
        rt = fresh(product)
        rt.set_device(0)
        times[product] = _timed(rt, lambda s: rt.launch_kernel(nop, [], s, nbytes=1 << 30))
        hw = rt.product.hardware
        assert times[product] == pytest.approx(((1 << 30) / hw.memory_bandwidth + hw.kernel_dispatch) * 1e3,
                                               rel=1e-6)
    assert times["200I_A2"] > times["910B"]


def test_duration_us_wins_over_a_cost(rt):
    ms = _timed(rt, lambda s: rt.launch_kernel(nop, [], s, duration_us=10, nbytes=1 << 40))
    assert ms == pytest.approx(0.010 + rt.product.hardware.kernel_dispatch * 1e3, rel=1e-6)


# ---------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------

def test_host_pointers_as_kernel_buffers_are_invalid_param(rt):
    s = rt.create_stream()
    h, _ = pinned(rt)
    arr = np.zeros(N, dtype=np.uint8)
    page = acl.util.numpy_to_ptr(arr)
    d = rt.malloc(N, NORMAL_ONLY)
    called = []
    assert code(rt.launch_kernel, called.append, [(h, N)], s, duration_us=1) == INVALID_PARAM
    assert code(rt.launch_kernel, called.append, [(d, N), (page, N)], s, duration_us=1) == INVALID_PARAM
    assert code(rt.launch_kernel, called.append, [(page, (N,), np.uint8)], s, duration_us=1) == INVALID_PARAM
    rt.synchronize_stream(s)
    assert called == []  # nothing was queued


def test_registered_host_memory_is_usable_through_its_device_pointer(rt):
    s = rt.create_stream()
    arr = pattern()
    host = acl.util.numpy_to_ptr(arr)
    rt.host_register_v2(host, N, 0x10000000 | 0x2)  # PINNED | MAPPED
    dev = rt.host_get_device_pointer(host, 0)
    assert code(rt.launch_kernel, nop, [(host, N)], s, duration_us=1) == INVALID_PARAM  # the host address
    seen = {}
    rt.launch_kernel(lambda x: seen.setdefault("x", x.copy()), [(dev, N)], s, duration_us=1)
    rt.synchronize_stream(s)
    np.testing.assert_array_equal(seen["x"], arr)
    rt.host_unregister(host)


def test_va_consistent_device_pointer_is_usable_by_a_kernel(rt):
    s = rt.create_stream()
    h = rt.malloc_host_with_cfg(N, [{"attr": 3, "value": 1}])  # ACL_RT_MEM_ATTR_VA_FLAG
    acl.util.ptr_to_numpy(h, (N,), NPY_UINT8)[:] = pattern()
    dev = rt.host_register(h, N, 0)
    assert dev == h
    seen = {}
    rt.launch_kernel(lambda x: seen.setdefault("x", x.copy()), [(dev, N)], s, duration_us=1)
    rt.synchronize_stream(s)
    np.testing.assert_array_equal(seen["x"], pattern())


def test_buffer_outside_an_allocation_is_invalid_param(rt):
    d = rt.malloc(N, NORMAL_ONLY)
    size = rt.space.find(d).size
    assert code(rt.launch_kernel, nop, [(d, size + 1)], 0, duration_us=1) == INVALID_PARAM
    assert code(rt.launch_kernel, nop, [(d,)], 0, duration_us=1) == INVALID_PARAM  # not (ptr, n) or (ptr, shape, dtype)


def test_neither_duration_nor_cost_is_invalid_param(rt):
    s = rt.create_stream()
    assert code(rt.launch_kernel, nop, [], s) == INVALID_PARAM
    assert code(rt.launch_kernel, nop, [], s, nbytes=0, flops=0) == INVALID_PARAM


def test_negative_duration_is_invalid_param(rt):
    assert code(rt.launch_kernel, nop, [], 0, duration_us=-1) == INVALID_PARAM


def test_not_callable_is_invalid_handle_and_none_invalid_param(rt):
    """kernel.cpp: aclrtLaunchKernelImpl refuses a null funcHandle (100000); api_c.cc:
    rtLaunchKernelByFuncHandleV3 an invalid one (107017). A non-callable was 100000 before."""
    s = rt.create_stream()
    assert code(rt.launch_kernel, "kernel", [], s, duration_us=1) == INVALID_HANDLE
    assert code(rt.launch_kernel, None, [], s, duration_us=1) == INVALID_PARAM


def test_destroyed_stream_is_invalid_handle(rt):
    s = rt.create_stream()
    rt.destroy_stream(s)
    assert code(rt.launch_kernel, nop, [], s, duration_us=1) == INVALID_HANDLE


def test_kernel_on_the_default_stream(rt):
    d = rt.malloc(N, NORMAL_ONLY)

    def k(x):
        x[:] = 9

    rt.launch_kernel(k, [(d, N)], 0, duration_us=1)
    rt.synchronize_stream(0)
    assert (peek(rt, d) == 9).all()


def test_kernel_exception_is_reported_by_synchronize_and_the_emulator_keeps_working(rt):
    s = rt.create_stream()
    d = rt.malloc(N, NORMAL_ONLY)
    h, view = pinned(rt)

    def boom(x):
        raise ValueError("kernel bug")

    def ok(x):
        x[:] = 0x3C

    rt.launch_kernel(boom, [(d, N)], s, duration_us=5)
    rt.launch_kernel(ok, [(d, N)], s, duration_us=5)  # the stream goes on after the failure
    assert code(rt.synchronize_stream, s) == DRV_INTERNAL_ERROR
    assert code(rt.synchronize_stream, s) == 0  # reported once
    rt.memcpy_async(h, N, d, N, D2H, s)
    rt.synchronize_stream(s)
    assert (view == 0x3C).all()
    other = rt.create_stream()
    rt.launch_kernel(ok, [(d, N)], other, duration_us=1)
    assert code(rt.synchronize_stream, other) == 0


# ---------------------------------------------------------------------------
# pyACL facade
# ---------------------------------------------------------------------------

def test_facade_launch_kernel_returns_0_or_the_code(acl):
    assert acl.rt.set_device(0) == 0
    s, ret = acl.rt.create_stream()
    d, ret = acl.rt.malloc(N, NORMAL_ONLY)
    h, ret = acl.rt.malloc_host(N)
    view = acl.util.ptr_to_numpy(h, (N,), NPY_UINT8)

    def k(x):
        x[:] = 0x5D

    assert acl.rt.launch_kernel(k, [(d, N)], s, 3.0) == 0
    assert acl.rt.launch_kernel(k, [(d, N)], s, None, N) == 0  # roofline from a cost
    assert acl.rt.memcpy_async(h, N, d, N, D2H, s) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert (view == 0x5D).all()
    assert acl.rt.launch_kernel(k, [(h, N)], s, 3.0) == INVALID_PARAM
    assert acl.rt.launch_kernel(k, [(d, N)], s) == INVALID_PARAM
    assert acl.rt.launch_kernel(42, [(d, N)], s, 3.0) == INVALID_HANDLE  # not a kernel: rtLaunchKernelByFuncHandleV3
    assert acl.rt.destroy_stream(s) == 0
    assert acl.rt.launch_kernel(k, [(d, N)], s, 3.0) == INVALID_HANDLE
    with pytest.raises(TypeError, match="acl.rt.launch_kernel args parse failed"):
        acl.rt.launch_kernel(k, [(d, N)], "stream", 3.0)


def test_facade_kernel_failure_shows_at_synchronize(acl):
    assert acl.rt.set_device(0) == 0
    s, _ = acl.rt.create_stream()

    def boom():
        raise RuntimeError("bad kernel")

    assert acl.rt.launch_kernel(boom, [], s, 1.0) == 0
    assert acl.rt.synchronize_stream(s) == DRV_INTERNAL_ERROR
    assert acl.rt.synchronize_stream(s) == 0
