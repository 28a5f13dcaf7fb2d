"""H1, read per example: a model whose output for one example depends on the other examples of
its batch (`mixing_rule`), and a loss that never counts the rows of a real class (`dropped_rule`).

A model maps each example to its output on its own: in eval mode (dropout off, normalisation on
its running statistics) permuting the examples of a batch permutes the outputs, and changes
nothing else. A layer that reads the batch axis as another axis breaks that: an RNN built
without ``batch_first=True`` and fed (batch, time) tensors recurs along the batch; a softmax or
a normalisation over dim 0 mixes the examples. Such a model cannot read what each label depends
on, and a label-shuffle control on it reads as labels without signal: this check comes first.

The measurement: a fresh ``make_model(seed)`` in eval mode, the input the learner's ``loss_fn``
gives it on the first batch, and the model called on that input and on the same input with its
examples in reverse order (every tensor whose first axis is the batch's, one label per example):
the outputs compared row for row. A model whose eval-mode output moves between two calls on the
same input (it draws noise, as a VAE's sample does) is not read: its order tells nothing.
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above
from ..step1_capture import setup as proto

MIXED = 1e-3  # outputs moved by this share of their size when only the order changed


def _output(setup, model, batch, grad: bool = False):
    """The model's output inside the learner's loss_fn on `batch`; with `grad`, the gradient
    the loss sends to it instead."""
    got = []

    def keep(module, args, out):
        out = getattr(out, "logits", out)
        out = out[0] if isinstance(out, tuple) else out
        if grad and isinstance(out, torch.Tensor) and out.requires_grad:
            out.retain_grad()
        got.append(out)

    handle = model.register_forward_hook(keep)
    try:
        with torch.set_grad_enabled(grad):
            loss = proto.loss(setup, model, batch)
            if grad:
                loss.backward()
    finally:
        handle.remove()
    out = got[0] if got and isinstance(got[0], torch.Tensor) else None
    return out.grad if grad and out is not None else out


def _reversed(batch, n: int):
    rev = torch.arange(n - 1, -1, -1)

    def flip(v):
        return v[rev] if isinstance(v, torch.Tensor) and v.dim() and v.shape[0] == n else v

    if isinstance(batch, dict):
        return {k: flip(v) for k, v in batch.items()}
    return type(batch)(flip(v) for v in batch)


def _inputs(setup, model, batch) -> tuple | None:
    """The arguments of the model's first call inside the learner's loss_fn on `batch`."""
    got = []

    def keep(module, args, kwargs):
        got.append((args, kwargs))

    handle = model.register_forward_pre_hook(keep, with_kwargs=True)
    try:
        with torch.no_grad():
            proto.loss(setup, model, batch)
    finally:
        handle.remove()
    return got[0] if got else None


def _out(model, args, kwargs):
    with torch.no_grad():
        out = model(*args, **kwargs)
    out = getattr(out, "logits", out)
    return out[0] if isinstance(out, tuple) else out


def mixing(ev) -> float | None:
    """How far each example's output moves, relative to the outputs' size, when only the order
    of the examples in the model's own input changes (0 for a model that treats each example on
    its own); None where it cannot be read (labels that are not one per example, an output not
    per example, a model whose output differs between two calls on one input). The input is the
    one loss_fn gave the model (noise it adds stays put)."""

    def make():
        try:
            batch = ev.batches[0]
            x, y = proto.inputs_of(batch), proto.labels_of(batch)
            n = len(y)
            if y.dim() != 1 or x.dim() < 2 or x.shape[0] != n or x.shape[1] == n or n < 4:
                return None  # not one label per row of the inputs, or an ambiguous layout
            model = proto.make_model(ev.setup, ev.seed)
            model.eval()
            args, kwargs = _inputs(ev.setup, model, batch)
            a, again = _out(model, args, kwargs), _out(model, args, kwargs)
            b = _out(model, _reversed(tuple(args), n), _reversed(dict(kwargs), n))
        except Exception:  # a batch or model this check cannot replay: nothing read
            return None
        if not all(isinstance(t, torch.Tensor) for t in (a, again, b)):
            return None
        if a.shape != again.shape or not torch.equal(a, again):
            return None  # a forward that draws its own noise (a VAE's sample): order unread
        if a.shape != b.shape or a.dim() == 0 or a.shape[0] != n:
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


DROPPED = 0.01  # a class whose rows make up at least this share of the batches, all dropped


def dropped(ev, batches: int = 4) -> dict | None:
    """{class id: (rows dropped, rows held)} over the first `batches` batches, for the class
    ids the output has a logit for whose rows the loss gives no gradient at all, where every
    row of that class is dropped; None where it cannot be read (labels not one class id per
    example, an output without one row of logits per example)."""

    def make():
        seen, zero = {}, {}
        try:
            model = proto.make_model(ev.setup, ev.seed)
            for batch in ev.batches[:batches]:
                y = proto.labels_of(batch)
                if y.dim() != 1 or y.is_floating_point():
                    return None
                g = _output(ev.setup, model, batch, grad=True)
                if g is None or g.dim() != 2 or g.shape[0] != len(y):
                    return None
                model.zero_grad(set_to_none=True)
                none = g.abs().sum(1) == 0
                for k, z in zip(y.tolist(), none.tolist()):
                    if 0 <= k < g.shape[1]:
                        seen[k] = seen.get(k, 0) + 1
                        zero[k] = zero.get(k, 0) + int(z)
        except Exception:  # a batch or loss this check cannot replay: nothing read
            return None
        total = sum(seen.values())
        return {
            k: (zero[k], seen[k]) for k in seen if zero[k] == seen[k] and seen[k] >= DROPPED * total
        }

    return ev.once("dropped_rows", make)


def dropped_rule(evs) -> OwnFinding | None:
    """H1 where the loss gives no gradient to every row of one real class, on every seed."""
    got = [dropped(ev) for ev in evs]
    if not all(got) or set(got[0]) != set(got[1]):
        return None
    ids = sorted(got[0])
    rows = sum(got[0][k][0] for k in ids)
    held = ", ".join(str(k) for k in ids)
    return OwnFinding(
        "H1",
        "class_dropped",
        f"your loss never counts class {held}: over the first batches, all {rows} rows labelled "
        f"{held} get no gradient from the loss (exactly 0 on every logit), though the model has "
        f"an output for that class; the model is never taught it, and the loss you log leaves "
        f"those rows out (ignore_index={ids[0]} on a real class, as a loop where id {ids[0]} "
        "meant padding sets it, or a mask that drops them); set ignore_index to an id no class "
        "uses",
        arm=None,
        variable=None,
    )


OUTSIDE = 0.2  # this share of the targets beyond one end of the outputs' range
PILED = 0.1  # and this share of the outputs at that end (within 1% of the targets' span)
SPANS = 0.2  # the outputs spanning at least this share of the targets' span (not one constant)


def _bounded(out: torch.Tensor, y: torch.Tensor) -> dict | None:
    """The end of the outputs' range that a share of the targets lies beyond, with the outputs
    piled up at it (a bound the model's last layer sets), or None. Outputs that barely vary (a
    model that predicts the mean of noisy targets) are no bound."""
    lo, hi, span = float(out.min()), float(out.max()), float(y.max() - y.min())
    tol = 0.01 * span
    if not span > 0 or hi - lo < SPANS * span:
        return None
    for side, beyond, end in (
        ("below", float((y < lo - tol).float().mean()), lo),
        ("above", float((y > hi + tol).float().mean()), hi),
    ):
        piled = float(((out - end).abs() <= tol).float().mean())
        if beyond >= OUTSIDE and piled >= PILED:
            return {
                "side": side,
                "share": beyond,
                "piled": piled,
                "range": (lo, hi),
                "targets": (float(y.min()), float(y.max())),
            }
    return None


def reach(ev, batches: int = 8) -> dict | None:
    """What `_bounded` reads on the plain loop's trained model over the first batches, for a
    regression (float targets, one per output); None where it does not apply or holds."""

    def make():
        try:
            if not proto.labels_of(ev.batches[0]).is_floating_point():
                return None  # class ids: no range to reach
            model = ev.arm("own").model
            was = model.training
            model.eval()
            outs, ys = [], []
            for batch in ev.batches[:batches]:
                y = proto.labels_of(batch)
                out = _output(ev.setup, model, batch)
                if not y.is_floating_point() or out is None or out.numel() != y.numel():
                    return None
                outs.append(out.reshape(-1).float())
                ys.append(y.reshape(-1).float())
            model.train(was)
        except Exception:  # a batch or model this check cannot replay: nothing read
            return None
        return _bounded(torch.cat(outs), torch.cat(ys)) if outs else None

    return ev.once("reach", make)


def reach_rule(evs) -> OwnFinding | None:
    """H1 where, on every seed, the trained model's outputs stop at a bound that a share of the
    targets lies beyond."""
    got = [reach(ev) for ev in evs]
    if not all(got) or got[0]["side"] != got[1]["side"]:
        return None
    g = got[0]
    (lo, hi), (ylo, yhi) = g["range"], g["targets"]
    return OwnFinding(
        "H1",
        "output_bounded",
        f"your model's outputs cannot reach the targets: after a plain loop's training, its "
        f"outputs over the first batches stay within [{lo:.3g}, {hi:.3g}], "
        f"{g['piled']:.0%} of them at the {'lower' if g['side'] == 'below' else 'upper'} end, "
        f"while {got[0]['share']:.0%} / {got[1]['share']:.0%} of the targets (seeds "
        f"{evs[0].seed} / {evs[1].seed}) lie {g['side']} that range (the targets span "
        f"[{ylo:.3g}, {yhi:.3g}]); the last layer bounds the output (a sigmoid, tanh or ReLU "
        "at the end, kept from a task whose targets sat in its range, or targets rescaled "
        "after the model was written): match the output layer to the targets' range",
        arm=None,
        variable=None,
    )
