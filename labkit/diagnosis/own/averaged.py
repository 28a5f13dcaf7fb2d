"""An averaged copy of the model (an EMA of its weights, as timm's ModelEmaV2 keeps), seen by
the replay, and the loss of that copy on each step's batch: a number a report may show.

The replay calls `before_step` as each optimizer step begins and `settle` when the loop ends.
A copy is a top-level module the loop called, other than the model it trains, with the same
parameter shapes and none of its parameters in an optimizer. Between two steps it moved as
an EMA does when, with p the trained weights after the step and c the copy's, the new
c - p is beta times the old c - p for one beta in (0, 1) (fitted by least squares over all
the weights, its residual small). The copy's loss on step t's batch is measured once the
loop has updated the copy after step t, before step t + 1 (the learner's own `loss_fn`).

`share_of_init(replay)` is beta to the power of the run's steps: how much of its initial
weights the copy still holds at the end. A report of its loss is honest where that share is
small (the copy follows the trained model: a choice); otherwise the report stays near the
untrained model's loss while the model learns.
"""

from __future__ import annotations

import torch

MAX_PARAMS = 4_000_000  # larger copies are not followed: flattening them at each step costs
RESIDUAL = 1e-3  # relative: the copy's move must be an EMA's to this precision
FOLLOWS = 0.05  # a copy holding less of its init than this at the end follows the model


def _flat(module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).float() for p in module.parameters()])


def _copy_of(rp, model):
    """The one module the loop called that copies `model`'s parameter shapes and trains in no
    optimizer, else None."""
    in_opt = {id(p) for o in rp.optimizers.values() for g in o.param_groups for p in g["params"]}
    shapes = [p.shape for p in model.parameters()]
    if sum(s.numel() for s in shapes) > MAX_PARAMS:
        return None
    found = [
        m
        for m in rp.models.values()
        if m is not model
        and [p.shape for p in m.parameters()] == shapes
        and not any(id(p) in in_opt for p in m.parameters())
    ]
    return found[0] if len(found) == 1 else None


def _measure(rp) -> None:
    """The copy's loss on the previous step's batch, and its move since the step before."""
    state = rp.__dict__.setdefault("averaged", {"betas": [], "flat": None, "batch": None})
    model = rp._last_input[1] if rp._last_input is not None else None
    copy = _copy_of(rp, model) if model is not None else None
    if copy is None or not rp.steps or state["batch"] is None:
        return
    rp.steps[-1]["loss_copy"] = rp._loss_now(copy, state["batch"])
    c, p = _flat(copy), _flat(model)
    if state["flat"] is not None:
        before = state["flat"] - p
        denom = float(before.pow(2).sum())
        if denom > 0:
            beta = float((c - p).mul(before).sum()) / denom
            residual = float((c - p - beta * before).norm()) / denom**0.5
            state["betas"].append(beta if residual <= RESIDUAL else None)
    state["flat"] = c


def before_step(rp) -> None:
    """As step t + 1 begins: measure the copy after step t, and keep step t + 1's batch."""
    if not (rp.after_step_loss and rp.setup is not None):
        return
    _measure(rp)
    state = rp.__dict__["averaged"]
    batch = rp._batches.get(rp._last_input[0]) if rp._last_input is not None else None
    state["batch"] = batch


def settle(rp) -> None:
    """The loop has ended: measure the copy after the last step."""
    if rp.after_step_loss and rp.setup is not None and rp.steps:
        _measure(rp)


def beta(rp) -> float | None:
    """The copy's decay, the median of its moves, where every move measured was an EMA's."""
    betas = getattr(rp, "averaged", {}).get("betas", [])
    if len(betas) < 3 or any(b is None or not 0 < b < 1 for b in betas):
        return None
    return sorted(betas)[len(betas) // 2]


def series(rp) -> dict:
    """{"averaged_copy": the copy's loss per step} where an EMA copy was measured at every
    step, else {}."""
    losses = [s.get("loss_copy") for s in rp.steps]
    if beta(rp) is None or not losses or any(v is None for v in losses):
        return {}
    return {"averaged_copy": losses}


def share_of_init(rp) -> float:
    return beta(rp) ** len(rp.steps)


def words(rp) -> tuple[str, bool]:
    """(what the report shows, in words with its numbers; whether the copy follows the model)."""
    b, share, n = beta(rp), share_of_init(rp), len(rp.steps)
    what = (
        f"the loss of an averaged copy of the model (an EMA of its weights, decay {b:.4g} "
        f"measured from the copy's moves, a horizon of about {1 / (1 - b):.3g} steps) on each "
        f"step's batch; after the run's {n} steps the copy still holds "
        f"{'less than 0.1%' if share < 1e-3 else f'{share:.1%}'} of its initial weights"
    )
    return what, share < FOLLOWS
