"""Exercise C's checks: roles predicted before the sweep, and questions no output answers."""

import pytest

import labkit
from labkit.check._base import CheckFailed
from labkit.check.ex_c import (
    ex_c_predict,
    ex_c_review,
    ex_c_transfer,
    ex_c_uphill_lr,
    ex_c_update_ratio,
    roles_of,
)
from labkit.probes import lr_sweep
from helpers import one_sentence, run_solution, misjudged

pytestmark = pytest.mark.ex_c
LRS = [1e-6, 1e-4, 1e-2, 1, 30]
RIGHT = {1e-6: "too small", 1e-4: "too small", 1e-2: "slow", 1: "best", 30: "too large"}


@pytest.fixture(scope="module")
def runs():
    return {lr: labkit.train(lr=lr, seed=0) for lr in LRS}


def test_roles_are_measured_from_the_runs(runs):
    assert roles_of(runs) == RIGHT


def test_prediction_needs_every_lr_and_one_best():
    with pytest.raises(CheckFailed, match="one entry for each of"):
        ex_c_predict({"roles": {1: "best"}, "why": "the largest step overshoots the curvature"})
    with pytest.raises(CheckFailed, match="must be one of.*got 'huge'"):
        ex_c_predict(
            {"roles": {**RIGHT, 30: "huge"}, "why": "the largest step overshoots the curvature"}
        )
    with pytest.raises(CheckFailed, match="exactly one LR 'best'"):
        ex_c_predict(
            {"roles": {**RIGHT, 1e-2: "best"}, "why": "the largest step overshoots the curvature"}
        )


def test_a_wrong_role_is_a_miss_in_the_review_not_a_failure(runs):
    prediction = {
        "roles": {**RIGHT, 1e-2: "too small"},
        "why": "small steps make the loss fall slowly",
    }
    ex_c_predict(prediction)
    fresh = {lr: labkit.train(lr=lr, seed=0) for lr in LRS}
    text = ex_c_review(prediction, fresh)
    assert text.startswith("ok: 0 of 1 predictions hit") and "miss" in text


def test_update_ratio_is_read_from_row_0(runs):
    ratios = {lr: r.table["update_norm"][0] / r.table["grad_norm"][0] for lr, r in runs.items()}
    assert ex_c_update_ratio(ratios, runs).startswith("ok")
    with pytest.raises(CheckFailed, match="lr=1e-06.*row 0 of run.table") as info:
        ex_c_update_ratio({**ratios, 1e-6: 1e-6 * 1.01}, runs)
    assert one_sentence(str(info.value))


def test_uphill_lr_solves_the_quadratic():
    assert ex_c_uphill_lr(27.0, 0.114, 0.0084).startswith("ok: above lr = 27")
    with pytest.raises(CheckFailed, match="solve for lr"):
        ex_c_uphill_lr(13.6, 0.114, 0.0084)


def test_transfer_x10_from_the_best_run_blows_up():
    trainer = labkit.Trainer(lr=1.0)
    trainer.run(steps=100)
    sweep = lr_sweep(trainer.ctx.model, [trainer.batch(i) for i in range(100, 110)], lr=1.0)
    reason = "past the stable limit that the curvature sets"
    assert ex_c_transfer("blows up", reason, sweep).startswith("ok: x10 blows up")
    with pytest.raises(CheckFailed, match="compare them with the x1 arm") as info:
        ex_c_transfer("falls faster", reason, sweep)
    assert "blows up" not in str(info.value)
    with pytest.raises(CheckFailed, match="Answer with one of"):
        ex_c_transfer("explodes", reason, sweep)
    assert not misjudged("ex_c_transfer", lambda c, r: ex_c_transfer(*c, r, sweep))


@pytest.mark.slow
@pytest.mark.chaotic  # the solution's lr=30 run blows up
def test_solution_passes_its_checks_on_another_seed(tmp_path):
    text = run_solution("ex_c_learning_rate_sweep", tmp_path, seed=1)
    assert "lr=30: first non-finite loss between steps 4 and 12: True" in text
    assert text.count("ok: ") >= 6
