"""A quiz of unlabelled curves, drawn fresh each time so it cannot be learned by heart.

    >>> q = curve_quiz.draw()            # a new seed every call; draw(seed=12) repeats one
    >>> curve_plots.plot_quiz(q)         # curves A-G, unlabelled
    >>> check.curves_quiz(q, {"A": "spiking", ...})

Each of the seven cases appears once, in a shuffled order, produced by one of its
mechanisms picked at random (three different bugs give a flat training curve, for
instance) and trained on a seed the gallery never uses.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass

from ...core.run import Run
from . import CASES, run_spec

EVERY = {"eval_every": 10}  # ten evaluations per 100 steps, so val and accuracy show a shape
VARIANTS: dict[str, list[tuple[str, dict]]] = {
    "overfitting": [("128 noisy rows, SGD with momentum", CASES["overfitting"].setup)],
    "high_flat": [
        ("labels shuffled apart from inputs", {"bug": "shuffled_labels", "config": EVERY}),
        ("every input the same constant", {"bug": "constant_inputs", "config": EVERY}),
    ],
    "spiking": [("one far-out row with a wrong label", CASES["spiking"].setup)],
    "val_below_train": [(f"dropout {p}", {"config": {"dropout": p, **EVERY}}) for p in (0.4, 0.5)],
    "flat_train": [
        ("loss rebuilt from .item()", {"bug": "loss_from_item", "config": EVERY}),
        ("learning rate 0", {"bug": "zero_lr", "config": EVERY}),
        ("optimizer.step() missing", {"bug": "missing_step", "config": EVERY}),
    ],
    "nan": [
        ("one NaN feature in the data", {"bug": "nan_in_inputs", "config": EVERY}),
        ("learning rate 300x too high", {"bug": "lr_too_high", "config": EVERY}),
    ],
    "metric_flat": [("95/5 classes, accuracy as the metric", CASES["metric_flat"].setup)],
}
LETTERS = "ABCDEFG"
assert set(VARIANTS) == set(CASES) and all(v for v in VARIANTS.values())


@dataclass
class QuizItem:
    letter: str
    case: str  # the answer: a key of CASES
    mechanism: str  # how this curve was made, shown only by reveal()
    seed: int
    run: Run


@dataclass
class Quiz:
    seed: int
    items: list[QuizItem]

    def __repr__(self) -> str:
        return (
            f"Quiz(seed={self.seed}, curves {', '.join(i.letter for i in self.items)}: "
            "label each with one of " + ", ".join(CASES) + ")"
        )

    def answer_key(self) -> dict[str, str]:
        return {i.letter: i.case for i in self.items}

    def reveal(self) -> str:
        return "\n".join(
            f"{i.letter}: case {CASES[i.case].number} {i.case} ({i.mechanism}, seed {i.seed})"
            for i in self.items
        )


def draw(seed: int | None = None, progress: bool = False, train: bool = True) -> Quiz:
    """Seven unlabelled runs, one per case, in a shuffled order. `seed=None` picks a new one.
    `train=False`: the same quiz without its runs (each None), e.g. for its answer key."""
    seed = secrets.randbelow(1_000_000) if seed is None else seed
    rng = random.Random(seed)
    keys = list(CASES)
    rng.shuffle(keys)
    items = []
    if progress and train:
        print(f"training {len(keys)} unlabelled curves...", flush=True)
    for letter, key in zip(LETTERS, keys):
        mechanism, spec = rng.choice(VARIANTS[key])
        run_seed = rng.randrange(2, 1_000_000)  # never 0 or 1, the gallery's seeds
        items.append(
            QuizItem(letter, key, mechanism, run_seed, run_spec(spec, run_seed) if train else None)
        )
        if progress and train:
            print(f"curve {letter}: trained ({len(items)} of {len(keys)})")
    return Quiz(seed, items)
