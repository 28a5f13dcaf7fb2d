"""labkit's own intervention for batches in an order that is not mixed (`step3_h2.order`).

The harm of an unmixed order (batches sorted by label, by time, by a feature) is not the batch
loss the loop logs, which falls as the model follows the batch of the moment, but what the model
knows of its whole epoch. So both runs are scored on that ruler: the whole epoch's loss at ten
checkpoints of the learner's own optimizer loop, trained on the batches as they come, and on
the same rows mixed across the epoch and cut into batches of the same sizes (`mixed_rows`, the
one change).

Forecast: on the mixed rows the whole epoch's loss ends at least halfway from the unmixed run's
(the better of both seeds) down to its own seed-0 trial, on both seeds.
"""

from __future__ import annotations

import math
import time

from ....core.run import Run
from ..step1_capture.loops import plain_loop
from ..step3_h2.order import mixed_rows, whole_epoch


def epoch_run(setup, seed: int, steps: int, batches: list, epoch: list, arm: str = "own") -> Run:
    """The loop of `arm` (the learner's optimizer) trained on `batches`, scored at ten
    checkpoints on the whole epoch `epoch` (the same rows, in whatever order)."""
    started = time.time()
    res = plain_loop(setup, seed, steps, arm, batches=batches, held_out=epoch, checkpoints=10)
    return res.evals_run(seed, started, "the whole epoch's loss")


def _scored(ev, batches: list, seed: int) -> Run:
    return epoch_run(ev.setup, seed, ev.steps, batches, ev.batches)


def plan(evs):
    """(forecast, run(seed) -> Run, variable), or None when the rows cannot be pooled or the
    mixed run does not end below the unmixed runs on seed 0. The runs before the change are
    the order rule's own (`whole_epoch`: read, not trained again)."""
    found = [whole_epoch(e) for e in evs]
    mixed = {e.seed: e.once("mixed_rows", lambda e=e: mixed_rows(e.batches, e.seed)) for e in evs}
    if any(f is None for f in found) or any(m is None for m in mixed.values()):
        return None
    after, best = found[0][1], min(f[0] for f in found)
    if not (math.isfinite(after) and math.isfinite(best) and after < best):
        return None
    from .intervene import _num

    return (
        f"loss < {_num(after + 0.5 * (best - after))} by step {evs[0].steps}",
        lambda seed: _scored(next(e for e in evs if e.seed == seed), mixed[seed], seed),
        ("batches", "yours", "the same rows mixed across the epoch, in batches of the same sizes"),
    )
