"""Exercise F's checks teach on wrong answers, and the solution still passes them on seed 1."""


import pytest
import torch

from labkit.check import CheckFailed
from labkit.check.ex_f import (ex_f_exact_match, ex_f_exposing_metric, ex_f_majority_accuracy,
                               ex_f_minority_recall)
from helpers import run_solution

pytestmark = pytest.mark.ex_f

Y_95_5 = torch.tensor([0] * 95 + [1] * 5)
CM = torch.tensor([[90, 5], [3, 2]])  # rows true, columns predicted: recall 2/5, precision 2/7


def test_majority_accuracy_is_the_majority_share():
    assert ex_f_majority_accuracy(0.95, Y_95_5) == "ok: always predicting the majority class already scores 0.950"
    with pytest.raises(CheckFailed, match="share of the rare class"):
        ex_f_majority_accuracy(0.05, Y_95_5)
    with pytest.raises(CheckFailed, match="Count the labels of the most common class"):
        ex_f_majority_accuracy(0.5, Y_95_5)


def test_minority_recall_is_the_row_not_the_column():
    assert ex_f_minority_recall(CM, 0.4) == "ok: minority recall = 2 / 5 = 0.400"
    with pytest.raises(CheckFailed, match="That is precision"):
        ex_f_minority_recall(CM, 2 / 7)
    with pytest.raises(CheckFailed, match="That is overall accuracy"):
        ex_f_minority_recall(CM, 0.92)
    with pytest.raises(CheckFailed, match="diagonal cell divided by its row sum"):
        ex_f_minority_recall(CM, 0.7)
    assert ex_f_minority_recall([[480, 0], [32, 0]], 0.0).startswith("ok")  # no minority predicted


def test_exposing_metric_refuses_the_averages_with_a_reason():
    assert ex_f_exposing_metric("minority_recall").startswith("ok")
    assert ex_f_exposing_metric("confusion_matrix").startswith("ok")
    with pytest.raises(CheckFailed, match="always-majority baseline"):
        ex_f_exposing_metric("accuracy")
    with pytest.raises(CheckFailed, match="easy majority examples"):
        ex_f_exposing_metric("cross_entropy")
    with pytest.raises(CheckFailed, match="Did you mean 'minority_recall'"):
        ex_f_exposing_metric("minority recall")


def test_exact_match_multiplies_per_token_chances():
    assert ex_f_exact_match(0.95, 10, 0.95 ** 10).startswith("ok: 0.95^10 = 0.599")
    with pytest.raises(CheckFailed, match="rate for one token"):
        ex_f_exact_match(0.95, 10, 0.95)
    with pytest.raises(CheckFailed, match="multiply the per-token chances"):
        ex_f_exact_match(0.95, 10, 0.5)


def test_solution_runs_on_seed_1_and_passes_its_checks(tmp_path):
    text = run_solution("ex_f_loss_metric_mismatch", tmp_path, seed=1)
    assert sum(line.startswith("ok: ") for line in text.splitlines()) == 4, text[-2000:]
    assert "ok: minority recall = 0 / " in text  # the 50-step checkpoint ignores class 1 on seed 1 too
    assert "ok: 0.95^10 = 0.599" in text
