"""The twentieth batch, second half: its data (H2) and reporting (H3) setups, each beside a
healthy twin. The batch's dicts, its docstring and `verify` are in `twentieth.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .eleventh import _gen, _log, _Plain
from .fourth import shuffled


class AverageMeter:
    """The learner's meter: `update(val, n)` adds a batch's mean weighted by its size."""

    COUNT_SAMPLES = True

    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n if self.COUNT_SAMPLES else 1

    @property
    def avg(self):
        return self.sum / self.count


class _Setup(_Plain):
    """What the batch's setups share: the model class MODEL made under the seed, Adam at LR,
    shuffled batches of BATCH rows of (x, y), and the learner's loop, whose bar shows the
    epoch's METER over what `report` gives for each batch (after backward, before the step)."""

    MODEL, LR, BATCH, METER = None, 3e-3, 32, AverageMeter

    def make_model(self, seed):
        torch.manual_seed(seed)
        return self.MODEL()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=self.LR)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), self.BATCH, seed)]

    def begin(self, model):
        pass

    def backward(self, model, batch) -> float:
        """Backpropagates the batch's loss; returns its value."""
        loss = self.loss_fn(model, batch)
        loss.backward()
        return loss.item()

    def report(self, model, batch, loss):
        return loss

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        self.begin(model)
        raw, shown = [], []
        for epoch in range(epochs):
            meter = self.METER()
            for batch in self.batches(seed * 10 + epoch):
                opt.zero_grad()
                loss = self.backward(model, batch)
                meter.update(self.report(model, batch, loss), n=len(batch[0]))
                opt.step()
                raw.append(loss)
                shown.append(meter.avg)
        self.model = model
        return _log(raw, shown, seed, started)


# ---------------------------------------------------------- a series shuffled before windowing
WINDOW = 24


def load_series(n=1024 + WINDOW, seed=7101):
    """A standardised hourly load: a daily and a half-daily cycle with drifting phase, plus AR(1)
    noise."""
    g = _gen(seed)
    t, noise = torch.arange(n).float(), torch.zeros(n)
    for i in range(1, n):
        noise[i] = 0.7 * noise[i - 1] + 0.3 * torch.randn(1, generator=g)  # AR(1)
    s = torch.sin(2 * math.pi * t / 24) + 0.5 * torch.sin(2 * math.pi * t / 12 + 0.01 * t) + noise
    return (s - s.mean()) / s.std()


def windows(series):
    """(n, 24, 1) windows of the series and (n,) the value right after each."""
    x = series.unfold(0, WINDOW, 1)[:-1]
    return x[..., None], series[WINDOW:]


class _Forecaster(nn.Module):
    """One self-attention block over the window (learned positions), pooled, a linear head."""

    def __init__(self, dim=32):
        super().__init__()
        self.inp, self.pos = nn.Linear(1, dim), nn.Parameter(0.1 * torch.randn(WINDOW, dim))
        self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, 1)

    def forward(self, x):  # (B, 24, 1) -> (B,)
        h = self.inp(x) + self.pos  # (B, 24, dim)
        h = self.norm(h + self.attn(h, h, h, need_weights=False)[0])
        return self.head(h[:, -1] + h.mean(1)).squeeze(-1)  # the last hour's state and the mean


class _Load(_Setup):
    """An attention forecaster reads 24 hours of load and predicts the next hour, MSE, Adam. The
    data module makes the windows and shuffles the data once before serving it."""

    MODEL = _Forecaster

    def __init__(self):
        self.series = load_series()
        self.clean_x, self.clean_y = windows(self.series)
        self.x, self.y = self.prepared(self.series)

    def prepared(self, series):
        x, y = windows(series)
        order = torch.randperm(len(y), generator=_gen(7111))
        return x[order], y[order]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x), y)

    def clean_loss(self):
        """The trained model on every window of the series in time order, against its next hour."""
        with torch.no_grad():
            return F.mse_loss(self.model(self.clean_x), self.clean_y).item()


class SeriesShuffledBeforeWindows(_Load):
    """Bug (H2): "shuffle the data once" is applied to the hours, `series[randperm(n)]`, before
    the windows are cut: every window is 24 random hours and its "next hour" another random
    one, so nothing in a window tells its target."""

    def prepared(self, series):
        return windows(series[torch.randperm(len(series), generator=_gen(7111))])


class WindowsShuffled(_Load):
    """Healthy: the windows are cut from the series in time order, then shuffled as pairs."""


# ------------------------------------------------------------------ ids padded left, tags right
PAD, LENGTH, VOCAB = 0, 16, 31


def tagged_sentences(n=1024, seed=7102):
    """Sentences of 4 to 16 tokens (ids 1..30) and one tag per token (3 tags): the token's own
    group (id % 3), turned into tag 0 when the token before it is in group 0 (a context rule).
    Returns the sentences (a list of 1-D tensors) and their tags (the same lengths)."""
    g = _gen(seed)
    sentences, tags = [], []
    for _ in range(n):
        ids = torch.randint(1, VOCAB, (int(torch.randint(4, LENGTH + 1, (1,), generator=g)),),
                            generator=g)  # fmt: skip
        group = ids % 3
        tag = group.clone()
        tag[1:][group[:-1] == 0] = 0
        sentences.append(ids)
        tags.append(tag)
    return sentences, tags


def pad_to(rows, value, side):
    """Pads each 1-D tensor to LENGTH with `value`, on the right or the left."""
    out = torch.full((len(rows), LENGTH), value)
    for i, r in enumerate(rows):
        start = 0 if side == "right" else LENGTH - len(r)
        out[i, start : start + len(r)] = r
    return out


class _StreamTagger(nn.Module):
    """A one-way GRU tags each token as it arrives (a streaming tagger)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32, padding_idx=PAD)
        self.gru = nn.GRU(32, 64, batch_first=True)
        self.head = nn.Linear(64, 3)

    def forward(self, ids):  # (B, 16) -> (B, 16, 3)
        return self.head(self.gru(self.embed(ids))[0])


class _Tagging(_Setup):
    """The GRU tags the padded sentences; the tags are padded with -100 (ignored by the loss),
    cross-entropy, Adam. The collate pads with the tokenizer's `padding_side`."""

    SIDE, MODEL = "right", _StreamTagger

    def __init__(self):
        sentences, tags = tagged_sentences()
        self.y = pad_to(tags, -100, "right")
        self.x = pad_to(sentences, PAD, self.SIDE)
        self.clean_ids = pad_to(sentences, PAD, "right")

    def loss_fn(self, model, batch):
        ids, tags = batch
        return F.cross_entropy(model(ids).flatten(0, 1), tags.flatten(), ignore_index=-100)

    def clean_loss(self):
        """The trained model on every sentence with its tokens and tags aligned."""
        with torch.no_grad():
            logits = self.model(self.clean_ids).flatten(0, 1)
            return F.cross_entropy(logits, self.y.flatten(), ignore_index=-100).item()


class IdsPaddedLeft(_Tagging):
    """Bug (H2): the tokenizer was set to `padding_side="left"` (for a decoder elsewhere) while
    the tags are still padded on the right: in a sentence of L tokens, position t holds token
    t - (16 - L) and the tag of token t, a token the one-way GRU has not read yet."""

    SIDE = "left"


class IdsPaddedRight(_Tagging):
    """Healthy: ids and tags both padded on the right."""


# ------------------------------------------------------------------ a scorer loaded once
TOPICS, WORDS = 4, 200


def topic_documents(n=1024, seed=7103, length=20):
    """Documents of 20 token ids (0..199): 4 to 6 keywords of the topic (10 per topic, ids
    topic * 10 ..), the rest filler words (ids 40..199)."""
    g = _gen(seed)
    y = torch.randint(0, TOPICS, (n,), generator=g)
    ids = torch.randint(40, WORDS, (n, length), generator=g)
    for i in range(n):
        k = int(torch.randint(4, 7, (1,), generator=g))
        place = torch.randperm(length, generator=g)[:k]
        ids[i, place] = 10 * y[i] + torch.randint(0, 10, (k,), generator=g)
    return ids, y


class _TopicBag(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(WORDS, 32, mode="mean")
        self.head = nn.Linear(32, TOPICS)

    def forward(self, ids):  # (B, 20) -> (B, 4)
        return self.head(torch.tanh(self.bag(ids)))


class _Topics(_Setup):
    """An EmbeddingBag classifier of the documents' topics, cross-entropy, Adam. The bar's meter
    takes the batch's loss as a `scorer` model computes it: a second model of the same class,
    in eval mode, so that the metrics code never touches the training model."""

    MODEL, LR, REFRESH = _TopicBag, 1e-2, True

    def __init__(self):
        self.x, self.y = topic_documents()

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def begin(self, model):
        self.scorer = _TopicBag().eval()
        self.scorer.load_state_dict(model.state_dict())

    def report(self, model, batch, loss):
        if self.REFRESH:
            self.scorer.load_state_dict(model.state_dict())
        with torch.no_grad():
            return self.loss_fn(self.scorer, batch).item()


class ScorerLoadedOnce(_Topics):
    """Bug (H3): `scorer.load_state_dict(model.state_dict())` is called once, before the loop,
    as if it tied the two models' weights: it copies them, so the bar shows the loss of the
    untrained model on each batch while the real loss falls."""

    REFRESH = False


class ScorerLoadedEachBatch(_Topics):
    """Healthy: the scorer loads the model's weights before it scores each batch."""


# ----------------------------------------------------------- an AverageMeter that counts calls
def noisy_strokes(n=1024, seed=7104, size=16):
    """16x16 images of two random strokes (horizontal or vertical bars, 2 pixels wide) and their
    noisy copies (Gaussian noise, std 0.4): (noisy, clean), each (n, 1, 16, 16)."""
    g = _gen(seed)
    clean = torch.zeros(n, 1, size, size)
    for i in range(n):
        for _ in range(2):  # a stroke
            at, start = torch.randint(0, size - 2, (2,), generator=g).tolist()
            stop = min(size, start + 6 + int(torch.randint(0, 8, (1,), generator=g)))
            if torch.rand(1, generator=g) < 0.5:
                clean[i, 0, at : at + 2, start:stop] = 1.0
            else:
                clean[i, 0, start:stop, at : at + 2] = 1.0
    return clean + 0.4 * torch.randn(clean.shape, generator=g), clean


class _TinyUNet(nn.Module):
    """A U-Net-like denoiser: a 16x16 level, an 8x8 level, an upsampling path with a skip."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU())
        self.mid = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU())
        self.dec = nn.Sequential(nn.Conv2d(48, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 1, 1))

    def forward(self, x):  # (B, 1, 16, 16) -> (B, 1, 16, 16)
        e = self.enc(x)  # (B, 16, 16, 16)
        m = F.interpolate(self.mid(F.max_pool2d(e, 2)), scale_factor=2.0)  # (B, 32, 16, 16)
        return self.dec(torch.cat([e, m], 1))


class _CallCountingMeter(AverageMeter):
    COUNT_SAMPLES = False


class _Denoise(_Setup):
    """The U-Net-like net denoises the strokes, MSE, Adam; the bar shows the AverageMeter's
    `avg`, `meter.update(loss.item(), n=x.size(0))` per batch, a new meter each epoch."""

    MODEL = _TinyUNet

    def __init__(self):
        self.x, self.y = noisy_strokes()

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x), y)


class MeterCountsCalls(_Denoise):
    """Bug (H3): the meter's `update` adds `val * n` to its sum but 1 to its count (a slip from
    the ImageNet example's `self.count += n`): `avg` is the mean loss times the batch size, 32."""

    METER = _CallCountingMeter


class MeterCountsSamples(_Denoise):
    """Healthy: `self.count += n`, the meter's mean per sample."""
