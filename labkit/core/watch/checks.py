"""What `labkit.watch` checks before it hooks anything, and what it says once about a
model and optimizer that do not match (parameters no step can move, foreign tensors)."""

from __future__ import annotations

import torch
import torch.nn as nn


def check_arguments(model, optimizer, scaler, budget) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}.")
    if (
        isinstance(optimizer, (list, tuple))
        and optimizer
        and all(isinstance(o, torch.optim.Optimizer) for o in optimizer)
    ):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer; got a {type(optimizer).__name__} of "
            f"{len(optimizer)} optimizers; one watch follows one optimizer: make one per "
            "optimizer, over the module it steps (a GAN's: labkit.watch(model.generator, "
            "opt_g) and labkit.watch(model.discriminator, opt_d))."
        )
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer; got "
            f"{type(optimizer).__name__}. Pass the optimizer your loop steps."
        )
    if scaler is not None and not (hasattr(scaler, "step") and hasattr(scaler, "get_scale")):
        raise TypeError(
            f"scaler must be a torch.amp.GradScaler (or None); got {type(scaler).__name__}."
        )
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 0
    ):
        raise ValueError(
            f"budget={budget!r} is not allowed; give the bytes the watch may keep "
            "beside the parameters as a whole number >= 0, or None for the default."
        )
    if next(model.parameters(), None) is None:
        raise ValueError(
            f"model {type(model).__name__} has no parameters; there is nothing to watch."
        )
    meta = [n for n, p in model.named_parameters() if p.is_meta]
    if meta:
        raise ValueError(
            f"model {type(model).__name__} has {len(meta)} parameter(s) on the meta device "
            f"({', '.join(meta[:3])}{', ...' if len(meta) > 3 else ''}): they hold no values "
            "yet, so no step can be measured. Make them real first (model.to_empty(device="
            "'cpu') and initialise them, or load a checkpoint), build the optimizer on them, "
            "then call labkit.watch."
        )


NOT_HELD = "parameter(s) require grad but are not in the optimizer"


def not_held(names: list[str]) -> str:
    return f"{len(names)} {NOT_HELD}, so no step will move them: {', '.join(names)}."


def moved_elsewhere(names: list[str]) -> str:
    """The sentence for parameters outside the watched optimizer that moved between its
    steps (another optimizer, a SparseAdam beside an Adam, or an in-place update by hand)."""
    return (
        f"{len(names)} parameter(s) are not in this optimizer and moved between its steps "
        f"(another optimizer, or an update by hand): {', '.join(names)}. Their update_norm "
        "counts only what this optimizer's steps move them, 0; to measure theirs, watch the "
        "optimizer that holds them (labkit.watch(model, that_optimizer))."
    )


def findings(model, named, owned) -> list[str]:
    """Sentences, said once: parameters that can never move, tensors that are not the model's."""
    out = []
    missing = [n for n, p in named if p.requires_grad and id(p) not in owned]
    if missing:
        out.append(not_held(missing))
    model_ids = {id(p) for p in model.parameters()}
    foreign = sum(1 for i in owned if i not in model_ids)
    if foreign:
        out.append(
            f"the optimizer also holds {foreign} tensor(s) that are not in this model "
            "(a layer replaced after the optimizer was built?); their updates are not "
            "measured."
        )
    return out
