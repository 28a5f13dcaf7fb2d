"""A distributed mystery: one entry of the distributed zoo (`labkit.bugs.ddp`), healthy
included, on two gloo ranks, drawn from a drill seed.

    >>> m = draw_ranks(4)      # the same seed gives the same mystery, on every machine
    >>> m.answer()             # the hidden answer: bug, system, mechanism

The seven entries (six bugs and the healthy loop) are drawn with equal chances, so about
one draw in seven is healthy. The run seed is drawn from 0-2; the second seed is that + 1.
Distributed seeds are their own series: `labkit drill --distributed --seed 4` and
`labkit drill --seed 4` are different mysteries.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ....errors import check_number
from .book import ANSWERS, FIRST, KEY_TERMS, LATE, MENU, PATHS

RUN_SEEDS = 3
SYSTEMS = {  # as the distributed triage classes them (labkit/diagnosis/own/step6_decide/ranks)
    "healthy": "NONE",
    "local_reported_loss": "H3",  # the report, not the training
    "no_set_epoch": "H2",  # what data each step sees
    "forward_through_module": "H1",  # the step
    "no_sync_every_step": "H1",
    "double_allreduce": "H1",
    "buffers_not_broadcast": "H1",
}


def rank_mystery_names() -> list[str]:
    """Every entry of the distributed zoo, "healthy" included, in the zoo's order."""
    from ....bugs.ddp import DDP_BUGS

    return list(DDP_BUGS)


@dataclass(frozen=True)
class RankMystery:
    seed: int  # the drill seed the learner typed (or was given)
    name: str  # a key of labkit.bugs.ddp.DDP_BUGS, "healthy" included
    run_seed: int  # the seed of the mystery's own run (initialisation and shuffle)

    world = 2
    task = "ddp"
    menu, first_probe, late_rule = MENU, FIRST, LATE

    @property
    def bug(self) -> str | None:
        return None if self.name == "healthy" else self.name

    @property
    def key(self) -> str:
        return self.name

    @property
    def system(self) -> str:
        return SYSTEMS[self.name]

    @property
    def mechanism(self) -> str:
        from ....bugs.ddp import DDP_BUGS

        return DDP_BUGS[self.name].mechanism

    @property
    def paths(self) -> list:
        return PATHS[self.name]

    @property
    def key_terms(self) -> list:
        return KEY_TERMS[self.name]

    @property
    def interview(self) -> tuple:
        return ANSWERS[self.name]

    @property
    def setting(self) -> str:
        return (
            "DistributedDataParallel on two gloo ranks: an MLP with a BatchNorm on 4 balanced "
            "classes, SGD (lr 0.05, momentum 0.9), a DistributedSampler, 32 examples a step "
            "(16 per rank), 16 steps per epoch; ln 4 = 1.386"
        )

    def answer(self) -> dict:
        """The hidden setup, for instructors and tests (`labkit drill --distributed --answer`)."""
        return {
            "seed": self.seed,
            "bug": self.bug,
            "system": self.system,
            "task": "ddp (two gloo ranks)",
            "run_seed": self.run_seed,
            "mechanism": self.mechanism,
        }

    def __repr__(self) -> str:  # no spoiler in a notebook's echo
        return f"RankMystery(seed={self.seed}, hidden)"


def draw_ranks(seed: int | None = None) -> RankMystery:
    """The distributed mystery for `seed`; None draws a fresh seed first."""
    from ..mystery import new_seed

    if seed is None:
        seed = new_seed()
    check_number("seed", seed, minimum=0, integer=True)
    rng = random.Random(f"labkit-drill-ranks-{seed}")  # a string seed: the same on every Python
    name = rng.choice(rank_mystery_names())
    return RankMystery(seed=seed, name=name, run_seed=rng.randrange(RUN_SEEDS))


def rank_seed_for(name: str, *, start: int = 0) -> int:
    """The first distributed drill seed at or after `start` whose mystery is `name`."""
    if name not in rank_mystery_names():
        raise ValueError(
            f"name={name!r} is not in the distributed zoo; choose from "
            f"{', '.join(rank_mystery_names())}."
        )
    for seed in range(start, start + 100_000):
        if draw_ranks(seed).name == name:
            return seed
    raise ValueError(f"no distributed drill seed from {start} draws {name!r}.")  # pragma: no cover
