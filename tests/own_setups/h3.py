"""H3 setups: training is healthy, the number the loop reports is not the loss it optimises."""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from labkit import Run

from .common import MLP
from .healthy import BlobSetup


class _Loop(BlobSetup):
    """A healthy loop whose progress-bar value comes from `self.shown(...)`; each bug
    overrides only how that value is kept."""

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        log = {"step": [], "loss_raw": [], "loss_reported": [], "batch_id": []}
        self.state = {}
        for epoch in range(epochs):
            batches = self.batches(seed)
            self.epoch_start(epoch)
            for i, batch in enumerate(batches):
                loss = self.loss_fn(model, batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
                log["step"].append(len(log["step"]))
                log["loss_raw"].append(loss.item())
                log["loss_reported"].append(self.shown(loss, i, len(batches)))
                log["batch_id"].append(i)
        return Run.from_log(log, seed=seed, started_at=started)


class StaleEpochMean(_Loop):
    """The progress bar shows `avg`, which is updated only when an epoch ends: during epoch e
    it repeats epoch e-1's mean (0.0 during the first)."""

    def epoch_start(self, epoch):
        if epoch > 0:
            self.state["avg"] = self.state["total"] / self.state["n"]
        self.state.setdefault("avg", 0.0)
        self.state["total"], self.state["n"] = 0.0, 0

    def shown(self, loss, i, n):
        self.state["total"] += loss.item()
        self.state["n"] += 1
        return self.state["avg"]


class HardcodedDivisor(_Loop):
    """Once per epoch: the sum of batch losses divided by 100 (copied from a script whose
    epochs had 100 batches); this data has 12."""

    def epoch_start(self, epoch):
        self.state["total"] = 0.0

    def shown(self, loss, i, n):
        self.state["total"] += loss.item()
        return self.state["total"] / 100 if i == n - 1 else None


class SumNotMean(_Loop):
    """The tutorial pattern `running_loss += loss.item() * inputs.size(0)`, printed at the end
    of the epoch without dividing by the number of samples."""

    def epoch_start(self, epoch):
        self.state["running_loss"] = 0.0

    def shown(self, loss, i, n):
        self.state["running_loss"] += loss.item() * self.batch_size
        return self.state["running_loss"] if i == n - 1 else None


class NeverReset(_Loop):
    """`running = 0.0` sits above the epoch loop: the sum carries over, the divisor is the
    number of batches of this epoch; printed every 4 batches."""

    def epoch_start(self, epoch):
        self.state.setdefault("running", 0.0)

    def shown(self, loss, i, n):
        self.state["running"] += loss.item()
        return self.state["running"] / (i + 1) if i % 4 == 3 else None


class LoggedAfterStep(BlobSetup):
    """The loss is recomputed for the log after optimizer.step(): the model has already
    learned from this batch, so the curve looks better than the training is."""

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        log = {"step": [], "loss_raw": [], "loss_reported": [], "batch_id": []}
        for epoch in range(epochs):
            total = 0.0
            for i, (x, y) in enumerate(self.batches(seed)):
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                with torch.no_grad():
                    total += F.cross_entropy(model(x), y).item()
                log["step"].append(len(log["step"]))
                log["loss_raw"].append(loss.item())
                log["loss_reported"].append(total / (i + 1))
                log["batch_id"].append(i)
        return Run.from_log(log, seed=seed, started_at=started)


class EvalModeTensor(BlobSetup):
    """The model has dropout. For a 'clean' progress bar, the loop logs the loss of an
    eval-mode forward (no dropout) on the batch, not the loss it backpropagates."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP(dropout=0.5)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for epoch in range(epochs):
            for x, y in self.batches(seed + epoch):
                model.eval()
                with torch.no_grad():
                    clean = F.cross_entropy(model(x), y).item()
                model.train()
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                raw.append(loss.item())
                shown.append(clean)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


H3 = {"h3_stale_epoch_mean": StaleEpochMean, "h3_hardcoded_divisor": HardcodedDivisor,
      "h3_sum_not_mean": SumNotMean, "h3_accumulator_never_reset": NeverReset,
      "h3_logged_after_step": LoggedAfterStep, "h3_eval_mode_tensor": EvalModeTensor}
