"""A mixed-precision loop with a fixed loss scale: one of Lab 15's mystery setups.

Symptom:   NaN after about ten healthy-looking steps, only under fp16 autocast; the
           gradient norm before it is large (about 1e5) and within a factor of about 2 of
           where it started, not running away. The same loop in fp32 or bf16 trains.
Mechanism: the loss is multiplied by a fixed 2**19 before ``backward()`` (hand-rolled loss
           scaling; Adam's update does not care about the scale, so nobody divides it back).
           Under fp16 autocast the backward runs partly in float16, whose largest value
           is 65504; once one gradient element of one batch passes it, it becomes inf, the
           optimizer writes inf into the weights, and every loss after is NaN. A lower LR
           changes nothing about that range, so the NaN stays.
Fix:       ``torch.amp.GradScaler``: a dynamic scale that skips a step whose gradients
           overflowed and backs the scale off; or autocast to bfloat16, whose range is
           float32's.
Stage:     gradients.    System: H1 (half-precision overflow, not the LR).
Taught in: Lab 15 (the mixed-precision mystery). Not in the zoo: it changes the loop itself
           (the backward seam and the trainer's GradScaler), not one seam alone.
"""

from __future__ import annotations

import torch

from ..core.seams import StepContext
from ..core.watch import Watch

LOSS_SCALE = 2**19  # fixed: overflows float16 gradients within a few dozen steps


def backward_fixed_scale(ctx: StepContext) -> None:
    ctx.optimizer.zero_grad(set_to_none=True)
    (ctx.loss * LOSS_SCALE).backward()  # the bug: a fixed scale, no GradScaler to back off


def without_grad_scaler(trainer, dtype=torch.float16):
    """Drop the trainer's GradScaler (and re-watch without it); autocast to `dtype`."""
    trainer.watch.close()
    trainer.ctx.scaler = None
    trainer.watch = Watch(trainer.ctx.model, trainer.ctx.optimizer)
    trainer._amp = torch.autocast(trainer.config.device.split(":")[0], dtype=dtype)
    return trainer
