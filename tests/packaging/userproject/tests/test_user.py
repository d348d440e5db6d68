"""A user's test that imports both their own `models` and the emulator (acl-emu installed from its wheel)."""
import emu
import models


def test_my_models_package_is_mine():
    assert models.MINE


def test_the_emulator_works_beside_it():
    rt = emu.configure("910B", functional=False)
    rt.set_device(0)
    d = rt.malloc(1 << 20)
    h = rt.malloc_host(1 << 20)
    rt.memcpy(d, 1 << 20, h, 1 << 20, 1)
    assert rt.records()["route"][-1] == "h2d"
