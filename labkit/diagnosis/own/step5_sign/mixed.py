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
from ..step3_h2.order import mixed_rows


def _scored(ev, batches: list, seed: int) -> Run:
    """The learner's optimizer trained on `batches`; the whole epoch's loss at checkpoints."""
    started = time.time()
    res = plain_loop(
        ev.setup, seed, ev.steps, "own", batches=batches, held_out=ev.batches, checkpoints=10
    )
    return res.evals_run(seed, started, "the whole epoch's loss")


def plan(evs):
    """(forecast, run(seed) -> Run, variable), or None when the rows cannot be pooled or the
    mixed trial does not end below the unmixed runs on seed 0."""
    mixed = {e.seed: e.once("mixed_rows", lambda e=e: mixed_rows(e.batches, e.seed)) for e in evs}
    if any(m is None for m in mixed.values()):
        return None
    ev = evs[0]
    before = [_scored(e, e.batches, e.seed).table["loss_raw"][-1] for e in evs]
    trial = _scored(ev, mixed[ev.seed], ev.seed)
    after, best = trial.table["loss_raw"][-1], min(before)
    if not (math.isfinite(after) and math.isfinite(best) and after < best):
        return None
    from .intervene import _num

    step = trial.table["step"][-1]
    return (
        f"loss < {_num(after + 0.5 * (best - after))} by step {step}",
        lambda seed: _scored(next(e for e in evs if e.seed == seed), mixed[seed], seed),
        ("batches", "yours", "the same rows mixed across the epoch, in batches of the same sizes"),
    )
