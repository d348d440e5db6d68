"""The pyACL facade (emu/acl; Huawei's pyACL conventions, e.g.
https://www.hiascend.com/document/detail/en/canncommercial/850/API/appdevgapi/aclpythondevg_01_1026.html): return
convention, argument parsing,
error messages, what is not emulated, `import acl` through emu.install(), acl.media."""
from __future__ import annotations

import importlib
import sys
import threading

import numpy as np
import pytest

import emu

ACL_SUCCESS = 0
H2D, D2H = 1, 2
HUGE_FIRST = 0
HBM = 1


@pytest.fixture
def dev0(acl):
    assert acl.rt.set_device(0) == ACL_SUCCESS
    return acl


# ------------------------------------------------------------------------ returns

def test_no_output_call_returns_an_int(acl):
    ret = acl.rt.set_device(0)
    assert type(ret) is int and ret == 0
    ret = acl.rt.synchronize_device()
    assert type(ret) is int and ret == 0
    ret = acl.rt.set_device(99)
    assert type(ret) is int and ret == 107001


def test_output_calls_return_outputs_then_ret_last(dev0):
    acl = dev0
    out = acl.rt.malloc(1024, HUGE_FIRST)
    assert isinstance(out, tuple) and len(out) == 2
    ptr, ret = out
    assert ret == 0 and type(ptr) is int and ptr != 0

    out = acl.rt.get_mem_info(HBM)
    assert isinstance(out, tuple) and len(out) == 3
    free, total, ret = out
    assert ret == 0 and 0 < free < total

    out = acl.rt.create_stream()
    assert isinstance(out, tuple) and len(out) == 2
    stream, ret = out
    assert ret == 0 and type(stream) is int and stream != 0

    device, ret = acl.rt.get_device()
    assert (device, ret) == (0, 0)


def test_failure_returns_zero_outputs_and_the_code_never_raises(acl):
    assert acl.rt.create_stream() == (0, 107002)  # no device set
    assert acl.rt.get_device() == (0, 107002)
    assert acl.rt.get_mem_info(HBM) == (0, 0, 107002)
    assert acl.rt.set_device(0) == 0
    assert acl.rt.malloc(0, HUGE_FIRST) == (0, 100000)
    assert acl.rt.create_event_with_flag(0x40) == (0, 107000)
    assert acl.rt.memcpy(0, 8, 0, 8, H2D) == 100000
    assert acl.rt.free(0) == 100000


def test_init_and_finalize_return_codes(acl):
    assert acl.init() == 0
    assert acl.init() == 100002
    assert acl.finalize() == 0
    assert acl.finalize() == 100037


# ------------------------------------------------------------------ argument parsing

@pytest.mark.parametrize("name,args", [
    ("set_device", ()),
    ("set_device", (0, 1)),
    ("malloc", (1024,)),
    ("malloc", (1024, 0, 0)),
    ("get_mem_info", ()),
    ("memcpy", (1, 2, 3, 4)),
    ("create_stream", (0,)),
    ("synchronize_stream", ()),
])
def test_wrong_argument_count_raises_type_error_args_parse_failed(acl, name, args):
    with pytest.raises(TypeError) as ei:
        getattr(acl.rt, name)(*args)
    assert str(ei.value) == f"acl.rt.{name} args parse failed"


@pytest.mark.parametrize("bad", ["0", 0.0, 1.5, None, [0], b"0"])
@pytest.mark.parametrize("name,args", [
    ("set_device", ("X",)),
    ("malloc", (1024, "X")),
    ("malloc", ("X", 0)),
    ("synchronize_stream", ("X",)),
    ("memcpy", (1, 8, 2, 8, "X")),
])
def test_wrong_argument_type_raises_type_error_args_parse_failed(acl, name, args, bad):
    args = tuple(bad if a == "X" else a for a in args)
    with pytest.raises(TypeError) as ei:
        getattr(acl.rt, name)(*args)
    assert str(ei.value) == f"acl.rt.{name} args parse failed"


def test_init_with_non_string_path_raises_type_error(acl):
    with pytest.raises(TypeError) as ei:
        acl.init(5)
    assert str(ei.value) == "acl.init args parse failed"


@pytest.mark.parametrize("value", [np.int32(0), np.int64(0), np.uint8(0), False])
def test_numpy_integers_and_bools_are_accepted_as_ints(acl, value):
    assert acl.rt.set_device(value) == 0
    ptr, ret = acl.rt.malloc(np.uint64(4096), value)
    assert ret == 0 and ptr != 0
    free, total, ret = acl.rt.get_mem_info(np.int16(HBM))
    assert ret == 0 and free < total
    assert acl.rt.free(ptr) == 0


def test_bool_true_is_device_1(acl):
    assert acl.rt.set_device(True) == 0
    assert acl.rt.get_device() == (1, 0)


# ------------------------------------------------------------------ recent error message

def test_get_recent_err_msg_returns_the_last_failure_message(dev0):
    acl = dev0
    assert acl.rt.set_device(42) == 107001
    msg = acl.get_recent_err_msg()
    assert isinstance(msg, str) and "42" in msg
    assert acl.rt.malloc(0, HUGE_FIRST) == (0, 100000)
    msg2 = acl.get_recent_err_msg()
    assert msg2 != msg and "aclrtMalloc" in msg2


def test_get_recent_err_msg_is_per_thread(dev0):
    acl = dev0
    assert acl.rt.set_device(42) == 107001
    mine = acl.get_recent_err_msg()
    seen = {}

    def other():
        seen["before"] = acl.get_recent_err_msg()
        assert acl.rt.create_stream() == (0, 107002)  # no device on this thread
        seen["after"] = acl.get_recent_err_msg()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen["before"] is None
    assert "aclrtCreateStream" in seen["after"]
    assert acl.get_recent_err_msg() == mine


# ------------------------------------------------------------------ not emulated

@pytest.mark.parametrize("path", ["rt.set_op_wait_timeout", "mdl.set_input_aipp", "op.create_attr",
                                  "rt.get_group_count", "util.some_unknown_function"])
def test_pyacl_function_not_emulated_raises_attribute_error_saying_so(acl, path):
    mod_name, fn = path.split(".")
    mod = getattr(acl, mod_name)
    with pytest.raises(AttributeError) as ei:
        getattr(mod, fn)
    msg = str(ei.value)
    assert f"acl.{mod_name}.{fn}" in msg
    assert "not emulated" in msg
    assert not hasattr(mod, fn)


def test_top_level_function_not_emulated_raises_attribute_error(acl):
    with pytest.raises(AttributeError, match="not emulated"):
        acl.create_tensor_desc  # noqa: B018


# ------------------------------------------------------------------ emu.install()

@pytest.fixture
def clean_acl_modules():
    names = ["acl", "acl.rt", "acl.util", "acl.media", "acl.mdl", "acl.op"]
    saved = {n: sys.modules.get(n) for n in names}
    for n in names:
        sys.modules.pop(n, None)
    yield
    for n, m in saved.items():
        if m is None:
            sys.modules.pop(n, None)
        else:
            sys.modules[n] = m


def test_install_makes_import_acl_the_facade(clean_acl_modules):
    import emu.acl as facade

    emu.install()
    acl = importlib.import_module("acl")
    assert acl is facade
    import acl.rt  # noqa: F811 - pyACL scripts import submodules this way
    assert acl.rt is facade.rt
    from acl import util as u

    assert u is facade.util
    rt_mod = importlib.import_module("acl.rt")
    assert rt_mod is facade.rt
    assert sys.modules["acl.media"] is facade.media
    emu.configure(product="910B")
    assert acl.rt.set_device(0) == 0
    ptr, ret = acl.rt.malloc(64, 0)
    assert ret == 0 and ptr


# ------------------------------------------------------------------ acl.media

def test_dvpp_malloc_and_free_are_device_memory(dev0):
    acl = dev0
    ptr, ret = acl.media.dvpp_malloc(4096)
    assert ret == 0 and ptr != 0
    attrs, ret = acl.rt.pointer_get_attributes(ptr)
    assert ret == 0
    assert attrs["location"] == {"id": 0, "type": 1}  # ACL_MEM_LOCATION_TYPE_DEVICE
    data = bytes(range(256)) * 16
    src = acl.util.bytes_to_ptr(data)
    assert acl.rt.memcpy(ptr, 4096, src, 4096, H2D) == 0
    out = bytes(4096)
    assert acl.rt.memcpy(acl.util.bytes_to_ptr(out), 4096, ptr, 4096, D2H) == 0
    assert out == data
    assert acl.media.dvpp_free(ptr) == 0
    assert acl.media.dvpp_free(ptr) == 107000


def test_dvpp_malloc_failures_return_codes(acl):
    assert acl.media.dvpp_malloc(4096) == (0, 107002)
    assert acl.rt.set_device(0) == 0
    assert acl.media.dvpp_malloc(0) == (0, 100000)
    assert acl.media.dvpp_free(0) == 100000
    with pytest.raises(TypeError) as ei:
        acl.media.dvpp_malloc("4096")
    assert str(ei.value) == "acl.media.dvpp_malloc args parse failed"
