"""Does the learner's own run fail by its own test? A setting is convicted for a defect, never
for being slower than an alternative.

A rule that resets one thing to its default (a setting of the optimizer, a deliberate freeze)
and finds a faster loop has found a faster loop, not a defect. It may convict only when the
learner's run itself fails, read off its own raw losses:
- **no descent**: the last fifth of the run is still above NO_DESCENT of its first loss
  (a plateau at chance is one: a classifier's loss at init is its chance level);
- **divergence**: a loss that goes non-finite, or rises to DIVERGED times its first value;
- **loses what it learned**: its last fifth sits more than LOST of its first loss above the
  best its moving mean reached (a climb from 1e-4 to 1e-3 is noise at the bottom, not a loss
  of what was learned).
Otherwise the run is healthy, and the faster setting is advice, kept in the record's notes
(`advise`), not a conviction.
"""

from __future__ import annotations

import math

from .margins import above, below

NO_DESCENT = 0.8  # the run's last fifth above this share of its first loss: it did not learn
DIVERGED = 10.0  # the run's loss rose to this multiple of its first value: it diverged
WINDOW = 10  # steps in the moving mean that a rebound is read on (one noisy batch is no rebound)
LOST = 0.25  # the last fifth this share of the first loss above the best moving mean: it lost it


def fails(ev) -> str | None:
    """Why the learner's own run fails (a phrase), or None when it learns."""

    def make():
        raw = [float(v) if v is not None else math.nan for v in ev.run.table["loss_raw"]]
        if not raw:
            return None
        if not all(map(math.isfinite, raw)):
            return "its loss goes non-finite"
        start = abs(raw[0])
        if not start:
            return None
        tail = raw[-max(1, len(raw) // 5) :]
        level = sum(tail) / len(tail)
        if above("baseline.no_descent", level / start, NO_DESCENT, seed=ev.seed):
            return f"it does not learn (loss {raw[0]:.3g} -> {level:.3g} over its last fifth)"
        if not below("baseline.growth", max(raw) / start, DIVERGED, seed=ev.seed, log=True):
            return f"its loss diverges (x{max(raw) / start:.3g} its first value)"
        best = min(smoothed(raw))
        if above("baseline.lost", (level - best) / start, LOST, seed=ev.seed):
            return f"it loses what it learned (its moving mean reached {best:.3g}, its last fifth is {level:.3g})"
        return None

    return ev.once("baseline_fails", make)


def smoothed(losses: list[float], window: int = WINDOW) -> list[float]:
    """The moving mean of the last `window` losses at each step (inf once one is not finite)."""
    out, total = [], 0.0
    for i, v in enumerate(losses):
        if v is None or not math.isfinite(v):
            return out + [math.inf] * (len(losses) - i)
        total += v - (losses[i - window] if i >= window else 0.0)
        out.append(total / min(i + 1, window))
    return out


def learns(ev) -> str:
    """The learner's run, in a phrase, for an advice note."""
    raw = [float(v) for v in ev.run.table["loss_raw"]]
    tail = raw[-max(1, len(raw) // 5) :]
    return f"your run learns (loss {raw[0]:.3g} -> {sum(tail) / len(tail):.3g} over its last fifth)"


def advise(ev, text: str) -> None:
    """A faster setting, as advice: one note in the record, whatever the verdict."""
    notes = ev.results.setdefault("advice", [])
    if text not in notes:
        notes.append(text)
