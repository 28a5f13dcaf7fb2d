"""H1: a model whose output for one example depends on the other examples of its batch.

A model maps each example to its output on its own: in eval mode (dropout off, normalisation on
its running statistics) permuting the examples of a batch permutes the outputs, and changes
nothing else. A layer that reads the batch axis as another axis breaks that: an RNN built
without ``batch_first=True`` and fed (batch, time) tensors recurs along the batch; a softmax or
a normalisation over dim 0 mixes the examples. Such a model cannot read what each label depends
on, and a label-shuffle control on it reads as labels without signal: this check comes first.

The measurement: a fresh ``make_model(seed)`` in eval mode, the learner's ``loss_fn`` on the
first batch and on the same batch with its examples in reverse order (every tensor whose first
axis is the batch's, one label per example), and the model's outputs compared row for row.
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above
from ..step1_capture import setup as proto

MIXED = 1e-3  # outputs moved by this share of their size when only the order changed


def _output(setup, model, batch):
    got = []

    def keep(module, args, out):
        out = getattr(out, "logits", out)
        got.append(out[0] if isinstance(out, tuple) else out)

    handle = model.register_forward_hook(keep)
    try:
        with torch.no_grad():
            proto.loss(setup, model, batch)
    finally:
        handle.remove()
    return got[0] if got and isinstance(got[0], torch.Tensor) else None


def _reversed(batch, n: int):
    rev = torch.arange(n - 1, -1, -1)

    def flip(v):
        return v[rev] if isinstance(v, torch.Tensor) and v.dim() and v.shape[0] == n else v

    if isinstance(batch, dict):
        return {k: flip(v) for k, v in batch.items()}
    return type(batch)(flip(v) for v in batch)


def mixing(ev) -> float | None:
    """How far each example's output moves, relative to the outputs' size, when only the order
    of the batch's examples changes (0 for a model that treats each example on its own); None
    where it cannot be read (labels that are not one per example, an output not per example)."""

    def make():
        try:
            batch = ev.batches[0]
            x, y = proto.inputs_of(batch), proto.labels_of(batch)
            n = len(y)
            if y.dim() != 1 or x.dim() < 2 or x.shape[0] != n or x.shape[1] == n or n < 4:
                return None  # not one label per row of the inputs, or an ambiguous layout
            model = proto.make_model(ev.setup, ev.seed)
            model.eval()
            a = _output(ev.setup, model, batch)
            b = _output(ev.setup, model, _reversed(batch, n))
        except Exception:  # a batch or model this check cannot replay: nothing read
            return None
        if a is None or b is None or a.shape != b.shape or a.dim() == 0 or a.shape[0] != n:
            return None
        a, b = a.float(), b.float().flip(0)
        return float((a - b).norm() / a.norm().clamp_min(1e-12))

    return ev.once("batch_mixing", make)


def mixing_rule(evs) -> OwnFinding | None:
    """H1 where permuting a batch's examples changes their outputs on every seed."""
    got = [mixing(ev) for ev in evs]
    if any(g is None for g in got) or not all(
        above("model.batch_mixing", g, MIXED, seed=ev.seed, log=True) for g, ev in zip(got, evs)
    ):
        return None
    return OwnFinding(
        "H1",
        "batch_mixing",
        f"your model mixes the examples of a batch: in eval mode, with the batch's examples in "
        f"reverse order, each example's output moves by {got[0]:.2g} / {got[1]:.2g} of the "
        "outputs' size (a model that treats each example on its own moves by 0), so an "
        "example's prediction depends on the others in its batch; a layer reads the batch axis "
        "as another one: an RNN without batch_first=True fed (batch, time) tensors, or a "
        "softmax or norm over dim 0; give each layer the layout it expects",
        arm=None,
        variable=None,
    )
