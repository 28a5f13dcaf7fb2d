"""The twenty-second batch, second half: the learner's loop its setups share, and its data (H2)
and reporting (H3) setups, each beside a healthy twin. The batch's dicts, its docstring and
`verify` are in `twentysecond.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import VOCAB, markov_tokens
from .eleventh import _gen, _log
from .twentieth_b import _Setup


class _Loop(_Setup):
    """The learner's loop: per batch `model.train()`, the loss, `update` (zero_grad, backward,
    step), which gives the bar's value for the batch; the bar shows `shown(running,
    in_window, i)`, the running mean of those values, its window reset at each epoch and, when
    LOG_EVERY is set, after every LOG_EVERY batches (the print of the tutorial's loop)."""

    LOG_EVERY = 0

    def update(self, opt, loss) -> float:
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.item()

    def shown(self, running, in_window, i):
        return running / in_window

    def train(self, seed, epochs):
        """The learner's loop."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        self.begin(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running, in_window = 0.0, 0
            for i, batch in enumerate(self.batches(seed * 10 + epoch)):
                model.train()
                loss = self.loss_fn(model, batch)
                running += self.update(opt, loss)
                in_window += 1
                raw.append(loss.item())
                shown.append(self.shown(running, in_window, i))  # tqdm's postfix(loss=...)
                if self.LOG_EVERY and (i + 1) % self.LOG_EVERY == 0:
                    running, in_window = 0.0, 0
        self.model = model
        return _log(raw, shown, seed, started)


# ------------------------------------------------------- Siamese negatives from the same class
KINDS, LENGTH = 8, 64


def waveforms(n=1024, seed=7231):
    """1-D signals of 8 kinds (a sine or a square wave at 2, 4, 6 or 8 cycles per window), random
    phase and amplitude, noise: (n, 64), (n,) the kind."""
    g = _gen(seed)
    kind = torch.randint(0, KINDS, (n,), generator=g)
    cycles, square = 2 * (kind % 4 + 1).float(), kind >= 4
    t = torch.linspace(0, 1, LENGTH)
    phase = 2 * math.pi * torch.rand(n, 1, generator=g)
    wave = torch.sin(2 * math.pi * cycles[:, None] * t + phase)  # (n, 64)
    wave = torch.where(square[:, None], wave.sign(), wave)
    amplitude = 0.5 + torch.rand(n, 1, generator=g)
    return amplitude * wave + 0.3 * torch.randn(n, LENGTH, generator=g), kind


def make_pairs(x, kind, seed, negatives_from_same_kind=False):
    """Each signal with a partner: of its own kind (label 1) for half of them, else of another
    kind (label 0). Returns (n, 2, 64) pairs, (n,) float labels."""
    g = _gen(seed)
    same = torch.rand(len(x), generator=g) < 0.5
    partner = torch.empty(len(x), dtype=torch.long)
    for i in range(len(x)):
        if same[i] or negatives_from_same_kind:
            pool = (kind == kind[i]).nonzero().squeeze(1)
        else:
            pool = (kind != kind[i]).nonzero().squeeze(1)
        partner[i] = pool[torch.randint(len(pool), (1,), generator=g)]
    return torch.stack([x, x[partner]], 1), same.float()


class _SiameseConv(nn.Module):
    """A 1-D conv encoder shared by both signals; the pair's logit is a learned scale times the
    cosine of their embeddings plus a learned offset."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv1d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(16, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1),
            nn.Flatten(), nn.Linear(32, 16),
        )  # fmt: skip
        self.scale, self.offset = nn.Parameter(torch.tensor(5.0)), nn.Parameter(torch.tensor(0.0))

    def forward(self, pairs):  # (B, 2, 64) -> (B,) logits of "same kind"
        z = self.encoder(pairs.flatten(0, 1)[:, None]).unflatten(0, (len(pairs), 2))  # (B, 2, 16)
        return self.scale * F.cosine_similarity(z[:, 0], z[:, 1], dim=-1) + self.offset


class _Verification(_Loop):
    """A Siamese conv net tells whether two signals are of the same kind, binary cross-entropy,
    Adam. The data module draws each signal's partner once."""

    MODEL, SAME_KIND_NEGATIVES = _SiameseConv, False

    def __init__(self):
        signals, kind = waveforms()
        self.x, self.y = make_pairs(signals, kind, 7232, self.SAME_KIND_NEGATIVES)
        self.true_x, self.true_y = make_pairs(signals, kind, 7232)

    def loss_fn(self, model, batch):
        pairs, same = batch
        return F.binary_cross_entropy_with_logits(model(pairs), same)

    def clean_loss(self):
        """The trained net on pairs drawn right, negatives of another kind."""
        with torch.no_grad():
            return self.loss_fn(self.model, (self.true_x, self.true_y)).item()


class NegativesFromSameKind(_Verification):
    """Bug (H2): the negative partner is drawn from `(kind == kind[i]).nonzero()`, the line
    copied from the positive's: every pair is of one kind, half of them labelled "different",
    and nothing in a pair tells its label."""

    SAME_KIND_NEGATIVES = True


class NegativesFromOtherKinds(_Verification):
    """Healthy: the negative partner is drawn from `(kind != kind[i]).nonzero()`."""


# ------------------------------------------------------- a categorical column read as a number
STORES = 20


def store_sales(n=1024, seed=7233):
    """A day's sales at one of 20 stores: the store's own level (random, in the id's order
    nothing), 4 standardised numeric features (promotion, price, temperature, weekday), noise.
    Returns (n,) store ids, (n, 4) features, (n,) standardised sales."""
    g = _gen(seed)
    store = torch.randint(0, STORES, (n,), generator=g)
    level = torch.randn(STORES, generator=g)
    numeric = torch.randn(n, 4, generator=g)
    sales = level[store] + numeric @ torch.tensor([0.5, -0.4, 0.2, 0.3])
    sales = sales + 0.3 * torch.randn(n, generator=g)
    return store, numeric, (sales - sales.mean()) / sales.std()


class _Tabular(nn.Module):
    def __init__(self, n_in):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_in, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                                 nn.Linear(64, 1))  # fmt: skip

    def forward(self, x):  # (B, n_in) -> (B,)
        return self.net(x).squeeze(-1)


class _Sales(_Loop):
    """A tabular MLP predicts a store's sales, MSE, Adam. The data module turns the table into
    one float matrix: the store column then the 4 numeric features."""

    ONE_HOT = True

    def __init__(self):
        store, numeric, self.y = store_sales()
        if self.ONE_HOT:
            column = F.one_hot(store, STORES).float()  # (n, 20)
        else:
            column = ((store.float() - store.float().mean()) / store.float().std())[:, None]
        self.x = torch.cat([column, numeric], 1)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _Tabular(self.x.shape[1])

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x), y)


class StoreIdAsNumber(_Sales):
    """Bug (H2): the store id is standardised like the numeric columns, one float per row: the
    stores' levels, in no order along the id, become a jagged function of one number that the
    MLP smooths over."""

    ONE_HOT = False


class StoreIdOneHot(_Sales):
    """Healthy: the store id one-hot encoded, 20 columns."""


# ------------------------------------------------------- the print window's divisor
class _GRULM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.gru = nn.Embedding(VOCAB, 32), nn.GRU(32, 64, batch_first=True)
        self.head = nn.Linear(64, VOCAB)

    def forward(self, ids):  # (B, T) -> (B, T, VOCAB)
        return self.head(self.gru(self.embed(ids))[0])


class _Tokens(_Loop):
    """A GRU language model of rule-following token strings, next-token cross-entropy, Adam. The
    bar's running loss is reset after every 10 batches, where the tutorial's loop prints it."""

    MODEL, LR, LOG_EVERY = _GRULM, 1e-2, 10

    def __init__(self):
        ids = markov_tokens(n=1024, seed=7234)
        self.x, self.y = ids[:, :-1], ids[:, 1:]

    def loss_fn(self, model, batch):
        ids, nxt = batch
        return F.cross_entropy(model(ids).flatten(0, 1), nxt.flatten())


class WindowOverBatchIndex(_Tokens):
    """Bug (H3): `running_loss / (i + 1)` with `running_loss` reset every 10 batches: the sum of
    the window's few losses over the epoch's batch count, a saw that falls toward 0 between
    resets (at batch 32 two losses over 32)."""

    def shown(self, running, in_window, i):
        return running / (i + 1)


class WindowOverItsLength(_Tokens):
    """Healthy: `running_loss / batches_since_reset`, the mean over the window."""


# ------------------------------------------------------- the scaled loss on the bar
NODES = 10


def marked_graphs(n=1024, seed=7235):
    """Random graphs of 10 nodes (edge probability 0.3), each node marked or not (its first
    feature) plus 3 noise features; the target is the number of edges joining two marked nodes,
    standardised. Returns (n, 10, 4 + 10): each node's features then its adjacency row, (n,)."""
    g = _gen(seed)
    upper = (torch.rand(n, NODES, NODES, generator=g) < 0.3).triu(1).float()
    adj = upper + upper.transpose(1, 2)  # (n, 10, 10), symmetric, no self-loops
    marked = (torch.rand(n, NODES, generator=g) < 0.4).float()
    feats = torch.cat([marked[..., None], torch.randn(n, NODES, 3, generator=g)], -1)
    count = torch.einsum("ni,nij,nj->n", marked, adj, marked) / 2
    return torch.cat([feats, adj], -1), (count - count.mean()) / count.std()


class _GraphNet(nn.Module):
    """A message-passing net written by hand: two rounds of `relu(W_self h + W_nb (A @ h))`,
    a sum over the nodes, a head."""

    def __init__(self, dim=32):
        super().__init__()
        self.inp = nn.Linear(4, dim)
        self.self1, self.nb1 = nn.Linear(dim, dim), nn.Linear(dim, dim, bias=False)
        self.self2, self.nb2 = nn.Linear(dim, dim), nn.Linear(dim, dim, bias=False)
        self.head = nn.Linear(dim, 1)

    def forward(self, graphs):  # (B, 10, 14) -> (B,)
        feats, adj = graphs[..., :4], graphs[..., 4:]  # (B, 10, 4), (B, 10, 10)
        h = F.relu(self.inp(feats))
        h = F.relu(self.self1(h) + self.nb1(adj @ h))
        h = F.relu(self.self2(h) + self.nb2(adj @ h))
        return self.head(h.sum(1)).squeeze(-1)


class _Graphs(_Loop):
    """The graph net counts the edges between marked nodes, MSE, Adam, under a GradScaler (the
    loop was copied from a mixed-precision GPU script): `scaler.scale(loss).backward()`,
    `scaler.step(opt)`, `scaler.update()`."""

    MODEL, SHOW_SCALED = _GraphNet, False

    def __init__(self):
        self.x, self.y = marked_graphs()

    def begin(self, model):
        self.scaler = torch.amp.GradScaler("cpu")

    def loss_fn(self, model, batch):
        graphs, count = batch
        return F.mse_loss(model(graphs), count)

    def update(self, opt, loss) -> float:
        opt.zero_grad()
        scaled = self.scaler.scale(loss)
        scaled.backward()
        self.scaler.step(opt)
        self.scaler.update()
        return scaled.item() if self.SHOW_SCALED else loss.item()


class ScaledLossOnBar(_Graphs):
    """Bug (H3): the bar takes `scaled.item()`, the loss the scaler multiplied by its scale for
    backward (65536 at the start): the bar shows tens of thousands where the loss is below 1."""

    SHOW_SCALED = True


class UnscaledLossOnBar(_Graphs):
    """Healthy: the bar takes `loss.item()`; the scaled copy only goes to backward."""

