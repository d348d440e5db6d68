"""What aclrtFree and acldvppFree release, and what they refuse.

Both end in the driver's halMemFree (npu_driver_mem.cc NpuDriver::DevMemFree, reached from api_impl.cc
ApiImpl::DevFree and ApiImpl::DevDvppFree), which releases a device allocation at its start and refuses
anything else: the runtime's code is 107000 and nothing is freed. acldvppFree first asks for the pointer's
location (ApiImpl::DevDvppFree: not DEVICE / MANAGED -> 107000). The device address of a mapped host
registration is not a device allocation: its pages are the host's, aclrtHostUnregister releases it, and a
free leaves the registration whole.

acl.util.ptr_to_numpy over memory the program showed read-only gives a read-only array.
"""
from __future__ import annotations

import numpy as np
import pytest

import emu
import emu.acl as acl

H2D, D2H = 1, 2
REGISTERING = ["910B", "A3", "950PR"]  # products whose chip table has host registration
PRODUCTS = ["910B", "A3", "310P", "950PR", "200I_A2"]


def start(product: str) -> None:
    emu.configure(product)
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0


def no_violations() -> None:
    assert emu.current().space.invariant_violations() == []


def used() -> int:
    return emu.current().space.used[0]


# ============================================================== the device address of a registration

@pytest.mark.parametrize("product", REGISTERING)
@pytest.mark.parametrize("free", ["dvpp_free", "free"])
def test_freeing_a_registration_alias_is_107000_and_the_registration_stays(product, free):
    start(product)
    host = np.arange(4096, dtype=np.uint32).view(np.uint8)[:8192].copy()
    hptr = emu.runtime.register_host(host)
    alias, ret = acl.rt.host_register(hptr, 8192, 0)
    assert ret == 0 and alias != hptr
    before = used()
    fn = acl.media.dvpp_free if free == "dvpp_free" else acl.rt.free
    assert fn(alias) == 107000
    assert fn(alias + 64) == 107000  # inside the alias too
    assert used() == before
    no_violations()
    # the registration is intact: same device address, still pinned, still usable by copies
    assert acl.rt.host_get_device_pointer(hptr, 0) == (alias, 0)
    attrs, ret = acl.rt.pointer_get_attributes(hptr)
    assert ret == 0 and attrs["location"]["type"] == 0  # HOST: registered memory is page-locked
    dev, _ = acl.rt.malloc(8192, 0)
    assert acl.rt.memcpy(dev, 8192, alias, 8192, H2D) == 0
    back = np.zeros(8192, dtype=np.uint8)
    assert acl.rt.memcpy(emu.runtime.register_host(back), 8192, dev, 8192, D2H) == 0
    assert (back == host).all()
    assert acl.rt.host_unregister(hptr) == 0
    assert acl.rt.host_get_device_pointer(hptr, 0)[1] == 107000  # released by the unregistration only
    assert fn(alias) == 107000
    assert acl.rt.free(dev) == 0
    no_violations()


@pytest.mark.parametrize("product", REGISTERING)
def test_register_v2_mapped_alias_is_refused_by_both_frees(product):
    start(product)
    host = np.zeros(4096, dtype=np.uint8)
    hptr = emu.runtime.register_host(host)
    assert acl.rt.host_register_v2(hptr, 4096, 0x2) == 0  # MAPPED
    alias, ret = acl.rt.host_get_device_pointer(hptr, 0)
    assert ret == 0
    assert acl.media.dvpp_free(alias) == 107000
    assert acl.rt.free(alias) == 107000
    assert acl.rt.host_get_device_pointer(hptr, 0) == (alias, 0)
    no_violations()
    assert acl.rt.host_unregister(hptr) == 0
    no_violations()


# ======================================================================= host memory, interior pointers

@pytest.mark.parametrize("product", PRODUCTS)
def test_page_locked_memory_is_not_freed_by_free_or_dvpp_free(product):
    """EP: page-locked memory is host memory (location HOST); RC (200I_A2): it is device memory the
    runtime gave aclrtMallocHost, and aclrtFreeHost releases it. Either way 107000 and it stays usable."""
    start(product)
    h, ret = acl.rt.malloc_host(4096)
    if ret:  # a product without aclrtMallocHost
        pytest.skip(f"aclrtMallocHost is {ret} on {product}")
    before = used()
    assert acl.media.dvpp_free(h) == 107000
    assert acl.rt.free(h) == 107000
    assert acl.media.dvpp_free(h + 32) == 107000
    assert used() == before
    assert acl.rt.memset(h, 4096, 7, 4096) == 0
    assert (acl.util.ptr_to_numpy(h, (4096,), 2) == 7).all()
    no_violations()
    assert acl.rt.free_host(h) == 0
    assert acl.media.dvpp_free(h) == 107000
    no_violations()


@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize("alloc", ["malloc", "dvpp_malloc"])
def test_an_interior_pointer_is_107000_and_the_allocation_stays(product, alloc):
    start(product)
    if alloc == "malloc":
        d, ret = acl.rt.malloc(4096, 0)
    else:
        d, ret = acl.media.dvpp_malloc(4096)
    assert ret == 0
    before = used()
    for fn in (acl.media.dvpp_free, acl.rt.free):
        assert fn(d + 32) == 107000
        assert fn(d + 4095) == 107000
    assert used() == before
    assert acl.rt.memset(d, 4096, 1, 4096) == 0
    no_violations()
    assert acl.media.dvpp_free(d) == 0
    assert acl.media.dvpp_free(d) == 107000  # twice: no longer an allocation
    assert acl.rt.free(d) == 107000
    no_violations()


@pytest.mark.parametrize("product", PRODUCTS)
def test_pageable_and_unknown_memory_are_107000(product):
    start(product)
    buf = np.zeros(256, dtype=np.uint8)
    p = emu.runtime.register_host(buf)
    assert acl.media.dvpp_free(p) == 107000
    assert acl.rt.free(p) == 107000
    assert acl.media.dvpp_free(0xDEAD0000) == 107000
    d, _ = acl.rt.malloc(64, 0)
    assert acl.media.dvpp_free(d + (1 << 30)) == 107000  # device window, no allocation there
    assert acl.media.dvpp_free(0) == 100000
    assert acl.rt.free(0) == 100000
    no_violations()


@pytest.mark.parametrize("product", PRODUCTS)
def test_halmemfree_releases_either_kind_of_device_allocation(product):
    """The driver frees a device allocation at its start whichever API made it: aclrtFree of DVPP memory and
    acldvppFree of aclrtMalloc memory both succeed, and each byte of the budget comes back."""
    start(product)
    base = used()
    d, _ = acl.media.dvpp_malloc(4096)
    m, _ = acl.rt.malloc(4096, 0)
    assert acl.rt.free(d) == 0
    assert acl.media.dvpp_free(m) == 0
    assert used() == base
    no_violations()


# ============================================================================ read-only host memory

def test_ptr_to_numpy_over_a_read_only_array_is_read_only():
    start("910B")
    ro = np.arange(64, dtype=np.uint8)
    ro.flags.writeable = False
    p = emu.runtime.register_host(ro)
    view = acl.util.ptr_to_numpy(p, (16,), np.dtype(np.uint32).num)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 0xFFFFFFFF
    with pytest.raises(ValueError):
        acl.util.ptr_to_numpy(p + 8, (8,), 2)[:] = 0
    assert (ro == np.arange(64, dtype=np.uint8)).all()
    assert (view == np.arange(64, dtype=np.uint8).view(np.uint32)).all()  # reading still works


def test_ptr_to_numpy_over_a_one_byte_bytes_object_is_read_only():
    start("910B")
    one = bytes([0x41])
    p = acl.util.bytes_to_ptr(one)
    view = acl.util.ptr_to_numpy(p, (1,), 2)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 0
    assert one == b"A" and bytes([0x41]) == b"A"


def test_ptr_to_numpy_over_writable_memory_stays_writable():
    """Writable arrays, page-locked memory and (as in pyACL's samples) longer bytes objects."""
    start("910B")
    arr = np.zeros(16, dtype=np.uint8)
    v = acl.util.ptr_to_numpy(emu.runtime.register_host(arr), (16,), 2)
    v[3] = 9
    assert arr[3] == 9
    h, _ = acl.rt.malloc_host(64)
    w = acl.util.ptr_to_numpy(h, (64,), 2)
    w[:] = 5
    assert (acl.util.ptr_to_numpy(h, (64,), 2) == 5).all()
    data = bytes(8)
    b = acl.util.ptr_to_numpy(acl.util.bytes_to_ptr(data), (8,), 2)
    assert b.flags.writeable


# ============================================================= a device reset, read-only registrations


def test_a_device_reset_leaves_the_allocator_consistent_under_a_mapped_registration():
    """The registration and its device address outlive the reset (the runtime's process-wide tables);
    aclrtHostUnregister releases them, and no free releases the address meanwhile."""
    start("910B")
    host = np.zeros(4096, dtype=np.uint8)
    hptr = emu.runtime.register_host(host)
    alias, ret = acl.rt.host_register(hptr, 4096, 0)
    assert ret == 0
    assert acl.rt.reset_device(0) == 0
    no_violations()
    assert acl.rt.set_device(0) == 0
    assert acl.media.dvpp_free(alias) == 107000
    assert acl.rt.free(alias) == 107000
    no_violations()
    assert acl.rt.host_unregister(hptr) == 0
    no_violations()


# tests/test_fuzz_facade.py (known_bug) leaves registrations of read-only memory out until this is fixed;
# remove the rule there and the mark here then.
def test_a_copy_into_the_alias_of_read_only_memory_is_refused_with_a_code():
    start("910B")
    ro = np.zeros(4096, dtype=np.uint8)
    ro.flags.writeable = False
    hptr = emu.runtime.register_host(ro)
    alias, ret = acl.rt.host_register(hptr, 4096, 0)
    assert ret == 0
    d, _ = acl.rt.malloc(4096, 0)
    assert acl.rt.memset(d, 4096, 9, 4096) == 0
    assert acl.rt.memcpy(alias, 4096, d, 4096, 3) == 100000
    assert acl.rt.memset(alias, 4096, 7, 16) == 100000
    assert not ro.any()
