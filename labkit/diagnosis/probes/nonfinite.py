"""Locate the first non-finite value of a training step, in the order the packet gives:
inputs, then each module's output as the forward pass produces it, the loss, the
(unscaled) gradients, and the parameters after the step.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn as nn

from ...core.data import IGNORE
from ._common import ProbeResult, default_forward, default_loss, run_forward, trainable


def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            yield from _tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors(x)
    elif hasattr(obj, "__dataclass_fields__"):
        for name in obj.__dataclass_fields__:
            yield from _tensors(getattr(obj, name))


def _bad(obj) -> bool:
    return any(t.is_floating_point() and not torch.isfinite(t).all() for t in _tensors(obj))


def first_nonfinite(
    model: nn.Module,
    batch,
    *,
    forward=default_forward,
    loss_fn=default_loss,
    optimizer: torch.optim.Optimizer | None = None,
    scaler=None,
    autocast_dtype: torch.dtype | None = None,
    step: bool = False,
    anomaly: bool = False,
) -> ProbeResult:
    """Run one step on `batch` and name the first tensor that is NaN or inf (or None if all finite).

    With `step=True` the optimizer steps (through `scaler` if given) and parameters are
    checked after it; with `anomaly=True` backward runs under autograd anomaly detection.
    """
    named = trainable(model)
    checks: list[tuple[str, bool]] = []

    def found(where: str, stage: str, note: str = "") -> ProbeResult:
        checks.append((where, False))
        return ProbeResult(
            "first non-finite",
            f"first non-finite value: {where} ({stage})" + (f"; {note}" if note else ""),
            {"where": where, "stage": stage, "note": note, "checks": checks},
        )

    items = (
        batch.items()
        if isinstance(batch, dict)
        else enumerate(batch if isinstance(batch, (tuple, list)) else [batch])
    )
    for key, value in items:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            if not torch.isfinite(value).all():
                n = int((~torch.isfinite(value)).sum())
                rows = sorted({int(i) for i in (~torch.isfinite(value)).nonzero()[:, 0]})[:5]
                return found(f"input {key}", "data", f"{n} NaN/inf values in batch rows {rows}")
            checks.append((f"input {key}", True))
    labels = batch.get("labels") if isinstance(batch, dict) else None
    if labels is not None and labels.dim() == 2 and int((labels[:, 1:] != IGNORE).sum()) == 0:
        return found(
            "labels",
            "data",
            "no supervised tokens: every label is -100, a mean over zero tokens is 0/0",
        )
    broken_params = [n for n, p in named if not torch.isfinite(p).all()]
    order: list[tuple[str, bool]] = []
    names = {m: n for n, m in model.named_modules()}
    hooks = [
        m.register_forward_hook(lambda mod, inp, out: order.append((names[mod], _bad(out))))
        for m in model.modules()
        if m is not model
    ]
    amp = (
        torch.autocast(next(model.parameters()).device.type, dtype=autocast_dtype)
        if autocast_dtype
        else contextlib.nullcontext()
    )
    try:
        with amp:
            output = run_forward(model, batch, forward)
            loss = loss_fn(output, batch)
    finally:
        for h in hooks:
            h.remove()
    for name, bad in order:
        if bad:
            note = (
                f"parameters already non-finite before this step: {broken_params[:3]}"
                if broken_params
                else ""
            )
            return found(f"module {name}", "forward", note)
        checks.append((f"module {name}", True))
    logits = getattr(output, "logits", output)
    if _bad(logits):
        return found("model output", "forward")
    checks.append(("model output", True))
    if not torch.isfinite(loss.detach()).all():
        return found(
            "loss",
            "loss",
            "the model output is finite, so the loss computation "
            "itself overflows or divides by zero",
        )
    checks.append(("loss", True))
    if loss.grad_fn is None:
        return ProbeResult(
            "first non-finite",
            "all finite, but the loss has no graph to backpropagate",
            {"where": None, "stage": None, "checks": checks},
        )
    for _, p in named:
        p.grad = None
    anomaly_note = ""
    with torch.autograd.detect_anomaly(check_nan=True) if anomaly else contextlib.nullcontext():
        try:
            (scaler.scale(loss) if scaler is not None else loss).backward()
        except RuntimeError as exc:
            anomaly_note = str(exc).strip().splitlines()[0]
    if anomaly_note:
        return found("gradients (backward raised)", "gradients", anomaly_note)
    if scaler is not None and optimizer is not None:
        scaler.unscale_(optimizer)  # look at true gradients, not scaled ones
    for name, p in named:
        if p.grad is not None and not torch.isfinite(p.grad).all():
            return found(f"gradient {name}", "gradients", anomaly_note)
    checks.append(("gradients", True))
    if step and optimizer is not None:
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        for name, p in named:
            if not torch.isfinite(p).all():
                return found(f"parameter {name}", "optimizer", "the update itself overflowed")
        checks.append(("parameters after step", True))
    return ProbeResult(
        "first non-finite",
        "all finite",
        {"where": None, "stage": None, "loss": float(loss.detach()), "checks": checks},
    )
