"""The Pythonic layer for notebooks: handles and addresses as context managers, the copy kind as an enum,
and a numpy view of device memory for inspection."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import emu
from emu import constants as C
from emu import runtime as rtm
from emu.errors import AclError

N = 4096


# -- context managers ----------------------------------------------------------------------------------------
def test_with_releases_stream_event_and_allocations(rt):
    free_before = rt.get_mem_info(C.ACL_HBM_MEM)[0]
    # the stream last: it exits first, so its copy is done before the memory it uses is freed
    with rt.malloc(N) as dev, rt.malloc_host(N) as host, rt.create_event() as e, rt.create_stream() as s:
        assert isinstance(s, int) and isinstance(e, int) and isinstance(dev, int) and isinstance(host, int)
        rt.memcpy_async(dev, N, host, N, rt.MemcpyKind.HOST_TO_DEVICE, s)
        rt.record_event(e, s)
    for destroyed in (lambda: rt.synchronize_stream(s), lambda: rt.query_event_status(e)):
        with pytest.raises(AclError):
            destroyed()
    with pytest.raises(AclError):
        rt.free(dev)  # already freed: not the start of any allocation
    with pytest.raises(AclError):
        rt.free_host(host)
    assert rt.get_mem_info(C.ACL_HBM_MEM)[0] == free_before


def test_stream_context_waits_for_its_work_before_destroying_it(rt):
    host = rt.malloc_host(1 << 24)
    dev = rt.malloc(1 << 24)
    with rt.create_stream() as s:
        rt.memcpy_async(dev, 1 << 24, host, 1 << 24, rt.MemcpyKind.HOST_TO_DEVICE, s)
        queued_at = rt.machine.now
    last = rt.records()[-1]
    assert last["end"] > queued_at, "the copy ran after it was queued"
    assert rt.machine.now >= last["end"], "leaving the block waited for the copy"


def test_block_exception_propagates_and_the_handles_are_still_released(rt):
    with pytest.raises(ZeroDivisionError):
        with rt.malloc(N) as dev:
            1 / 0
    with pytest.raises(AclError):
        rt.free(dev)


def test_a_failed_release_is_noted_on_the_blocks_exception(rt):
    with pytest.raises(ZeroDivisionError) as info:
        with rt.malloc(N) as dev:
            rt.free(dev)  # freed by hand inside the block: the release at the end fails
            1 / 0
    assert any("releasing device memory" in note for note in info.value.__notes__)


def test_a_failed_release_after_a_clean_block_raises_the_acl_error(rt):
    with pytest.raises(AclError) as info:
        with rt.malloc(N) as dev:
            rt.free(dev)
    assert info.value.code == 107000


def test_handles_are_the_ints_pyacl_gives(rt, acl):
    acl.init()
    acl.rt.set_device(0)
    stream, ret = acl.rt.create_stream()
    assert ret == 0 and type(stream) is int, "the facade gives plain ints, as pyACL does"
    ptr, ret = acl.rt.malloc(N, 0)
    assert ret == 0 and type(ptr) is int
    r = emu.current()
    dev = r.malloc(N)
    assert dev + 16 == int(dev) + 16 and {dev: 1}[int(dev)] == 1 and repr(dev) == repr(int(dev))
    assert pickle.loads(pickle.dumps(dev)) == dev and type(pickle.loads(pickle.dumps(dev))) is int


def test_a_handle_releases_on_the_runtime_that_made_it(rt):
    dev = rt.malloc(N)
    other = emu.configure("A3")  # the current runtime changes
    other.set_device(0)
    with dev:
        pass
    with pytest.raises(AclError):
        rt.free(dev)  # freed on the runtime that made it


# -- MemcpyKind ---------------------------------------------------------------------------------------------------
def test_memcpy_kind_is_the_header_enum():
    assert rtm.MemcpyKind is C.MemcpyKind is emu.MemcpyKind
    assert [(k.name, int(k)) for k in C.MemcpyKind] == [
        ("HOST_TO_HOST", 0), ("HOST_TO_DEVICE", 1), ("DEVICE_TO_HOST", 2), ("DEVICE_TO_DEVICE", 3),
        ("DEFAULT", 4), ("HOST_TO_BUF_TO_DEVICE", 5), ("INNER_DEVICE_TO_DEVICE", 6),
        ("INTER_DEVICE_TO_DEVICE", 7)]


def _copy_everywhere(r, kind_of):
    """Every copy API that takes a kind, with `kind_of(int)` as the kind; returns the bytes that arrived."""
    data = np.arange(N, dtype=np.uint8)
    src = r.register_host(data)
    out = np.zeros(8 * N, dtype=np.uint8)
    dst = r.register_host(out)
    dev = r.malloc(8 * N)
    s = r.create_stream()
    r.memcpy(dev, N, src, N, kind_of(C.ACL_MEMCPY_HOST_TO_DEVICE))
    r.memcpy_async(dev + N, N, src, N, kind_of(C.ACL_MEMCPY_HOST_TO_DEVICE), s)
    r.memcpy2d(dev + 2 * N, 64, src, 64, 64, N // 64, kind_of(C.ACL_MEMCPY_HOST_TO_DEVICE))
    r.memcpy2d_async(dev + 3 * N, 64, src, 64, 64, N // 64, kind_of(C.ACL_MEMCPY_HOST_TO_DEVICE), s)
    r.memcpy_async(dev + 4 * N, N, dev, N, kind_of(C.ACL_MEMCPY_DEVICE_TO_DEVICE), s)
    r.memcpy_async(dev + 5 * N, N, src, N, kind_of(C.ACL_MEMCPY_DEFAULT), s)
    r.synchronize_stream(s)
    r.memcpy(dst, 8 * N, dev, 6 * N, kind_of(C.ACL_MEMCPY_DEVICE_TO_HOST))
    return out[:6 * N].copy(), [(row["api"], row["kind"], row["route"], row["bytes"]) for row in r.records()]


def test_memcpy_kind_enum_works_wherever_the_int_does(fresh):
    a = fresh()
    a.set_device(0)
    with_ints = _copy_everywhere(a, int)
    b = fresh()
    b.set_device(0)
    with_enum = _copy_everywhere(b, C.MemcpyKind)
    assert np.array_equal(with_ints[0], with_enum[0])
    assert with_ints[1] == with_enum[1]
    assert np.array_equal(with_enum[0], np.tile(np.arange(N, dtype=np.uint8), 6))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # numpy_to_ptr: pyACL deprecates it, samples use it
def test_memcpy_kind_enum_through_the_facade(acl):
    """pyACL's facade takes the enum where it takes the int, with the same return code for every kind."""
    acl.init()
    acl.rt.set_device(0)
    host = np.arange(64, dtype=np.uint8)
    back = np.zeros(64, dtype=np.uint8)
    dev, _ = acl.rt.malloc(64, 0)
    for kind in C.MemcpyKind:
        with_int = acl.rt.memcpy(dev, 64, acl.util.numpy_to_ptr(host), 64, int(kind))
        with_enum = acl.rt.memcpy(dev, 64, acl.util.numpy_to_ptr(host), 64, kind)
        assert with_enum == with_int, kind
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(back), 64, dev, 64, C.MemcpyKind.DEVICE_TO_HOST) == 0
    assert np.array_equal(back, host)


# -- device_array --------------------------------------------------------------------------------------------
def test_device_array_shows_device_bytes(rt):
    data = np.arange(256, dtype=np.float32)
    dev = rt.malloc(data.nbytes)
    rt.memcpy(dev, data.nbytes, rt.register_host(data), data.nbytes, rt.MemcpyKind.HOST_TO_DEVICE)
    view = rt.device_array(dev, (16, 16), np.float32)
    assert view.shape == (16, 16) and view.dtype == np.float32
    assert np.array_equal(view, data.reshape(16, 16))
    assert not view.flags.writeable, "for inspection: the bytes change only through the runtime"
    with pytest.raises(ValueError):
        view[0, 0] = 1
    tail = rt.device_array(dev + 1000, 6, "float32")
    assert np.array_equal(tail, data[250:])


def test_device_array_writable_on_request(rt):
    dev = rt.malloc(64)
    rt.device_array(dev, 16, np.int32, writable=True)[:] = 7
    out = np.zeros(16, dtype=np.int32)
    rt.memcpy(rt.register_host(out), 64, dev, 64, rt.MemcpyKind.DEVICE_TO_HOST)
    assert (out == 7).all()


@pytest.mark.parametrize("shape, dtype, words", [
    ((17, 16), np.float32, "past the end"),      # 1088 bytes of a 1024-byte request (+ padding 32+32)
    (-1, np.uint8, "shape"),
    ((2, -3), np.uint8, "shape"),
    (4, object, "object"),
])
def test_device_array_refuses_what_does_not_fit(rt, shape, dtype, words):
    dev = rt.malloc(1024)
    with pytest.raises((ValueError, TypeError)) as info:
        rt.device_array(dev, shape, dtype)
    assert words in str(info.value)


def test_device_array_refuses_host_and_unknown_memory(rt):
    host = rt.malloc_host(64)
    with pytest.raises(ValueError, match="host_array"):
        rt.device_array(host, 16, np.uint8)
    with pytest.raises(ValueError, match="no device allocation"):
        rt.device_array(0x1234, 16, np.uint8)


def test_device_array_refused_in_timing_only_mode():
    r = emu.configure("910B", functional=False)
    r.set_device(0)
    dev = r.malloc(1 << 20)
    with pytest.raises(ValueError, match="timing-only"):
        r.device_array(dev, 16, np.uint8)


def test_device_array_of_freed_memory_is_refused(rt):
    dev = rt.malloc(64)
    rt.free(dev)
    with pytest.raises(ValueError, match="no device allocation"):
        rt.device_array(dev, 16, np.uint8)
