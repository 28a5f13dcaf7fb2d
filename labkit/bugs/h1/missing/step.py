"""missing_step: ``optimizer.step()`` was deleted (or sits in a branch that never runs).

Symptom:   flat loss at ln C with healthy, nonzero gradients; the LR looks fine.
Mechanism: gradients are computed and cleared every step, but nothing applies them: every
           update norm is exactly 0 while the learning rate is not 0.
Fix:       call ``optimizer.step()`` after ``backward()`` every step.
Stage:     optimizer.    System: H1.    Taught in: Exercise B.
"""

from ....core.seams import StepContext
from ..._base import Bug


def step_without_optimizer(ctx: StepContext) -> None:
    if ctx.scheduler is not None and ctx.last_batch_of_epoch:
        ctx.scheduler.step()  # the schedule still advances; the weights do not


BUG = Bug(
    name="missing_step",
    system="H1",
    stage="optimizer",
    exercise="Exercise B",
    seam="step",
    replacement=step_without_optimizer,
    symptom="loss flat at ln C; gradients healthy, lr > 0, updates exactly 0",
    mechanism="optimizer.step() is never called: gradients are computed and thrown away",
)
