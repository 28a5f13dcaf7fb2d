"""loss_from_item: the loss is rebuilt from a Python number, cut off from the model.

Symptom:   flat loss at ln C; no parameter ever receives a gradient.
Mechanism: ``loss = torch.tensor(loss.item(), requires_grad=True)`` (often to "fix" a
           dtype or device error). ``backward()`` runs without complaint, but the new
           tensor is a leaf: the graph back to the weights is gone, every ``.grad`` is None.
Fix:       keep the tensor the model produced; use ``.item()`` only for logging.
Stage:     graph.    System: H1 (loss disconnected).    Taught in: Exercise A.
"""

import torch
import torch.nn.functional as F

from ...core.seams import StepContext
from .._base import Bug


def loss_rebuilt_from_item(ctx: StepContext) -> torch.Tensor:
    loss = F.cross_entropy(ctx.output, ctx.batch["y"])
    return torch.tensor(loss.item(), requires_grad=True)  # the bug: a brand-new leaf


BUG = Bug(
    name="loss_from_item",
    system="H1",
    stage="graph",
    exercise="Exercise A",
    seam="loss",
    replacement=loss_rebuilt_from_item,
    symptom="loss flat at ln C; every parameter's gradient is None",
    mechanism="loss rebuilt with torch.tensor(loss.item()): no graph reaches the weights",
)
