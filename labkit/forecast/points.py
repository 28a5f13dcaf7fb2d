"""Checking what a learner gives a forecast: (step, loss) points, a NaN step, a shape, a note.

Every refusal is one sentence naming the point or field, what was given and what is
allowed, so a typo in a sketch or a papermill parameter teaches rather than crashes.
"""

from __future__ import annotations

import json
import math

from ..errors import check_choice, check_number
from .shapes import SHAPES


def check_points(points, nan_step) -> tuple:
    """Points as a tuple of (int step, float loss), strictly increasing in step."""
    if isinstance(points, str):  # a papermill parameter may arrive as JSON text
        try:
            points = json.loads(points)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"points={points!r} is not valid JSON ({exc.msg}); write it like "
                "'[[0, 2.3], [199, 0.5]]'."
            ) from None
    if isinstance(points, dict):
        points = sorted((int(k), v) for k, v in points.items())
    out = []
    for i, pair in enumerate(points):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise TypeError(f"points[{i}] must be a (step, loss) pair; got {pair!r}.")
        step, loss = pair
        if isinstance(step, float) and step.is_integer():
            step = int(step)
        check_number(f"points[{i}][0] (the step)", step, minimum=0, integer=True)
        if not (isinstance(loss, float) and math.isnan(loss)) and loss != math.inf:
            check_number(f"points[{i}][1] (the loss)", loss)  # type first; NaN/inf teach below
        if not (0 < loss < math.inf):
            raise ValueError(
                f"points[{i}][1] (the loss at step {step}) must be a positive, finite "
                f"number; got {loss!r}. To predict a blow-up, set nan_step instead."
            )
        if out and step <= out[-1][0]:
            word = "repeats" if step == out[-1][0] else "comes before"
            raise ValueError(
                f"points[{i}] has step {step}, which {word} step {out[-1][0]} of "
                "the point before it; list each step once, in increasing order."
            )
        if nan_step is not None and step >= nan_step:
            raise ValueError(
                f"points[{i}] is at step {step}, but nan_step={nan_step} says the "
                "loss is already NaN there; drop points from the NaN step on."
            )
        out.append((step, float(loss)))
    if not out and nan_step != 0:
        raise ValueError(
            "A forecast needs at least one (step, loss) point; got none "
            "(only nan_step=0, NaN from the very first step, needs no points)."
        )
    return tuple(out)


def check_fields(points, shape, nan_step, note) -> dict:
    check_number("nan_step", nan_step, minimum=0, integer=True, allow_none=True)
    if shape is not None:
        check_choice("shape", shape, SHAPES)
    if shape == "nan" and nan_step is None:
        raise ValueError("shape='nan' needs nan_step, the step where you expect the first NaN.")
    if nan_step is not None and shape not in (None, "nan"):
        raise ValueError(
            f"shape={shape!r} contradicts nan_step={nan_step}: a run that turns "
            "NaN is classified 'nan'; use shape='nan' or drop nan_step."
        )
    if not isinstance(note, str):
        raise TypeError(f"note must be text (str); got {type(note).__name__}.")
    return {
        "points": check_points(points, nan_step),
        "shape": shape,
        "nan_step": nan_step,
        "note": note,
    }
