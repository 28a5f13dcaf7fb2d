"""double_softmax: the model returns probabilities and the loss applies softmax again.

Symptom:   the loss creeps down from ln C far slower than the healthy run and cannot fit
           even one small batch; gradient norms are about 10x smaller than healthy.
Mechanism: the forward ends in ``softmax``; ``cross_entropy`` expects logits and takes
           ``log_softmax`` of its input. Inputs in [0, 1] cap the achievable loss at
           ``ln(1 + (C-1)/e) = 1.46`` for C = 10, and the double squashing shrinks gradients.
Fix:       return raw logits; let ``cross_entropy`` do the (stable) log-softmax once.
Stage:     forward.    System: H1 (loss cannot descend by construction).
Taught in: Exercise F (loss/metric) and the bug gallery.
"""

import torch

from ...core.seams import StepContext
from .._base import Bug


def forward_softmax(ctx: StepContext):
    logits = ctx.model(ctx.batch["x"])  # (B, C)
    return torch.softmax(logits, dim=-1)  # the bug: probabilities, not logits


BUG = Bug(
    name="double_softmax",
    system="H1",
    stage="forward",
    exercise="Exercise F",
    seam="forward",
    replacement=forward_softmax,
    symptom="loss barely leaves ln C, gradients ~10x smaller; cannot overfit one batch",
    mechanism="softmax in forward, then cross_entropy's log_softmax again: outputs capped in [0, 1]",
)
