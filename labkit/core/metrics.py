"""Metrics that look past accuracy: the confusion matrix, recall per class, and a plot of it;
and the one reading of a norm curve, `norm_shape` (zero, steady, growing), by which Lab 15's
record reads a sketch and a forecast of a norm is scored, so both say the same word.

``cm[i, j]`` counts examples of true class i predicted as j: a row is one true class.
"""

from __future__ import annotations

import math

import torch

from ..errors import check_number

ZERO_NORM = 1e-3  # a norm at or below this reads as zero; the sketch shades the band


def _labels(name: str, values, n_classes: int) -> torch.Tensor:
    t = torch.as_tensor(values)
    if t.is_floating_point() or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer class ids; got dtype {t.dtype}.")
    t = t.long().flatten()
    bad = (t < 0) | (t >= n_classes)
    if bad.any():
        raise ValueError(
            f"{name} holds class id {int(t[bad][0])}, outside 0..{n_classes - 1} "
            f"(n_classes={n_classes})."
        )
    return t


def confusion_matrix(y_true, y_pred, n_classes: int) -> torch.Tensor:
    """(n_classes, n_classes) counts: row = true class, column = predicted class."""
    check_number("n_classes", n_classes, minimum=2, integer=True)
    y_true = _labels("y_true", y_true, n_classes)
    y_pred = _labels("y_pred", y_pred, n_classes)
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"y_true has {y_true.numel()} labels but y_pred has {y_pred.numel()}; "
            "give one prediction per label."
        )
    flat = torch.bincount(y_true * n_classes + y_pred, minlength=n_classes * n_classes)
    return flat.reshape(n_classes, n_classes)


def per_class_recall(cm) -> list[float]:
    """Recall of each true class: its diagonal cell over its row sum (NaN for an empty row)."""
    cm = torch.as_tensor(cm)
    if cm.dim() != 2 or cm.shape[0] != cm.shape[1]:
        raise ValueError(f"cm must be a square confusion matrix; got shape {tuple(cm.shape)}.")
    rows = cm.sum(1).tolist()
    return [float(cm[i, i]) / rows[i] if rows[i] else math.nan for i in range(len(rows))]


@torch.no_grad()
def model_confusion(model, x, y, n_classes: int) -> torch.Tensor:
    """The confusion matrix of `model`'s argmax predictions on (x, y), made in eval() mode."""
    was_training = model.training
    model.eval()
    try:
        pred = model(x).argmax(-1)  # (N,)
    finally:
        model.train(was_training)
    return confusion_matrix(y, pred, n_classes)


def plot_confusion(cm, ax=None, *, class_names=None, title: str = "confusion matrix"):
    """The counts as a heat map with every cell written in; rows true, columns predicted."""
    import matplotlib.pyplot as plt

    cm = torch.as_tensor(cm)
    n = cm.shape[0]
    names = list(class_names) if class_names is not None else [str(i) for i in range(n)]
    if ax is None:
        _, ax = plt.subplots(figsize=(3.2, 3))
    ax.imshow(cm.numpy(), cmap="Blues")
    for i in range(n):
        for j in range(n):  # dark cells get white text
            ax.text(
                j,
                i,
                str(int(cm[i, j])),
                ha="center",
                va="center",
                color="white" if cm[i, j] > cm.max() / 2 else "black",
            )
    ax.set_xticks(range(n), names)
    ax.set_yticks(range(n), names)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    ax.set_title(title)
    return ax


def norm_shape(values) -> str:
    """'zero' (collapsed: at most ZERO_NORM throughout, or ending under 5% of its start),
    'growing' (ending over 2x its start) or 'steady', each end read as the median of its
    tenth. No value at all (NaN from the first step) reads as 'growing': it blew up."""
    values = [max(float(v or 0.0), 0.0) for v in values]
    if not values:
        return "growing"
    k = max(1, len(values) // 10)
    first, last = sorted(values[:k])[k // 2], sorted(values[-k:])[k // 2]
    if max(values) <= ZERO_NORM or last <= 0.05 * first:
        return "zero"
    return "growing" if last > 2 * first else "steady"
