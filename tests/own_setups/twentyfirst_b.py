"""The twenty-first batch, second half: the learner's loop its setups share, and its data (H2)
and reporting (H3) setups, each beside a healthy twin. The batch's dicts, its docstring and
`verify` are in `twentyfirst.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import bar_images
from .eleventh import _gen, _log
from .twentieth_b import _Setup


class _Loop(_Setup):
    """The learner's loop: per batch `model.train()`, the loss, the bar's value for the batch,
    `update` (zero_grad, backward, step); a scheduler from `make_scheduler` (None by default)
    stepped per epoch; the bar shows the running mean of what `bar_value` gives for each
    batch, reset each epoch."""

    SCHEDULER_PER_BATCH = False

    def make_scheduler(self, opt):
        return None

    def update(self, opt, loss):
        opt.zero_grad()
        loss.backward()
        opt.step()

    def bar_value(self, model, batch, loss):
        return loss.item()

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        scheduler = self.make_scheduler(opt)
        self.begin(model)
        raw, shown = [], []
        for epoch in range(epochs):
            bar_total = 0.0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                model.train()
                loss = self.loss_fn(model, batch)
                bar_total += self.bar_value(model, batch, loss)
                self.update(opt, loss)
                raw.append(loss.item())
                shown.append(bar_total / (i + 1))  # tqdm's postfix(loss=...)
                if scheduler is not None and self.SCHEDULER_PER_BATCH:
                    scheduler.step()
            if scheduler is not None and not self.SCHEDULER_PER_BATCH:
                scheduler.step()
        self.model = model
        return _log(raw, shown, seed, started)


# ------------------------------------------------------------------ mixup, the targets unmixed
class _PatchViT(nn.Module):
    """A ViT-like classifier: 4x4 patches of the 12x12 image (9 tokens), a linear patch
    embedding plus learned positions, one Transformer encoder layer, mean pooling, a head."""

    def __init__(self, dim=32):
        super().__init__()
        self.embed = nn.Linear(16, dim)
        self.pos = nn.Parameter(0.1 * torch.randn(9, dim))
        self.block = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(dim, 4)

    def forward(self, x):  # (B, 1, 12, 12) -> (B, 4)
        patches = x.unfold(2, 4, 4).unfold(3, 4, 4).reshape(len(x), 9, 16)  # (B, 9, 16)
        return self.head(self.block(self.embed(patches) + self.pos).mean(1))


class _Mixup(_Loop):
    """The ViT-like model classifies the bar images (4 kinds of stroke), soft-target
    cross-entropy, Adam. The collate applies mixup (alpha 1, one lambda per image, the batch
    mixed with its own reversal), as timm's `Mixup` does, and hands the loss soft targets."""

    MODEL, MIX_TARGETS = _PatchViT, True

    def __init__(self):
        self.x, y = bar_images(n=1024, seed=7121)
        self.y = F.one_hot(y, 4).float()  # (n, 4) soft targets

    def batches(self, seed):
        g = _gen(1000 + seed)
        out = []
        for x, y in super().batches(seed):
            lam = torch.rand(len(x), generator=g)  # (B,): Beta(1, 1) is uniform
            mixed = lam[:, None, None, None] * x + (1 - lam[:, None, None, None]) * x.flip(0)
            target = lam[:, None] * y + (1 - lam[:, None]) * y.flip(0) if self.MIX_TARGETS else y
            out.append((mixed, target))
        return out

    def loss_fn(self, model, batch):
        x, target = batch
        return F.cross_entropy(model(x), target)  # soft targets (probabilities)

    def clean_loss(self):
        """The trained model on every image unmixed, against its own label."""
        with torch.no_grad():
            return F.cross_entropy(self.model(self.x), self.y).item()


class MixupTargetsUnmixed(_Mixup):
    """Bug (H2): the collate mixes the images, `lam * x + (1 - lam) * x.flip(0)`, but the line
    that mixes the targets was lost: each blend keeps the first image's label whatever its
    share, so an image that is 90% another stroke is labelled as the 10% one."""

    MIX_TARGETS = False


class MixupTargetsMixed(_Mixup):
    """Healthy: the targets are mixed with the same lambda, `lam * y + (1 - lam) * y.flip(0)`."""


# ------------------------------------------------------------------ rows standardised, not columns
APPLIANCES = 8


def household_meters(n=1024, seed=7122):
    """A month of 8 appliances' meter readings per household: the household's size (log-normal)
    times each appliance's share (log-normal, a mean of its own). Targets: the standardised log
    of the total, and which appliance uses the most. Returns (n, 8) readings, (n, 2) targets."""
    g = _gen(seed)
    size = torch.exp(0.8 * torch.randn(n, 1, generator=g))  # (n, 1)
    spread = 0.6 * torch.randn(n, APPLIANCES, generator=g)
    share = torch.exp(torch.linspace(-1, 1, APPLIANCES) + spread)  # (n, 8)
    x = 100 * size * share  # (n, 8) kWh
    total = x.sum(1).log()
    target = torch.stack([(total - total.mean()) / total.std(), x.argmax(1).float()], 1)
    return x, target


class _TwoHeads(nn.Module):
    """A shared trunk and two heads: the total (regression) and the top appliance (8 classes)."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(APPLIANCES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU()
        )  # fmt: skip
        self.total, self.top = nn.Linear(64, 1), nn.Linear(64, APPLIANCES)

    def forward(self, x):  # (B, 8) -> (B,), (B, 8)
        h = self.trunk(x)
        return self.total(h).squeeze(-1), self.top(h)


class _Meters(_Loop):
    """A multi-task net reads the standardised readings; its loss is the total's MSE plus the
    top appliance's cross-entropy, Adam. The data module standardises the table once, along
    `DIM`, with the standardised table kept as the data set."""

    MODEL, DIM = _TwoHeads, 0

    def __init__(self):
        raw, self.y = household_meters()
        mean, std = raw.mean(self.DIM, keepdim=True), raw.std(self.DIM, keepdim=True)
        self.x = (raw - mean) / std

    def loss_fn(self, model, batch):
        x, y = batch
        total, top = model(x)
        return F.mse_loss(total, y[:, 0]) + F.cross_entropy(top, y[:, 1].long())


class RowsStandardised(_Meters):
    """Bug (H2): `x.mean(dim=1)` and `x.std(dim=1)`, each household standardised by its own
    readings where each column by the data set's was meant: the household's size, which sets
    its total, divides out of every row; only the shares' pattern is left."""

    DIM = 1


class ColumnsStandardised(_Meters):
    """Healthy: `dim=0`, each appliance's column standardised over the data set."""


# ------------------------------------------------------------------ the validation loss on the bar
def noisy_teacher(n, seed, flip=0.25):
    """20 features, labels (3 classes) from a fixed random teacher net, a quarter of them
    replaced by a random class."""
    teacher = torch.Generator().manual_seed(7123)
    w1, w2 = torch.randn(20, 32, generator=teacher), torch.randn(32, 3, generator=teacher)
    g = _gen(seed)
    x = torch.randn(n, 20, generator=g)
    y = (torch.tanh(x @ w1) @ w2).argmax(1)
    noisy = torch.rand(n, generator=g) < flip
    return x, torch.where(noisy, torch.randint(0, 3, (n,), generator=g), y)


class _Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                 nn.Linear(256, 3))  # fmt: skip

    def forward(self, x):  # (B, 20) -> (B, 3)
        return self.net(x)


class _Credit(_Loop):
    """A wide MLP on 256 training rows with noisy labels (it overfits them), cross-entropy,
    Adam. After each batch the loop scores the validation split (512 rows) for the history;
    the bar's `loss=` takes what `bar_value` gives."""

    MODEL, SHOW_VALIDATION = _Wide, False

    def __init__(self):
        self.x, self.y = noisy_teacher(256, 7124)
        self.val_x, self.val_y = noisy_teacher(512, 7125)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def bar_value(self, model, batch, loss):
        with torch.no_grad():
            val_loss = self.loss_fn(model, (self.val_x, self.val_y)).item()
        return val_loss if self.SHOW_VALIDATION else loss.item()


class ValidationLossOnBar(_Credit):
    """Bug (H3): `bar.set_postfix(loss=val_loss)` where `loss=loss.item()` was meant (the
    validation line pasted above it): the bar's "loss" is the validation split's, which rises
    as the model overfits while the training loss falls."""

    SHOW_VALIDATION = True


class TrainingLossOnBar(_Credit):
    """Healthy: the bar shows the training loss; the validation loss goes to the history."""


# ------------------------------------------------------------------ the smoothing left off the bar
BOS, DIGITS, SRC_LEN = 11, 10, 6


def digit_strings(n=1024, seed=7126):
    """Strings of 6 digits (ids 1..10) and their reversal: (n, 6), (n, 6)."""
    src = torch.randint(1, DIGITS + 1, (n, SRC_LEN), generator=_gen(seed))
    return src, src.flip(1)


class _GRUSeq2Seq(nn.Module):
    """A GRU encoder whose last state starts a GRU decoder fed the target shifted right."""

    def __init__(self, dim=64):
        super().__init__()
        self.embed = nn.Embedding(BOS + 1, 32)
        self.enc, self.dec = nn.GRU(32, dim, batch_first=True), nn.GRU(32, dim, batch_first=True)
        self.out = nn.Linear(dim, BOS + 1)

    def forward(self, src, dec_in):  # (B, 6), (B, 6) -> (B, 6, 12)
        _, h = self.enc(self.embed(src))
        return self.out(self.dec(self.embed(dec_in), h)[0])


def teacher_forced_logits(model, src, tgt):
    dec_in = torch.cat([torch.full_like(tgt[:, :1], BOS), tgt[:, :-1]], 1)  # (B, 6)
    return model(src, dec_in).flatten(0, 1)  # (B * 6, 12)


class _Reverse(_Loop):
    """The seq2seq net learns to reverse digit strings with teacher forcing, cross-entropy with
    label smoothing 0.1 (`criterion`), Adam. The bar's value comes from the metrics helper
    `token_loss`, which scores the batch again before the step."""

    MODEL, LR, HELPER_SMOOTHING = _GRUSeq2Seq, 1e-2, 0.1

    def __init__(self):
        self.x, self.y = digit_strings()

    def loss_fn(self, model, batch):
        src, tgt = batch
        return F.cross_entropy(teacher_forced_logits(model, src, tgt), tgt.flatten(),
                               label_smoothing=0.1)  # fmt: skip

    def bar_value(self, model, batch, loss):
        src, tgt = batch
        with torch.no_grad():
            logits = teacher_forced_logits(model, src, tgt)
            smoothing = self.HELPER_SMOOTHING
            return F.cross_entropy(logits, tgt.flatten(), label_smoothing=smoothing).item()


class BarLossUnsmoothed(_Reverse):
    """Bug (H3): the metrics helper calls `F.cross_entropy(logits, targets)` with its default
    `label_smoothing=0.0`, not the training criterion: the bar shows the plain cross-entropy,
    which falls toward 0 while the loss trained on keeps a floor of about 0.5."""

    HELPER_SMOOTHING = 0.0


class BarLossSmoothed(_Reverse):
    """Healthy: the helper takes the training criterion, smoothing 0.1 and all."""
