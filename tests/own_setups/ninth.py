"""The ninth batch (issue 46): kinds the triage had not seen, each with healthy twins, written
and scored against the rules at ca083fd before any rule for them.

- slower is not broken (item 4): gradient accumulation under SGD with momentum 0.9, a linear
  probe on a frozen pretrained body, a regression on frozen random features; and a loss summed
  over the batch under an LR tuned for the mean, which several one-change runs fix (the
  reduction is the cause, not the momentum or the LR);
- the loss's range (item 1): a log-likelihood minimised without its minus sign (a classifier, a
  Gaussian regression), nll_loss fed raw logits (a classifier, an LM); twins: the same with the
  sign, log_softmax before nll_loss, a Gaussian NLL with a learned variance (legitimately below
  0), label smoothing 0.1;
- an LR too small all along (item 2): a linear warm-up far longer than the run (Adam on a
  classifier, SGD on a regression, LinearLR on an LM); twins: the same warm-ups short enough;
- which target each output is scored against (item 3): batches already shifted and shifted
  again in the loss (offset 2), the shift applied to the inputs (offset -1), sequence-first
  batches whose targets are the inputs (offset 0 along the time axis, axis 0); twins: one shift
  in the loss, sequence-first batches shifted right;
- the logger's hypothesis (item 5): an epoch total kept in an integer array, a progress value
  set at the first batch and never refreshed; twins: a float array, a value refreshed every 10.

First scores, each against the rules before any rule for its kind (`python -m
own_setups.score_ninth`, seeds 0 and 1):
- the first 20 (slower-is-not-broken, range, LR) at ca083fd: right system on 2 of 9 buggy, right
  mechanism on 0 of 9; 2 of 11 healthy convicted: the accumulation loop (as "the LR never
  settles", a plain loop's instability) and the linear probe (frozen parameters). The summed
  losses were called divergence, the sign flips H2 (labels decorrelated, inputs drowned in
  noise), nll_loss on logits NONE or H2, the three warm-ups UNKNOWN;
- the five offset setups at 633c190: 1 of 3 right (the sequence-first copy was already caught);
  the double shift and the inputs shifted acquitted;
- the four logger setups at 2c3b184: 2 of 2 right system, 0 of 2 right mechanism (the integer
  total called stale, the snapshot "stuck"); the refreshed twin, then logged at every step
  with the value held between refreshes, was convicted as stale: it now logs only when it
  refreshes (a held value shown every step is a stale report).
After the rules of issue 46 (`baseline`, `lossrange`, `lowlr`, `offset`, `rebuild`): 14 of 14
buggy right system and mechanism, 0 of 15 healthy convicted, 12 of 14 signed by labkit alone
(the two copies found by the offset are not: the reference loss shifts batch-first grids only).

Nothing here uses labkit but `Run.from_log`.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run

from .common import MLP, N_FEATURES, TinyGRULM, batches_of, blob_mixture, markov_tokens, split
from .fourth import mlp, plain_train, shuffled, tabular_regression


class _Blobs:
    LR = 3e-3

    def __init__(self):
        (self.x, self.y), _ = split(*blob_mixture(n=1280, seed=461))

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=self.LR)

    def batches(self, seed):
        return batches_of(self.x, self.y, 32, seed)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class _Regression(_Blobs):
    def __init__(self):
        self.x, self.y = tabular_regression(n=1024, seed=462)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(8, 1)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1), y)


class _Lm(_Blobs):
    LR = 5e-3

    def __init__(self):
        self.ids = markov_tokens(n=256, seed=463, follow=0.85)[:, :12]  # (256, 12): short rows, a fast triage

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyGRULM()

    def batches(self, seed):
        return [(self.ids[i, :-1], self.ids[i, 1:]) for i in shuffled(256, 16, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())


# ---------------------------------------------------------------------- slower is not broken
class AccumulationMomentum(_Blobs):
    """Healthy: four micro-batches of 8, each loss divided by 4, one SGD step with momentum 0.9."""

    LR = 0.04

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR, momentum=0.9)

    def batches(self, seed):
        return batches_of(self.x, self.y, 8, seed)

    def train(self, seed, epochs):
        started = time.time()
        model, raw, shown = self.make_model(seed), [], []
        opt = self.make_optimizer(model)
        for epoch in range(epochs):
            running = 0.0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                loss = self.loss_fn(model, batch)
                (loss / 4).backward()
                if (i + 1) % 4 == 0:
                    opt.step()
                    opt.zero_grad()
                running += loss.item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class _Probe(nn.Module):
    def __init__(self, body, hidden=64):
        super().__init__()
        self.body = body.requires_grad_(False)
        self.head = nn.Linear(hidden, 6)

    def forward(self, x):
        return self.head(self.body(x))


def _pretrained_body(x, clusters, seed, hidden=64):
    """A body pretrained on another task (the same kind of blobs' 18 cluster ids) from the seed's
    init, as a checkpoint per seed would be."""
    torch.manual_seed(seed)
    body = nn.Sequential(nn.Linear(N_FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
    old_head = nn.Linear(hidden, 18)
    opt = torch.optim.Adam([*body.parameters(), *old_head.parameters()], lr=1e-2)
    for _ in range(60):
        opt.zero_grad()
        F.cross_entropy(old_head(body(x)), clusters).backward()
        opt.step()
    return body.state_dict()


class LinearProbe(_Blobs):
    """Healthy: a linear probe, the body pretrained (a checkpoint per seed) and frozen, the new
    head trained with Adam (the optimizer built over what requires grad)."""

    def __init__(self):
        super().__init__()
        x, _ = blob_mixture(n=512, seed=464)
        centres = 2.5 * torch.randn(18, N_FEATURES, generator=torch.Generator().manual_seed(465))
        clusters = torch.cdist(x, centres).argmin(1)
        self.checkpoints = {seed: _pretrained_body(x, clusters, seed) for seed in range(3)}

    def make_model(self, seed):
        torch.manual_seed(seed)
        body = nn.Sequential(nn.Linear(N_FEATURES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        body.load_state_dict(self.checkpoints[seed % 3])
        return _Probe(body)

    def make_optimizer(self, model):
        return torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)


class RandomFeatureRegression(_Regression):
    """Healthy: regression on frozen random features (a random-feature model, on purpose: the
    projection drawn N(0, 1/2) by the learner, then frozen), the linear readout trained with SGD;
    the optimizer holds every parameter."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(8, 256), nn.ReLU(), nn.Linear(256, 1))
        nn.init.normal_(model[0].weight, std=0.5)
        nn.init.uniform_(model[0].bias, -1.0, 1.0)
        model[0].requires_grad_(False)
        return model

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=2e-3, momentum=0.9)


class LmFrozenEmbedding(_Lm):
    """Healthy: an LM whose token embedding is frozen at its init (fixed random codes, on
    purpose); the GRU and the head train with Adam."""

    def make_model(self, seed):
        model = super().make_model(seed)
        model.embed.requires_grad_(False)
        return model


class SummedLossMomentum(_Blobs):
    """Bug: cross_entropy(reduction="sum") under SGD(lr=0.05, momentum=0.9), tuned for the mean:
    every step is 32 times too large."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y, reduction="sum")


class SummedRegression(_Regression):
    """Bug: a squared error summed over the batch, ((pred - y) ** 2).sum(), under SGD with an LR
    tuned for the mean."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)

    def loss_fn(self, model, batch):
        x, y = batch
        return ((model(x).squeeze(-1) - y) ** 2).sum()


# ---------------------------------------------------------------------- the loss's range
class LoglikNoMinus(_Blobs):
    """Bug: the log-likelihood of the labels, minimised without its minus sign."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.log_softmax(model(x), -1).gather(1, y[:, None]).mean()


class LoglikWithMinus(_Blobs):
    """Healthy: the same log-likelihood, with its minus sign."""

    def loss_fn(self, model, batch):
        x, y = batch
        return -F.log_softmax(model(x), -1).gather(1, y[:, None]).mean()


class NllRawLogits(_Blobs):
    """Bug: nll_loss fed the raw logits (the model has no log_softmax)."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.nll_loss(model(x), y)


class LmNllRawLogits(_Lm):
    """Bug: an LM's nll_loss fed the raw logits."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.nll_loss(model(x).flatten(0, 1), y.flatten())


class LmNllLogSoftmax(_Lm):
    """Healthy: the LM's nll_loss fed log_softmax of the logits."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.nll_loss(F.log_softmax(model(x), -1).flatten(0, 1), y.flatten())


class GaussianLoglikNoMinus(_Regression):
    """Bug: a Gaussian log-likelihood with unit variance, -0.5 (pred - y)^2, minimised as it is."""

    def loss_fn(self, model, batch):
        x, y = batch
        return (-0.5 * (model(x).squeeze(-1) - y) ** 2).mean()


class GaussianNllLearnedVariance(_Regression):
    """Healthy: a Gaussian NLL with a learned log-variance (two outputs), below 0 once the
    variance is small: it has no floor at 0."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(8, 2)

    def loss_fn(self, model, batch):
        x, y = batch
        out = model(x)
        return F.gaussian_nll_loss(out[:, 0], y, out[:, 1].exp())


class LabelSmoothing(_Blobs):
    """Healthy: cross-entropy with label_smoothing=0.1."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y, label_smoothing=0.1)


# ---------------------------------------------------------------------- an LR too small all along
def _scheduled_train(setup, seed, epochs, schedule):
    """plain_train with a scheduler stepped after every batch, as fine-tuning scripts do."""
    started = time.time()
    model = setup.make_model(seed)
    opt = setup.make_optimizer(model)
    sched = schedule(opt)
    raw, shown = [], []
    for epoch in range(epochs):
        running = 0.0
        for i, batch in enumerate(setup.batches(seed * 10 + epoch)):
            opt.zero_grad()
            loss = setup.loss_fn(model, batch)
            loss.backward()
            opt.step()
            sched.step()
            running += loss.item()
            raw.append(loss.item())
            shown.append(running / (i + 1))
    return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                        seed=seed, started_at=started)


def _warmup_train(setup, seed, epochs, warmup):
    """A linear warm-up over `warmup` batches by LambdaLR."""
    return _scheduled_train(setup, seed, epochs, lambda opt: torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min(1.0, (step + 1) / warmup)))


class WarmupLongerThanRun(_Blobs):
    """Bug: a linear warm-up of 100,000 steps (from a recipe for a long run) on a run of a few
    hundred: the LR never rises above 3e-3 * 300 / 1e5, about 1e-5."""

    def train(self, seed, epochs):
        return _warmup_train(self, seed, epochs, 100_000)


class WarmupShort(_Blobs):
    """Healthy: the same warm-up over 30 steps."""

    def train(self, seed, epochs):
        return _warmup_train(self, seed, epochs, 30)


class RegressionWarmupLong(_Regression):
    """Bug: SGD with momentum and a warm-up of 50,000 steps: the LR never leaves ~1e-5."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)

    def train(self, seed, epochs):
        return _warmup_train(self, seed, epochs, 50_000)


class RegressionWarmupShort(RegressionWarmupLong):
    """Healthy: the same with a warm-up of 50 steps."""

    def train(self, seed, epochs):
        return _warmup_train(self, seed, epochs, 50)


class _LmLinearLR(_Lm):
    FACTOR, ITERS = 1e-3, 100_000

    def train(self, seed, epochs):
        return _scheduled_train(self, seed, epochs, lambda opt: torch.optim.lr_scheduler.LinearLR(
            opt, start_factor=self.FACTOR, total_iters=self.ITERS))


class LmLinearLRTooLong(_LmLinearLR):
    """Bug: LinearLR(start_factor=1e-3, total_iters=100_000) on a run of a few hundred steps."""


class LmLinearLRShort(_LmLinearLR):
    """Healthy: LinearLR(start_factor=0.1, total_iters=40)."""
    FACTOR, ITERS = 0.1, 40


# ---------------------------------------------------------------------- which target each output is scored against
class LmDoubleShift(_Lm):
    """Bug: the batches are already shifted (inputs ids[:, :-1], labels ids[:, 1:]) and the loss
    shifts again, logits[:, :-1] against labels[:, 1:]: position t is scored against token t+2."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x)[:, :-1].flatten(0, 1), y[:, 1:].flatten())


class LmShiftedOnce(_Lm):
    """Healthy: the batches carry the whole rows as inputs and labels; the loss shifts once."""

    def batches(self, seed):
        return [{"input_ids": self.ids[i], "labels": self.ids[i]} for i in shuffled(256, 16, seed)]

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"])
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), batch["labels"][:, 1:].flatten())


class LmInputsShifted(_Lm):
    """Bug: the shift applied to the inputs instead of the targets: inputs ids[:, 1:], labels
    ids[:, :-1]; position t is scored against the token it saw one step before."""

    def batches(self, seed):
        return [(self.ids[i, 1:], self.ids[i, :-1]) for i in shuffled(256, 16, seed)]


class _SeqFirstLm(_Lm):
    """Sequence-first batches, (time, batch), as PyTorch's word_language_model batchifies them;
    the model's output (T, B, V) is flattened for the loss."""

    class Model(nn.Module):
        def __init__(self, vocab=20, dim=32):
            super().__init__()
            self.embed, self.rnn, self.out = nn.Embedding(vocab, dim), nn.GRU(dim, dim), nn.Linear(dim, vocab)

        def forward(self, ids):  # (T, B) -> (T * B, V)
            return self.out(self.rnn(self.embed(ids))[0]).flatten(0, 1)

    SHIFT = 1

    def make_model(self, seed):
        torch.manual_seed(seed)
        return self.Model()

    def batches(self, seed):
        t = self.ids.T  # (12, 256)
        return [(t[:-1, i], t[self.SHIFT:t.shape[0] - 1 + self.SHIFT, i]) for i in shuffled(256, 16, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y.reshape(-1))


class SeqFirstUnshifted(_SeqFirstLm):
    """Bug: sequence-first batches whose targets are the inputs themselves (the shift lost)."""
    SHIFT = 0


class SeqFirstShifted(_SeqFirstLm):
    """Healthy: the same, targets one step ahead."""


# ---------------------------------------------------------------------- the logger's hypothesis
class _EpochTotals(_Blobs):
    """An epoch's total kept in a NumPy array, one slot per epoch, divided by the count."""
    DTYPE = float

    def train(self, seed, epochs):
        started = time.time()
        model, raw, shown = self.make_model(seed), [], []
        opt = self.make_optimizer(model)
        totals = np.zeros(epochs, dtype=self.DTYPE)
        for epoch in range(epochs):
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                totals[epoch] += loss.item()
                raw.append(loss.item())
                shown.append(float(totals[epoch]) / (i + 1))
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class IntEpochTotals(_EpochTotals):
    """Bug (H3): np.zeros(epochs, dtype=int): each add truncates the epoch total to an integer."""
    DTYPE = int


class FloatEpochTotals(_EpochTotals):
    """Healthy: the same with a float array."""


class _Snapshot(_Regression):
    """The progress value is `shown`, refreshed every `EVERY` batches (0: never)."""
    EVERY = 0

    def train(self, seed, epochs):
        started = time.time()
        model, raw, shown = self.make_model(seed), [], []
        opt = self.make_optimizer(model)
        value = None
        for epoch in range(epochs):
            for batch in self.batches(seed * 10 + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                raw.append(loss.item())
                fresh = self.EVERY and len(raw) % self.EVERY == 0
                if value is None or fresh:
                    value = sum(raw[-self.EVERY:]) / len(raw[-self.EVERY:]) if self.EVERY else loss.item()
                shown.append(value if fresh or not self.EVERY else None)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class SnapshotNeverRefreshed(_Snapshot):
    """Bug (H3): the progress value is set at the first batch and never refreshed."""


class SnapshotRefreshed(_Snapshot):
    """Healthy: the progress value is the mean of the last 10 raw losses, logged every 10."""
    EVERY = 10


NINTH = {
    "ninth_ok_accumulation_momentum": AccumulationMomentum,
    "ninth_ok_linear_probe": LinearProbe,
    "ninth_ok_random_feature_regression": RandomFeatureRegression,
    "ninth_ok_lm_frozen_embedding": LmFrozenEmbedding,
    "ninth_h1_summed_loss_momentum": SummedLossMomentum,
    "ninth_h1_summed_regression": SummedRegression,
    "ninth_h1_loglik_no_minus": LoglikNoMinus,
    "ninth_ok_loglik_with_minus": LoglikWithMinus,
    "ninth_h1_nll_raw_logits": NllRawLogits,
    "ninth_h1_lm_nll_raw_logits": LmNllRawLogits,
    "ninth_ok_lm_nll_log_softmax": LmNllLogSoftmax,
    "ninth_h1_gaussian_loglik_no_minus": GaussianLoglikNoMinus,
    "ninth_ok_gaussian_nll_learned_variance": GaussianNllLearnedVariance,
    "ninth_ok_label_smoothing": LabelSmoothing,
    "ninth_h1_warmup_longer_than_run": WarmupLongerThanRun,
    "ninth_ok_warmup_short": WarmupShort,
    "ninth_h1_regression_warmup_long": RegressionWarmupLong,
    "ninth_ok_regression_warmup_short": RegressionWarmupShort,
    "ninth_h1_lm_linear_lr_too_long": LmLinearLRTooLong,
    "ninth_ok_lm_linear_lr_short": LmLinearLRShort,
    "ninth_h2_lm_double_shift": LmDoubleShift,
    "ninth_ok_lm_shifted_once": LmShiftedOnce,
    "ninth_h2_lm_inputs_shifted": LmInputsShifted,
    "ninth_h2_seq_first_unshifted": SeqFirstUnshifted,
    "ninth_ok_seq_first_shifted": SeqFirstShifted,
    "ninth_h3_int_epoch_totals": IntEpochTotals,
    "ninth_ok_float_epoch_totals": FloatEpochTotals,
    "ninth_h3_snapshot_never_refreshed": SnapshotNeverRefreshed,
    "ninth_ok_snapshot_refreshed": SnapshotRefreshed,
}

_SIGN = [("sign", "minus"), ("log-likelihood", "log-probabilit", "loss")]
_RAW = [("nll_loss",), ("logits", "log-probabilit")]
_WARM = [("warm-up", "warmup", "schedule", "linearlr"), ("lr", "learning rate")]
NINTH_EXPECTED = {
    **{name: ("NONE", []) for name in NINTH if name.startswith("ninth_ok_")},
    "ninth_h1_summed_loss_momentum": ("H1", [("sum",), ("reduction", "mean")]),
    "ninth_h1_summed_regression": ("H1", [("sum",), ("reduction", "mean")]),
    "ninth_h1_loglik_no_minus": ("H1", _SIGN),
    "ninth_h1_nll_raw_logits": ("H1", _RAW),
    "ninth_h1_lm_nll_raw_logits": ("H1", _RAW),
    "ninth_h1_gaussian_loglik_no_minus": ("H1", _SIGN),
    "ninth_h1_warmup_longer_than_run": ("H1", _WARM),
    "ninth_h1_regression_warmup_long": ("H1", _WARM),
    "ninth_h1_lm_linear_lr_too_long": ("H1", _WARM),
    "ninth_h2_lm_double_shift": ("H2", [("shift",), ("twice", "t+2", "two")]),
    "ninth_h2_lm_inputs_shifted": ("H2", [("shift",), ("t-1", "already sees", "copy")]),
    "ninth_h2_seq_first_unshifted": ("H2", [("shift", "copy", "same position")]),
    "ninth_h3_int_epoch_totals": ("H3", [("int", "integer", "truncat")]),
    "ninth_h3_snapshot_never_refreshed": ("H3", [("first",), ("never refreshed", "snapshot")]),
}
assert set(NINTH) == set(NINTH_EXPECTED)
