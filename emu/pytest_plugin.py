"""Run a test suite that uses pyACL under the emulator, unchanged: `pytest --acl-emu[=PRODUCT]`.

With the option (or ACL_EMU_PYTEST=1 / ACL_EMU_PYTEST=PRODUCT in the environment), `import acl` in the
code under test and in the tests resolves to the emulator, and every test runs in a fresh emulated
process. Without it the plugin does nothing, so the same suite runs on an NPU.

Fixtures: `acl` (the pyACL module), `acl_rt` (the Pythonic runtime, `emu.runtime` API), `acl_clock` (a
function returning this host thread's simulated time in seconds), `acl_product` (the product name).
Marker: `@pytest.mark.acl_products("910B", "A3", requires=("aclrtMemcpyBatch",))` runs the test once per
product and skips the products that lack any API in `requires`.
"""
from __future__ import annotations

import os

import pytest

ENV = "ACL_EMU_PYTEST"
MARKER = "acl_products(*products, requires=()): run the test on each product (under --acl-emu); skip " \
         "products that lack an API in requires"


def pytest_addoption(parser) -> None:
    group = parser.getgroup("acl-emu", "the CANN ACL runtime, emulated")
    group.addoption("--acl-emu", nargs="?", const="", default=None, metavar="PRODUCT", dest="acl_emu",
                    help=f"run `import acl` against the emulator, on PRODUCT (default: $ACL_EMU_PRODUCT or "
                         f"910B); also ${ENV}=1 or ${ENV}=PRODUCT")


def _wanted(config) -> str | None:
    """The product the suite runs on under the emulator ('' for the default), or None when it is off."""
    option = config.getoption("acl_emu")
    if option is not None:
        return option
    env = os.environ.get(ENV, "")
    if env.lower() in ("", "0", "false", "no", "off"):
        return None
    return "" if env.lower() in ("1", "true", "yes", "on") else env


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", MARKER)
    product = _wanted(config)
    if product is None:
        return
    import emu
    from emu import config as products

    name = product or os.environ.get("ACL_EMU_PRODUCT") or products.DEFAULT_PRODUCT
    try:
        products.load(name)
    except products.ConfigError as e:
        raise pytest.UsageError(f"--acl-emu: {e}") from None
    emu.install()
    config.stash[_PRODUCT] = name


_PRODUCT = pytest.StashKey[str]()


def _enabled(config) -> bool:
    return _PRODUCT in config.stash


def pytest_generate_tests(metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("acl_products")
    if marker is None or not _enabled(metafunc.config):
        return
    if not marker.args:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: acl_products needs at least one product")
    metafunc.parametrize("acl_product", list(marker.args), ids=list(marker.args), indirect=True)


@pytest.fixture
def acl_product(request) -> str | None:
    """The product this test runs on: the marker's parameter, else the suite's --acl-emu product (None
    without --acl-emu)."""
    if not _enabled(request.config):
        return None
    return getattr(request, "param", None) or request.config.stash[_PRODUCT]


@pytest.fixture(autouse=True)
def _acl_emu_process(request, acl_product):
    """Under --acl-emu: a fresh emulated process per test, on its product; products lacking a required API
    are skipped."""
    if acl_product is None:
        yield None
        return
    import emu

    product = acl_product
    runtime = emu.configure(product)
    marker = request.node.get_closest_marker("acl_products")
    missing = [api for api in (marker.kwargs.get("requires", ()) if marker else ()) if not runtime.product.supports(api)]
    if missing:
        pytest.skip(f"{product} does not support {', '.join(missing)}")
    yield runtime
    emu.configure(product)  # what the test left behind (threads, streams, handles) does not leak


@pytest.fixture
def acl(_acl_emu_process):
    """The pyACL module (`import acl`), the emulator's under --acl-emu."""
    if _acl_emu_process is None:
        return pytest.importorskip("acl")
    import emu.acl

    return emu.acl


@pytest.fixture
def acl_rt(_acl_emu_process):
    """The emulated process's runtime: the same APIs as pyACL, values returned and `emu.AclError` raised."""
    if _acl_emu_process is None:
        pytest.skip("the Pythonic runtime exists under the emulator only (pytest --acl-emu)")
    return _acl_emu_process


@pytest.fixture
def acl_clock(acl_rt):
    """A function returning this host thread's simulated time, in seconds."""
    return lambda: acl_rt.clock
