"""Second-set cases for the readings added from the misses of the eighth to the nineteenth
batches (issue h21), written before each reading, on models and data those batches do not
hold: each reading must fire on its defect and stay silent on the healthy look-alikes.

An averaged copy of the model whose loss is shown (`own.averaged`): a regression MLP whose
copy is torch's own `swa_utils.AveragedModel` with an EMA average, reported every 5 steps as
the mean since the previous report. A short horizon follows the model (honest, a choice); a
horizon far longer than the run leaves the copy near its init (H3); a frozen copy that never
moves is no average and is not read as one.
"""

import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

import labkit
from labkit.diagnosis.own.step2_h3.logcount import logger_check
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence


def _data(n=192, seed=11):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=g)
    return x, (x[:, :1] * x[:, 1:2] + torch.sin(x[:, 2:3]))


class _AveragedReport:
    """A regression MLP trained with AdamW; the progress bar every 5 steps shows the mean since
    the previous report of an averaged copy's loss (`self.copy_of(model)`) on each batch."""

    DECAY = 0.95

    def __init__(self):
        self.x, self.y = _data()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(5, 24), nn.Tanh(), nn.Linear(24, 1))

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=1e-2)

    def batches(self, seed):
        order = torch.randperm(len(self.x), generator=torch.Generator().manual_seed(seed))
        return [(self.x[i], self.y[i]) for i in order.split(24)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x), y)

    def copy_of(self, model):
        return AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(self.DECAY))

    def move(self, average, model):
        average.update_parameters(model)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        average = self.copy_of(model)
        raw, shown, since = [], [], []
        for epoch in range(epochs):
            for batch in self.batches(seed * 100 + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                self.move(average, model)
                with torch.no_grad():
                    since.append(self.loss_fn(average, batch).item())
                raw.append(loss.item())
                shown.append(sum(since) / len(since) if len(raw) % 5 == 0 else None)
                since = since if len(raw) % 5 else []
        return labkit.Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
            seed=seed,
            started_at=started,
        )


class _LongHorizon(_AveragedReport):
    DECAY = 0.9995  # a horizon of 2000 steps on a run of about 150


class _FrozenCopy(_AveragedReport):
    """A copy of the initial model that never moves (no average), its loss shown."""

    def copy_of(self, model):
        return copy.deepcopy(model).requires_grad_(False)

    def move(self, average, model):
        pass


def _logger(setup):
    ev = SeedEvidence(setup, 0)
    return logger_check(ev)


def test_an_averaged_copy_that_follows_the_model_is_an_honest_report():
    check = _logger(_AveragedReport())
    assert check.details["agree"], check.verdict
    assert "averaged copy" in check.verdict and "decay 0.95" in check.verdict


def test_an_averaged_copy_with_a_horizon_beyond_the_run_is_named_with_its_decay():
    check = _logger(_LongHorizon())
    assert not check.details["agree"]
    assert check.details["mechanism"] == "averaged_copy_shown", check.verdict
    assert "decay 0.9995" in check.verdict and "initial weights" in check.verdict


def test_a_frozen_copy_is_no_average_and_is_not_read_as_one():
    check = _logger(_FrozenCopy())
    assert not check.details["agree"] and check.details["mechanism"] != "averaged_copy_shown"
