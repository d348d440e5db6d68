"""The runtime's layout: every API is a function of its family's module, bound on `Runtime` by name and
delegated at module level by an explicit assignment (grep and IDEs find each one), and no family module
reaches another through the runtime object."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import emu.runtime as rtm

RUNTIME = Path(rtm.__file__).parent
FAMILIES = ["devices", "streams", "allocation", "copies", "fills", "copy2d", "batch", "descriptors", "hostmem", "peer", "capture", "launch",
            "callbacks", "transfer"]


def _assigned_names(tree: ast.AST) -> set[str]:
    return {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
            if isinstance(t, ast.Name)}


def test_every_api_is_an_explicit_module_level_name():
    tree = ast.parse((RUNTIME / "__init__.py").read_text())
    top = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    for name in [*rtm.API_NAMES, *rtm._HELPERS]:
        assert name in top, f"emu.runtime.{name} is not assigned at the module's top level"
        assert getattr(rtm, name).__wrapped__ is getattr(rtm.Runtime, name), name


def test_every_family_function_is_bound_on_runtime_by_name():
    cls = next(n for n in ast.parse((RUNTIME / "__init__.py").read_text()).body
               if isinstance(n, ast.ClassDef) and n.name == "Runtime")
    bound = {}
    for node in cls.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
            bound[node.targets[0].id] = (node.value.value.id, node.value.attr)
    for name in rtm.API_NAMES:
        fn = getattr(rtm.Runtime, name)
        module = fn.__module__.rsplit(".", 1)[-1]
        assert bound.get(name) == (module, name), f"Runtime.{name} should be `{name} = {module}.{name}`"


def test_family_modules_call_each_other_explicitly():
    """A family function reaches another family's helpers by importing its module, never through the runtime
    object (`rt.<private helper>`): what a call touches can be read from the imports."""
    private = {n for m in FAMILIES for n in _defined(m) if n.startswith("_")}
    for m in FAMILIES:
        text = (RUNTIME / f"{m}.py").read_text()
        used = set(re.findall(r"\brt\.(_[a-z][a-z0-9_]*)\b", text))
        assert not used & private, f"{m}.py reaches {sorted(used & private)} through the runtime object"


def _defined(module: str) -> set[str]:
    tree = ast.parse((RUNTIME / f"{module}.py").read_text())
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def test_no_mixins_left_and_core_is_state():
    """Runtime is Core (the state) plus the API functions bound by name; Core defines no API."""
    assert rtm.Runtime.__bases__ == (rtm.Core,)
    assert not [n for n in vars(rtm.Core) if hasattr(vars(rtm.Core)[n], "acl_name")]


def test_configured_says_whether_a_runtime_exists_without_making_one():
    import subprocess
    import sys
    code = ("import emu.runtime as r\n"
            "assert r.configured() is None\n"
            "assert r.configured() is None  # asking made none\n"
            "rt = r.current()\n"
            "assert r.configured() is rt\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_one_way_to_raise_an_acl_error():
    """Family modules fail through `core.fail(code, message)`; only batch.py raises its BatchError (an AclError
    that also carries the failing entry's index), through `_bad`."""
    for m in FAMILIES:
        text = (RUNTIME / f"{m}.py").read_text()
        assert "raise AclError(" not in text, f"{m}.py raises AclError itself instead of calling fail()"
        if m != "batch":
            assert "BatchError(" not in text, m


# The vocabulary emu.constants holds; before it did, modules re-declared these (hostmem's REG_*, allocation's
# ATTR_*, capture's modes and statuses, transfer's directions, descriptors' INNER_D2D, ...).
_VOCABULARY = re.compile(r"^_?(H2H|H2D|D2H|D2D|DEFAULT|H2B2D|INNER_D2D|INTER_D2D|REG_[A-Z]+|ATTR_[A-Z_]+|"
                         r"HOST_REGISTER_[A-Z]+|GLOBAL|THREAD_LOCAL|RELAXED|NONE|ACTIVE|INVALIDATED|"
                         r"DEVICE_USE_ONLY|ACL_[A-Z0-9_]+|EVENT_WAIT_STATUS_[A-Z_]+|Location|MemcpyKind)$")


def test_one_vocabulary_for_kinds_locations_flags_and_modes():
    """Copy directions, memory locations, allocation attributes, registration types and flags, callback,
    event-wait and capture constants are defined once, in emu.constants: the emulator's other modules import
    them and never assign them (a local `REG_PINNED = 0x10000000` could drift from the header's value)."""
    package = RUNTIME.parent
    offenders = []
    for path in sorted(package.rglob("*.py")):
        if path.name in ("constants.py", "errors.py") or "examples" in path.parts:  # errors.py: the codes;
            continue  # examples: user scripts, which define their own ints as pyACL scripts do
        tree = ast.parse(path.read_text())
        for node in tree.body:
            targets = [t for n in ([node] if isinstance(node, ast.Assign) else []) for t in n.targets]
            names = [e.id for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])
                     if isinstance(e, ast.Name)]
            if isinstance(node, ast.ClassDef):
                names.append(node.name)
            offenders += [f"{path.relative_to(package)}: {n}" for n in names if _VOCABULARY.match(n)]
    assert not offenders, offenders
