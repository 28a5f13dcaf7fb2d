"""The shape rule: one word for a loss curve, read off its raw per-step values in order.

  nan         some loss is NaN or infinite;
  diverging   the median of the last 10% of points is over 1.5x that of the first 10%;
  spiky       some single step multiplies the loss by more than 2;
  descending  the last 10% sits more than 10% below the first 10%;
  flat        anything else.

A forecast's expected shape and a run's actual shape both come from here, so the two
are judged by one rule.
"""

from __future__ import annotations

import math

SHAPES = ("flat", "descending", "diverging", "spiky", "nan")


def classify_shape(losses, nan_step=None) -> str:
    """One of SHAPES for a sequence of losses, by the rule in the module docstring."""
    losses = list(losses)
    if nan_step is not None or any(v is None or not math.isfinite(v) for v in losses):
        return "nan"
    logs = [math.log(max(v, 1e-12)) for v in losses]
    k = max(1, len(logs) // 10)
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    change = med(logs[-k:]) - med(logs[:k])  # log of (end level / start level)
    if change > math.log(1.5):
        return "diverging"
    if any(b - a > math.log(2) for a, b in zip(logs, logs[1:])):
        return "spiky"
    return "descending" if change < math.log(0.9) else "flat"
