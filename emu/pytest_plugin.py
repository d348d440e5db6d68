"""Run a test suite that uses pyACL under the emulator, unchanged: `pytest --acl-emu`.

With the option (or --acl-emu=PRODUCT, --acl-emu-product PRODUCT, ACL_EMU_PYTEST=1 / ACL_EMU_PYTEST=PRODUCT in
the environment; `acl-emu run -m pytest` gives --acl-emu itself), `import acl` in the code under test and in
the tests resolves to the emulator, and every test runs in a fresh emulated process. A bare `--acl-emu` never
takes the next argument: `pytest --acl-emu tests/` runs tests/ on the default product ($ACL_EMU_PRODUCT, else
910B).

Without it the plugin adds its options and markers and nothing else: no fixture, no hook on any test, and this
module imports only os and pytest (`emu.pytest_emulated`, which holds the rest, is imported only under --acl-emu).
So the same suite runs on an NPU.

Under --acl-emu (`emu.pytest_emulated`):
Fixtures: `acl` (the pyACL module), `acl_rt` (the Pythonic runtime, `emu.runtime` API), `acl_clock` (a
function returning this host thread's simulated time in seconds), `acl_product` (the product name),
`acl_sanitizer` (the test's sanitizer).
Marker: `@pytest.mark.acl_products("910B", "A3", requires=("aclrtMemcpyBatch",))` runs the test once per
product and skips the products that lack any API in `requires`.
Threads: a thread a test started and left running cannot reach the next test's runtime; its calls fail with
ACL_ERROR_UNINITIALIZE (100001), a RuntimeWarning naming the test that started it.
Crashes: `@pytest.mark.acl_isolate`, or `--acl-emu-isolate` for every test, runs the test in a child process
(fork): a test that crashes it (a segfault, an abort) fails with the signal and its output, and the session
goes on.

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
ISOLATE_MARKER = "acl_isolate: run the test in a child process (under --acl-emu): a crash fails it and the " \
                 "session goes on"
# The options whose value is optional: given bare, each means this value and never takes the next argument.
BARE = {"--acl-emu": "", "--acl-emu-sanitize": "all"}


def pytest_addoption(parser) -> None:
    group = parser.getgroup("acl-emu", "the CANN ACL runtime, emulated")
    group.addoption("--acl-emu", nargs="?", const="", default=None, metavar="PRODUCT", dest="acl_emu",
                    help=f"run `import acl` against the emulator; --acl-emu=PRODUCT picks the product (default: "
                         f"$ACL_EMU_PRODUCT or 910B), a bare --acl-emu never takes the next argument; also "
                         f"${ENV}=1 or ${ENV}=PRODUCT")
    group.addoption("--acl-emu-product", default=None, metavar="PRODUCT", dest="acl_emu_product",
                    help="the product the tests run on (a name from configs/ or a TOML path; implies --acl-emu)")
    group.addoption("--acl-emu-sanitize", nargs="?", const="all", default=None, metavar="CHECKS",
                    dest="acl_emu_sanitize",
                    help="run every test under the acl-emu sanitizer (implies --acl-emu): --acl-emu-sanitize=CHECKS "
                         "a comma-separated list of race, host, init (default: all); a test whose code has a "
                         "hazard fails with the report")
    group.addoption("--acl-emu-isolate", action="store_true", default=False, dest="acl_emu_isolate",
                    help="run every test in a child process (implies --acl-emu): a test that crashes fails with "
                         "the signal and the session goes on (one test: @pytest.mark.acl_isolate)")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args) -> None:
    """A bare --acl-emu (or --acl-emu-sanitize) means its default value: the argument after it stays a test
    path (`pytest --acl-emu tests/`). argparse would take it for the option's value, so the bare option is
    written out with its value (`--acl-emu=`) before pytest parses the line for good."""
    if not bare_options(args):
        return
    args[:] = bare_options_written_out(args)
    fresh = parser.parse_known_args(args)
    namespace = early_config.known_args_namespace
    for dest in ("acl_emu", "acl_emu_sanitize", "file_or_dir"):
        setattr(namespace, dest, getattr(fresh, dest))


def bare_options(args) -> list[int]:
    """The positions of the bare --acl-emu and --acl-emu-sanitize in a command line (none after `--`)."""
    found = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg in BARE:
            found.append(i)
    return found


def bare_options_written_out(args) -> list[str]:
    """The command line with each bare --acl-emu / --acl-emu-sanitize as --acl-emu= / --acl-emu-sanitize=all.
    A value right after a bare option that is no path (`--acl-emu 910B`, `--acl-emu-sanitize race`: the old
    form) is a usage error saying how to write it."""
    out = list(args)
    for i in bare_options(args):
        following = args[i + 1] if i + 1 < len(args) else None
        if following is not None and _is_value_not_path(args[i], following):
            other = f" or --acl-emu-product {following}" if args[i] == "--acl-emu" else ""
            raise pytest.UsageError(f"{args[i]} takes no separate value: write {args[i]}={following}{other} (a "
                                    f"bare {args[i]} leaves {following!r} a test path)")
        out[i] = f"{args[i]}={BARE[args[i]]}"
    return out


def _is_value_not_path(option: str, text: str) -> bool:
    """`text` is a value of `option` (a bundled product's name; a list of sanitizer checks) and no file or folder
    here."""
    if text.startswith("-") or os.path.exists(text):
        return False
    if option == "--acl-emu-sanitize":
        from .sanitize import TOOLS

        return all(check in (*TOOLS, "all") for check in text.split(","))
    from .config import CONFIG_DIR  # (only with a bare --acl-emu on the line: the emulator is on anyway)

    return (CONFIG_DIR / f"{text}.toml").is_file()


def wanted(config) -> str | None:
    """The product the suite runs on under the emulator ('' for the default), or None when it is off."""
    product = config.getoption("acl_emu_product")
    if product is not None:
        return product
    option = config.getoption("acl_emu")
    if option is not None:
        return option
    if config.getoption("acl_emu_sanitize") is not None or config.getoption("acl_emu_isolate"):
        return ""
    env = os.environ.get(ENV, "")
    if env.lower() not in ("", "0", "false", "no", "off"):
        return "" if env.lower() in ("1", "true", "yes", "on") else env
    return None


def pytest_configure(config) -> None:
    for line in (MARKER, SANITIZE_MARKER, ISOLATE_MARKER):
        config.addinivalue_line("markers", line)
    product = wanted(config)
    if product is None:
        return
    from . import pytest_emulated

    config.pluginmanager.register(pytest_emulated.Emulated(config, product), pytest_emulated.NAME)
