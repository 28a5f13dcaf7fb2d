"""Small helpers shared by the exercise-check tests."""

import re


def one_sentence(message: str) -> bool:
    """A teaching message is one sentence: it ends with a period and has no second sentence."""
    return message.endswith(".") and not re.search(r"[.:;]\s+[A-Z]", message)


def run_solution(name: str, tmp_path, **parameters) -> str:
    """Execute solutions/NAME.ipynb with papermill parameters; return its printed text."""
    import nbformat
    import pytest
    from pathlib import Path
    papermill = pytest.importorskip("papermill")
    solutions = Path(__file__).resolve().parents[1] / "solutions"
    out = tmp_path / f"{name}_run.ipynb"
    papermill.execute_notebook(str(solutions / f"{name}.ipynb"), str(out), parameters=parameters,
                               kernel_name="python3", cwd=str(solutions), progress_bar=False)
    nb = nbformat.read(out, as_version=4)
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
