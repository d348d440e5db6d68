"""What a user gets from an installed acl-emu: an sdist with no partial test tree, notebooks that read only the
package's installed data, and metadata a package index shows (an SPDX licence, the licence file, classifiers)."""
from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# What a notebook must not do: build a path into the source checkout (tests/, the package's parent folder).
CHECKOUT_PATHS = re.compile(r"__file__|\.parent\.parent|[\"'/]tests[\"'/]|\btests/data\b")


def _tracked() -> list[str]:
    """The repository's files (git's list; without git, the files of the folders an sdist could take)."""
    done = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode == 0:
        return done.stdout.split()
    folders = [ROOT / d for d in ("emu", "models", "configs", "validation", "tests", "benchmarks")]
    return ["pyproject.toml", *(p.relative_to(ROOT).as_posix() for d in folders for p in d.rglob("*") if p.is_file())]


def _sdist_selection(files: list[str]) -> list[str]:
    """`files` after MANIFEST.in's commands, as setuptools applies them when it makes the sdist."""
    from setuptools.command.egg_info import FileList

    selected = FileList()
    selected.extend(files)
    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            selected.process_template_line(line)
    return selected.files


def test_the_sdist_ships_a_complete_test_tree_or_none():
    """setuptools puts tests/test*.py in every sdist by default, without conftest.py, the helpers and the data,
    so those tests fail: MANIFEST.in prunes the whole tree (and the benchmarks that import it)."""
    kept = _sdist_selection(_tracked())
    assert "emu/__init__.py" in kept and "pyproject.toml" in kept
    assert not [f for f in kept if f.startswith(("tests/", "benchmarks/"))]
    assert _sdist_selection(["tests/test_x.py", "tests/conftest.py", "tests/data/p.json"]) == []


def _code(path: Path) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebooks_use_only_installed_package_data(path):
    found = CHECKOUT_PATHS.findall(_code(path))
    assert not found, f"{path.name} builds a path into the checkout: {found}"


def test_the_checkout_path_finder_finds_what_the_replay_notebook_did():
    assert NOTEBOOKS
    assert CHECKOUT_PATHS.search('DATA = Path(emu.__file__).resolve().parent.parent / "tests" / "data"')
    assert not CHECKOUT_PATHS.search('files("emu") / "examples" / "msprof_step.json"')


def test_the_profile_the_replay_notebook_reads_is_package_data_and_the_tests_profile():
    assert 'files("emu") / "examples" / "msprof_step.json"' in _code(ROOT / "notebooks" / "replay.ipynb")
    packaged = ROOT / "emu" / "examples" / "msprof_step.json"
    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["emu"]
    assert any(fnmatch.fnmatch("examples/msprof_step.json", g) for g in globs)
    assert packaged.read_bytes() == (ROOT / "tests" / "data" / "msprof_step.json").read_bytes()


def test_the_metadata_has_an_spdx_licence_its_file_and_the_classifiers():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert [f for f in project["license-files"] if (ROOT / f).is_file()] == ["LICENSE"]
    classifiers = project["classifiers"]
    assert not [c for c in classifiers if c.startswith("License ::")], "PEP 639: the SPDX string replaces these"
    assert "Framework :: Pytest" in classifiers
    minimum = project["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {minimum}" in classifiers
    assert PYPROJECT["project"]["entry-points"]["pytest11"] == {"acl_emu": "emu.pytest_plugin"}
