"""What every probe shares: input checks that speak in sentences, and the default step."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ProbeResult:
    """A probe's answer: a one-line verdict, the numbers behind it, and a readable repr."""

    probe: str
    verdict: str
    details: dict = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [f"{k}: {_short(v)}" for k, v in self.details.items()]

    def __repr__(self) -> str:
        body = "\n".join("  " + line for line in self.lines())
        return f"{self.probe}: {self.verdict}" + (f"\n{body}" if body else "")


def _short(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list) and len(v) > 8:
        return f"[{', '.join(_short(x) for x in v[:3])}, ... {len(v)} values]"
    return v


def trainable(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """Named trainable parameters; refuse a model with none."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}.")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not named:
        total = sum(1 for _ in model.parameters())
        raise ValueError(
            f"model {type(model).__name__} has no trainable parameters "
            f"({total} parameters, all with requires_grad=False); there is "
            "nothing for a probe to measure."
        )
    return named


def optimizer_ids(optimizer: torch.optim.Optimizer) -> set[int]:
    return {id(p) for group in optimizer.param_groups for p in group["params"]}


def check_optimizer(model: nn.Module, optimizer) -> set[int]:
    """Refuse an optimizer that owns none of the model's parameters."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer; got {type(optimizer).__name__}."
        )
    owned = optimizer_ids(optimizer)
    if not any(id(p) in owned for p in model.parameters()):
        raise ValueError(
            f"the optimizer ({type(optimizer).__name__}) owns none of the "
            f"{sum(1 for _ in model.parameters())} parameters of model "
            f"{type(model).__name__}; it was built for another model."
        )
    return owned


def default_forward(model: nn.Module, batch):
    """(x, y) tuples, {'x', 'y'} dicts, or LM dicts with input_ids/attention_mask/labels."""
    if isinstance(batch, dict):
        if "input_ids" in batch:
            return model(
                batch["input_ids"],
                attention_mask=batch.get("attention_mask"),
                labels=batch.get("labels"),
            )
        return model(batch["x"])
    return model(batch[0])


def default_loss(output, batch) -> torch.Tensor:
    if getattr(output, "loss", None) is not None:
        return output.loss
    y = batch["y"] if isinstance(batch, dict) else batch[1]
    return F.cross_entropy(output, y)


def _describe(batch) -> str:
    if isinstance(batch, dict):
        items = batch.items()
    elif isinstance(batch, (tuple, list)):
        items = enumerate(batch)
    else:
        items = [("batch", batch)]
    parts = [
        f"{k}: shape {tuple(v.shape)} {v.dtype}" for k, v in items if isinstance(v, torch.Tensor)
    ]
    return "; ".join(parts) or type(batch).__name__


def _expects(model: nn.Module) -> str:
    for m in model.modules():
        if isinstance(m, nn.Linear):
            return (
                f"its first layer is Linear(in_features={m.in_features}), so inputs need a "
                f"last dimension of {m.in_features} and a floating dtype"
            )
        if isinstance(m, nn.Embedding):
            return (
                f"its first layer is Embedding({m.num_embeddings}, ...), so inputs need "
                "integer token ids (torch.long)"
            )
    return "see its forward()"


def run_forward(model, batch, forward=default_forward):
    """Call the model; a batch it cannot take becomes a sentence naming shapes and dtypes."""
    try:
        return forward(model, batch)
    except (RuntimeError, TypeError, IndexError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"model {type(model).__name__} cannot take this batch "
            f"({_describe(batch)}); {_expects(model)}. PyTorch said: {first}"
        ) from exc


def fit(model: nn.Module, batches, forward, loss_fn, make_optimizer) -> tuple[list, list]:
    """Plain training on `batches` in order: (loss per step, total gradient norm per step).

    A loss with no graph is logged with a None gradient norm and no step is taken. A run that
    is stuck is not computed to its end: once two steps in a row gave the same non-finite loss
    and gradient norm and the second left every weight as it was (zero gradients, or weights
    already NaN), the same batch again can only give that step again, so it is logged as such.
    """
    params = [p for _, p in trainable(model)]
    opt = make_optimizer(params)
    losses, norms = [], []
    model.train()
    previous, unmoved = None, False
    for batch in batches:
        if unmoved and batch is previous and _repeats(losses, norms):
            losses.append(losses[-1])
            norms.append(norms[-1])
            continue
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(run_forward(model, batch, forward), batch)
        losses.append(loss.item())
        previous, unmoved = batch, False
        if loss.grad_fn is None:
            norms.append(None)
            continue
        loss.backward()
        grads = [p.grad for p in params if p.grad is not None]
        norms.append(
            float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))))
            if grads
            else None
        )
        before = None if math.isfinite(losses[-1]) else [p.detach().clone() for p in params]
        opt.step()
        if before is not None:
            with torch.no_grad():
                unmoved = all(
                    bool(((p == b) | (p.isnan() & b.isnan())).all()) for p, b in zip(params, before)
                )
    return losses, norms


def _repeats(losses: list, norms: list) -> bool:
    """The last two steps gave the same non-finite loss and the same gradient norm."""
    if len(losses) < 2 or math.isfinite(losses[-1]):
        return False
    return _same(losses[-1], losses[-2]) and _same(norms[-1], norms[-2])


def _same(a, b) -> bool:
    """Equal, counting NaN equal to NaN (and None to None)."""
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


def grad_total(params) -> float | None:
    """The Euclidean norm of every gradient the parameters hold (None if none holds one)."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return None
    return float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))))
