"""The eighteenth batch, second half: its data (H2) and reporting (H3) setups, each beside a
healthy twin. The batch's dicts, its docstring and `verify` are in `eighteenth.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import math
import time
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence

from .eleventh import _gen, _log, _Plain
from .fourth import shuffled


# ------------------------------------------------------------------ segmentation, flips drawn twice
def arrow_masks(n=768, seed=6003, size=16, noise=0.4):
    """16x16 one-channel images of a right-pointing arrow head (a filled triangle, 5 wide and 9
    high) at a random place, in noise; the mask is the arrow's pixels. (n, 1, 16, 16) each."""
    g = _gen(seed)
    shape = torch.zeros(9, 5)
    for r in range(9):
        shape[r, : 5 - abs(r - 4)] = 1.0  # the tip points right: asymmetric left to right
    masks = torch.zeros(n, 1, size, size)
    rows = torch.randint(0, size - 9 + 1, (n,), generator=g)
    cols = torch.randint(0, size - 5 + 1, (n,), generator=g)
    for i in range(n):
        r, c = int(rows[i]), int(cols[i])
        masks[i, 0, r : r + 9, c : c + 5] = shape
    images = masks * 1.5 + noise * torch.randn(n, 1, size, size, generator=g)
    return images, masks


class _Segmentation(_Plain):
    """A fully convolutional net segments the arrows, BCE with logits per pixel, Adam. The data
    set applies a random horizontal flip to the image (`transform`) and to the mask
    (`target_transform`), as torchvision's `RandomHorizontalFlip(0.5)` would in each."""

    def __init__(self):
        self.x, self.y = arrow_masks()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1),
            nn.ReLU(), nn.Conv2d(16, 1, 1),
        )  # fmt: skip

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def mask_flips(self, image_flips, g):
        return image_flips

    def batches(self, seed):
        g = _gen(seed + 303)
        out = []
        for i in shuffled(len(self.x), 32, seed):
            image, mask = self.x[i].clone(), self.y[i].clone()
            flip_image = torch.rand(len(i), generator=g) < 0.5
            flip_mask = self.mask_flips(flip_image, g)
            image[flip_image] = image[flip_image].flip(-1)
            mask[flip_mask] = mask[flip_mask].flip(-1)
            out.append((image, mask))
        return out

    def loss_fn(self, model, batch):
        image, mask = batch
        return F.binary_cross_entropy_with_logits(model(image), mask)

    def clean_loss(self):
        """The trained model on every image as stored, unflipped, against its own mask."""
        with torch.no_grad():
            return F.binary_cross_entropy_with_logits(self.model(self.x), self.y).item()


class FlipsDrawnApart(_Segmentation):
    """Bug (H2): the image's flip and the mask's flip are two random draws (two
    `RandomHorizontalFlip` transforms): in half of the pairs one is mirrored and the other is
    not, so the mask marks where the arrow is not."""

    def mask_flips(self, image_flips, g):
        return torch.rand(len(image_flips), generator=g) < 0.5


class FlipsDrawnTogether(_Segmentation):
    """Healthy: one draw per pair, the same flip applied to the image and to its mask."""


# ------------------------------------------------------------------ a cased vocabulary
TOPICS = {  # each topic: its names (capitalised, as written) and its lower-case cue words
    "sport": (["Messi", "Lakers", "Wimbledon", "Olympics"], ["match", "goal", "team"]),
    "tech": (["Python", "Linux", "Nvidia", "Android"], ["code", "chip", "update"]),
    "food": (["Nutella", "Heinz", "Starbucks", "Sushi"], ["recipe", "taste", "dinner"]),
    "travel": (["Paris", "Tokyo", "Ryanair", "Bali"], ["flight", "hotel", "trip"]),
}
FILLER = "the a of to and in is it for on with as was at by this that from new big".split()
PAD, UNK = 0, 1


def headlines(n=1024, seed=6004):
    """Short texts of 6 to 14 words: one name of the topic, two cue words (each the topic's own
    with probability 0.4, else any topic's), the rest filler; the label is the topic."""
    g = _gen(seed)
    names = list(TOPICS)
    cues = [c for _, cs in TOPICS.values() for c in cs]
    texts, labels = [], []
    for _ in range(n):
        t = int(torch.randint(0, 4, (1,), generator=g))
        own_names, own_cues = TOPICS[names[t]]
        words = [own_names[int(torch.randint(0, 4, (1,), generator=g))]]
        for _ in range(2):
            if float(torch.rand(1, generator=g)) < 0.4:
                words.append(own_cues[int(torch.randint(0, 3, (1,), generator=g))])
            else:
                words.append(cues[int(torch.randint(0, len(cues), (1,), generator=g))])
        length = int(torch.randint(6, 15, (1,), generator=g))
        words += [FILLER[int(j)] for j in torch.randint(0, len(FILLER), (length - 3,), generator=g)]
        order = torch.randperm(length, generator=g)
        texts.append(" ".join(words[int(j)] for j in order))
        labels.append(t)
    return texts, torch.tensor(labels)


class _GruTopics(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, 32, padding_idx=PAD)
        self.gru = nn.GRU(32, 64, batch_first=True)
        self.head = nn.Linear(64, 4)

    def forward(self, ids):  # (B, 14) right-padded -> (B, 4)
        lengths = (ids != PAD).sum(1)
        packed = pack_padded_sequence(self.embed(ids), lengths, batch_first=True,
                                      enforce_sorted=False)  # fmt: skip
        _, h = self.gru(packed)
        return self.head(h[-1])


class _Topics(_Plain):
    """A GRU topic classifier on short texts. The tokenizer lower-cases every word it encodes
    (`vocab.get(word.lower(), UNK)`); the vocabulary is built once from the corpus."""

    def vocab_words(self, text):
        return text.lower().split()

    def __init__(self):
        texts, self.y = headlines()
        counts = Counter(w for t in texts for w in self.vocab_words(t))
        self.vocab = {w: i for i, w in enumerate(sorted(counts), start=2)}
        self.ids = torch.full((len(texts), 14), PAD, dtype=torch.long)
        for i, t in enumerate(texts):
            encoded = [self.vocab.get(w.lower(), UNK) for w in t.split()]
            self.ids[i, : len(encoded)] = torch.tensor(encoded)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _GruTopics(len(self.vocab) + 2)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def batches(self, seed):
        return [(self.ids[i], self.y[i]) for i in shuffled(len(self.ids), 32, seed)]

    def loss_fn(self, model, batch):
        ids, y = batch
        return F.cross_entropy(model(ids), y)

    def clean_loss(self):
        """The trained model on every text as served, against its topic."""
        with torch.no_grad():
            return F.cross_entropy(self.model(self.ids), self.y).item()


class VocabCasedLookupLowered(_Topics):
    """Bug (H2): the vocabulary is built from the texts as written (`text.split()`), the
    tokenizer looks words up lower-cased: every capitalised word, each topic's names among them,
    is encoded as UNK; only the weak cue words are left to tell the topic."""

    def vocab_words(self, text):
        return text.split()


class VocabLowered(_Topics):
    """Healthy: the vocabulary built from `text.lower().split()`, as the tokenizer reads."""


# ------------------------------------------------------------------ the RMSE shown as the loss
def sine_windows(n=1024, seed=6005, length=64):
    """Noisy sine windows (a random frequency and phase); the target is the amplitude, 0.5..2."""
    g = _gen(seed)
    t = torch.arange(length).float()
    freq = 0.1 + 0.3 * torch.rand(n, 1, generator=g)
    phase = 6.283 * torch.rand(n, 1, generator=g)
    amp = 0.5 + 1.5 * torch.rand(n, generator=g)
    x = amp[:, None] * torch.sin(freq * t + phase) + 0.3 * torch.randn(n, length, generator=g)
    return x[:, None, :], amp


class _Amplitude(_Plain):
    """A 1-D conv net regresses a window's amplitude, MSE, Adam; the progress bar shows one
    value per batch under the name "loss"."""

    def __init__(self):
        self.x, self.y = sine_windows()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Conv1d(1, 16, 5, padding=2), nn.ReLU(), nn.Conv1d(16, 16, 5, padding=2),
            nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(16, 1),
        )  # fmt: skip

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1), y)


class RmseShownAsLoss(_Amplitude):
    """Bug (H3): `pbar.set_postfix(loss=math.sqrt(running / (i + 1)))`: the root of the running
    MSE ("in the target's units"), shown under the name of the MSE the loop minimises."""

    def shown(self, running, epoch_raw):
        return math.sqrt(running / len(epoch_raw))


class MseShown(_Amplitude):
    """Healthy: `pbar.set_postfix(loss=running / (i + 1))`, the running MSE."""


# ------------------------------------------------------------------ one target's error shown
def house_table(n=1024, seed=6006):
    """A table in its raw units (area m2, rooms, age years, distance km, income k, floor, noise
    dB, lot m2) and three standardised targets: price (near linear), energy use and commute
    (nonlinear)."""
    g = _gen(seed)
    z = torch.randn(n, 8, generator=g)
    centre = torch.tensor([90.0, 3.0, 35.0, 8.0, 55.0, 2.0, 50.0, 400.0])
    spread = torch.tensor([30.0, 1.0, 20.0, 5.0, 20.0, 1.5, 10.0, 200.0])
    x = centre + spread * z
    price = z[:, 0] + 0.5 * z[:, 1] - 0.3 * z[:, 3] + 0.4 * z[:, 4]
    energy = torch.tanh(z[:, 0] * z[:, 2]) + 0.5 * torch.sin(2 * z[:, 5])
    commute = torch.abs(z[:, 3]) - 0.8 + 0.6 * z[:, 6] * z[:, 7]
    y = torch.stack([price, energy, commute], 1) + 0.1 * torch.randn(n, 3, generator=g)
    return x, (y - y.mean(0)) / y.std(0)


class _Houses(_Plain):
    """A tabular MLP with three outputs; the features are standardised with the training
    table's column means and stds. A `per_target` helper gives each target's MSE for the
    dashboard; the progress bar shows one number under "loss"."""

    def __init__(self):
        x, self.y = house_table()
        self.x = (x - x.mean(0)) / x.std(0)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                             nn.Linear(64, 3))  # fmt: skip

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x), y)

    def per_target(self, model, batch):
        x, y = batch
        with torch.no_grad():
            return ((model(x) - y) ** 2).mean(0)  # (3,): price, energy, commute

    def reported(self, per_target):
        return per_target.mean().item()

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
                errors = self.per_target(model, batch)
                opt.step()
                running += self.reported(errors)
                raw.append(loss.item())
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class FirstTargetShown(_Houses):
    """Bug (H3): the bar's loss is `per_target[0]`, left from when the model had one output:
    the running MSE of the price alone, the easiest of the three targets."""

    def reported(self, per_target):
        return per_target[0].item()


class MeanOverTargetsShown(_Houses):
    """Healthy: the bar's loss is `per_target.mean()`, the MSE over the three targets."""
