"""Exercise F's answer checks: an imbalanced classifier whose accuracy hides the minority.

The data has about 94% class 0 and 6% class 1 (seed 0: 0.938 and 0.062 of each split).
Before the run: `ex_f_predict` seals when the minority recall leaves 0 and which tracked
number exposes the failure, with a reason. After it: `ex_f_review` (misses are shown, not
failed); `ex_f_minority_precision` and `ex_f_constant_loss`, numbers from the run and the
data; `ex_f_mechanism` (a claim from `CLAIM`, judged exactly; the explanation kept for a person); `ex_f_exact_match`; and `ex_f_transfer`,
another class balance, before that run.
"""

from __future__ import annotations

import math

import torch

from .. import _predict
from .._base import CheckFailed, answer_check, need_one_of
from .._claim import judge_mechanism
from .._words import noted, read_reason
from .claims import CLAIMS, MODEL_ANSWERS
from .rubrics.f import MECHANISM, TRANSFER_REASON

CLAIM = CLAIMS["ex_f"]  # the mechanism's form: print(CLAIM)

METRICS = ("accuracy", "confusion_matrix", "cross_entropy", "minority_recall")
RECALL_LEAVES_ZERO = ("never", "before step 50", "after step 50")
EARLIER = ("later", "about the same", "earlier")  # ex_f_transfer's answer space
FORMS = {
    "recall_leaves_zero": ("choice", RECALL_LEAVES_ZERO),
    "exposing": ("choice", METRICS),
    "why": ("text",),
}


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
        raise CheckFailed(
            "That is the share of the rare class; a model that always says "
            "'majority' is right on every example that is in the majority."
        )
    raise CheckFailed(
        "Count the labels of the most common class and divide by all labels: that "
        "model is right exactly on those examples."
    )


@answer_check
def ex_f_minority_precision(cm, precision: float, minority: int = 1) -> str:
    """Precision of class `minority` read from a confusion matrix (rows true, columns
    predicted): of the examples predicted `minority`, the share that truly are."""
    cm, precision = torch.as_tensor(cm).double(), _number("precision", precision)
    hit = float(cm[minority, minority])
    row, col = float(cm[minority].sum()), float(cm[:, minority].sum())
    if not col:
        raise CheckFailed(
            "No example is predicted as the minority class in this matrix, so its "
            "precision is undefined: pass the final model's matrix."
        )
    expected = hit / col
    if _close(precision, expected):
        return f"ok: minority precision = {hit:.0f} / {col:.0f} = {expected:.3f}"
    if row and _close(precision, hit / row):
        raise CheckFailed(
            "That is recall (a row of true examples); precision divides the hits by "
            "the column of examples predicted as the minority class."
        )
    if _close(precision, float(cm.trace() / cm.sum())):
        raise CheckFailed(
            "That is overall accuracy; precision looks only at the column of "
            "examples predicted as the minority."
        )
    raise CheckFailed(
        "Precision of a class is its diagonal cell divided by its column sum "
        "(columns are predictions); read both cells from the matrix again."
    )


def recall_leaves_zero(run) -> str:
    """When the minority recall first rises above 0, as one of RECALL_LEAVES_ZERO."""
    ev = run.evals
    first = next((s for s, r in zip(ev["step"], ev["val_minority_recall"]) if r > 0), None)
    return "never" if first is None else "before step 50" if first < 50 else "after step 50"


def exposing_metrics(run, cm_early) -> list:
    """The tracked numbers that show the failure at the early checkpoint, from the run."""
    cm = torch.as_tensor(cm_early)
    ev = run.evals
    early = [i for i, s in enumerate(ev["step"]) if s < 50]
    out = []  # the loss falls and accuracy sits on the majority share: neither shows it
    if all(ev["val_minority_recall"][i] == 0 for i in early):
        out.append("minority_recall")
    if int(cm[:, 1].sum()) == 0:
        out.append("confusion_matrix")
    return out


@answer_check
def ex_f_predict(prediction) -> str:
    """Before the run: the three fields of FORMS."""
    return _predict.seal("ex_f", prediction, FORMS)


@answer_check
def ex_f_review(prediction, run, cm_early) -> str:
    """After the run: the sealed prediction against the run and its 50-step checkpoint."""
    truth = {
        "recall_leaves_zero": recall_leaves_zero(run),
        "exposing": exposing_metrics(run, cm_early),
    }
    return _predict.review(
        "ex_f", prediction, truth, [run], same={"exposing": lambda said, actual: said in actual}
    )


@answer_check
def ex_f_mechanism(claim, explanation) -> str:
    """The mechanism as a claim (`CLAIM`, judged exactly) and your explanation (kept
    for a person; the `MECHANISM` rubric's reading comes back as a hint only)."""
    return judge_mechanism(claim, explanation, CLAIM, MECHANISM, MODEL_ANSWERS["ex_f"])


def constant_loss(y_true) -> float:
    """The cross-entropy of the best constant predictor: p(class 1) = its share, everywhere."""
    y = torch.as_tensor(y_true).double().flatten()
    share = float(y.mean())
    return -(share * math.log(share) + (1 - share) * math.log(1 - share))


@answer_check
def ex_f_constant_loss(value, y_true) -> str:
    """The validation loss of a model that ignores the input and predicts the class shares."""
    value = _number("value", value)
    truth = constant_loss(y_true)
    if abs(value - truth) > 0.0005:
        raise CheckFailed(
            "Give every example p(class 1) = the share of class 1 and average "
            "-ln p(true class) over the split: two kinds of example, two terms."
        )
    return f"ok: {truth:.3f} nats, the loss a model reaches by learning the shares alone"


@answer_check
def ex_f_transfer(answer, reason, new_run, run) -> str:
    """Before the run with 20% minority: does its recall leave 0 'later', 'about the same' or
    'earlier' than with the original share?"""
    need_one_of(answer, EARLIER)
    note = read_reason(reason, TRANSFER_REASON)

    def first_nonzero(r):
        ev = r.evals
        return next((s for s, x in zip(ev["step"], ev["val_minority_recall"]) if x > 0), len(r))

    new, old = first_nonzero(new_run), first_nonzero(run)
    truth = "about the same" if abs(new - old) <= 10 else "earlier" if new < old else "later"
    if answer != truth:
        raise CheckFailed(
            f"Not {answer!r}: find the first evaluation with a minority recall "
            "above 0 in each run and compare the two steps."
        )
    return noted(
        f"ok: recall leaves 0 at step {new} against step {old}",
        note,
    )


@answer_check
def ex_f_exact_match(p_token: float, n_tokens: int, value: float) -> str:
    """Chance that all `n_tokens` independent tokens are right, each with chance `p_token`."""
    value, expected = _number("value", value), p_token**n_tokens
    if abs(value - expected) < 1e-4:
        return (
            f"ok: {p_token}^{n_tokens} = {expected:.3f}: high token accuracy, far lower exact match"
        )
    if _close(value, p_token):
        raise CheckFailed(
            "That is the rate for one token; an exact match needs every token right "
            "at once, and chances of independent events multiply."
        )
    raise CheckFailed(
        "An exact match needs all the tokens right at once; multiply the per-token "
        "chances of independent events rather than adding or averaging them."
    )
