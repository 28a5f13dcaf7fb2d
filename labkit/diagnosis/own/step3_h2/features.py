"""The whole input, feature by feature, for regression as well as classification.

`features` reads every training batch of one epoch as an (N, D) matrix (each input row
flattened) beside its labels, when each row has one label (a class or a regression target):
- features that hold non-finite values;
- constant features: the same value on every row (a bias column is one; a feature lost in
  preprocessing is another), named in the acquittal, never convicted on their own;
- features that are the label: equal to it on every row (a class id left in the feature
  matrix), or for a float target a linear copy of it (|correlation| at least `COPY`), so the
  model reads the answer off its input. That convicts the data (H2) on its own:
  `leak_rule`.

`describe` gives the acquittal its words for the input.
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above
from ..step1_capture import setup as proto
from .data import _inputs_matrix

COPY = 0.9999  # |correlation| of a feature with a float target at or above this: a copy of it
MAX_FEATURES = 4096  # wider rows (images, token grids) are read for finiteness only


def features(ev) -> dict:
    """The per-feature facts of one seed's batches (once)."""
    return ev.once("features", lambda: feature_checks(ev.batches))


def feature_checks(batches: list) -> dict:
    X, kept = _inputs_matrix(batches)
    out = {"rows": len(X), "features": X.shape[1], "nonfinite": [], "constant": [], "label": []}
    out["float"] = X.is_floating_point()
    out["per_feature"] = True
    if X.is_floating_point():
        out["nonfinite"] = torch.nonzero((~torch.isfinite(X)).any(0)).flatten().tolist()
    if X.shape[1] > MAX_FEATURES or len(X) < 2:
        out["per_feature"] = False
        return out
    Xd = X.double()
    finite = torch.isfinite(Xd).all(1)
    Xd = Xd[finite]
    if len(Xd) < 2:
        out["per_feature"] = False
        return out
    sd = Xd.std(0)
    out["constant"] = torch.nonzero(sd <= 1e-9 * (1 + Xd.mean(0).abs())).flatten().tolist()
    ys = [proto.labels_of(b) for b, k in zip(batches, kept) if k]
    y = torch.cat([t.reshape(len(t), -1) for t in ys])
    if y.shape[1] != 1 or len(y) != len(X):
        out["labels_per_row"] = False
        return out
    out["labels_per_row"] = True
    y = y[:, 0][finite].double()
    if not torch.isfinite(y).all() or float(y.std()) == 0.0:
        return out
    same = (Xd == y[:, None]).all(0)
    label = set(torch.nonzero(same).flatten().tolist())
    out["label_equal"] = sorted(label)
    if proto.labels_of(batches[0]).is_floating_point():
        varied = sd > 0
        Z = (Xd[:, varied] - Xd[:, varied].mean(0)) / sd[varied]
        zy = (y - y.mean()) / y.std()
        corr = (Z * zy[:, None]).sum(0) / (len(y) - 1)
        idx = torch.nonzero(varied).flatten()
        out["label_corr"] = {
            int(idx[i]): float(c) for i, c in enumerate(corr) if abs(float(c)) > 0.99
        }
        label |= {
            k for k, c in out["label_corr"].items() if above("inputs.label_copy", abs(c), COPY)
        }
    out["label"] = sorted(label)
    return out


def _list(idx: list[int]) -> str:
    shown = ", ".join(map(str, idx[:6]))
    return f"feature{'s' if len(idx) > 1 else ''} {shown}" + (
        f" and {len(idx) - 6} more" if len(idx) > 6 else ""
    )


def leak_rule(evs) -> OwnFinding | None:
    """H2: a feature that is the label on every row, on both seeds' batches."""
    found = [features(ev)["label"] for ev in evs]
    if not found[0] or found[0] != found[1]:
        return None
    f = features(evs[0])
    exact = set(found[0]) <= set(f.get("label_equal", ()))
    many = len(found[0]) > 1
    if exact:
        how = "equal the label" if many else "equals the label"
    else:
        how = f"{'are linear copies' if many else 'is a linear copy'} of the label (|correlation| >= {COPY})"
    return OwnFinding(
        "H2",
        "label_in_inputs",
        f"the inputs carry the target: {_list(found[0])} {how} "
        f"on every one of the {f['rows']} rows, so the model reads the answer off its input "
        "instead of learning the task (the label left in the feature matrix, or a feature "
        "computed from it); drop it from the inputs",
    )


def describe(ev) -> tuple[str, str | None]:
    """(what was checked, what could not be) about the inputs, in the learner's terms."""
    f = features(ev)
    unit = "features" if f.get("float", True) else "token ids"
    shape = f"the inputs ({f['rows']} rows of {f['features']} {unit})"
    head = shape + " are finite"
    if f["nonfinite"]:
        head = (
            f"{shape} hold non-finite values in {_list(f['nonfinite'])}, which never reach the loss"
        )
    if not f["per_feature"]:
        return (
            head + " and varied",
            "each feature on its own (rows too wide or not numeric to read feature by feature)",
        )
    parts = [head]
    if f["constant"]:
        parts.append(
            f"{_list(f['constant'])} {'are' if len(f['constant']) > 1 else 'is'} constant (the same value on every row)"
        )
    else:
        parts.append(
            "no feature is constant"
            if f.get("float", True)
            else "no position holds one token on every row"
        )
    if f.get("labels_per_row"):
        parts.append("no feature is a copy of the label")
        return ", ".join(parts), None
    return ", ".join(parts), "whether a feature copies the label (not one label per row)"
