"""wrong_logging_divisor: the epoch average is divided by a hard-coded number.

Symptom:   the reported loss is tiny and nearly flat while the raw per-batch loss descends.
Mechanism: the logger sums the batch losses of the epoch and divides by 500, a number
           left over from another dataset, instead of the count of batches seen so far in the
           epoch (1 to 16 here).
           Training is fine; the journalism about it is wrong.
Fix:       divide by the true count; assert the logged value against an independent
           recomputation (the raw-vs-reported probe).
Stage:     evaluation/logging.    System: H3 (instrumentation).    Taught in: Lab 15.
"""

from ...core.seams import StepContext
from .._base import Bug

HARD_CODED_BATCHES = 500


def log_divided_by_constant(ctx: StepContext) -> float:
    if ctx.batch_id == 0:
        ctx.log_sum, ctx.log_count = 0.0, 0
    ctx.log_sum += ctx.loss_value
    ctx.log_count += 1
    return ctx.log_sum / HARD_CODED_BATCHES  # the bug: should be ctx.log_count


BUG = Bug(
    name="wrong_logging_divisor",
    system="H3",
    stage="evaluation/logging",
    exercise="Lab 15",
    seam="log",
    replacement=log_divided_by_constant,
    symptom="reported loss tiny and flat while the raw batch loss descends",
    mechanism="epoch loss sum divided by a hard-coded 500 instead of the number of batches",
)
