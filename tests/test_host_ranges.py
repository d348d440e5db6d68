"""What the emulator remembers of a host range never outlives the memory it describes, nor forgets memory that is
still alive (issue: robustness, third round, item 2).

- A buffer a program showed the emulator (acl.util.numpy_to_ptr / bytes_to_ptr, `register_host`) is forgotten
  only once nothing but the emulator refers to it (`AddressSpace._prune`), never while the program holds it.
- A C program's own memory (adopted at its address, `AddressSpace.adopt_host`) is forgotten when the process's
  allocator hands its addresses to the emulator again (`aclrtMallocHost` there is page-locked memory).
- Freed page-locked memory is kept from the allocator a while (`AddressSpace.held`, HELD_BYTES): while kept, a
  C program's use of it is a use after free; once given back, malloc may return it and it is the program's own.
"""
from __future__ import annotations

import gc
import mmap
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import emu
from emu import memory
from emu.capi import commands
from emu.errors import AclError

HERE = Path(__file__).resolve().parent / "c"
CC = shutil.which(os.environ.get("CC", "cc"))
SHARED = sysconfig.get_config_var("Py_ENABLE_SHARED")


def _owners():
    """One of each kind of buffer a program may show: (kind, a factory)."""
    return [("ndarray", lambda: np.zeros(64, np.uint8)), ("bytes", lambda: bytes(range(64))),
            ("bytearray", lambda: bytearray(64)), ("view", lambda: np.zeros(256, np.uint8)[64:128]),
            ("mmap", lambda: mmap.mmap(-1, 4096))]


@pytest.mark.parametrize("kind,make", _owners(), ids=[k for k, _ in _owners()])
def test_a_buffer_the_program_holds_survives_every_prune_and_a_dropped_one_goes(kind, make):
    """Registering hundreds of buffers prunes the dropped ones; the ones still held keep resolving. (The
    reference count of a live buffer was once read one too high: a buffer held in one local variable was
    forgotten, and its next copy failed with 100000.)"""
    space = memory.AddressSpace(1, 1 << 30)
    kept = make()
    addr, _ = space.register_host(kept)
    dropped = []
    for _ in range(600):  # past the first prune at 256 pageable buffers
        tmp = np.zeros(32, np.uint8)
        dropped.append(space.register_host(tmp)[1])
        del tmp
    space._prune()
    assert space.find(addr) is not None, f"a live {kind} was forgotten"
    remembered = sum(not r.freed for r in dropped)
    assert remembered == 0, f"{remembered} dropped buffers are still remembered"
    del kept
    gc.collect()
    space._prune()
    assert space.find(addr) is None


def test_pyacl_buffers_held_by_threads_resolve_after_hundreds_of_registrations(acl):
    """The pyACL form of the bug: buffers shown with numpy_to_ptr and held in local variables, 300 at a time."""
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    dev, _ = acl.rt.malloc(64, 0)
    held = [np.full(64, i % 256, np.uint8) for i in range(300)]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ptrs = [acl.util.numpy_to_ptr(a) for a in held]
    assert [acl.rt.memcpy(dev, 64, p, 64, 1) for p in ptrs] == [0] * 300


def _raw(n: int):
    """C memory the emulator does not own (a ctypes buffer), and its address."""
    import ctypes
    buf = (ctypes.c_ubyte * n)()
    return buf, ctypes.addressof(buf)


def test_page_locked_memory_where_a_c_range_was_is_page_locked():
    """A range adopted as a C program's own memory is forgotten when page-locked memory is made over it: the
    allocator gave the bytes to the emulator, so the program has freed them."""
    space = memory.AddressSpace(1, 1 << 30)
    space.adopt_raw_host = True
    r = space.alloc_pinned(1 << 16)
    base = r.base
    space.free_pinned(r)
    space._held.clear(), space.__setattr__("_held_bytes", 0)  # (as if the allocator had it back)
    space.adopt_host(base, 4096)  # the program's own memory at that address, as after a malloc there
    assert space.find(base).origin == memory.RAW
    space._drop_raw(base, 1 << 16)
    assert space.find(base) is None
    assert space.invariant_violations() == []


def test_freed_page_locked_memory_is_refused_while_held_and_adopted_once_given_back():
    space = memory.AddressSpace(1, 1 << 30)
    space.adopt_raw_host = True
    r = space.alloc_pinned(4096)
    base = r.base
    space.free_pinned(r)
    assert space.held(base)
    with pytest.raises(AclError) as e:
        space.resolve(base, 64)
    assert e.value.code == 100000
    big = space.alloc_pinned(memory.HELD_BYTES)  # one free of HELD_BYTES gives back everything kept before it
    space.free_pinned(big)
    assert not space.held(base) and space._held_bytes <= memory.HELD_BYTES
    assert space.resolve(base, 64)[0].origin == memory.RAW


def test_nothing_is_held_where_no_program_memory_is_adopted():
    """pyACL and Python programs: no address is ever taken as the program's own, so nothing is kept back."""
    space = memory.AddressSpace(1, 1 << 30)
    space.free_pinned(space.alloc_pinned(4096))
    assert not space._held


@pytest.fixture(scope="module")
def host_reuse(tmp_path_factory):
    if not CC or not SHARED:
        pytest.skip("needs a C compiler and a shared libpython")
    out = tmp_path_factory.mktemp("reuse") / "host_reuse"
    assert commands.compile_command("cc", [str(HERE / "host_reuse.c"), "-o", str(out), "-Wall", "-Werror"]) == 0
    return out


def test_c_memory_the_allocator_hands_out_again_is_what_it_is_now(host_reuse):
    """tests/c/host_reuse.c: malloc, copy, free, aclrtMallocHost (copies work, aclrtFreeHost frees it); then
    aclrtMallocHost, aclrtFreeHost, malloc (copies into the program's own memory work). Before the fix, a
    stale range shadowed the page-locked memory (100000 on copies, 107000 on aclrtFreeHost, a leak)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACL_EMU_")}
    done = subprocess.run([str(host_reuse)], capture_output=True, text=True, timeout=300, env=env)
    reused, bad = (int(w) for w in done.stdout.split()[-3::2])
    assert done.returncode == 0 and bad == 0, done.stdout + done.stderr
    assert reused > 0, "the allocator never handed an address back: the case was not exercised"
