"""Lab 15's checks teach on wrong answers without giving the answer, and the solution solves
mysteries A, B, C and D under papermill."""

import time

import pytest

from labkit import Forecast, check
from labkit.diagnosis import lab15
from labkit.diagnosis.triage import TriageRecord
from helpers import run_solution

pytestmark = pytest.mark.lab15


def sealed(points, nan=None):
    cfg = lab15.config("C")
    return {h: Forecast(p, nan_step=(nan or {}).get(h)).seal(cfg) for h, p in points.items()}


def test_predictions_need_three_sealed_sketches_no_two_alike():
    flat, falls = [[0, 2.3], [49, 2.3]], [[0, 2.3], [49, 1.2]]
    steady, zero = [[0, 0.5], [49, 0.5]], [[0, 0.5], [10, 1e-4], [49, 1e-4]]
    loss = sealed({"H1": flat, "H2": flat, "H3": falls})
    # mystery C's right answer: two flat losses, told apart by the gradient norm
    assert check.lab15_predictions(loss, sealed({"H1": zero, "H2": steady, "H3": steady})).startswith("ok")
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
        check.lab15_conviction("A", rec)
    plain = TriageRecord("x")
    plain.convict("H3", "a guess with no rows behind it")
    with pytest.raises(check.CheckFailed, match="needs its strict record"):
        check.lab15_conviction("A", plain)


@pytest.mark.slow
@pytest.mark.parametrize("mystery", ["A", "B", "C", "D"])
def test_solution_solves_every_mystery_under_papermill(tmp_path, mystery):
    t0 = time.perf_counter()
    text = run_solution("lab15_one_variable_intervention", tmp_path, mystery=mystery)
    took = time.perf_counter() - t0
    assert "ok: CONVICTION: H" in text and "(conviction attempt 1 on this record)" in text
    assert text.count("MET;") >= 2 and "NOT met" not in text  # intervention and confirmation
    assert "refused: an intervention must change one variable" in text
    assert "refused: the baseline already meets" in text
    assert "refused: this run is not the declared setup" in text
    assert took <= 60, f"mystery {mystery} took {took:.0f} s"
    if mystery == "D":
        assert "first non-finite grad_norm at step" in text
        assert "lr x0.1: FORECAST not met; NaN from step" in text


def test_an_unsealed_sketch_is_not_yet_answered():
    from labkit.widgets import SketchForecast
    cfg = lab15.config("A")
    widget = SketchForecast(config=cfg, series={"H1": None, "H2": None, "H3": None}, key="lab15")
    with pytest.raises(check.NotYetAnswered, match="not sealed yet"):
        check.lab15_predictions(widget, widget)
