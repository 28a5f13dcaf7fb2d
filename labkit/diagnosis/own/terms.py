"""The terms of a loss that is a weighted sum, seen by the replay: a number a report may show.

A multi-task or regularised loss is ``w1 * a + w2 * b + ...``: its autograd graph ends in
``AddBackward0``/``SubBackward0`` nodes over ``MulBackward0``/``DivBackward0`` nodes whose
other operand is a constant (``_saved_other``/``_saved_self``: the weight), down to the terms,
the first nodes that are not such a sum (a cross-entropy's ``NllLossBackward0``, a
``MeanBackward0``). The graph keeps the weights but not the terms' values: those are read while
``loss_fn`` runs, under a `TorchFunctionMode` that keeps the value of every scalar with a
graph it computes (keyed by its node), and looked up when the loss reaches ``backward()``.

The replay (`watch`, `before_backward`) does this for the setup's ``loss_fn`` only, and only
while the losses are such a sum: the first loss that is not (one term) ends it for the run, so
an ordinary loss pays for one step. `per_step(replay)` gives, per optimizer step, the weights,
the terms' values and the functions that made them, for the last loss of the step.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

MAX_TERMS = 6  # a longer sum (a loss over many time steps) is not split
MAX_KEPT = 10_000  # scalars kept between two backward() calls, at most
LINEAR = {"AddBackward0", "SubBackward0", "MulBackward0", "DivBackward0", "NegBackward0"}


class _Scalars(TorchFunctionMode):
    """Keeps each scalar with a graph that a torch function returns: its node -> (value, name)."""

    def __init__(self, kept: dict):
        super().__init__()
        self.kept = kept

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if type(out) is torch.Tensor and out.grad_fn is not None and out.dim() == 0:
            name = getattr(func, "__name__", "") or type(out.grad_fn).__name__
            self.kept[out.grad_fn] = (float(out.detach()), name.strip("_"))
        return out


def _constant(node, index: int) -> float | None:
    """The constant a Mul/Div node applies to its input `index`, if the other operand is one."""
    saved = getattr(node, "_saved_other" if index == 0 else "_saved_self", None)
    if isinstance(saved, torch.Tensor) and saved.numel() == 1 and not saved.requires_grad:
        return float(saved)
    return float(saved) if isinstance(saved, (int, float)) else None


def split(node, weight: float = 1.0, out=None) -> list | None:
    """[(weight, term node)] of a loss's node read as a weighted sum (a product of two terms, as
    a learned weight times a loss, is one term); None where it has more than `MAX_TERMS`."""
    out = [] if out is None else out
    kind = type(node).__name__
    inputs = [n for n, _ in getattr(node, "next_functions", ())]
    if kind not in LINEAR:
        out.append((weight, node))
    elif kind in ("AddBackward0", "SubBackward0"):
        alpha = float(getattr(node, "_saved_alpha", 1) or 1)
        for i, child in enumerate(inputs):
            if child is not None:
                sign = -alpha if (kind == "SubBackward0" and i == 1) else (alpha if i else 1.0)
                if split(child, weight * sign, out) is None:
                    return None
    elif kind == "NegBackward0":
        if inputs[0] is None or split(inputs[0], -weight, out) is None:
            return None
    else:
        live = [i for i, child in enumerate(inputs) if child is not None]
        c = _constant(node, live[0]) if len(live) == 1 else None
        if c is None or (kind == "DivBackward0" and (live[0] != 0 or c == 0)):
            out.append((weight, node))  # a product of two terms (a learned weight): one term
        elif split(inputs[live[0]], weight * (1 / c if kind == "DivBackward0" else c), out) is None:
            return None
    return out if len(out) <= MAX_TERMS else None


def watch(rp) -> None:
    """Wrap the setup's ``loss_fn`` so that it runs under `_Scalars` while terms are wanted."""
    setup = rp.setup
    if not hasattr(setup, "__dict__"):
        return  # no attribute of its own to wrap loss_fn in
    before = vars(setup).get("loss_fn")
    if before is not None and not getattr(before, "labkit_bounded", False):
        return  # an instance attribute of the learner's own: leave it alone
    original, rp.terms, rp._scalars = setup.loss_fn, [], {}

    def loss_fn(*args, **kwargs):
        if rp._busy or rp.terms is None or len(rp._scalars) > MAX_KEPT:
            return original(*args, **kwargs)  # (no backward() read what was kept: stop)
        with _Scalars(rp._scalars):
            return original(*args, **kwargs)

    # on the object itself, as `bounded` does: an adapted setup (`carry.Adapted`) forwards a
    # plain setattr to the learner's object, whose loss_fn the adapter's own calls (a loop)
    object.__setattr__(setup, "loss_fn", loss_fn)
    rp._unwatch_terms = lambda: (
        object.__setattr__(setup, "loss_fn", before)
        if before is not None
        else object.__delattr__(setup, "loss_fn")
    )


def before_backward(rp, tensor) -> None:
    """The loss reaches backward(): record its terms, or stop reading them (one term only)."""
    if getattr(rp, "terms", None) is None or not rp._scalars:
        return
    parts = split(tensor.grad_fn) if tensor.grad_fn is not None and tensor.numel() == 1 else None
    found = [rp._scalars.get(node) for _, node in parts or ()]
    rp._scalars.clear()
    if not parts or len(parts) < 2 or any(f is None for f in found):
        rp.terms = None  # not a weighted sum of terms seen in loss_fn: read no further
        return
    rp.terms.append(
        {
            "step": len(rp.steps),
            "weights": [w for w, _ in parts],
            "values": [v for v, _ in found],
            "names": [n for _, n in found],
        }
    )


def unwatch(rp) -> None:
    if hasattr(rp, "_unwatch_terms"):
        rp._unwatch_terms()
        del rp._unwatch_terms


def per_step(rp, steps: int) -> dict | None:
    """{"names", "weights", "values": per step, its weights and its terms' values} of the last
    loss of each of `steps` steps, where every step's loss summed the same terms; else None."""
    kept = {t["step"]: t for t in getattr(rp, "terms", None) or ()}
    if not steps or any(t not in kept for t in range(steps)):
        return None
    if any(kept[t]["names"] != kept[0]["names"] for t in range(steps)):
        return None
    return {
        "names": kept[0]["names"],
        "weights": [kept[t]["weights"] for t in range(steps)],
        "values": [kept[t]["values"] for t in range(steps)],
    }
