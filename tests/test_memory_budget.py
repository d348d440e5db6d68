"""Functional memory is counted against the host RAM the process can have; the allocator's state is checkable."""
from __future__ import annotations

import pytest

from emu.errors import ACL_ERROR_RT_MEMORY_ALLOCATION, AclError
from emu.memory import AddressSpace, Region, available_host_memory

GIB = 1 << 30


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
