"""Lab 15's checks teach on wrong answers without giving the answer, and the solution solves
mysteries A, B, C and D under papermill."""

import pytest

from labkit import Forecast, check
from labkit.diagnosis import lab15
from labkit.diagnosis.record.triage import TriageRecord
from helpers import printed, run_solution

pytestmark = pytest.mark.lab15


def sealed(points, nan=None):
    cfg = lab15.config("C")
    return {h: Forecast(p, nan_step=(nan or {}).get(h)).seal(cfg) for h, p in points.items()}


def test_predictions_need_three_sealed_sketches_no_two_alike():
    flat, falls = [[0, 2.3], [49, 2.3]], [[0, 2.3], [49, 1.2]]
    steady, zero = [[0, 0.5], [49, 0.5]], [[0, 0.5], [10, 1e-4], [49, 1e-4]]
    loss = sealed({"H1": flat, "H2": flat, "H3": falls})
    # mystery C's right answer: two flat losses, told apart by the gradient norm
    assert check.lab15_predictions(
        loss, sealed({"H1": zero, "H2": steady, "H3": steady})
    ).startswith("ok")
    with pytest.raises(check.CheckFailed, match="H1 and H2 predict the same curves"):
        check.lab15_predictions(loss, sealed({"H1": steady, "H2": steady, "H3": steady}))
    with pytest.raises(check.CheckFailed, match="has no H3 series"):
        check.lab15_predictions(sealed({"H1": flat, "H2": falls}), loss)
    with pytest.raises(check.CheckFailed, match="expected a SketchForecast"):
        check.lab15_predictions("flat, descending, nan", loss)


def test_forecast_must_be_checkable():
    assert check.lab15_forecast("loss < 1.5 by step 45").startswith("ok")
    with pytest.raises(check.CheckFailed, match="name a number and a step"):
        check.lab15_forecast("it will get better")


def test_the_conviction_needs_a_strict_filled_record():
    rec = TriageRecord("x", strict=True)
    with pytest.raises(check.NotYetAnswered, match="no conviction yet"):
        check.lab15_conviction("A", rec, "stale log")
    plain = TriageRecord("x")
    plain.convict("H3", "a guess with no rows behind it")
    with pytest.raises(check.CheckFailed, match="needs its strict record"):
        check.lab15_conviction("A", plain, "stale log")


SOLVED = (
    "ok: CONVICTION: H",
    "(conviction attempt 1 on this record)",
    "refused: an intervention must change one variable",
    "refused: the baseline already meets",
    "refused: this run is not the declared setup",
)


def assert_solved(text):
    assert all(words in text for words in SOLVED), [w for w in SOLVED if w not in text]
    assert text.count("MET;") >= 2 and "NOT met" not in text  # intervention and confirmation


def test_solution_solves_mystery_a_in_the_cells_nbval_checks():
    """Mystery A is the solution's own parameter, so nbval already executes it on both passes
    and compares every cell tagged nbval-check-output with the committed output. This reads
    those checked outputs instead of executing the notebook a second time."""
    import nbformat
    from pathlib import Path

    nb = nbformat.read(
        Path(__file__).resolve().parents[2] / "solutions" / "lab15_one_variable_intervention.ipynb",
        as_version=4,
    )
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert params.source.startswith('mystery = "A"')
    checked = [
        c
        for c in nb.cells
        if c.cell_type == "code" and "nbval-check-output" in c.metadata.get("tags", [])
    ]
    assert_solved(printed(nbformat.v4.new_notebook(cells=checked)))


@pytest.mark.slow
@pytest.mark.parametrize("mystery", ["B", "C", "D"])
def test_solution_solves_every_other_mystery_under_papermill(tmp_path, mystery):
    text = run_solution("lab15_one_variable_intervention", tmp_path, mystery=mystery)
    assert_solved(text)
    if mystery == "D":
        assert "first non-finite grad_norm at step" in text
        assert "lr x0.1: FORECAST not met; NaN from step" in text


def test_an_unsealed_sketch_is_not_yet_answered():
    from labkit.widgets import SketchForecast

    cfg = lab15.config("A")
    widget = SketchForecast(config=cfg, series={"H1": None, "H2": None, "H3": None}, key="lab15")
    with pytest.raises(check.NotYetAnswered, match="not sealed yet"):
        check.lab15_predictions(widget, widget)
