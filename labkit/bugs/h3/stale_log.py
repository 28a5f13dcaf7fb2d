"""stale_log: the logger keeps printing a value it read once.

Symptom:   the reported curve is perfectly flat at ln C (2.303) for the whole run, while
           raw per-batch losses fall: the chapter's "loss curve that says nothing".
Mechanism: the logged number comes from a buffer filled on the first step and never
           refreshed (a tensor captured in a closure, a metric object never reset).
Fix:       log the loss of the current step; compare the logged value with an independent
           recomputation before believing any curve.
Stage:     evaluation/logging.    System: H3 (instrumentation).    Taught in: Lab 15.
"""

from ...core.seams import StepContext
from .._base import Bug


def log_stale_value(ctx: StepContext) -> float:
    if not hasattr(ctx, "stale_buffer"):
        ctx.stale_buffer = ctx.loss_value  # the bug: filled once, never refreshed
    return ctx.stale_buffer


BUG = Bug(
    name="stale_log",
    system="H3",
    stage="evaluation/logging",
    exercise="Lab 15",
    seam="log",
    replacement=log_stale_value,
    symptom="reported loss perfectly flat at its first value while raw loss falls",
    mechanism="the logger reports a stale buffer read once at the first step",
)
