"""The seventeenth batch, second half: its data (H2) and reporting (H3) setups, each beside a
healthy twin, and the blobs' base class. The batch's dicts, its docstring and `verify` are in
`seventeenth.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import blob_mixture, split
from .eleventh import _gen, _log, _Plain
from .fourth import shuffled


class _Blobs(_Plain):
    SEED = 5900

    def __init__(self):
        (self.x, self.y), _ = split(*blob_mixture(n=1280, seed=self.SEED))

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 6)
        )

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


# ------------------------------------------------------------------ a vocabulary from 0
WORDS = ["a"] + [f"w{i}" for i in range(9)]  # "a" is the word counted
PAD = 0


class _CountWords(_Plain):
    """Sentences of 6 to 16 words, right-padded with PAD to 16; the label is how many times
    "a" occurs (0 to 3). A bag of embeddings (summed, padding_idx=PAD) and an MLP read it."""

    START = 1  # the vocabulary's first id

    def __init__(self):
        gen = _gen(5903)
        n = 768
        self.y = torch.randint(0, 4, (n,), generator=gen)
        sentences = []
        for i in range(n):
            length = int(torch.randint(6, 17, (1,), generator=gen))
            words = ["a"] * int(self.y[i])
            others = torch.randint(1, len(WORDS), (length - len(words),), generator=gen)
            words += [WORDS[int(j)] for j in others]
            order = torch.randperm(length, generator=gen)
            sentences.append([words[int(j)] for j in order])
        vocab = {w: i for i, w in enumerate(WORDS, start=self.START)}
        self.ids = torch.full((n, 16), PAD, dtype=torch.long)
        for i, sentence in enumerate(sentences):
            self.ids[i, : len(sentence)] = torch.tensor([vocab[w] for w in sentence])

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _BagOfWords()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def batches(self, seed):
        return [(self.ids[i], self.y[i]) for i in shuffled(len(self.ids), 32, seed)]

    def loss_fn(self, model, batch):
        ids, y = batch
        return F.cross_entropy(model(ids), y)

    def clean_loss(self):
        """The trained model on every sentence as served, against the true counts."""
        with torch.no_grad():
            return F.cross_entropy(self.model(self.ids), self.y).item()


class _BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(len(WORDS) + 1, 16, padding_idx=PAD)
        self.head = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, ids):  # (B, 16) -> (B, 4)
        return self.head(self.embed(ids).sum(1))


class VocabFromZeroMeetsPadding(_CountWords):
    """Bug (H2): `{w: i for i, w in enumerate(words)}`: "a" gets id 0, the padding id, so its
    embedding is the padding's zero row, and a sentence's "a"s cannot be told from its padding:
    the count the label holds is not in the inputs."""

    START = 0


class VocabFromOne(_CountWords):
    """Healthy: `enumerate(words, start=1)`, id 0 left to the padding."""


# ------------------------------------------------------------------ labels joined by position
class _JoinedLabels(_Blobs):
    """The file holds 1280 rows, the first 256 kept for validation. The learner's training table
    keeps each row's position as its key and looks its label up in the file's label column."""

    SEED = 5904
    N_VAL = 256

    def __init__(self):
        x, y = blob_mixture(n=1280, seed=self.SEED)
        (self.x, self.y), _ = split(x, y, n_val=self.N_VAL)  # the true pairs, for the score
        labels_by_file_row = y  # the label column, keyed by the row's place in the whole file
        train_keys = torch.arange(len(self.x)) + self.key_offset()
        self.y_joined = labels_by_file_row[train_keys]

    def key_offset(self):
        return self.N_VAL

    def batches(self, seed):
        return [(self.x[i], self.y_joined[i]) for i in shuffled(len(self.x), 32, seed)]


class LabelsJoinedByTrainPosition(_JoinedLabels):
    """Bug (H2): the key is the row's place in the training split (0, 1, ...), not in the file:
    every row gets the label of the row 256 before it in the file, an unrelated row."""

    def key_offset(self):
        return 0


class LabelsJoinedByFilePosition(_JoinedLabels):
    """Healthy: the key offset by the validation split's size, each row's own label."""


# ------------------------------------------------------------------ reports
class _Reported(_Blobs):
    """Adam under a cosine schedule over the whole run, stepped per batch; the progress bar
    shows one value per batch."""

    SEED = 5905

    def shown_value(self, running, i, scheduler):
        return running / (i + 1)

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        n = len(self.batches(seed * 10))
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * n)
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                scheduler.step()
                running += loss.item()
                raw.append(loss.item())
                shown.append(self.shown_value(running, i, scheduler))
        self.model = model
        return _log(raw, shown, seed, started)


class LearningRateShownAsLoss(_Reported):
    """Bug (H3): `pbar.set_postfix(loss=scheduler.get_last_lr()[0])`: the value shown as the
    loss is the learning rate, which falls smoothly along the cosine like a loss would."""

    def shown_value(self, running, i, scheduler):
        return scheduler.get_last_lr()[0]


class RunningLossShown(_Reported):
    """Healthy: `pbar.set_postfix(loss=running / (i + 1), lr=scheduler.get_last_lr()[0])`."""


class _PercentReport(_Blobs):
    SEED = 5906
    SCALE = 1.0

    def shown(self, running, epoch_raw):
        return self.SCALE * running / len(epoch_raw)


class LossShownInPercent(_PercentReport):
    """Bug (H3): the report formats every metric as `f"{100 * v:.1f}%"`, the accuracy's format,
    the loss's running mean included: the loss shown is 100 times the loss."""

    SCALE = 100.0


class LossShownAsIs(_PercentReport):
    """Healthy: the loss's running mean shown as it is (the accuracy alone in percent)."""
