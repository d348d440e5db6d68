"""Process isolation in the pytest plugin: `@pytest.mark.acl_isolate` or `--acl-emu-isolate` runs a test in a child
process, so a test that crashes fails with the signal, its output and its traceback, and the session goes on."""
from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

CRASHING = '''
import ctypes
import os
import signal

import acl
import pytest


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    log = tmp_path_factory.getbasetemp() / "module-fixture.log"
    log.write_text("set up\\n")
    yield log
    with log.open("a") as f:
        f.write("torn down\\n")


@pytest.mark.acl_isolate
def test_segfault(shared):
    print("printed before the crash")
    assert acl.rt.set_device(0) == 0
    ctypes.string_at(0)


@pytest.mark.acl_isolate
def test_sigsegv_by_kill(shared):
    os.kill(os.getpid(), signal.SIGSEGV)


@pytest.mark.acl_isolate
def test_assertion_in_the_child(shared, acl_rt):
    acl_rt.set_device(0)
    print("the child's own output")
    assert acl_rt.get_mem_info(0)[0] == 12345, "the child's assertion message"


@pytest.mark.acl_isolate
def test_passes_in_the_child(shared, acl_product):
    assert acl_product == "910B" and os.getpid() != PARENT


@pytest.mark.acl_isolate
def test_skips_in_the_child():
    pytest.skip("skipped in the child")


def test_the_session_goes_on(shared):
    assert os.getpid() == PARENT
    assert acl.rt.set_device(0) == 0


PARENT = os.getpid()
'''

AFTER = '''
def test_in_another_module(tmp_path_factory):
    log = tmp_path_factory.getbasetemp() / "module-fixture.log"
    assert log.read_text() == "set up\\ntorn down\\n"  # the parent's module fixture, torn down once
'''


def test_a_crashing_test_fails_with_its_signal_and_output_and_the_session_goes_on(pytester):
    pytester.makepyfile(test_crash=CRASHING, test_zafter=AFTER)
    result = pytester.runpytest("--acl-emu", "-p", "no:cacheprovider", "-p", "no:randomly", "-rs")
    result.assert_outcomes(passed=3, failed=3, skipped=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*acl-emu: the test crashed: its child process (acl_isolate) was killed by signal 11 (SIGSEGV) during call*"])
    assert "printed before the crash" in out
    assert "Fatal Python error: Segmentation fault" in out and "test_crash.py" in out  # the fault traceback
    assert "the child's assertion message" in out and "the child's own output" in out
    assert "skipped in the child" in out


def test_the_option_isolates_every_test(pytester):
    """Every test in a child of its own (what a child first sets up, a module fixture here, stays in it)."""
    pytester.makepyfile(test_crash=CRASHING.replace("@pytest.mark.acl_isolate\n", "").replace(
        "os.getpid() == PARENT", "os.getpid() != PARENT"), test_zafter="def test_in_another_module():\n    pass\n")
    result = pytester.runpytest("--acl-emu-isolate", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=3, skipped=1)


def test_a_crash_in_setup_is_reported_as_the_setup_phase(pytester):
    pytester.makepyfile(test_setup='''
import os
import signal

import pytest


@pytest.fixture
def crashes():
    os.kill(os.getpid(), signal.SIGABRT)


@pytest.mark.acl_isolate
def test_never_runs(crashes):
    pass


def test_next():
    pass
''')
    result = pytester.runpytest("--acl-emu", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*killed by signal 6 (SIGABRT) during setup*"])


def test_a_child_that_exits_on_its_own_is_reported_with_its_code(pytester):
    pytester.makepyfile(test_exit='''
import os

import pytest


@pytest.mark.acl_isolate
def test_exits():
    os._exit(3)
''')
    result = pytester.runpytest("--acl-emu", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*child process (acl_isolate) exited with code 3 during call*"])


def test_without_acl_emu_the_marker_changes_nothing(pytester):
    pytester.makepyfile(test_plain='''
import os

import pytest

PARENT = os.getpid()


@pytest.mark.acl_isolate
def test_in_process():
    assert os.getpid() == PARENT
''')
    pytester.runpytest("-p", "no:cacheprovider", "--strict-markers").assert_outcomes(passed=1)
