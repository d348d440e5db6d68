"""Device memory at fixed host addresses (emu.arena): what device code running on the CPU relies on."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import emu
import emu.acl as acl
from emu.arena import PAGE, Arena
from emu.memory import window_of


@pytest.fixture
def acl_session():
    emu.configure(product="910B", functional=True)
    acl.init()
    acl.rt.set_device(0)


def _device(nbytes: int) -> tuple[int, object]:
    ptr, ret = acl.rt.malloc(nbytes, 0)
    assert ret == 0
    return ptr, emu.current().space.find(ptr)


def test_a_device_allocations_bytes_lie_at_the_arenas_base_plus_its_offset_in_the_window(acl_session):
    a, ra = _device(1 << 20)
    b, rb = _device(4096)
    for ptr, r in ((a, ra), (b, rb)):
        buf = r.buffer()
        assert r.arena is ra.arena is not None
        assert buf.__array_interface__["data"][0] == r.arena.base + (ptr - window_of(0))
    # so pointer arithmetic from one allocation's bytes reaches another's, as on the device
    rb.buffer()[:4] = [1, 2, 3, 4]
    assert bytes(ra.arena.view(b - window_of(0), 4)) == b"\x01\x02\x03\x04"


def test_memory_freed_and_allocated_again_reads_zeros(acl_session):
    ptr, r = _device(3 * PAGE + 100)  # whole pages given back, and parts of pages zeroed
    r.buffer()[:] = 0xAB
    acl.rt.free(ptr)
    again, r2 = _device(3 * PAGE + 100)
    assert again == ptr and r2.arena is r.arena
    assert not r2.buffer().any()


def test_freeing_keeps_a_neighbours_bytes_on_a_shared_page(acl_session):
    a, ra = _device(96)
    b, rb = _device(96)
    assert b // PAGE == a // PAGE  # (both on one page)
    ra.buffer()[:] = 7
    rb.buffer()[:] = 9
    acl.rt.free(a)
    assert (rb.buffer() == 9).all()


def test_an_address_past_the_highest_allocation_touched_faults():
    """The arena is readable and writable up to its `top` only: a pointer moved past it faults (which the kernel
    runner reports as the launch's exception), where plain host memory would be silently corrupted."""
    code = ("from emu.arena import Arena\nimport ctypes\na = Arena.reserve(1 << 30)\nv = a.view(0, 4096)\n"
            "v[:] = 1\nprint('below', ctypes.c_ubyte.from_address(a.base + 4095).value, flush=True)\n"
            "ctypes.c_ubyte.from_address(a.base + a.top).value\nprint('no fault')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["below", "1"] and done.returncode == -11, (done.stdout, done.stderr)


def test_an_arena_given_back_is_reused_zeroed():
    a = Arena.reserve(1 << 24)
    a.view(0, 8192)[:] = 5
    a.release()
    b = Arena.reserve(1 << 24)
    assert b is a and not np.frombuffer(b.view(0, 8192), dtype=np.uint8).any()
    b.release()
