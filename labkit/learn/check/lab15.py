"""Lab 15's answer checks: predictions, a checkable FORECAST, and the conviction."""

from __future__ import annotations

import re

from ...diagnosis.triage import Prediction, TriageRecord, TriageRefused
from ._base import CheckFailed, NotYetAnswered, answer_check

SHAPES = ("flat", "descending", "nan")


@answer_check
def lab15_predictions(predictions: dict) -> str:
    """Three hypotheses, three different drawn curves: flat, descending, NaN-with-gradient-record."""
    if not isinstance(predictions, dict) or set(predictions) != {"H1", "H2", "H3"}:
        raise CheckFailed("Write one prediction per hypothesis: a dict with keys 'H1', 'H2' and "
                          f"'H3'; got {sorted(predictions) if isinstance(predictions, dict) else predictions!r}.")
    shapes = {k: (re.match(r"\s*([A-Za-z]*)", str(v)).group(1).lower()) for k, v in predictions.items()}
    unknown = {k: s for k, s in shapes.items() if s not in SHAPES}
    if unknown:
        raise CheckFailed(f"Start each prediction with one of {', '.join(SHAPES)} (then say why); "
                          f"these do not: {unknown}.")
    if len(set(shapes.values())) < 3:
        raise CheckFailed("Two hypotheses predict the same curve, so no run could tell them apart. "
                          "A prediction is useful only if it differs from the others.")
    return "ok: three hypotheses, three distinguishable curves"


@answer_check
def lab15_forecast(text: str) -> str:
    """A FORECAST must be quantitative: a column, a threshold and a step."""
    try:
        Prediction(text)
    except ValueError as exc:
        raise CheckFailed(f"{exc} A forecast the run can fail is the point: name a number and a "
                          "step.") from None
    return f"ok: {text!r} can be checked against a run"


@answer_check
def lab15_conviction(mystery: str, record: TriageRecord) -> str:
    """The record gives a verdict and it names the right system."""
    from ...diagnosis.lab15 import truth
    if not record.rows["conviction"]["data"].get("system"):
        raise NotYetAnswered("The record has no conviction yet: fill its rows in order, then "
                             "call record.convict(system, mechanism).")
    try:
        line = record.verdict()
    except TriageRefused as exc:
        raise CheckFailed(f"The record refuses a verdict: {exc} Fill the missing rows first.") from None
    system = record.rows["conviction"]["data"]["system"]
    expected = truth(mystery)
    if system != expected:
        hints = {"H3": "check raw against reported before anything else",
                 "H2": "run the overfit probe and the label-shuffle control",
                 "H1": "read gradient and update norms per step and the LR column"}
        raise CheckFailed(f"You convicted {system}, but the evidence does not support it. Go back "
                          f"over the rows in order: {hints[expected]}.")
    return f"ok: {line}"
