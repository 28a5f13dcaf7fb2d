"""The fourteenth batch, second half: its data (H2) and reporting (H3) setups, each beside a
healthy twin. The batch's dicts, its docstring and `verify` are in `fourteenth.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._Plain`).
"""

from __future__ import annotations

import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import SmallCNN, bar_images, blob_mixture, split
from .eleventh import _Blobs as _ElevenBlobs, _Plain, _gen, _log
from .fourth import mlp, shuffled, tabular_regression


class _Blobs(_ElevenBlobs):
    def __init__(self):
        (self.x, self.y), (self.x_val, self.y_val) = split(*blob_mixture(n=1280, seed=5610))


# ------------------------------------------------------------------ a normalisation in place
class _RawTable(_Plain):
    """The blobs as a raw table in its own units (each column around 50, spread 10), read row by
    row as a Dataset's `__getitem__` would, each row standardised with the training means and
    standard deviations."""

    def __init__(self):
        (x, self.y), _ = split(*blob_mixture(n=1280, seed=5620))
        self.raw = 50.0 + 10.0 * x  # (1024, 12)
        self.mean, self.std = self.raw.mean(0), self.raw.std(0)
        self.x = (self.raw - self.mean) / self.std  # the clean inputs, for `verify` only
        self.table = self.raw.clone()  # what the Dataset holds

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(12, 6)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def getitem(self, i):
        raise NotImplementedError

    def batches(self, seed):
        out = []
        for idx in shuffled(len(self.table), 32, seed):
            rows = torch.stack([self.getitem(int(i)) for i in idx])
            out.append((rows, self.y[idx]))
        return out

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class NormalisedInPlace(_RawTable):
    """Bug (H2): `row = self.table[i]; row -= self.mean; row /= self.std` in `__getitem__`:
    `self.table[i]` is a view, so the stored table is standardised again at every read. From
    the second epoch each column is (z - 50) / 10: every input sits near -5, its spread shrunk
    tenfold per epoch."""

    def getitem(self, i):
        row = self.table[i]
        row -= self.mean
        row /= self.std
        return row


class NormalisedOutOfPlace(_RawTable):
    """Healthy: `(self.table[i] - self.mean) / self.std`, a new tensor; the table stays raw."""

    def getitem(self, i):
        return (self.table[i] - self.mean) / self.std


# ------------------------------------------------------------------ constants of another scale
class _Normalised(_Plain):
    """Bar images with pixels in [0, 1], standardised with a mean and std before a small CNN;
    the constants are the data's own, written down by the learner."""

    SCALE = 1.0

    def __init__(self):
        x, self.y = bar_images(n=640, seed=5630)
        x01 = (x - x.min()) / (x.max() - x.min())  # pixels in [0, 1]
        mean, std = round(x01.mean().item(), 3), round(x01.std().item(), 3)
        self.x = (x01 - mean * self.SCALE) / (std * self.SCALE)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return SmallCNN()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class StatsOn255Scale(_Normalised):
    """Bug (H2): the mean and std were written down on the 0-255 scale (from a script that read
    uint8 images) and applied to pixels already divided by 255: every input sits near -mean/std
    and the bars' contrast is shrunk 255-fold."""

    SCALE = 255.0


class StatsOnPixelScale(_Normalised):
    """Healthy: the same constants on the [0, 1] scale of the pixels they are applied to."""


# ------------------------------------------------------------------ an attention mask
PAD = 20


class _AttnPool(nn.Module):
    """A learned query attends over the token embeddings (padding masked), then a linear head."""

    def __init__(self, vocab=21, dim=32, n_out=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.query = nn.Parameter(0.1 * torch.randn(1, 1, dim))
        self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)
        self.out = nn.Linear(dim, n_out)

    def forward(self, ids, key_padding_mask):  # (B, T), (B, T) bool -> (B, 2)
        e = self.embed(ids)
        q = self.query.expand(len(ids), -1, -1)
        h, _ = self.attn(q, e, e, key_padding_mask=key_padding_mask)
        return self.out(h[:, 0])


class _MajorityTokens(_Plain):
    """Sequences of 5 to 11 tokens over 20, padded with id 20 to 16: is the majority of the
    tokens below 10? A collate function builds a mask (under `self.MASK_KEY`) that the loss_fn
    passes to the model's `key_padding_mask` (True: not attended)."""

    MASK_KEY = "padding_mask"

    def __init__(self):
        g = _gen(5640)
        n = 1024
        lengths = 5 + 2 * torch.randint(0, 4, (n,), generator=g)  # odd: no ties
        tokens = torch.randint(0, 20, (n, 16), generator=g)
        real = torch.arange(16) < lengths[:, None]
        self.ids = torch.where(real, tokens, torch.full_like(tokens, PAD))
        self.y = (((tokens < 10) & real).sum(1) * 2 > lengths).long()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _AttnPool()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def mask(self, ids):
        return ids == PAD

    def batches(self, seed):
        return [
            {"input_ids": self.ids[i], self.MASK_KEY: self.mask(self.ids[i]), "labels": self.y[i]}
            for i in shuffled(len(self.ids), 32, seed)
        ]

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"], key_padding_mask=batch[self.MASK_KEY])
        return F.cross_entropy(logits, batch["labels"])

    def clean_loss(self):
        with torch.no_grad():
            return F.cross_entropy(self.model(self.ids, self.ids == PAD), self.y).item()


class AttentionMaskInverted(_MajorityTokens):
    """Bug (H2): the collate builds `attention_mask = ids != PAD`, Hugging Face's mask (1 where
    there is a token), and passes it as PyTorch's key_padding_mask (True where NOT to attend):
    the query attends only to padding, whose embedding is zero."""

    MASK_KEY = "attention_mask"

    def mask(self, ids):
        return ids != PAD


class AttentionMaskPadding(_MajorityTokens):
    """Healthy: the collate builds `padding_mask = ids == PAD`, PyTorch's convention."""


# ------------------------------------------------------------------ the report
class _Standardised(_Plain):
    """A regression on a raw target around 50 (spread 10), trained on the standardised target;
    the progress bar shows the epoch mean of `self.report` on the de-standardised predictions."""

    def __init__(self):
        x, y = tabular_regression(n=1024, seed=5650)
        self.x, self.y_raw = x, 50.0 + 10.0 * y
        self.y = self.y_raw.clone()
        self.mu_raw, self.sd_raw = self.y.mean(), self.y.std()
        self.y -= self.mu_raw  # standardised in place
        self.y /= self.sd_raw
        self.mu, self.sd = self.stats()  # kept to de-standardise predictions for the report

    def stats(self):
        return self.mu_raw, self.sd_raw

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(8, 1)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i], self.y_raw[i]) for i in shuffled(len(self.x), 32, seed)]

    def report(self, pred, y_raw):
        raise NotImplementedError

    def loss_fn(self, model, batch):
        x, y, _ = batch
        return F.mse_loss(model(x).squeeze(-1), y)

    def train(self, seed, epochs):
        """The plain loop, with the report computed in it from the same forward pass."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            reported = 0.0
            for i, (x, y, y_raw) in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                pred = model(x).squeeze(-1)
                loss = F.mse_loss(pred, y)
                loss.backward()
                opt.step()
                reported += self.report(pred.detach() * self.sd + self.mu, y_raw)
                raw.append(loss.item())
                shown.append(reported / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class ReportDestandardisedWrongStats(_Standardised):
    """Bug (H3): the report's `mu, sd = y.mean(), y.std()` is read after `y` was standardised in
    place, so it is (0, 1): the progress bar shows the MSE of standardised predictions against
    the raw target, near 2500 and nearly flat, while the loss trained falls."""

    def stats(self):
        return self.y.mean(), self.y.std()

    def report(self, pred, y_raw):
        return F.mse_loss(pred, y_raw).item()


class ReportOneMinusR2(_Standardised):
    """Healthy: the report de-standardises with the stats taken before, and shows 1 - R^2
    (the MSE in raw units over the raw variance), the standardised MSE by another road."""

    def report(self, pred, y_raw):
        return (F.mse_loss(pred, y_raw) / self.sd_raw**2).item()


class _EmaReported(_Blobs):
    """The progress bar shows the epoch mean of an EMA copy's loss on each batch, the EMA being
    updated after each step with decay `self.DECAY` (what the learner will ship)."""

    DECAY = 0.9

    def train(self, seed, epochs):
        """The plain loop, with the EMA copy updated after each step and its loss shown."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        ema = copy.deepcopy(model).requires_grad_(False)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, (x, y) in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                with torch.no_grad():
                    for e, p in zip(ema.parameters(), model.parameters(), strict=True):
                        e.mul_(self.DECAY).add_(p, alpha=1 - self.DECAY)
                    running += F.cross_entropy(ema(x), y).item()
                raw.append(loss.item())
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class EmaLossSlowDecay(_EmaReported):
    """Bug (H3): the EMA's decay is 0.999 (timm's default for runs of 100k steps) on a run of
    about 150 steps, with no warm-up of the decay: the EMA copy stays within 15% of the init,
    so the loss shown stays near 1 while the trained model's falls below 0.01."""

    DECAY = 0.999


class EmaLossShortDecay(_EmaReported):
    """Healthy (a choice): the EMA copy's loss shown, with a decay of 0.9 (a horizon of about
    ten steps), so it follows the trained model."""


class _ValDivisor(_Blobs):
    """A training loop that also keeps a validation loader of 8 batches; the progress bar shows
    the epoch's losses so far over a divisor."""

    def val_loader(self):
        return [(self.x_val[i], self.y_val[i]) for i in torch.arange(len(self.x_val)).split(32)]


class DividedByValLoaderLength(_ValDivisor):
    """Bug (H3): `epoch_loss / len(val_loader)` (the line copied from the validation block):
    the sum of up to 32 batch losses over 8, four times the mean at each epoch's end."""

    def shown(self, running, epoch_raw):
        return running / len(self.val_loader())


class PerSampleWeightedMean(_ValDivisor):
    """Healthy: the sum of `loss.item() * len(y)` over the samples seen so far this epoch."""

    def loss_fn(self, model, batch):
        self.n = len(batch[1])
        return super().loss_fn(model, batch)

    def shown(self, running, epoch_raw):
        if len(epoch_raw) == 1:
            self.total, self.seen = 0.0, 0
        self.total += epoch_raw[-1] * self.n
        self.seen += self.n
        return self.total / self.seen
