"""emu's modules import each other one way only: no import cycle, neither at import time nor through an import
run later inside a function, and no module-level `__getattr__` in emu.studies forwarding names elsewhere (such
a shim was the one run-time cycle: bandwidth -> bandwidth_report -> bandwidth)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import emu
import emu.models

EMU = Path(emu.__file__).parent
MODELS = Path(emu.models.__file__).parent


def _modules() -> dict[str, tuple[Path, bool]]:
    """{dotted name: (file, is a package)} for every module of emu, emu.models included (the repository keeps
    it in models/); emu/examples are scripts, not modules."""
    out = {}
    for root, prefix in ((EMU, "emu"), (MODELS, "emu.models")):
        for path in root.rglob("*.py"):
            parts = [*prefix.split("."), *path.relative_to(root).with_suffix("").parts]
            if parts[1] in ("examples", "models") and prefix == "emu":
                continue
            package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", None) == "TYPE_CHECKING" or getattr(test, "attr", None) == "TYPE_CHECKING"


def _imported(name: str, path: Path, package: bool, modules: dict) -> set[str]:
    """The emu modules `name` imports anywhere (functions included; `if TYPE_CHECKING:` blocks excluded, they
    never run), each the longest emu module the import names; its own ancestor packages are left out, since a
    submodule always runs inside its package's import."""
    here = name.split(".") if package else name.split(".")[:-1]
    named: set[str] = set()

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                named.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = here[:len(here) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                named.update(f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target
                             for a in node.names)
            for field in ("body", "orelse", "finalbody", "handlers"):
                visit(getattr(node, field, []))

    visit(ast.parse(path.read_text(), filename=str(path)).body)
    out = set()
    for module in named:
        while module and module not in modules:
            module = module.rpartition(".")[0]
        if module and module != name and not name.startswith(module + "."):
            out.add(module)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_emu_modules():
    modules = _modules()
    graph = {name: _imported(name, path, package, modules) for name, (path, package) in modules.items()}
    assert graph["emu.cli"] and graph["emu.models.machine"], "the import reader found nothing: it is broken"
    assert _cycles(graph) == []


def test_no_study_forwards_names_through_a_module_getattr():
    for path in sorted((EMU / "studies").glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        assert "__getattr__" not in names, f"emu/studies/{path.name} defines a module-level __getattr__"


IMPORT_EACH_FIRST = r"""
import importlib, sys
names = sys.argv[1:]
for name in names:
    for loaded in [m for m in sys.modules if m == "emu" or m.startswith("emu.")]:
        del sys.modules[loaded]
    importlib.import_module(name)
print(len(names))
"""


def test_each_emu_module_imports_first_in_a_fresh_interpreter():
    """Each module imported before any other emu module (so a cycle would meet a half-initialised module)
    imports cleanly."""
    names = sorted(n for n in _modules() if n != "emu.__main__")
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH_FIRST, *names], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(len(names))


def test_no_function_in_emu_or_models_is_over_60_lines():
    """A function is read at once: none in emu/ or models/ runs over 60 lines, from `def` to its last line,
    nested functions counted in their parent (issue 29)."""
    root = Path(__file__).resolve().parent.parent
    long = []
    for path in sorted([*(root / "emu").rglob("*.py"), *(root / "models").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 60:
                    long.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long
