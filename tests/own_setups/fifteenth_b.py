"""The fifteenth batch, second half: its data (H2) and reporting (H3) setups, each beside a
healthy twin. The batch's dicts, its docstring and `verify` are in `fifteenth.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import VOCAB, TinyGRULM, bar_images, blob_mixture, markov_tokens, split
from .eleventh import _Plain, _gen, _log
from .fourth import mlp, shuffled, tabular_regression


# ------------------------------------------------------------------ a Dataset reused for targets
class _ReusedDataset(torch.utils.data.Dataset):
    """The learner's Dataset from a classification project: a row of features and its target,
    the target made a tensor of `target_dtype` (long there, for `cross_entropy`)."""

    def __init__(self, x, y, target_dtype):
        self.x, self.y, self.target_dtype = x, y.tolist(), target_dtype

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], torch.tensor(self.y[i], dtype=self.target_dtype)


class _RegressionFromCsv(_Plain):
    """A regression on 8 features, its target standardised (mean 0, spread 1), served through
    the Dataset of an earlier classification project; the loss casts the target to float."""

    TARGET_DTYPE = torch.float32

    def __init__(self):
        x, y = tabular_regression(n=1024, seed=5710)
        self.x, self.y = x, (y - y.mean()) / y.std()  # the clean target, for `verify`
        self.data = _ReusedDataset(self.x, self.y, self.TARGET_DTYPE)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(8, 1)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        out = []
        for idx in shuffled(len(self.data), 32, seed):
            rows = [self.data[int(i)] for i in idx]
            out.append((torch.stack([r[0] for r in rows]), torch.stack([r[1] for r in rows])))
        return out

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1), y.float())


class TargetsCastToLong(_RegressionFromCsv):
    """Bug (H2): the Dataset still makes the target `torch.tensor(y, dtype=torch.long)`, as it
    did for class ids: every standardised target is truncated toward 0 (1.7 -> 1, -0.6 -> 0),
    so two thirds of the rows train on a target of 0, and `y.float()` in the loss hides it."""

    TARGET_DTYPE = torch.long


class TargetsKeptFloat(_RegressionFromCsv):
    """Healthy: the same Dataset with `target_dtype=torch.float32`."""


# ------------------------------------------------------------------ images in HWC
class _ColourCNN(nn.Module):
    def __init__(self, n_out=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        )  # fmt: skip
        self.classifier = nn.Linear(16, n_out)

    def forward(self, x):  # (B, 3, 12, 12) -> (B, 4)
        return self.classifier(self.features(x).flatten(1))


class _ColourBars(_Plain):
    """Bar images in colour (each image's stroke in its own colour) as an image library hands
    them over, channels last, (N, 12, 12, 3); the learner's tensor conversion makes them
    (N, 3, 12, 12) for a small CNN."""

    def __init__(self):
        x, self.y = bar_images(n=768, seed=5720)
        colour = 0.4 + 0.6 * torch.rand(len(x), 3, 1, 1, generator=_gen(5721))
        hwc = (x * colour).permute(0, 2, 3, 1).contiguous()  # (N, 12, 12, 3), as stored
        self.x = self.to_chw(hwc)

    def to_chw(self, hwc):
        return hwc.permute(0, 3, 1, 2).contiguous()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _ColourCNN()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class ChannelsLastViewed(_ColourBars):
    """Bug (H2): `hwc.view(n, 3, 12, 12)` (reshape, not transpose) where
    `hwc.permute(0, 3, 1, 2)` was meant: the shapes agree and nothing fails, but each "channel"
    is a third of the image's rows with the colours interleaved along them, so the strokes'
    shapes, what the CNN's small kernels read, are scrambled."""

    def to_chw(self, hwc):
        return hwc.view(len(hwc), 3, 12, 12)


class ChannelsLastPermuted(_ColourBars):
    """Healthy: `hwc.permute(0, 3, 1, 2)`."""


# ------------------------------------------------------------------ the report
class _ReportLoop(_Plain):
    """The blobs under Adam, with the learner's own loop and its own progress value."""

    def __init__(self):
        (self.x, self.y), _ = split(*blob_mixture(n=1280, seed=5730))

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


class RunningResetPerBatch(_ReportLoop):
    """Bug (H3): `running_loss = 0.0` sits inside the batch loop (one indent too deep), and
    the bar shows `running_loss / (i + 1)`: the last batch's loss over the batch count, which
    falls through each epoch to 1/32 of the loss at its end."""

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                running_loss = 0.0
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                running_loss += loss.item()
                raw.append(loss.item())
                shown.append(running_loss / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class RunningResetPerEpoch(_ReportLoop):
    """Healthy: `running_loss = 0.0` at the top of each epoch."""

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running_loss = 0.0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                running_loss += loss.item()
                raw.append(loss.item())
                shown.append(running_loss / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


IGNORE = -100  # cross_entropy's default ignore_index, as Hugging Face pads labels
PAD = VOCAB  # the input id of padding


class _RaggedLM(_Plain):
    """A GRU LM on token rows of 4 to 16 tokens, right-padded to 16 (input id PAD, label -100,
    cross_entropy's default ignore_index). The loss trained is the mean over real tokens; the
    bar shows the epoch's token losses, from `reduction="none"`, over `self.denominator`."""

    def __init__(self):
        ids = markov_tokens(n=512, seed=5740)
        lengths = torch.randint(4, 17, (len(ids),), generator=_gen(5741))
        real = torch.arange(ids.shape[1]) < lengths[:, None]
        self.inputs = torch.where(real, ids, torch.full_like(ids, PAD))[:, :-1]
        self.labels = torch.where(real, ids, torch.full_like(ids, IGNORE))[:, 1:]

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyGRULM(vocab=VOCAB + 1)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def batches(self, seed):
        return [
            {"input_ids": self.inputs[i], "labels": self.labels[i]}
            for i in shuffled(len(self.inputs), 32, seed)
        ]

    def token_losses(self, model, batch):
        logits = model(batch["input_ids"])
        return F.cross_entropy(logits.transpose(1, 2), batch["labels"], reduction="none")

    def loss_fn(self, model, batch):
        tok = self.token_losses(model, batch)
        return tok.sum() / (batch["labels"] != IGNORE).sum()

    def denominator(self, labels):
        raise NotImplementedError

    def train(self, seed, epochs):
        """The learner's loop: one forward, the trained loss and the report from it."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            total_nll, total_count = 0.0, 0
            for batch in self.batches(seed * 10 + epoch):
                opt.zero_grad()
                tok = self.token_losses(model, batch)
                loss = tok.sum() / (batch["labels"] != IGNORE).sum()
                loss.backward()
                opt.step()
                total_nll += tok.sum().item()
                total_count += int(self.denominator(batch["labels"]))
                raw.append(loss.item())
                shown.append(total_nll / total_count)
        self.model = model
        return _log(raw, shown, seed, started)

    def clean_loss(self):
        with torch.no_grad():
            return self.loss_fn(
                self.model, {"input_ids": self.inputs, "labels": self.labels}
            ).item()


class ReportCountsPadding(_RaggedLM):
    """Bug (H3): the report's count is `labels.numel()`, every position of the padded grid:
    the padded positions add 0 to the summed loss (ignored) but 1 to the count, so the bar
    shows the loss times the share of real tokens, about 0.6 of it."""

    def denominator(self, labels):
        return labels.numel()


class ReportCountsTokens(_RaggedLM):
    """Healthy: the report's count is `(labels != -100).sum()`, the real tokens: the epoch's
    loss per token, weighted by each batch's token count."""

    def denominator(self, labels):
        return (labels != IGNORE).sum()
