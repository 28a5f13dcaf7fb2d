"""The thirteenth batch (issue 55, a fresh batch again): silent errors of plain PyTorch that no
earlier batch holds, each beside a healthy twin, written before any rule of `step2_h3` ..
`step6_decide` was read, and scored at first sight (figures in docs/developer/triage-scores.md).

- a softmax layer at the end of an LM, then `cross_entropy` on its output (twin: LogSoftmax
  and `nll_loss`, which is right);
- `optimizer.step()` written before `loss.backward()` (twin: step at the top of the loop, on the
  previous batch's gradient, then zero_grad, forward, backward: one batch late, but right);
- an LSTM sequence classifier built without `batch_first=True` and fed (batch, time) tensors:
  it recurs across the batch (twin: batch_first=True);
- `CrossEntropyLoss(ignore_index=0)` copied from an NLP loop onto a classifier whose class 0 is
  real (twin: ignore_index=-1 on rows that truly have no label);
- a sigmoid at the end of a regression whose targets were standardised (twin: targets scaled to
  [0, 1] under the same sigmoid);
- `clip_grad_norm_` called before `backward()`, on an LM at the high SGD LR the clip was meant
  to tame (twin: clipped after backward);
- a LambdaLR whose lambda returns a learning rate, not a factor (twin: a factor);
- early stopping written the wrong way round: it stops once the loss has improved twice (twin:
  the right way round);
- `model.eval()` left on after a sanity check before the loop, on a model whose first layer is
  a BatchNorm that stands in for input standardisation (twin: `model.train()` after the check);
- a per-epoch "shuffle" that permutes the feature columns instead of the rows (twin: the rows);
- a `WeightedRandomSampler` given one weight per class instead of one per example: it draws
  only rows 0..5 (twin: one weight per example, 1 / its class's count);
- the progress bar shows exp(running mean) (perplexity) as the loss (twin: the running mean
  weighted by each batch's size, the last batch short);
- and one more healthy choice: AdamW decaying every parameter, embeddings and LayerNorm too.

`python -m own_setups.thirteenth` (from tests/) trains each bug and its twin in plain PyTorch and
prints the loss of each trained model on all its data, clean: the bug must hurt, the twin learn.

Nothing here uses labkit but `Run.from_log`.
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import MLP, TinyGRULM, blob_mixture, markov_tokens, split
from .eleventh import _Blobs as _ElevenBlobs, _Plain, _gen, _log
from .fourth import mlp, shuffled, tabular_regression


class _Blobs(_ElevenBlobs):
    def __init__(self):
        (self.x, self.y), _ = split(*blob_mixture(n=1280, seed=5610))


class _Loop(_Plain):
    """The plain loop, with each batch's work in `iteration` (so a bug may reorder it), the
    model prepared by `prepare` before the loop, and `stop` asked after each epoch."""

    def prepare(self, model):
        pass

    def stop(self, epoch, mean):
        return False

    def iteration(self, model, opt, batch):
        opt.zero_grad()
        loss = self.loss_fn(model, batch)
        loss.backward()
        self.before_step(model, opt)
        opt.step()
        return loss.item()

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        self.prepare(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running, epoch_raw = 0.0, []
            for batch in self.batches(seed * 10 + epoch):
                value = self.iteration(model, opt, batch)
                running += value
                raw.append(value)
                epoch_raw.append(value)
                shown.append(self.shown(running, epoch_raw))
            self.end_epoch(opt, running / len(epoch_raw))
            if self.stop(epoch, running / len(epoch_raw)):
                break
        self.model = model
        return _log(raw, shown, seed, started)


# ------------------------------------------------------------------ the order of a step
class _BlobsLoop(_Loop, _Blobs):
    pass


class StepBeforeBackward(_BlobsLoop):
    """Bug (H1): `opt.zero_grad(); loss = ...; opt.step(); loss.backward()`: the step runs
    while the gradients are None (zero_grad sets them to None), so Adam skips every parameter;
    the backward that follows is zeroed at the next batch. Nothing ever moves."""

    def iteration(self, model, opt, batch):
        opt.zero_grad()
        loss = self.loss_fn(model, batch)
        opt.step()
        loss.backward()
        return loss.item()


class StepAtTopOfLoop(_BlobsLoop):
    """Healthy: `opt.step(); opt.zero_grad(); loss = ...; loss.backward()`: each step uses the
    previous batch's gradient (the first step has none and does nothing): one batch late."""

    def iteration(self, model, opt, batch):
        opt.step()
        opt.zero_grad()
        loss = self.loss_fn(model, batch)
        loss.backward()
        return loss.item()


# ------------------------------------------------------------------ batch_first
def chain_sequences(n=768, seed=5630, classes=4, vocab=12, length=12, follow=0.7):
    """(n, length) token ids, each drawn from one of `classes` Markov chains (its own rule of
    which token follows which); the label is the chain. Only the transitions tell them apart."""
    g = _gen(seed)
    rules = torch.stack([torch.randperm(vocab, generator=g) for _ in range(classes)])
    y = torch.randint(0, classes, (n,), generator=g)
    ids = torch.empty(n, length, dtype=torch.long)
    ids[:, 0] = torch.randint(0, vocab, (n,), generator=g)
    for t in range(1, length):
        keep = torch.rand(n, generator=g) < follow
        nxt = rules[y, ids[:, t - 1]]
        ids[:, t] = torch.where(keep, nxt, torch.randint(0, vocab, (n,), generator=g))
    return ids, y


class _LstmClassifier(nn.Module):
    def __init__(self, batch_first, vocab=12, dim=32, classes=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, dim, batch_first=batch_first)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):  # (B, T) -> (B, 4), read at the last position
        out, _ = self.rnn(self.embed(ids))  # (B, T, dim), whichever dim the LSTM ran along
        return self.head(out[:, -1])


class _Chains(_Plain):
    BATCH_FIRST = True

    def __init__(self):
        self.x, self.y = chain_sequences()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _LstmClassifier(self.BATCH_FIRST)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=5e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class LstmNotBatchFirst(_Chains):
    """Bug (H1): `nn.LSTM(dim, dim)` (batch_first=False) fed (batch, time) embeddings: it recurs
    along the batch, and `out[:, -1]` reads, for each example, the state after the last tokens
    of the examples before it in the batch. No example's own transitions reach the head."""

    BATCH_FIRST = False


class LstmBatchFirst(_Chains):
    """Healthy: `nn.LSTM(dim, dim, batch_first=True)`."""


# ------------------------------------------------------------------ ignore_index
class IgnoreIndexRealClass(_Blobs):
    """Bug (H1): `nn.CrossEntropyLoss(ignore_index=0)`, copied from an NLP loop where id 0 was
    padding, on a classifier whose class 0 is a real class: a sixth of the rows never count,
    and every other row pushes class 0 down, so class 0 is never predicted."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y, ignore_index=0)


class IgnoreIndexUnlabelled(_Blobs):
    """Healthy: a fifth of the rows have no label (-1, a semi-supervised table), and the loss is
    `cross_entropy(..., ignore_index=-1)`."""

    def __init__(self):
        super().__init__()
        unlabelled = torch.rand(len(self.y), generator=_gen(5640)) < 0.2
        self.y = torch.where(unlabelled, torch.full_like(self.y, -1), self.y)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y, ignore_index=-1)


# ------------------------------------------------------------------ a bounded head
class _BoundedRegression(_Plain):
    """A regression whose model ends in a sigmoid; the targets are transformed by `target`."""

    def __init__(self):
        self.x, raw = tabular_regression(n=1024, seed=5650)
        self.y = self.target(raw)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(mlp(8, 1), nn.Sigmoid())

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1), y)


class SigmoidHeadStandardisedTargets(_BoundedRegression):
    """Bug (H1): the head ends in a sigmoid (kept from a [0, 1] task) while the targets were
    standardised to mean 0, std 1: half the targets are negative and the model cannot output
    them."""

    def target(self, y):
        return (y - y.mean()) / y.std()


class SigmoidHeadUnitTargets(_BoundedRegression):
    """Healthy: the same sigmoid head, the targets min-max scaled into [0.05, 0.95]."""

    def target(self, y):
        return 0.05 + 0.9 * (y - y.min()) / (y.max() - y.min())


# ------------------------------------------------------------------ clipping's place
class _ClippedLm(_Loop):
    """word_language_model's recipe: a GRU LM under plain SGD at LR 20, gradients clipped at
    norm 0.25."""

    def __init__(self):
        self.ids = markov_tokens(n=384, seed=5660)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyGRULM()

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=20.0)

    def batches(self, seed):
        return [(self.ids[i, :-1], self.ids[i, 1:]) for i in shuffled(len(self.ids), 24, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())

    def before_step(self, model, opt):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)


class ClipBeforeBackward(_ClippedLm):
    """Bug (H1): `clip_grad_norm_` sits between zero_grad and backward: it clips gradients that
    are None, and the step takes the full gradient at LR 20."""

    def iteration(self, model, opt, batch):
        opt.zero_grad()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        loss = self.loss_fn(model, batch)
        loss.backward()
        opt.step()
        return loss.item()


class ClipAfterBackward(_ClippedLm):
    """Healthy: clipped after backward, before the step."""


# ------------------------------------------------------------------ a LambdaLR
class _Lambda(_BlobsLoop):
    """Adam at LR 3e-3 under a LambdaLR stepped per epoch."""

    def make_optimizer(self, model):
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(opt, self.factor)
        return opt

    def end_epoch(self, opt, mean):
        self.scheduler.step()


class LambdaReturnsLr(_Lambda):
    """Bug (H1): the lambda returns the learning rate it wants (`3e-3 * 0.9 ** epoch`), not a
    factor: LambdaLR multiplies it by the base LR, so Adam runs at 9e-6."""

    @staticmethod
    def factor(epoch):
        return 3e-3 * 0.9**epoch


class LambdaReturnsFactor(_Lambda):
    """Healthy: the lambda returns a factor, `0.9 ** epoch`."""

    @staticmethod
    def factor(epoch):
        return 0.9**epoch


# ------------------------------------------------------------------ early stopping
class _EarlyStop(_Loop, _ElevenBlobs):
    """A classifier in batches of 64 under SGD with momentum, with early stopping on the epoch
    mean (patience 2)."""

    PATIENCE = 2

    def __init__(self):
        (self.x, self.y), _ = split(*blob_mixture(n=1280, seed=5670))
        self.best, self.bad = math.inf, 0

    def make_optimizer(self, model):
        self.best, self.bad = math.inf, 0
        return torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 64, seed)]


class EarlyStopInverted(_EarlyStop):
    """Bug (H1): `if mean < best: bad += 1 else: best, bad = mean, 0`: the counter counts
    improvements, so training stops after the second epoch that improves."""

    def stop(self, epoch, mean):
        if mean < self.best:
            self.bad += 1
        else:
            self.best, self.bad = mean, 0
        return self.bad >= self.PATIENCE


class EarlyStopRight(_EarlyStop):
    """Healthy: `if mean < best - 1e-4: best, bad = mean, 0 else: bad += 1`."""

    def stop(self, epoch, mean):
        if mean < self.best - 1e-4:
            self.best, self.bad = mean, 0
        else:
            self.bad += 1
        return self.bad >= self.PATIENCE


# ------------------------------------------------------------------ eval() left on
class _InputNorm(_Loop):
    """A regression whose raw features sit around 40 with spreads from 1 to 30 (sensor units);
    the model's first layer is `BatchNorm1d(8)`, standing in for standardisation. Before the
    loop, a sanity check evaluates the untrained model."""

    def __init__(self):
        x, self.y = tabular_regression(n=1024, seed=5680)
        self.x = 40 + x * torch.tensor([1.0, 3.0, 30.0, 10.0, 2.0, 20.0, 5.0, 15.0])

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.BatchNorm1d(8), mlp(8, 1))

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1), y)

    def sanity_check(self, model):
        model.eval()
        with torch.no_grad():
            return self.loss_fn(model, (self.x[:64], self.y[:64])).item()


class EvalModeLeftOn(_InputNorm):
    """Bug (H1): the sanity check calls `model.eval()` and nothing calls `model.train()`: the
    BatchNorm normalises with its initial running statistics (mean 0, variance 1), so the raw
    features around 40 go into the MLP unscaled, and they are never updated."""

    def prepare(self, model):
        self.sanity_check(model)


class TrainModeAfterCheck(_InputNorm):
    """Healthy: `model.train()` after the sanity check."""

    def prepare(self, model):
        self.sanity_check(model)
        model.train()


# ------------------------------------------------------------------ a shuffle on the wrong axis
class _Shuffled(_Blobs):
    """The batches are cut in table order after a per-epoch shuffle."""

    def batches(self, seed):
        x, y = self.shuffle(self.x, self.y, _gen(seed))
        return [(x[i : i + 32], y[i : i + 32]) for i in range(0, len(x), 32)]


class ShufflesFeatureColumns(_Shuffled):
    """Bug (H2): `idx = torch.randperm(x.shape[-1]); x = x[..., idx]`: the 'shuffle' permutes
    the feature columns, differently at every epoch, and leaves the rows in table order."""

    def shuffle(self, x, y, g):
        return x[..., torch.randperm(x.shape[-1], generator=g)], y


class ShufflesRows(_Shuffled):
    """Healthy: `idx = torch.randperm(len(x)); x, y = x[idx], y[idx]`."""

    def shuffle(self, x, y, g):
        idx = torch.randperm(len(x), generator=g)
        return x[idx], y[idx]


# ------------------------------------------------------------------ a weighted sampler
class _Sampled(_Blobs):
    """An imbalanced table (class 0 keeps every row, the others a third), drawn with
    replacement in proportion to `weights` (what WeightedRandomSampler does), 32 a batch."""

    def __init__(self):
        super().__init__()
        keep = (self.y == 0) | (torch.rand(len(self.y), generator=_gen(5690)) < 0.34)
        self.x, self.y = self.x[keep], self.y[keep]

    def batches(self, seed):
        idx = torch.multinomial(self.weights(), len(self.x), replacement=True, generator=_gen(seed))
        return [(self.x[i], self.y[i]) for i in idx.split(32)]


class SamplerWeightsPerClass(_Sampled):
    """Bug (H2): `WeightedRandomSampler(1 / class_counts, num_samples=len(ds))`: six weights,
    one per class, where the sampler wants one per example: it draws only rows 0 to 5."""

    def weights(self):
        return 1.0 / torch.bincount(self.y).float()


class SamplerWeightsPerExample(_Sampled):
    """Healthy: one weight per example, 1 / its class's count."""

    def weights(self):
        return (1.0 / torch.bincount(self.y).float())[self.y]


# ------------------------------------------------------------------ what the progress bar shows
class _ProgressLm(_Plain):
    """A GRU LM under Adam on 1000 sequences in batches of 32 (the last batch holds 8)."""

    def __init__(self):
        self.ids = markov_tokens(n=1000, seed=5600)[:, :12]

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyGRULM()

    def make_optimizer(self, model):
        return self.OPT(model.parameters(), lr=5e-3)

    OPT = torch.optim.Adam

    def batches(self, seed):
        return [(self.ids[i, :-1], self.ids[i, 1:]) for i in shuffled(len(self.ids), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            total, seen, count = 0.0, 0, 0
            for batch in self.batches(seed * 10 + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                n = len(batch[0])
                total, seen, count = total + loss.item() * n, seen + n, count + 1
                raw.append(loss.item())
                shown.append(self.progress(total, seen, count, raw))
        self.model = model
        return _log(raw, shown, seed, started)

    def progress(self, total, seen, count, raw):
        return total / seen


class PerplexityAsLoss(_ProgressLm):
    """Bug (H3): the bar's 'loss' is `math.exp(running_mean)`, the perplexity, under a column
    named loss."""

    def progress(self, total, seen, count, raw):
        return math.exp(total / seen)


class RunningMeanWeighted(_ProgressLm):
    """Healthy: the running mean weighted by each batch's size (the last batch holds 8)."""


class AdamWDecaysEverything(_ProgressLm):
    """Healthy: AdamW with weight_decay=0.01 on every parameter, the embedding and the GRU's
    biases included (no groups), and the plain running mean of the batches' losses."""

    OPT = staticmethod(lambda params, lr: torch.optim.AdamW(params, lr=lr, weight_decay=0.01))

    def progress(self, total, seen, count, raw):
        return sum(raw[-count:]) / count


# ------------------------------------------------------------------ softmax, then cross_entropy
class _ProbabilityLm(_ProgressLm):
    """The GRU LM, its last layer chosen by `LAST` (the logits go through it)."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(TinyGRULM(), self.LAST(dim=-1))


class SoftmaxBeforeCrossEntropy(_ProbabilityLm):
    """Bug (H1): the LM ends in `nn.Softmax(dim=-1)` ('so it outputs probabilities for
    sampling') and the loss is `F.cross_entropy` on that output: cross_entropy applies
    log_softmax again, to values in [0, 1], so no token can lead another by more than 1 and the
    loss cannot go below -log(e / (e + 19)) = 2.07; its gradient is squashed by the softmax."""

    LAST = nn.Softmax


class LogSoftmaxNll(_ProbabilityLm):
    """Healthy: the LM ends in `nn.LogSoftmax(dim=-1)` and the loss is `F.nll_loss`."""

    LAST = nn.LogSoftmax

    def loss_fn(self, model, batch):
        x, y = batch
        return F.nll_loss(model(x).flatten(0, 1), y.flatten())


THIRTEENTH = {
    "thirteenth_h1_softmax_before_cross_entropy": SoftmaxBeforeCrossEntropy,
    "thirteenth_ok_log_softmax_nll": LogSoftmaxNll,
    "thirteenth_h1_step_before_backward": StepBeforeBackward,
    "thirteenth_ok_step_at_top_of_loop": StepAtTopOfLoop,
    "thirteenth_h1_lstm_not_batch_first": LstmNotBatchFirst,
    "thirteenth_ok_lstm_batch_first": LstmBatchFirst,
    "thirteenth_h1_ignore_index_real_class": IgnoreIndexRealClass,
    "thirteenth_ok_ignore_index_unlabelled": IgnoreIndexUnlabelled,
    "thirteenth_h1_sigmoid_head_standardised_targets": SigmoidHeadStandardisedTargets,
    "thirteenth_ok_sigmoid_head_unit_targets": SigmoidHeadUnitTargets,
    "thirteenth_h1_clip_before_backward": ClipBeforeBackward,
    "thirteenth_ok_clip_after_backward": ClipAfterBackward,
    "thirteenth_h1_lambda_returns_lr": LambdaReturnsLr,
    "thirteenth_ok_lambda_returns_factor": LambdaReturnsFactor,
    "thirteenth_h1_early_stop_inverted": EarlyStopInverted,
    "thirteenth_ok_early_stop_right": EarlyStopRight,
    "thirteenth_h1_eval_mode_left_on": EvalModeLeftOn,
    "thirteenth_ok_train_mode_after_check": TrainModeAfterCheck,
    "thirteenth_h2_shuffles_feature_columns": ShufflesFeatureColumns,
    "thirteenth_ok_shuffles_rows": ShufflesRows,
    "thirteenth_h2_sampler_weights_per_class": SamplerWeightsPerClass,
    "thirteenth_ok_sampler_weights_per_example": SamplerWeightsPerExample,
    "thirteenth_h3_perplexity_as_loss": PerplexityAsLoss,
    "thirteenth_ok_running_mean_weighted": RunningMeanWeighted,
    "thirteenth_ok_adamw_decays_everything": AdamWDecaysEverything,
}

THIRTEENTH_EXPECTED = {
    **{name: ("NONE", []) for name in THIRTEENTH if name.startswith("thirteenth_ok_")},
    "thirteenth_h1_softmax_before_cross_entropy": (
        "H1",
        [("softmax", "probabilit"), ("twice", "again", "cross_entropy", "logits", "already")],
    ),
    "thirteenth_h1_step_before_backward": (
        "H1",
        [("step",), ("before", "order", "none", "no gradient", "never")],
    ),
    "thirteenth_h1_lstm_not_batch_first": (
        "H1",
        [("batch_first", "batch first", "along the batch", "across the batch", "layout")],
    ),
    "thirteenth_h1_ignore_index_real_class": ("H1", [("ignore_index", "class 0", "ignored")]),
    "thirteenth_h1_sigmoid_head_standardised_targets": (
        "H1",
        [("sigmoid", "output", "head", "bounded"), ("range", "negative", "reach", "[0, 1]")],
    ),
    "thirteenth_h1_clip_before_backward": (
        "H1",
        [("clip",), ("before", "order", "none", "no effect", "never", "not clipped")],
    ),
    "thirteenth_h1_lambda_returns_lr": (
        "H1",
        [("lr", "learning rate", "schedul", "lambda")],
    ),
    "thirteenth_h1_early_stop_inverted": (
        "H1",
        [("stop", "break", "ends after", "fewer", "epochs")],
    ),
    "thirteenth_h1_eval_mode_left_on": (
        "H1",
        [("eval", "train mode", "training mode", "batchnorm", "running stat")],
    ),
    "thirteenth_h2_shuffles_feature_columns": (
        "H2",
        [("feature", "column", "input"), ("permut", "order", "shuffl", "change", "differ")],
    ),
    "thirteenth_h2_sampler_weights_per_class": (
        "H2",
        [("sampl", "subset", "rows", "examples", "distinct", "repeat", "same batch")],
    ),
    "thirteenth_h3_perplexity_as_loss": ("H3", [("exp", "perplexity")]),
}
assert set(THIRTEENTH) == set(THIRTEENTH_EXPECTED)

TWINS = {
    "thirteenth_h1_softmax_before_cross_entropy": "thirteenth_ok_log_softmax_nll",
    "thirteenth_h1_step_before_backward": "thirteenth_ok_step_at_top_of_loop",
    "thirteenth_h1_lstm_not_batch_first": "thirteenth_ok_lstm_batch_first",
    "thirteenth_h1_ignore_index_real_class": "thirteenth_ok_ignore_index_unlabelled",
    "thirteenth_h1_sigmoid_head_standardised_targets": "thirteenth_ok_sigmoid_head_unit_targets",
    "thirteenth_h1_clip_before_backward": "thirteenth_ok_clip_after_backward",
    "thirteenth_h1_lambda_returns_lr": "thirteenth_ok_lambda_returns_factor",
    "thirteenth_h1_early_stop_inverted": "thirteenth_ok_early_stop_right",
    "thirteenth_h1_eval_mode_left_on": "thirteenth_ok_train_mode_after_check",
    "thirteenth_h2_shuffles_feature_columns": "thirteenth_ok_shuffles_rows",
    "thirteenth_h2_sampler_weights_per_class": "thirteenth_ok_sampler_weights_per_example",
    "thirteenth_h3_perplexity_as_loss": "thirteenth_ok_running_mean_weighted",
}


def clean_loss(setup) -> float:
    """The trained model's loss on all of its data, in train() mode's twin, without the setup's
    defect: log-probabilities and probabilities as such, the classes on all rows, the targets as
    the loss saw them; the LM on all its sequences."""
    model = setup.model
    model.eval()
    with torch.no_grad():
        if hasattr(setup, "ids"):
            out, y = model(setup.ids[:, :-1]).flatten(0, 1), setup.ids[:, 1:].flatten()
            if isinstance(setup, SoftmaxBeforeCrossEntropy):  # its probabilities, as such
                return F.nll_loss(torch.log(out.clamp_min(1e-12)), y).item()
            if isinstance(setup, LogSoftmaxNll):
                return F.nll_loss(out, y).item()
            return F.cross_entropy(out, y).item()
        out = model(setup.x)
        if isinstance(setup, _BoundedRegression) or isinstance(setup, _InputNorm):
            return F.mse_loss(out.squeeze(-1), setup.y).item()
        keep = setup.y >= 0
        return F.cross_entropy(out[keep], setup.y[keep]).item()


def verify() -> None:
    """Train every bug and its twin in plain PyTorch (seeds 0 and 1), about 150 steps, and print
    each trained model's clean loss: the bug must clearly hurt, the twin must learn."""
    for bug, twin in {**TWINS, "-": "thirteenth_ok_adamw_decays_everything"}.items():
        cells = []
        for name in (bug, twin):
            if name == "-":
                cells.append("")
                continue
            losses = []
            for seed in (0, 1):
                s = THIRTEENTH[name]()
                s.train(seed, max(3, min(50, math.ceil(150 / len(s.batches(seed))))))
                losses.append(clean_loss(s))
            cells.append(" ".join(f"{v:.3f}" if math.isfinite(v) else "nan" for v in losses))
        print(f"{bug:48s} {cells[0]:>16s} | twin {cells[1]}", flush=True)


if __name__ == "__main__":
    verify()
