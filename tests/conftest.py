"""Shared fixtures: each test gets a fresh emulated process on a chosen product."""
from __future__ import annotations

import importlib
import sys

import pytest

import emu
from emu import runtime as rt_module

collect_ignore = ["packaging"]  # a user's project, run by .ci/run against the built wheel


@pytest.fixture
def rt():
    """A fresh runtime on the default product (910B) with device 0 set on this thread."""
    r = emu.configure(product="910B", functional=True)
    r.set_device(0)
    return r


@pytest.fixture
def fresh():
    """A factory: fresh(product) -> a new runtime on that product, no device set."""

    def make(product: str = "910B"):
        return emu.configure(product=product, functional=True)

    return make


@pytest.fixture
def acl():
    """The pyACL facade on a fresh 910B runtime (nothing initialised, no device set)."""
    emu.configure(product="910B", functional=True)
    import emu.acl as facade
    return facade


@pytest.fixture(autouse=True)
def _reset_after():
    yield
    emu.configure(product="910B", functional=True)


__all__ = ["rt_module"]


def pytest_addoption(parser):
    group = parser.getgroup("acl-emu fuzz")
    group.addoption("--fuzz-examples", type=int, default=None,
                    help="calls the facade fuzz (tests/test_fuzz_facade.py) makes in all; default 15000 "
                         "(or $ACL_EMU_FUZZ_EXAMPLES)")
    group.addoption("--fuzz-seed", type=int, default=None,
                    help="seed of the facade fuzz (or $ACL_EMU_FUZZ_SEED)")


@pytest.fixture
def installed_acl():
    """`import acl` as a pyACL script does, answered by emu.acl on a fresh 910B runtime (`emu.install`); the
    modules it replaced are put back after the test."""
    names = ["acl", "acl.rt", "acl.util", "acl.media", "acl.mdl", "acl.op"]
    saved = {n: sys.modules.get(n) for n in names}
    emu.configure(product="910B")
    emu.install()
    yield importlib.import_module("acl")
    for n, m in saved.items():
        if m is None:
            sys.modules.pop(n, None)
        else:
            sys.modules[n] = m
