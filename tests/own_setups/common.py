"""Plain-PyTorch data and models shared by the held-out setups. Nothing here uses labkit.

The data sets are small and made in memory, with a fixed data seed (the setups' `seed`
fixes the init and the batch order, never the data itself):
- `blob_mixture`: 6 classes, each a mixture of 3 Gaussian clusters in 12 dimensions, so
  a linear model is not enough and an MLP learns it in a few hundred steps;
- `bar_images`: 12x12 one-channel images of four kinds of stroke at a random place;
- `markov_tokens`: sequences over 20 tokens where each token mostly follows a fixed rule.
"""

from __future__ import annotations

import torch
import torch.nn as nn

N_CLASSES, N_FEATURES = 6, 12


def blob_mixture(n: int = 1024, seed: int = 123, clusters_per_class: int = 3):
    gen = torch.Generator().manual_seed(seed)
    centres = 2.5 * torch.randn(N_CLASSES * clusters_per_class, N_FEATURES, generator=gen)
    cluster = torch.randint(0, len(centres), (n,), generator=gen)
    x = centres[cluster] + torch.randn(n, N_FEATURES, generator=gen)  # (n, 12)
    y = cluster % N_CLASSES  # (n,) int64
    return x, y


def split(x, y, n_val: int = 256):
    return (x[n_val:], y[n_val:]), (x[:n_val], y[:n_val])


def bar_images(n: int = 768, seed: int = 7, size: int = 12, noise: float = 0.3):
    """Class 0: horizontal bar, 1: vertical bar, 2: diagonal, 3: a 3x3 square."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=gen)
    x = noise * torch.randn(n, 1, size, size, generator=gen)  # (n, 1, 12, 12)
    pos = torch.randint(2, size - 2, (n, 2), generator=gen)
    idx = torch.arange(size)
    for i in range(n):
        r, c = int(pos[i, 0]), int(pos[i, 1])
        if y[i] == 0:
            x[i, 0, r, :] += 1.0
        elif y[i] == 1:
            x[i, 0, :, c] += 1.0
        elif y[i] == 2:
            x[i, 0, idx, (idx + c) % size] += 1.0
        else:
            x[i, 0, r - 1:r + 2, c - 1:c + 2] += 1.0
    return x, y


VOCAB, SEQ_LEN = 20, 16


def markov_tokens(n: int = 512, seed: int = 11, follow: float = 0.85):
    """(n, 16) token ids: the next token is rule[token] with probability `follow`."""
    gen = torch.Generator().manual_seed(seed)
    rule = torch.randperm(VOCAB, generator=gen)
    ids = torch.empty(n, SEQ_LEN, dtype=torch.long)
    ids[:, 0] = torch.randint(0, VOCAB, (n,), generator=gen)
    for t in range(1, SEQ_LEN):
        keep = torch.rand(n, generator=gen) < follow
        ids[:, t] = torch.where(keep, rule[ids[:, t - 1]], torch.randint(0, VOCAB, (n,), generator=gen))
    return ids


def batches_of(x, y, batch_size: int, seed: int):
    """One epoch of (x, y) tuples in an order fixed by seed."""
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    return [(x[i], y[i]) for i in order.split(batch_size)]


class MLP(nn.Module):
    def __init__(self, n_in=N_FEATURES, hidden=64, n_out=N_CLASSES, dropout=0.0):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Dropout(dropout),
                                  nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_out)

    def forward(self, x):  # (B, 12) -> (B, 6) logits
        return self.head(self.body(x))


class SmallCNN(nn.Module):
    def __init__(self, n_out=4):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(16, n_out)

    def forward(self, x):  # (B, 1, 12, 12) -> (B, 4)
        return self.classifier(self.features(x).flatten(1))


class TinyGRULM(nn.Module):
    def __init__(self, vocab=VOCAB, dim=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, input_ids):  # (B, T) -> (B, T, V)
        h, _ = self.rnn(self.embed(input_ids))
        return self.out(h)
