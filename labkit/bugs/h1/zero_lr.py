"""zero_lr: the learning rate is zero, so no step moves the weights.

Symptom:   flat loss at ln C (2.303 for 10 classes) from the first step to the last.
Mechanism: the optimizer is built with ``lr=0``. Gradients flow normally, but every update
           is ``0 * grad``. Variant ``per_batch_scheduler``: a StepLR meant to be stepped
           once per epoch is stepped every batch, so the LR halves each step and is about 0
           by epoch 2 -- the curve moves briefly, then freezes.
Fix:       set a real learning rate; step epoch schedulers once per epoch.
Stage:     optimizer.    System: H1 (LR collapsed to 0).    Taught in: Exercise C.
"""

import dataclasses

import torch

from ...core.seams import StepContext, make_optimizer
from .._base import Bug


def optimizer_zero_lr(config, model):
    return make_optimizer(dataclasses.replace(config, lr=0.0), model)


def step_scheduler_every_batch(ctx: StepContext) -> None:
    if ctx.scheduler is None:  # the learner's StepLR(step_size=1, gamma=0.5)
        ctx.scheduler = torch.optim.lr_scheduler.StepLR(ctx.optimizer, step_size=1, gamma=0.5)
    ctx.optimizer.step()
    ctx.scheduler.step()  # the bug: once per batch, not once per epoch


BUG = Bug(
    name="zero_lr",
    system="H1",
    stage="optimizer",
    exercise="Exercise C",
    seam="optimizer",
    replacement=optimizer_zero_lr,
    variants={"per_batch_scheduler": ("step", step_scheduler_every_batch)},
    symptom="loss flat at ln C; gradients flow but every update is exactly 0",
    mechanism="learning rate is 0: gradients flow, the optimizer moves nothing",
)
