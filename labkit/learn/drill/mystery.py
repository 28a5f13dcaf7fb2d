"""Drawing a mystery from a seed: a zoo bug, one of its variants, or a healthy run.

    >>> m = draw(3)          # the same seed gives the same mystery, on every machine
    >>> m.config             # the setup the learner sees (never the bug)
    >>> m.truth              # the hidden answer: system and mechanism line

About one draw in six is healthy (half of those classify, half LM), and the rest are
spread evenly over the zoo's bugs and their variants. The run seed is drawn too, from
0-2, so two mysteries with the same bug need not look the same.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass

from ...bugs import BUGS, get_bug
from ...bugs.inject import resolve
from ...core.config import Config
from ...errors import check_number
from .answers import ANSWERS
from .menu import MENU
from .paths import KEY_TERMS, PATHS

HEALTHY_SHARE = 1 / 6  # "about one in six" runs has nothing wrong with it
RUN_SEEDS = 3  # the mystery's run seed is one of 0, 1, 2; the second seed is that + 1
VARIANT_MECHANISMS = {  # a variant keeps its bug's mechanism line in the zoo; say what differs
    "zero_lr:per_batch_scheduler": "a per-epoch StepLR is stepped every batch: the LR halves "
    "each step and is about 0 by epoch 2",
    "missing_optimizer_params:head_only": "only the head's parameters were given to the "
    "optimizer: the backbone gets gradients, no update",
}


def mystery_names() -> list[str]:
    """Every bug of the zoo and every variant, as names `labkit.train(bug=...)` accepts."""
    names = []
    for name, bug in BUGS.items():
        names.append(name)
        names.extend(f"{name}:{v}" for v in sorted(bug.variants))
    return names


@dataclass(frozen=True)
class Mystery:
    seed: int  # the drill seed the learner typed (or was given)
    bug: str | None  # a name from mystery_names(), or None for a healthy run
    task: str  # "classify" or "lm"
    run_seed: int  # the seed of the mystery's own run

    # what the rubric and the feedback read (a distributed mystery has its own: drill.ranks)
    world = 1
    menu, first_probe = MENU, "raw_vs_reported"
    late_rule = (  # an expensive probe, what must come before it, and the deduction's line
        "lr_sweep",
        ("raw_vs_reported",),
        ("overfit", "label_shuffle"),
        "LR sweep before H3 and H2 were cleared (-5)",
    )

    @property
    def paths(self) -> list:
        return PATHS[self.key]

    @property
    def key_terms(self) -> list:
        return KEY_TERMS[self.key]

    @property
    def interview(self) -> tuple:
        return ANSWERS[self.key]

    @property
    def config(self) -> Config:
        settings = {"seed": self.run_seed}
        if self.bug is None:
            return Config.make(task=self.task, **settings)
        return resolve(None, self.bug, None, settings)[0]

    @property
    def system(self) -> str:
        return "NONE" if self.bug is None else get_bug(self.bug).system

    @property
    def base(self) -> str:
        """The bug's module name ("zero_lr" for "zero_lr:per_batch_scheduler"), or "healthy"."""
        return "healthy" if self.bug is None else self.bug.split(":")[0]

    @property
    def key(self) -> str:
        """The name the answer tables use: the full bug name, or "healthy"."""
        return self.bug or "healthy"

    @property
    def mechanism(self) -> str:
        if self.bug is None:
            return "nothing is wrong: the logger is honest, the data carries signal, the step works"
        return VARIANT_MECHANISMS.get(self.bug) or get_bug(self.bug).mechanism

    @property
    def setting(self) -> str:
        """What a teammate would tell you about the run: the model and task, nothing more."""
        if self.task == "lm":
            return (
                "a tiny causal LM (2 blocks, vocabulary 50, Adam), response tokens only; "
                "ln V = 3.912"
            )
        return "an MLP on 10 balanced classes (SGD, batch 64, 16 steps per epoch); ln C = 2.303"

    def answer(self) -> dict:
        """The hidden setup, for instructors and tests (`labkit drill --answer`)."""
        return {
            "seed": self.seed,
            "bug": self.bug,
            "system": self.system,
            "task": self.task,
            "run_seed": self.run_seed,
            "mechanism": self.mechanism,
        }

    def __repr__(self) -> str:  # no spoiler in a notebook's echo
        return f"Mystery(seed={self.seed}, task={self.task!r}, hidden)"


def draw(seed: int | None = None) -> Mystery:
    """The mystery for `seed`; None draws a fresh seed first."""
    if seed is None:
        seed = new_seed()
    check_number("seed", seed, minimum=0, integer=True)
    rng = random.Random(f"labkit-drill-{seed}")  # a string seed: the same on every Python
    healthy = rng.random() < HEALTHY_SHARE
    names = mystery_names()
    bug = None if healthy else rng.choice(names)
    if bug is None:
        task = rng.choice(("classify", "lm"))
    else:
        task = get_bug(bug).setup.get("task", "classify")
    return Mystery(seed=seed, bug=bug, task=task, run_seed=rng.randrange(RUN_SEEDS))


def new_seed() -> int:
    """A fresh drill seed: small enough to read out to a friend."""
    return secrets.randbelow(100_000)


def seed_for(bug: str | None, *, start: int = 0) -> int:
    """The first drill seed at or after `start` whose mystery is `bug` (None: healthy)."""
    if bug is not None and bug not in mystery_names():
        get_bug(bug)  # a readable error for an unknown name
        raise ValueError(
            f"bug={bug!r} is not a mystery name; choose from {', '.join(mystery_names())}."
        )
    for seed in range(start, start + 100_000):
        if draw(seed).bug == bug:
            return seed
    raise ValueError(f"no drill seed from {start} draws bug={bug!r}.")  # pragma: no cover
