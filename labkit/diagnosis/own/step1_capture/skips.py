"""What `labkit.diagnose` leaves out to keep to its time budget (``budget_s``), said in the record.

The learner's own ``train()`` runs are the evidence every rule reads; they are bounded by
`own_budget` and stop the triage with a sentence when the budget runs out. The checks
below only sharpen a finding, so when the time they would take (their training steps
times the seconds per step measured so far on this setup) no longer fits in what is left
of the budget, they are skipped, and the record's notes name each one with its cost:
- the overfit-64 gate (`own._step_overfit`) and the loss-floor check behind it;
- the held-out batches' check (`own_evidence.held_out`);
- the optimizer settings reset one at a time (`own_settings`).
A finding reached without them is the same finding, stated on less evidence: the note says so.
"""

from __future__ import annotations

import time

from . import budget as own_budget

_SEEN = {"seconds": 0.0, "steps": 0, "skipped": []}


def start() -> None:
    """A new triage: forget the rate and the skips of the last one."""
    _SEEN.update(seconds=0.0, steps=0, skipped=[])


def measured(steps: int, seconds: float) -> None:
    """`steps` training steps of this setup took `seconds` (the learner's loop or labkit's)."""
    _SEEN["steps"] += steps
    _SEEN["seconds"] += seconds


def left() -> float | None:
    deadline = own_budget._STATE["deadline"]
    return None if deadline is None else deadline - time.monotonic()


def affordable(what: str, steps: int) -> bool:
    """Whether `steps` more training steps fit in the budget left; if not, the skip is noted."""
    remaining = left()
    if remaining is None or not _SEEN["steps"]:
        return True
    cost = steps * _SEEN["seconds"] / _SEEN["steps"]
    if cost <= remaining:
        return True
    _SEEN["skipped"].append(
        f"{what} (about {cost:.1f} s of training; {max(remaining, 0):.1f} s of "
        f"budget_s={own_budget._STATE['budget']:g} s were left)"
    )
    return False


def skipped() -> list[str]:
    return list(_SEEN["skipped"])


def note(record) -> None:
    """Say in `record` what was skipped, if anything."""
    if _SEEN["skipped"]:
        record.notes.append(
            "to keep to the time budget, labkit skipped: "
            + "; ".join(_SEEN["skipped"])
            + ". The finding stands on the rest of the evidence; pass a larger budget_s "
            "to run them"
        )
