"""The setups behind the curve gallery: seams that give each packet case its real mechanism.

Each function replaces one seam of the reference loop, as a zoo bug does, but these are
not bugs to convict: they are situations a learner meets (a small noisy training set, one
corrupt row, an imbalanced metric) and the one-variable fixes the gallery tries on them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...bugs.h2.nan_in_inputs import data_with_nan_row
from ...core.data import Dataset, make_blobs
from ...core.seams import StepContext, make_data

NOISY_TRAIN, NOISY_FLIP, NOISY_SPREAD = (
    128,
    0.3,
    0.5,
)  # small, 30% relabelled at random, overlapping
OUTLIER_ROW, OUTLIER_SCALE = 300, 20.0  # one row, 20 standard deviations out, with a wrong label
OUTLIER_LIMIT = 5.0  # the repair: drop rows with any feature further out than this


def noisy_small_blobs(config) -> Dataset:
    """128 training points of 10 overlapping blobs, 30% of them given a random label; the
    512 validation points keep their true labels."""
    data = make_blobs(
        n_classes=config.n_classes,
        n_train=NOISY_TRAIN,
        n_val=512,
        spread=NOISY_SPREAD,
        seed=config.seed,
    )
    gen = torch.Generator().manual_seed(config.seed + 7)
    true_y = data.train["y"]
    y = true_y.clone()
    flip = torch.rand(len(y), generator=gen) < NOISY_FLIP
    y[flip] = torch.randint(0, config.n_classes, (int(flip.sum()),), generator=gen)
    data.train["y"] = y
    data.info.update(name="noisy_small_blobs", wrong_label=y != true_y)  # (N,) bool
    return data


def with_outlier_row(config) -> Dataset:
    """The reference blobs with one corrupt training row: its features 20x too large (a unit
    error) and its label moved to the class on the other side of the circle."""
    data = make_data(config)
    x, y = data.train["x"].clone(), data.train["y"].clone()
    x[OUTLIER_ROW] *= OUTLIER_SCALE
    y[OUTLIER_ROW] = (y[OUTLIER_ROW] + config.n_classes // 2) % config.n_classes
    data.train["x"], data.train["y"] = x, y
    return data


def _keep_rows(data: Dataset, keep: torch.Tensor) -> Dataset:
    data.train = {k: v[keep] for k, v in data.train.items()}
    return data


def outliers_dropped(config) -> Dataset:
    """The repair for `with_outlier_row`: drop training rows with a feature beyond 5."""
    data = with_outlier_row(config)
    return _keep_rows(data, data.train["x"].abs().max(1).values <= OUTLIER_LIMIT)


def nan_rows_dropped(config) -> Dataset:
    """The repair for the zoo's `nan_in_inputs`: drop training rows that are not all finite."""
    data = data_with_nan_row(config)
    return _keep_rows(data, torch.isfinite(data.train["x"]).all(1))


def class_weighted_loss(ctx: StepContext) -> torch.Tensor:
    """Cross-entropy with each class weighted by 1 / its share of the training labels, so
    the rare class counts as much as the common one."""
    counts = torch.bincount(ctx.data.train["y"], minlength=ctx.data.n_classes).float()
    weight = counts.sum() / (len(counts) * counts.clamp(min=1))
    return F.cross_entropy(ctx.output, ctx.batch["y"], weight=weight.to(ctx.output.device))
