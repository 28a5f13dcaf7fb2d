"""Loss at init, the gradient/optimizer audit and the update probe: the packet's step 4."""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
import torch.nn as nn

from ...errors import check_number
from ._common import (
    ProbeResult,
    check_optimizer,
    default_forward,
    default_loss,
    run_forward,
    trainable,
)


def uniform_loss(n: int) -> float:
    """Cross-entropy of uniform predictions over n classes (or a vocabulary of n): ln n."""
    if n < 2:
        raise ValueError(f"n={n} is too small; a uniform baseline needs at least 2 classes.")
    return math.log(n)


@torch.no_grad()
def loss_at_init(
    model: nn.Module,
    batch,
    *,
    forward=default_forward,
    loss_fn=default_loss,
    n_classes: int | None = None,
    tolerance: float = 0.1,
) -> ProbeResult:
    """Compare the loss of an untrained model with ln C (ln V for an LM)."""
    check_number("tolerance", tolerance, minimum=0.0)
    check_number("n_classes", n_classes, minimum=2, integer=True, allow_none=True)
    trainable(model)
    output = run_forward(model, batch, forward)
    loss = float(loss_fn(output, batch))
    logits = getattr(output, "logits", output)
    n = n_classes or logits.shape[-1]
    base = uniform_loss(n)
    gap = loss - base
    if not math.isfinite(loss):
        verdict = "non-finite loss at init: check inputs and the loss before training"
    elif abs(gap) <= tolerance * base:
        verdict = f"ok: loss at init {loss:.3f} is within {tolerance:.0%} of ln {n} = {base:.3f}"
    elif gap > 0:
        verdict = (
            f"too high: {loss:.3f} vs ln {n} = {base:.3f}; the first predictions are "
            "confidently wrong (init scale, logits scale or labels)"
        )
    else:
        verdict = (
            f"too low: {loss:.3f} vs ln {n} = {base:.3f}; the model may see its answers "
            "(leak, missing causal mask) or the loss is not the one you think"
        )
    return ProbeResult("loss at init", verdict, {"loss": loss, "ln_C": base, "gap": gap, "C": n})


GRAD_READING = {
    "none": "no gradient was computed: not connected to the loss (detach, no graph) or not used",
    "zero": "connected, but this batch produced no signal for it",
    "nonfinite": "NaN or inf: find the first non-finite value",
    "finite": "healthy gradient",
}


def _grad_state(grad) -> tuple[str, float | None]:
    if grad is None:
        return "none", None
    norm = float(grad.detach().float().norm())
    if not math.isfinite(norm):
        return "nonfinite", norm
    return ("zero" if norm == 0.0 else "finite"), norm


TINY = 1e-3  # a weight matrix whose gradient, relative to its norm, is below this x the others'


def _tiny_relative(rows: list[dict], params: dict) -> list[str]:
    """A finite gradient is not healthy when, relative to its weights, it is orders of magnitude
    below the other weight matrices' (units that never fire, a vanishing path): re-read it."""
    rel = {
        r["name"]: r["grad_norm"] / float(params[r["name"]].detach().float().norm())
        for r in rows
        if r["grad"] == "finite"
        and params[r["name"]].dim() >= 2
        and params[r["name"]].numel() >= 16
        and float(params[r["name"]].detach().float().norm()) > 0
    }
    out, layers = [], set()
    for r in rows:
        others = sorted(v for k, v in rel.items() if k != r["name"])
        if (
            r["name"] in rel
            and len(others) >= 1
            and rel[r["name"]] < TINY * others[len(others) // 2]
        ):
            r["reading"] = (
                f"tiny: {rel[r['name']]:.0e} of its weights' norm, orders of magnitude below the "
                f"other layers' (median {others[len(others) // 2]:.0e}): blocked or vanishing"
            )
            out.append(f"{r['name']}: {r['reading']}")
            layers.add(r["name"].rpartition(".")[0])
    for r in rows:  # the bias of a layer whose weights are stalled is no healthier
        if (
            r["grad"] == "finite"
            and r["name"] not in rel
            and r["name"].rpartition(".")[0] in layers
        ):
            r["reading"] = "tiny, as its layer's weights: blocked or vanishing"
    return out


def gradient_audit(
    model: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor | None = None
) -> ProbeResult:
    """Run after backward(), before step(): per parameter, is it trainable, owned, and what is its grad?"""
    named = trainable(model)
    owned = check_optimizer(model, optimizer)
    if loss is not None and not isinstance(loss, torch.Tensor):
        raise TypeError(
            f"loss must be the loss tensor your forward pass produced (a scalar); "
            f"got {type(loss).__name__}. Call gradient_audit after loss.backward()."
        )
    problems = []
    if loss is not None and (not loss.requires_grad or loss.grad_fn is None):
        problems.append("the loss has no grad_fn: no autograd graph reaches it")
    rows = []
    for name, p in model.named_parameters():
        state, norm = _grad_state(p.grad) if p.requires_grad else ("frozen", None)
        row = {
            "name": name,
            "requires_grad": p.requires_grad,
            "in_optimizer": id(p) in owned,
            "grad": state,
            "grad_norm": norm,
        }
        if p.requires_grad and not row["in_optimizer"]:
            row["reading"] = (
                "has a gradient but is not in the optimizer: it will never move"
                if state == "finite"
                else "not in the optimizer"
            )
            problems.append(f"{name} is not in the optimizer")
        else:
            row["reading"] = GRAD_READING.get(state, "requires_grad=False: frozen on purpose?")
        if state in ("none", "nonfinite"):
            problems.append(f"{name}: {GRAD_READING[state]}")
        rows.append(row)
    problems += _tiny_relative(rows, dict(model.named_parameters()))
    model_ids = {id(p) for p in model.parameters()}
    strangers = [
        p for group in optimizer.param_groups for p in group["params"] if id(p) not in model_ids
    ]
    if strangers:
        problems.append(
            f"the optimizer also owns {len(strangers)} tensor(s) that are not in this "
            "model: a layer replaced after the optimizer was built?"
        )
    none = [r["name"] for r in rows if r["grad"] == "none"]
    if none and len(none) == len(named):
        verdict = "no parameter has a gradient: the loss is disconnected from the model"
    elif problems:
        verdict = f"{len(problems)} problem(s): " + "; ".join(problems[:3])
    else:
        verdict = "ok: every trainable parameter is in the optimizer with a finite gradient"
    return ProbeResult(
        "gradient audit",
        verdict,
        {"rows": rows, "problems": problems, "foreign_tensors": len(strangers)},
    )


class UpdateProbe:
    """Measure what optimizer.step() did to a few named parameters, cloning only those.

    with UpdateProbe(model, ["head.weight"]) as probe:
        optimizer.step()
    probe.result
    """

    def __init__(self, model: nn.Module, names: list[str] | None = None):
        named = dict(trainable(model))
        if names is None:  # first, middle and last trainable tensors
            keys = list(named)
            names = sorted({keys[0], keys[len(keys) // 2], keys[-1]}, key=keys.index)
        missing = [n for n in names if n not in named]
        if missing:
            from ...errors import suggest

            raise ValueError(
                f"names={missing} are not trainable parameters of "
                f"{type(model).__name__}.{suggest(missing[0], named)}"
            )
        self.params = {n: named[n] for n in names}
        self.result: ProbeResult | None = None

    def __enter__(self):
        self._before = {n: p.detach().clone() for n, p in self.params.items()}
        return self

    def __exit__(self, *exc):
        rows = []
        for name, p in self.params.items():
            delta = float((p.detach() - self._before[name]).float().norm())
            weight = float(p.detach().float().norm())
            rows.append(
                {
                    "name": name,
                    "delta_norm": delta,
                    "grad_is_none": p.grad is None,
                    "relative_update": delta / (weight + 1e-12),
                }
            )
        frozen = [r["name"] for r in rows if r["delta_norm"] == 0.0 and not r["grad_is_none"]]
        unreached = [r["name"] for r in rows if r["delta_norm"] == 0.0 and r["grad_is_none"]]
        broken = [r["name"] for r in rows if not math.isfinite(r["relative_update"])]
        huge = [r["name"] for r in rows if r["relative_update"] > 1.0 and r["name"] not in broken]
        parts = []
        if frozen:
            parts.append(
                f"no update for {', '.join(frozen)}: check optimizer membership, the "
                "learning rate and GradScaler skips"
            )
        if unreached:
            parts.append(
                f"no update for {', '.join(unreached)}: its gradient is None, so the loss "
                "never reached it (see the gradient audit)"
            )
        if parts:
            verdict = "; ".join(parts)
        elif broken:  # NaN or inf is no size: "larger than the weights" would not be true
            verdict = f"non-finite update for {', '.join(broken)}: the weights are now NaN or inf"
        elif huge:
            verdict = f"huge update for {', '.join(huge)}: the step is larger than the weights"
        else:
            verdict = "ok: every probed parameter moved by a finite, modest amount"
        self.result = ProbeResult("update probe", verdict, {"rows": rows})
        return False


@contextmanager
def update_probe(model: nn.Module, names: list[str] | None = None):
    probe = UpdateProbe(model, names)
    with probe:
        yield probe
