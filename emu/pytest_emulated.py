"""The pytest plugin under --acl-emu: its fixtures, markers and hooks (`emu.pytest_plugin` registers `Emulated` then,
and only then; without --acl-emu no test has any of them).

Each test runs in a fresh emulated process (`emu.configure`). A host thread a test started and left running
belongs to that test's process, which has ended: its calls cannot reach the next test's runtime
(`ThreadGenerations`): each fails with ACL_ERROR_UNINITIALIZE (100001), as a `LeftoverThreadError`, which the
pyACL facade also shows as a RuntimeWarning naming the test. A thread started before the first test (or by a
session or module fixture before the test's own fixtures) belongs to no test and reaches every test's runtime.
"""
from __future__ import annotations

import os
import threading
import weakref

import pytest

from . import config as products
from .errors import ACL_ERROR_UNINITIALIZE, AclError, set_recent_error

NAME = "acl_emu_emulated"  # the name `Emulated` is registered under


class LeftoverThreadError(AclError):
    """A call from a thread that a finished test started and left running: ACL_ERROR_UNINITIALIZE, the process it
    belonged to having ended. The pyACL facade also shows it as a RuntimeWarning naming the test."""

    warns = True


class ThreadGenerations:
    """The host threads each finished test left running, and the guard that keeps them out of later runtimes.

    `alive()` when a test starts, `retire(alive_then, nodeid)` when it ends: the threads started in between and
    still running belong to that test. `guard(runtime)` makes a runtime refuse them: a runtime keeps what it knows
    of each host thread in a thread-local made on the thread's first call, and the guarded one is made only for a
    thread of no finished test. The check costs nothing per call: it runs once per thread and runtime."""

    def __init__(self):
        self.started_by = weakref.WeakKeyDictionary()  # threading.Thread -> the node id of the test it outlived
        self._guarded_types: dict[type, type] = {}

    @staticmethod
    def alive() -> set:
        return set(threading.enumerate())

    def retire(self, alive_then: set, nodeid: str) -> list:
        """Mark the threads started since `alive_then` and still running as the finished test `nodeid`'s."""
        left = [t for t in threading.enumerate() if t not in alive_then and t.is_alive()]
        for thread in left:
            self.started_by.setdefault(thread, nodeid)
        return left

    def refuse(self) -> None:
        """Raise LeftoverThreadError if the calling thread belongs to a finished test."""
        thread = threading.current_thread()
        nodeid = self.started_by.get(thread)
        if nodeid is None:
            return
        err = LeftoverThreadError(ACL_ERROR_UNINITIALIZE,
                                  f"host thread {thread.name!r} was started by the test {nodeid}, which has ended: "
                                  f"each test is a fresh emulated process, so this thread's calls cannot reach a "
                                  f"later test's runtime (join the threads a test starts before it returns)")
        set_recent_error(str(err))
        raise err

    def guard(self, runtime):
        """`runtime`, made to refuse the threads of finished tests (the calling thread keeps its state)."""
        local = runtime._tls
        guarded = self._guarded_type(type(local))()
        guarded.state = local.state
        runtime._tls = guarded
        return runtime

    def _guarded_type(self, base: type) -> type:
        if base not in self._guarded_types:
            generations = self

            class Guarded(base):
                def __init__(self):
                    generations.refuse()
                    super().__init__()

            Guarded.__qualname__ = f"ThreadGenerations.guarded({base.__name__})"
            self._guarded_types[base] = Guarded
        return self._guarded_types[base]


def checked_sanitize(checks: str | None) -> str | None:
    """--acl-emu-sanitize's checks, a usage error when they are not a sanitizer's."""
    if checks is None:
        return None
    from .sanitize import parse_tools

    try:
        parse_tools(checks)
    except ValueError as e:
        raise pytest.UsageError(f"--acl-emu-sanitize: {e}") from None
    return checks


def checked_product(product: str) -> str:
    """The suite's product: `product`, else $ACL_EMU_PRODUCT, else the default; a usage error if it does not load."""
    name = product or os.environ.get("ACL_EMU_PRODUCT") or products.DEFAULT_PRODUCT
    try:
        products.load(name)
    except products.ConfigError as e:
        raise pytest.UsageError(f"--acl-emu: {e}") from None
    return name


class Emulated:
    """What --acl-emu adds to a pytest session: `import acl` is the emulator, each test a fresh emulated process on
    its product, the fixtures, the acl_products, acl_sanitize and acl_isolate markers."""

    def __init__(self, config, product: str):
        import emu

        self.sanitize = checked_sanitize(config.getoption("acl_emu_sanitize"))
        self.product = checked_product(product)
        self.isolate_all = config.getoption("acl_emu_isolate")
        if self.isolate_all and not hasattr(os, "fork"):
            raise pytest.UsageError("--acl-emu-isolate: this platform has no fork()")
        self.threads = ThreadGenerations()
        emu.install()

    def fresh(self, product: str, sanitize=None):
        """A fresh emulated process on `product`, the current one, refusing the threads of finished tests."""
        import emu

        return self.threads.guard(emu.configure(product, sanitize=sanitize))

    def pytest_generate_tests(self, metafunc) -> None:
        marker = metafunc.definition.get_closest_marker("acl_products")
        if marker is None:
            return
        if not marker.args:
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: acl_products needs at least one product")
        metafunc.parametrize("acl_product", list(marker.args), ids=list(marker.args), indirect=True)

    @pytest.fixture
    def acl_product(self, request) -> str:
        """The product this test runs on: the acl_products marker's parameter, else the suite's product."""
        return getattr(request, "param", None) or self.product

    @pytest.fixture(autouse=True)
    def _acl_emu_process(self, request, acl_product):
        """A fresh emulated process per test, on its product; products lacking a required API are skipped. The
        threads the test leaves running are refused by every later runtime."""
        alive = self.threads.alive()
        runtime = self.fresh(acl_product, self.checks(request))
        marker = request.node.get_closest_marker("acl_products")
        requires = marker.kwargs.get("requires", ()) if marker else ()
        missing = [api for api in requires if not runtime.product.supports(api)]
        if missing:
            pytest.skip(f"{acl_product} does not support {', '.join(missing)}")
        yield runtime
        self.threads.retire(alive, request.node.nodeid)
        self.fresh(acl_product)  # what the test left behind (threads, streams, handles) does not leak

    def checks(self, request):
        """The sanitizer's checks for this test: its acl_sanitize marker, the acl_sanitizer fixture, or
        --acl-emu-sanitize; None for none."""
        marker = request.node.get_closest_marker("acl_sanitize")
        if marker is not None:
            return marker.args[0] if marker.args else marker.kwargs.get("checks", "all")
        if "acl_sanitizer" in request.fixturenames:
            return "all"
        return self.sanitize

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
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

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """A test marked acl_isolate (every test under --acl-emu-isolate) runs in a child process
        (`emu.pytest_isolate`): a crash fails it, and the session goes on."""
        if not (self.isolate_all or item.get_closest_marker("acl_isolate")) or not hasattr(os, "fork"):
            return None
        from .pytest_isolate import run_in_child

        run_in_child(item, nextitem)
        return True

    @pytest.fixture
    def acl_sanitizer(self, _acl_emu_process):
        """The test's sanitizer (emu.sanitize.Sanitizer; asking for it turns the sanitizer on): `findings`,
        `report()`, `finish()`. Findings left when the test ends fail it; a test that expects some clears them
        (`acl_sanitizer.clear()`)."""
        return _acl_emu_process.sanitizer

    @pytest.fixture
    def acl(self, _acl_emu_process):
        """The pyACL module (`import acl`): the emulator's."""
        import emu.acl

        return emu.acl

    @pytest.fixture
    def acl_rt(self, _acl_emu_process):
        """The emulated process's runtime: the same APIs as pyACL, values returned and `emu.AclError` raised."""
        return _acl_emu_process

    @pytest.fixture
    def acl_clock(self, acl_rt):
        """A function returning this host thread's simulated time, in seconds."""
        return lambda: acl_rt.clock


def _sanitizer(item):
    runtime = (getattr(item, "funcargs", None) or {}).get("_acl_emu_process")
    return None if runtime is None else runtime.sanitizer
