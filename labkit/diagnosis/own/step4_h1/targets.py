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
- **class weights that favour the common classes**: the ``weight`` of ``cross_entropy`` /
  ``nll_loss`` or the ``pos_weight`` of ``binary_cross_entropy_with_logits``, times each
  class's count in the labels, gives each class's share of the loss; where those shares are
  several times as uneven as the counts themselves (weights set to the class frequencies
  where their inverse was meant, a ``pos_weight`` copied from data of another balance), the
  weights deepen the imbalance they were meant to undo (H1, the loss);
- **binary targets outside [0, 1]**: ``binary_cross_entropy(_with_logits)`` given targets
  below 0 or above 1 (a mask on the 0-255 scale): the loss then has no minimum (H2);
- **logits clamped to a narrow range** before ``cross_entropy`` or
  ``binary_cross_entropy_with_logits`` (a probability's clamp, ``clamp(1e-7, 1 - 1e-7)``,
  applied to logits): the best loss the clamp allows stays far above 0 (H1, the loss);
- **regression targets truncated to integers**: a regression loss whose targets come from
  labels of an integer type that take a few small values on both sides of 0, mostly 0, as
  standardised values cast to ``torch.long`` are (H2, the labels);
- **several classes on in a row**: ``cross_entropy``'s class-probability targets whose rows
  sum above 1 (multi-hot tags): one softmax over labels that are not exclusive (H1, the loss);
- **a softmax over the batch**: ``softmax`` / ``log_softmax`` of the model's output taken
  over dim 0, the examples of the batch, instead of over the classes (H1, the loss). A square
  matrix (examples against examples, as a contrastive loss builds) is left alone.
"""

from __future__ import annotations

import math

import torch

from ..step1_capture import setup as proto
from ...finding import OwnFinding
from ..margins import above, below

BINARY = ("binary_cross_entropy", "binary_cross_entropy_with_logits")
ON_LOGITS = ("cross_entropy", "binary_cross_entropy_with_logits")
CLAMP_FLOOR = 0.1  # a clamp that keeps the best loss above this (nats) keeps it from learning
REGRESSION = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
ZEROS = 0.4  # this share of integer regression targets at 0, with values on both sides of it
FEW = 9  # and at most this many distinct values: truncated toward 0
WEIGHTED = ("cross_entropy", "nll_loss", "binary_cross_entropy_with_logits")
AMPLIFY = 3.0  # the weighted shares this many times as uneven as the counts: weights deepen it
UNEVEN = 5.0  # and the weighted shares at least this uneven (largest over smallest)
FLOOR = 0.8  # best reachable loss / loss of a uniform guess at or above this: nothing to learn
MARGINS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)  # logit margins tried for the confident right answer
MULTI = 0.1  # this share of rows summing above 1 (several classes on): not distributions


@torch.no_grad()
def floor(func, name, args, kwargs, target) -> dict | None:
    """The loss this very call gives a confident, correct prediction (the best over MARGINS)
    and a uniform one, with the call's own targets and options; None when not measurable."""
    pred = args[0]
    if not torch.is_tensor(target) or target.is_floating_point() or pred.dim() < 2:
        return None
    if pred.shape[1] < 2:
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


@torch.no_grad()
def multi_hot(name, pred, target) -> dict | None:
    """Class-probability targets (float, the logits' shape, in [0, 1]) whose rows sum above 1
    on at least MULTI of the rows; None for one-hot, soft or smoothed labels (rows sum to 1)."""
    if name != "cross_entropy" or not torch.is_tensor(target) or not target.is_floating_point():
        return None
    if target.shape != pred.shape or target.dim() < 2 or target.shape[1] < 2:
        return None
    t = target.detach().float()
    sums, share = t.sum(1).flatten(), float((t.sum(1) > 1.01).float().mean())
    if t.min() < 0 or t.max() > 1 or share < MULTI:
        return None
    binary = bool(((t == 0) | (t == 1)).all())
    return {"share": share, "mean": float(sums.mean()), "classes": t.shape[1], "binary": binary}


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


def _every_target(target, batch, batches):
    """The loss's targets over every batch when the first batch's labels are the target
    itself; else the first batch's target alone."""
    try:
        first = proto.labels_of(batch)
        if torch.is_tensor(first) and first.shape == target.shape and torch.equal(first, target):
            tail = tuple(target.shape[1:])
            return torch.cat([proto.labels_of(b).reshape(-1, *tail) for b in batches])
    except Exception:  # labels this check cannot read batch by batch: the first batch's
        pass
    return target


@torch.no_grad()
def class_weights(call, batch, batches) -> dict | None:
    """Each class's count in the loss's targets and its share of the loss once weighted, for
    a classification loss given class weights; None when there are none or they cannot be
    read (a weight of 0 on a class that occurs is taken as deliberate)."""
    name, args, kwargs = call
    target = args[1] if len(args) > 1 else kwargs.get("target")
    if not torch.is_tensor(target):
        return None
    y = _every_target(target.detach(), batch, batches)
    if name == "binary_cross_entropy_with_logits":
        pw = kwargs.get("pos_weight")
        if not torch.is_tensor(pw) or y.numel() == 0:
            return None
        pw = pw.detach().double().reshape(-1)
        if pw.numel() > 1 and (y.dim() < 2 or y.shape[-1] != pw.numel()):
            return None
        cols = y.double().reshape(-1, pw.numel())
        pos = cols.sum(0)
        counts = torch.stack([cols.shape[0] - pos, pos], 1)  # (negatives, positives) per column
        weights = torch.stack([torch.ones_like(pw), pw.expand_as(pos)], 1)
        names = ("negatives", "positives")
    else:
        w = kwargs.get("weight", args[2] if len(args) > 2 else None)
        if not torch.is_tensor(w) or y.is_floating_point() or w.dim() != 1:
            return None
        y = y.reshape(-1)
        y = y[(y != kwargs.get("ignore_index", -100)) & (y >= 0) & (y < w.numel())]
        counts = torch.bincount(y, minlength=w.numel()).double()[None]
        weights = w.detach().double()[None]
        names = tuple(f"class {c}" for c in range(w.numel()))
    worst = None
    for n, wt in zip(counts, weights):
        seen = n > 0
        if int(seen.sum()) < 2 or bool((wt[seen] <= 0).any()):
            continue
        mass = n * wt
        uneven = float(n[seen].max() / n[seen].min())
        weighted = float(mass[seen].max() / mass[seen].min())
        if worst is None or weighted / uneven > worst["weighted"] / worst["uneven"]:
            big = int(torch.where(seen, mass, torch.zeros_like(mass)).argmax())
            small = int(torch.where(seen, mass, torch.full_like(mass, float("inf"))).argmin())
            worst = {"call": name, "uneven": uneven, "weighted": weighted, "kinds": names}
            worst.update(big=big, small=small, counts=n.tolist(), weights=wt.tolist())
    return worst


def outside_unit(name: str, target) -> list[tuple]:
    """[(loss, low, high)] when a binary loss's float target leaves [0, 1]; else []."""
    if not torch.is_tensor(target) or not target.is_floating_point() or target.numel() == 0:
        return []
    low, high = float(target.min()), float(target.max())
    return [(name, low, high)] if low < 0 or high > 1 else []


def clamp_bounds(name: str, args, kwargs) -> tuple[float, float] | None:
    """(low, high) of a clamp with both bounds numbers; else None."""
    if name not in ("clamp", "clip"):
        return None
    low = args[1] if len(args) > 1 else kwargs.get("min")
    high = args[2] if len(args) > 2 else kwargs.get("max")
    if not all(isinstance(b, (int, float)) for b in (low, high)):
        return None
    return float(low), float(high)


def clamp_floor(name: str, low: float, high: float, shape) -> float:
    """The least loss a prediction clamped to [low, high] can reach on a right answer: the
    right logit at `high`, the others at `low` (for two-class BCE, the logit at the bound)."""
    if name == "binary_cross_entropy_with_logits":
        edge = min(high, -low)  # a positive needs a high logit, a negative a low one
        return math.log1p(math.exp(-edge))
    classes = shape[1] if len(shape) > 1 else 2
    return math.log1p((classes - 1) * math.exp(low - high))


@torch.no_grad()
def truncated(name: str, batches) -> dict | None:
    """The integer labels of a regression loss, when they look truncated toward 0: values on
    both sides of 0, at most FEW of them, at least ZEROS of them 0; else None."""
    try:
        y = torch.cat([proto.labels_of(b).reshape(-1) for b in batches])
    except Exception:  # labels this check cannot gather: nothing measured
        return None
    if y.is_floating_point() or y.dtype == torch.bool or y.numel() < 16:
        return None
    values = y.unique()
    zeros = float((y == 0).double().mean())
    if not (int(values.min()) < 0 < int(values.max()) and len(values) <= FEW) or zeros < ZEROS:
        return None
    return {
        "call": name,
        "dtype": str(y.dtype).replace("torch.", ""),
        "zeros": zeros,
        "low": int(values.min()),
        "high": int(values.max()),
        "n": len(values),
    }


def _weights_sentence(cw: dict) -> str:
    big, small, n, w, kinds = cw["big"], cw["small"], cw["counts"], cw["weights"], cw["kinds"]
    option = "pos_weight" if cw["call"] == "binary_cross_entropy_with_logits" else "weight"
    return (
        f"the class weights deepen the imbalance they should undo: in {cw['call']}'s labels "
        f"{kinds[big]} count {n[big]:.0f} and {kinds[small]} {n[small]:.0f} ({cw['uneven']:.3g}:1), "
        f"and with the {option} given ({w[big]:.3g} and {w[small]:.3g}) their shares of the loss "
        f"are {cw['weighted']:.3g}:1: the loss all but ignores {kinds[small]}; weigh each class by the inverse of its frequency (n / (classes x "
        "count); for pos_weight, negatives over positives), or leave the weights out"
    )


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
    if all(f.get("multi_hot") for f in found):
        m = found[0]["multi_hot"]
        rows = "hold more than one 1 (multi-hot)" if m["binary"] else "sum above 1"
        text = (
            f"cross_entropy is given float targets as class probabilities, and {m['share']:.0%} "
            f"of the first batch's rows {rows} (a row sums to {m['mean']:.3g} on average): the "
            f"loss fits one softmax over the {m['classes']} classes, as if exactly one were on, "
            "so labels that are not exclusive (multi-label tags) compete for one unit of "
            "probability; score each label on its own: binary_cross_entropy_with_logits"
        )
        return OwnFinding("H1", "multi_hot_softmax", text)
    if all(f.get("outside") for f in found):
        name, low, high = found[0]["outside"]
        return OwnFinding(
            "H2",
            "targets_outside_unit",
            f"{name} is given targets from {low:.3g} to {high:.3g}: a binary target is a "
            "probability in [0, 1], and outside it the loss has no minimum (it falls below 0 "
            "without end as the logits grow); scale the labels into [0, 1] (a mask saved on the "
            "0-255 scale divided by 255)",
        )
    if all(
        f.get("clamped")
        and above("targets.clamp_floor", clamp_floor(*f["clamped"]), CLAMP_FLOOR, seed=i)
        for i, f in enumerate(found)
    ):
        name, low, high, shape = found[0]["clamped"]
        return OwnFinding(
            "H1",
            "logits_clamped",
            f"the model's output is clamped to [{low:.3g}, {high:.3g}] before {name}, which "
            f"takes logits: the best it can score on a right answer is "
            f"{clamp_floor(name, low, high, shape):.3g}, far above 0, so the loss cannot grow "
            "confident and its gradient never fades (a probability's clamp applied to logits); "
            "drop the clamp, or clamp the logits to a wide range such as [-50, 50]",
        )
    if all(f.get("truncated") for f in found):
        t = found[0]["truncated"]
        return OwnFinding(
            "H2",
            "targets_truncated",
            f"the regression targets are integers: {t['call']} is given labels of type "
            f"{t['dtype']} that take {t['n']} values from {t['low']} to {t['high']}, "
            f"{t['zeros']:.0%} of them 0, as values standardised and then cast to an integer "
            "type (dtype=torch.long, .long(), int()) are, truncated toward 0; keep the "
            "targets float (torch.float32) from where they are read",
        )
    if all(
        bool(f.get("weights"))
        and above("targets.weights", f["weights"]["weighted"], UNEVEN, seed=i, log=True)
        and above(
            "targets.weights_amplify",
            f["weights"]["weighted"],
            AMPLIFY * f["weights"]["uneven"],
            seed=i,
            log=True,
        )
        for i, f in enumerate(found)
    ):
        return OwnFinding("H1", "class_weights", _weights_sentence(found[0]["weights"]))
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
