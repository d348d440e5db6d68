"""Every public name of the pyACL facade and of the error codes is written where it is defined: a `def`, a
`class`, an assignment or an import at the top level of its file, so that grep, IDEs and type checkers find it;
except the ACL APIs' facade entries, made from each API's one declaration (`@api(..., pyacl=...)` in the
family module, `emu.runtime.APIS`). No module under emu/ makes names by writing into its globals(), but the
modules that install the declared APIs (one `globals().update(...)` each, of those declarations only)."""
from __future__ import annotations

import ast
import importlib
import re
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EMU = REPO / "emu"

# The modules whose public names are checked.
CHECKED = sorted([*(EMU / "acl").glob("*.py"), EMU / "errors.py"])

# The modules that make the declared APIs' surfaces from `emu.runtime.APIS`: emu.runtime's module functions, the
# facade modules' entries. Each may write its globals once (the names checked below to be the declared ones).
GLOBALS_WRITERS_ALLOWED: frozenset[str] = frozenset({"emu/runtime/__init__.py", "emu/acl/__init__.py",
                                                     "emu/acl/rt.py", "emu/acl/mdl.py", "emu/acl/media.py"})

# Calls on globals() (or vars() without argument) that add or replace names.
MUTATING_METHODS = {"update", "setdefault", "__setitem__"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target_names(target: ast.expr) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(t) for t in target.elts))
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return set()  # an attribute or a subscript binds no module name


def _bound_names(statements: list[ast.stmt]) -> set[str]:
    """The names the module-level statements bind (descending into if/try/with/for, not into defs or classes)."""
    names: set[str] = set()
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names |= _target_names(target)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and (node.value is not None
                                                                    or isinstance(node, ast.AugAssign)):
            names |= _target_names(node.target)
        elif isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
        else:
            for field in ("body", "orelse", "finalbody"):
                names |= _bound_names(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                names |= _bound_names(handler.body)
            if isinstance(node, (ast.For, ast.AsyncFor)):
                names |= _target_names(node.target)
    return names


def _is_namespace_call(node: ast.expr) -> bool:
    """globals(), or vars() without argument (the same dict at module level)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and (node.func.id == "globals" or (node.func.id == "vars" and not node.args)))


def globals_writes(source: str) -> list[str]:
    """Where `source` adds names through globals(): 'line N: what'."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATING_METHODS and _is_namespace_call(node.func.value)):
            found.append((node.lineno, f"globals().{node.func.attr}(...)"))
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, ast.Subscript) and _is_namespace_call(sub.value):
                    found.append((sub.lineno, "globals()[...] = ..."))
    return [f"line {line}: {what}" for line, what in sorted(found)]


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_public_name_is_bound_by_a_statement_of_its_file(path):
    module = importlib.import_module(_module_name(path))
    bound = _bound_names(ast.parse(path.read_text(encoding="utf-8")).body)
    public = [n for n in dir(module) if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)]
    assert public, f"{module.__name__} has no public name: the check would prove nothing"
    facade = module.__name__.replace("emu.acl", "acl")
    declared = {n for n in public if getattr(getattr(module, n), "api", None) is not None
                and getattr(module, n).api.facade_module == facade and getattr(module, n).api.pyacl == f"{facade}.{n}"}
    hidden = [n for n in public if n not in bound and n not in declared]
    assert not hidden, (f"{path.relative_to(REPO)}: these public names are bound by no def, class, assignment or "
                        f"import at its top level (made through globals()?): {hidden}")


def test_no_module_writes_names_into_its_globals():
    offenders = {}
    for path in sorted(EMU.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        writes = globals_writes(path.read_text(encoding="utf-8"))
        if writes and (rel not in GLOBALS_WRITERS_ALLOWED or len(writes) > 1):
            offenders[rel] = writes
    assert not offenders, f"names made through globals() instead of plain definitions: {offenders}"


def test_the_globals_check_sees_the_forms_it_forbids():
    source = ("globals().update(CODES)\n"
              "globals()['x'] = 1\n"
              "def _b(name):\n    globals()[name] = 2\n"
              "vars().setdefault('y', 3)\n"
              "names = globals().get('x')\n")  # reading is fine
    assert [w.split(":")[0] for w in globals_writes(source)] == ["line 1", "line 2", "line 4", "line 5"]


def test_each_error_code_is_a_constant_with_its_value_on_one_line():
    from emu import errors
    source = (EMU / "errors.py").read_text(encoding="utf-8")
    missing = [name for name, value in errors.CODES.items()
               if not re.search(rf"^{name} = {value}\b", source, re.MULTILINE)]
    assert not missing, f"emu/errors.py: no line `NAME = value` for {missing}"
    assert errors.ACL_ERROR_NONE == errors.ACL_SUCCESS == 0
    assert errors.name_of(0) == "ACL_SUCCESS"
