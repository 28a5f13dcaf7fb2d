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

`scale_rule` reads the same for a regression of D >= 2 coordinates per example (keypoints, a
box): where the inputs do not show a factor the targets are multiplied by (coordinates
normalised by a size the resize or crop erased, units that differ between sources), the
model predicts the factor's average and each example's error is its own factor over that
average, the same on every coordinate. Read: each coordinate's relative error (target over
prediction, less 1), and the rank correlation of those errors between coordinates, across the
examples. Independent noise, or a model that has not finished, gives errors each coordinate
draws apart (a correlation near 0); one factor per example gives a correlation near 1. At
least SHARED on every seed, with the model leaving UNEXPLAINED or more of the targets'
variance and explaining at least FITTED of it (it has learned what the inputs show). Errors
shared as a shift (a forecast of several steps ahead, whose steps share the same unseen
future) move together too; so the targets themselves are read, apart from any model: each
example's targets minus those of the example with the nearest input, where the coordinates
stand at levels apart (their spread at least SPREAD of their mean). One factor per example
(difference = a * the neighbour's targets) must leave at most FACTOR of what one shift per
example (difference = b) leaves.
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
SHARED = 0.5  # rank correlation of the coordinates' relative errors at or above this
UNEXPLAINED = 0.02  # the error's share of the targets' variance at or above this
FITTED = 0.2  # and at least this share of that variance explained
SPREAD = 0.5  # examples whose targets spread this share of their mean level, or more
FACTOR = 0.5  # one factor per example leaves at most this share of what one shift leaves
WIDEST = 64  # coordinates per example read at most (a dense map is not a few coordinates)


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


def _every_seed(evs, read, holds) -> list | None:
    """`read` on every seed, where each reading is measured and `holds` on it, else None."""
    got = [read(ev) for ev in evs]
    if any(g is None for g in got) or not all(holds(*g, ev.seed) for g, ev in zip(got, evs)):
        return None
    return got


def blank_rule(evs) -> OwnFinding | None:
    """H2 where, on every seed, the examples fall in two groups: blank and learned."""
    got = _every_seed(
        evs,
        shares,
        lambda b, lrn, _, seed: (
            above("blank.share", b, BLANK, seed=seed)
            and above("blank.learned", lrn, LEARNED_SHARE, seed=seed)
            and below("blank.between", 1 - b - lrn, BETWEEN, seed=seed)
        ),
    )
    if got is None:
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


def _ranks(v: torch.Tensor) -> torch.Tensor:
    return v.argsort(0).argsort(0).double()


def scale_errors(ev) -> tuple[float, float, int, float] | None:
    """(correlation of the coordinates' relative errors, share of the targets' variance left,
    coordinates, what one factor leaves of the targets' differences from the nearest input's
    over what one shift leaves) on the learner's trained model, or None where the prediction is
    not (N, D >= 2)
    floats scored against targets of its shape."""
    try:
        model = next(iter(ev.replay.models.values()))
    except Exception:
        return None
    was, preds, ys, xs, seen = model.training, [], [], [], 0
    model.eval()
    try:
        for b in ev.batches:
            pred = inner.prediction(ev.setup, model, b, ev.seed, inner.REGRESSION)
            y = proto.labels_of(b)
            if not (torch.is_tensor(pred) and torch.is_tensor(y)) or not y.is_floating_point():
                return None
            if pred.shape != y.shape or y.dim() < 2 or not 2 <= y[0].numel() <= WIDEST:
                return None
            preds.append(pred.detach().double().flatten(1))
            ys.append(y.detach().double().flatten(1))
            xs.append(proto.inputs_of(b).detach().double().flatten(1))
            seen += len(y)
            if seen >= ROWS:
                break
    except Exception:
        return None
    finally:
        model.train(was)
    if seen < 64:
        return None
    pred, y = torch.cat(preds), torch.cat(ys)
    var = (y - y.mean(0)).pow(2).mean()
    if not torch.isfinite(pred).all() or not var > 0:
        return None
    left = float((y - pred).pow(2).mean() / var)
    keep = (pred.abs() >= 0.05 * y.pow(2).mean(0).sqrt()).all(1)  # no error over a near-0
    if int(keep.sum()) < 64:
        return None
    r = _ranks(y[keep] / pred[keep] - 1)
    r = (r - r.mean(0)) / r.std(0).clamp_min(1e-12)
    c = (r.T @ r) / (len(r) - 1)
    d = c.shape[0]
    shared = float((c.sum() - c.diagonal().sum()) / (d * (d - 1)))
    x, q = torch.cat(xs)[keep], y[keep]
    dist = torch.cdist(x, x)
    dist.fill_diagonal_(float("inf"))
    e, p = q - q[dist.argmin(1)], q[dist.argmin(1)]  # each target against its nearest input's
    apart = (p.amax(1) - p.amin(1)) >= SPREAD * p.abs().mean(1)  # a factor is not a shift there
    if int(apart.sum()) < 64:
        return shared, left, d, 1.0  # coordinates at one level: a factor reads as a shift
    e, p = e[apart], p[apart]
    factor = e - ((e * p).sum(1) / p.pow(2).sum(1))[:, None] * p  # (N, D) after a factor each
    shift = e - e.mean(1, keepdim=True)  # (N, D) after a shift each
    return shared, left, d, float(factor.pow(2).sum() / shift.pow(2).sum().clamp_min(1e-300))


def _scaled(shared: float, left: float, _, factor: float, seed: int) -> bool:
    return (
        above("scale.shared", shared, SHARED, seed=seed)
        and below("scale.factor", factor, FACTOR, seed=seed)
        and above("scale.left", left, UNEXPLAINED, seed=seed)
        and below("scale.left_fitted", left, 1 - FITTED, seed=seed)
    )


def scale_rule(evs) -> OwnFinding | None:
    """H2 where, on every seed, the trained model's errors move together on all the coordinates
    of an example, and are large, and neighbours' targets differ by a factor: a scale the inputs
    do not show."""
    got = _every_seed(evs, scale_errors, _scaled)
    return None if got is None else _scaled_finding(evs, *got)


def _scaled_finding(evs, first: tuple, second: tuple) -> OwnFinding:
    (s0, l0, d, f0), (s1, l1, _, f1) = first, second
    seeds = f"seeds {evs[0].seed} / {evs[1].seed}"
    line = (
        f"examples with near inputs have targets a factor apart: between each example and the "
        f"one with the nearest input, one factor per example leaves {f0:.0%} / {f1:.0%} of what "
        f"one shift per example leaves of the difference of their {d} target coordinates; "
        f"after your run, your model leaves {l0:.0%} / {l1:.0%} of the targets' variance "
        f"({seeds}), and its errors move together on every coordinate: each coordinate's "
        f"target over prediction has a rank correlation of {s0:.2f} / {s1:.2f} with the "
        "others' across the examples (errors drawn apart per coordinate give near 0); check "
        "how batches() scales each target (coordinates normalised by a size a resize or crop "
        "erased, units that differ between sources)"
    )
    return OwnFinding("H2", "targets_scaled", line)
