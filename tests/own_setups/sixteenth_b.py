"""The sixteenth batch, second half: its data (H2) and reporting (H3) setups, each beside a
healthy twin. The batch's dicts, its docstring and `verify` are in `sixteenth.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import bar_images, blob_mixture, split
from .eleventh import _gen, _log, _Plain
from .fourth import mlp, shuffled


# ------------------------------------------------------------------ masks read from PNG files
class _MaskNet(nn.Module):
    """A small fully convolutional net: one logit per pixel, foreground or not."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
            nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
            nn.Conv2d(8, 1, 1),
        )  # fmt: skip

    def forward(self, x):  # (B, 1, 12, 12) -> (B, 1, 12, 12) logits
        return self.net(x)


class _StrokeMasks(_Plain):
    """A binary segmentation of the bar images' strokes. The masks come as a PNG loader hands
    them over, uint8 with 0 for the background and 255 for the stroke; the learner's Dataset
    turns each into the float target of `binary_cross_entropy_with_logits`."""

    def __init__(self):
        self.x, _ = bar_images(n=512, seed=5810)
        clean, _ = bar_images(n=512, seed=5810, noise=0.0)  # the same strokes, no noise
        self.mask_png = (clean > 0.5).to(torch.uint8) * 255  # (N, 1, 12, 12) uint8, as stored
        self.mask = (clean > 0.5).float()  # the true 0/1 mask, for `verify`
        self.target = self.to_target(self.mask_png)

    def to_target(self, png):
        return png.float() / 255

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _MaskNet()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.target[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, mask = batch
        return F.binary_cross_entropy_with_logits(model(x), mask)

    def clean_loss(self):
        with torch.no_grad():
            return F.binary_cross_entropy_with_logits(self.model(self.x), self.mask).item()


class MasksOn255Scale(_StrokeMasks):
    """Bug (H2): the target is `png.float()`, never divided by 255: every stroke pixel's target
    is 255.0. `binary_cross_entropy_with_logits` takes it without a word; on a stroke pixel its
    gradient is sigmoid(z) - 255, so the stroke weighs 255 times the background and its loss
    falls without end (below 0) as the logits grow."""

    def to_target(self, png):
        return png.float()


class MasksOnUnitScale(_StrokeMasks):
    """Healthy: `png.float() / 255`, targets 0 and 1."""


# ------------------------------------------------------------------ the truncation's side
N_MARK, SEQ, KEEP = 4, 24, 16


class _BagClassifier(nn.Module):
    def __init__(self, vocab=20, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, N_MARK))

    def forward(self, ids):  # (B, T) -> (B, 4)
        return self.mlp(self.embed(ids).mean(1))


class _Tickets(_Plain):
    """Support tickets of 24 tokens (ids 4..19 are filler), routed to one of 4 queues: the
    queue is named by one marker token (ids 0..3) that the writer puts somewhere in the last 14
    tokens, where tickets end with their request. The learner's collate truncates every ticket
    to 16 tokens for the model."""

    def __init__(self):
        g = _gen(5820)
        n = 640
        self.y = torch.randint(0, N_MARK, (n,), generator=g)
        self.full = torch.randint(N_MARK, 20, (n, SEQ), generator=g)
        pos = torch.randint(SEQ - 14, SEQ, (n,), generator=g)
        self.full[torch.arange(n), pos] = self.y
        self.ids = self.truncate(self.full)

    def truncate(self, ids):
        return ids[:, -KEEP:]  # truncation_side="left": keep the end of the ticket

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _BagClassifier()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def batches(self, seed):
        return [(self.ids[i], self.y[i]) for i in shuffled(len(self.ids), 32, seed)]

    def loss_fn(self, model, batch):
        ids, y = batch
        return F.cross_entropy(model(ids), y)

    def clean_loss(self):
        with torch.no_grad():
            return F.cross_entropy(self.model(self.ids), self.y).item()


class TruncatedKeepsStart(_Tickets):
    """Bug (H2): `ids[:, :16]`, the tokenizer's default right-side truncation, where the ticket's
    end holds what names its queue: the marker is cut off in 8 tickets of 14, whose labels are
    then beyond any model's reach."""

    def truncate(self, ids):
        return ids[:, :KEEP]


class TruncatedKeepsEnd(_Tickets):
    """Healthy: `ids[:, -16:]` (left-side truncation): every marker is kept."""


# ------------------------------------------------------------------ the report
class _ReportLoop(_Plain):
    """The blobs under Adam, with the learner's own loop and its own progress value."""

    def __init__(self):
        (self.x, self.y), _ = split(*blob_mixture(n=1280, seed=5830))

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(12, 6, hidden=64)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class _SmoothedReport(_ReportLoop):
    """The progress bar shows a smoothed loss, `smooth = 0.9 * smooth + w * loss`, started at
    the first batch's loss."""

    def weight(self, beta):
        return 1 - beta

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        beta, smooth = 0.9, None
        for epoch in range(epochs):
            for batch in self.batches(seed * 10 + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                value = loss.item()
                smooth = value if smooth is None else beta * smooth + self.weight(beta) * value
                raw.append(value)
                shown.append(smooth)
        self.model = model
        return _log(raw, shown, seed, started)


class SmoothedWithoutOneMinusBeta(_SmoothedReport):
    """Bug (H3): `smooth = beta * smooth + loss`, the `(1 - beta)` on the new loss forgotten:
    the value shown is a discounted sum, not a mean, about 1 / (1 - 0.9) = 10 times the loss."""

    def weight(self, beta):
        return 1.0


class SmoothedWithOneMinusBeta(_SmoothedReport):
    """Healthy: `smooth = beta * smooth + (1 - beta) * loss`, started at the first loss."""


class _ClippedReport(_ReportLoop):
    """The loop clips the gradient norm at 5 (it rarely binds here) and shows the epoch's
    running mean of `loss.item()`."""

    def after_clip(self, loss, norm):
        return loss

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                raw.append(loss.item())
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
                loss = self.after_clip(loss, norm)
                opt.step()
                running += loss.item()
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class ClipNormAssignedToLoss(_ClippedReport):
    """Bug (H3): `loss = clip_grad_norm_(model.parameters(), max_norm=5.0)`: the clip's return
    value, the gradient's total norm, is written into `loss`, so the running mean shown is the
    mean gradient norm (training itself is untouched)."""

    def after_clip(self, loss, norm):
        return norm


class ClipNormKeptApart(_ClippedReport):
    """Healthy: `norm = clip_grad_norm_(...)`; `loss` is still the loss when it is shown."""
