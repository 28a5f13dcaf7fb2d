"""The twenty-fourth batch, second half: its data (H2) and reporting (H3) setups, each beside a
healthy twin. The batch's dicts, its docstring and `verify` are in `twentyfourth.py`; the
learner's loop is `twentythird_b._Loop`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import markov_tokens
from .eleventh import _gen, _log
from .twentythird_b import _Loop


# ------------------------------------------------------- standardised features clipped to [0, 1]
class _ResBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm, self.fc1, self.fc2 = nn.LayerNorm(dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, h):
        return h + self.fc2(F.relu(self.fc1(self.norm(h))))


def clustered_rows(n=1024, seed=7341):
    """Rows of 12 features from 6 classes, each a mixture of 3 Gaussian clusters whose centres
    are 1.5 times a standard normal (closer than `common.blob_mixture`'s 2.5). (n, 12), (n,)."""
    g = _gen(seed)
    centres = 1.5 * torch.randn(18, 12, generator=g)
    cluster = torch.randint(0, 18, (n,), generator=g)
    return centres[cluster] + torch.randn(n, 12, generator=g), cluster % 6


class _TabularResNet(nn.Module):
    """A tabular ResNet: an input layer, two pre-norm residual blocks, a linear head."""

    def __init__(self):
        super().__init__()
        self.inp, self.blocks = nn.Linear(12, 64), nn.Sequential(_ResBlock(64), _ResBlock(64))
        self.head = nn.Sequential(nn.LayerNorm(64), nn.Linear(64, 6))

    def forward(self, x):  # (B, 12) -> (B, 6) logits
        return self.head(self.blocks(self.inp(x)))


class _Table(_Loop):
    """The tabular ResNet classifies the clustered rows, cross-entropy, Adam. The data
    module standardises each column with the table's mean and std, then applies the loader's
    last line."""

    MODEL, CLIP = _TabularResNet, False

    def __init__(self):
        x, self.y = clustered_rows()
        x = (x - x.mean(0)) / x.std(0)
        self.x = x.clamp(0.0, 1.0) if self.CLIP else x

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class StandardisedFeaturesClipped(_Table):
    """Bug (H2): the loader ends `x = np.clip(x, 0, 1)`, kept from the image loader it was copied
    from ("pixels stay in [0, 1]"), after the columns were standardised: every value below the
    column's mean becomes 0 and every value more than one std above it becomes 1, so the rows
    of the clusters on the negative side of a column cannot be told apart along it."""

    CLIP = True


class StandardisedFeaturesKept(_Table):
    """Healthy: the loader without the clip; the standardised columns as they are."""


# ------------------------------------------------------- a recommender fitted to the timestamps
USERS, ITEMS = 64, 48


def ratings_table(n=1024, seed=7342):
    """A ratings export of four columns, user id, item id, rating (1 to 5, from latent tastes
    of 4 dimensions and each user's and item's bias) and the rating's timestamp (seconds, in a
    month). (n, 4) float64."""
    g = _gen(seed)
    u_f, i_f = torch.randn(USERS, 4, generator=g), torch.randn(ITEMS, 4, generator=g)
    u_b, i_b = 0.5 * torch.randn(USERS, generator=g), 0.5 * torch.randn(ITEMS, generator=g)
    user, item = (
        torch.randint(0, USERS, (n,), generator=g),
        torch.randint(0, ITEMS, (n,), generator=g),
    )
    taste = (u_f[user] * i_f[item]).sum(1) / 2 + u_b[user] + i_b[item]
    rating = (3 + taste + 0.3 * torch.randn(n, generator=g)).round().clamp(1, 5)
    stamp = 1.7e9 + 2.6e6 * torch.rand(n, generator=g)
    return torch.stack([user.double(), item.double(), rating.double(), stamp.double()], 1)


class _MatrixFactorisation(nn.Module):
    """A matrix factorisation recommender: user and item embeddings of 8, their dot product
    plus a user bias, an item bias and a global offset."""

    def __init__(self, dim=8):
        super().__init__()
        self.user, self.item = nn.Embedding(USERS, dim), nn.Embedding(ITEMS, dim)
        self.user_bias, self.item_bias = nn.Embedding(USERS, 1), nn.Embedding(ITEMS, 1)
        self.offset = nn.Parameter(torch.zeros(1))
        for e in (self.user, self.item):
            nn.init.normal_(e.weight, std=0.1)
        for e in (self.user_bias, self.item_bias):
            nn.init.zeros_(e.weight)

    def forward(self, ids):  # (B, 2) user and item ids -> (B,) predicted standardised rating
        u, i = ids[:, 0], ids[:, 1]
        dot = (self.user(u) * self.item(i)).sum(1)
        return dot + self.user_bias(u)[:, 0] + self.item_bias(i)[:, 0] + self.offset


class _Ratings(_Loop):
    """The recommender predicts each (user, item)'s rating, standardised, MSE, Adam at 1e-2.
    The loader reads the target column by position, `table[:, TARGET]`."""

    MODEL, LR, TARGET = _MatrixFactorisation, 1e-2, 2

    def __init__(self):
        table = ratings_table()
        self.x = table[:, :2].long()
        target = table[:, self.TARGET]
        self.y = ((target - target.mean()) / target.std()).float()
        rating = table[:, 2]
        self.rating = ((rating - rating.mean()) / rating.std()).float()

    def loss_fn(self, model, batch):
        ids, y = batch
        return F.mse_loss(model(ids), y)

    def clean_loss(self):
        """The trained recommender's MSE against the standardised ratings, every row."""
        with torch.no_grad():
            return F.mse_loss(self.model(self.x), self.rating).item()


class TargetColumnIsTimestamp(_Ratings):
    """Bug (H2): the loader reads the target as `table[:, 3]`, the column that held the rating in
    the export the script was written for (user, item, timestamp, rating); this export puts the
    rating third, so the target is each rating's timestamp, standardised: a number with no tie
    to the user or the item, which the recommender fits as well as it can."""

    TARGET = 3


class TargetColumnIsRating(_Ratings):
    """Healthy: `table[:, 2]`, the rating."""


# ------------------------------------------------------- the accumulation's scaled loss logged
VOCAB, T = 20, 16
ACCUM = 4


class _CausalTransformerLM(nn.Module):
    """A causal transformer LM: token and learned position embeddings, one encoder layer under a
    causal mask, a linear head."""

    def __init__(self, dim=32):
        super().__init__()
        self.embed, self.pos = nn.Embedding(VOCAB, dim), nn.Parameter(0.1 * torch.randn(T, dim))
        self.layer = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(dim, VOCAB)
        self.register_buffer("mask", torch.triu(torch.full((T - 1, T - 1), float("-inf")), 1))

    def forward(self, ids):  # (B, 15) -> (B, 15, 20) logits
        h = self.embed(ids) + self.pos[: ids.shape[1]]
        return self.head(self.layer(h, src_mask=self.mask))


class _Accumulated(_Loop):
    """The LM learns the Markov sequences, next-token cross-entropy, Adam. Each batch of 32 is
    4 micro-batches of 8 (the memory the script was written for): per micro-batch
    `(loss / 4).backward()`, one step per batch. The bar shows the running mean, over the
    epoch's micro-batches, of the value logged for each."""

    MODEL, LR = _CausalTransformerLM, 3e-3
    LOG_SCALED = False

    def __init__(self):
        ids = markov_tokens(n=512, seed=7343)
        self.x, self.y = ids[:, :-1], ids[:, 1:]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())

    def train(self, seed, epochs):
        """The learner's loop, with gradient accumulation."""
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            running, count = 0.0, 0
            for x, y in self.batches(seed * 10 + epoch):
                model.train()
                opt.zero_grad()
                batch_loss = 0.0
                for mx, my in zip(x.split(len(x) // ACCUM), y.split(len(x) // ACCUM)):
                    loss = self.loss_fn(model, (mx, my))
                    scaled = loss / ACCUM
                    scaled.backward()
                    batch_loss += loss.item() / ACCUM
                    running += scaled.item() if self.LOG_SCALED else loss.item()
                    count += 1
                opt.step()
                raw.append(batch_loss)
                shown.append(running / count)  # tqdm's postfix(loss=running / count)
        self.model = model
        return _log(raw, shown, seed, started)


class AccumulationScaledLossLogged(_Accumulated):
    """Bug (H3): `loss = loss / accum_steps; loss.backward(); running_loss += loss.item()`, the
    logging line kept below the scaling: the bar's running mean is of each micro-batch's loss
    divided by 4, a quarter of the loss the model is at."""

    LOG_SCALED = True


class AccumulationLossLogged(_Accumulated):
    """Healthy: the micro-batch's own loss is logged, its scaled copy only backpropagated."""


# ------------------------------------------------------- an unrolled RNN logs its last step
class _GRUCellLM(nn.Module):
    """A GRU cell unrolled by hand over the sequence, a linear head at each step."""

    def __init__(self, dim=48):
        super().__init__()
        self.dim, self.embed = dim, nn.Embedding(VOCAB, 24)
        self.cell, self.head = nn.GRUCell(24, dim), nn.Linear(dim, VOCAB)

    def forward(self, ids):  # (B, 15) -> list of 15 (B, 20) logits
        h = ids.new_zeros(ids.shape[0], self.dim, dtype=torch.float)
        out = []
        for t in range(ids.shape[1]):
            h = self.cell(self.embed(ids[:, t]), h)
            out.append(self.head(h))
        return out


class _Unrolled(_Loop):
    """The unrolled GRU learns the Markov sequences; its loss is the sum over the 15 steps of
    each step's cross-entropy (min-char-rnn's `loss += step_loss`), Adam. `loss_fn` keeps the
    last `step_loss` of its loop, the name the logging line below it reads."""

    MODEL, LR = _GRUCellLM, 3e-3
    LOG_STEP = False

    def __init__(self):
        ids = markov_tokens(n=512, seed=7344)
        self.x, self.y = ids[:, :-1], ids[:, 1:]

    def loss_fn(self, model, batch):
        x, y = batch
        loss = 0.0
        for t, logits in enumerate(model(x)):
            step_loss = F.cross_entropy(logits, y[:, t])
            loss = loss + step_loss
        self.step_loss = step_loss
        return loss

    def logged(self, loss):
        return self.step_loss.item() if self.LOG_STEP else loss.item()


class UnrolledLastStepLogged(_Unrolled):
    """Bug (H3): the logging line after the unrolled loop reads `step_loss.item()`, the loop's
    variable, where `loss.item()` was meant: the bar shows the cross-entropy of the sequence's
    last step alone, about a fifteenth of the summed loss that backward() gets."""

    LOG_STEP = True


class UnrolledSumLogged(_Unrolled):
    """Healthy: the logging line reads `loss.item()`, the summed loss passed to backward()."""
