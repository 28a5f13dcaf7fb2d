"""The replay of a loop without torch.optim: its steps read from the parameters.

A loop that updates with ``p.data.add_(p.grad, alpha=-lr)`` calls no ``optimizer.step()``,
so the replay's step hooks never fire. While no optimizer has been seen, `Replay` calls:
- `after_backward` at the end of every ``backward()``: the gradients as backward left them
  (before any clipping) and a copy of the parameters;
- `settle` at the start of the next top-level forward (and when the replay closes): if the
  parameters moved since that copy, one step is recorded as the optimizer hooks would have
  recorded it, with the update read as the difference and, for the learning rate, the
  step size plain SGD would have taken (`own_carry.effective_lr`).
"""

from __future__ import annotations

import math

import torch

from .carry import effective_lr


def after_backward(rp) -> None:
    params = [p for p in rp.watched() if p.requires_grad]
    grads = [p.grad for p in params]
    kept = [g.detach().float() for g in grads if g is not None]
    norms = [float(n) for n in torch._foreach_norm(kept)] if kept else []
    rp._manual = {
        "params": params,
        "before": [p.detach().clone() for p in params],
        "grads_none": len(grads) - len(kept),
        "grads_zero": sum(1 for n in norms if n == 0.0),
        "grad_norm": math.sqrt(sum(n * n for n in norms)) if norms else None,
        "nonfinite_grad": any(not math.isfinite(n) for n in norms),
    }


def settle(rp) -> None:
    kept = getattr(rp, "_manual", None)
    if kept is None or rp.optimizers:
        return
    params, before = kept["params"], kept["before"]
    moved = [p.detach().float() - b.float() for p, b in zip(params, before)]
    norms = [float(n) for n in torch._foreach_norm(moved)] if moved else []
    update = math.sqrt(sum(n * n for n in norms))
    if not update:
        return  # not a step yet (gradients accumulating), or a step that moved nothing
    rp._manual = None
    rp.steps.append(
        {
            "optimizer": None,
            "lr": [effective_lr(update, kept["grad_norm"])],
            "n_params": len(params),
            "grads_none": kept["grads_none"],
            "grads_zero": kept["grads_zero"],
            "grad_norm": kept["grad_norm"],
            "nonfinite_grad": kept["nonfinite_grad"],
            "backwards": rp._since_step,
            "update_norm": update,
            "loss_after": None,
            "manual": True,
        }
    )
    rp._since_step, rp._stepped = 0, True
    if rp.after_step_loss and rp._last_input is not None:
        batch = rp._batches.get(rp._last_input[0])
        if batch is not None:
            rp.steps[-1]["loss_after"] = rp._loss_now(rp._last_input[1], batch)
