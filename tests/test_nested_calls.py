"""An API called inside another (a callback's call, run by aclrtProcessReport or a synchronize) leaves the
outer call's pending product gate and chip-feature need as they were (emu/runtime/core.py `_api_method`):
the outer call's later checks judge the outer API, not the last inner one."""
from __future__ import annotations

import pytest

import emu
from emu.errors import ACL_ERROR_RT_FEATURE_NOT_SUPPORT, AclError
from emu.runtime.core import api


@api("aclTestNeedsBatchCopy", feature="batch_copy")
def _outer_with_feature(rt):
    rt.get_device()  # an inner API call, as a callback makes inside the outer one
    rt.feature_gate()  # the outer API's own need, checked after it


def _outer_gated(name: str):
    @api(name)
    def outer(rt):
        rt.get_device()
        rt.runtime_layer()  # the product gate the decorator deferred to this step

    return outer


def test_an_inner_call_leaves_the_outer_calls_chip_feature_need():
    rt = emu.configure(product="310P")  # no batch_copy on 310P
    rt.set_device(0)
    with pytest.raises(AclError) as info:
        _outer_with_feature(rt)
    assert info.value.code == ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    assert "aclTestNeedsBatchCopy" in info.value.message


def test_an_inner_call_leaves_the_outer_calls_pending_product_gate():
    rt = emu.configure(product="310P")
    rt.set_device(0)
    name = sorted(rt.product.unsupported)[0]  # an API the 310P's runtime refuses
    with pytest.raises(AclError) as info:
        _outer_gated(name)(rt)
    assert info.value.code == ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    assert name in info.value.message

