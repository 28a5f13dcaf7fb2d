"""H2: a class the model outputs that never reaches training.

A table exported sorted by its class and split by slicing, a filter that drops one class: the
model has C outputs and the training labels never hold one or more of the classes in
range(C), while the others are present. labkit sees the training batches only: it counts each
class's rows over the whole epoch against the width of the output the loss receives (a
classification of (N, C) predictions against (N,) class ids). It cannot see whether the class
exists in the learner's data (a validation split, a test set); it measures that the model is
never taught it, and that chance would not leave it out (the rarest class present is seen
RARE times or more, so the absent one is not merely rare).

Not read: an output far wider than the classes taught (a vocabulary; more than a quarter of
the classes absent), fewer than 3 classes present, and 1-based labels that leave class 0 free.
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above
from ..step1_capture import inner, setup as proto

RARE = 20  # the rarest present class seen at least this many times: an absence is not chance
SHARE = 0.25  # at most this share of the classes absent (a wider output is a vocabulary)


def missing(counts: torch.Tensor, classes: int) -> dict | None:
    """{missing, rarest, rows} where the per-class `counts` (of `classes` outputs) leave one
    or more classes out beside present ones as described above; else None."""
    counts = counts[:classes]
    absent = [int(c) for c in torch.nonzero(counts == 0).flatten()]
    present = counts[counts > 0]
    if classes < 3 or not absent or len(absent) > max(1, int(SHARE * classes)) or absent == [0]:
        return None
    if len(present) < 3 or int(present.min()) < RARE:
        return None
    return {"missing": absent, "rarest": int(present.min()), "rows": int(counts.sum())}


def reading(ev) -> dict | None:
    """`missing` on the labels of the training epoch, with the output's width read from the
    prediction the loss receives on the first batch; None where that is not a classification
    of (N, C) against (N,) class ids."""
    try:
        model = proto.make_model(ev.setup, ev.seed)  # its width only: no training needed
        pred = inner.prediction(ev.setup, model, ev.batches[0], ev.seed)
        labels = [proto.labels_of(b) for b in ev.batches]
    except Exception:  # a batch or a loss this reading cannot follow: nothing measured
        return None
    if not torch.is_tensor(pred) or pred.dim() != 2:
        return None
    if not all(torch.is_tensor(y) and y.dim() == 1 and not y.is_floating_point() for y in labels):
        return None
    y = torch.cat(labels)
    y = y[(y >= 0) & (y < pred.shape[1])]
    if not len(y):
        return None
    found = missing(torch.bincount(y, minlength=pred.shape[1]), pred.shape[1])
    return found and {**found, "classes": pred.shape[1]}


def unseen_rule(evs) -> OwnFinding | None:
    """H2 where, on every seed, the same classes never reach the training labels."""
    got = [ev.once("unseen", lambda ev=ev: reading(ev)) for ev in evs]
    if any(g is None for g in got) or got[0]["missing"] != got[1]["missing"]:
        return None
    if not all(
        above("unseen.rarest", g["rarest"], RARE - 1, seed=e.seed) for g, e in zip(got, evs)
    ):
        return None
    g = got[0]
    ids = ", ".join(str(c) for c in g["missing"])
    one = len(g["missing"]) == 1
    return OwnFinding(
        "H2",
        "class_unseen",
        f"class{'' if one else 'es'} {ids} never reach{'es' if one else ''} training: your model "
        f"has {g['classes']} outputs, and not one of the {g['rows']} training labels of an epoch "
        f"is {'that class' if one else 'one of them'}, while every other class is present (the "
        f"rarest {g['rarest']} times), so nothing in training "
        f"teaches the model to predict {'it' if one else 'them'}; labkit "
        "sees only the training batches, not whether your other splits hold it: check how the "
        "rows were split (a table sorted by class and sliced leaves its last classes out): "
        "shuffle the rows, or split each class apart (stratified), before the split",
        arm=None,
        variable=None,
    )
