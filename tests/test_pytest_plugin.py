"""The pytest plugin: `pytest --acl-emu[=PRODUCT]` runs a user's pyACL tests under the emulator, unchanged."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import emu.pytest_plugin

pytest_plugins = ["pytester"]

USER_CODE = '''
import acl


def copy_roundtrip(n):
    """The user's own code: a host -> device -> host round trip through pyACL."""
    import numpy as np
    acl.rt.set_device(0)
    src = np.arange(n, dtype=np.uint8)
    dev, ret = acl.rt.malloc(n, 0)
    assert ret == 0
    out = np.zeros(n, dtype=np.uint8)
    assert acl.rt.memcpy(dev, n, acl.util.numpy_to_ptr(src), n, 1) == 0
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), n, dev, n, 2) == 0
    return (out == src).all()
'''

USER_TESTS = '''
import pytest
from mycode import copy_roundtrip


def test_roundtrip():
    assert copy_roundtrip(4096)


@pytest.mark.acl_products("910B", "A3", "310P", requires=("aclrtMemcpyBatch",))
def test_on_several_products(acl, acl_product, acl_rt, acl_clock):
    assert acl.rt.set_device(0) == 0
    assert acl_rt.product.name == acl_product
    t0 = acl_clock()
    acl.rt.create_stream()
    assert acl_clock() > t0


@pytest.mark.acl_products("910B", "950PR")
def test_the_marker_alone_is_enough():
    assert copy_roundtrip(64)


def test_fresh_process_per_test_part1(acl):
    acl.rt.set_device(0)
    acl.rt.malloc(1 << 20, 0)


def test_fresh_process_per_test_part2(acl_rt):
    acl_rt.set_device(0)
    assert acl_rt.get_mem_info(0)[0] == acl_rt.get_mem_info(0)[1]  # nothing left over from part 1
'''


@pytest.fixture
def project(pytester):
    pytester.makepyfile(mycode=USER_CODE, test_user=USER_TESTS)
    return pytester


def test_the_suite_runs_under_the_emulator_with_the_option(project):
    result = project.runpytest("--acl-emu", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7, skipped=1)  # 310P lacks aclrtMemcpyBatch: skipped


def test_a_product_can_be_chosen_and_the_skip_names_the_api(project):
    result = project.runpytest("--acl-emu=A3", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7, skipped=1)
    result.stdout.fnmatch_lines(["*310P does not support aclrtMemcpyBatch*"])


def test_the_environment_variable_turns_it_on(project, monkeypatch):
    monkeypatch.setenv("ACL_EMU_PYTEST", "910B")
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=7, skipped=1)


def test_without_it_nothing_changes(project):
    """No --acl-emu: `import acl` is the real pyACL (absent here), so collection fails as it would without
    an NPU stack; the plugin adds nothing."""
    result = project.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*ModuleNotFoundError*acl*"])
    assert result.ret != 0


def test_an_unknown_product_is_a_usage_error(project):
    result = project.runpytest("--acl-emu=nope", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--acl-emu*unknown product 'nope'*"])


# -- the command line: a bare --acl-emu never takes the next argument ------------------------------------------
def test_a_bare_acl_emu_before_a_folder_runs_that_folder_on_the_default_product(project):
    """`pytest --acl-emu tests/`, the usual CI form: tests/ is the folder to run, not the product."""
    folder = project.mkdir("suite")
    (folder / "test_in_folder.py").write_text("def test_here(acl_product):\n    assert acl_product == '910B'\n")
    result = project.runpytest("--acl-emu", "suite", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_bare_acl_emu_before_a_test_file_runs_that_file(project):
    """`pytest --acl-emu test_user.py`: the file is a test file, not a product config."""
    result = project.runpytest("--acl-emu", "test_user.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7, skipped=1)


def test_the_product_option_names_the_product(project):
    result = project.runpytest("--acl-emu-product", "A3", "test_user.py", "-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7, skipped=1)
    result.stdout.fnmatch_lines(["*310P does not support aclrtMemcpyBatch*"])
    project.makepyfile(test_which="def test_which(acl_product):\n    assert acl_product == 'A3'\n")
    project.runpytest("--acl-emu", "--acl-emu-product", "A3", "test_which.py").assert_outcomes(passed=1)
    project.runpytest("--acl-emu=A3", "test_which.py").assert_outcomes(passed=1)


def test_the_old_form_with_a_product_after_a_bare_acl_emu_says_how_to_write_it(project):
    result = project.runpytest("--acl-emu", "A3", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--acl-emu takes no separate value: write --acl-emu=A3 or --acl-emu-product A3*"])
    checks = project.runpytest("--acl-emu-sanitize", "race,host", "-p", "no:cacheprovider")
    assert checks.ret == pytest.ExitCode.USAGE_ERROR
    checks.stderr.fnmatch_lines(["*--acl-emu-sanitize takes no separate value: write --acl-emu-sanitize=race,host (*"])


def test_a_bare_acl_emu_sanitize_before_a_path_takes_no_checks(project):
    project.makepyfile(test_clean="def test_clean(acl_rt):\n    assert acl_rt.sanitizer is not None\n")
    project.runpytest("--acl-emu-sanitize", "test_clean.py", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_bare_options_are_written_out_only_before_a_double_dash():
    written = emu.pytest_plugin.bare_options_written_out
    assert written(["--acl-emu", "tests/", "--acl-emu-sanitize", "-x"]) == \
        ["--acl-emu=", "tests/", "--acl-emu-sanitize=all", "-x"]
    assert written(["--acl-emu=A3", "--", "--acl-emu"]) == ["--acl-emu=A3", "--", "--acl-emu"]


# -- without --acl-emu: the plugin is options and markers, nothing else ----------------------------------------
NO_ACL_TESTS = '''
import sys


def test_no_fixture_of_the_plugin_reaches_a_test(request):
    assert not {"_acl_emu_process", "acl_product", "acl", "acl_rt"} & set(request.fixturenames)
    assert "emu.pytest_emulated" not in sys.modules and "emu.pytest_isolate" not in sys.modules
    assert request.config.pluginmanager.get_plugin("acl_emu_emulated") is None
'''


def test_without_the_option_no_test_gets_a_fixture_and_the_rest_is_not_loaded(pytester):
    pytester.makepyfile(test_plain=NO_ACL_TESTS)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    listed = pytester.runpytest_subprocess("--fixtures", "-p", "no:cacheprovider")
    assert "acl_rt" not in listed.stdout.str() and "acl_product" not in listed.stdout.str()


def test_the_entry_module_imports_only_os_and_pytest_at_load():
    """Loading the plugin (the pytest11 entry point) runs only emu/pytest_plugin.py's top level: it imports os
    and pytest; the emulated session's module (`emu.pytest_emulated`: emu, numpy, simpy, the runtime) is
    imported in pytest_configure, under --acl-emu only."""
    tree = ast.parse(Path(emu.pytest_plugin.__file__).read_text())
    top = {alias.name for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
           for alias in node.names}
    assert top == {"annotations", "os", "pytest"}


def _python(code: str) -> str:
    """What `python -c code` prints, in a fresh interpreter (what it imports is its own)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_loading_the_plugin_imports_nothing_heavy():
    code = "import sys, emu.pytest_plugin; print(sorted({'numpy', 'simpy', 'emu.runtime'} & set(sys.modules)))"
    assert _python(code).strip() == "[]"


def test_importing_emu_loads_only_its_constants_and_errors():
    code = "import sys, emu; print(sorted(m for m in sys.modules if m.startswith('emu')))"
    assert _python(code).strip() == "['emu', 'emu.constants', 'emu.errors']"


LAZY_NAMES = """
import sys
import emu
assert 'emu.runtime' not in sys.modules
from emu import configure, current, declare_model, ModelDeclarationError, records, write_trace
import emu.runtime, emu.modeldecl
assert configure is emu.runtime.configure and current is emu.runtime.current
assert declare_model is emu.modeldecl.declare_model and ModelDeclarationError is emu.modeldecl.ModelDeclarationError
assert set(emu.__all__) <= set(dir(emu))
print(emu.__version__, configure('A3').product.name, len(records()))
"""


def test_the_package_names_stay_the_same_objects_imported_on_first_use():
    """`emu.configure` is `emu.runtime.configure` itself (its signature and docstring), imported when first asked
    for; `import emu; emu.runtime` and `from emu import runtime` still work; a name that is nowhere is an
    AttributeError."""
    assert _python(LAZY_NAMES).split()[1:] == ["A3", "0"]
    fresh = "import emu; print(emu.runtime.configure is emu.configure, hasattr(emu, 'no_such_name'))"
    assert _python(fresh).split() == ["True", "False"]


# -- acl-emu run -m pytest is the plugin's run -------------------------------------------------------------------
RUN_TESTS = '''
import acl
import pytest


@pytest.mark.acl_products("910B", "310P", requires=("aclrtMemcpyBatch",))
def test_products_apply(acl_product, acl_rt):
    assert acl_rt.product.name == acl_product


def test_the_runs_product(acl_product, acl_rt):
    assert acl_product == "A3" and acl_rt.product.name == "A3"
    assert acl.rt.set_device(0) == 0
'''


def test_acl_emu_run_m_pytest_applies_the_markers_and_the_fixtures(pytester):
    pytester.makepyfile(test_run=RUN_TESTS)
    result = subprocess.run([sys.executable, "-m", "emu", "run", "--product", "A3", "-m", "pytest", "test_run.py",
                             "-rs", "-p", "no:cacheprovider"], cwd=pytester.path, capture_output=True, text=True)
    assert "2 passed, 1 skipped" in result.stdout, result.stdout + result.stderr
    assert "310P does not support aclrtMemcpyBatch" in result.stdout


# -- each test's runtime is out of reach of the threads an earlier test left running ------------------------------
THREAD_TESTS = '''
import threading
import warnings

import acl

go, done, result = threading.Event(), threading.Event(), {}
before_the_tests = {}


def leftover():
    go.wait()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dev, ret = acl.rt.malloc(1 << 20, 0)
    result.update(ret=ret, warning=str(caught[0].message) if caught else "", recent=acl.get_recent_err_msg())
    done.set()


def session_thread():
    before_the_tests["ret"] = [acl.rt.set_device(0), acl.rt.malloc(64, 0)[1]]


def test_starts_a_thread_and_leaves_it_running():
    assert acl.rt.set_device(0) == 0
    threading.Thread(target=leftover, name="leftover", daemon=True).start()


def test_a_thread_started_and_joined_in_the_test_works():
    out = []
    t = threading.Thread(target=lambda: out.append((acl.rt.set_device(0), acl.rt.malloc(64, 0)[1])))
    t.start()
    t.join()
    assert out == [(0, 0)]


def test_the_leftover_thread_cannot_reach_this_tests_runtime(acl_rt):
    acl_rt.set_device(0)
    go.set()
    assert done.wait(30)
    assert result["ret"] == 100001
    assert "leftover" in result["warning"] and "test_starts_a_thread_and_leaves_it_running" in result["warning"]
    assert "test_starts_a_thread_and_leaves_it_running" in result["recent"]
    free, total = acl_rt.get_mem_info(0)
    assert free == total  # its malloc did not land here
'''


def test_a_thread_left_running_by_one_test_cannot_allocate_in_the_next_tests_runtime(pytester):
    pytester.makepyfile(test_threads=THREAD_TESTS)
    pytester.runpytest("--acl-emu", "-p", "no:cacheprovider", "-p", "no:randomly").assert_outcomes(passed=3)


def test_a_thread_started_before_the_first_test_reaches_every_tests_runtime(pytester):
    pytester.makeconftest('''
import threading
import pytest


@pytest.fixture(scope="session")
def pool():
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(1) as ex:
        ex.submit(lambda: None).result()  # its worker starts here, before any test's runtime
        yield ex
''')
    pytester.makepyfile(test_pool='''
import acl


def test_one(pool):
    assert pool.submit(lambda: acl.rt.set_device(0)).result() == 0


def test_two(pool):
    assert pool.submit(lambda: acl.rt.set_device(0)).result() == 0
    assert pool.submit(lambda: acl.rt.malloc(64, 0)[1]).result() == 0
''')
    pytester.runpytest("--acl-emu", "-p", "no:cacheprovider", "-p", "no:randomly").assert_outcomes(passed=2)


def test_the_guard_refuses_only_the_threads_of_finished_tests():
    """ThreadGenerations, directly: a retired thread's first call in a guarded runtime is 100001, the main thread
    keeps its state (clock) across the guarding, a new thread is let in."""
    import threading

    from emu.pytest_emulated import LeftoverThreadError, ThreadGenerations

    import emu

    generations = ThreadGenerations()
    alive = generations.alive()
    release = threading.Event()
    seen = {}

    def worker():
        release.wait()
        try:
            seen["call"] = rt.set_device(0)
        except LeftoverThreadError as e:
            seen["error"] = e

    thread = threading.Thread(target=worker, name="outlives-its-test")
    thread.start()
    assert generations.retire(alive, "test_x.py::test_a") == [thread]
    rt = emu.configure("910B")
    rt.set_device(0)
    clock = rt.clock
    generations.guard(rt)
    assert rt.clock == clock
    release.set()
    thread.join()
    assert seen["error"].code == 100001 and "test_x.py::test_a" in seen["error"].message
    other = threading.Thread(target=lambda: seen.update(other=rt.set_device(0)))
    other.start()
    other.join()
    assert "other" in seen
