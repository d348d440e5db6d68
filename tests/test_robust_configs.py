"""Configs that parse but would break the studies (issue 30, item 5): every numeric field has a lower and an
upper bound the loader checks, naming the field and the bound; a near-miss of `inherit` is named as such."""
import pytest

from emu import cli, config
from emu.config import ConfigError


def _config(tmp_path, body: str, name: str = "bad.toml"):
    path = tmp_path / name
    path.write_text('inherit = "910B"\n[product]\nname = "bad"\n' + body)
    return path


def _one(section: str, key: str, value: str) -> str:
    return f'[{section}]\n{key} = {value}\n[{section}.source]\n{key} = "A: a test"\n'


BAD = [
    # section, key, value, the bound the error says
    ("hardware.host_link", "latency_us", "1e300", "1e+06 us (1 s)"),
    ("hardware.staging", "copy_gbps", "1e-300", "0.001 GB/s"),
    ("hardware.staging", "copy_gbps", "1e9", "100000 GB/s"),
    ("devices", "max_streams", "1", "minimum 2"),
    ("devices", "max_streams", "100000000", "65536"),
    ("devices", "malloc_padding", str(2**64 - 1), "1048576 bytes (1 MiB)"),
    ("devices", "max_events", str(1 << 40), "1048576"),
    ("devices", "memory_bytes", "1024", "1048576 bytes (1 MiB)"),
    ("devices", "memory_bytes", str(1 << 50), "4 TiB"),
    ("hardware", "memory_gbps", "1e-9", "0.001 GB/s"),
    ("hardware", "host_memcpy_gbps", "1e12", "100000 GB/s"),
    ("hardware", "peak_tflops", "1e-6", "0.001 TFLOPS"),
    ("hardware", "call_overhead_us", "2e6", "1 s"),
    ("hardware", "sync_wait_us", "1e300", "1 s"),
    ("hardware", "launch_us", "1e7", "1 s"),
    ("hardware", "row_overhead_ns", "1e12", "1 ms"),
    ("hardware.host_link", "efficiency", "1e-300", "0.01"),
    ("hardware.host_link", "read_efficiency", "1e-5", "0.01"),
    ("hardware.peer_link", "gbps", "1e-300", "0.001 GB/s"),
    ("hardware.peer_link", "latency_us", "1e300", "1 s"),
    ("hardware.host", "pin_gbps", "1e-300", "0.001 GB/s"),
    ("hardware.host", "register_us", "1e300", "1 s"),
    ("hardware.staging", "setup_us", "1e300", "1 s"),
    ("hardware.staging", "chunk_bytes", "1", "4 KiB"),
    ("hardware.staging", "chunk_bytes", str(1 << 40), "1 GiB"),
]


@pytest.mark.parametrize("section,key,value,bound", BAD, ids=[f"{s}.{k}={v}" for s, k, v, _ in BAD])
def test_an_implausible_number_is_refused_naming_the_field_and_the_bound(tmp_path, section, key, value, bound):
    with pytest.raises(ConfigError) as e:
        config.load(_config(tmp_path, _one(section, key, value)))
    assert e.value.field == f"{section}.{key}"
    assert f"'{section}.{key}'" in str(e.value) and bound in str(e.value), str(e.value)
    assert "not a plausible value" in str(e.value)


def test_zero_and_negative_keep_their_own_messages(tmp_path):
    with pytest.raises(ConfigError, match=r"copy_gbps.*> 0"):
        config.load(_config(tmp_path, _one("hardware.staging", "copy_gbps", "0.0")))
    with pytest.raises(ConfigError, match=r"latency_us.*>= 0"):
        config.load(_config(tmp_path, _one("hardware.host_link", "latency_us", "-1.0")))


def test_values_at_the_bounds_load(tmp_path):
    body = _one("devices", "max_streams", "2") + _one("hardware.host_link", "latency_us", "1e6")
    product = config.load(_config(tmp_path, body))
    assert product.max_streams == 2 and product.hardware.host_link.latency == pytest.approx(1.0)


@pytest.mark.parametrize("name", config.available())
def test_every_shipped_config_still_loads(name):
    assert config.load(name).name


@pytest.mark.parametrize("key", ["inherits", "Inherits", "inherit_from", "inhert"])
def test_a_near_miss_of_inherit_is_named_before_any_missing_table(tmp_path, key):
    path = tmp_path / "mine.toml"
    path.write_text(f'{key} = "910B"\n[devices]\nmax_streams = 16\n[devices.source]\nmax_streams = "A: a test"\n')
    with pytest.raises(ConfigError) as e:
        config.load(path)
    assert e.value.field == key
    assert "did you mean 'inherit'?" in str(e.value) and "missing table" not in str(e.value)


def _exit_code(argv) -> int:
    """emu.cli.main's exit code, whether it returns it or argparse's error() exits with it."""
    try:
        return cli.main(argv)
    except SystemExit as e:
        return e.code


def test_the_cli_reports_a_bad_config_in_one_line(tmp_path, capsys):
    path = _config(tmp_path, _one("hardware.staging", "copy_gbps", "1e-300"))
    assert _exit_code(["bandwidth", "--product", str(path), "--sizes", "4K"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("acl-emu bandwidth: error:"), err
    assert "hardware.staging.copy_gbps" in lines[0] and "0.001 GB/s" in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("body,field", [
    (_one("devices", "max_streams", "1"), "max_streams"),
    (_one("devices", "malloc_padding", str(2**64 - 1)), "malloc_padding"),
    (_one("hardware.host_link", "latency_us", "1e300"), "latency_us"),
])
def test_the_cli_refuses_each_issue_config_with_exit_2(tmp_path, capsys, body, field):
    path = _config(tmp_path, body)
    assert _exit_code(["bandwidth", "--product", str(path), "--sizes", "4K"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and field in err and "Traceback" not in err
