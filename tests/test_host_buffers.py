"""Host buffers the program shows the emulator stay valid for as long as the emulator knows them, and
memory a write would corrupt is never written."""
from __future__ import annotations

import mmap

import numpy as np
import pytest



@pytest.fixture
def r(rt):
    """conftest's fresh 910B runtime with device 0 set."""
    return rt


def test_a_registered_mmap_cannot_be_closed_under_the_emulator(r):
    """Closing an mmap the emulator may still copy into would unmap the bytes under it (a segfault)."""
    mm = mmap.mmap(-1, 1 << 16)
    ptr = r.register_host(mm)
    with pytest.raises(BufferError):
        mm.close()
    d = r.malloc(1 << 16)
    r.memset(d, 1 << 16, 7, 1 << 16)
    r.memcpy(ptr, 1 << 16, d, 1 << 16, 2)
    assert mm[:4] == b"\x07" * 4


def test_a_registered_bytearray_cannot_be_resized(r):
    """Resizing moves a bytearray's bytes: the address the program holds would point at freed memory."""
    ba = bytearray(4096)
    r.register_host(ba)
    with pytest.raises(BufferError):
        ba.extend(b"x" * 100_000)


def test_an_object_array_is_refused(r):
    with pytest.raises(TypeError, match="object array"):
        r.register_host(np.array([object()] * 8))


def test_bytes_are_written_as_pyacl_does_but_not_the_one_byte_singletons(r):
    """pyACL's samples copy into a bytes object's buffer (bytes_to_ptr) and read it back; a one-byte bytes
    object is an interpreter-wide singleton, which the emulator never marks writable."""
    data = bytes(4096)
    region = r.space.register_host(data)[1]
    assert not region.readonly
    one = r.space.register_host(bytes([7]))[1]
    assert one.readonly and not one.buffer().flags.writeable


def test_a_read_only_array_is_never_written(r):
    arr = np.zeros(4096, dtype=np.uint8)
    arr.flags.writeable = False
    region = r.space.register_host(arr)[1]
    assert region.readonly and not region.buffer().flags.writeable


def test_a_copy_or_fill_into_read_only_memory_is_refused_at_the_call(r):
    """100000 with a message naming the memory, before anything is queued; the bytes are untouched."""
    import emu.acl as acl
    from emu.errors import AclError

    arr = np.arange(4096, dtype=np.uint8)
    arr.flags.writeable = False
    ptr = r.register_host(arr)
    d = r.malloc(4096)
    with pytest.raises(AclError) as e:
        r.memcpy(ptr, 4096, d, 4096, 2)
    assert e.value.code == 100000 and "read-only" in str(e.value)
    s = r.create_stream()
    with pytest.raises(AclError):
        r.memcpy_async(ptr, 4096, d, 4096, 2, s)
    with pytest.raises(AclError):
        r.memset(ptr, 4096, 0, 4096)
    assert (arr == np.arange(4096, dtype=np.uint8)).all()
    assert acl.rt.memcpy(ptr, 4096, d, 4096, 2) == 100000
