"""The reference training loop, built from named seams so a bug can replace exactly one.

Setup seams run once:  data(config) -> Dataset, model(config, data) -> nn.Module,
                       optimizer(config, model) -> (optimizer, scheduler or None)
Step seams run every step on a `StepContext`:
                       forward -> loss -> backward -> step -> log

``train(config)`` returns a `Run` whose per-step table records, for every step,
raw and reported loss, learning rate, gradient and update norms (total and per
layer group), token counts for LM runs and the AMP scale for fp16 runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import data as data_mod
from ._hash import hash_json, hash_module
from .config import Config
from .data import IGNORE, Dataset
from .errors import suggest
from .models import MLP, TinyCausalLM
from .record import NormRecorder
from .run import Run

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
        return data_mod.make_tokens(vocab_size=config.vocab_size,
                                    response_only=config.response_only, seed=config.seed)
    if config.dataset == "imbalanced":
        return data_mod.make_imbalanced(seed=config.seed)
    return data_mod.make_blobs(n_classes=config.n_classes, seed=config.seed)


def make_model(config: Config, data: Dataset) -> nn.Module:
    if data.kind == "lm":
        return TinyCausalLM(vocab_size=data.n_classes, d_model=config.hidden // 2,
                            n_layer=config.depth, n_head=2, max_len=data.info["max_len"],
                            dropout=config.dropout)
    in_dim = data.train["x"].shape[1]
    return MLP(in_dim=in_dim, hidden=config.hidden, n_classes=data.n_classes,
               depth=config.depth, dropout=config.dropout)


def make_optimizer(config: Config, model: nn.Module, params=None):
    """The optimizer over `params` (all of the model's by default) and its per-epoch scheduler."""
    params = list(model.parameters()) if params is None else list(params)
    if config.optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=config.lr, momentum=config.momentum,
                              weight_decay=config.weight_decay)
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
    data: Callable = make_data
    model: Callable = make_model
    optimizer: Callable = make_optimizer
    forward: Callable = forward
    loss: Callable = compute_loss
    backward: Callable = backward
    step: Callable = optimizer_step
    log: Callable = log_epoch_mean

    def replace(self, **seams) -> "Seams":
        for name in seams:
            if name not in SEAM_NAMES:
                raise ValueError(f"seam={name!r} is not a seam of the reference loop; seams are "
                                 f"{', '.join(SEAM_NAMES)}.{suggest(name, SEAM_NAMES)}")
        return dataclasses.replace(self, **seams)


# ---- the loop ------------------------------------------------------------

def steps_per_epoch(config: Config, data: Dataset | None) -> int:
    n = len(data) if data is not None else 1024
    return max(1, math.ceil(n / config.batch_size))


def total_steps(config: Config, data: Dataset | None) -> int:
    return config.epochs * steps_per_epoch(config, data) if config.epochs else config.steps


def batch_indices(config: Config, n: int, epoch: int, batch_id: int) -> torch.Tensor:
    """Which training rows make batch `batch_id` of `epoch`: a pure function of the seed."""
    gen = torch.Generator().manual_seed(config.seed * 100_003 + epoch)
    order = torch.randperm(n, generator=gen)
    return order[batch_id * config.batch_size:(batch_id + 1) * config.batch_size]


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
                loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), target.reshape(-1),
                                       ignore_index=IGNORE, reduction="sum")
                correct = ((logits.argmax(-1) == target) & mask).sum()
                # Independent of the labels tensor: loss on response tokens only, from the
                # response mask, so a labels bug cannot hide in this number.
                resp = batch["response_mask"][:, 1:]
                resp_loss = F.cross_entropy(logits[resp], batch["input_ids"][:, 1:][resp])
                return {"loss": float(loss) / n if n else math.nan,
                        "acc": float(correct) / n if n else math.nan,
                        "response_loss": float(resp_loss)}
            logits = model(batch["x"]).float()
            y = batch["y"]
            pred = logits.argmax(1)
            out = {"loss": float(F.cross_entropy(logits, y)), "acc": float((pred == y).float().mean())}
            if config.dataset == "imbalanced":
                minority = y == 1
                out["minority_recall"] = (float((pred[minority] == 1).float().mean())
                                          if minority.any() else math.nan)
            return out
    finally:
        model.train(was_training)


def resolve(config: Config | None, bug, seams: Seams | None, settings: dict):
    """The config and seams of a run: a bug brings its seam and the setup it shows under."""
    seams = seams or Seams()
    if bug is None:
        base = config or Config()
        return (base.replace(**settings) if settings else base), seams, None
    from .bugs import get_bug
    the_bug = get_bug(bug)
    if config is None:  # the bug's setup (e.g. task="lm", precision="fp16") unless overridden
        config = Config.make(**{**the_bug.setup, **settings})
    elif settings:
        config = config.replace(**settings)
    needed = the_bug.setup.get("task", "classify")
    if config.task != needed:
        raise ValueError(f"bug {the_bug.name!r} needs task={needed!r}; got task={config.task!r}.")
    return config, the_bug.patch(seams), the_bug.name


def train(config: Config | None = None, *, bug: str | None = None, seams: Seams | None = None,
          **settings) -> Run:
    """Train the reference setup and return its `Run`.

    ``train()`` trains the healthy classifier; ``train(task="lm", seed=1)``
    changes settings; ``train(bug="detach")`` injects a bug from the zoo, under
    the setup where it shows (``get_bug(name).setup``) unless `config` is given.
    """
    if config is not None and not isinstance(config, Config):
        raise TypeError(f"config must be a labkit Config; got {type(config).__name__}.")
    config, seams, bug = resolve(config, bug, seams, settings)
    t0 = time.perf_counter()
    torch.manual_seed(config.seed)
    data = seams.data(config)
    model = seams.model(config, data).to(config.device)
    init_hash = hash_module(model)
    optimizer, scheduler = seams.optimizer(config, model)
    scaler = (torch.amp.GradScaler(config.device.split(":")[0])
              if config.precision == "fp16" else None)
    ctx = StepContext(config, data, model, optimizer, scheduler, scaler,
                      steps_per_epoch(config, data))
    recorder = NormRecorder(model, clipping=config.clip_grad_norm is not None)
    table: dict[str, list] = {k: [] for k in ("step", "epoch", "batch_id", "loss_raw",
                                               "loss_reported", "lr")}
    lm = data.kind == "lm"
    token_rows: list[torch.Tensor] = []  # (2,) per step: valid tokens, longest sequence
    scales: list[float] = []
    evals: dict[str, list] = {"step": []}
    n_train, n_steps = len(data), total_steps(config, data)
    model.train()
    amp = _autocast(config)
    t_loop = time.perf_counter()
    for step in range(n_steps):
        ctx.step = step
        ctx.epoch, ctx.batch_id = divmod(step, ctx.steps_per_epoch)
        ctx.batch = make_batch(data.train, batch_indices(config, n_train, ctx.epoch, ctx.batch_id),
                               config, ctx.batch_id)
        with amp:
            ctx.output = seams.forward(ctx)
            ctx.loss = seams.loss(ctx)
        ctx.loss_value = ctx.loss.item()
        seams.backward(ctx)
        if scaler is not None:
            scaler.unscale_(optimizer)  # inspect and clip true gradients, not scaled ones
        if config.clip_grad_norm is not None:
            recorder.record_grads()
            nn.utils.clip_grad_norm_(recorder.params, config.clip_grad_norm)
        table["lr"].append(optimizer.param_groups[0]["lr"])
        if scaler is not None:
            scales.append(scaler.get_scale())
        recorder.before_step()
        seams.step(ctx)
        recorder.after_step()
        table["step"].append(step)
        table["epoch"].append(ctx.epoch)
        table["batch_id"].append(ctx.batch_id)
        table["loss_raw"].append(ctx.loss_value)
        table["loss_reported"].append(seams.log(ctx))
        if lm:
            labels, mask = ctx.batch["labels"], ctx.batch["attention_mask"]
            token_rows.append(torch.stack([(labels[:, 1:] != IGNORE).sum(), mask.sum(1).max()]))
        if (step + 1) % config.eval_every == 0 or step == n_steps - 1:
            evals["step"].append(step)
            for split_name, split in (("train_eval", data.train), ("val", data.val)):
                for metric, value in evaluate(model, split, config, data.kind).items():
                    evals.setdefault(f"{split_name}_{metric}", []).append(value)
    table.update(recorder.columns())
    loop_s = time.perf_counter() - t_loop
    if lm:
        tokens = torch.stack(token_rows).tolist() if token_rows else []
        table["valid_tokens"] = [int(v) for v, _ in tokens]
        table["max_seq_len"] = [int(m) for _, m in tokens]
    if scaler is not None:
        table["amp_scale"] = scales
    meta = {
        "config": config.as_dict(),
        "bug": bug,
        "seed": config.seed,
        "data_hash": data.hash,
        "init_hash": init_hash,
        "config_hash": hash_json({"config": config.as_dict(), "bug": bug}),
        "groups": list(recorder.groups),
        "steps_per_epoch": ctx.steps_per_epoch,
        "labkit_version": _version(),
        "torch_version": torch.__version__,
    }
    timing = {"wall_s": time.perf_counter() - t0, "loop_s": loop_s, "created_at": time.time()}
    return Run(table=table, evals=evals, meta=meta, timing=timing)


def _version() -> str:
    from . import __version__
    return __version__
