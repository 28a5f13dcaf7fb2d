"""The training step, piece by piece (notebook `10_training_mechanism`).

* `reference_setup` / `reference_step`: the five-line loop on a tiny classifier;
* `optimizer_holdings`: which tensors an optimizer keeps, and whether they are the model's;
* `softmax_ce_grad`: dL/dz from autograd next to the closed form p - onehot(y);
* `none_and_zero_model`: a model with one parameter that gets no gradient (None) and one
  whose gradient is exactly zero, for the gradient audit to tell apart.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ...core.data import load
from ...core.models import MLP


def reference_batch(seed: int = 0, size: int = 32, offset: int = 0):
    """(inputs, targets) from the 10-class blobs: rows offset .. offset+size of the train split."""
    train = load("blobs", seed=seed).train
    return train["x"][offset : offset + size], train["y"][offset : offset + size]  # (B, 2), (B,)


def reference_setup(seed: int = 0, lr: float = 0.1, optimizer: str = "sgd"):
    """A small MLP, its optimizer (plain SGD or Adam) and one batch, all fixed by `seed`."""
    torch.manual_seed(seed)
    model = MLP(hidden=16, n_classes=10)
    opt_class = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[optimizer]
    return model, opt_class(model.parameters(), lr=lr), reference_batch(seed)


def reference_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch) -> float:
    """One training step, the five lines every loop is built from; returns the loss to log."""
    inputs, targets = batch
    optimizer.zero_grad()  # 1. forget the previous batch's gradients
    logits = model(inputs)  # 2. forward: (B, C)
    loss = F.cross_entropy(logits, targets)  # 3. a scalar tensor with a graph back to the weights
    loss.backward()  # 4. fill p.grad for every parameter the loss depends on
    optimizer.step()  # 5. move each parameter the optimizer holds
    return loss.item()  # a plain number, for logging only


def optimizer_holdings(model: nn.Module, optimizer: torch.optim.Optimizer) -> list[dict]:
    """Per model parameter: is the very same tensor object in the optimizer, and what state
    (momentum, Adam's moments) the optimizer keeps for it."""
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    rows = []
    for name, p in model.named_parameters():
        state = optimizer.state.get(p, {})
        rows.append(
            {
                "name": name,
                "shape": tuple(p.shape),
                "held": id(p) in held,
                "state": sorted(
                    k for k, v in state.items() if isinstance(v, torch.Tensor) and v.dim() > 0
                ),
            }
        )
    return rows


def softmax_ce_grad(seed: int = 0, batch: int = 4, n_classes: int = 5) -> dict:
    """Gradient of the summed cross-entropy w.r.t. the logits: autograd vs p - onehot(y).

    Summed, not averaged, so each row's gradient is exactly p - onehot(y) (a mean would
    divide every row by the batch size)."""
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(batch, n_classes, generator=gen, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, n_classes, (batch,), generator=gen)
    F.cross_entropy(z, y, reduction="sum").backward()
    p = torch.softmax(z.detach(), dim=1)  # (B, C)
    formula = p - F.one_hot(y, n_classes).to(p.dtype)
    return {
        "logits": z.detach(),
        "targets": y,
        "probs": p,
        "autograd": z.grad,
        "formula": formula,
        "max_abs_diff": float((z.grad - formula).abs().max()),
    }


class NoneAndZero(nn.Module):
    """`used` feeds the output; `dead` feeds a ReLU that is never active, so its gradient is
    exactly zero; `spare` (an extra head, say) is never called, so its gradient stays None."""

    def __init__(self):
        super().__init__()
        self.used = nn.Linear(2, 3)
        self.dead = nn.Linear(2, 3)
        self.spare = nn.Linear(2, 3)
        with torch.no_grad():
            self.dead.weight.zero_()
            self.dead.bias.fill_(-1.0)  # pre-activation -1 for every input: ReLU outputs 0

    def forward(self, x):  # (B, 2) -> (B, 3)
        return self.used(x) + torch.relu(self.dead(x))


def none_and_zero_model(seed: int = 0):
    """(model, optimizer, loss after backward) for `NoneAndZero` on a blobs batch."""
    torch.manual_seed(seed)
    model = NoneAndZero()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = reference_batch(seed)
    loss = F.cross_entropy(model(x), y % 3)
    optimizer.zero_grad()
    loss.backward()
    return model, optimizer, loss


def step_with_decay(seed: int = 0, weight_decay: float = 0.5) -> list[dict]:
    """One SGD step with weight decay on `NoneAndZero`: how far each bias moves, beside the
    state of its gradient. Decay reaches a zero gradient; a None gradient is skipped."""
    model, _, _ = none_and_zero_model(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, weight_decay=weight_decay)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer.step()
    rows = []
    for name, p in model.named_parameters():
        grad = (
            "None" if p.grad is None else ("zero" if float(p.grad.abs().max()) == 0 else "finite")
        )
        rows.append(
            {"name": name, "grad": grad, "moved": float((p.detach() - before[name]).norm())}
        )
    return rows
