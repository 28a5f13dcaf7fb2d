"""A DataLoader-based classifier, the way a first PyTorch project is written, with a bug.

The data: 1,200 points in 8 dimensions, 4 classes, each class two Gaussian blobs (so a
linear model is not enough). A TensorDataset, a shuffling DataLoader with its own
seeded generator, an MLP, SGD with momentum, and a progress line per epoch.

The bug (leave it in and let labkit find it): during a refactor, ``optimizer.zero_grad()``
moved below ``loss.backward()``. Every step then sees cleared gradients and the model
never moves. ``DataLoaderClassifier(fixed=True)`` is the same script with the two lines
in the right order.

    python examples/dataloader_classifier.py          # triage the buggy script
    labkit triage --setup examples/dataloader_classifier.py:DataLoaderClassifier
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import labkit

N_FEATURES, N_CLASSES, BATCH_SIZE = 8, 4, 64


def make_data(n=1200, seed=2024):
    gen = torch.Generator().manual_seed(seed)
    centres = 3.0 * torch.randn(2 * N_CLASSES, N_FEATURES, generator=gen)  # two blobs per class
    blob = torch.randint(0, 2 * N_CLASSES, (n,), generator=gen)
    x = centres[blob] + torch.randn(n, N_FEATURES, generator=gen)  # (n, 8)
    return x, blob % N_CLASSES  # (n,) labels


class DataLoaderClassifier:
    def __init__(self, fixed: bool = False):
        self.fixed = fixed
        self.dataset = TensorDataset(*make_data())

    def _loader(self, seed):
        gen = torch.Generator().manual_seed(seed)
        return DataLoader(self.dataset, batch_size=BATCH_SIZE, shuffle=True, generator=gen)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Linear(N_FEATURES, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, N_CLASSES),
        )

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def batches(self, seed):
        return list(self._loader(seed))

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        optimizer = self.make_optimizer(model)
        loader = self._loader(seed)
        log = {"step": [], "loss_raw": [], "loss_reported": [], "batch_id": []}
        for epoch in range(epochs):
            running = 0.0
            for i, (x, y) in enumerate(loader):
                if self.fixed:
                    optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                if not self.fixed:
                    optimizer.zero_grad()  # BUG: moved below backward() in a refactor
                optimizer.step()
                running += loss.item()
                log["step"].append(len(log["step"]))
                log["loss_raw"].append(loss.item())
                log["loss_reported"].append(running / (i + 1))
                log["batch_id"].append(i)
        return labkit.Run.from_log(log, seed=seed, started_at=started)


if __name__ == "__main__":
    print(labkit.diagnose(DataLoaderClassifier(), seeds=(0, 1)))
