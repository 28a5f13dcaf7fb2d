"""Padding counted in a sequence loss (the design card's `padding_in_loss`, H1: the loss is
averaged over padding).

Right-padded token rows end in runs of one id. When the targets are dominated by that id
and the loss is not told to ignore it, the model spends its capacity predicting padding,
which is easy, so the loss reads low and nothing looks wrong. Measured, not guessed:
- the pad id: the token that ends most input rows in runs of two or more, and is also the
  most common target;
- whether the loss counts it: the gradient of the learner's loss with respect to the
  model's output at positions whose input and next input are both that id. A loss that
  ignores padding (``ignore_index``, a mask) gives those positions exactly 0;
- how much it changes the number: the loss over every target against the loss with the pad
  id ignored, when the output is (batch, time, classes) logits beside (batch, time) targets.
"""

from __future__ import annotations

import torch

from ..step1_capture import setup as proto
from ...finding import OwnFinding
from ..margins import below
from ..scored import cross_entropy

ENDS = 0.3  # the pad id ends at least this share of the rows, in runs of two or more
COUNTED = 1e-3  # per-position gradient at pad positions above this share of the real ones'


def _pad_id(batches) -> tuple[int, float, float] | None:
    xs = [proto.inputs_of(b) for b in batches[:16]]
    ys = [proto.labels_of(b) for b in batches[:16]]
    if not all(torch.is_tensor(x) and x.dim() == 2 and not x.is_floating_point() for x in xs):
        return None
    if not all(
        torch.is_tensor(y) and not y.is_floating_point() and y.shape == x.shape
        for x, y in zip(xs, ys)
    ):
        return None  # token targets, one per input position
    x, y = (
        torch.cat([t for t in xs if t.shape[1] == xs[0].shape[1]]),
        torch.cat([t.flatten() for t in ys]),
    )
    if x.shape[1] < 3:
        return None
    last = x[:, -1]
    pad = int(last.mode().values)
    runs = ((x[:, -1] == pad) & (x[:, -2] == pad)).float().mean().item()
    ids, counts = y[y >= 0].unique(return_counts=True)
    if runs < ENDS or not len(ids) or int(ids[counts.argmax()]) != pad:
        return None
    return pad, runs, (y == pad).float().mean().item()


def _output_grad(setup, model, batch):
    """The learner's loss and the gradient of it with respect to the model's top-level output."""
    seen = {}

    def hook(_m, _a, out):
        if torch.is_tensor(out) and out.requires_grad and "out" not in seen:
            out.retain_grad()
            seen["out"] = out

    handle = model.register_forward_hook(hook)
    try:
        loss = setup.loss_fn(model, batch)
        loss.backward()
    finally:
        handle.remove()
    out = seen.get("out")
    value = float(loss.detach())
    return (value, out) if out is not None and out.grad is not None else (value, None)


def _counted(ev, pad: int):
    """(per-position gradient at pad, at real tokens, loss, loss with pad ignored) on one batch."""
    batch = ev.batches[0]
    x, y = proto.inputs_of(batch), proto.labels_of(batch)
    torch.manual_seed(ev.seed)
    model = proto.make_model(ev.setup, ev.seed)
    try:
        loss, out = _output_grad(ev.setup, model, batch)
    except Exception:  # a loss this check cannot differentiate: nothing measured
        return None
    if out is None or out.dim() < 2:
        return None
    g = out.grad.detach()
    if tuple(g.shape[:2]) == tuple(x.shape[::-1]) and x.shape[0] != x.shape[1]:
        g = g.transpose(0, 1)  # sequence-first output
    if tuple(g.shape[:2]) != tuple(x.shape):
        return None
    both = torch.zeros_like(x, dtype=torch.bool)
    both[:, :-1] = (x[:, :-1] == pad) & (x[:, 1:] == pad)
    real = x != pad
    if not both.any() or not real.any():
        return None
    per_pos = g.flatten(2).norm(dim=-1) if g.dim() > 2 else g.abs()
    kept = None
    if (
        out.dim() == 3 and tuple(out.shape[:2]) == tuple(x.shape) and not torch.equal(x, y)
    ):  # y aligned
        with torch.no_grad():  # the labels the loss ignores (-100) are left out too
            kept = cross_entropy(out.detach(), y, ignore=pad)
            kept = None if kept is None else kept.item()
    return per_pos[both].mean().item(), per_pos[real].mean().item(), loss, kept


def padding_rule(evs) -> OwnFinding | None:
    found = _pad_id(evs[0].batches)
    if found is None:
        return None
    pad, runs, share = found
    measured = [_counted(ev, pad) for ev in evs]
    if any(
        m is None or not m[1] > 0 or below("padding.counted", m[0], COUNTED * m[1], seed=i)
        for i, m in enumerate(measured)
    ):
        return None
    at_pad, at_real, loss, kept = measured[0]
    line = (
        ""
        if kept is None
        else (f" Your loss on a batch is {loss:.3g}; with the pad id ignored it is {kept:.3g}.")
    )
    return OwnFinding(
        "H1",
        "padding_in_loss",
        f"the loss counts padding: token {pad} ends "
        f"{runs:.0%} of the input rows in runs (right padding) and is {share:.0%} of the "
        f"targets, and the loss's gradient at positions that are padding is not 0 "
        f"({at_pad:.2g} per position against {at_real:.2g} at real tokens): the pad "
        "targets are in the mean, easy to predict, so the loss reads low while the real "
        f"tokens get a diluted gradient. Ignore them: ignore_index={pad} in cross_entropy "
        "(or labels set to -100 where the attention mask is 0)." + line,
    )
