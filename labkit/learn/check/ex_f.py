"""Exercise F's answer checks: a 95/5 classifier whose accuracy hides the minority class."""

from __future__ import annotations

import math

import torch

from ...errors import suggest
from ._base import CheckFailed, answer_check

METRICS = ("cross_entropy", "accuracy", "minority_recall", "confusion_matrix")


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CheckFailed(f"{name} must be a finite number; got {value!r}.")
    return float(value)


def _close(a: float, b: float) -> bool:
    return math.isfinite(b) and abs(a - b) < 5e-3


@answer_check
def ex_f_majority_accuracy(accuracy: float, y_true) -> str:
    """The accuracy of a model that always predicts the most common class in `y_true`."""
    accuracy, y = _number("accuracy", accuracy), torch.as_tensor(y_true).long().flatten()
    share = float(torch.bincount(y).max()) / y.numel()
    if _close(accuracy, share):
        return f"ok: always predicting the majority class already scores {share:.3f}"
    if _close(accuracy, 1 - share):
        raise CheckFailed("That is the share of the rare class; a model that always says "
                          "'majority' is right on every example that is in the majority.")
    raise CheckFailed("Count the labels of the most common class and divide by all labels: that "
                      "model is right exactly on those examples.")


@answer_check
def ex_f_minority_recall(cm, recall: float, minority: int = 1) -> str:
    """Recall of class `minority` read from a confusion matrix (rows true, columns predicted)."""
    cm, recall = torch.as_tensor(cm).double(), _number("recall", recall)
    hit, row, col = float(cm[minority, minority]), float(cm[minority].sum()), float(cm[:, minority].sum())
    expected = hit / row if row else math.nan
    if _close(recall, expected):
        return f"ok: minority recall = {hit:.0f} / {row:.0f} = {expected:.3f}"
    if col and _close(recall, hit / col):
        raise CheckFailed("That is precision (a column of predictions); recall divides the hits by "
                          "the row of examples that truly are the minority class.")
    if _close(recall, float(cm.trace() / cm.sum())):
        raise CheckFailed("That is overall accuracy; recall looks only at the row of examples "
                          "whose true class is the minority.")
    raise CheckFailed("Recall of a class is its diagonal cell divided by its row sum (rows are "
                      "true classes); read both cells from the matrix again.")


@answer_check
def ex_f_exposing_metric(answer: str) -> str:
    """Which tracked number shows that the model ignores the minority class?"""
    if answer in ("minority_recall", "confusion_matrix"):
        return f"ok: {answer} counts the minority examples on their own, so it cannot hide them"
    if answer == "accuracy":
        raise CheckFailed("Accuracy here equals the always-majority baseline, so it cannot tell a "
                          "model that ignores class 1 from one that learned it; find a per-class number.")
    if answer == "cross_entropy":
        raise CheckFailed("The loss fell because the model grew surer on the easy majority "
                          "examples that make up 95% of the mean; find a per-class number.")
    raise CheckFailed(f"Answer with one of {', '.join(map(repr, METRICS))}; got {answer!r}."
                      f"{suggest(answer, METRICS)}")


@answer_check
def ex_f_exact_match(p_token: float, n_tokens: int, value: float) -> str:
    """Chance that all `n_tokens` independent tokens are right, each with chance `p_token`."""
    value, expected = _number("value", value), p_token ** n_tokens
    if _close(value, expected):
        return f"ok: {p_token}^{n_tokens} = {expected:.3f}: high token accuracy, far lower exact match"
    if _close(value, p_token):
        raise CheckFailed("That is the rate for one token; an exact match needs every token right "
                          "at once, and chances of independent events multiply.")
    raise CheckFailed("An exact match needs all the tokens right at once; multiply the per-token "
                      "chances of independent events rather than adding or averaging them.")
