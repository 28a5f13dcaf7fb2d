"""The curve gallery: the packet's seven loss-curve cases, each made by a real run.

    >>> from labkit.learn import curves
    >>> shown = curves.run_case("spiking", seed=0)   # the run, its test, the fix on two seeds
    >>> print(shown.report())

Every case names its leading hypothesis, the alternatives, the test that separates them,
the one change to try and the evidence that would confirm it. `setup` and `fix` say how
the run is made: Config settings plus a zoo bug or a seam from `curve_setups`; `fix` is
`setup` with one thing changed. The test itself lives in `curve_probes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...bugs.inject import Trainer
from ...core.config import Config
from ...core.run import Run
from ...core.seams import Seams
from ...errors import choice_error
from . import setups as cs


@dataclass(frozen=True)
class Case:
    key: str  # short name, also the quiz answer
    number: int  # the packet's case number
    title: str
    hypothesis: str
    alternatives: tuple[str, ...]
    test: str  # the discriminating test, in words
    intervention: str  # the one change
    confirms: str  # what would show the change worked
    setup: dict = field(default_factory=dict)  # {"config": {...}, "seams": {...}, "bug": name}
    fix: dict = field(default_factory=dict)


OVERFIT = {"steps": 300, "lr": 0.1, "momentum": 0.9, "hidden": 128, "eval_every": 10}

CASES: dict[str, Case] = {
    c.key: c
    for c in (
        Case(
            "overfitting",
            1,
            "training loss falls, validation loss turns and rises",
            "overfitting: the model learns facts of the training set that do not carry over",
            (
                "train and val rows overlap or leak",
                "val comes from another distribution",
                "the two losses are not computed the same way",
            ),
            "audit the split (duplicates, class shares), then ask which training rows the model "
            "now fits: does it reproduce labels that are wrong?",
            "weight decay 0.01, nothing else changed",
            "val loss stops rising and ends well below where the first run ended, on two seeds",
            {"config": OVERFIT, "seams": {"data": cs.noisy_small_blobs}},
            {"config": {**OVERFIT, "weight_decay": 0.01}, "seams": {"data": cs.noisy_small_blobs}},
        ),
        Case(
            "high_flat",
            2,
            "both losses stay high and barely move",
            "the targets carry no signal the model can use",
            (
                "the optimizer does not move the weights",
                "the model is too small for the task",
                "the loss or the masks are broken",
            ),
            "overfit one small batch, then repeat it with the labels shuffled: same result means "
            "the labels are not being read",
            "pair every input with its own label again (the reference data)",
            "the loss falls to the healthy run's level and val accuracy passes 0.9, on two seeds",
            {"bug": "shuffled_labels"},
            {},
        ),
        Case(
            "spiking",
            3,
            "a spike now and then that recovers at once",
            "one bad example: a batch that holds it spikes, whatever the weights",
            (
                "the learning rate is near the edge of stability",
                "a scheduler event",
                "optimizer state built up over many steps",
            ),
            "save the weights before a spike, then replay the spiking batch and a normal batch "
            "from that checkpoint",
            "drop training rows with a feature more than 5 standard deviations out",
            "no more spikes in the second half of the run, on two seeds",
            {"config": {"eval_every": 10}, "seams": {"data": cs.with_outlier_row}},
            {"config": {"eval_every": 10}, "seams": {"data": cs.outliers_dropped}},
        ),
        Case(
            "val_below_train",
            4,
            "validation loss sits below the training loss",
            "dropout is on in training and off in evaluation",
            (
                "the training curve is an average over the epoch, made by older weights",
                "the validation set is easier",
                "val rows leaked into training",
            ),
            "recompute the training loss in eval() mode with the validation code (train_eval)",
            "turn dropout off, nothing else changed",
            "the online loss comes back down to train_eval, on two seeds",
            {"config": {"dropout": 0.5, "eval_every": 10}},
            {"config": {"eval_every": 10}},
        ),
        Case(
            "flat_train",
            5,
            "the training loss is flat from the first step",
            "the loss is cut off from the model's weights",
            (
                "the learning rate is zero or the step is missing",
                "the parameters are frozen",
                "the logger shows a stale number",
            ),
            "after backward(), audit the gradients: None everywhere means no graph reached them",
            "backpropagate the loss tensor the model produced, not a copy of its value",
            "the loss falls like the healthy run's, on two seeds",
            {"bug": "loss_from_item"},
            {},
        ),
        Case(
            "nan",
            6,
            "the loss turns NaN and stays NaN",
            "a non-finite value in the data reaches the model",
            (
                "the learning rate is so high the weights blow up",
                "fp16 overflow",
                "a log(0) or 0/0 in the loss",
            ),
            "load the weights from just before the NaN step and find the first non-finite value "
            "of that step",
            "drop training rows that hold NaN or inf",
            "every loss is finite and the run ends near the healthy one, on two seeds",
            {"bug": "nan_in_inputs"},
            {"seams": {"data": cs.nan_rows_dropped}},
        ),
        Case(
            "metric_flat",
            7,
            "the loss falls while accuracy stays where it started",
            "the model grows surer of the common class, but no prediction changes side",
            (
                "the metric is computed wrongly",
                "evaluation reads the wrong checkpoint",
                "the loss rewards something the metric ignores",
            ),
            "look past the average: a confusion matrix, recall per class, and the probability the "
            "rare class gets",
            "weight each class by the inverse of its share in the loss",
            "recall of the rare class rises far above the first run's, on two seeds",
            {"config": {"dataset": "imbalanced", "eval_every": 10}},
            {
                "config": {"dataset": "imbalanced", "eval_every": 10},
                "seams": {"loss": cs.class_weighted_loss},
            },
        ),
    )
}


def get_case(key: str) -> Case:
    if key not in CASES:
        raise choice_error("case", key, CASES)
    return CASES[key]


def trainer(spec: dict, seed: int) -> Trainer:
    """A `Trainer` for a setup spec ({"config", "seams", "bug"}) on `seed`, not yet run."""
    seams = Seams().replace(**spec["seams"]) if spec.get("seams") else None
    settings = {**spec.get("config", {}), "seed": seed}
    if spec.get("bug"):  # the bug brings its own setup (task, precision) under these settings
        return Trainer(bug=spec["bug"], seams=seams, **settings)
    return Trainer(Config.make(**settings), seams=seams)


def run_spec(spec: dict, seed: int) -> Run:
    return trainer(spec, seed).run()


@dataclass
class CaseRun:
    """One case shown: the run, the discriminating test's evidence, the fix on two seeds."""

    case: Case
    seed: int
    run: Run
    evidence: dict  # numbers from the discriminating test (see curve_probes)
    fixed: dict[int, Run]  # seed -> the run with the one change
    baseline: dict[int, Run]  # seed -> the original setup, for the comparison

    def report(self) -> str:
        from .probes import confirm_lines, evidence_lines

        c = self.case
        lines = [
            f"Case {c.number}: {c.title}",
            f"  leading hypothesis: {c.hypothesis}",
            "  alternatives: " + "; ".join(c.alternatives),
            f"  test: {c.test}",
        ]
        lines += [f"    {line}" for line in evidence_lines(self)]
        lines.append(f"  intervention: {c.intervention}")
        lines += [f"    {line}" for line in confirm_lines(self)]
        return "\n".join(lines)


def run_case(key: str, seed: int = 0, confirm_seeds=(0, 1), progress: bool = False) -> CaseRun:
    """Run a case, its discriminating test, and its fix on each seed of `confirm_seeds`."""
    from .probes import PROBES

    case = get_case(key)
    if progress:  # said first: the case takes several runs
        print(
            f"case {case.number} ({key}): running seed {seed}, its test, and the fix on seeds "
            f"{', '.join(map(str, confirm_seeds))}...",
            flush=True,
        )
    t = trainer(case.setup, seed)
    run = t.run()
    evidence = PROBES[key](t, run, lambda: trainer(case.setup, seed))
    baseline = {seed: run}
    fixed = {}
    for s in confirm_seeds:
        if s not in baseline:
            baseline[s] = run_spec(case.setup, s)
        fixed[s] = run_spec(case.fix, s)
    if progress:
        print(f"case {case.number} ({key}): done", flush=True)
    return CaseRun(case, seed, run, evidence, fixed, baseline)
