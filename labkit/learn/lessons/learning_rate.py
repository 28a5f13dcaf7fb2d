"""Learning rate, measured (notebook `13_learning_rate`).

* `quadratic_descent`: gradient descent on f(w) = h w^2 / 2, where each step multiplies w
  by (1 - lr h): slow below lr = 1/h, oscillating above it, diverging past 2/h;
* `one_step_forecast`: the second-order picture on a real model, the predicted loss change
  -lr |g|^2 + lr^2 g.Hg / 2 next to the change one SGD step really makes;
* `first_updates`: the size of SGD's and Adam's first update, and what scaling the loss does;
* `gradient_noise`: how far a minibatch gradient strays from the full gradient, per batch size.
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn.functional as F

from ...bugs.inject import Trainer
from ...core.data import load
from .mechanism import reference_setup


def quadratic_descent(
    curvature: float = 1.0, lrs=(0.1, 1.0, 1.5, 2.1), w0: float = 1.0, steps: int = 20
) -> dict[float, list[float]]:
    """lr -> the weight w after 0..steps plain gradient steps on h w^2 / 2, from w0."""
    out = {}
    for lr in lrs:
        w, path = w0, []
        for _ in range(steps + 1):
            path.append(w)
            w -= lr * curvature * w  # the gradient of h w^2 / 2 is h w
        out[lr] = path
    return out


def _loss(model, batch):
    return F.cross_entropy(model(batch[0]), batch[1])


def one_step_forecast(lrs=(0.01, 0.1, 1.0, 10.0, 30.0), seed: int = 0) -> dict:
    """On the default classifier at init and its first batch: |g|^2, the curvature along g
    (g.Hg / |g|^2), and per lr the predicted and the actual change of the batch's loss after
    one plain gradient step."""
    trainer = Trainer(seed=seed)
    model, first = trainer.ctx.model, trainer.batch(0)
    batch = (first["x"], first["y"])
    params = list(model.parameters())
    grads = torch.autograd.grad(_loss(model, batch), params, create_graph=True)
    gg = sum((g * g).sum() for g in grads)
    hvp = torch.autograd.grad(gg / 2, params)  # d(|g|^2 / 2)/dw = H g
    g_sq = float(gg.detach())
    g_h_g = float(sum((g.detach() * h).sum() for g, h in zip(grads, hvp)))
    before = float(_loss(model, batch).detach())
    rows = []
    for lr in lrs:
        twin = copy.deepcopy(model)
        with torch.no_grad():
            for p, g in zip(twin.parameters(), grads):
                p -= lr * g.detach()
        actual = float(_loss(twin, batch).detach()) - before
        rows.append({"lr": lr, "predicted": -lr * g_sq + 0.5 * lr * lr * g_h_g, "actual": actual})
    curvature = g_h_g / g_sq
    return {
        "grad_sq": g_sq,
        "curvature": curvature,
        "best_lr": 1 / curvature,
        "limit_lr": 2 / curvature,
        "loss": before,
        "rows": rows,
    }


def first_updates(lr: float = 1e-3, scales=(1.0, 1000.0), seed: int = 0) -> list[dict]:
    """One step of SGD and of Adam at the same lr from the same weights, with the loss
    multiplied by `scale`: the size of the update (its norm, the largest single change, the
    share of weights with a non-zero gradient and the median change among those)."""
    rows = []
    for scale in scales:
        for name in ("sgd", "adam"):
            model, opt, batch = reference_setup(seed, lr=lr, optimizer=name)
            before = [p.detach().clone() for p in model.parameters()]
            opt.zero_grad()
            (scale * _loss(model, batch)).backward()
            has_grad = torch.cat([(p.grad != 0).flatten() for p in model.parameters()])
            opt.step()
            deltas = torch.cat(
                [(p.detach() - b).flatten() for p, b in zip(model.parameters(), before)]
            )
            rows.append(
                {
                    "optimizer": name,
                    "scale": int(scale) if scale == int(scale) else scale,
                    "update_norm": float(deltas.norm()),
                    "largest": float(deltas.abs().max()),
                    "with_grad": float(has_grad.float().mean()),
                    "median_change": float(deltas.abs()[has_grad].median()),
                }
            )
    return rows


def gradient_noise(batch_sizes=(8, 32, 128, 512), draws: int = 64, seed: int = 0) -> list[dict]:
    """Per batch size B: the root-mean-square distance between a minibatch gradient (rows
    drawn with replacement) and the full-data gradient, on the reference MLP at init."""
    model, _, _ = reference_setup(seed)
    train = load("blobs", seed=seed).train
    x, y = train["x"], train["y"]
    params = list(model.parameters())

    def flat_grad(idx):
        grads = torch.autograd.grad(F.cross_entropy(model(x[idx]), y[idx]), params)
        return torch.cat([g.flatten() for g in grads])

    full = flat_grad(torch.arange(len(y)))
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for b in batch_sizes:
        sq = [
            float((flat_grad(torch.randint(0, len(y), (b,), generator=gen)) - full).pow(2).sum())
            for _ in range(draws)
        ]
        noise = math.sqrt(sum(sq) / draws)
        rows.append(
            {
                "B": b,
                "noise": noise,
                "noise_x_sqrt_B": noise * math.sqrt(b),
                "full_norm": float(full.norm()),
            }
        )
    return rows
