"""Sizes, counts, pitches, widths, heights and offsets are C's size_t: a negative Python int is the huge unsigned
value it is in C, so the runtime's own checks refuse it and no byte moves (issue: negative counts copied
4096 bytes, filled whole buffers, or corrupted the allocator)."""
from __future__ import annotations

import numpy as np
import pytest

import emu
import emu.acl as acl
from emu.errors import AclError

N = 4096


@pytest.fixture
def r(rt):
    """conftest's fresh 910B runtime with device 0 set."""
    return rt


def _buffers(r):
    src = np.arange(N, dtype=np.uint32).astype(np.uint8)
    dst = np.full(N, 0xEE, dtype=np.uint8)
    return r.register_host(src), r.register_host(dst), dst, r.malloc(N)


def _code(fn, *args):
    try:
        fn(*args)
    except AclError as e:
        return e.code
    return 0


@pytest.mark.parametrize("count", [-5, -1, -(1 << 40)])
def test_negative_copy_counts_are_refused_and_copy_nothing(r, count):
    s_ptr, d_ptr, dst, dev = _buffers(r)
    r.memset(dev, N, 0x11, N)
    s = r.create_stream()
    for fn, args in ((r.memcpy, (d_ptr, N, dev, count, 2)),
                     (r.memcpy_async, (d_ptr, N, dev, count, 2, s)),
                     (r.memcpy2d, (d_ptr, 64, dev, 64, count, 4, 2)),
                     (r.memcpy2d, (d_ptr, count, dev, 64, 64, 4, 2))):
        assert _code(fn, *args) != 0, fn.__name__
    r.synchronize_stream(s)
    assert (dst == 0xEE).all()


@pytest.mark.parametrize("count", [-5, -2])
def test_negative_fill_counts_are_refused_and_fill_nothing(r, count):
    _, _, _, dev = _buffers(r)
    r.memset(dev, N, 0x22, N)
    s = r.create_stream()
    for fn, args in ((r.memset, (dev, N, 9, count)), (r.memset_async, (dev, N, 9, count, s)),
                     (r.memset_d32, (dev, N, 7, count)), (r.memset_d32_async, (dev, N, 7, count, s))):
        assert _code(fn, *args) != 0, fn.__name__
    r.synchronize_stream(s)
    out = np.zeros(N, dtype=np.uint8)
    r.memcpy(r.register_host(out), N, dev, N, 2)
    assert (out == 0x22).all()


@pytest.mark.parametrize("size", [-4096, -1])
def test_negative_allocation_and_registration_sizes_leave_the_allocator_intact(r, size):
    host = np.zeros(N, dtype=np.uint8)
    h = r.register_host(host)
    for fn, args in ((r.malloc, (size,)), (r.malloc_host, (size,)), (r.dvpp_malloc, (size,)),
                     (r.malloc_with_cfg, (size, 0)), (r.malloc_host_with_cfg, (size,)),
                     (r.host_register, (h, size, 0)), (r.host_register_v2, (h, size, 1))):
        assert _code(fn, *args) != 0, fn.__name__
        assert not r.space.invariant_violations(), fn.__name__
    a = r.malloc(N)
    b = r.malloc(N)
    assert abs(a - b) >= N  # a new allocation never lands inside a live one


def test_the_facade_reads_sizes_the_same_way():
    emu.configure("910B")
    acl.init()
    acl.rt.set_device(0)
    dev, _ = acl.rt.malloc(N, 0)
    host = np.full(N, 0xEE, dtype=np.uint8)
    ptr = acl.util.numpy_to_ptr(host)
    assert acl.rt.memcpy(ptr, N, dev, -5, 2) != 0
    assert acl.rt.memset(dev, N, 9, -5) != 0
    assert (host == 0xEE).all()


@pytest.mark.parametrize("given, read", [
    ((-1, 5), (2**64 - 1, 5)),
    ((5, -(1 << 40)), (5, 2**64 - (1 << 40))),
    ((-2, None), (2**64 - 2, None)),  # a size that is no number is left to the API's own checks
    ((np.int64(-3), -4), (np.int64(-3), 2**64 - 4)),  # only a Python int is read as size_t here
    ((np.array([1, 2]), -1), (None, 2**64 - 1)),  # (None: an array, compared below by type)
    ((7, 8), (7, 8)),
])
def test_the_api_wrapper_reads_each_positional_size_as_size_t_whatever_the_others_are(r, given, read):
    """The api decorator reads each positional size as C reads size_t: a negative Python int becomes the huge
    unsigned value; anything else (a numpy int, None, an array) is passed on as given, whatever the other
    sizes of the call are, for one- and two-size APIs alike."""
    from emu.runtime.core import api

    seen = []

    @api("aclTestSizes", sizes=("a", "b"))
    def two(rt, a, b):
        seen.append((a, b))

    @api("aclTestSize", sizes=("a",))
    def one(rt, a):
        seen.append(a)

    two(r, *given)
    one(r, given[0])
    (a, b), single = seen
    assert b == read[1] and type(b) is type(read[1])
    if read[0] is None:
        assert a is given[0] and single is given[0]
    else:
        assert a == read[0] == single and type(a) is type(read[0])
