"""A blocking call's own bytes move once the runtime's lock is released (`Core.later`, `transfer.unlocked`), so
two threads' copies run at once; everything else still moves under the lock, and every byte arrives."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import emu
from emu import kernels
from emu.runtime import transfer

H2D, D2H = 1, 2
BIG = 1 << 20


@pytest.fixture
def rt():
    rt = emu.configure("910B", functional=True)
    rt.set_device(0)
    return rt


def host_and_device(rt, n):
    host, dev = rt.malloc_host(n), rt.malloc(n)
    view = rt.space.resolve(host, n)[0].view(0, n)
    view[:] = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    return host, dev, view


def bytes_at(rt, addr, n):
    return rt.space.resolve(addr, n)[0].buffer()[:n]


def watch_lock(rt, monkeypatch, name):
    """Wrap kernels.<name> to record, at each call, whether this thread holds the runtime's lock."""
    held = []
    real = getattr(kernels, name)

    def spy(*args):
        held.append(rt.lock._is_owned())
        return real(*args)

    monkeypatch.setattr(kernels, name, spy)
    return held


def test_a_blocking_copys_bytes_move_after_the_lock_is_released_and_arrive(rt, monkeypatch):
    host, dev, view = host_and_device(rt, BIG)
    held = watch_lock(rt, monkeypatch, "copy")
    rt.memcpy(dev, BIG, host, BIG, H2D)
    assert held == [False] and np.array_equal(bytes_at(rt, dev, BIG), view)
    assert rt.caller.moves == []


def test_small_blocking_copies_and_queued_copies_move_under_the_lock(rt, monkeypatch):
    """Below UNLOCKED_FROM a move costs less than deferring it; an async copy's task may be one another task is
    ordered after, so its bytes move at its completion, under the lock."""
    n = transfer.UNLOCKED_FROM - 4096
    host, dev, view = host_and_device(rt, BIG)
    held = watch_lock(rt, monkeypatch, "copy")
    rt.memcpy(dev, n, host, n, H2D)
    s = rt.create_stream()
    rt.memcpy_async(dev, BIG, host, BIG, H2D, s)
    rt.synchronize_stream(s)
    assert held == [True, True] and np.array_equal(bytes_at(rt, dev, BIG), view)


@pytest.mark.parametrize("call", ["memset", "memset_d32", "memcpy2d"])
def test_blocking_fills_and_2d_copies_move_after_the_lock_too(rt, monkeypatch, call):
    host, dev, view = host_and_device(rt, BIG)
    kernel = {"memset": "fill", "memset_d32": "fill_u32", "memcpy2d": "copy_2d"}[call]
    held = watch_lock(rt, monkeypatch, kernel)
    if call == "memset":
        rt.memset(dev, BIG, 0x5A, BIG)
        want = np.full(BIG, 0x5A, np.uint8)
    elif call == "memset_d32":
        rt.memset_d32(dev, BIG, 0x01020304, BIG // 4)
        want = np.tile(np.array([4, 3, 2, 1], np.uint8), BIG // 4)
    else:
        rt.memcpy2d(dev, 1024, host, 1024, 1024, BIG // 1024, H2D)
        want = view
    assert held and not any(held) and np.array_equal(bytes_at(rt, dev, BIG), want)


def test_a_blocking_batchs_bytes_move_after_the_lock_and_an_async_batchs_under_it(rt, monkeypatch):
    """aclrtMemcpyBatch's entries move once the call has released the lock (their buffers held by the move);
    aclrtMemcpyBatchAsync's at their task's completion, under it."""
    from emu import batch_kernels

    entry, count = 16 << 10, 64
    host, dev, view = host_and_device(rt, entry * count)
    rt.memset(dev, entry * count, 0, entry * count)  # (device memory with bytes: the batch's one-call path)
    held, real = [], batch_kernels.copy_many
    monkeypatch.setattr(batch_kernels, "copy_many", lambda *a: (held.append(rt.lock._is_owned()), real(*a)))
    attr = {"dst_loc": {"type": 1, "id": 0}, "src_loc": {"type": 0, "id": 0}, "rsv": bytes(16)}
    dsts, srcs = [dev + j * entry for j in range(count)], [host + j * entry for j in range(count)]
    rt.memcpy_batch(dsts, [entry] * count, srcs, [entry] * count, count, [attr], [0], 1)
    s = rt.create_stream()
    rt.memcpy_batch_async(dsts, [entry] * count, srcs, [entry] * count, count, [attr], [0], 1, s)
    rt.synchronize_stream(s)
    assert held == [False, True] and np.array_equal(bytes_at(rt, dev, entry * count), view)


def test_two_threads_copy_at_once_and_every_byte_arrives(rt):
    """Each thread copies its own buffers back and forth; one thread's bytes move while the other holds the
    lock, and each ends with its own data."""
    pairs = [host_and_device(rt, 4 * BIG) for _ in range(2)]
    back = [rt.malloc_host(4 * BIG) for _ in range(2)]
    errors = []

    def work(i):
        try:
            rt.set_device(0)
            host, dev, _ = pairs[i]
            for _ in range(5):
                rt.memcpy(dev, 4 * BIG, host, 4 * BIG, H2D)
                rt.memcpy(back[i], 4 * BIG, dev, 4 * BIG, D2H)
        except Exception as e:  # (reported below: a thread's exception would be lost)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(2):
        assert np.array_equal(rt.space.resolve(back[i], 4 * BIG)[0].view(0, 4 * BIG), pairs[i][2])


def test_a_nested_calls_moves_run_before_it_returns(rt, monkeypatch):
    """Moves left by a call made inside another (its lock still held by the outer call) run when the inner call
    ends, in order, before the outer call goes on."""
    host, dev, view = host_and_device(rt, BIG)
    order = []
    rt.lock.acquire()
    try:
        rt.later(rt.caller, order.append, "first")
        rt.memcpy(dev, BIG, host, BIG, H2D)
        order.append("after")
    finally:
        rt.lock.release()
    assert order == ["first", "after"] and np.array_equal(bytes_at(rt, dev, BIG), view)


def test_in_wall_host_time_a_calls_unlocked_moves_are_its_own_time_not_the_hosts(monkeypatch):
    """host_time="wall" counts the host's time between a thread's calls; bytes a call moves after releasing the
    lock are the call's, so the gap starts once they have moved."""
    rt = emu.configure("910B", functional=True, host_time="wall")
    rt.set_device(0)
    host, dev, _ = host_and_device(rt, BIG)
    real = kernels.copy

    def slow(*args):
        time.sleep(0.05)
        return real(*args)

    monkeypatch.setattr(kernels, "copy", slow)
    rt.memcpy(dev, BIG, host, BIG, H2D)
    before = rt.clock
    rt.memcpy(dev, 64, host, 64, H2D)  # (below UNLOCKED_FROM and SMALL_COPY: no kernel)
    assert rt.clock - before < 0.02  # the second call's cost and the gap, not the first call's 50 ms sleep
