"""A small CNN on synthetic images, with a bug in the number it prints.

The data: 16x16 one-channel images of three shapes (a ring, a cross, a filled square) at a
random place, with pixel noise. The model: two conv blocks and a linear classifier, Adam.
The loop prints the epoch loss, the way many tutorials do.

The bug (an H3: the training is fine, the printed number is not): the epoch loss is the
sum of the batch *means* divided by ``len(train_set)``, the number of images, instead
of the number of batches. The printed curve sits 32x too low and looks converged from
the first epoch. ``CnnImages(fixed=True)`` divides by ``len(loader)``.

    python examples/cnn_synthetic_images.py
    labkit triage --setup examples/cnn_synthetic_images.py:CnnImages
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import labkit

SIZE, N_CLASSES, BATCH_SIZE = 16, 3, 32


def make_images(n=640, seed=3, noise=0.35):
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, N_CLASSES, (n,), generator=gen)
    x = noise * torch.randn(n, 1, SIZE, SIZE, generator=gen)  # (n, 1, 16, 16)
    rows, cols = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")
    centre = torch.randint(5, SIZE - 5, (n, 2), generator=gen)
    for i in range(n):
        dr, dc = rows - centre[i, 0], cols - centre[i, 1]
        if y[i] == 0:  # a ring of radius 3
            shape = ((dr**2 + dc**2).float().sqrt() - 3).abs() < 0.8
        elif y[i] == 1:  # a cross
            shape = ((dr == 0) & (dc.abs() <= 3)) | ((dc == 0) & (dr.abs() <= 3))
        else:  # a filled square
            shape = (dr.abs() <= 2) & (dc.abs() <= 2)
        x[i, 0] += shape.float()
    return x, y


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)
        )  # (B, 8, 8, 8)
        self.block2 = nn.Sequential(
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)
        )  # (B, 16, 4, 4)
        self.classifier = nn.Linear(16 * 4 * 4, N_CLASSES)

    def forward(self, x):  # (B, 1, 16, 16) -> (B, 3)
        return self.classifier(self.block2(self.block1(x)).flatten(1))


class CnnImages:
    def __init__(self, fixed: bool = False):
        self.fixed = fixed
        self.x, self.y = make_images()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return SmallCNN()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        order = torch.randperm(len(self.x), generator=torch.Generator().manual_seed(seed))
        return [(self.x[i], self.y[i]) for i in order.split(BATCH_SIZE)]

    def loss_fn(self, model, batch):
        images, labels = batch
        return F.cross_entropy(model(images), labels)

    def train(self, seed, epochs):
        started = time.time()
        model, raw, printed = self.make_model(seed), [], []
        optimizer = self.make_optimizer(model)
        for epoch in range(epochs):
            loader = self.batches(seed + epoch)
            running_loss = 0.0
            for i, (images, labels) in enumerate(loader):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(images), labels)
                loss.backward()
                optimizer.step()
                running_loss += loss.item()
                raw.append(loss.item())
                printed.append(None)
            # BUG: len(self.x) is the number of images; the sum is over batch means
            printed[-1] = running_loss / (len(loader) if self.fixed else len(self.x))
        return labkit.Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": printed},
            seed=seed,
            started_at=started,
        )


if __name__ == "__main__":
    print(labkit.diagnose(CnnImages(), seeds=(0, 1)))
