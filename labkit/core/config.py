"""`Config`: every setting of a reference run, frozen, checked, with a reason for each default."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from ..errors import check_choice, check_number, suggest

TASKS = ("classify", "lm")
DATASETS_FOR = {"classify": ("blobs", "imbalanced"), "lm": ("tokens",)}
OPTIMIZERS = ("sgd", "adam")
SCHEDULERS = ("none", "step", "cosine")
PRECISIONS = ("fp32", "fp16")


@dataclass(frozen=True)
class Config:
    """Every setting of a reference run, frozen and checked; each default says why it is that.

    `labkit.train(config)` trains it; `dataclasses.replace(config, lr=0.1)` gives a copy
    with one setting changed. A bad value raises a sentence naming the setting.
    """

    task: str = (
        "classify"  # "classify": MLP on 2-D blobs; "lm": TinyCausalLM on prompt/response tokens
    )
    dataset: str | None = (
        None  # None = the task's default ("blobs" / "tokens"); "imbalanced" for Exercise F
    )
    n_classes: int = 10  # C = 10 puts the loss at init on ln 10 = 2.303; dataset="imbalanced" is 2
    vocab_size: int = 50  # V = 50 keeps the LM tiny; ln 50 = 3.912 at init
    hidden: int = (
        64  # MLP width (the LM uses d_model = hidden // 2): big enough to overfit 64 samples
    )
    depth: int = 2  # hidden layers in the MLP backbone / transformer blocks in the LM (1-2)
    dropout: float = 0.0  # 0 = off; Exercise D turns it on to put val loss below online train loss
    optimizer: str | None = (
        None  # None = "sgd" for classify, "adam" for lm: the settings that train well
    )
    lr: float | None = None  # None = 0.1 (sgd) or 3e-3 (adam); 0 is allowed, it is a bug to study
    momentum: float = 0.0  # plain SGD by default, as the overfit probe uses
    weight_decay: float = 0.0  # off: regularisation would blur the curves the course reads
    scheduler: str = "none"  # "none" | "step" | "cosine", stepped once per epoch
    step_size: int = 5  # epochs between decays for scheduler="step"
    gamma: float = 0.5  # decay factor for scheduler="step"
    steps: int = 200  # optimizer steps; 200 is enough for the toy tasks to converge
    epochs: int | None = None  # when set, replaces steps with epochs * steps_per_epoch
    batch_size: int | None = (
        None  # None = 64 (classify: 16 steps per epoch) or 32 (lm: 32 steps per epoch)
    )
    precision: str = "fp32"  # "fp16" runs autocast(float16) with a GradScaler, on CPU too
    clip_grad_norm: float | None = None  # max total gradient norm; None = no clipping
    eval_every: int = 50  # steps between train-eval / val evaluations (and one at the end)
    seed: int = 0  # fixes data, init and batch order: same seed, same per-step table
    device: str = "cpu"  # "cuda" where available
    response_only: bool = True  # LM: loss on response tokens only (supervised fine-tuning style)
    input_scale: float = 1.0  # multiplies inputs; >1 imitates a pipeline that forgot to normalise

    def __post_init__(self):
        check_choice("task", self.task, TASKS)
        if self.dataset is None:
            object.__setattr__(self, "dataset", DATASETS_FOR[self.task][0])
        check_choice("dataset", self.dataset, DATASETS_FOR[self.task])
        if self.dataset == "imbalanced":
            object.__setattr__(self, "n_classes", 2)  # the imbalanced set is binary
        if self.optimizer is None:
            object.__setattr__(self, "optimizer", "sgd" if self.task == "classify" else "adam")
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        if self.lr is None:
            object.__setattr__(self, "lr", 0.1 if self.optimizer == "sgd" else 3e-3)
        if self.batch_size is None:
            object.__setattr__(self, "batch_size", 64 if self.task == "classify" else 32)
        check_choice("scheduler", self.scheduler, SCHEDULERS)
        check_choice("precision", self.precision, PRECISIONS)
        check_number("lr", self.lr, minimum=0.0)
        check_number("momentum", self.momentum, minimum=0.0, maximum=1.0)
        check_number("weight_decay", self.weight_decay, minimum=0.0)
        check_number("dropout", self.dropout, minimum=0.0, maximum=0.99)
        check_number("gamma", self.gamma, minimum=0.0, maximum=1.0, strict_min=True)
        check_number("n_classes", self.n_classes, minimum=2, integer=True)
        check_number("vocab_size", self.vocab_size, minimum=8, integer=True)
        check_number("hidden", self.hidden, minimum=2, integer=True)
        check_number(
            "depth", self.depth, minimum=1, maximum=2 if self.task == "lm" else 8, integer=True
        )
        check_number("step_size", self.step_size, minimum=1, integer=True)
        check_number("steps", self.steps, minimum=1, integer=True)
        check_number("epochs", self.epochs, minimum=1, integer=True, allow_none=True)
        check_number("batch_size", self.batch_size, minimum=1, integer=True)
        check_number(
            "clip_grad_norm", self.clip_grad_norm, minimum=0.0, strict_min=True, allow_none=True
        )
        check_number("eval_every", self.eval_every, minimum=1, integer=True)
        check_number("seed", self.seed, minimum=0, integer=True)
        check_number("input_scale", self.input_scale, minimum=0.0, strict_min=True)
        if self.task == "lm" and self.hidden % 4:
            raise ValueError(
                f"hidden={self.hidden} must be a multiple of 4 for task='lm' "
                "(d_model = hidden // 2 is split over 2 attention heads)."
            )
        if not isinstance(self.device, str) or self.device.split(":")[0] not in ("cpu", "cuda"):
            raise ValueError(f"device={self.device!r} is not allowed; choose 'cpu' or 'cuda'.")
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(
                f"device={self.device!r} was asked for, but this machine has no "
                "CUDA device; use device='cpu'."
            )

    @classmethod
    def make(cls, **settings) -> Config:
        """Like ``Config(...)``, but an unknown setting name gets a suggestion."""
        return cls().replace(**settings) if settings else cls()

    def replace(self, **changes) -> Config:
        """A copy with some settings changed; per-task defaults are worked out again."""
        names = [f.name for f in dataclasses.fields(self)]
        for key in changes:
            if key not in names:
                raise TypeError(
                    f"{key!r} is not a Config setting; settings are "
                    f"{', '.join(names)}.{suggest(key, names)}"
                )
        d = self.as_dict()
        if "task" in changes and changes["task"] != self.task:
            for auto in ("dataset", "optimizer", "lr", "batch_size"):  # re-derive task defaults
                d[auto] = None
        if (
            "optimizer" in changes
            and "lr" not in changes
            and changes["optimizer"] != self.optimizer
        ):
            d["lr"] = None
        d.update(changes)
        return Config(**d)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def diff(self, other: Config) -> list[str]:
        """Names of the settings that differ between two configs."""
        a, b = self.as_dict(), other.as_dict()
        return [k for k in a if a[k] != b[k]]
