"""Exercise D's checks teach on wrong answers, and the solution passes them on another seed."""


import pytest

import labkit
from labkit.check._base import CheckFailed
from labkit.check.ex_d import ex_d_cause, ex_d_eval_vs_no_grad, ex_d_ordering
from helpers import run_solution

pytestmark = pytest.mark.ex_d


@pytest.fixture(scope="module")
def runs():
    config = labkit.Config(dropout=0.5, epochs=20, eval_every=16, seed=0)
    return labkit.train(config), labkit.train(config.replace(dropout=0.0))


@pytest.mark.parametrize("ordering", ["online > train_eval ≈ val", "online>val~train_eval",
                                      "val_loss = train_eval_loss < online"])
def test_right_ordering_passes_in_any_spelling(runs, ordering):
    assert ex_d_ordering(ordering, runs[0]).startswith("ok")


def test_control_without_dropout_has_all_three_close(runs):
    assert ex_d_ordering("online ≈ train_eval ≈ val", runs[1]).startswith("ok")


@pytest.mark.parametrize("ordering, words", [
    ("online ≈ train_eval ≈ val", r"does not match the last evaluation \(online 0\.\d+, "
                                  r"train_eval 0\.\d+, val 0\.\d+\): use '>' for losses more"),
    ("online > val > train_eval", "does not match the last evaluation"),
    ("online > val", "Write each of online, train_eval and val once"),
    ("online > train_eval < val", "Write each of online, train_eval and val once"),
])
def test_wrong_ordering_shows_the_numbers_and_the_rule(runs, ordering, words):
    with pytest.raises(CheckFailed, match=words):
        ex_d_ordering(ordering, runs[0])


def test_cause_is_dropout_and_the_control_says_why(runs):
    run, control = runs
    assert ex_d_cause("dropout", run, control).startswith("ok: dropout")
    with pytest.raises(CheckFailed, match=r"Not 'split': train_eval \(0\.\d+\) and val .* agree"):
        ex_d_cause("split", run, control)
    with pytest.raises(CheckFailed, match="Not 'timing': the dropout=0 control measures timing"):
        ex_d_cause("timing", run, control)
    with pytest.raises(CheckFailed, match="cause must be one of"):
        ex_d_cause("overfitting", run, control)
    # With the control in the role of the run, no dropout: what is left is timing, not dropout.
    with pytest.raises(CheckFailed, match="Not 'dropout': the dropout=0 control has about the same"):
        ex_d_cause("dropout", control, control)


def test_eval_and_no_grad_are_different_switches():
    assert ex_d_eval_vs_no_grad(True, True).startswith("ok")
    with pytest.raises(CheckFailed, match="no_grad\\(\\) does not touch model.training"):
        ex_d_eval_vs_no_grad(False, True)
    with pytest.raises(CheckFailed, match="eval\\(\\) changes dropout, not autograd"):
        ex_d_eval_vs_no_grad(True, False)


def test_solution_passes_its_checks_on_another_seed(tmp_path):
    text = run_solution("ex_d_validation_below_training", tmp_path, seed=1)
    assert text.count("ok: ") == 4
    assert "ok: dropout (online - train_eval" in text
