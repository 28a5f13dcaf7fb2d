"""Exercise D's checks: orderings and switches predicted first; questions no output answers."""

import pytest

import labkit
from labkit.check._base import CheckFailed
from labkit.check.ex_d import (
    ex_d_first_gap,
    ex_d_predict,
    ex_d_review,
    ex_d_transfer,
    ordering_of,
    three_at,
)
from helpers import one_sentence, run_solution, misjudged

pytestmark = pytest.mark.ex_d
CONFIG = labkit.Config(dropout=0.5, epochs=20, eval_every=16)
SEEN = {
    ("train", "no_grad"): {"dropout active": True},
    ("eval", "grad on"): {"graph recorded": True},
}
RIGHT = {
    "dropout_run": "online > train_eval ≈ val",
    "control_run": "val ≈ train_eval ≈ online",
    "cause": "dropout",
    "dropout_under_no_grad": True,
    "graph_under_eval": True,
    "why": "dropout only handicaps the train()-mode number.",
}


@pytest.fixture(scope="module")
def runs():
    return {d: labkit.train(CONFIG.replace(dropout=d)) for d in (0.5, 0.0, 0.2)}


def test_orderings_are_measured(runs):
    assert ordering_of(runs[0.5]) == "online > train_eval ≈ val"
    assert ordering_of(runs[0.0]) == "online ≈ train_eval ≈ val"


def test_review_accepts_any_spelling_of_an_ordering_and_shows_misses(runs):
    wrong = {**RIGHT, "cause": "split", "graph_under_eval": False}
    ex_d_predict(wrong)
    fresh = [labkit.train(CONFIG), labkit.train(CONFIG.replace(dropout=0.0))]
    text = ex_d_review(wrong, *fresh, SEEN)
    assert text.startswith("ok: 3 of 5 predictions hit")
    assert "control_run: you predicted 'val ≈ train_eval ≈ online'" in text
    assert "cause: you predicted 'split'; the run shows 'dropout': miss" in text


def test_a_malformed_ordering_is_refused_before_sealing():
    with pytest.raises(CheckFailed, match="Write each of online, train_eval and val once"):
        ex_d_predict({**RIGHT, "dropout_run": "online > val"})


def test_first_gap_is_computed_from_the_control(runs):
    first = three_at(runs[0.0], 0)
    gap = first["online"] - first["train_eval"]
    assert ex_d_first_gap(gap, runs[0.0]).startswith(f"ok: {gap:.3f} at epoch 1")
    with pytest.raises(CheckFailed, match="in that order") as info:
        ex_d_first_gap(-gap, runs[0.0])
    assert one_sentence(str(info.value))


def test_transfer_to_dropout_02(runs):
    reason = "fewer units are dropped"
    assert ex_d_transfer("smaller", reason, runs[0.2], runs[0.5]).startswith("ok: the gap is")
    with pytest.raises(CheckFailed, match="compare the two gaps") as info:
        ex_d_transfer("larger", reason, runs[0.2], runs[0.5])
    assert "smaller" not in str(info.value)
    said = ex_d_transfer("smaller", "the dropout rate is lower", runs[0.2], runs[0.5])
    assert said.startswith("ok") and "does not yet say how the share" in said
    assert not misjudged("ex_d_transfer", lambda c, r: ex_d_transfer(*c, r, runs[0.2], runs[0.5]))


@pytest.mark.slow
def test_solution_passes_its_own_checks_on_another_seed(tmp_path):
    text = run_solution("ex_d_validation_below_training", tmp_path, seed=1)
    assert "ok: 5 of 5 predictions hit" in text or "predictions hit" in text
    assert text.count("ok: ") >= 5
