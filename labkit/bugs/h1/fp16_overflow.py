"""fp16_overflow: a hand-written softmax overflows float16.

Symptom:   NaN loss after some healthy steps, only with ``precision="fp16"``; GradScaler
           skips every step whose loss is NaN (update norm exactly 0) and halves its scale
           each time, so ``amp_scale`` collapses. The same run in fp32 is fine.
Mechanism: under autocast the logits are float16, whose largest value is 65504, so
           ``exp(z)`` is inf for any z above ~11.09; inf / inf = NaN. Unnormalised inputs
           make large logits arrive quickly. ``F.cross_entropy`` would be safe: it uses a
           stable log-softmax in float32.
Fix:       use ``F.cross_entropy`` on logits (or subtract the max before exp); keep loss
           computations in fp32; bf16 has fp32's range.
Stage:     loss/masking.    System: H1 (half-precision overflow, not the LR).
Taught in: the bug gallery (fp16 section).
"""

import torch

from ...core.seams import StepContext
from .._base import Bug


def loss_manual_softmax(ctx: StepContext) -> torch.Tensor:
    z = ctx.output  # (B, C), float16 under autocast
    probs = torch.exp(z) / torch.exp(z).sum(dim=-1, keepdim=True)  # the bug: exp overflows
    picked = probs[torch.arange(len(z)), ctx.batch["y"]]  # (B,)
    return -torch.log(picked.float()).mean()


BUG = Bug(
    name="fp16_overflow",
    system="H1",
    stage="loss/masking",
    exercise="bug gallery",
    seam="loss",
    replacement=loss_manual_softmax,
    setup={"precision": "fp16", "input_scale": 8.0},
    symptom="NaN only under fp16 while the fp32 run stays finite; amp_scale keeps falling",
    mechanism="exp() of fp16 logits above 11.09 overflows to inf in a hand-written softmax",
)
