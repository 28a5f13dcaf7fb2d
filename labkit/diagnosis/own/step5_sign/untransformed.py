"""labkit's own intervention for an augmentation that changes what the label means
(`step3_h2.transform.table_rule`).

The ruler is the data set the setup holds, un-augmented: its rows with their labels, in batches
of the learner's sizes. Both runs are a plain loop with the learner's model, loss and optimizer,
scored at ten checkpoints on that table: one trained on the batches as given (augmented), one
on the table's rows themselves (the one change: the augmentation left out).

Forecast: trained on the table's rows, the table's loss ends below half the augmented run's
(the better of both seeds), on both seeds.
"""

from __future__ import annotations

import math

import torch

from ..step3_h2.transform import table_of
from .mixed import epoch_run


def _table_batches(ev) -> list | None:
    """The table's rows as (inputs, labels) batches of the learner's sizes, in an order the seed
    fixes; None without a table."""
    table = table_of(ev.setup, ev.batches)
    if table is None:
        return None
    x, y = table
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(ev.seed))
    out, at = [], 0
    for n in ev.sizes:
        idx = order[at : at + n]
        out.append((x[idx], y[idx]))
        at += n
    return out


def plan(evs):
    """(forecast, run(seed) -> Run, variable), or None without a table. The runs before the
    change are trained here (once per seed); the forecast needs no trial of the change: the
    table's loss at most half the augmented runs' (the better of both seeds)."""
    tables = {e.seed: e.once("table_batches", lambda e=e: _table_batches(e)) for e in evs}
    if any(t is None for t in tables.values()):
        return None

    def scored(e, batches):
        return epoch_run(e.setup, e.seed, e.steps, batches, tables[e.seed])

    before = [e.once("augmented_run", lambda e=e: scored(e, e.batches)) for e in evs]
    best = min(r.table["loss_raw"][-1] for r in before)
    if not (math.isfinite(best) and best > 0):
        return None
    from .intervene import _num

    return (
        f"loss < {_num(0.5 * best)} by step {evs[0].steps}",
        lambda seed: scored(next(e for e in evs if e.seed == seed), tables[seed]),
        ("batches", "augmented", "the table's rows, un-augmented, in batches of the same sizes"),
    )
