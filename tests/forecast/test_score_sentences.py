"""Every sentence of a forecast's score agrees with the numbers it states, for every kind scored.

Issue 54: Lab 15 read a gradient-norm sketch as "gradient norm zero", then scored it "Partly
right: the gradient norm was far off (off by x6257.81 on average)" against a run whose norm
went 0.54 -> 0.98: a ratio to a drawn zero, said as if it were a near miss. Each case below
is scored, and each number and word the verdict states is read back out of it and compared
with the score's own fields and the run's table.
"""

import math
import re

import pytest

import labkit
from labkit.diagnosis.record.strict import grad_shape
from labkit.forecast import Forecast
from labkit.forecast.score import ForecastScore

STEPS = 50


def run_of(**columns) -> labkit.Run:
    table = {"step": list(range(STEPS)), **columns}
    return labkit.Run(table=table, evals={}, meta={}, timing={})


def ramp(a, b, n=STEPS):
    return [a + (b - a) * i / (n - 1) for i in range(n)]


HEALTHY_NORM = ramp(0.5428, 0.9794)  # the run: 0.54 -> 0.98
CASES = {
    "loss, descending, close": ("loss_raw", [[0, 2.3], [25, 1.7], [49, 1.1]], None, ramp(2.3, 1.1)),
    "loss, flat drawn, descending run": ("loss_raw", [[0, 2.3], [49, 2.3]], None, ramp(2.3, 1.1)),
    "loss, NaN drawn, NaN run": (
        "loss_raw",
        [[0, 2.3], [20, 2.6]],
        25,
        ramp(2.3, 3.0)[:30] + [math.nan] * 20,
    ),
    "grad_norm, zero drawn, steady run": (
        "grad_norm",
        [[0, 0.0004], [25, 0.0004], [49, 0.0004]],
        None,
        HEALTHY_NORM,
    ),
    "grad_norm, steady drawn, steady run": (
        "grad_norm",
        [[0, 0.5], [25, 0.6], [49, 0.7]],
        None,
        HEALTHY_NORM,
    ),
    "grad_norm, steady drawn, collapsing run": (
        "grad_norm",
        [[0, 0.5], [49, 0.5]],
        None,
        ramp(0.5, 0.0, 25) + [0.0] * 25,
    ),
    "grad_norm, growing drawn, NaN run": (
        "grad_norm",
        [[0, 0.5], [10, 2.0], [20, 20.0]],
        25,
        [0.5 * 1.3**i for i in range(25)] + [math.inf] * 25,
    ),
    "update_norm, steady drawn, growing run": (
        "update_norm",
        [[0, 0.01], [49, 0.01]],
        None,
        ramp(0.01, 0.05),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_verdict_states_the_scores_own_numbers(case):
    column, points, nan_step, values = CASES[case]
    loss = values if column == "loss_raw" else ramp(2.3, 1.1)
    run = run_of(**{"loss_raw": loss, column: values})
    forecast = Forecast(points, nan_step=nan_step)
    score = ForecastScore.compare(forecast, run, column)
    said = score.verdict

    ratio = re.search(r"off by x([\d.]+) on average", said)
    if ratio:
        assert score.mean_log_error is not None
        assert ratio.group(1) == f"{math.exp(score.mean_log_error):.2f}"
    went = re.search(r"went ([\d.e+-]+) -> ([\d.e+-]+)", said)
    finite = [v for v in run.table[column] if math.isfinite(v)]
    if column != "loss_raw":  # a norm's sentence says its run's first and last values
        assert went, said
        assert went.groups() == (f"{finite[0]:.4g}", f"{finite[-1]:.4g}")
    shape = re.search(
        r"the shape '(\w+)' was right|you expected '(\w+)' but the run was '(\w+)'", said
    )
    assert shape, said
    if shape.group(1):
        assert score.shape_predicted == score.shape_actual == shape.group(1)
    else:
        assert (score.shape_predicted, score.shape_actual) == shape.group(2, 3)
    came = re.search(r"NaN at step (\d+)|it came at step (\d+)", said)
    if score.nan_actual is None:
        assert "both stayed finite" in said or "never came" in said
    else:
        assert came and int(came.group(1) or came.group(2)) == score.nan_actual
    if column != "loss_raw":  # the record reads the sketch with the same word as the score
        assert grad_shape(forecast) == score.shape_predicted
    drew_zero = "at zero (below" in said
    assert drew_zero == (score.shape_predicted == "zero" != score.shape_actual)
    head = said.split(":")[0]
    right = (
        (not drew_zero and "collapsed to zero" not in said)
        * (score.mean_log_error is None or score.mean_log_error < 0.1)
        + score.nan_hit
        + score.shape_match
    )
    assert head == {3: "A good forecast", 2: "Partly right", 1: "Mostly wrong", 0: "A miss"}[right]


def test_a_norm_drawn_at_zero_is_said_as_zero_not_as_a_ratio():
    run = run_of(loss_raw=ramp(2.3, 1.1), grad_norm=HEALTHY_NORM)
    score = ForecastScore.compare(Forecast([[0, 0.0004], [49, 0.0004]]), run, "grad_norm")
    assert "off by" not in score.verdict
    assert (
        "you drew the gradient norm at zero (below 0.001), but the run's went 0.5428 -> 0.9794"
        in (score.verdict)
    )
    assert (score.shape_predicted, score.shape_actual) == ("zero", "steady")
    assert score.verdict.startswith("Mostly wrong")  # only "both stayed finite" was right
