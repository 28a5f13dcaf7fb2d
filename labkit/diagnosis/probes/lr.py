"""LR x10 and /10 from identical state, and replaying one batch from a saved checkpoint."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import torch
import torch.nn as nn

from ...errors import check_number
from ._common import ProbeResult, default_forward, default_loss, fit, run_forward


def lr_sweep(
    model: nn.Module,
    batches: list,
    *,
    lr: float,
    make_optimizer=None,
    forward=default_forward,
    loss_fn=default_loss,
    factors=(0.1, 1.0, 10.0),
) -> ProbeResult:
    """From the same weights and the same batches, run one arm per LR (lr x factor).

    `make_optimizer(params, lr)` builds a fresh optimizer per arm (default: plain SGD), so
    every arm starts from identical state. The verdict says whether the loss change tracks
    the LR: monotonic (the optimizer is responsive), diverging at the top, or flat in all.
    """
    if not batches:
        raise ValueError("lr_sweep needs at least one batch.")
    check_number("lr", lr, minimum=0.0)
    for i, f in enumerate(factors):
        check_number(f"factors[{i}]", f, minimum=0.0)
    make_optimizer = make_optimizer or (lambda params, lr: torch.optim.SGD(params, lr=lr))
    arms = {}
    for f in factors:
        losses, norms = fit(
            copy.deepcopy(model),
            batches,
            forward,
            loss_fn,
            lambda params, lr=lr * f: make_optimizer(params, lr),
        )
        finite = [v for v in losses if math.isfinite(v)]
        drop = losses[0] - (finite[-1] if len(finite) == len(losses) else math.nan)
        arms[f] = {
            "lr": lr * f,
            "loss_first": losses[0],
            "loss_last": losses[-1],
            "drop": drop,
            "nonfinite": len(finite) < len(losses),
            "max_grad_norm": max((n for n in norms if n is not None), default=None),
            "losses": losses,
        }
    drops = [arms[f]["drop"] for f in sorted(arms)]
    diverged = [f for f in sorted(arms) if arms[f]["nonfinite"] or arms[f]["drop"] < -0.5]
    if all(abs(d) < 1e-3 for d in drops if math.isfinite(d)) and not diverged:
        verdict = (
            "flat at every LR: the loss does not respond to the learning rate -- not an LR problem"
        )
    elif diverged and diverged[0] == min(factors):
        verdict = "diverges even at the smallest LR: instability is not (only) the LR"
    elif diverged:
        below = [arms[f]["drop"] for f in sorted(arms) if f < diverged[0]]
        trend = "falls" if all(d > 0 for d in below) else "stays finite"  # a rise is no fall
        verdict = (
            f"loss {trend} at lower LRs and diverges from x{diverged[0]:g}: the LR sits "
            "near or above the stable limit"
        )
    elif drops == sorted(drops):
        verdict = "loss drop grows monotonically with LR: the optimizer responds to the LR"
    else:
        verdict = "loss drop is not monotonic in LR: the best LR lies inside the swept range"
    return ProbeResult("LR x10 / ÷10", verdict, {"arms": arms, "steps": len(batches)})


def save_checkpoint(model: nn.Module, path) -> Path:
    """Save the model's weights (state_dict only, loadable with weights_only=True)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), path)
    return path


def load_checkpoint(model: nn.Module, path) -> nn.Module:
    """A copy of `model` with the checkpoint's weights; another architecture is refused."""
    state = torch.load(path, weights_only=True, map_location="cpu")
    if not isinstance(state, dict):
        raise ValueError(f"{path} does not hold a state_dict (got {type(state).__name__}).")
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [
        f"{k}: checkpoint {tuple(state[k].shape)} vs model {tuple(own[k].shape)}"
        for k in own
        if k in state and state[k].shape != own[k].shape
    ]
    if missing or unexpected or shapes:
        parts = []
        if missing:
            parts.append(f"missing {missing[:3]}")
        if unexpected:
            parts.append(f"unexpected {unexpected[:3]}")
        if shapes:
            parts.append(f"shape mismatch {shapes[:2]}")
        raise ValueError(
            f"checkpoint {str(path)!r} is from another architecture than "
            f"{type(model).__name__}: " + "; ".join(parts) + "."
        )
    clone = copy.deepcopy(model)
    clone.load_state_dict(state)
    return clone


def replay_batch(
    model: nn.Module, checkpoint, batches: dict, *, forward=default_forward, loss_fn=default_loss
) -> ProbeResult:
    """Load the checkpoint and compute loss and gradient norm on each named batch, no step.

    A batch that spikes from the same weights every time points at the data; a spike
    that needs the run's history points at optimizer state.
    """
    rows = {}
    for name, batch in batches.items():
        replica = load_checkpoint(model, checkpoint)
        replica.train()
        loss = loss_fn(run_forward(replica, batch, forward), batch)
        norm = None
        if loss.grad_fn is not None and math.isfinite(loss.item()):
            loss.backward()
            grads = [p.grad for p in replica.parameters() if p.grad is not None]
            norm = float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))))
        rows[name] = {"loss": loss.item(), "grad_norm": norm}
    worst = max(rows, key=lambda n: rows[n]["loss"] if math.isfinite(rows[n]["loss"]) else math.inf)
    verdict = f"highest loss from the same weights: {worst} ({rows[worst]['loss']:.4g})"
    return ProbeResult("replay batch", verdict, {"rows": rows})
