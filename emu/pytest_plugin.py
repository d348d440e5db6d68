"""Run a test suite that uses pyACL under the emulator, unchanged: `pytest --acl-emu[=PRODUCT]`.

With the option (or ACL_EMU_PYTEST=1 / ACL_EMU_PYTEST=PRODUCT in the environment), `import acl` in the
code under test and in the tests resolves to the emulator, and every test runs in a fresh emulated
process. Without it the plugin does nothing, so the same suite runs on an NPU.

Fixtures: `acl` (the pyACL module), `acl_rt` (the Pythonic runtime, `emu.runtime` API), `acl_clock` (a
function returning this host thread's simulated time in seconds), `acl_product` (the product name).
Marker: `@pytest.mark.acl_products("910B", "A3", requires=("aclrtMemcpyBatch",))` runs the test once per
product and skips the products that lack any API in `requires`.

Sanitizer (emu.sanitize): `@pytest.mark.acl_sanitize` (or `acl_sanitize("race,host")`), the `acl_sanitizer`
fixture, or `--acl-emu-sanitize[=CHECKS]` for every test (it implies --acl-emu) checks what the test's code
queues: a test whose code has a hazard (a race between streams, a read before a copy completed, a buffer
freed while in use, device memory read before anything wrote it...) fails with the sanitizer's report.
"""
from __future__ import annotations

import os

import pytest

ENV = "ACL_EMU_PYTEST"
MARKER = "acl_products(*products, requires=()): run the test on each product (under --acl-emu); skip " \
         "products that lack an API in requires"
SANITIZE_MARKER = "acl_sanitize(checks='all'): run the test under the acl-emu sanitizer (race, host, init); a " \
                  "hazard in its code fails it with the report"


def pytest_addoption(parser) -> None:
    group = parser.getgroup("acl-emu", "the CANN ACL runtime, emulated")
    group.addoption("--acl-emu", nargs="?", const="", default=None, metavar="PRODUCT", dest="acl_emu",
                    help=f"run `import acl` against the emulator, on PRODUCT (default: $ACL_EMU_PRODUCT or "
                         f"910B); also ${ENV}=1 or ${ENV}=PRODUCT")
    group.addoption("--acl-emu-sanitize", nargs="?", const="all", default=None, metavar="CHECKS",
                    dest="acl_emu_sanitize",
                    help="run every test under the acl-emu sanitizer (implies --acl-emu): CHECKS a comma-separated "
                         "list of race, host, init (default: all); a test whose code has a hazard fails with "
                         "the report")


def _wanted(config) -> str | None:
    """The product the suite runs on under the emulator ('' for the default), or None when it is off."""
    option = config.getoption("acl_emu")
    if option is not None:
        return option
    if config.getoption("acl_emu_sanitize") is not None:
        return ""
    env = os.environ.get(ENV, "")
    if env.lower() in ("", "0", "false", "no", "off"):
        return None
    return "" if env.lower() in ("1", "true", "yes", "on") else env


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", MARKER)
    config.addinivalue_line("markers", SANITIZE_MARKER)
    product = _wanted(config)
    if product is None:
        return
    checks = config.getoption("acl_emu_sanitize")
    if checks is not None:
        from emu.sanitize import parse_tools

        try:
            parse_tools(checks)
        except ValueError as e:
            raise pytest.UsageError(f"--acl-emu-sanitize: {e}") from None
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
    runtime = emu.configure(product, sanitize=_checks(request))
    marker = request.node.get_closest_marker("acl_products")
    missing = [api for api in (marker.kwargs.get("requires", ()) if marker else ()) if not runtime.product.supports(api)]
    if missing:
        pytest.skip(f"{product} does not support {', '.join(missing)}")
    yield runtime
    emu.configure(product)  # what the test left behind (threads, streams, handles) does not leak


def _checks(request):
    """The sanitizer's checks for this test: its acl_sanitize marker, the acl_sanitizer fixture, or
    --acl-emu-sanitize; None for none."""
    marker = request.node.get_closest_marker("acl_sanitize")
    if marker is not None:
        return marker.args[0] if marker.args else marker.kwargs.get("checks", "all")
    if "acl_sanitizer" in request.fixturenames:
        return "all"
    return request.config.getoption("acl_emu_sanitize")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A sanitized test whose code left hazards fails with the report (a test failing of its own gets the
    report as a section of its output)."""
    try:
        result = yield
    except BaseException:
        san = _sanitizer(item)
        if san is not None and san.finish():
            item.add_report_section("call", "acl-emu sanitizer", san.report())
        raise
    san = _sanitizer(item)
    if san is not None and san.finish():
        pytest.fail(f"the acl-emu sanitizer found hazards in this test's code:\n{san.report()}", pytrace=False)
    return result


def _sanitizer(item):
    runtime = getattr(item, "funcargs", {}).get("_acl_emu_process")
    return None if runtime is None else runtime.sanitizer


@pytest.fixture
def acl_sanitizer(_acl_emu_process):
    """The test's sanitizer (emu.sanitize.Sanitizer; asking for it turns the sanitizer on): `findings`,
    `report()`, `finish()`. Findings left when the test ends fail it; a test that expects some clears them
    (`acl_sanitizer.clear()`)."""
    if _acl_emu_process is None:
        pytest.skip("the sanitizer exists under the emulator only (pytest --acl-emu)")
    return _acl_emu_process.sanitizer


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
