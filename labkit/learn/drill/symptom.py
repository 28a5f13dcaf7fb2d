"""What the learner is shown before any probe: 50 reported steps and a teammate's take.

The teammate reads only the reported curve, as a colleague glancing at a dashboard
would, so the line is plausible and often wrong; it never depends on the hidden bug.
"""

from __future__ import annotations

import math

from ...forecast.shapes import classify_shape
from .front.text import ascii_plot, point_rows, wrap


def teammate_says(reported: list, chance: float) -> str:
    """A confident one-liner about the curve, from the reported values alone."""
    bad = [i for i, v in enumerate(reported) if v is None or not math.isfinite(v)]
    if bad:
        return f'"It went NaN at step {bad[0]}. The LR\'s too high, just halve it and rerun."'
    first, last = reported[0], reported[-1]
    shape = classify_shape(reported)
    if last < 0.1:
        return f'"It\'s already down at {last:.3f}. It has converged; ship it."'
    if shape in ("spiky", "diverging"):
        return '"It\'s bouncing around. The batch is too small; double it and it will settle."'
    if shape == "flat" and abs(last - chance) < 0.1 * chance:
        return f'"It\'s stuck at {last:.2f}. The LR must be too low; crank it up x10."'
    if shape == "flat":
        return f'"It\'s stuck at {last:.2f}. The model is too small; make it wider."'
    return (
        f"\"It's learning, just slowly ({first:.2f} -> {last:.2f} in 50 steps). Bump the LR "
        "x10 and it'll be done by lunch.\""
    )


def symptom_lines(mystery, reported: list) -> list[str]:
    chance = math.log(50 if mystery.task == "lm" else 10)
    return [
        *wrap(f"The run: {mystery.setting}."),
        "The reported training loss of the first 50 steps (raw points, no smoothing):",
        *ascii_plot(reported),
        *point_rows(reported),
        *wrap(f"Your teammate: {teammate_says(reported, chance)}"),
    ]
