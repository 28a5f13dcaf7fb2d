"""`labkit.watch(..., scaler=...)`: a GradScaler's scale per step, and the steps it skips
(inf/NaN gradients: no ``optimizer.step()``), recorded with ``skipped=True`` and an update
of exactly 0."""

from __future__ import annotations

import torch

from .guard import guarded


def wrap(w, scaler) -> None:
    """Wrap ``scaler.step``; `Watch.close` removes the wrapper."""
    original = scaler.step

    def step(optimizer, *args, **kwargs):  # records the scale, and the steps it skips
        if optimizer is not w.optimizer:
            return original(optimizer, *args, **kwargs)
        w._scale_now = None if w.stopped else _read_guarded(w)
        before = w.steps
        try:
            out = original(optimizer, *args, **kwargs)
            if w.steps == before:  # inf/NaN gradients: optimizer.step() never ran
                w._no_step_row(skipped=True)
            return out
        finally:
            w._scale_now = None

    step.__wrapped_by_labkit__ = True
    scaler.step = step


@guarded
def _read_guarded(w):
    return read_scale(w)


def read_scale(w):
    scale = getattr(w.scaler, "_scale", None)
    if isinstance(scale, torch.Tensor):
        return scale.detach().clone()  # stays on the device: no host sync
    return float(w.scaler.get_scale())


def unwrap(scaler) -> None:
    if scaler is not None and getattr(scaler.__dict__.get("step"), "__wrapped_by_labkit__", False):
        del scaler.step
