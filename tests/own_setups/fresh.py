"""A second, smaller held-out batch, written AFTER the rules existed and run once, untuned.

Other idioms than the first batch: AMP with a GradScaler, bfloat16 autocast, BatchNorm,
label smoothing, regression with MSE, warmup schedules, an optimizer built on a copy of
the model, labels all of one class. Its numbers are reported apart from the first batch.
"""

from __future__ import annotations

import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run

from .common import bar_images, batches_of
from .healthy import BlobSetup, CnnImages, MlpAdam


def _plain(setup, seed, epochs, *, step_fn=None, sched=None, log_every=1):
    """A plain loop in the style of each setup below; step_fn(model, opt, batch) -> loss value."""
    started = time.time()
    model = setup.make_model(seed)
    opt = setup.make_optimizer(model)
    scheduler = sched(opt) if sched else None
    raw, shown, window = [], [], []
    for _ in range(epochs):
        for batch in setup.batches(seed):
            value = step_fn(model, opt, batch)
            raw.append(value)
            window.append(value)
            if len(raw) % log_every == 0:
                shown.append(sum(window) / len(window))
                window = []
            else:
                shown.append(None)
            if scheduler is not None:
                scheduler.step()
    return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                        seed=seed, started_at=started)


def _textbook(setup):
    def step(model, opt, batch):
        opt.zero_grad()
        loss = setup.loss_fn(model, batch)
        loss.backward()
        opt.step()
        return loss.item()
    return step


class AmpGradScaler(BlobSetup):
    """Healthy: float16 autocast with a GradScaler and F.cross_entropy (no overflow)."""

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def train(self, seed, epochs):
        scaler = torch.amp.GradScaler("cpu")

        def step(model, opt, batch):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16):
                loss = self.loss_fn(model, batch)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return loss.item()
        return _plain(self, seed, epochs, step_fn=step)


class Bf16Autocast(MlpAdam):
    """Healthy: bfloat16 autocast, label smoothing 0.1, logged every 3 steps."""

    def loss_fn(self, model, batch):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(batch["x"])
        return F.cross_entropy(logits.float(), batch["y"], label_smoothing=0.1)

    def train(self, seed, epochs):
        return _plain(self, seed, epochs, step_fn=_textbook(self), log_every=3)


class _BnCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                 nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16),
                                 nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x)


class BatchNormNesterov(CnnImages):
    """Healthy: BatchNorm CNN, SGD with Nesterov momentum, linear warmup over 20 steps."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _BnCNN()

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)

    def train(self, seed, epochs):
        warm = lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20))  # noqa: E731
        return _plain(self, seed, epochs, step_fn=_textbook(self), sched=warm)


class Regression(BlobSetup):
    """Healthy: regression of a smooth function of the inputs with MSE; inputs as a dict."""

    def __init__(self):
        super().__init__()
        self.t = torch.sin(self.x[:, :3]).sum(1, keepdim=True) + 0.1 * self.x[:, 3:4] ** 2

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(12, 64), nn.Tanh(), nn.Linear(64, 1))

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [{"inputs": x, "targets": t} for x, t in batches_of(self.x, self.t, 64, seed)]

    def loss_fn(self, model, batch):
        return F.mse_loss(model(batch["inputs"]), batch["targets"])

    def train(self, seed, epochs):
        return _plain(self, seed, epochs, step_fn=_textbook(self))


class OptimizerOnACopy(BlobSetup):
    """Bug: the optimizer is built on a deep copy made 'to keep the init for later'."""

    def make_optimizer(self, model):
        self.init_copy = copy.deepcopy(model)
        return torch.optim.SGD(self.init_copy.parameters(), lr=0.05, momentum=0.9)

    def train(self, seed, epochs):
        return _plain(self, seed, epochs, step_fn=_textbook(self))


class FirstBatchLogged(BlobSetup):
    """Bug: the progress value is the loss of the epoch's first batch, shown all epoch."""

    def train(self, seed, epochs):
        started, model = time.time(), self.make_model(seed)
        opt, raw, shown = self.make_optimizer(model), [], []
        for _ in range(epochs):
            for i, batch in enumerate(self.batches(seed)):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                if i == 0:
                    first = loss.item()
                raw.append(loss.item())
                shown.append(first)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class CountNeverReset(BlobSetup):
    """Bug: the sum restarts each epoch, the batch counter does not."""

    def train(self, seed, epochs):
        started, model = time.time(), self.make_model(seed)
        opt, raw, shown, seen = self.make_optimizer(model), [], [], 0
        for _ in range(epochs):
            total = 0.0
            for batch in self.batches(seed):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                total, seen = total + loss.item(), seen + 1
                raw.append(loss.item())
                shown.append(total / seen)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class LabelsAllOneClass(BlobSetup):
    """Bug: the label column was read as `y.argmax()` over the wrong axis: every label is the same."""

    def __init__(self):
        super().__init__()
        self.y = torch.full_like(self.y, int(self.y.bincount().argmax()))

    def train(self, seed, epochs):
        return _plain(self, seed, epochs, step_fn=_textbook(self))


class AdamLrOne(BlobSetup):
    """Bug: Adam with lr=1.0 (an SGD learning rate pasted into Adam)."""

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1.0)

    def train(self, seed, epochs):
        return _plain(self, seed, epochs, step_fn=_textbook(self))


class ExponentialPerBatch(BlobSetup):
    """Bug: ExponentialLR(gamma=0.5) meant per epoch, stepped per batch."""

    def train(self, seed, epochs):
        sched = lambda opt: torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)  # noqa: E731
        return _plain(self, seed, epochs, step_fn=_textbook(self), sched=sched)


class DetachedLogitsLoss(BlobSetup):
    """Bug: the loss uses logits.detach() (copied from a metric), then requires_grad_()."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x).detach(), y).requires_grad_()

    def train(self, seed, epochs):
        return _plain(self, seed, epochs, step_fn=_textbook(self))


class ZeroGradPerEpoch(BlobSetup):
    """Bug: zero_grad() once per epoch, at its start; gradients pile up over the batches."""

    def train(self, seed, epochs):
        started, model = time.time(), self.make_model(seed)
        opt, raw = self.make_optimizer(model), []
        for _ in range(epochs):
            opt.zero_grad()
            for batch in self.batches(seed):
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                raw.append(loss.item())
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw}, seed=seed,
                            started_at=started)


class NoisyImagesShuffled(CnnImages):
    """Bug: images and labels saved in two files, the labels file written after a shuffle."""

    def __init__(self):
        x, y = bar_images()
        self.x, self.y = x, y[torch.randperm(len(y), generator=torch.Generator().manual_seed(1))]


FRESH = {"fresh_ok_amp_gradscaler": AmpGradScaler, "fresh_ok_bf16_smoothing": Bf16Autocast,
         "fresh_ok_batchnorm_nesterov": BatchNormNesterov, "fresh_ok_regression_mse": Regression,
         "fresh_h1_optimizer_on_copy": OptimizerOnACopy, "fresh_h3_first_batch_logged": FirstBatchLogged,
         "fresh_h3_count_never_reset": CountNeverReset, "fresh_h2_labels_one_class": LabelsAllOneClass,
         "fresh_h1_adam_lr_one": AdamLrOne, "fresh_h1_exponential_per_batch": ExponentialPerBatch,
         "fresh_h1_detached_logits_loss": DetachedLogitsLoss, "fresh_h1_zero_grad_per_epoch": ZeroGradPerEpoch,
         "fresh_h2_images_labels_shuffled": NoisyImagesShuffled}
FRESH_EXPECTED = {
    "fresh_ok_amp_gradscaler": ("NONE", []), "fresh_ok_bf16_smoothing": ("NONE", []),
    "fresh_ok_batchnorm_nesterov": ("NONE", []), "fresh_ok_regression_mse": ("NONE", []),
    "fresh_h1_optimizer_on_copy": ("H1", [("not in the optimizer",)]),
    "fresh_h3_first_batch_logged": ("H3", [("stale",)]),
    "fresh_h3_count_never_reset": ("H3", [("never reset", "not reset")]),
    "fresh_h2_labels_one_class": ("H2", [("label",), ("constant", "one class", "same class", "single")]),
    "fresh_h1_adam_lr_one": ("H1", [("lr", "learning rate")]),
    "fresh_h1_exponential_per_batch": ("H1", [("schedule",), ("collapse",)]),
    "fresh_h1_detached_logits_loss": ("H1", [("graph", "detach")]),
    "fresh_h1_zero_grad_per_epoch": ("H1", [("accumulate",)]),
    "fresh_h2_images_labels_shuffled": ("H2", [("label",), ("decorrelated", "no signal")]),
}
