"""The twenty-first batch: a fresh batch of kinds no earlier batch holds, each beside a healthy
twin that differs by the bug's one change, written in plain PyTorch without reading any rule of
the triage (nor the tests that reveal them, nor the triage's docs), and scored at first sight.

The optimizer, the loop (H1), here:
- a DeepSets model (a per-point MLP, mean pooling, an MLP) that counts the points of a set
  inside the unit circle, whose update reads `loss.backward(); optimizer.zero_grad();
  optimizer.step()`: the gradients are cleared between backward and step, so Adam steps on
  zeros and no weight ever moves (twin: zero_grad, backward, step);
- a cumulative-link ordinal model (an MLP's score against 4 learned cut points) of essay
  grades under SGD with momentum, whose `StepLR(step_size=2, gamma=0.5)`, meant as "halve
  every 2 epochs", is stepped inside the batch loop: the LR halves every 2 batches and is a
  thousandth of its base after 20 of 160 (twin: stepped once per epoch).
The data (H2), in `twentyfirst_b.py`:
- a ViT-like patch classifier (4x4 patches, one encoder layer) of bar images whose collate
  applies mixup, `lam * x + (1 - lam) * x.flip(0)`, to the images but not to the soft
  targets: each blend keeps its first image's label whatever its share (twin: the targets
  mixed with the same lambda);
- a two-headed multi-task net (a household's total use, regression, and its top appliance, 8
  classes) whose data module standardises the meter table along `dim=1`, each household by
  its own readings, where `dim=0` was meant: the household's size, which sets the total,
  divides out (twin: `dim=0`).
The report (H3), in `twentyfirst_b.py`:
- a wide MLP overfitting 256 noisy-label rows whose bar's `loss=` is the validation split's
  loss (the line computing it pasted above the bar): it rises as the training loss falls
  (twin: the bar shows the training loss, the validation loss is still computed);
- a GRU seq2seq (teacher forcing) reversing digit strings, trained with cross-entropy under
  `label_smoothing=0.1`, whose bar takes a metrics helper's `F.cross_entropy(logits,
  targets)` at its default smoothing 0: about half the loss trained on (twin: the helper
  passes `label_smoothing=0.1`).

Every setup runs one learner's loop (`twentyfirst_b._Loop`, on `twentieth_b._Setup`'s model,
Adam and batches): per batch `model.train()`, the loss, the bar's value for the batch, then
zero_grad, backward and step; a scheduler (when one is made) stepped per epoch; the bar shows
the running mean of the batch values, reset each epoch. The zero_grad pair replaces the
update, the StepLR pair where the scheduler steps, the mixup pair the collate's targets, the
meter pair the axis of the standardisation, the H3 pairs the bar's value.

Each was checked in plain PyTorch against its twin before the score (`python -m
own_setups.twentyfirst` from tests/, seeds 0 and 1, about 150 steps; each setup under 4 s of
CPU on one thread once torch is warm, the seq2seq pairs the slowest at about 3 s): the trained
model's loss on all of its data in eval mode without the defect (the images unmixed against
their own labels; the household table as served, since what the model can read is the
defect; the seq2seq's smoothed loss), and for the H3 pairs the last value shown over the last
epoch's mean raw loss:

    twentyfirst_h1_zero_grad_before_step       1.010 1.006 | twin 0.182 0.225
    twentyfirst_h1_step_lr_per_batch           0.544 0.581 | twin 0.175 0.180
    twentyfirst_h2_mixup_targets_unmixed       0.776 0.680 | twin 0.377 0.359
    twentyfirst_h2_rows_standardised           1.068 1.153 | twin 0.434 0.476
    twentyfirst_h3_validation_loss_on_bar      0.003 0.002 shown/raw 678 908
                                               | twin 0.003 0.002 shown/raw 1 1
    twentyfirst_h3_bar_loss_unsmoothed         0.885 0.902 shown/raw 0.564 0.562
                                               | twin 0.885 0.902 shown/raw 1 1

(The counting target is standardised, so 1.0 is the forecast of its mean: the zero_grad bug
ends where it starts. The smoothed loss's floor on 12 ids is 0.53; the seq2seq learns the
reversal only in part in 160 steps, and its bar's plain cross-entropy is then about 0.56 of the
loss trained on. Before the score, and before any triage ran: the loop first took the bar's
value after the step, which put the smoothing twin's bar at 0.94 of its raw loss; the bar's
value is now taken before the update, and the twin's ratio is 1.)

First score (`python -m own_setups.score_twentyfirst`, labkit/ as at 698dbfc (main at
cc88648), the setups committed at eeeef2e before it, scored once, 117 s): 9 of 12 right system
(4 of 6 bugs, 5 of 6 twins), 8 of 12 right mechanism on a strict reading, as the scorer counted
too (3 of 6 bugs, 5 of 6 twins acquitted), 0 of 6 healthy convicted, 1 UNKNOWN, 0 CRASH; 4 of
the 4 right convictions granted.
- zero_grad between backward and step: H1 right, mechanism right: "gradients are cleared (set
  to None) between backward and the step (zero_grad() in the wrong place): every step sees no
  gradient"; granted;
- StepLR stepped per batch: H1 right, mechanism right: "the LR schedule collapses: the LR
  falls from 0.05 to 8.3e-26, below 0.001x its start by step 20 of 160, so learning stops
  early; the LR is set by StepLR(step_size=2, gamma=0.5), stepped 160 times in 160 steps
  (every batch)"; granted;
- mixup targets unmixed: MISS, acquitted (NONE, "no defect found: the logger is honest ...,
  the inputs (1024 rows of 144 features) are finite, no feature is constant, the labels carry
  signal (real beat shuffled by more than the seed spread), all 17 tensors your loss depends
  on ..."), its twin's line word for word;
- rows standardised: MISS, acquitted (NONE, the same line on "1024 rows of 8 features", "all 8
  tensors"), its twin's line word for word;
- validation loss on the bar: H3 right, mechanism right: "the reported value matches no honest
  summary of the loss passed to backward() (largest gap to the raw loss 2.3): it is computed
  from another tensor: another forward pass, the model in eval mode, or another batch (a
  validation batch?)"; granted;
- smoothing left off the bar: H3 right, mechanism MISS: the same line (largest gap 0.477):
  "another forward pass" is true of the helper, the smoothing not named; granted.
The twins: five acquitted (NONE, "no defect found: the logger is honest ..."; the smoothed
seq2seq's the slowest, 20.3 s); the validation pair's twin (the training loss on the bar)
UNKNOWN: "no defect was measured, but the label signal is unclear: label-shuffle control
(plain loop, mean training loss): real labels 0.195 / 0.194, shuffled 0.317 / 0.266 on seeds 0
/ 1; gap +0.122 / +0.072 against a seed-to-seed spread of 0.050": its wide MLP memorises 256
rows, shuffled labels too, while its bug (the same data) was convicted. The scorer prints each
verdict's first 300 characters; the words above are those. No setup broke the setup protocol;
no setup was changed after the score.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .eleventh import _gen
from .nineteenth import verify as verify_batch
from .twentieth import clean_loss
from .twentyfirst_b import (
    BarLossSmoothed,
    BarLossUnsmoothed,
    ColumnsStandardised,
    MixupTargetsMixed,
    MixupTargetsUnmixed,
    RowsStandardised,
    TrainingLossOnBar,
    ValidationLossOnBar,
    _Loop,
)


# ------------------------------------------------------- zero_grad between backward and step
def point_sets(n=1024, seed=7131, size=12):
    """Sets of 12 points in the square [-1.5, 1.5]^2 (their order means nothing) and how many
    of them lie inside the unit circle, standardised: (n, 12, 2), (n,)."""
    pts = 3 * torch.rand(n, size, 2, generator=_gen(seed)) - 1.5
    inside = (pts.norm(dim=-1) < 1).float().sum(1)
    return pts, (inside - inside.mean()) / inside.std()


class _DeepSet(nn.Module):
    """A set model: a per-point MLP, mean pooling over the set, an MLP on the pooled vector."""

    def __init__(self):
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.rho = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, pts):  # (B, 12, 2) -> (B,)
        return self.rho(self.phi(pts).mean(1)).squeeze(-1)


class _Count(_Loop):
    """The set model counts the points inside the circle, MSE, Adam."""

    MODEL = _DeepSet

    def __init__(self):
        self.x, self.y = point_sets()

    def loss_fn(self, model, batch):
        pts, count = batch
        return F.mse_loss(model(pts), count)


class ZeroGradBeforeStep(_Count):
    """Bug (H1): `loss.backward(); optimizer.zero_grad(); optimizer.step()`, the gradients
    "cleared before the step so none leak into the next batch": the step always sees zeros and
    Adam never moves a weight; the loss stays at its value at init."""

    def update(self, opt, loss):
        loss.backward()
        opt.zero_grad()
        opt.step()


class ZeroGradBeforeBackward(_Count):
    """Healthy: `zero_grad()`, `backward()`, `step()`."""


# ------------------------------------------------------------------ StepLR stepped per batch
GRADES = 5


def graded_essays(n=1024, seed=7132):
    """10 features of an essay and its grade 0..4: a linear score plus noise cut at its
    quintiles. Returns (n, 10), (n,) int64."""
    g = _gen(seed)
    x = torch.randn(n, 10, generator=g)
    z = x @ torch.linspace(-1, 1, 10) + 0.3 * torch.randn(n, generator=g)
    return x, torch.bucketize(z, z.quantile(torch.tensor([0.2, 0.4, 0.6, 0.8])))


class _Ordinal(nn.Module):
    """A cumulative-link ordinal model: an MLP's one score against 4 learned cut points,
    logit P(grade > k) = score - cut_k."""

    def __init__(self):
        super().__init__()
        self.score = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
        self.cuts = nn.Parameter(torch.linspace(-1.5, 1.5, GRADES - 1))

    def forward(self, x):  # (B, 10) -> (B, 4) logits of grade > k
        return self.score(x) - self.cuts


class _Grades(_Loop):
    """The ordinal model grades the essays, binary cross-entropy on each `grade > k`, SGD with
    momentum; StepLR halves the LR every 2 epochs."""

    MODEL, LR = _Ordinal, 0.05

    def __init__(self):
        self.x, self.y = graded_essays()

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR, momentum=0.9)

    def make_scheduler(self, opt):
        return torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def loss_fn(self, model, batch):
        x, grade = batch
        above = (grade[:, None] > torch.arange(GRADES - 1)).float()  # (B, 4)
        return F.binary_cross_entropy_with_logits(model(x), above)


class StepLRPerBatch(_Grades):
    """Bug (H1): `scheduler.step()` inside the batch loop, for a StepLR whose `step_size=2`
    counts epochs: the LR halves every 2 batches, and after 20 of the run's 160 it is a
    thousandth of its base; the model stops where it is."""

    SCHEDULER_PER_BATCH = True


class StepLRPerEpoch(_Grades):
    """Healthy: `scheduler.step()` once per epoch, after the batch loop."""


TWENTYFIRST = {
    "twentyfirst_h1_zero_grad_before_step": ZeroGradBeforeStep,
    "twentyfirst_ok_zero_grad_before_backward": ZeroGradBeforeBackward,
    "twentyfirst_h1_step_lr_per_batch": StepLRPerBatch,
    "twentyfirst_ok_step_lr_per_epoch": StepLRPerEpoch,
    "twentyfirst_h2_mixup_targets_unmixed": MixupTargetsUnmixed,
    "twentyfirst_ok_mixup_targets_mixed": MixupTargetsMixed,
    "twentyfirst_h2_rows_standardised": RowsStandardised,
    "twentyfirst_ok_columns_standardised": ColumnsStandardised,
    "twentyfirst_h3_validation_loss_on_bar": ValidationLossOnBar,
    "twentyfirst_ok_training_loss_on_bar": TrainingLossOnBar,
    "twentyfirst_h3_bar_loss_unsmoothed": BarLossUnsmoothed,
    "twentyfirst_ok_bar_loss_smoothed": BarLossSmoothed,
}

TWENTYFIRST_EXPECTED = {
    **{name: ("NONE", []) for name in TWENTYFIRST if name.startswith("twentyfirst_ok_")},
    "twentyfirst_h1_zero_grad_before_step": (
        "H1",
        [
            (
                "zero_grad",
                "zero grad",
                "zeroed",
                "cleared",
                "gradients are zero",
                "gradient is zero",
                "zero gradient",
                "no gradient",
                "never moves",
                "never move",
                "no update",
                "update is zero",
                "did not move",
                "do not move",
                "unchanged",
            ),
        ],
    ),
    "twentyfirst_h1_step_lr_per_batch": (
        "H1",
        [
            ("scheduler", "schedule", "learning rate", "lr", "decay"),
            (
                "per batch",
                "every batch",
                "each batch",
                "every step",
                "each step",
                "per step",
                "too fast",
                "too small",
                "too low",
                "tiny",
                "collapse",
                "vanish",
                "toward 0",
                "to 0",
            ),
        ],
    ),
    "twentyfirst_h2_mixup_targets_unmixed": (
        "H2",
        [("mixup", "mix-up", "mixed", "blend", "augment", "label", "target")],
    ),
    "twentyfirst_h2_rows_standardised": (
        "H2",
        [
            ("standardis", "standardiz", "normalis", "normaliz", "scal"),
            ("row", "axis", "dim", "per-example", "per example", "per sample", "per-sample",
             "each example", "each sample", "level", "magnitude"),  # fmt: skip
        ],
    ),
    "twentyfirst_h3_validation_loss_on_bar": (
        "H3",
        [("validation", "val ", "val_", "held-out", "held out", "another split", "other data",
          "different data", "other split")],  # fmt: skip
    ),
    "twentyfirst_h3_bar_loss_unsmoothed": (
        "H3",
        [("smooth", "different loss", "another loss", "other loss", "different criterion",
          "another criterion", "below the", "lower than", "floor", "offset", "shift")],  # fmt: skip
    ),
}
assert set(TWENTYFIRST) == set(TWENTYFIRST_EXPECTED)


def verify(names=()) -> None:
    """`nineteenth.verify` on this batch: each bug and its twin trained on seeds 0 and 1, about
    150 steps, each trained model's `clean_loss` (and for H3 the last value shown over the last
    epoch's mean raw loss): the trained model's `clean_loss` when it has one (the images
    unmixed against their own labels), else its loss on its data as served (the household
    table's defect is what the model can read)."""
    verify_batch(names, TWENTYFIRST, clean_loss)


if __name__ == "__main__":
    import sys

    verify(sys.argv[1:])
