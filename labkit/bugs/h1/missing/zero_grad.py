"""missing_zero_grad: gradients from every past step pile up in ``.grad``.

Symptom:   the loss falls, then oscillates with growing spikes; gradient norms climb steadily.
Mechanism: ``backward()`` adds into ``.grad``. Without ``optimizer.zero_grad()`` each step
           applies the sum of all gradients so far -- an effective LR that grows with every step.
Fix:       call ``optimizer.zero_grad()`` once per step, before ``backward()``.
Stage:     gradients.    System: H1.    Taught in: Exercise B.
"""

from ....core.seams import StepContext
from ..._base import Bug


def backward_without_zero_grad(ctx: StepContext) -> None:
    if ctx.scaler is not None:
        ctx.scaler.scale(ctx.loss).backward()
    else:
        ctx.loss.backward()  # the bug: last step's gradients are still in .grad


BUG = Bug(
    name="missing_zero_grad",
    system="H1",
    stage="gradients",
    exercise="Exercise B",
    seam="backward",
    replacement=backward_without_zero_grad,
    symptom="gradient norm climbs step after step; loss oscillates with growing spikes",
    mechanism="optimizer.zero_grad() is never called: .grad accumulates every past step",
)
