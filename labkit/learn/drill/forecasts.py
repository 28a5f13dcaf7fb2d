"""Turning a written or drawn forecast into the outcome it predicts for one probe.

Words are read by `words.read_outcome`. A drawn curve (the notebook's sketch) is read
for the three probes that answer with a curve:
  raw_vs_reported  the raw loss you expect: its shape (by `classify_shape`) the same as
                   the reported symptom's means "agree", another shape "disagree";
  overfit          a NaN step means "nan", a last point below 10% of the first "reaches",
                   anything else "stalls";
  second_seed      the reported curve you expect on the new seed: the symptom's shape
                   means "same", another shape "different".
"""

from __future__ import annotations

from ...forecast.shapes import classify_shape
from .menu import CURVE_PROBES
from .words import read_outcome


def curve_outcome(probe: str, points, nan_step, symptom: list) -> str | None:
    losses = [p[1] for p in points]
    if probe == "overfit":
        if nan_step is not None:
            return "nan"
        if not losses:
            return None
        return "reaches" if losses[-1] < 0.1 * losses[0] else "stalls"
    if probe not in ("raw_vs_reported", "second_seed") or not (losses or nan_step is not None):
        return None
    same = classify_shape(losses, nan_step) == classify_shape(symptom)
    if probe == "raw_vs_reported":
        return "agree" if same else "disagree"
    return "same" if same else "different"


def read_forecast(probe: str, forecast: dict, case) -> str | None:
    """The outcome `forecast` predicts for `probe`, or None when it names none."""
    points, nan_step = forecast.get("points") or [], forecast.get("nan_step")
    if probe in CURVE_PROBES and (points or nan_step is not None):
        symptom = case.baseline().table["loss_reported"]
        return curve_outcome(probe, points, nan_step, symptom)
    return read_outcome(probe, forecast.get("text") or "")
