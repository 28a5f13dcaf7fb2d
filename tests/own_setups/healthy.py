"""Healthy controls: plain loops with no defect. labkit.diagnose must not convict any of them.

`BlobSetup` is also the base the buggy setups of h1/h2/h3 start from: a realistic
script where each bug changes one method, the way a bug lives in one place of a file.
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from labkit import Run

from .common import MLP, SmallCNN, TinyGRULM, bar_images, batches_of, blob_mixture, markov_tokens, split


class BlobSetup:
    """MLP on the blob mixture, SGD with momentum, progress bar = epoch running mean."""

    batch_size = 64

    def __init__(self):
        (self.x, self.y), (self.val_x, self.val_y) = split(*blob_mixture())

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP()

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def batches(self, seed):
        return batches_of(self.x, self.y, self.batch_size, seed)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        log = {"step": [], "loss_raw": [], "loss_reported": [], "batch_id": []}
        step = 0
        for epoch in range(epochs):
            total = 0.0
            for i, batch in enumerate(self.batches(seed)):
                loss = self.loss_fn(model, batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item()
                log["step"].append(step)
                log["loss_raw"].append(loss.item())
                log["loss_reported"].append(total / (i + 1))
                log["batch_id"].append(i)
                step += 1
        return Run.from_log(log, seed=seed, started_at=started)


class MlpAdam(BlobSetup):
    """Healthy: dict batches, Adam, the reported value logged every 5 steps (mean of the window)."""

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [{"x": x, "y": y} for x, y in batches_of(self.x, self.y, 32, seed)]

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch["x"]), batch["y"])

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown, window = [], [], []
        for epoch in range(epochs):
            for batch in self.batches(seed + epoch):
                opt.zero_grad(set_to_none=True)
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                raw.append(loss.item())
                window.append(loss.item())
                if len(raw) % 5 == 0:
                    shown.append(sum(window) / len(window))
                    window = []
                else:
                    shown.append(None)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


class MlpSgdCosine(BlobSetup):
    """Healthy: SGD momentum, a cosine schedule to 0 over the run, clipping at 1.0, and the
    epoch mean printed once per epoch."""

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        batches = self.batches(seed)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(batches))
        log = {"step": [], "loss_raw": [], "loss_reported": [], "batch_id": []}
        for epoch in range(epochs):
            total = 0.0
            for i, (x, y) in enumerate(batches):
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                opt.step()
                sched.step()
                total += loss.item()
                log["step"].append(len(log["step"]))
                log["loss_raw"].append(loss.item())
                log["loss_reported"].append(total / len(batches) if i == len(batches) - 1 else None)
                log["batch_id"].append(i)
        return Run.from_log(log, seed=seed, started_at=started)


class CnnImages:
    """Healthy: a small CNN on synthetic stroke images, Adam, per-sample weighted epoch mean."""

    def __init__(self):
        self.x, self.y = bar_images()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return SmallCNN()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def batches(self, seed):
        return batches_of(self.x, self.y, 48, seed)

    def loss_fn(self, model, batch):
        images, labels = batch
        return F.cross_entropy(model(images), labels)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, reported = [], []
        for epoch in range(epochs):
            running, seen = 0.0, 0
            for images, labels in self.batches(seed + 100 * epoch):
                opt.zero_grad()
                loss = F.cross_entropy(model(images), labels)
                loss.backward()
                opt.step()
                running += loss.item() * len(labels)
                seen += len(labels)
                raw.append(loss.item())
                reported.append(running / seen)
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw,
                             "loss_reported": reported}, seed=seed, started_at=started)


class DataLoaderLoop(BlobSetup):
    """Healthy: a DataLoader with its own seeded generator, AdamW, an exponential moving
    average as the progress-bar value (bias-corrected, as tqdm-style loggers do)."""

    def _loader(self, seed):
        gen = torch.Generator().manual_seed(seed)
        return DataLoader(TensorDataset(self.x, self.y), batch_size=50, shuffle=True, generator=gen)

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)

    def batches(self, seed):
        return list(self._loader(seed))

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        loader = self._loader(seed)
        raw, smooth, ema, beta = [], [], 0.0, 0.9
        for _ in range(epochs):
            for xb, yb in loader:
                opt.zero_grad()
                loss = self.loss_fn(model, [xb, yb])
                loss.backward()
                opt.step()
                raw.append(loss.item())
                ema = beta * ema + (1 - beta) * loss.item()
                smooth.append(ema / (1 - beta ** len(raw)))
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": smooth},
                            seed=seed, started_at=started)


class AccumulateTwo(BlobSetup):
    """Healthy: gradient accumulation over two batches (loss / 2, step every second batch),
    dropout in the model, one reported value per optimizer step."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP(dropout=0.1)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        log = {"step": [], "loss_raw": [], "loss_reported": []}
        for _ in range(epochs):
            for i, batch in enumerate(self.batches(seed)):
                loss = self.loss_fn(model, batch)
                (loss / 2).backward()
                log["step"].append(len(log["step"]))
                log["loss_raw"].append(loss.item())
                if i % 2 == 1:
                    opt.step()
                    opt.zero_grad()
                    log["loss_reported"].append((log["loss_raw"][-1] + log["loss_raw"][-2]) / 2)
                else:
                    log["loss_reported"].append(None)
        return Run.from_log(log, seed=seed, started_at=started)


class GruLanguageModel:
    """Healthy: a tiny GRU language model, dict batches with input_ids and labels."""

    def __init__(self):
        self.ids = markov_tokens()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyGRULM()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def batches(self, seed):
        order = torch.randperm(len(self.ids), generator=torch.Generator().manual_seed(seed))
        return [{"input_ids": self.ids[i, :-1], "labels": self.ids[i, 1:]} for i in order.split(32)]

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"])  # (B, T, V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["labels"].reshape(-1))

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        raw, shown = [], []
        for _ in range(epochs):
            total = 0.0
            batches = self.batches(seed)
            for i, batch in enumerate(batches):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                total += loss.item()
                raw.append(loss.item())
                shown.append(total / (i + 1))
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": shown},
                            seed=seed, started_at=started)


HEALTHY = {"ok_blob_sgd": BlobSetup, "ok_mlp_adam": MlpAdam, "ok_sgd_cosine_clip": MlpSgdCosine,
           "ok_cnn_images": CnnImages, "ok_dataloader_ema": DataLoaderLoop,
           "ok_grad_accumulation": AccumulateTwo, "ok_gru_lm": GruLanguageModel}
