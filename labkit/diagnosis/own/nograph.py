"""Which part of the learner's setup left the loss without a graph, when backward() fails.

``loss.backward()`` on a loss that no parameter reaches raises autograd's "element 0 of
tensors does not require grad and does not have a grad_fn", inside the learner's train(),
whose name is all that error carries. `cause` measures where the graph was lost: a fresh
model from make_model, the first batch, and loss_fn once, under grad mode: a model with no
parameter that requires grad names make_model; a loss that does not require grad names
loss_fn; both fine leaves the loop itself (torch.no_grad() or a .detach() in train()).
"""

from __future__ import annotations

import torch

NO_GRAPH = "does not require grad and does not have a grad_fn"


def cause(setup, seed: int) -> str | None:
    """A sentence naming the part that lost the graph, or None when it cannot be measured."""
    name = type(setup).__name__
    try:
        with torch.enable_grad():
            model = setup.make_model(seed)
            if not any(p.requires_grad for p in model.parameters()):
                return (
                    f"{name}.make_model({seed}) returns a model none of whose parameters "
                    "requires grad, so no loss can reach them; leave requires_grad=True on "
                    "the layers that should train"
                )
            value = setup.loss_fn(model, setup.batches(seed)[0])
    except Exception:  # the learner's code: the error the learner saw stays the sentence
        return None
    if isinstance(value, torch.Tensor) and not value.requires_grad:
        return (
            f"{name}.loss_fn(model, batch) returns a loss that does not require grad (a "
            ".detach(), torch.no_grad(), or a new tensor made from its value), so backward() "
            "has no graph to follow to the parameters; return the loss as computed from "
            "model(...)"
        )
    return (
        f"make_model and loss_fn give a loss with a graph, so {name}.train() loses it "
        "itself (torch.no_grad() or a .detach() around the loss in its loop)"
    )
