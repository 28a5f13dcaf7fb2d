"""What the targets of the learner's classification loss allow, read from the first
``cross_entropy`` / ``nll_loss`` call that the loss-path audit (`losspath`) sees:

- **a floor near chance**: the call's own targets and options (``label_smoothing=0.9``,
  meant as "90% confidence") leave a perfectly confident, correct prediction scoring nearly
  as badly as a uniform guess, so there is nothing to learn (H1, the loss);
- **labels that are the inputs**: the token targets are the model's own input tokens at the
  same positions (the shift by one forgotten) and the model is causal: its outputs before
  the last position do not move when the last input token changes. Each position then sees
  its own label and the model learns to copy it (H2, the labels). A model that reads the
  whole sequence (an autoencoder) is not flagged: copying is its task;
- **a softmax over the batch**: ``softmax`` / ``log_softmax`` of the model's output taken
  over dim 0, the examples of the batch, instead of over the classes (H1, the loss). A square
  matrix (examples against examples, as a contrastive loss builds) is left alone.
"""

from __future__ import annotations

import torch

from ..step1_capture import setup as proto
from ...finding import OwnFinding
from ..margins import below

FLOOR = 0.8  # best reachable loss / loss of a uniform guess at or above this: nothing to learn
MARGINS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)  # logit margins tried for the confident right answer


@torch.no_grad()
def floor(func, name, args, kwargs, target) -> dict | None:
    """The loss this very call gives a confident, correct prediction (the best over MARGINS)
    and a uniform one, with the call's own targets and options; None when not measurable."""
    pred = args[0]
    if (
        not torch.is_tensor(target)
        or target.is_floating_point()
        or pred.dim() < 2
        or pred.shape[1] < 2
    ):
        return None
    classes = pred.shape[1]
    if tuple(target.shape) != (pred.shape[0],) + tuple(pred.shape[2:]):
        return None
    valid = target != kwargs.get("ignore_index", -100)
    if not valid.any():
        return None
    onehot = torch.nn.functional.one_hot(target.clamp(0, classes - 1), classes).movedim(-1, 1)
    onehot = onehot.to(pred.dtype)

    def value(logits) -> float:
        x = logits if name == "cross_entropy" else torch.log_softmax(logits, 1)
        return float(func(x, target, *args[2:], **kwargs).float().mean())

    try:
        chance = value(torch.zeros_like(pred))
        best = min(value(m * onehot) for m in MARGINS)
    except Exception:  # options this check cannot reproduce: nothing measured
        return None
    if not (chance > 0 and best == best):
        return None
    return {
        "best": best,
        "chance": chance,
        "classes": classes,
        "call": name,
        "label_smoothing": float(kwargs.get("label_smoothing", 0.0) or 0.0),
    }


def same_tokens(target, batch, kwargs) -> bool:
    """The loss's token targets are the model's input tokens, position for position."""
    try:
        inputs = proto.inputs_of(batch)
    except (ValueError, TypeError, KeyError, IndexError):
        return False
    if (
        not (torch.is_tensor(target) and torch.is_tensor(inputs))
        or inputs.dim() != 2
        or target.is_floating_point()
        or inputs.is_floating_point()
        or target.numel() != inputs.numel()
    ):
        return False
    t, x = target.reshape(-1), inputs.reshape(-1)
    valid = t != kwargs.get("ignore_index", -100)
    return int(valid.sum()) >= 2 and torch.equal(t[valid], x[valid]) and x.unique().numel() > 1


def causal(predict, batch) -> bool:
    """Whether the model is causal along its time axis (`own_shapes.causal`: the axis is
    measured, so sequence-first batches are perturbed at a time step, not in a stream)."""
    from ..step1_capture.shapes import causal as along_time

    return along_time(predict, batch)


def over_batch(name, pred, args, kwargs) -> list[str]:
    """A one-item list naming a softmax of the prediction over dim 0 (the batch), else []."""
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if not isinstance(dim, int) or pred.dim() < 2 or pred.shape[0] < 2 or dim % pred.dim() != 0:
        return []
    if (
        pred.shape[0] == pred.shape[1]
    ):  # a similarity matrix (a contrastive loss): either dim is fair
        return []
    return [f"{name}(dim={dim}) of the model's output {tuple(pred.shape)}"]


def finding(found: list[dict]) -> OwnFinding | None:
    """The finding when both seeds' audits measured the same target defect."""
    if all(f.get("copies") for f in found):
        return OwnFinding(
            "H2",
            "labels_are_inputs",
            "the labels are the model's own inputs, position "
            "for position (the shift by one is missing): the loss asks the output at "
            "position t for input token t, which a causal model already sees there (its "
            "outputs before the last position do not change when the last input token "
            "does, measured), so it learns to copy its input and the loss falls toward 0 "
            "without learning the next token; shift by one, logits[:, :-1] against "
            "labels[:, 1:]",
        )
    if all(
        bool(f.get("floor"))
        and not below("targets.floor", f["floor"]["best"], FLOOR * f["floor"]["chance"], seed=i)
        for i, f in enumerate(found)
    ):
        fl = found[0]["floor"]
        ls, c = fl["label_smoothing"], fl["classes"]
        cause = (
            f"label_smoothing={ls:g} spreads the target over all {c} classes: the true class "
            f"gets {1 - ls + ls / c:.3g} and every other class {ls / c:.3g}, so the best "
            "prediction is nearly uniform and the logits have almost nothing to learn"
            if ls > 0
            else f"the targets and options given to {fl['call']} do not reward the right class"
        )
        return OwnFinding(
            "H1",
            "floor_near_chance",
            f"the loss has a floor near chance: on the first batch a "
            f"perfectly confident, correct prediction scores {fl['best']:.3g} at best, "
            f"against {fl['chance']:.3g} for a uniform guess; {cause}",
        )
    if all(f.get("batch_softmax") for f in found):
        return OwnFinding(
            "H1",
            "softmax_over_batch",
            f"the loss takes {found[0]['batch_softmax'][0]} "
            "over the batch dimension: each class is normalised across the examples of "
            "the batch instead of each example across its classes, so one example's loss "
            "depends on the others in its batch and the outputs are not per-example "
            "probabilities; normalise over the classes, dim=1 (or dim=-1)",
        )
    return None
