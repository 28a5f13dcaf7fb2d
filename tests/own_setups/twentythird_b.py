"""The twenty-third batch, second half: the learner's loop its setups share, and its data (H2)
and reporting (H3) setups, each beside a healthy twin. The batch's dicts, its docstring and
`verify` are in `twentythird.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import blob_mixture
from .eleventh import _gen, _log
from .twentieth_b import _Setup


class _Loop(_Setup):
    """The learner's loop: per batch `model.train()`, the loss, zero_grad, backward, step; the
    logger gets `logged(loss)` for the batch and the bar shows `bar(value, i, step)`: by
    default the running mean of the epoch's logged values (i: the batch's index in its epoch,
    step: the run's count of batches, from 1)."""

    def logged(self, loss) -> float:
        return loss.item()

    def bar(self, value, i, step) -> float:
        self.running = value if i == 0 else self.running + value
        return self.running / (i + 1)

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        self.begin(model)
        raw, shown, step = [], [], 0
        for epoch in range(epochs):
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                model.train()
                loss = self.loss_fn(model, batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                raw.append(loss.item())
                shown.append(self.bar(self.logged(loss), i, step))  # tqdm's postfix(loss=...)
        self.model = model
        return _log(raw, shown, seed, started)


# ------------------------------------------------------- colour classes seen through a Grayscale
def coloured_patches(n=1024, seed=7331, size=12):
    """12x12 RGB images: a 4x4 patch at a random place whose colour is the class (0 red, 1 green,
    2 blue), at a random brightness (0.3 to 1.7), on a noisy background. (n, 3, 12, 12), (n,)."""
    g = _gen(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    x = 0.15 * torch.randn(n, 3, size, size, generator=g)
    pos = torch.randint(0, size - 4, (n, 2), generator=g)
    bright = 0.3 + 1.4 * torch.rand(n, generator=g)
    for i in range(n):
        r, c = int(pos[i, 0]), int(pos[i, 1])
        x[i, int(y[i]), r : r + 4, c : c + 4] += bright[i]
    return x, y


def to_grayscale(x):
    """torchvision's `Grayscale(num_output_channels=3)`: the ITU-R 601 luma, repeated 3 times."""
    luma = 0.299 * x[:, 0] + 0.587 * x[:, 1] + 0.114 * x[:, 2]
    return luma[:, None].expand(-1, 3, -1, -1).contiguous()


class _ColourCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveMaxPool2d(1),
        )  # fmt: skip
        self.head = nn.Linear(32, 3)

    def forward(self, x):  # (B, 3, 12, 12) -> (B, 3) logits
        return self.head(self.features(x).flatten(1))


class _Patches(_Loop):
    """A 2-D CNN tells the patch's colour, cross-entropy, Adam. The data module applies the
    transforms once, as the Dataset's `transform` would on every read."""

    MODEL, GRAYSCALE = _ColourCNN, False

    def __init__(self):
        x, self.y = coloured_patches()
        self.x = to_grayscale(x) if self.GRAYSCALE else x

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class GrayscaleTransform(_Patches):
    """Bug (H2): the transform list was copied from an MNIST pipeline and keeps
    `transforms.Grayscale(num_output_channels=3)` ("the CNN takes 3 channels, so repeat the
    gray"): the colour the label is becomes one luma, 0.30, 0.59 or 0.11 times a brightness
    that varies 0.3 to 1.7, and the three classes overlap."""

    GRAYSCALE = True


class ColourKept(_Patches):
    """Healthy: the transform list without the Grayscale; the CNN reads the three colours."""


# ------------------------------------------------------- a stop-word list that holds "not"
PAD, NOT, WORDS, SENT_LEN = 0, 1, 40, 12
POSITIVE, NEGATIVE, STOP = range(2, 7), range(7, 12), range(12, 20)  # the, a, is, ... (8 ids)


def reviews(n=1024, seed=7332):
    """Token-id reviews of 12 words: one opinion word (positive ids 2-6 or negative ids 7-11),
    for half of the reviews a "not" (id 1) before it, and filler (common stop words 12-19 and
    content words 20-39). The label is 1 when the review is positive: a positive word not
    negated, or a negative word negated. (n, 12) ids, (n,) labels."""
    g = _gen(seed)
    ids = torch.randint(12, WORDS, (n, SENT_LEN), generator=g)
    positive = torch.rand(n, generator=g) < 0.5
    negated = torch.rand(n, generator=g) < 0.5
    word = torch.where(positive, torch.randint(2, 7, (n,), generator=g),
                       torch.randint(7, 12, (n,), generator=g))  # fmt: skip
    at = torch.randint(1, SENT_LEN, (n,), generator=g)
    ids[torch.arange(n), at] = word
    ids[torch.arange(n), at - 1] = torch.where(negated, NOT, ids[torch.arange(n), at - 1])
    return ids, (positive ^ negated).long()


def drop_stop_words(ids, stop):
    """Removes the stop words and pads each review on the right with PAD to 12 ids."""
    out = torch.full_like(ids, PAD)
    for i, row in enumerate(ids):
        kept = row[~torch.isin(row, stop)]
        out[i, : len(kept)] = kept
    return out


class _ReviewEncoder(nn.Module):
    """A transformer encoder (one layer, learned positions), mean-pooled over the real tokens,
    an MLP head."""

    def __init__(self, dim=32):
        super().__init__()
        self.embed, self.pos = nn.Embedding(WORDS, dim), nn.Parameter(0.1 * torch.randn(SENT_LEN, dim))
        self.layer = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True)
        self.head = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, ids):  # (B, 12) -> (B, 2) logits
        pad = ids == PAD
        h = self.layer(self.embed(ids) + self.pos, src_key_padding_mask=pad)
        keep = (~pad).float()[..., None]
        return self.head((h * keep).sum(1) / keep.sum(1).clamp(min=1))


class _Reviews(_Loop):
    """The encoder tells positive from negative reviews, cross-entropy, Adam. The data module
    drops the stop words first ("they carry no sentiment")."""

    MODEL, STOP_WORDS = _ReviewEncoder, torch.tensor(list(STOP))

    def __init__(self):
        ids, self.y = reviews()
        self.x = drop_stop_words(ids, self.STOP_WORDS)

    def loss_fn(self, model, batch):
        ids, y = batch
        return F.cross_entropy(model(ids), y)


class StopWordsDropNot(_Reviews):
    """Bug (H2): the stop-word list is NLTK's English list, which holds "not" (and "no",
    "nor"): every negation is dropped with "the" and "a", and a negated "bad" reads as "bad":
    half of the reviews carry the label opposite to what is left of their words, and nothing
    left tells which half."""

    STOP_WORDS = torch.tensor([NOT, *STOP])


class StopWordsKeepNot(_Reviews):
    """Healthy: the stop-word list without the negations."""


# ------------------------------------------------------- an EMA corrected by the epoch's index
SEQ, TOKENS, BOS = 8, 20, 20


def reversal_pairs(n=1024, seed=7333):
    """Token sequences of 8 ids (0-19) and the same sequence reversed. (n, 8), (n, 8)."""
    src = torch.randint(0, TOKENS, (n, SEQ), generator=_gen(seed))
    return src, src.flip(1)


class _Seq2Seq(nn.Module):
    """A GRU encoder-decoder: the encoder's last state starts the decoder, which reads the
    target shifted right (teacher forcing, a BOS id first)."""

    def __init__(self, dim=64):
        super().__init__()
        self.src_embed, self.tgt_embed = nn.Embedding(TOKENS, 32), nn.Embedding(TOKENS + 1, 32)
        self.encoder, self.decoder = nn.GRU(32, dim, batch_first=True), nn.GRU(32, dim, batch_first=True)
        self.head = nn.Linear(dim, TOKENS)

    def forward(self, src, tgt):  # (B, 8), (B, 8) -> (B, 8, 20) logits
        _, state = self.encoder(self.src_embed(src))
        shifted = torch.cat([torch.full_like(tgt[:, :1], BOS), tgt[:, :-1]], 1)
        return self.head(self.decoder(self.tgt_embed(shifted), state)[0])


class _Reversal(_Loop):
    """The seq2seq model learns to reverse a sequence, cross-entropy per token, Adam. The bar
    shows an exponential moving average of the loss (beta 0.9), bias-corrected as Adam's moments
    are: `ema / (1 - beta ** t)`."""

    MODEL, LR, BETA = _Seq2Seq, 1e-2, 0.9

    def __init__(self):
        self.x, self.y = reversal_pairs()

    def begin(self, model):
        self.ema = 0.0

    def loss_fn(self, model, batch):
        src, tgt = batch
        return F.cross_entropy(model(src, tgt).flatten(0, 1), tgt.flatten())

    def bar(self, value, i, step):
        self.ema = self.BETA * self.ema + (1 - self.BETA) * value
        return self.ema / (1 - self.BETA ** self.t(i, step))

    def t(self, i, step):
        return step


class EmaCorrectedByBatchIndex(_Reversal):
    """Bug (H3): the correction's `t` is `i + 1`, the index from `enumerate(loader)`, while the
    EMA runs on across epochs: at each epoch's start the warm EMA is divided by 1 - 0.9 = 0.1,
    a spike of 10 times the loss that decays over the epoch's first 20 batches."""

    def t(self, i, step):
        return i + 1


class EmaCorrectedByStep(_Reversal):
    """Healthy: `t` is the run's step count, the EMA's own age."""


# ------------------------------------------------------- the components logged unweighted
class _MultiTask(nn.Module):
    """A shared MLP trunk, a classifier head and a decoder head that reconstructs the input."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 16), nn.ReLU())
        self.classifier, self.decoder = nn.Linear(16, 6), nn.Linear(16, 12)

    def forward(self, x):  # (B, 12) -> (B, 6) logits, (B, 12) reconstruction
        h = self.trunk(x)
        return self.classifier(h), self.decoder(h)


class _Blobs(_Loop):
    """The multi-task net classifies the blob mixture and reconstructs its input as an auxiliary
    task: `loss = ce + 0.05 * recon` (recon: the summed squared error per row), Adam. The loss
    function keeps each component in `self.losses` for the logger."""

    MODEL, WEIGHTS = _MultiTask, {"ce": 1.0, "recon": 0.05}
    LOG_UNWEIGHTED = False

    def __init__(self):
        self.x, self.y = blob_mixture(n=1024, seed=7334)

    def loss_fn(self, model, batch):
        x, y = batch
        logits, recon = model(x)
        self.losses = {"ce": F.cross_entropy(logits, y), "recon": (recon - x).pow(2).sum(1).mean()}
        return sum(self.WEIGHTS[k] * v for k, v in self.losses.items())

    def logged(self, loss):
        if self.LOG_UNWEIGHTED:
            return sum(v.item() for v in self.losses.values())
        return loss.item()


class ComponentsLoggedUnweighted(_Blobs):
    """Bug (H3): the logger's total is `sum(v.item() for v in losses.values())`, the components
    as the loss function returned them, without the weights the loss applied: the bar shows
    ce + recon where backward() gets ce + 0.05 * recon, the reconstruction's squared error (about
    30 at the start, 3 at the end) swamping the cross-entropy."""

    LOG_UNWEIGHTED = True


class ComponentsLoggedWeighted(_Blobs):
    """Healthy: the logger takes `loss.item()`, the weighted total passed to backward()."""
