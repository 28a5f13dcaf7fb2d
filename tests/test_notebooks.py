"""Notebook hygiene and a papermill run. nbval itself executes every notebook (see pyproject)."""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
ADDRESS = re.compile(r"at 0x[0-9a-f]{6,}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_executed_with_checked_rounded_outputs(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook with no code"
    unexecuted = [i for i, c in enumerate(code) if c.execution_count is None]
    assert not unexecuted, f"code cells {unexecuted} were never run: nbval would pass them blindly"
    checked = [c for c in code if "NBVAL_CHECK_OUTPUT" in c.source
               or "nbval-check-output" in c.metadata.get("tags", [])]
    assert checked, ("no cell is tagged nbval-check-output (or marked # NBVAL_CHECK_OUTPUT), so "
                     "nbval --nbval-lax checks nothing")
    for cell in checked:
        assert cell.outputs, f"checked cell has no output to compare:\n{cell.source[:80]}"
    for cell in code:
        for out in cell.outputs:
            text = out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
            assert not ADDRESS.search(text), f"output shows a memory address: {text[:80]}"
            assert out.get("output_type") != "error"


def test_start_notebook_runs_under_papermill_with_another_seed(tmp_path):
    papermill = pytest.importorskip("papermill")
    out = tmp_path / "start_seed1.ipynb"
    papermill.execute_notebook(str(ROOT / "notebooks" / "00_start_here.ipynb"), str(out),
                               parameters={"seed": 1, "steps": 60}, kernel_name="python3",
                               cwd=str(ROOT / "notebooks"), progress_bar=False)
    nb = nbformat.read(out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "seed = 1" in injected[0].source
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "loss at step 0 = 2.30" in text
    assert "step  59: train_eval_loss" in text  # 60 steps: the final evaluation is at step 59
