"""Each learner copy of Exercises A-F stops at its first run cell until the sketch is sealed.

The learner copy ships with ``forecast_points = None``, so a Run All in a fresh kernel
reaches `sketch.require()` with nothing drawn: that cell must stop with the one-sentence
SketchNotSealed (no traceback), before any setup is built, and every check after it must
be left unanswered rather than passed.
"""

from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = {
    "ex_a": "ex_a_break_the_graph",
    "ex_b": "ex_b_optimizer_membership",
    "ex_c": "ex_c_learning_rate_sweep",
    "ex_d": "ex_d_validation_below_training",
    "ex_e": "ex_e_masking_errors",
    "ex_f": "ex_f_loss_metric_mismatch",
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "exercise", [pytest.param(e, marks=getattr(pytest.mark, e)) for e in EXERCISES]
)
def test_run_all_stops_at_the_unsealed_sketch(exercise, tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "exercises" / f"{EXERCISES[exercise]}.ipynb", as_version=4)
    gate = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and c.source.lstrip().startswith("sketch.require()")
    )
    nb.cells = nb.cells[: gate + 1]  # everything up to the first run cell, as Run All reaches it
    assert "forecast_points = None" in nb.cells[1].source
    NotebookClient(
        nb,
        kernel_name="python3",
        allow_errors=True,
        timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    errors = [o for o in nb.cells[gate].outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "SketchNotSealed"
    assert len(errors[0].traceback) == 1 and "press Seal" not in errors[0].traceback[0]
    boxes = [o for o in nb.cells[gate].outputs if o.output_type == "display_data"]
    assert len(boxes) == 1 and "press Seal" in boxes[0].data["text/html"]  # said once
    sketch_cell = next(
        c for c in nb.cells if c.cell_type == "code" and "SketchForecast(" in c.source
    )
    assert not [o for o in sketch_cell.outputs if o.output_type == "error"]


@pytest.mark.parametrize("in_a_notebook", [True, False])
def test_an_error_that_teaches_says_its_sentence_once(monkeypatch, in_a_notebook):
    import labkit.errors
    from labkit.forecast.gate import SketchNotSealed
    from labkit.learn.check import CheckFailed

    monkeypatch.setattr(labkit.errors, "notebook_box", lambda *a, **k: in_a_notebook)
    for error in (
        SketchNotSealed("Draw your forecast, then press Seal."),
        CheckFailed("Your reason names 1 of the 2 ideas."),
    ):
        lines = error._render_traceback_()
        assert len(lines) == 1 and (str(error) in lines[0]) is not in_a_notebook
