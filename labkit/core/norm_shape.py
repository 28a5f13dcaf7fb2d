"""The one reading of a norm curve (gradient or update norm): zero, steady or growing.

Lab 15's record reads a sketched gradient norm by it, and a forecast of a norm is scored by
it against the run's own table, so the record and the score say the same word for one curve.
"""

from __future__ import annotations

ZERO_NORM = 1e-3  # a norm at or below this reads as zero; the sketch shades the band


def norm_shape(values) -> str:
    """'zero' (collapsed: at most ZERO_NORM throughout, or ending under 5% of its start),
    'growing' (ending over 2x its start) or 'steady', each end read as the median of its
    tenth. No value at all (NaN from the first step) reads as 'growing': it blew up."""
    values = [max(float(v or 0.0), 0.0) for v in values]
    if not values:
        return "growing"
    k = max(1, len(values) // 10)
    first, last = sorted(values[:k])[k // 2], sorted(values[-k:])[k // 2]
    if max(values) <= ZERO_NORM or last <= 0.05 * first:
        return "zero"
    return "growing" if last > 2 * first else "steady"
