"""The nineteenth batch, second half: its data (H2) and reporting (H3) setups, each beside a
healthy twin. The batch's dicts, its docstring and `verify` are in `nineteenth.py`.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .eleventh import _gen, _log, _Plain
from .fourth import shuffled


# ------------------------------------------------------------------ keypoints after a resize
INPUT = 16  # the network's input size


def spot_photos(n=1024, seed=7003):
    """Photos of one bright spot, taken at three resolutions (16, 24 or 32 pixels a side), each
    resized to the network's 16x16 (bilinear, antialiased) as the data set's transform does.
    The spot's size scales with the photo, so a resized photo does not tell its resolution.
    Returns the resized images (n, 1, 16, 16), the spot's centre in the photo's own pixels
    (n, 2: x, y) and each photo's side (n,)."""
    g = _gen(seed)
    sides = torch.tensor([16, 24, 32])[torch.randint(0, 3, (n,), generator=g)]
    images, centres = torch.zeros(n, 1, INPUT, INPUT), torch.zeros(n, 2)
    for i in range(n):
        s = int(sides[i])
        centre = s * (0.2 + 0.6 * torch.rand(2, generator=g))
        grid = torch.arange(s).float() + 0.5
        d2 = (grid[None, :] - centre[0]) ** 2 + (grid[:, None] - centre[1]) ** 2
        photo = torch.exp(-d2 / (2 * (s / 10) ** 2)) + 0.05 * torch.randn(s, s, generator=g)
        images[i] = F.interpolate(photo[None, None], size=(INPUT, INPUT), mode="bilinear",
                                  antialias=True, align_corners=False)[0]  # fmt: skip
        centres[i] = centre
    return images, centres, sides.float()


class _Keypoints(_Plain):
    """A small CNN regresses the spot's centre, in coordinates normalised to [0, 1], MSE, Adam.
    The data set resizes every photo to 16x16 and normalises its keypoint in `__init__`."""

    def __init__(self):
        self.x, centres, self.sides = spot_photos()
        self.true = centres / self.sides[:, None]  # the centre in the resized image, over 16
        self.y = self.targets(centres, self.sides)

    def targets(self, centres, sides):
        return centres / sides[:, None]

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 2),
        )  # fmt: skip

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x), y)

    def clean_loss(self):
        """The trained model on every resized photo against the centre where it is in that
        photo, normalised by the photo's side."""
        with torch.no_grad():
            return F.mse_loss(self.model(self.x), self.true).item()


class KeypointsOverInputSize(_Keypoints):
    """Bug (H2): the keypoint, given in the photo's own pixels, is normalised by the network's
    input size (`centre / 16`) instead of by the photo's side before the resize: a spot in the
    middle is 0.5 in a 16-pixel photo and 1.0 in a 32-pixel one, with the same resized image."""

    def targets(self, centres, sides):
        return centres / INPUT


class KeypointsOverPhotoSize(_Keypoints):
    """Healthy: `centre / side`, the photo's own side, which the resize keeps."""


# ------------------------------------------------------------------ a split of a sorted table
def wine_table(n=1000, seed=7004, classes=5):
    """A table of 10 measured features and 5 balanced grades, exported sorted by grade (as a
    SQL `ORDER BY grade` leaves it); the features are standardised."""
    g = _gen(seed)
    y = torch.arange(classes).repeat_interleave(n // classes)
    centres = 1.2 * torch.randn(classes, 10, generator=g)
    x = centres[y] + torch.randn(n, 10, generator=g)
    return (x - x.mean(0)) / x.std(0), y


class _Grades(_Plain):
    """An MLP grades the rows (5 classes), cross-entropy, Adam. The table is split 80/20 into
    training and validation rows by slicing; only the training rows are served."""

    def __init__(self):
        self.x, self.y = wine_table()
        order = self.split_order(len(self.y))
        cut = int(0.8 * len(self.y))
        self.train_x, self.train_y = self.x[order[:cut]], self.y[order[:cut]]

    def split_order(self, n):
        return torch.randperm(n, generator=_gen(7014))

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                             nn.Linear(64, 5))  # fmt: skip

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        x, y = self.train_x, self.train_y
        return [(x[i], y[i]) for i in shuffled(len(x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def clean_loss(self):
        """The trained model on every row of the table, training and validation rows alike."""
        with torch.no_grad():
            return F.cross_entropy(self.model(self.x), self.y).item()


class SplitSortedTable(_Grades):
    """Bug (H2): `train = table[:800]` on the table as exported, sorted by grade: the last
    grade's 200 rows all land in validation, so the model never sees one example of it."""

    def split_order(self, n):
        return torch.arange(n)


class SplitShuffledTable(_Grades):
    """Healthy: the rows permuted once (a fixed generator) before the 80/20 slice."""


# ------------------------------------------------------------------ the log-likelihood shown
def claim_counts(n=1024, seed=7005):
    """Six standardised features of a policy and its yearly claim count, Poisson with a log
    rate linear in two features and quadratic in a third (mean count about 1.5)."""
    g = _gen(seed)
    x = torch.randn(n, 6, generator=g)
    log_rate = 0.2 + 0.5 * x[:, 0] - 0.4 * x[:, 1] + 0.3 * (x[:, 2] ** 2 - 1)
    return x, torch.poisson(torch.exp(log_rate), generator=g)


class _Claims(_Plain):
    """An MLP predicts the log of the claim rate; the loss is the Poisson negative
    log-likelihood, `log_lik = Poisson(rate=out.exp()).log_prob(y).mean()`, `loss = -log_lik`,
    Adam. The progress bar shows one running value under the name "loss"."""

    def __init__(self):
        self.x, self.y = claim_counts()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 1))

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        log_rate = model(x).squeeze(-1)
        log_lik = torch.distributions.Poisson(rate=log_rate.exp()).log_prob(y).mean()
        return -log_lik

    def clean_loss(self):
        """The trained model's Poisson negative log-likelihood on every policy."""
        with torch.no_grad():
            rate = self.model(self.x).squeeze(-1).exp()
            return -torch.distributions.Poisson(rate=rate).log_prob(self.y).mean().item()


class LogLikelihoodShown(_Claims):
    """Bug (H3): the bar's "loss" is the running mean of `log_lik.item()`, the log-likelihood
    the loop maximises (its negative is what backward() gets): a negative number that rises
    toward 0 as the model learns."""

    def shown(self, running, epoch_raw):
        return -running / len(epoch_raw)  # the running mean of log_lik = -loss


class NegativeLogLikelihoodShown(_Claims):
    """Healthy: the bar's "loss" is the running mean of `loss.item()`, `-log_lik`."""


# ------------------------------------------------------------------ a broadcast in the metric
def disk_images(n=1024, seed=7006, size=16):
    """16x16 images of one bright disk (radius 1.5 to 5 pixels, anywhere) in noise; the target
    is the radius."""
    g = _gen(seed)
    radius = 1.5 + 3.5 * torch.rand(n, generator=g)
    centre = 5 + 6 * torch.rand(n, 2, generator=g)
    grid = torch.arange(size).float() + 0.5
    d2 = (grid[None, None, :] - centre[:, 0, None, None]) ** 2 + (
        grid[None, :, None] - centre[:, 1, None, None]
    ) ** 2
    images = (d2 < radius[:, None, None] ** 2).float() + 0.3 * torch.randn(n, size, size, generator=g)
    return images[:, None], radius


class _ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(out)))


class _RadiusNet(nn.Module):
    """A ResNet-like regressor: a conv stem with BatchNorm, two residual blocks, global average
    pooling, a linear head with one output (B, 1)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU())  # fmt: skip
        self.blocks = nn.Sequential(_ResBlock(16), _ResBlock(16))
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def batch_mse(pred, target):
    """The metrics module's helper, also used for the dashboard's validation curve."""
    return ((pred - target) ** 2).mean()


class _Radius(_Plain):
    """The ResNet-like net regresses the disk's radius, MSE, Adam. After backward() the loop
    scores the batch with the metrics helper (a forward pass under no_grad, the same weights
    and batch) and the bar shows its running mean under the name "loss"."""

    def __init__(self):
        self.x, self.y = disk_images()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _RadiusNet()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(1), y)

    def metric(self, out, y):
        return batch_mse(out.squeeze(1), y)

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
                with torch.no_grad():
                    score = self.metric(model(batch[0]), batch[1]).item()
                opt.step()
                running += score
                raw.append(loss.item())
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)

    def clean_loss(self):
        """The trained model (eval mode) on every image, the MSE of its radius."""
        with torch.no_grad():
            return F.mse_loss(self.model(self.x).squeeze(1), self.y).item()


class MetricBroadcast(_Radius):
    """Bug (H3): the helper is given the model's output as it comes, (B, 1), against the
    radii, (B,): `pred - target` broadcasts to (B, B), every prediction against every radius of
    the batch, and the bar's "loss" stays near twice the radii's variance."""

    def metric(self, out, y):
        return batch_mse(out, y)


class MetricSqueezed(_Radius):
    """Healthy: the helper is given `out.squeeze(1)`, (B,) against (B,)."""
