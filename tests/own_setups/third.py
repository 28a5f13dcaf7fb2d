"""A third held-out batch: eight plain-PyTorch setups written by a reviewer of the setup
triage, run once against the rules as they stood. Two were missed then (an LR of 1e-8: UNKNOWN;
a softmax before cross_entropy: NONE, a defect acquitted); the rules `lr_tiny`, `loss_floor`
and `other_params` came from them. Nothing here uses labkit but `Run.from_log`."""
import copy
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import labkit


def data(n=1024, seed=5):
    g = torch.Generator().manual_seed(seed)
    c = 2.0 * torch.randn(15, 10, generator=g)
    k = torch.randint(0, 15, (n,), generator=g)
    return c[k] + torch.randn(n, 10, generator=g), k % 5


X, Y = data()


class Base:
    lr = 0.05
    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(10, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 5))
    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)
    def batches(self, seed):
        o = torch.randperm(len(X), generator=torch.Generator().manual_seed(seed))
        return [(X[i], Y[i]) for i in o.split(32)]
    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])
    def step(self, model, opt, batch):
        opt.zero_grad(); loss = self.loss_fn(model, batch); loss.backward(); opt.step(); return loss
    def train(self, seed, epochs):
        t = time.time(); model = self.make_model(seed); opt = self.make_optimizer(model)
        raw, rep = [], []
        for e in range(epochs):
            tot = 0.0
            for i, b in enumerate(self.batches(seed * 1000 + e)):
                loss = self.step(model, opt, b)
                raw.append(loss.item()); tot += loss.item(); rep.append(self.report(tot, i, raw))
        return labkit.Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": rep},
                                   seed=seed, started_at=t)
    def report(self, tot, i, raw):
        return tot / (i + 1)


class Healthy(Base): pass


class ClipToZero(Base):  # H1: clipping with max_norm=0
    def step(self, model, opt, batch):
        opt.zero_grad(); loss = self.loss_fn(model, batch); loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.0); opt.step(); return loss


class OptimizerOnCopy(Base):  # H1: optimizer built on a deepcopy of the model
    def make_optimizer(self, model):
        return torch.optim.Adam(copy.deepcopy(model).parameters(), lr=3e-3)


class TinyLR(Base):  # H1: LR far too small
    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-8)


class ReportFirstBatchOfEpoch(Base):  # H3: the logger shows the epoch's first batch loss
    def report(self, tot, i, raw):
        return raw[len(raw) - 1 - i]


class LabelsAllZero(Base):  # H2: every label is class 0 (a broken label column)
    def batches(self, seed):
        return [(x, torch.zeros_like(y)) for x, y in super().batches(seed)]
    def train(self, seed, epochs):
        t = time.time(); model = self.make_model(seed); opt = self.make_optimizer(model); raw = []
        for e in range(epochs):
            for b in self.batches(seed * 1000 + e):
                loss = self.step(model, opt, b); raw.append(loss.item())
        return labkit.Run.from_log({"step": list(range(len(raw))), "loss_raw": raw}, seed=seed, started_at=t)


class SoftmaxThenCE(Base):  # H1 (loss): softmax applied before cross_entropy -> weak gradients
    def loss_fn(self, model, batch):
        return F.cross_entropy(F.softmax(model(batch[0]), -1), batch[1])


class BatchStatsDrift(Base):  # healthy with BatchNorm and dropout
    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(10, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, 5))


THIRD_CASES = {"healthy_tanh_adam": ("NONE", Healthy), "healthy_bn_dropout": ("NONE", BatchStatsDrift),
         "clip_to_zero": ("H1", ClipToZero), "optimizer_on_copy": ("H1", OptimizerOnCopy),
         "tiny_lr": ("H1", TinyLR), "report_first_batch": ("H3", ReportFirstBatchOfEpoch),
         "labels_all_zero": ("H2", LabelsAllZero), "softmax_then_ce": ("H1", SoftmaxThenCE)}


THIRD = {f"third_{name}": cls for name, (_, cls) in THIRD_CASES.items()}


THIRD_EXPECTED = {
    "third_healthy_tanh_adam": ("NONE", []), "third_healthy_bn_dropout": ("NONE", []),
    "third_clip_to_zero": ("H1", [("clip",), ("to 0", "zero")]),
    "third_optimizer_on_copy": ("H1", [("not in the optimizer",), ("copy", "other")]),
    "third_tiny_lr": ("H1", [("learning rate", "lr"), ("too small", "tiny")]),
    "third_report_first_batch": ("H3", [("stale", "earlier")]),
    "third_labels_all_zero": ("H2", [("label",), ("constant", "same")]),
    "third_softmax_then_ce": ("H1", [("floor",), ("softmax", "logits")]),
}
