"""Run the notebooks in a Jupyter kernel and store their outputs, so a reader on a code host sees the answers.

    python notebooks/execute.py              # execute every notebook here, write the outputs in place
    python notebooks/execute.py NAME.ipynb   # one notebook

Needs nbclient and ipykernel (the `test` extra). tests/test_notebooks.py runs the same function and checks
that each notebook runs, that each cell that draws shows an image, and that the stored text outputs are the
ones a fresh run prints.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 600


def execute(path: Path, workdir: Path | None = None):
    """Run the notebook at `path` top to bottom in a fresh python3 kernel (working directory `workdir`, a
    temporary one by default) and return the executed nbformat notebook; a failing cell raises
    nbclient's CellExecutionError with the cell's traceback."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                                resources={"metadata": {"path": str(workdir or tmp)}})
        client.execute()
    return nb


def main(argv: list[str]) -> int:
    import nbformat
    from nbformat.validator import normalize

    paths = [Path(a) for a in argv] or sorted(HERE.glob("*.ipynb"))
    for path in paths:
        nb = execute(path)
        nb = nbformat.from_dict(normalize(nb)[1])  # gives every cell an id
        for cell in nb.cells:  # the kernel's timing of each cell changes every run; keep the diff to outputs
            cell.get("metadata", {}).pop("execution", None)
        nbformat.write(nb, path)
        print(f"{path}: executed, outputs stored")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
