"""The twentieth batch: a fresh batch of kinds no earlier batch holds, each beside a healthy
twin that differs by the bug's one change, written in plain PyTorch without reading any rule of
the triage (nor the tests that reveal them, nor the triage's docs), and scored at first sight.

The loop, the loss (H1), here:
- a 1-D conv net with BatchNorm trained by gradient accumulation over micro-batches of ONE
  window ("to save memory"): each BatchNorm normalises a single window over its own time
  axis, which erases the window's level, the very thing the label is (twin: micro-batches of
  8, the same accumulation, 2 per step of 16);
- a mixture density network whose mixture log-likelihood is written `(log_pi +
  log_prob).sum(-1)`, a sum of logs, where `torch.logsumexp(log_pi + log_prob, -1)`, the log
  of the sum, was meant: every component must then fit every point, and the two-branch
  inverse problem (elbow up or down) gets one broad Gaussian (twin: logsumexp).
The data (H2), in `twentieth_b.py`:
- a load forecaster whose data module shuffles the hours of the series, `series[randperm]`,
  before the windows are cut: each window is 24 random hours and its "next hour" another
  (twin: the windows cut in time order, then shuffled as pairs);
- a one-way GRU tagger whose tokenizer pads the ids on the left while the tags are padded on
  the right: position t holds token t - (16 - L) and the tag of a token the GRU has not read
  yet (twin: both padded on the right).
The report (H3), in `twentieth_b.py`:
- an EmbeddingBag topic classifier whose bar shows the loss computed by a `scorer` copy that
  `load_state_dict` filled once before the loop: the untrained model's loss on each batch
  (twin: the scorer loaded before it scores each batch);
- a U-Net-like denoiser whose AverageMeter adds `val * n` to its sum and 1 to its count: the
  bar shows 32 times the mean loss (twin: `self.count += n`).

Every setup runs one learner's loop (`twentieth_b._Setup`): zero_grad, the batch's backward,
an AverageMeter fed the batch's loss with `n=` its size, step; the bar shows the meter's `avg`,
a new meter each epoch. The BatchNorm pair replaces the backward (the accumulation), the
scorer pair what the meter is fed, the meter pair the meter.

Each was checked in plain PyTorch against its twin before the score (`python -m
own_setups.twentieth` from tests/, seeds 0 and 1, 5 epochs of 32 batches, 160 steps; each setup
under 4 s of CPU on one thread once torch is warm, the BatchNorm bug the slowest at about 3 s,
its 32 backward passes a step): the trained model's loss on all of its data in eval mode
without the defect (the windows in time order against their next hour, the tags aligned with
their tokens, the mixture's negative log-likelihood), and for the H3 pairs the last value shown
over the last epoch's mean raw loss:

    twentieth_h1_batchnorm_micro_batches_of_one    1.264 1.209 | twin 0.182 0.208
    twentieth_h1_mixture_sum_of_logs               1.010 1.016 | twin -0.377 -0.504
    twentieth_h2_series_shuffled_before_windows    1.046 1.014 | twin 0.142 0.129
    twentieth_h2_ids_padded_left                   0.651 0.640 | twin 0.002 0.001
    twentieth_h3_scorer_loaded_once                0.014 0.014 shown/raw 75.1 76.9
                                                   | twin 0.014 0.014 shown/raw 1 1
    twentieth_h3_meter_counts_calls                0.008 0.010 shown/raw 32 32
                                                   | twin 0.008 0.010 shown/raw 1 1

(The load levels' chance is ln 3 = 1.099: in eval mode the running statistics put the level
back, but the head never learned to read it. The series is standardised, so 1.0 is the
forecast of its mean. One broad Gaussian over the two branches, std about 0.6, gives about
0.9. Before the score, and before any triage ran: the BatchNorm pair went from 1024 windows in
batches of 32 to 512 in batches of 16 (7 s a run of the bug), and the mixture pair from
Bishop's inverse sine at LR 1e-2, where its twin had not learned in 160 steps (-0.16 / -0.11
against the bug's -0.09 / -0.08), to the elbow's two branches at LR 5e-3.)

First score (`python -m own_setups.score_twentieth`, labkit/ as at 90bf917, the setups
committed at f0a9f60 before it, scored once, 164 s): 8 of 12 right system (4 of 6 bugs, 4 of 6
twins), 6 of 12 right mechanism on a strict reading, as the scorer counted too (2 of 6 bugs, 4
of 6 twins acquitted), 2 of 6 healthy convicted as the scorer counts them (1 convicted, H2; 1
CRASH), 0 UNKNOWN, 1 CRASH; 3 of the 4 right convictions granted.
- BatchNorm over micro-batches of one: H1 right, mechanism MISS: "your loop, not its parts: a
  plain loop with your model, data, loss and optimizer reaches 0.261 / 0.197 where your loop
  ends at 1.1 / 1.1 (seeds 0 / 1); the difference is in train(): what it does beside
  zero_grad, the loss, backward() and step() (an optimizer or its state rebuilt, gradients or
  the lo[ss ...]": the place (the loop's accumulation) without BatchNorm or the micro-batch
  of one; granted;
- mixture as a sum of logs: MISS, H2: "the labels are decorrelated from the inputs: a plain
  loop trains alike on real and on shuffled labels (no signal), while the inputs themselves
  are structured"; its twin got the same line (below);
- series shuffled before the windows: H2 right, mechanism MISS: "the inputs are drowned in
  noise: real and shuffled labels train alike, and the inputs' feature correlations are no
  stronger than pure noise of this shape gives (top eigenvalue 0.98x the noise edge)": true
  of the windows as served (24 random hours), the shuffle before windowing not named; refused;
- ids padded left: MISS, acquitted (NONE, "... the inputs (1024 rows of 16 token ids) are
  finite, no position holds one token on every row, the labels carry signal (real beat
  shuffled by more than the seed spread), all 7 tensors your loss depends on ...");
- scorer loaded once: H3 right, mechanism right: "the reported value is stale: it repeats a
  value computed at an earlier step (158 of 160 reports equal an earlier honest value, 0
  repeat the previous report) (seeds 0, 2 of 0, 1, 2)"; granted;
- meter counting calls: H3 right, mechanism right: "the reported value is the honest mean of
  the epoch so far times one constant scale, x32 at every one of the 160 reports ..."; granted.
The twins: four acquitted (NONE, "no defect found: the logger is honest ..."; the meter's
twin the slowest, 39.6 s); the mixture's twin (logsumexp) CONVICTED, H2, the bug's line word
for word: the angle's mean given the reach is 0 at every reach (elbow up and down are
symmetric), so the signal is in the two branches, not in the mean; the tagger's twin (ids
padded right) CRASH, "IndexError: Target -100 is out of bounds." (5.4 s): its tags hold -100
on the padding, which its loss ignores (`ignore_index=-100`); the bug, the same tags, did not
crash. The scorer prints each verdict's first 300 characters; the words above are those. No
setup broke the setup protocol; no setup was changed after the score.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .eleventh import _gen
from .nineteenth import verify as verify_batch
from .twentieth_b import (
    IdsPaddedLeft,
    IdsPaddedRight,
    MeterCountsCalls,
    MeterCountsSamples,
    ScorerLoadedEachBatch,
    ScorerLoadedOnce,
    SeriesShuffledBeforeWindows,
    WindowsShuffled,
    _Setup,
)


# ------------------------------------------------------------------ BatchNorm over one window
def strain_windows(n=512, seed=7105, length=32):
    """Strain-gauge windows: the machine's load level (3 classes) sets the signal's offset, and
    a vibration of random frequency, phase and amplitude plus noise rides on it."""
    g = _gen(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    t = torch.arange(length).float()
    freq = 0.1 + 0.4 * torch.rand(n, 1, generator=g)
    phase = 2 * math.pi * torch.rand(n, 1, generator=g)
    amp = 0.5 + torch.rand(n, 1, generator=g)
    x = amp * torch.sin(freq * t + phase) + 0.2 * torch.randn(n, length, generator=g)
    return (x + 0.8 * (y[:, None] - 1).float())[:, None], y  # (n, 1, 32), (n,)


class _StrainNet(nn.Module):
    """Two valid 1-D convolutions, each followed by BatchNorm and ReLU, mean over time, a head."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(1, 16, 5), nn.BatchNorm1d(16), nn.ReLU(),
            nn.Conv1d(16, 32, 5), nn.BatchNorm1d(32), nn.ReLU(),
        )  # fmt: skip
        self.head = nn.Linear(32, 3)

    def forward(self, x):  # (B, 1, 32) -> (B, 3)
        return self.head(self.body(x).mean(-1))


class _Strain(_Setup):
    """The conv net classifies the load level, cross-entropy, Adam; each batch of 16 is split
    into micro-batches whose losses, divided by their number, are backpropagated one by one
    before a single step."""

    MODEL, BATCH, MICRO = _StrainNet, 16, 8

    def __init__(self):
        self.x, self.y = strain_windows()

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def backward(self, model, batch) -> float:
        """Gradient accumulation over micro-batches of MICRO windows."""
        parts = list(zip(batch[0].split(self.MICRO), batch[1].split(self.MICRO)))
        total = 0.0
        for part in parts:
            loss = self.loss_fn(model, part) / len(parts)
            loss.backward()
            total += loss.item()
        return total


class BatchNormMicroBatchesOfOne(_Strain):
    """Bug (H1): `MICRO = 1`, "accumulate over single windows to save memory": in training mode
    each BatchNorm1d sees one window and normalises it over its own time axis, which removes
    its offset (the convolutions are valid, so no padding keeps a trace of it): the load level
    the label is cannot reach the head."""

    MICRO = 1


class BatchNormMicroBatchesOfEight(_Strain):
    """Healthy: micro-batches of 8 windows, 2 per step: BatchNorm's statistics span 8 windows
    of mixed levels."""


# ------------------------------------------------------------------ a mixture as a sum of logs
COMPONENTS = 3


def elbow_angles(n=1024, seed=7106):
    """A two-link arm's inverse kinematics, reduced: from the hand's reach r (uniform in
    [-1, 1]) predict the elbow's angle, which is +(0.5 + 0.5 r^2) with the elbow up and
    -(0.5 + 0.5 r^2) with it down (each half the time), plus a little noise: two branches for
    one input."""
    g = _gen(seed)
    r = 2 * torch.rand(n, generator=g) - 1
    up = torch.where(torch.rand(n, generator=g) < 0.5, 1.0, -1.0)
    return r[:, None], up * (0.5 + 0.5 * r**2) + 0.05 * torch.randn(n, generator=g)


class _MixtureDensityNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.head = nn.Linear(64, 3 * COMPONENTS)

    def forward(self, r):  # (B, 1) -> three (B, K): mixture logits, means, log-stds
        return self.head(self.body(r)).chunk(3, dim=-1)


def mixture_terms(model, r, angle):
    """(B, K): log pi_k + log N(angle; mu_k, sigma_k), each component's weighted log-density."""
    logits, mu, log_sigma = model(r)
    log_prob = torch.distributions.Normal(mu, log_sigma.exp()).log_prob(angle[:, None])
    return F.log_softmax(logits, -1) + log_prob


class _Mixture(_Setup):
    """A mixture density network (3 Gaussian components) fits the elbow's angle by its negative
    log-likelihood, Adam."""

    MODEL, LR = _MixtureDensityNet, 5e-3

    def __init__(self):
        self.x, self.y = elbow_angles()

    def loss_fn(self, model, batch):
        r, angle = batch
        return -torch.logsumexp(mixture_terms(model, r, angle), -1).mean()

    def clean_loss(self):
        """The trained mixture's negative log-likelihood on every point."""
        with torch.no_grad():
            return -torch.logsumexp(mixture_terms(self.model, self.x, self.y), -1).mean().item()


class MixtureSumOfLogs(_Mixture):
    """Bug (H1): the mixture's log-likelihood written `(log_pi + log_prob).sum(-1)`, the log of
    a product of the components, where the log of their weighted sum was meant: each component
    is pulled onto every point, the weights toward 1/3 each, and the mixture is one broad
    Gaussian around the two branches' average, 0."""

    def loss_fn(self, model, batch):
        r, angle = batch
        return -mixture_terms(model, r, angle).sum(-1).mean()


class MixtureLogSumExp(_Mixture):
    """Healthy: `torch.logsumexp(log_pi + log_prob, -1)`, the log of the mixture's density."""


TWENTIETH = {
    "twentieth_h1_batchnorm_micro_batches_of_one": BatchNormMicroBatchesOfOne,
    "twentieth_ok_batchnorm_micro_batches_of_eight": BatchNormMicroBatchesOfEight,
    "twentieth_h1_mixture_sum_of_logs": MixtureSumOfLogs,
    "twentieth_ok_mixture_logsumexp": MixtureLogSumExp,
    "twentieth_h2_series_shuffled_before_windows": SeriesShuffledBeforeWindows,
    "twentieth_ok_windows_shuffled": WindowsShuffled,
    "twentieth_h2_ids_padded_left": IdsPaddedLeft,
    "twentieth_ok_ids_padded_right": IdsPaddedRight,
    "twentieth_h3_scorer_loaded_once": ScorerLoadedOnce,
    "twentieth_ok_scorer_loaded_each_batch": ScorerLoadedEachBatch,
    "twentieth_h3_meter_counts_calls": MeterCountsCalls,
    "twentieth_ok_meter_counts_samples": MeterCountsSamples,
}

TWENTIETH_EXPECTED = {
    **{name: ("NONE", []) for name in TWENTIETH if name.startswith("twentieth_ok_")},
    "twentieth_h1_batchnorm_micro_batches_of_one": (
        "H1",
        [
            ("batchnorm", "batch norm", "batch-norm", "normalis", "normaliz"),
            (
                "micro-batch",
                "micro batch",
                "batch of one",
                "batch of 1",
                "batch size 1",
                "size 1",
                "one example",
                "one sample",
                "one window",
                "single",
                "per-sample",
                "per sample",
                "accumulat",
            ),
        ],
    ),
    "twentieth_h1_mixture_sum_of_logs": (
        "H1",
        [("logsumexp", "log-sum-exp", "sum of logs", "log of the sum", "mixture", "product")],
    ),
    "twentieth_h2_series_shuffled_before_windows": (
        "H2",
        [
            ("shuffl", "permut", "order"),
            ("series", "time step", "hours", "window", "before", "temporal"),
        ],
    ),
    "twentieth_h2_ids_padded_left": (
        "H2",
        [
            ("pad",),
            ("left", "side", "align", "shift", "offset"),
        ],
    ),
    "twentieth_h3_scorer_loaded_once": (
        "H3",
        [
            (
                "stale",
                "copy",
                "load_state_dict",
                "untrained",
                "initial",
                "at init",
                "never updated",
                "frozen",
                "scorer",
                "another model",
                "other model",
                "old weights",
            ),
        ],
    ),
    "twentieth_h3_meter_counts_calls": (
        "H3",
        [
            (
                "batch size",
                "32 times",
                "times 32",
                "x32",
                "32x",
                "count",
                "meter",
                "per sample",
                "per-sample",
                "sum over the batch",
                "summed over the batch",
                "not divided",
            ),
        ],
    ),
}
assert set(TWENTIETH) == set(TWENTIETH_EXPECTED)


def clean_loss(setup) -> float:
    """The trained model's loss on all of its data, in eval mode, without the setup's defect:
    the windows in time order against their next hour, the tags aligned with their tokens, the
    mixture's log-likelihood. For the H3 bugs the defect is in the report: this is the trained
    model's loss, and `shown/raw` tells the report's harm."""
    setup.model.eval()
    if hasattr(setup, "clean_loss"):
        return setup.clean_loss()
    with torch.no_grad():
        return setup.loss_fn(setup.model, (setup.x, setup.y)).item()


def verify(names=()) -> None:
    """`nineteenth.verify` on this batch: each bug and its twin trained on seeds 0 and 1, about
    150 steps, each trained model's `clean_loss` (and for H3 the last value shown over the last
    epoch's mean raw loss)."""
    verify_batch(names, TWENTIETH, clean_loss)


if __name__ == "__main__":
    import sys

    verify(sys.argv[1:])
