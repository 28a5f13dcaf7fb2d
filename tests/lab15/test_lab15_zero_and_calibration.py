"""Lab 15's gradient-norm chart can say "zero", and the calibration record counts forecasts,
not drawings: loss apart from gradient norm, a set of hypotheses as one forecast, a redraw
of a question already answered once."""

import pytest

import labkit
from labkit import check
from labkit.diagnosis import lab15
from labkit.diagnosis.record import strict
from labkit.forecast.calibration import calibration_report
from labkit.forecast.history import ForecastHistory
from labkit.widgets import SketchForecast

pytestmark = pytest.mark.lab15
HYPOTHESES = {"H1": None, "H2": None, "H3": None}


def _lab15_sketches(store, grad_h1):
    cfg = lab15.config("A")
    loss = SketchForecast(
        config=cfg,
        series=HYPOTHESES,
        key="lab15",
        history_path=store,
        points={
            "H1": [[0, 2.3], [49, 2.3]],
            "H2": [[0, 2.3], [49, 2.3]],
            "H3": [[0, 2.3], [49, 1.2]],
        },
    )
    grad = SketchForecast(
        config=cfg,
        series=HYPOTHESES,
        key="lab15",
        quantity="grad_norm",
        log_scale=True,
        history_path=store,
        points={"H1": grad_h1, "H2": [[0, 0.5], [49, 0.5]], "H3": [[0, 0.5], [49, 0.6]]},
    )
    return loss.require(), grad.require()


def test_h1_drawn_at_the_floor_of_the_gradient_norm_chart_reads_as_zero(tmp_path):
    widget = SketchForecast(
        config=lab15.config("A"),
        series=HYPOTHESES,
        key="lab15",
        quantity="grad_norm",
        log_scale=True,
        history_path=tmp_path / "s.sqlite3",
    )
    assert widget.zero_below == strict.ZERO_NORM  # the shaded band the chart shows
    floor = widget.zero_below / 10  # the chart's bottom edge (sketch.js: scales)
    assert floor < strict.ZERO_NORM < widget.loss_max / 1000  # the old floor sat above zero
    loss, grad = _lab15_sketches(tmp_path / "s.sqlite3", [[0, floor], [49, floor]])
    assert strict.grad_shape(grad.forecasts()["H1"]) == "zero"
    said = check.lab15_predictions(loss, grad)  # H1 and H2 both flat in loss: told apart now
    assert (
        "H1: loss flat, gradient norm zero" in said
        and "H2: loss flat, gradient norm steady" in said
    )


def test_gradient_norm_sketches_and_alternative_hypotheses_stay_out_of_the_loss_record(tmp_path):
    store = tmp_path / "s.sqlite3"
    loss, grad = _lab15_sketches(store, [[0, 1e-4], [49, 1e-4]])
    baseline = lab15.run_mystery("A")
    loss.score(dict.fromkeys(HYPOTHESES, baseline), show=False)
    grad.score(dict.fromkeys(HYPOTHESES, baseline), show=False)
    report = ForecastHistory(store).report()
    assert report["n_entries"] == 6
    assert report["by_exercise"]["lab15"]["n"] == 1  # the supported hypothesis, as one forecast
    assert report["gradient_norm"]["lab15"]["n"] == 1
    assert report["alternatives"] == 4
    assert "gradient norm" in report["text"] and "alternative hypothesis" in report["text"]
    best = min(
        ("H1", "H2", "H3"),
        key=lambda h: ForecastHistory(store).entries()[["H1", "H2", "H3"].index(h)]["score"][
            "mean_log_error"
        ],
    )
    assert best == "H3"  # mystery A's raw loss falls, as H3 drew it


def test_a_redraw_of_the_same_question_counts_once(tmp_path):
    cfg = labkit.Config(steps=40)
    entries = []
    for level in (2.3, 0.2):  # sealed, scored; then drawn again after a restart, scored again
        sketch = SketchForecast(
            config=cfg,
            bug="zero_lr",
            key="ex_z",
            points=[[0, 2.3], [39, level]],
            history_path=tmp_path / f"s{level}.sqlite3",
        )
        sketch.require()
        sketch.score(labkit.train(config=cfg, bug="zero_lr"), show=False)
        entries += sketch.history.entries()
    report = calibration_report(entries)
    assert report["n_entries"] == 2 and report["n_scored"] == 1
    assert report["by_exercise"]["ex_z"]["mean_log_error"] < 0.05  # the first answer counts
