"""Notebook hygiene and a papermill run. nbval itself executes every executed reference
(tests/reference/ for the study notebooks, solutions/ for the exercises; see pyproject)."""

import re
import sys
from pathlib import Path

import nbformat
import pytest

from helpers import printed

ROOT = Path(__file__).resolve().parents[2]
LEARNER = sorted((ROOT / "notebooks").glob("*.ipynb"))  # what a learner opens: no outputs
NOTEBOOKS = sorted((ROOT / "tests" / "reference").glob("*.ipynb")) + sorted(
    (ROOT / "solutions").glob("*.ipynb")
)
sys.path.insert(0, str(ROOT / "tools"))
import references  # noqa: E402  (tools/references.py: builds and checks the references)

ADDRESS = re.compile(r"at 0x[0-9a-f]{6,}")
CHECKED = "nbval-check-output"  # the cell tag nbval --nbval-lax compares; learners never see it


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_executed_with_checked_rounded_outputs(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "a notebook with no code"
    unexecuted = [i for i, c in enumerate(code) if c.execution_count is None]
    assert not unexecuted, f"code cells {unexecuted} were never run: nbval would pass them blindly"
    markers = [c.source[:60] for c in code if "NBVAL_" in c.source]
    assert not markers, (
        f"a cell marks itself with an NBVAL_ comment; use the cell tag {CHECKED!r}: {markers}"
    )
    checked = [c for c in code if CHECKED in c.metadata.get("tags", [])]
    assert checked, f"no cell is tagged {CHECKED!r}, so nbval --nbval-lax checks nothing"
    for cell in checked:
        assert cell.outputs, f"checked cell has no output to compare:\n{cell.source[:80]}"
    for cell in code:
        for out in cell.outputs:
            text = out.get("text", "") + str(out.get("data", {}).get("text/plain", ""))
            assert not ADDRESS.search(text), f"output shows a memory address: {text[:80]}"
            assert out.get("output_type") != "error"


@pytest.mark.parametrize("path", LEARNER, ids=lambda p: p.name)
def test_study_notebooks_ship_without_results_and_match_their_reference(path):
    assert references.problems(path.name) == []


def test_every_study_notebook_has_a_reference_and_no_reference_is_stale():
    assert sorted(p.name for p in (ROOT / "tests" / "reference").glob("*.ipynb")) == sorted(
        p.name for p in LEARNER
    )


@pytest.mark.parametrize(
    "path",
    NOTEBOOKS + LEARNER + sorted((ROOT / "exercises").glob("*.ipynb")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_notebook_names_its_kernel_and_language(path):
    meta = nbformat.read(path, as_version=4).metadata
    assert meta.get("kernelspec", {}).get("name") == "python3", "no python3 kernelspec"
    assert meta["kernelspec"].get("display_name") == "Python 3 (ipykernel)"
    assert meta.get("language_info", {}).get("name") == "python", "no language_info"


@pytest.mark.slow
def test_start_notebook_runs_under_papermill_with_another_seed(tmp_path):
    papermill = pytest.importorskip("papermill")
    out = tmp_path / "start_seed1.ipynb"
    papermill.execute_notebook(
        str(ROOT / "notebooks" / "00_start_here.ipynb"),
        str(out),
        parameters={"seed": 1, "steps": 60, "forecast_points": [[0, 2.3], [59, 1.0]]},
        kernel_name="python3",
        cwd=str(ROOT / "notebooks"),
        progress_bar=False,
    )
    nb = nbformat.read(out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "seed = 1" in injected[0].source
    text = printed(nb)
    assert "loss at step 0 = 2.30" in text
    assert "step  59: train_eval_loss" in text  # 60 steps: the final evaluation is at step 59


def test_printed_text_keeps_a_print_that_arrived_in_two_stream_outputs():
    """The kernel sends stdout on a timer, so `print("refused:", reason)` can reach the notebook
    as two outputs. The tests' reader must give back the sentence whole."""
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    split = new_code_cell(
        outputs=[
            new_output("stream", name="stdout", text="refused:"),
            new_output("stream", name="stdout", text=" this run is not it.\n"),
        ]
    )
    nb = new_notebook(
        cells=[split, new_code_cell(outputs=[new_output("stream", name="stdout", text="next\n")])]
    )
    assert printed(nb) == "refused: this run is not it.\n\nnext\n"
