"""The runtime's layout: every API is a function of its family's module, declared once there (`@api(...)`);
`Runtime`'s method, the module function and the pyACL facade entry are all made from that declaration
(`emu.runtime.APIS`), and no family module reaches another through the runtime object."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import emu.runtime as rtm

RUNTIME = Path(rtm.__file__).parent
FAMILIES = ["devices", "streams", "allocation", "copies", "fills", "copy2d", "batch", "descriptors", "hostmem", "peer", "capture", "launch",
            "binaries", "callbacks", "inference", "transfer"]


def _assigned_names(tree: ast.AST) -> set[str]:
    return {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) for t in node.targets
            if isinstance(t, ast.Name)}


FACADE_MODULES = ("emu.acl", "emu.acl.rt", "emu.acl.mdl", "emu.acl.media", "emu.acl.util")


def _facade_entries() -> list:
    """Every callable of the facade modules: (qualified pyACL name, the object)."""
    import importlib
    import inspect
    out = []
    for name in FACADE_MODULES:
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            if not attr.startswith("_") and callable(obj) and not inspect.ismodule(obj) and not inspect.isclass(obj):
                out.append((f"{name.replace('emu.acl', 'acl')}.{attr}", obj))
    return out


def test_the_declarations_are_the_family_functions_in_the_documented_order():
    """APIS: every @api function of the family modules, module by module in FAMILIES' order, each once."""
    expected = []
    for module in rtm.FAMILIES:
        tree = ast.parse(Path(module.__file__).read_text())
        expected += [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                     and any(isinstance(d, ast.Call) and getattr(d.func, "id", None) == "api" for d in n.decorator_list)]
    assert [d.name for d in rtm.APIS] == expected
    assert {m.__name__.rsplit(".", 1)[-1] for m in rtm.FAMILIES} <= set(FAMILIES)
    for name in FAMILIES:  # no family module outside FAMILIES declares an API
        module = getattr(rtm, name)
        if module not in rtm.FAMILIES:
            assert not [f for f in vars(module).values() if isinstance(getattr(f, "api", None), rtm.Declaration)], name
    assert sorted(rtm.API_NAMES) == sorted(d.name for d in rtm.APIS)


def test_every_declared_api_is_once_in_each_surface_and_no_surface_has_an_undeclared_one():
    """The three surfaces of an API (Runtime's method, the module function, the facade entry) are made from
    its declaration: each declared API is in each exactly once, and nothing in a surface is an API without one."""
    declared = {d.name: d for d in rtm.APIS}
    assert len(declared) == len(rtm.APIS)
    # Runtime.<name> is the declared function itself; no other method of Runtime is an API
    methods = {n: v for n, v in vars(rtm.Runtime).items() if hasattr(v, "acl_name")}
    assert sorted(methods) == sorted(declared)
    for name, d in declared.items():
        assert methods[name] is d.method and d.method.api is d, name
    # emu.runtime.<name> calls that method; no other module function calls an API
    delegates = {n: v for n, v in vars(rtm).items()
                 if callable(v) and isinstance(getattr(getattr(v, "__wrapped__", None), "api", None), rtm.Declaration)}
    assert sorted(delegates) == sorted(declared)
    for name, d in declared.items():
        assert delegates[name].__wrapped__ is d.method, name
    # acl.<module>.<name>: one facade entry per API declaring a pyACL name, carrying that declaration
    entries = _facade_entries()
    with_api = [(q, obj.api) for q, obj in entries if hasattr(obj, "api")]
    assert sorted(q for q, _ in with_api) == sorted(d.pyacl for d in rtm.APIS if d.pyacl)
    for q, d in with_api:
        assert q == d.pyacl and d in rtm.APIS, q
    undeclared = [q for q, obj in entries if not hasattr(obj, "api") and q.rsplit(".", 1)[-1] in declared]
    assert not undeclared, f"facade entries named as an API but made without its declaration: {undeclared}"
    assert [d.acl for d in rtm.APIS if d.pyacl is None] == ["aclmdlRICaptureThreadExchangeMode", "aclEmuLaunchKernel"]


def test_no_surface_repeats_a_declaration():
    """Neither `Runtime`, the module functions nor the facade modules name an API again: no `x = family.x`
    binding of an API, no `_delegate("x")` of one, no `_bind("acl...")` call."""
    text = (RUNTIME / "__init__.py").read_text()
    for d in rtm.APIS:
        assert f"= {d.family}.{d.name}\n" not in text, d.name
        assert f'_delegate("{d.name}")' not in text, d.name
    for path in sorted((RUNTIME.parent / "acl").glob("*.py")):
        if path.name != "_bind.py":
            assert "_bind(" not in path.read_text(), path.name


def test_helpers_are_explicit_module_level_names():
    tree = ast.parse((RUNTIME / "__init__.py").read_text())
    top = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    for name in rtm.HELPERS:
        assert name in top, f"emu.runtime.{name} is not assigned at the module's top level"
        assert getattr(rtm, name).__wrapped__ is getattr(rtm.Runtime, name), name


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
