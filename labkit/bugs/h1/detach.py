"""detach: the graph is cut between backbone and head.

Symptom:   the loss keeps falling, but far more slowly than the healthy curve and ends well
           above it (seed 0: 1.32 at step 200 against 0.16).
Mechanism: ``hidden = hidden.detach()`` after the backbone. Autograd never reaches the
           backbone, so its ``.grad`` stays None; only the head learns, on frozen random features.
Fix:       remove the detach (or move it to code that really must not backpropagate).
Stage:     graph.    System: H1 (gradient flow blocked).    Taught in: Exercise A.
"""

from ...core.seams import StepContext
from .._base import Bug


def forward_with_detach(ctx: StepContext):
    hidden = ctx.model.backbone(ctx.batch["x"])  # (B, hidden)
    hidden = hidden.detach()  # the bug: the backbone leaves the graph
    return ctx.model.head(hidden)  # (B, C)


BUG = Bug(
    name="detach",
    system="H1",
    stage="graph",
    exercise="Exercise A",
    seam="forward",
    replacement=forward_with_detach,
    symptom="loss falls far more slowly than healthy; backbone gradients are None",
    mechanism="hidden.detach() between backbone and head: the backbone gets no gradient (None)",
)
