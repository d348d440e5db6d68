"""The notebooks in notebooks/ run in a real Jupyter kernel, their plot cells show images there, and the copies
committed to the repository carry the outputs a fresh run gives (so a reader on a code host sees the answers).

The library must leave the user's matplotlib alone: no backend switch, no pyplot import, nothing registered;
a study's figure shows itself in a notebook whatever backend the kernel runs.
"""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
REGENERATE = "python notebooks/execute.py"


def _executor():
    spec = importlib.util.spec_from_file_location("notebook_execute", ROOT / "notebooks" / "execute.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _draws(cell) -> bool:
    """A code cell that makes a figure (the notebooks draw with pyplot, a study's *_figure function or
    emu.studies.common.figure)."""
    source = "".join(cell["source"])
    return "plt.subplots" in source or re.search(r"\bfigure\(|_figure\(", source) is not None


def _texts(cell) -> list[str]:
    return ["".join(o["text"]) for o in cell.get("outputs", []) if o["output_type"] == "stream"]


def _images(cell) -> list[dict]:
    return [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]


def test_there_are_notebooks_and_they_draw():
    assert NOTEBOOKS, "notebooks/ holds the what-if studies"
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        assert any(_draws(c) for c in cells if c["cell_type"] == "code"), f"{path.name} draws nothing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebook_carries_its_outputs(path):
    """Every code cell was run, in order, and each cell that draws holds its image."""
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    counts = [c.get("execution_count") for c in cells]
    assert None not in counts, f"{path.name} has cells that were never run; regenerate with `{REGENERATE}`"
    assert counts == sorted(counts), f"{path.name} was run out of order; regenerate with `{REGENERATE}`"
    for i, cell in enumerate(cells):
        assert not [o for o in cell.get("outputs", []) if o["output_type"] == "error"], f"{path.name} cell {i}"
        if _draws(cell):
            assert _images(cell), f"{path.name}: code cell {i} draws but stores no image"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_a_kernel(path, tmp_path):
    """Executed by nbclient in a python3 kernel: no cell fails, each plot cell's output is a PNG, and the text
    the cells print is the text stored in the repository (the model is deterministic)."""
    fresh = _executor().execute(path, workdir=tmp_path)
    stored = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    ran = [c for c in fresh.cells if c.cell_type == "code"]
    assert len(ran) == len(stored)
    for i, (new, old) in enumerate(zip(ran, stored)):
        if _draws(new):
            images = _images(new)
            assert images, f"{path.name}: code cell {i} drew no image in the kernel"
            assert images[0]["data"]["image/png"].strip(), f"{path.name}: code cell {i}: empty image"
        assert _texts(new) == _texts(old), (f"{path.name}: code cell {i} prints something else than the stored "
                                            f"output; regenerate with `{REGENERATE}`")


LEAVES_MATPLOTLIB_ALONE = r"""
import base64, sys
import matplotlib
matplotlib.use("pdf")
from emu.studies import compare, compare_report
result = compare.compare_overlap(["910B"], 1 << 20, 1 << 20, 100.0, [1], [1, 2])
files = compare_report.write_outputs(result, sys.argv[1])
fig = compare_report.figure_of(result)
png = fig._repr_png_()
assert png.startswith(b"\x89PNG"), png[:8]
assert matplotlib.get_backend() == "pdf", matplotlib.get_backend()
assert "matplotlib.pyplot" not in sys.modules, "a study imported pyplot"
print(files["png"])
"""


def test_studies_leave_the_users_matplotlib_alone(tmp_path):
    """A study draws and writes its figure without importing pyplot or switching the backend the user chose,
    and its Figure renders itself as PNG for Jupyter."""
    done = subprocess.run([sys.executable, "-c", LEAVES_MATPLOTLIB_ALONE, str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).read_bytes().startswith(b"\x89PNG")
