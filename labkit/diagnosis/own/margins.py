"""The comparisons that decide a triage, and how close each came to its threshold.

A rule that decides on a measured number against a threshold writes
``above("flow.loss_growth", growth, 10)`` instead of ``growth > 10``: the same answer, and,
while a triage runs (`recording`), one entry in its log: the comparison's name, the seed,
the value and the limit. The record keeps the log (`TriageRecord.margins`).

Why: a CPU path (ATen's kernels, MKL's, oneDNN's, the thread count) moves the last bits of
every product, and a trained number moves with them. A comparison whose value sits closer
to its limit than the value moves between CPU paths (or between seeds) may decide the other
way on a machine nobody has tried, even where every machine tried agrees.
`tools/portability.py` matches the entries of one setup across paths and reports, for
each, its distance to the limit against that spread.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar

_LOG: ContextVar[list | None] = ContextVar("labkit_margins", default=None)


@contextmanager
def recording():
    """Collect the comparisons made inside the block; yields the list they are appended to."""
    log: list[dict] = []
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def _note(name: str, value, limit, seed, outcome: bool, log_scale: bool) -> bool:
    log = _LOG.get()
    if log is not None:
        log.append(
            {
                "name": name,
                "seed": seed,
                "value": _plain(value),
                "limit": _plain(limit),
                "outcome": bool(outcome),
                "log": log_scale,
            }
        )
    return bool(outcome)


def _plain(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def above(name: str, value, limit, seed=None, log: bool = False) -> bool:
    """``value > limit``, logged. `log`: a factor (a growth, a ratio of levels), whose distance
    to the limit and spread between paths are read on a log scale (x3 is x3 at any size)."""
    return _note(name, value, limit, seed, value > limit, log)


def below(name: str, value, limit, seed=None, log: bool = False) -> bool:
    """``value < limit``, logged (`log` as in `above`)."""
    return _note(name, value, limit, seed, value < limit, log)


def distance(entry: dict) -> float:
    """How far the value sits from its limit: relative to the limit's size, or as the log of
    their ratio for a factor (inf when either is not finite, or not positive on a log scale:
    a NaN or an overflow is no rounding matter)."""
    v, lim = entry["value"], entry["limit"]
    if v is None or lim is None or not (math.isfinite(v) and math.isfinite(lim)):
        return math.inf
    if entry.get("log"):
        return abs(math.log(v / lim)) if v > 0 and lim > 0 else math.inf
    return abs(v - lim) / max(abs(lim), 1e-12)


def closest(log: list[dict], n: int = 5) -> list[dict]:
    """The `n` comparisons nearest their limits, nearest first."""
    return sorted(log, key=distance)[:n]
