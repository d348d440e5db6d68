"""Product configs (configs/*.toml), the loader's checks, product selection, run
modes and the support matrix (docs/conformance/products.md and the product-support section of each API in
hicann/runtime docs/zh/api_ref/)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import emu
from emu import config
from emu import runtime as rt_module
from emu.config import ConfigError
from emu.errors import AclError
from helpers import code

PRODUCTS = ["200I_A2", "310P", "910", "910B", "910B-Gen5", "950DT", "950PR", "A3", "IPV350"]
FAMILY = {"950PR": "950", "950DT": "950", "A3": "A3", "910B": "A2", "910B-Gen5": "A2", "200I_A2": "200I",
          "310P": "310P", "910": "910", "IPV350": "IPV350"}
EP = ["310P", "910", "910B", "910B-Gen5", "950DT", "950PR", "A3"]
RC = ["200I_A2", "IPV350"]


# ---------------------------------------------------------------- configs and the loader

def test_every_config_in_configs_loads():
    assert config.available() == sorted(PRODUCTS)
    for name in config.available():
        p = config.load(name)
        assert p.name == name
        assert p.family == FAMILY[name]
        assert p.device_count > 0 and p.memory_bytes > 0


@pytest.mark.parametrize("name", PRODUCTS)
def test_every_number_of_every_config_has_a_source(name):
    p = config.load(name)
    for field in ("devices.count", "devices.memory_bytes", "devices.malloc_padding", "devices.max_streams",
                  "devices.max_events", "devices.memcpy_desc_size", "hardware.call_overhead_us",
                  "hardware.engines_per_device", "hardware.memory_gbps", "hardware.host_link.latency_us",
                  "hardware.staging.chunk_bytes"):
        assert isinstance(p.sources.get(field), str) and p.sources[field].strip(), field


def _base_text() -> str:
    return (Path(config.CONFIG_DIR) / "910B.toml").read_text()


def test_config_missing_a_source_names_the_field(tmp_path):
    text = _base_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("max_events = \"C:"))
    broken = tmp_path / "nosource.toml"
    broken.write_text(text.replace(line + "\n", ""))
    with pytest.raises(ConfigError) as ei:
        config.load(broken)
    assert ei.value.field == "devices.source.max_events"
    assert "devices.source.max_events" in str(ei.value)
    assert str(broken) in str(ei.value)


def test_config_missing_a_link_source_names_the_field(tmp_path):
    text = _base_text()
    broken = tmp_path / "nolinksource.toml"
    line = next(ln for ln in text.splitlines() if ln.startswith('gbps = "fit: one direction of an HCCS link'))
    broken.write_text(text.replace(line + "\n", ""))
    with pytest.raises(ConfigError) as ei:
        config.load(broken)
    assert ei.value.field == "hardware.peer_link.source.gbps"


def test_config_with_wrong_type_names_file_and_field(tmp_path):
    text = _base_text()
    assert "\ncount = 8\n" in text
    broken = tmp_path / "badtype.toml"
    broken.write_text(text.replace("\ncount = 8\n", '\ncount = "8"\n'))
    with pytest.raises(ConfigError) as ei:
        config.load(broken)
    msg = str(ei.value)
    assert "badtype.toml" in msg and "devices.count" in msg
    assert ei.value.field == "devices.count"


def test_config_with_bool_for_int_names_the_field(tmp_path):
    broken = tmp_path / "bool.toml"
    broken.write_text('inherit = "910B"\n[devices]\nmax_streams = true\n')
    with pytest.raises(ConfigError) as ei:
        config.load(broken)
    assert ei.value.field == "devices.max_streams"
    assert "bool.toml" in str(ei.value)


def test_unknown_product_lists_the_known_ones():
    with pytest.raises(ConfigError) as ei:
        config.load("910X")
    msg = str(ei.value)
    assert "910X" in msg
    for name in PRODUCTS:
        assert name in msg
    with pytest.raises(ConfigError):
        emu.configure(product="910X")


def test_inherit_910B_with_an_override(tmp_path):
    cfg = tmp_path / "mine.toml"
    cfg.write_text('inherit = "910B"\n\n[product]\nname = "mine"\n\n'
                   "[devices]\ncount = 2\n\n"
                   '[devices.source]\ncount = "A: a two-device test box"\n\n'
                   "[hardware.host_link]\ngen = 5\n"
                   '[hardware.host_link.source]\ngen = "A: a PCIe 5.0 slot"\n')
    p = config.load(cfg)
    base = config.load("910B")
    assert p.name == "mine" and p.device_count == 2
    assert p.sources["devices.count"] == "A: a two-device test box"
    assert p.sources["hardware.host_link.gen"] == "A: a PCIe 5.0 slot"
    assert p.hardware.host_link.pcie.gen == 5
    assert p.hardware.host_link.capacity == pytest.approx(base.hardware.host_link.capacity * 2)
    assert p.hardware.host_link.latency == base.hardware.host_link.latency
    assert p.max_streams == base.max_streams and p.features == base.features
    r = emu.configure(product=cfg)
    assert r.get_device_count() == 2
    assert code(r.set_device, 2) == 107001


# ------------------------------------------------------------------ unsupported APIs

def _rc_host_buffers(n):
    a = np.frombuffer(bytearray(bytes(range(256)) * (n // 256)), dtype=np.uint8)
    b = np.zeros(n, dtype=np.uint8)
    return a, b


def test_ipv350_unsupported_apis_are_207000_naming_the_product(fresh):
    import emu.acl as acl

    r = fresh("IPV350")
    r.set_device(0)
    dev = r.malloc(1024)
    calls = {
        "aclrtMemcpyAsync": lambda: r.memcpy_async(dev, 1024, dev + 512, 512, 3, 0),
        "aclrtCreateStream": r.create_stream,
        "aclrtCreateEvent": r.create_event,
        "aclrtMallocHost": lambda: r.malloc_host(64),
        "aclrtSynchronizeDevice": r.synchronize_device,
        "aclrtMemsetAsync": lambda: r.memset_async(dev, 1024, 0, 1024, 0),
    }
    for name, call in calls.items():
        with pytest.raises(AclError) as ei:
            call()
        assert ei.value.code == 207000, name
        assert "IPV350" in str(ei.value) and name in str(ei.value)
    # the facade returns the code and records the message
    assert acl.rt.create_stream() == (0, 207000)
    assert "IPV350" in acl.get_recent_err_msg()


def test_ipv350_memcpy_set_device_and_malloc_work(fresh):
    r = fresh("IPV350")
    assert code(r.set_device, 0) == 0
    dev = r.malloc(4096)
    src, out = _rc_host_buffers(4096)
    r.memcpy(dev, 4096, r.register_host(src), 4096, 1)
    r.memcpy(r.register_host(out), 4096, dev, 4096, 2)
    assert np.array_equal(src, out)
    r.memset(dev, 4096, 7, 4096)
    r.memcpy(r.register_host(out), 4096, dev, 4096, 2)
    assert (out == 7).all()
    # aclrtMemcpyAsyncWithCondition is supported on IPV350
    # (hicann/runtime docs/zh/api_ref/11-03_memory_copy_and_set.md), on the default stream
    dev2 = r.malloc(4096)
    r.memcpy_async_with_condition(dev2, 4096, dev, 4096, 3, 0)
    assert r.synchronize_stream(0) is None  # Destroy/SynchronizeStream: all 7 products
    out[:] = 0
    r.memcpy(r.register_host(out), 4096, dev2, 4096, 2)
    assert (out == 7).all()
    assert code(r.get_mem_info, 0) == 0
    r.free(dev)
    assert code(r.reset_device, 0) == 0


def test_200I_A2_streams_events_and_async_copies_are_supported(fresh):
    r = fresh("200I_A2")
    r.set_device(0)
    n = 1 << 20
    s = r.create_stream()
    e0, e1 = r.create_event(), r.create_event()
    host, dev = r.malloc_host(n), r.malloc(n)
    r.host_array(host, n)[:] = 0x5A
    r.record_event(e0, s)
    r.memcpy_async(dev, n, host, n, 1, s)
    r.memset_async(host, n, 0, n, s)
    r.memcpy_async(host, n, dev, n, 2, s)
    r.record_event(e1, s)
    r.synchronize_stream(s)
    assert (r.host_array(host, n) == 0x5A).all()
    assert r.event_elapsed_time(e0, e1) > 0
    r.synchronize_device()
    r.destroy_stream(s)


# The API reference's product support (hicann/runtime docs/zh/api_ref/), one row per C API: the product families
# where the API is "N". These are the
# rows of the APIs this part of the emulator covers: init, devices, streams, events,
# allocation, pointer attributes, plain copies and memsets.
ALL_N = ()
IPV = ("IPV350",)
SUPPORT_N = {
    "aclInit": ALL_N, "aclFinalize": ALL_N, "aclrtSetDevice": ALL_N, "aclrtResetDevice": ALL_N,
    "aclrtResetDeviceForce": ALL_N, "aclrtGetDevice": ALL_N, "aclrtGetDeviceCount": ALL_N,
    "aclrtSynchronizeDevice": IPV,
    "aclrtCreateStream": IPV,
    "aclrtDestroyStream": ALL_N, "aclrtSynchronizeStream": ALL_N,
    # every event API (hicann/runtime docs/zh/api_ref/07_event_management.md)
    "aclrtCreateEvent": IPV, "aclrtCreateEventWithFlag": IPV, "aclrtRecordEvent": IPV,
    "aclrtStreamWaitEvent": IPV, "aclrtSynchronizeEvent": IPV, "aclrtQueryEventStatus": IPV,
    "aclrtEventElapsedTime": IPV, "aclrtDestroyEvent": IPV,
    "aclrtMalloc": ALL_N, "aclrtFree": ALL_N, "aclrtGetMemInfo": ALL_N,
    "aclrtMallocHost": IPV, "aclrtFreeHost": IPV,
    "aclrtPointerGetAttributes": IPV,
    "aclrtMemcpy": ALL_N, "aclrtMemset": ALL_N,
    "aclrtMemcpyAsync": IPV, "aclrtMemsetAsync": IPV,
    "aclrtMemcpyAsyncWithCondition": ALL_N,
}

@pytest.mark.parametrize("name", PRODUCTS)
def test_unsupported_list_matches_spec_13_n_cells(name):
    p = config.load(name)
    expected = {api for api, families in SUPPORT_N.items() if p.family in families}
    actual = {api for api in p.unsupported if api in SUPPORT_N}
    assert actual == expected
    for api in SUPPORT_N:
        assert p.supports(api) == (api not in expected)


@pytest.mark.parametrize("name", PRODUCTS)
def test_unsupported_api_fails_207000_at_call_time(name):
    """Every product: a call to an N-cell API of the emulated set is 207000, a Y-cell one is not."""
    r = emu.configure(product=name)
    r.set_device(0)
    p = r.product
    # aclrtMemsetD32 and aclrtCreateStream stand for the rows of their families
    for api, call in (("aclrtCreateStream", r.create_stream), ("aclrtCreateEvent", r.create_event),
                      ("aclrtSynchronizeDevice", r.synchronize_device),
                      ("aclrtMallocHost", lambda: r.malloc_host(64))):
        if not p.supports(api):
            assert code(call) == 207000, api
        else:
            assert code(call) == 0, api


# ---------------------------------------------------------------------- selection

def test_configure_product_selects_it():
    r = emu.configure(product="A3")
    assert r.product.name == "A3"
    assert rt_module.current() is r
    assert r.get_device_count() == 16


def test_acl_emu_product_env_var_selects_the_product(monkeypatch):
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("ACL_EMU_PRODUCT", "310P")
    r = emu.configure()
    assert r.product.name == "310P"
    assert r.get_device_count() == 2
    # an explicit product wins over the variable; each configure() starts afresh
    assert emu.configure(product="A3").product.name == "A3"
    assert emu.configure().product.name == "310P"
    assert emu.configure(functional=False).functional is False
    assert emu.configure().functional is True


def test_default_product_is_910B(monkeypatch):
    monkeypatch.delenv("ACL_EMU_PRODUCT", raising=False)
    r = emu.configure()
    assert r.product.name == "910B" == config.DEFAULT_PRODUCT


@pytest.mark.parametrize("name", EP)
def test_get_run_mode_is_acl_host_1_on_ep_products(name):
    r = emu.configure(product=name)
    assert r.get_run_mode() == 1


@pytest.mark.parametrize("name", RC)
def test_get_run_mode_is_acl_device_0_on_rc_products(name):
    r = emu.configure(product=name)
    assert r.get_run_mode() == 0
    import emu.acl as acl

    assert acl.rt.get_run_mode() == (0, 0)
