"""missing_optimizer_params: the optimizer was built from only part of the model.

Symptom:   the loss falls slowly or stalls, although every layer gets a gradient.
Mechanism: ``SGD(model.backbone.parameters())``: the head is not in the optimizer. Its
           gradient is computed every step, but nothing ever applies it, so its update
           norm is exactly 0. ``optimizer.zero_grad()`` clears only the optimizer's own
           parameters, so the left-out gradient also piles up step after step (seed 0: the
           head's gradient norm grows from 0.34 to 70) -- easy to misread as exploding
           gradients. Variant ``head_only``: the reverse, the backbone never moves.
Fix:       build the optimizer from ``model.parameters()`` (after any head replacement).
Stage:     optimizer.    System: H1.    Taught in: Exercise B.
"""

from ....core.seams import make_optimizer
from ..._base import Bug


def optimizer_backbone_only(config, model):
    return make_optimizer(config, model, model.backbone.parameters())


def optimizer_head_only(config, model):
    return make_optimizer(config, model, model.head.parameters())


BUG = Bug(
    name="missing_optimizer_params",
    system="H1",
    stage="optimizer",
    exercise="Exercise B",
    seam="optimizer",
    replacement=optimizer_backbone_only,
    variants={"head_only": ("optimizer", optimizer_head_only)},
    symptom="slow or stalled loss; head gradients present (and piling up) but updates exactly 0",
    mechanism="the head's parameters were never given to the optimizer: gradient, no update",
)
