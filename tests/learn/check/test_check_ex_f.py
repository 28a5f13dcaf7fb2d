"""Exercise F's checks: predictions before the run, numbers from it, and another balance."""

import math

import pytest
import torch

import labkit
from labkit.check._base import CheckFailed
from labkit.check.ex_f import (
    constant_loss,
    ex_f_constant_loss,
    ex_f_exact_match,
    ex_f_majority_accuracy,
    ex_f_minority_precision,
    ex_f_predict,
    ex_f_review,
    ex_f_transfer,
    recall_leaves_zero,
)
from labkit.core import data as datasets
from labkit.core.metrics import model_confusion
from labkit.core.seams import Seams
from helpers import one_sentence, run_solution, misjudged

pytestmark = pytest.mark.ex_f
CONFIG = labkit.Config(dataset="imbalanced", n_classes=2, eval_every=10)


@pytest.fixture(scope="module")
def run_and_cm():
    trainer = labkit.Trainer(CONFIG)
    trainer.run(steps=50)
    val = trainer.ctx.data.val
    cm_early = model_confusion(trainer.ctx.model, val["x"], val["y"], 2)
    return trainer.run(), cm_early


def test_the_shares_are_the_printed_ones():
    y = labkit.make_imbalanced(seed=0).val["y"]
    assert round(float(y.float().mean()), 3) == 0.062
    assert ex_f_majority_accuracy(0.9375, y).startswith(
        "ok: always predicting the majority class already scores 0.938"
    )


def test_review_shows_a_miss_and_accepts_either_exposing_number(run_and_cm):
    run, cm = run_and_cm
    assert recall_leaves_zero(run) == "after step 50"
    prediction = {
        "recall_leaves_zero": "before step 50",
        "exposing": "confusion_matrix",
        "why": "a guess about the loss of each run",
    }
    ex_f_predict(prediction)
    fresh = labkit.train(CONFIG)
    text = ex_f_review(prediction, fresh, cm)
    assert text.startswith("ok: 1 of 2 predictions hit")
    assert (
        "recall_leaves_zero: you predicted 'before step 50'; the run shows 'after step 50'" in text
    )


def test_precision_is_a_column_and_recall_is_refused():
    cm = torch.tensor([[473, 7], [23, 9]])
    assert ex_f_minority_precision(cm, 9 / 16).startswith("ok: minority precision = 9 / 16")
    with pytest.raises(CheckFailed, match="That is recall") as info:
        ex_f_minority_precision(cm, 9 / 32)
    assert one_sentence(str(info.value))
    with pytest.raises(CheckFailed, match="undefined"):
        ex_f_minority_precision(torch.tensor([[480, 0], [32, 0]]), 0.0)


def test_constant_loss_is_the_entropy_of_the_shares():
    y = labkit.make_imbalanced(seed=0).val["y"]
    truth = constant_loss(y)
    assert abs(truth - 0.2338) < 1e-3
    assert ex_f_constant_loss(truth, y).startswith("ok: 0.234")
    for wrong in (math.log(2), 0.062, 0.938):
        with pytest.raises(CheckFailed, match="two terms"):
            ex_f_constant_loss(wrong, y)


def test_mechanism_and_exact_match():
    assert ex_f_exact_match(0.95, 10, 0.95**10).startswith("ok")


def test_transfer_to_twenty_percent(run_and_cm):
    run, _ = run_and_cm
    balanced = labkit.train(
        CONFIG,
        seams=Seams().replace(
            data=lambda c: datasets.load("imbalanced", seed=c.seed, minority=0.2)
        ),
    )
    reason = "the minority gets a larger share of the loss"
    assert ex_f_transfer("earlier", reason, balanced, run).startswith("ok: recall leaves 0 at")
    with pytest.raises(CheckFailed, match="compare the two steps") as info:
        ex_f_transfer("later", reason, balanced, run)
    assert "earlier" not in str(info.value)
    assert not misjudged("ex_f_transfer", lambda c, r: ex_f_transfer(*c, r, balanced, run))


@pytest.mark.slow
def test_solution_passes_its_own_checks_on_another_seed(tmp_path):
    text = run_solution("ex_f_loss_metric_mismatch", tmp_path, seed=1)
    assert "predictions hit" in text and text.count("ok: ") >= 6
