"""Functional memory is counted against the host RAM the process can have; the allocator's state is checkable.

No MemoryError escapes an API call, and a refused touch leaves the emulator usable. The tests that run out of
memory do so under an address-space limit, or with the reading of the RAM free replaced: none allocates more
than a few hundred MiB."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import emu
import emu.arena
import emu.memory
from emu import kernels
from emu.acl._bind import bind
from emu.errors import ACL_ERROR_RT_MEMORY_ALLOCATION, AclError
from emu.memory import (HOST_RESERVE_MIN, LIVE_CHECK_BYTES, AddressSpace, HostBudget, Region, available_host_memory,
                        host_bytes, host_reserve)

GIB = 1 << 30
MIB = 1 << 20
ROOT = Path(__file__).resolve().parent.parent


def test_touching_device_memory_beyond_host_ram_is_refused_with_the_out_of_memory_code():
    """malloc(60 GiB) costs no RAM until its bytes are touched; the first touch that would not fit in the host's
    RAM is refused with 207001, with the way out in the message, instead of a MemoryError (or the OOM killer)."""
    space = AddressSpace(2, 64 * GIB, functional=True, host_budget=8 * GIB)
    big = space.alloc_device(0, 60 * GIB, 64, 4096)
    assert space.budget.backed == 0  # allocated, untouched
    with pytest.raises(AclError) as e:
        big.view(0, 4096)
    assert e.value.code == ACL_ERROR_RT_MEMORY_ALLOCATION
    assert "functional=False" in str(e.value) and "Timing-only memory holds no bytes" in str(e.value)
    assert not big.materialized and space.budget.backed == 0 and not space.invariant_violations()
    space.free_device(big)
    assert space.used == [0, 0]


def test_touched_memory_adds_up_across_devices_and_host_and_frees_give_back():
    space = AddressSpace(8, 64 * GIB, functional=True, host_budget=10 * GIB)
    regions = [space.alloc_device(d, 3 * GIB, 64, 4096) for d in range(4)]
    for r in regions[:3]:
        r.view(0, 1)
    with pytest.raises(AclError):
        regions[3].view(0, 1)  # 12 GiB > 10
    with pytest.raises(AclError):
        space.alloc_pinned(2 * GIB)
    space.free_device(regions[0])
    pinned = space.alloc_pinned(2 * GIB // 1024)  # fits again once a touched allocation is gone
    assert space.budget.backed == 6 * GIB + 2 * GIB // 1024
    space.free_pinned(pinned)
    assert space.budget.backed == 6 * GIB and not space.invariant_violations()


def test_timing_only_memory_needs_no_host_ram():
    space = AddressSpace(8, 64 * GIB, functional=False, host_budget=1 * GIB)
    for d in range(8):
        space.alloc_device(d, 63 * GIB, 64, 4096)
    space.alloc_pinned(100 * GIB)
    assert space.budget.backed == 0 and not space.invariant_violations()


def test_the_budget_follows_the_machine_or_the_environment(monkeypatch):
    assert available_host_memory() > 0
    monkeypatch.setenv("ACL_EMU_HOST_MEMORY", str(3 * GIB))
    assert available_host_memory() == 3 * GIB
    assert AddressSpace(1, GIB).budget.limit == int(0.9 * 3 * GIB)
    assert not AddressSpace(1, GIB).budget.live  # the override stands for the machine: nothing else is read
    monkeypatch.delenv("ACL_EMU_HOST_MEMORY")
    assert AddressSpace(1, GIB).budget.live and not AddressSpace(1, GIB, host_budget=GIB).budget.live


def test_invariant_violations_name_what_is_wrong():
    space = AddressSpace(2, 4 * GIB, functional=False)
    a = space.alloc_device(0, 1 << 20, 64, 4096)
    assert not space.invariant_violations()
    space.used[0] += 1  # bookkeeping that no longer matches the live allocations
    assert any("used" in v for v in space.invariant_violations())
    space.used[0] -= 1
    overlapping = Region(a.base + 4096, 8192, Region.DEVICE, device=0)
    space._insert(overlapping)  # two live regions over the same bytes
    problems = space.invariant_violations()
    assert any("overlaps" in v for v in problems)
    space._remove(overlapping)
    space.windows[0].free(a.base, a.size)  # a live allocation inside a free range of its window
    assert any("free range" in v for v in space.invariant_violations())


@pytest.mark.parametrize("nbytes", [-1, -100448, -(1 << 20)])
def test_a_negative_size_is_a_huge_size_t_that_no_allocation_satisfies(nbytes):
    """C takes size_t: -n is 2**64 - n. The allocator refuses it (out of memory) and its state is untouched."""
    space = AddressSpace(2, 64 * GIB, functional=False)
    with pytest.raises(AclError) as e:
        space.alloc_device(0, nbytes, 64, 4096)
    assert e.value.code == ACL_ERROR_RT_MEMORY_ALLOCATION
    with pytest.raises(AclError):
        space.alloc_pinned(nbytes)
    host = space.alloc_pinned(4096)
    with pytest.raises(AclError):
        space.alloc_alias(1, host, 0, nbytes)
    assert space.used == [0, 0] and not space.invariant_violations()


# -- the RAM free now, and MemoryError -----------------------------------------------------------------------
# Three malloc(9 GiB) + memset under a 3 GiB address-space limit: every touch is refused with 207001, freeing
# works, and smaller calls then succeed. With $ACL_EMU_HOST_MEMORY at 1 TiB the budget lets every touch through
# and numpy's MemoryError is what refuses it; with the machine's own reading, whichever says no first.
_UNDER_A_LIMIT = """
import json, resource, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # acl.util.numpy_to_ptr
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
import numpy as np
import emu, emu.acl as acl
GIB, MIB = 1 << 30, 1 << 20
emu.configure(product="910B", functional=True)
out = {"init": acl.init(), "device": acl.rt.set_device(0)}
big = [acl.rt.malloc(9 * GIB, 0) for _ in range(3)]
out["malloc"] = [ret for _, ret in big]
out["memset"] = [acl.rt.memset(p, 9 * GIB, 1, 9 * GIB) for p, _ in big]
host = np.full(4096, 5, dtype=np.uint8)
out["memcpy"] = acl.rt.memcpy(big[0][0], 9 * GIB, acl.util.numpy_to_ptr(host), 4096, 1)
out["malloc_host"] = acl.rt.malloc_host(9 * GIB)[1]
out["message"] = acl.get_recent_err_msg()
out["free"] = [acl.rt.free(p) for p, _ in big]
small, out["small_malloc"] = acl.rt.malloc(MIB, 0)
out["small_memset"] = acl.rt.memset(small, MIB, 7, MIB)
back = np.zeros(MIB, dtype=np.uint8)
out["small_memcpy"] = acl.rt.memcpy(acl.util.numpy_to_ptr(back), MIB, small, MIB, 2)
out["sevens"] = bool((back == 7).all())
pinned, out["small_malloc_host"] = acl.rt.malloc_host(MIB)
out["frees"] = [acl.rt.free(small), acl.rt.free_host(pinned)]
print(json.dumps(out))
"""


@pytest.mark.parametrize("override", [None, str(1 << 40)])
def test_under_an_address_space_limit_a_touch_beyond_it_returns_207001_and_later_calls_work(override):
    """Functional memory fails with the runtime's out-of-memory code before the host runs out, never with a
    MemoryError out of acl.rt.memset; nothing is left half-allocated: the frees work, smaller calls succeed."""
    env = {k: v for k, v in os.environ.items() if k != "ACL_EMU_HOST_MEMORY"}
    if override:
        env["ACL_EMU_HOST_MEMORY"] = override
    done = subprocess.run([sys.executable, "-c", _UNDER_A_LIMIT], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0 and "MemoryError" not in done.stderr, done.stderr
    out = json.loads(done.stdout)
    assert out["malloc"] == [0, 0, 0]  # device memory costs no RAM until touched
    assert out["memset"] == [ACL_ERROR_RT_MEMORY_ALLOCATION] * 3
    assert out["memcpy"] == ACL_ERROR_RT_MEMORY_ALLOCATION and out["malloc_host"] == ACL_ERROR_RT_MEMORY_ALLOCATION
    assert "page-locked host memory" in out["message"] and str(9 * GIB) in out["message"]
    assert out["free"] == [0, 0, 0] and out["frees"] == [0, 0]
    assert out["small_malloc"] == out["small_memset"] == out["small_memcpy"] == out["small_malloc_host"] == 0
    assert out["sevens"]


@pytest.fixture
def machine(monkeypatch):
    """The budget follows the machine (no $ACL_EMU_HOST_MEMORY); `machine(free)` then sets the RAM free that
    every later reading gives, as if other processes had taken the rest."""
    monkeypatch.delenv("ACL_EMU_HOST_MEMORY", raising=False)

    def others_leave(free: int) -> None:
        monkeypatch.setattr(emu.memory, "available_host_memory", lambda: free)

    return others_leave


def test_memory_others_take_after_malloc_refuses_the_first_touch_with_207001(machine):
    """The budget is read at configure; other processes take memory afterwards. The first touch reads the RAM
    free again and refuses, naming what was asked and what is free, with the reserve left to the machine;
    once the memory is back, the same allocation is touched and works."""
    import emu.acl as acl
    rt = emu.configure(product="910B", functional=True)
    assert rt.space.budget.live
    acl.rt.set_device(0)
    p, ret = acl.rt.malloc(250 * MIB, 0)
    assert ret == 0
    n = rt.space.find(p).size  # (rounded up to huge pages, and padded)
    machine(n + host_reserve() - 1)  # just too little: the reserve is kept
    assert acl.rt.memset(p, n, 3, 4096) == ACL_ERROR_RT_MEMORY_ALLOCATION
    message = acl.get_recent_err_msg()
    assert f"needs {n} bytes" in message and f"has {n + host_reserve() - 1} bytes free now" in message
    assert rt.space.budget.backed == 0 and not rt.space.find(p).materialized
    machine(64 * GIB)
    assert acl.rt.memset(p, n, 3, 4096) == 0
    back = np.zeros(4096, dtype=np.uint8)
    assert acl.rt.memcpy(rt.register_host(back), 4096, p, 4096, 2) == 0 and (back == 3).all()
    assert rt.space.budget.backed == n and acl.rt.free(p) == 0 and rt.space.budget.backed == 0


def test_a_page_locked_malloc_reads_the_ram_free_now(machine):
    rt = emu.configure(product="910B", functional=True)
    rt.set_device(0)
    machine(128 * MIB)
    with pytest.raises(AclError) as e:
        rt.malloc_host(128 * MIB)
    assert e.value.code == ACL_ERROR_RT_MEMORY_ALLOCATION and "free now" in str(e.value)
    assert rt.space.budget.backed == 0 and not rt.space.invariant_violations()
    machine(64 * GIB)
    rt.free_host(rt.malloc_host(128 * MIB))
    assert rt.space.budget.backed == 0


def test_memory_taken_but_not_yet_touched_counts_against_the_ram_free_now(machine, monkeypatch):
    """Lazily allocated bytes (calloc's pages) come into RAM only when written: what the emulator took but the
    process does not hold yet (its resident size) counts as needed at the next take, so that filling both
    later cannot run the machine out."""
    budget = HostBudget(100 * GIB, live=True)
    monkeypatch.setattr(emu.memory, "_resident_bytes", lambda: 0)  # nothing written yet
    machine(2 * GIB + host_reserve())
    budget.take(GIB, "first")
    with pytest.raises(AclError, match="it took before and has not filled yet"):
        budget.take(GIB + 1, "second")
    monkeypatch.setattr(emu.memory, "_resident_bytes", lambda: GIB)  # the first one filled: in the free count
    machine(GIB + host_reserve())
    budget.take(GIB, "second")
    assert budget.backed == 2 * GIB


def test_small_takes_are_not_read_again_the_reserve_covers_them(machine, monkeypatch):
    def unread():
        raise AssertionError("the RAM free was read for a small take")

    budget = HostBudget(100 * GIB, live=True)
    monkeypatch.setattr(emu.memory, "available_host_memory", unread)
    for _ in range(3):
        budget.take(LIVE_CHECK_BYTES // 4, "small")
    assert LIVE_CHECK_BYTES < HOST_RESERVE_MIN <= host_reserve()
    machine(0)
    with pytest.raises(AclError):  # the fourth adds up to a reading, which refuses them
        budget.take(LIVE_CHECK_BYTES // 4, "small")


def test_host_bytes_turns_numpys_memory_error_into_207001(monkeypatch):
    def no_ram(*args, **kwargs):
        raise MemoryError("Unable to allocate")

    assert host_bytes(16, "x").nbytes == 16
    monkeypatch.setattr(emu.memory.np, "zeros", no_ram)
    monkeypatch.setattr(emu.arena.Arena, "view", no_ram)  # (device memory's bytes: emu.arena)
    with pytest.raises(AclError) as e:
        host_bytes(1 << 40, "device 0 memory")
    assert e.value.code == ACL_ERROR_RT_MEMORY_ALLOCATION and "ulimit -v" in str(e.value)
    space = AddressSpace(1, 64 * GIB, host_budget=GIB)
    r = space.alloc_device(0, 4096, 64, 4096)
    with pytest.raises(AclError):
        r.view(0, 1)
    assert space.budget.backed == 0 and not r.materialized  # nothing half-allocated


def test_no_memory_error_escapes_an_api_call_pythonic_or_pyacl(monkeypatch):
    """The last guard: a MemoryError anywhere in a call (here a fill's kernel) is the runtime's 207001 through
    the Pythonic API (an AclError) and pyACL (the code); the facade guards what it runs itself too."""
    import emu.acl as acl
    rt = emu.configure(product="910B", functional=True)
    rt.set_device(0)
    p = rt.malloc(4096)

    def no_ram(*args):
        raise MemoryError

    monkeypatch.setattr(kernels, "fill", no_ram)
    with pytest.raises(AclError) as e:
        rt.memset(p, 4096, 1, 4096)
    assert e.value.code == ACL_ERROR_RT_MEMORY_ALLOCATION and "aclrtMemset ran out of host memory" in str(e.value)
    assert acl.rt.memset(p, 4096, 1, 4096) == ACL_ERROR_RT_MEMORY_ALLOCATION
    assert "MemoryError" in acl.get_recent_err_msg()
    monkeypatch.undo()
    assert acl.rt.memset(p, 4096, 1, 4096) == 0 and acl.rt.free(p) == 0
    assert bind("acl.rt.probe", no_ram, "i", (0,))(1) == (0, ACL_ERROR_RT_MEMORY_ALLOCATION)
    assert bind("acl.rt.probe", no_ram, "i")(1) == ACL_ERROR_RT_MEMORY_ALLOCATION
