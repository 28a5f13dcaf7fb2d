"""Lab 15's answer checks: three distinct hypothesis sketches, a checkable FORECAST, and the
conviction, judged exactly on its system (H1/H2/H3) and on the defect picked from the closed
list `DEFECTS`. The answers are compared as salted hashes (`labkit.diagnosis.lab15`); no
check prints one. The record's mechanism line is the learner's prose: kept for a person
(`labkit grade --manual`), and its reading (key terms named, a phrase that reverses the
mechanism, `lab15_reading`) comes back as a hint that never changes the verdict."""

from __future__ import annotations

from ...diagnosis import lab15 as mysteries
from ...diagnosis.record import strict
from ...diagnosis.record.triage import Prediction, TriageRecord, TriageRefused
from ._base import CheckFailed, NotYetAnswered, answer_check
from .lab15_reading import reverses

DEFECTS = {  # what the learner picks: a name in plain words -> the zoo's bug (or "amp")
    "logger divides by the wrong count": "wrong_logging_divisor",
    "logger reports a stale value": "stale_log",
    "labels shuffled apart from their inputs": "shuffled_labels",
    "inputs all the same": "constant_inputs",
    "NaN in an input": "nan_in_inputs",
    "scheduler stepped every batch": "zero_lr",
    "learning rate too high": "lr_too_high",
    "zero_grad() never called": "missing_zero_grad",
    "optimizer.step() never called": "missing_step",
    "softmax applied twice": "double_softmax",
    "fixed loss scale overflows float16 gradients": "amp",
    "hand-written softmax overflows in float16": "fp16_overflow",
}
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
def lab15_conviction(mystery: str, record: TriageRecord, defect: str) -> str:
    """The record gives a verdict; its system and the defect picked from `DEFECTS` are right.
    The mechanism line is kept for a person; its reading is a hint only."""
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
        strict.require_overfit_gate(record, conv["system"], conv["mechanism"])  # two rules the
        if record.forecast is not None:  # record applied as it was filled: again, on its data
            strict.require_informative(record, record.forecast)
    except TriageRefused as exc:
        raise CheckFailed(f"The record refuses a verdict {tries}: {exc}") from None
    system, mechanism = conv["system"], conv["mechanism"]
    if not mysteries.system_matches(mystery, system):
        hint = HINTS.get(system, "go back over the rows in order")
        raise CheckFailed(f"The evidence does not support {system} {tries}; {hint}")
    if defect not in DEFECTS:
        raise CheckFailed(
            f"Name the defect with one of the keys of check.lab15.DEFECTS (print it); "
            f"got {defect!r}."
        )
    if not mysteries.defect_matches(mystery, DEFECTS[defect]):
        raise CheckFailed(
            f"{system} is the right system, but {defect!r} is not the defect the evidence "
            f"shows {tries}: {HINTS[system]}"
        )
    return "\n".join([f"ok: {line} {tries}", *_kept(mystery, mechanism)])


def _kept(mystery: str, mechanism: str) -> list[str]:
    """The lines that say the mechanism line is kept, with its reading as a hint."""
    found, needed = mysteries.mechanism_terms(mystery, mechanism)
    hint = (
        "it reads as saying the opposite of what the evidence shows"
        if reverses(mystery, mechanism)
        else f"it names {found} of the {needed} things a mechanism line says"
        if found < needed
        else ""
    )
    lines = ["  your mechanism line is kept for your instructor (labkit grade --manual)"]
    return lines + ([f"  a hint, not a grade: {hint}"] if hint else [])
