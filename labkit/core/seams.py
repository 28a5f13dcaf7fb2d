"""The seams of the reference loop: the default implementation of each named step.

Setup seams run once:  data(config) -> Dataset, model(config, data) -> nn.Module,
                       optimizer(config, model) -> (optimizer, scheduler or None)
Step seams run every step on a `StepContext`:
                       forward -> loss -> backward -> step -> log

A bug from `labkit.bugs` swaps exactly one of these for a broken version.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import data as data_mod
from .config import Config
from .data import IGNORE, Dataset
from ..errors import suggest
from .models import MLP, TinyCausalLM

SEAM_NAMES = ("data", "model", "optimizer", "forward", "loss", "backward", "step", "log")


@dataclass
class StepContext:
    """Everything a step seam may read or change. One object lives for the whole run."""

    config: Config
    data: Dataset
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: object | None
    scaler: torch.amp.GradScaler | None
    steps_per_epoch: int
    step: int = 0
    epoch: int = 0
    batch_id: int = 0
    batch: dict | None = None
    output: object = None
    loss: torch.Tensor | None = None
    loss_value: float = math.nan  # loss.item() of this batch: the raw loss
    log_sum: float = 0.0  # the logger's running sum over the epoch so far
    log_count: int = 0  # ... and how many steps it has seen

    @property
    def last_batch_of_epoch(self) -> bool:
        return self.batch_id == self.steps_per_epoch - 1


# ---- default seams -------------------------------------------------------


def make_data(config: Config) -> Dataset:
    """Build the task's dataset from the config's seed (nothing is downloaded)."""
    if config.dataset == "tokens":
        return data_mod.load(
            "tokens",
            vocab_size=config.vocab_size,
            response_only=config.response_only,
            seed=config.seed,
        )
    if config.dataset == "imbalanced":
        return data_mod.load("imbalanced", seed=config.seed)
    return data_mod.load("blobs", n_classes=config.n_classes, seed=config.seed)


def make_model(config: Config, data: Dataset) -> nn.Module:
    if data.kind == "lm":
        return TinyCausalLM(
            vocab_size=data.n_classes,
            d_model=config.hidden // 2,
            n_layer=config.depth,
            n_head=2,
            max_len=data.info["max_len"],
            dropout=config.dropout,
        )
    in_dim = data.train["x"].shape[1]
    return MLP(
        in_dim=in_dim,
        hidden=config.hidden,
        n_classes=data.n_classes,
        depth=config.depth,
        dropout=config.dropout,
    )


def make_optimizer(config: Config, model: nn.Module, params=None):
    """The optimizer over `params` (all of the model's by default) and its per-epoch scheduler."""
    params = list(model.parameters()) if params is None else list(params)
    if config.optimizer == "sgd":
        opt = torch.optim.SGD(
            params, lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
        )
    else:
        opt = torch.optim.Adam(params, lr=config.lr, weight_decay=config.weight_decay)
    return opt, make_scheduler(config, opt)


def make_scheduler(config: Config, opt):
    if config.scheduler == "step":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=config.step_size, gamma=config.gamma)
    if config.scheduler == "cosine":
        n_epochs = max(1, math.ceil(total_steps(config, None) / steps_per_epoch(config, None)))
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=n_epochs)
    return None


def forward(ctx: StepContext):
    b = ctx.batch
    if ctx.data.kind == "lm":
        return ctx.model(b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"])
    return ctx.model(b["x"])


def compute_loss(ctx: StepContext) -> torch.Tensor:
    if ctx.data.kind == "lm":
        return ctx.output.loss  # the model shifted the labels itself (HF convention)
    return F.cross_entropy(ctx.output, ctx.batch["y"])


def backward(ctx: StepContext) -> None:
    """Clear last step's gradients, then backpropagate (through the GradScaler under fp16)."""
    ctx.optimizer.zero_grad(set_to_none=True)
    if ctx.scaler is not None:
        ctx.scaler.scale(ctx.loss).backward()
    else:
        ctx.loss.backward()


def optimizer_step(ctx: StepContext) -> None:
    """Step the optimizer (through the GradScaler under fp16); the scheduler once per epoch."""
    if ctx.scaler is not None:
        ctx.scaler.step(ctx.optimizer)
        ctx.scaler.update()
    else:
        ctx.optimizer.step()
    if ctx.scheduler is not None and ctx.last_batch_of_epoch:
        ctx.scheduler.step()


def log_epoch_mean(ctx: StepContext) -> float:
    """What the logger shows: the mean raw loss over the epoch so far."""
    if ctx.batch_id == 0:
        ctx.log_sum, ctx.log_count = 0.0, 0
    ctx.log_sum += ctx.loss_value
    ctx.log_count += 1
    return ctx.log_sum / ctx.log_count


@dataclass(frozen=True)
class Seams:
    """The reference loop's named steps, one function each; a zoo bug replaces exactly one.

    `seams.replace(loss=my_loss)` gives a copy with one seam swapped, and refuses a name
    that is not a seam.
    """

    data: Callable = make_data
    model: Callable = make_model
    optimizer: Callable = make_optimizer
    forward: Callable = forward
    loss: Callable = compute_loss
    backward: Callable = backward
    step: Callable = optimizer_step
    log: Callable = log_epoch_mean

    def replace(self, **seams) -> Seams:
        for name in seams:
            if name not in SEAM_NAMES:
                raise ValueError(
                    f"seam={name!r} is not a seam of the reference loop; seams are "
                    f"{', '.join(SEAM_NAMES)}.{suggest(name, SEAM_NAMES)}"
                )
        return dataclasses.replace(self, **seams)


# ---- batches and evaluation ------------------------------------------------


def steps_per_epoch(config: Config, data: Dataset | None) -> int:
    n = len(data) if data is not None else 1024
    return max(1, math.ceil(n / config.batch_size))


def total_steps(config: Config, data: Dataset | None) -> int:
    return config.epochs * steps_per_epoch(config, data) if config.epochs else config.steps


def batch_indices(config: Config, n: int, epoch: int, batch_id: int) -> torch.Tensor:
    """Which training rows make batch `batch_id` of `epoch`: a pure function of the seed."""
    gen = torch.Generator().manual_seed(config.seed * 100_003 + epoch)
    order = torch.randperm(n, generator=gen)
    return order[batch_id * config.batch_size : (batch_id + 1) * config.batch_size]


def make_batch(split: dict, idx: torch.Tensor, config: Config, batch_id: int) -> dict:
    batch = {k: v[idx].to(config.device) for k, v in split.items()}
    if "x" in batch and config.input_scale != 1.0:
        batch["x"] = batch["x"] * config.input_scale
    batch["batch_id"] = batch_id
    return batch


def _autocast(config: Config):
    if config.precision == "fp16":
        return torch.autocast(config.device.split(":")[0], dtype=torch.float16)
    return contextlib.nullcontext()


@torch.no_grad()
def evaluate(model: nn.Module, split: dict, config: Config, kind: str) -> dict[str, float]:
    """Loss and accuracy over a whole split in eval() mode (token-weighted for LMs)."""
    was_training = model.training
    model.eval()
    try:
        batch = make_batch(split, torch.arange(len(next(iter(split.values())))), config, -1)
        with _autocast(config):
            if kind == "lm":
                logits = model(batch["input_ids"], attention_mask=batch["attention_mask"]).logits
                target = batch["labels"][:, 1:]
                logits = logits[:, :-1].float()
                mask = target != IGNORE
                n = int(mask.sum())
                loss = F.cross_entropy(
                    logits.reshape(-1, logits.size(-1)),
                    target.reshape(-1),
                    ignore_index=IGNORE,
                    reduction="sum",
                )
                correct = ((logits.argmax(-1) == target) & mask).sum()
                # Independent of the labels tensor: loss on response tokens only, from the
                # response mask, so a labels bug cannot hide in this number.
                resp = batch["response_mask"][:, 1:]
                resp_loss = F.cross_entropy(logits[resp], batch["input_ids"][:, 1:][resp])
                return {
                    "loss": float(loss) / n if n else math.nan,
                    "acc": float(correct) / n if n else math.nan,
                    "response_loss": float(resp_loss),
                }
            logits = model(batch["x"]).float()
            y = batch["y"]
            pred = logits.argmax(1)
            out = {
                "loss": float(F.cross_entropy(logits, y)),
                "acc": float((pred == y).float().mean()),
            }
            if config.dataset == "imbalanced":
                minority = y == 1
                out["minority_recall"] = (
                    float((pred[minority] == 1).float().mean()) if minority.any() else math.nan
                )
            return out
    finally:
        model.train(was_training)
