"""labkit's own intervention for a label left in the inputs (`step3_h2.features.leak_rule`).

The learner's fix drops the feature and narrows the model with it: two edits that one change
implies. labkit makes the data half of it and keeps the model as it is: every feature that is
the label is held at its training mean on every row (a constant column carries nothing, and the
input width is unchanged). The harm of a leak is not the training loss (a model that reads the
answer off its input trains well) but what the model learned without it, so both runs are
scored on the same ruler: trained on all but the last fifth of the batches, the loss on that
fifth with the leaked features held constant (inputs that carry no answer).

Forecast: the run on the held features ends its held-out loss at least halfway from the leaky
run's (the lower of both seeds' losses) to its own seed-0 trial, on both seeds.
"""

from __future__ import annotations

import math
import time

import torch

from ....core.run import Run
from ..step1_capture import setup as proto
from ..step1_capture.loops import plain_loop
from ..step3_h2.features import features


def _held(batches: list, idx: list[int]) -> list:
    """The batches with the flattened input features `idx` held at their mean over all rows."""
    flat = [proto.inputs_of(b).reshape(len(proto.inputs_of(b)), -1) for b in batches]
    fill = torch.cat(flat)[:, idx].double().mean(0)
    out = []
    for b, f in zip(batches, flat):
        f = f.clone()
        f[:, idx] = fill.to(f.dtype)
        out.append(proto.with_inputs(b, f.reshape(proto.inputs_of(b).shape)))
    return out


def _scored(ev, batches: list, held: list, seed: int) -> Run:
    """Trained on `batches` but the last fifth, scored on the last fifth of `held`."""
    started, k = time.time(), max(1, len(batches) // 5)
    res = plain_loop(
        ev.setup,
        seed,
        ev.steps,
        ev.best_arm(),
        batches=batches[:-k],
        held_out=held[-k:],
        checkpoints=10,
    )
    return res.evals_run(seed, started, "held-out loss, the leaked features held constant")


def plan(evs):
    """(forecast, run(seed) -> Run, variable), or None when the leak's features differ
    between seeds, fewer than 2 batches leave no held-out fifth, or the held run does not
    end below the leaky one on seed 0."""
    ev, idx = evs[0], features(evs[0])["label"]
    if not idx or any(features(e)["label"] != idx for e in evs) or ev.n_batches < 2:
        return None
    try:
        held = {e.seed: _held(e.batches, idx) for e in evs}
    except (RuntimeError, IndexError, TypeError):  # inputs labkit cannot rebuild: no plan
        return None
    before = [_scored(e, e.batches, held[e.seed], e.seed).table["loss_raw"][-1] for e in evs]
    trial = _scored(ev, held[ev.seed], held[ev.seed], ev.seed)
    after, worst = trial.table["loss_raw"][-1], min(before)
    if not (math.isfinite(after) and math.isfinite(worst) and after < worst):
        return None
    from .intervene import _num

    step = trial.table["step"][-1]
    names = ", ".join(map(str, idx))
    return (
        f"loss < {_num(after + 0.5 * (worst - after))} by step {step}",
        lambda seed: _scored(next(e for e in evs if e.seed == seed), held[seed], held[seed], seed),
        (
            "batches",
            "yours",
            (
                f"feature{'s' if len(idx) > 1 else ''} {names} held at the training mean "
                "(the same input width, no answer to read)"
            ),
        ),
    )
