"""A product config that is wrong is refused, naming the file and the field, once; nothing is silently ignored."""
from __future__ import annotations

import pytest

from emu import config
from emu.config import ConfigError


def _mine(tmp_path, body: str, name: str = "mine.toml"):
    path = tmp_path / name
    path.write_text('inherit = "910B"\n[product]\nname = "mine"\n' + body)
    return path


def _refused(path, field: str, why: str) -> str:
    with pytest.raises(ConfigError) as e:
        config.load(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: field '{field}'"), msg
    assert why in msg, msg
    assert msg.count(str(path)) == 1, msg  # the file named once
    return msg


@pytest.mark.parametrize("field, value, why", [
    ("gen", "4", "unknown field; did you mean 'gen'?"),  # the misspelling is in the key: see below
])
def test_a_misspelled_field_is_refused_with_the_nearest_name(tmp_path, field, value, why):
    path = _mine(tmp_path, '[hardware.host_link]\ngenn = 4\n[hardware.host_link.source]\ngenn = "A: x"\n')
    _refused(path, "hardware.host_link.genn", why)


def test_an_unknown_table_or_top_level_key_is_refused(tmp_path):
    _refused(_mine(tmp_path, "[hardwear]\nx = 1\n"), "hardwear", "unknown field; did you mean 'hardware'?")
    _refused(_mine(tmp_path, '[devices.source]\ncuont = "A: x"\n'), "devices.source.cuont", "unknown field")


@pytest.mark.parametrize("table, key, value, why", [
    ("hardware", "memory_gbps", "nan", "finite"),
    ("hardware", "memory_gbps", "inf", "finite"),
    ("hardware", "memory_gbps", "-1.0", "> 0"),
    ("hardware", "sdma_latency_us", "-0.5", ">= 0"),
    ("hardware.host_link", "latency_us", "-2.0", ">= 0"),
    ("hardware.staging", "copy_gbps", "0.0", "> 0"),
    ("devices", "malloc_padding", "-32", ">= 0"),
    ("hardware", "engines_per_device", "100000", "not a plausible value"),
    ("hardware", "kernel_slots", "0", "> 0"),
])
def test_rates_latencies_and_paddings_are_finite_and_not_negative(tmp_path, table, key, value, why):
    path = _mine(tmp_path, f'[{table}]\n{key} = {value}\n[{table}.source]\n{key} = "A: x"\n')
    _refused(path, f"{table}.{key}", why)


def test_a_wrong_type_is_refused(tmp_path):
    path = _mine(tmp_path, '[hardware.host_link]\ngen = "four"\n[hardware.host_link.source]\ngen = "A: x"\n')
    _refused(path, "hardware.host_link.gen", "expected int, got str")


def test_an_overridden_number_without_its_own_source_loses_the_parents(tmp_path):
    """The parent's citation was for the parent's value: a child that changes the number must cite it."""
    path = _mine(tmp_path, "[hardware.host_link]\ngen = 5\n")
    _refused(path, "hardware.host_link.source.gen", "every number needs its source")
    cited = _mine(tmp_path, '[hardware.host_link]\ngen = 5\n[hardware.host_link.source]\ngen = "A: a Gen5 slot"\n',
                  "cited.toml")
    assert config.load(cited).sources["hardware.host_link.gen"] == "A: a Gen5 slot"
    # fields the child leaves alone keep the parent's citation
    assert config.load(cited).sources["hardware.host_link.lanes"] == config.load("910B").sources[
        "hardware.host_link.lanes"]


def test_a_non_utf8_file_a_directory_and_a_missing_file_are_refused(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'inherit = "910B"\n[product]\nname = "\xff"\n')
    _refused(bad, "<file>", "not UTF-8")
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    _refused(folder, "<file>", "is a directory")
    _refused(tmp_path / "none.toml", "<file>", "no such config file")


def test_an_inheritance_cycle_spelled_through_dotdot_is_refused(tmp_path):
    (tmp_path / "a").mkdir()
    a = tmp_path / "a" / "x.toml"
    a.write_text('inherit = "../a/y.toml"\n')
    (tmp_path / "a" / "y.toml").write_text('inherit = "../a/x.toml"\n')
    with pytest.raises(ConfigError, match="inheritance cycle"):
        config.load(a)


def test_switching_the_host_link_kind_ignores_the_parents_pcie_fields(tmp_path):
    """A UB what-if of 910B inherits gen / lanes / mps / mrrs, which only a PCIe link reads: not an error."""
    path = _mine(tmp_path, '[devices]\nhost_link = "ub"\n[hardware.host_link]\nkind = "ub"\ngbps = 64.0\n'
                           '[hardware.host_link.source]\ngbps = "A: what-if"\n')
    hw = config.load(path).hardware
    assert hw.host_link.pcie is None and hw.host_link.capacity == 64e9


def test_every_bundled_config_loads_with_every_key_known():
    for name in config.available():
        config.load(name)


def test_a_config_loads_once_while_its_files_are_unchanged(tmp_path):
    """`load` reads, checks and builds a config once: the same Product again while the file and what it
    inherits from are unchanged; a changed file (or a changed parent) loads anew; a bad file fails every time."""
    assert config.load("910B") is config.load("910B")
    base = tmp_path / "base.toml"
    base.write_text('inherit = "910B"\n[product]\nname = "base"\n')
    path = tmp_path / "mine.toml"
    path.write_text('inherit = "base.toml"\n[product]\nname = "mine"\n')
    first = config.load(path)
    assert config.load(str(path)) is first and first.name == "mine"
    path.write_text('inherit = "base.toml"\n[product]\nname = "mine2"\n')  # (another size: another stamp)
    second = config.load(path)
    assert second is not first and second.name == "mine2"
    base.write_text('inherit = "910B"\n[product]\nname = "base"\ntitle = "changed"\n')
    third = config.load(path)
    assert third is not second and third.title == "changed"
    path.write_text('inherit = "base.toml"\n[product]\nnmae = "typo"\n')
    for _ in range(2):
        with pytest.raises(ConfigError, match="nmae"):
            config.load(path)


def test_a_hardware_plans_each_route_once_and_machines_build_their_links_from_it():
    """`Hardware.plan` works a route out once per Hardware; two runtimes of one product share it, and each
    machine has links of its own (what one carries does not show on the other's)."""
    import emu

    a = emu.configure(product="A3", functional=False)
    b = emu.configure(product="A3", functional=False)
    hw = a.product.hardware
    assert b.product.hardware is hw
    plan = hw.plan(False, 0, 2)
    assert hw.plan(False, 0, 2) is plan
    assert plan[0] == "ub" and [name for name, _, _ in plan[1]] == ["ub0.out", "ub2.in"]
    assert hw.plan(True, 3, 3)[0] == "fill" and hw.plan(False, None, None) == ("h2h", (), 0.0, None)
    pa = a.machine._path_of(("copy", 0, 2))
    pb = b.machine._path_of(("copy", 0, 2))
    assert pa[3] == pb[3] == ("ub0.out", "ub2.in") and pa[1][0] is not pb[1][0]
