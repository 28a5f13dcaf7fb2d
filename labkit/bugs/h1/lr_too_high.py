"""lr_too_high: the step overshoots the curvature of the loss and training diverges.

Symptom:   the loss jumps around, spikes, then becomes NaN; gradient norms explode first.
Mechanism: with ``lr = 300 x`` the working rate (30 instead of 0.1), the quadratic (curvature) term of the step
           dominates the linear gain: each step lands further up the opposite wall, the
           weights grow, and logits overflow.
Fix:       lower the LR (a x10 / /10 sweep from the same checkpoint shows the trend), add
           warmup or gradient-norm clipping.
Stage:     optimizer.    System: H1 (divergence).    Taught in: Exercise C.
"""

import dataclasses

from ...core.seams import make_optimizer
from .._base import Bug


LR_FACTOR = 300


def optimizer_lr_too_high(config, model):
    return make_optimizer(dataclasses.replace(config, lr=config.lr * LR_FACTOR), model)


BUG = Bug(
    name="lr_too_high",
    system="H1",
    stage="optimizer",
    exercise="Exercise C",
    seam="optimizer",
    replacement=optimizer_lr_too_high,
    symptom="loss spikes then turns NaN; gradient norm explodes before the NaN",
    mechanism="learning rate 300x too high: updates overshoot and diverge",
)
