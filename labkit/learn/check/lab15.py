"""Lab 15's answer checks: three distinct hypothesis sketches, a checkable FORECAST, and the
conviction, judged on its system, on its mechanism's key terms, and on no phrase that reverses
the mechanism (`lab15_reading`). The answers are compared as salted hashes
(`labkit.diagnosis.lab15`); no check prints one."""

from __future__ import annotations

from ...diagnosis import lab15 as mysteries
from ...diagnosis.record import strict
from ...diagnosis.record.triage import Prediction, TriageRecord, TriageRefused
from ._base import CheckFailed, NotYetAnswered, answer_check
from .lab15_reading import reverses

HINTS = {  # where to look again, by the system convicted (not by the answer)
    "H3": "did raw and reported agree over the baseline, step by step?",
    "H2": "did the overfit probe reach ~0, and did shuffled labels change anything?",
    "H1": "read the lr column, the gradient norms and any NaN step of the baseline again",
}


@answer_check
def lab15_predictions(loss_sketch, grad_norm_sketch) -> str:
    """Three sealed sketches per quantity, H1/H2/H3, no two alike in loss and norm shape."""
    try:
        shapes = strict.predictions(loss_sketch, grad_norm_sketch)
    except TriageRefused as exc:
        said = f"{str(exc)[0].upper()}{str(exc)[1:]}"
        raise (NotYetAnswered if "not sealed" in said else CheckFailed)(said) from None
    except TypeError as exc:
        raise CheckFailed(str(exc)) from None
    said = "; ".join(
        f"{h}: loss {s['loss']}, gradient norm {s['grad_norm']}" for h, s in shapes.items()
    )
    return f"ok: three sealed, distinguishable predictions ({said})"


@answer_check
def lab15_forecast(text: str) -> str:
    """A FORECAST must be quantitative: a column, a threshold and a step."""
    try:
        Prediction(text)
    except ValueError as exc:
        raise CheckFailed(
            f"{exc} A forecast the run can fail is the point: name a number and a step."
        ) from None
    return f"ok: {text!r} can be checked against a run"


@answer_check
def lab15_conviction(mystery: str, record: TriageRecord) -> str:
    """The record gives a verdict; it names the right system and the mechanism's key terms."""
    conv = record.rows["conviction"]["data"]
    if not conv.get("system"):
        raise NotYetAnswered(
            "The record has no conviction yet: fill its rows in order, then "
            "call record.convict(system, mechanism)."
        )
    tries = f"(conviction attempt {record.attempts} on this record)" if record.strict else ""
    if not record.strict:
        raise CheckFailed(
            "Lab 15 needs its strict record: make it with "
            "TriageRecord(subject, strict=True) and fill it in order."
        )
    try:
        line = record.verdict()
    except TriageRefused as exc:
        raise CheckFailed(f"The record refuses a verdict {tries}: {exc}") from None
    system, mechanism = conv["system"], conv["mechanism"]
    if not mysteries.system_matches(mystery, system):
        hint = HINTS.get(system, "go back over the rows in order")
        raise CheckFailed(f"The evidence does not support {system} {tries}; {hint}")
    found, needed = mysteries.mechanism_terms(mystery, mechanism)
    if found < needed:
        raise CheckFailed(
            f"{system} is the right system, but the mechanism line names {found} of "
            f"the {needed} things it must say {tries}: say what broke and where it "
            "sits in the loop, in plain words."
        )
    if reverses(mystery, mechanism):
        raise CheckFailed(
            f"{system} is the right system, but the mechanism line says the opposite "
            f"of what the evidence shows about it {tries}: read the rows of the "
            "record again and say what broke, not what did not."
        )
    return f"ok: {line} {tries}"
