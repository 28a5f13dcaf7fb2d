"""A failed overfit gate on data that carries signal: is the loss itself unable to reach 0?

The label-shuffle control can show that the labels carry signal while the overfit probe
still stalls on 64 samples. Then the data is not the problem; the loss may be. This
module trains on the 64 samples with the learner's own loss, keeps the examples the model
now predicts right, and scores them again with the model's outputs multiplied by 1000:
a loss that takes logits then falls to ~0 on them (each right answer becomes certain),
while a loss with a floor (a softmax or sigmoid applied before a loss that applies its
own) stays well above 0 and stays bounded when the certain answer is made wrong: that
saturation tells it from a loss on logits with a term of its own added (a regulariser, a
contrastive term), whose certain wrong answers cost ~1000x more. That is an H1 defect of
the loss path. Only (inputs, integer labels) batches
whose model returns one row of class scores per example can be read this way; for any
other batch the answer is None and the caller says UNKNOWN.
"""

from __future__ import annotations

import copy

import torch

from ..step1_capture import setup as proto
from ...finding import OwnFinding

STEPS, LR = 300, 1e-2
RIGHT = 0.5  # at least this share of the batch predicted right, to have examples to score
FLOOR = 0.2  # a loss still above this on right answers made certain is a floor
SCALE = 1000.0  # how much more certain the outputs are made
BOUNDED = 50.0  # a saturated loss stays below this even when the certain answer is wrong


class _Sharper(torch.nn.Module):
    """The learner's model with its outputs multiplied by `scale`."""

    def __init__(self, model, scale: float):
        super().__init__()
        self.model, self.scale = model, scale

    def forward(self, *args, **kwargs):
        return self.scale * self.model(*args, **kwargs)


def _select(batch, mask):
    """The batch, in its own structure, cut to the examples where `mask` is True."""
    cut = lambda t: t[mask] if torch.is_tensor(t) and t.dim() and len(t) == len(mask) else t  # noqa: E731
    if isinstance(batch, dict):
        return {k: cut(v) for k, v in batch.items()}
    return type(batch)(cut(t) for t in batch)


def _inputs_and_labels(batch):
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        x, y = batch
    elif isinstance(batch, dict):
        y = batch.get("labels", batch.get("y", batch.get("target")))
        x = batch.get("x", batch.get("inputs", batch.get("input")))
    else:
        return None
    if (
        not (torch.is_tensor(x) and torch.is_tensor(y))
        or y.dim() != 1
        or y.is_floating_point()
        or len(y) != len(x)
    ):  # e.g. a token grid's labels, one per position: not one row per example
        return None
    return x, y


def _wrong(setup, model, batch, classes: int) -> float | None:
    """The loss on `batch` made certain, with every label moved to another class."""
    y = _inputs_and_labels(batch)[1]
    try:
        return float(
            setup.loss_fn(_Sharper(model, SCALE), proto.with_labels(batch, (y + 1) % classes))
        )
    except Exception:  # a loss_fn that refuses other labels: no answer, the floor stands alone
        return None


def loss_floor(setup, seed: int, batches) -> OwnFinding | None:
    """An H1 finding when the learner's loss stays high on a batch predicted 100% right."""
    batch = proto.take(batches, 64)
    xy = _inputs_and_labels(batch)
    if xy is None:
        return None
    torch.manual_seed(seed)
    model = proto.make_model(setup, seed)
    proto.make_optimizer(setup, model)  # setup code may change the model, as the loop sees it
    model = copy.deepcopy(model)
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=LR)
    loss = None
    for _ in range(STEPS):
        opt.zero_grad()
        loss = setup.loss_fn(model, batch)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        x, y = xy
        try:
            out = model(x)
        except Exception:  # a model that needs more than the inputs (a hidden state): no answer
            return None
        if not torch.is_tensor(out) or out.dim() != 2 or out.shape[0] != len(y):
            return None
        mask = out.argmax(-1) == y
        right = mask.float().mean().item()
        if right < RIGHT:
            return None
        right_only = _select(batch, mask)
        sure = float(setup.loss_fn(_Sharper(model, SCALE), right_only))
        surer = float(setup.loss_fn(_Sharper(model, 10 * SCALE), right_only))
        wrong = _wrong(setup, model, right_only, out.shape[1])
    # a floor is bounded: more certainty leaves it where it is. A loss that grows with
    # certainty (label smoothing, a confidence penalty) is a choice, not a floor.
    if not sure > FLOOR or abs(surer - sure) > 0.1 * sure:
        return None
    # A floor of a loss on probabilities is a saturation: a certain wrong answer costs little
    # more than a certain right one. A loss on logits plus a term of its own (a regulariser, a
    # contrastive term) costs ~1000x the margin for a certain wrong answer: no saturation.
    if wrong is not None and not wrong < BOUNDED:
        return None
    return OwnFinding(
        "H1",
        "loss_floor",
        f"the loss has a floor above 0: on the {int(mask.sum())} of "
        f"64 samples the model predicts right, made certain (outputs x{SCALE:g}), your "
        f"loss is still {sure:.3g} where a loss on logits gives ~0. "
        "It is computed on something other than the logits (a softmax or sigmoid "
        "applied before a loss such as cross_entropy that applies its own), or offset or "
        "scaled; fix the loss and the same loop can reach ~0",
    )
