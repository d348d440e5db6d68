"""Issue 30, item 9: what the pyACL facade does with values no C type holds, and its error messages.

pyACL's C bindings (Huawei's pyACL sources, e.g. the file defining `WrapAclRtMemcpy`, `WrapAclRtMalloc` and
`WrapAclRtMallocWithCfg`, Copyright (c) 2026 Huawei Technologies, found through the code search by its text
`PyArg_ParseTuple(args, "kkkki", &dst, &dstMax, &src, &count, &memcpyKind), "acl.rt.memcpy args parse
failed"`) parse every call with `CHECK_NULL(PyArg_ParseTuple(args, <format>), "acl.rt.<name> args parse
failed")`, and their utils header defines `CHECK_NULL(cond, str)` as `CHECK_NULL_3(cond, str,
PyExc_TypeError)`: `PyErr_SetString(PyExc_TypeError, str); return nullptr;`. So the OverflowError that CPython's
parser raises for an int its C type cannot hold ("i": int, "l": long, ...) reaches the caller as
TypeError("acl.rt.<name> args parse failed"). The facade raises that TypeError for any int outside
[-2**63, 2**64), which no 64-bit C integer holds (its declarations carry one letter "i" for every C integer,
so it cannot tell the bindings' "k" (unsigned long, read by CPython without overflow checking) from "i").
"""
from __future__ import annotations

import numpy as np
import pytest

ACL_SUCCESS = 0
ACL_ERROR_INVALID_PARAM = 100000
H2D = 1
ACL_RT_MEM_ATTR_MODULE_ID = 1  # aclrtMallocAttrType


@pytest.fixture
def dev(acl):
    assert acl.rt.set_device(0) == ACL_SUCCESS
    d, ret = acl.rt.malloc(64, 0)
    h, ret2 = acl.rt.malloc_host(64)
    assert ret == ret2 == ACL_SUCCESS
    return acl, d, h


def parse_failed(name):
    return pytest.raises(TypeError, match=rf"^acl\.rt\.{name} args parse failed$")


# ------------------------------------------------------------------ 1. ints no C integer holds

@pytest.mark.parametrize("position, value", [(1, 2 ** 64), (3, 2 ** 64), (1, 2 ** 70), (0, 2 ** 64),
                                             (2, -(2 ** 63) - 1), (4, 2 ** 64 + H2D), (3, -(10 ** 30))])
def test_memcpy_with_an_int_no_c_integer_holds_is_a_parse_failure(dev, position, value):
    acl, d, h = dev
    args = [d, 64, h, 1, H2D]
    args[position] = value
    with parse_failed("memcpy"):
        acl.rt.memcpy(*args)


@pytest.mark.parametrize("value", [np.uint64(2 ** 64 - 1), 2 ** 64 - 1])
def test_memcpy_with_the_largest_size_t_is_still_parsed(dev, value):
    acl, d, h = dev
    assert acl.rt.memcpy(d, value, h, 1, H2D) == ACL_SUCCESS  # a destMax of SIZE_MAX holds 1 byte


def test_the_smallest_64_bit_int_is_still_parsed_and_refused_by_the_runtime(dev):
    acl, d, h = dev
    ret = acl.rt.memcpy(d, 64, h, -(2 ** 63), H2D)  # size_t 2**63: more than destMax
    assert type(ret) is int and ret != ACL_SUCCESS


def test_other_facade_entries_refuse_huge_ints_the_same_way(dev):
    acl, d, h = dev
    with parse_failed("malloc"):
        acl.rt.malloc(2 ** 64, 0)
    with parse_failed("memset"):
        acl.rt.memset(d, 64, 0, 2 ** 64)
    with parse_failed("malloc_with_cfg"):  # a mixed format ("iio"): the int is read the same way
        acl.rt.malloc_with_cfg(2 ** 64, 0, None)
    s, ret = acl.rt.create_stream()
    assert ret == ACL_SUCCESS
    with parse_failed("memcpy_async"):
        acl.rt.memcpy_async(d, 64, h, 2 ** 64 + 1, H2D, s)
    assert acl.rt.memcpy_async(d, 64, h, 1, H2D, s) == ACL_SUCCESS


# ------------------------------------------------------------------ 2. acl.util messages

def test_ptr_to_bytes_of_device_memory_names_acl_util(dev):
    acl, d, h = dev
    with pytest.raises(ValueError, match=r"^acl\.util\.ptr_to_bytes: .*device memory"):
        acl.util.ptr_to_bytes(d, 16)


def test_ptr_to_numpy_of_device_memory_names_acl_util(dev):
    acl, d, h = dev
    with pytest.raises(ValueError, match=r"^acl\.util\.ptr_to_numpy: .*device memory"):
        acl.util.ptr_to_numpy(d, (16,), 2)


def test_every_acl_util_value_error_carries_the_prefix(dev):
    acl, d, h = dev
    for call in (lambda: acl.util.ptr_to_bytes(d, 16), lambda: acl.util.ptr_to_bytes(h, -1),
                 lambda: acl.util.ptr_to_bytes(0xDEAD0000, 16), lambda: acl.util.ptr_to_numpy(d, (4,), 2),
                 lambda: acl.util.ptr_to_numpy(h, (4,), 9999), lambda: acl.util.bytes_to_ptr("x")):
        with pytest.raises(ValueError) as ei:
            call()
        assert str(ei.value).startswith("acl.util."), ei.value


# ------------------------------------------------------------------ 3. malloc configs with inf / nan

BAD_NUMBERS = [float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=repr)
@pytest.mark.parametrize("key", ["attr", "value"])
def test_malloc_with_cfg_with_an_inf_or_nan_attribute_is_invalid_param(dev, key, bad):
    acl, d, h = dev
    entry = {"attr": ACL_RT_MEM_ATTR_MODULE_ID, "value": 0, key: bad}
    assert acl.rt.malloc_with_cfg(64, 0, [entry]) == (0, ACL_ERROR_INVALID_PARAM)


@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=repr)
@pytest.mark.parametrize("key", ["attr", "value"])
def test_malloc_host_with_cfg_with_an_inf_or_nan_attribute_is_invalid_param(dev, key, bad):
    acl, d, h = dev
    entry = {"attr": ACL_RT_MEM_ATTR_MODULE_ID, "value": 0, key: bad}
    assert acl.rt.malloc_host_with_cfg(64, [entry]) == (0, ACL_ERROR_INVALID_PARAM)


def test_malloc_with_cfg_with_a_good_config_still_allocates(dev):
    acl, d, h = dev
    p, ret = acl.rt.malloc_with_cfg(64, 0, [{"attr": ACL_RT_MEM_ATTR_MODULE_ID, "value": 3}])
    assert ret == ACL_SUCCESS and p != 0
    assert acl.rt.free(p) == ACL_SUCCESS
