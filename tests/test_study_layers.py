"""The studies' layers, read from their source: the CLI imports the studies and never the reverse; a study
measures and returns data while its report module draws and writes; studies ask the runtime through its API
and `emu.runtime.queries`, never through its state, and never read an error's text to decide what it was."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import emu.studies

STUDIES = Path(emu.studies.__file__).parent
MODULES = sorted(STUDIES.glob("*.py"))
# the modules that measure (each draws in <name>_report.py)
MEASURING = ["bandwidth", "overlap", "compare", "products", "validate", "calibrate"]
# what draws or writes: matplotlib, and the figure and file helpers of emu.studies.common
DRAWING = {"figure", "save_figure", "Landing", "write_csv", "write_json"}
# the runtime's state: what `emu.runtime.queries` reads for a study
RUNTIME_STATE = {"space", "handles", "machine", "visible", "call_log", "_parent", "_st", "_current"}


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _imports(path: Path, package: str = "emu.studies") -> list[str]:
    """Every module an import statement in `path` (a module of `package`) names, anywhere in the file
    (functions included), made absolute; `from . import x` counts as the module `<package>.x` too."""
    out = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module
            out.append(module)
            out += [f"{module}.{a.name}" for a in node.names]
    return out


def test_there_are_studies_and_reports():
    names = {p.stem for p in MODULES}
    for study in MEASURING:
        assert study in names
        assert f"{study}_report" in names, f"{study} has no report module"


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_no_study_imports_the_cli(path):
    """emu.cli imports the studies; a study importing emu.cli back would be a cycle."""
    bad = [m for m in _imports(path) if m == "emu.cli" or m.startswith("emu.cli.")]
    assert not bad, f"emu/studies/{path.name} imports {bad}: the argument helpers live in emu.studies.args"


def test_the_cli_imports_the_studies():
    imported = _imports(STUDIES.parent / "cli.py", package="emu")
    for study in MEASURING:
        assert f"emu.studies.{study}" in imported, study


@pytest.mark.parametrize("study", MEASURING)
def test_a_study_measures_and_its_report_draws(study):
    """A measuring module returns data: it prints nothing, imports no matplotlib and none of the figure and
    file helpers; those are its report's."""
    tree = _tree(STUDIES / f"{study}.py")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names]
            module = getattr(node, "module", None) or ""
            assert "matplotlib" not in module and not any("matplotlib" in n for n in names), study
            if module == "common":
                assert not DRAWING & set(names), f"{study} imports {sorted(DRAWING & set(names))}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id != "print", f"{study}.py prints (line {node.lineno})"


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_studies_ask_the_runtime_through_its_api_and_queries(path):
    """No study reads the runtime's state (rt.space, rt.handles, rt.machine, rt.visible, a task's _parent,
    ...): what it needs is a function of emu.runtime.queries."""
    used = sorted({(n.attr, n.lineno) for n in ast.walk(_tree(path))
                   if isinstance(n, ast.Attribute) and n.attr in RUNTIME_STATE})
    assert not used, f"emu/studies/{path.name} reads the runtime's state: {used}"


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_no_study_tells_errors_apart_by_their_text(path):
    """An error is told apart by its type, its code (AclError.code) or a field it carries, not by how its
    message starts."""
    for handler in ast.walk(_tree(path)):
        if not isinstance(handler, ast.ExceptHandler) or handler.name is None:
            continue
        for node in ast.walk(handler):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("startswith", "endswith", "find", "index")):
                continue
            text = node.func.value
            from_error = ((isinstance(text, ast.Call) and isinstance(text.func, ast.Name) and text.func.id == "str"
                           and any(isinstance(a, ast.Name) and a.id == handler.name for a in text.args))
                          or (isinstance(text, ast.Attribute) and isinstance(text.value, ast.Name)
                              and text.value.id == handler.name))
            assert not from_error, f"emu/studies/{path.name}:{node.lineno} reads the text of {handler.name}"


def test_the_cli_picks_no_argument_by_an_errors_text():
    assert "str(e).startswith" not in (STUDIES.parent / "cli.py").read_text()


# -- the queries the studies ask ----------------------------------------------------------------------------------
@pytest.fixture
def run910b():
    """A timing-only 910B runtime with a stream, device, page-locked and pageable buffers of 1 MiB, an event."""
    import numpy as np

    from emu import config
    from emu.runtime import Runtime

    rt = Runtime(config.load("910B"), functional=False)
    rt.set_device(0)
    keep = np.empty(1 << 20, dtype=np.uint8)
    return rt, {"stream": rt.create_stream(), "dev": rt.malloc(1 << 20), "pinned": rt.malloc_host(1 << 20),
                "pageable": rt.register_host(keep), "event": rt.create_event(), "keep": keep}


def test_queries_make_no_acl_call(run910b):
    from emu.runtime import queries

    rt, h = run910b
    calls, clock = dict(rt.calls), rt.clock
    queries.copy_route(rt, h["pinned"], h["dev"])
    queries.stream_name(rt, h["stream"])
    queries.device_memory_used(rt, 0)
    queries.completed_tasks(rt)
    queries.chrome_trace(rt)
    assert dict(rt.calls) == calls and rt.clock == clock


def test_queries_answer_where_a_copy_goes_and_how_it_ran(run910b, tmp_path):
    import json

    from emu.runtime import queries

    rt, h = run910b
    n = 1 << 20
    assert queries.copy_ends(rt, h["pinned"], h["dev"]) == (None, 0)
    assert queries.copy_route(rt, h["pinned"], h["dev"]) == "h2d"
    assert queries.copy_route(rt, h["dev"], h["pageable"]) == "d2h"
    assert queries.physical_devices(rt) == list(range(8))
    assert queries.device_memory_used(rt, 0) >= n
    with pytest.raises(ValueError):
        queries.copy_ends(rt, 0x10, h["dev"])

    rt.memcpy_async(h["dev"], n, h["pinned"], n, 1, h["stream"])
    rt.record_event(h["event"], h["stream"])
    rt.synchronize_event(h["event"])
    assert queries.last_copy_kind(rt) == "copy"
    tasks = queries.completed_tasks(rt)
    assert tasks[-1]["stream"] == queries.stream_name(rt, h["stream"]) and tasks[-1]["kind"] == "marker"
    assert queries.event_recorded_at(rt, h["event"]) == tasks[-1]["end"]
    assert queries.link_usage(rt)["pcie0.down"]["bytes"] > n  # the payload and the TLP headers

    rt.memcpy(h["dev"], n, h["pageable"], n, 1)  # pageable: staged through pinned buffers
    assert queries.last_copy_kind(rt) == "staged"
    assert any(t["part"] for t in queries.completed_tasks(rt))

    rt.write_trace(tmp_path / "t.json")
    assert (tmp_path / "t.json").read_text() == json.dumps(queries.chrome_trace(rt))
