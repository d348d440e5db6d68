"""The pytest plugin: `pytest --acl-emu[=PRODUCT]` runs a user's pyACL tests under the emulator, unchanged."""
from __future__ import annotations

import pytest

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
