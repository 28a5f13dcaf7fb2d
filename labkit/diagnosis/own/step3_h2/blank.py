"""H2: examples whose inputs hold nothing of their label, beside examples that are learned.

A truncation that cuts the token naming the class, a crop that misses the object, a mask
over the part that matters: the model cannot learn those examples, and it learns the others.
On the learner's own model as its run left it (the replay's first model), the prediction the
loss receives is read on the training batches (eval mode, at most `ROWS` examples), for a
classification over 3 classes or more:

- blank: a prediction near uniform over all the classes (its entropy at least UNIFORM of
  ln C), the model's answer for inputs that look alike to it whatever their class;
- learned: the right class at a probability of LEARNED or more.

On every seed, at least BLANK of the examples blank and LEARNED_SHARE learned, with at most
BETWEEN of them neither: two groups, not a hard task's spread. Overlapping classes give
predictions split between two or three classes, not uniform over all of them; label noise
gives confident wrong answers.
"""

from __future__ import annotations

import math

import torch

from ...finding import OwnFinding
from ..margins import above, below
from ..step1_capture import inner, setup as proto

ROWS = 2048
UNIFORM = 0.8  # entropy over ln C at or above this: a near-uniform prediction
LEARNED = 0.8  # the right class at this probability or more: learned
BLANK = 0.2  # at least this share of the examples blank
LEARNED_SHARE = 0.3  # and at least this share learned
BETWEEN = 0.15  # and at most this share neither


def shares(ev) -> tuple[float, float, int] | None:
    """(share blank, share learned, classes) on the learner's trained model, or None where the
    prediction is not a (N, C >= 3) classification over (N,) class ids."""
    try:  # the learner's run first, outside any no_grad (it trains)
        model = next(iter(ev.replay.models.values()))
    except Exception:  # no model seen, or the ranks keep theirs: an untrained one says nothing
        return None
    was, blank, learned, seen, classes = model.training, 0, 0, 0, None
    model.eval()
    try:
        for b in ev.batches:
            pred, y = inner.prediction(ev.setup, model, b, ev.seed), proto.labels_of(b)
            if not (torch.is_tensor(pred) and torch.is_tensor(y)) or y.is_floating_point():
                return None
            if pred.dim() != 2 or pred.shape[1] < 3 or tuple(y.shape) != (len(pred),):
                return None
            p = torch.softmax(pred.detach().double(), 1)
            entropy = -(p * p.clamp_min(1e-300).log()).sum(1) / math.log(pred.shape[1])
            blank += int((entropy >= UNIFORM).sum())
            learned += int((p[torch.arange(len(y)), y] >= LEARNED).sum())
            seen, classes = seen + len(y), pred.shape[1]
            if seen >= ROWS:
                break
    except Exception:  # a loss this reading cannot follow: nothing measured
        return None
    finally:
        model.train(was)
    return (blank / seen, learned / seen, classes) if seen else None


def blank_rule(evs) -> OwnFinding | None:
    """H2 where, on every seed, the examples fall in two groups: blank and learned."""
    got = [shares(ev) for ev in evs]
    if any(g is None for g in got) or not all(
        above("blank.share", b, BLANK, seed=ev.seed)
        and above("blank.learned", lrn, LEARNED_SHARE, seed=ev.seed)
        and below("blank.between", 1 - b - lrn, BETWEEN, seed=ev.seed)
        for (b, lrn, _), ev in zip(got, evs)
    ):
        return None
    (b0, l0, c), (b1, l1, _) = got
    return OwnFinding(
        "H2",
        "inputs_blank",
        f"some examples hold nothing of their label: after your run, your model gives "
        f"{b0:.0%} / {b1:.0%} of the training examples (seeds {evs[0].seed} / "
        f"{evs[1].seed}) a near-uniform prediction over all {c} classes, the loss of a "
        f"guess (ln {c} = {math.log(c):.3g}), while {l0:.0%} / {l1:.0%} are predicted right at "
        f"{LEARNED:.0%} or more: to the model, the first group's inputs look alike whatever "
        "their class; check what batches() keeps of each example (a truncation, a crop or a "
        "mask that cuts what names the class)",
    )
