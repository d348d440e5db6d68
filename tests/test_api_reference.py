"""The API reference: every public function documented, each ACL API's docstring naming it, and docs/api.md
what the docstrings give (`python -m emu.apidoc` regenerates it)."""
from __future__ import annotations

import inspect
import re

import pytest

import emu
import emu.acl as acl
from emu import apidoc
from emu import runtime as rt


def _own_doc(obj) -> str | None:
    """The object's own docstring (a class's, not one inherited from a base class)."""
    doc = vars(obj).get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if doc and doc.strip() else None


def _public(module) -> list[str]:
    return [n for n in module.__all__ if callable(getattr(module, n)) and not n.startswith("_")]


@pytest.mark.parametrize("module", [emu, rt], ids=["emu", "emu.runtime"])
def test_every_public_function_and_class_has_a_docstring(module):
    missing = [n for n in _public(module) if _own_doc(getattr(module, n)) is None]
    assert not missing, f"{module.__name__}: no docstring on {missing}"


def test_runtime_functions_carry_the_methods_docstrings():
    for name in rt.API_NAMES + ["register_host", "host_array", "start_thread", "stop_thread"]:
        assert getattr(rt, name).__doc__ == getattr(rt.Runtime, name).__doc__, name


def test_each_api_docstring_names_its_acl_api():
    wrong = []
    for name in rt.API_NAMES:
        acl_name = getattr(rt.Runtime, name).acl_name
        doc = _own_doc(getattr(rt, name)) or ""
        if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(acl_name)}(?![A-Za-z0-9_])", doc):
            wrong.append(f"{name} ({acl_name})")
    assert not wrong, f"these docstrings do not name their ACL API: {wrong}"


def test_every_api_is_in_one_group_of_the_reference():
    grouped = [n for _, names in apidoc.GROUPS for n in names]
    assert sorted(grouped) == sorted(rt.API_NAMES), (
        "emu.apidoc.GROUPS must hold every ACL API of emu.runtime exactly once")


def test_facade_help_shows_the_call_form_and_the_runtime_docstring():
    doc = acl.rt.memcpy_async.__doc__
    assert doc.startswith("ret = acl.rt.memcpy_async(dst, dest_max, src, count, kind, stream)")
    assert "aclrtMemcpyAsync" in doc
    assert inspect.cleandoc(rt.Runtime.memcpy_async.__doc__).splitlines()[0] in doc
    assert acl.rt.malloc.__doc__.startswith("value, ret = acl.rt.malloc(size, policy)")
    assert acl.init.__doc__.startswith("ret = acl.init([config_path])")
    assert "aclrtProcessReport" in acl.rt.process_report.__doc__


def test_docs_api_md_is_up_to_date():
    text = apidoc.render()
    on_disk = apidoc.PAGE.read_text(encoding="utf-8") if apidoc.PAGE.exists() else ""
    assert on_disk == text, (f"docs/api.md is out of date with the docstrings: regenerate it with "
                             f"`{apidoc.COMMAND}` (from the repository root) and commit it")
