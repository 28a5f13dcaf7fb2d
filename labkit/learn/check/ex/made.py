"""The data the exercise notebooks make, made again: what `labkit grade` compares a check's data
with before the check works out its right answer from it.

A check such as ``ex_c_uphill_lr(value, g_sq, g_h_g)`` or ``ex_f_majority_accuracy(accuracy,
y_true)`` judges the answer against data the notebook hands over beside it; made-up data (a
``g_sq`` halved, labels of sixteen classes) would make a wrong answer right. So for each such
argument, `GIVEN` names how the exercise's own cell makes it, from the exercise's config and
the notebook's seed: the grader (`labkit.learn.grade.truth`) makes it again, keeps the data it
made if the argument is one of those, and otherwise fails the row with where they differ. Each
maker is the notebook's cell, unchanged; the sizes and steps are the exercise's.

A run the check names by its setup (the detached run, the control, each run of a review) must
be that setup: the zoo bug, the exercise's seams and every setting of its config as the
exercise sets it, on the notebook's seed (`Notebook`, read from its parameters cells); only how
long it trained is free, since the grader trains it again as long. A review never fails on a
miss, so a run under another name would change only what it says: it is refused all the same.
Lab 15's mystery and the runs its record measured are made again in `mystery`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

from .c import LRS
from .mystery import measured_record, notebook_mystery

SWEEP = {"step": 100, "batches": 10, "factors": (0.1, 1.0, 10.0)}  # Exercise C's sweep_from
P_TOKEN, N_TOKENS = 0.95, 10  # Exercise F's exact-match question
FREE = ("steps", "epochs", "device")  # how long and where a run trained: the grader trains it
# again as long; every other setting is the exercise's
D_RUNS = {"eval_every": 16}  # Exercise D's config, besides dropout (epochs is a length)
E_RUNS = {"task": "lm"}
F_RUNS = {"dataset": "imbalanced", "eval_every": 10}


@dataclass(frozen=True)
class Notebook:
    """What the grader reads of a notebook's parameters cells to make its data again
    (`labkit.learn.grade.read.parameters_of`): the seed, Exercise D's dropout, Lab 15's
    mystery (``random-<draw_seed>`` where it is "random"). The defaults are the notebooks'."""

    seed: int = 0
    dropout: float = 0.5
    mystery: str = "A"
    heard: object = field(default=None, compare=False)  # grading: what the grader heard, on
    # its own clock (`labkit.learn.grade.truth.Heard`); None elsewhere


@functools.cache
def _uphill(seed: int) -> dict:
    """Exercise C: ||g||^2 and g^T H g at the sweep's initial weights and batch 0, at lr 1."""
    import torch
    import torch.nn.functional as F

    from ....bugs.inject import Trainer
    from ....core.config import Config

    trainer = Trainer(Config(seed=seed, lr=1.0))
    model, batch = trainer.ctx.model, trainer.batch(0)
    params = list(model.parameters())
    loss = F.cross_entropy(model(batch["x"]), batch["y"])
    grads = torch.autograd.grad(loss, params, create_graph=True)
    g_sq = sum((g * g).sum() for g in grads)
    hess_g = torch.autograd.grad(g_sq / 2, params)
    g_h_g = sum((g * hg).sum() for g, hg in zip(grads, hess_g)).item()
    return {"g_sq": g_sq.item(), "g_h_g": g_h_g}


@functools.cache
def _sweep(seed: int, lr: float):
    """Exercise C's sweep_from(lr): lr_sweep from step 100 of the run at `lr`, 10 batches."""
    from ....bugs.inject import Trainer
    from ....core.config import Config
    from ....diagnosis.probes.lr import lr_sweep

    trainer = Trainer(Config(seed=seed, lr=lr))
    trainer.run(steps=SWEEP["step"])
    start = SWEEP["step"]
    batches = [trainer.batch(i) for i in range(start, start + SWEEP["batches"])]
    return lr_sweep(trainer.ctx.model, batches, lr=lr, factors=SWEEP["factors"])


@functools.cache
def _lm(seed: int):
    from ....core.config import Config
    from ....core.seams import make_data
    from ...lm_floor import successor_table

    config = Config(task="lm", seed=seed)
    return make_data(config), successor_table(config.vocab_size, seed)


@functools.cache
def _imbalanced(seed: int):
    from ....core.data import make_imbalanced

    return make_imbalanced(seed=seed)


@functools.cache
def _confusions(seed: int) -> dict:
    """Exercise F: the confusion matrices of its run's model after 50 steps and at the end."""
    from ....bugs.inject import Trainer
    from ....core.config import Config
    from ....core.metrics import model_confusion

    trainer = Trainer(Config(dataset="imbalanced", n_classes=2, eval_every=10, seed=seed))
    x, y = trainer.ctx.data.val["x"], trainer.ctx.data.val["y"]
    trainer.run(steps=50)
    early = model_confusion(trainer.ctx.model, x, y, 2)
    trainer.run()
    return {
        "its model's confusion matrix after 50 steps": early,
        "at the end of the run": model_confusion(trainer.ctx.model, x, y, 2),
    }


@functools.cache
def _first_batch(config: str, bug: str | None):
    from ....bugs.inject import Trainer
    from ....core.config import Config

    return Trainer(Config(**json.loads(config)), bug=bug).batch(0)


def first_batches(batches, nb: Notebook, arguments: dict) -> dict:
    """Exercise E's batches: batch 0 of each run's own setup, under the run's name."""
    what = "batch 0 of each run's own setup, by the run's name"
    runs = arguments.get("runs")
    if not isinstance(batches, dict) or not isinstance(runs, dict) or set(batches) != set(runs):
        keys = list(batches) if isinstance(batches, dict) else type(batches).__name__
        raise ValueError(f"{what}: it holds batches under {keys!r}")
    own = {}
    for name, run in runs.items():
        meta = getattr(run, "meta", None)
        if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
            raise ValueError(f"{what}: {name!r} is not a run labkit.train returned")
        if meta.get("seams"):
            raise ValueError(f"{what}: the run {name!r} was trained with a seam of its own")
        own[name] = _first_batch(json.dumps(meta["config"], sort_keys=True), meta.get("bug"))
    return {what: own}


def four_way_table(model, x) -> dict:
    """Exercise D's cell: per mode and grad setting, whether two passes over `x` differ
    (dropout active) and whether the output has a grad_fn (graph recorded)."""
    import torch

    seen = {}
    for mode in ("train", "eval"):
        getattr(model, mode)()
        for grad in ("grad on", "no_grad"):
            with torch.set_grad_enabled(grad == "grad on"):
                first, second = model(x), model(x)
            seen[mode, grad] = {
                "dropout active": not torch.equal(first, second),
                "graph recorded": first.grad_fn is not None,
            }
    return seen


@functools.cache
def _four_way(config: str, bug: str | None) -> dict:
    """The table on the model of `config` (what it shows does not depend on how far the model
    trained)."""
    from ....bugs.inject import Trainer
    from ....core.config import Config

    trainer = Trainer(Config(**json.loads(config)), bug=bug)
    return four_way_table(trainer.ctx.model, trainer.ctx.data.val["x"])


def four_way(seen, nb: Notebook, arguments: dict) -> dict:
    """Exercise D's `seen`: the four-way table of the dropout run's model."""
    meta = getattr(arguments.get("run"), "meta", None)
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise ValueError("the table of the dropout run's model: no run labkit.train returned")
    config = json.dumps(meta["config"], sort_keys=True)
    return {"the four-way table of the dropout run's model": _four_way(config, meta.get("bug"))}


def sweep_runs(runs, nb: Notebook, arguments: dict) -> dict:
    """Exercise C's runs: one per LR of the sweep, each under the LR its config trained; a
    ValueError says what else they are."""
    what = f"one run per LR of the sweep ({', '.join(f'{lr:g}' for lr in LRS)})"
    if not isinstance(runs, dict) or set(runs) != set(LRS):
        keys = list(runs) if isinstance(runs, dict) else type(runs).__name__
        raise ValueError(f"{what}: it holds runs under {keys!r}")
    for lr, run in runs.items():
        if why := trained_as(run, nb, lr=lr):
            raise ValueError(f"{what}: the run under lr={lr:g} {why}")
    return {what: runs}


def sweep(result, nb: Notebook, arguments: dict) -> dict:
    details = getattr(result, "details", None)
    arms = details.get("arms") if isinstance(details, dict) else None
    one = arms.get(1.0) if isinstance(arms, dict) else None
    lr = one.get("lr") if isinstance(one, dict) else None
    lrs = [x for x in LRS if x == lr] or [1.0]  # the best run's, when it names none of them
    return {f"lr_sweep from step 100 of the run at lr {lrs[0]:g}": _sweep(nb.seed, lrs[0])}


def uphill(name: str):
    return lambda value, nb, arguments: {
        f"the exercise's {name} at its initial weights and batch 0": _uphill(nb.seed)[name]
    }


def lm_split(split, nb: Notebook, arguments: dict) -> dict:
    data, _ = _lm(nb.seed)
    return {"data.val": data.val, "data.train": data.train}


def successors(succ, nb: Notebook, arguments: dict) -> dict:
    return {f"successor_table(50, {nb.seed})": _lm(nb.seed)[1]}


def labels(y_true, nb: Notebook, arguments: dict) -> dict:
    data = _imbalanced(nb.seed)
    return {'data.val["y"]': data.val["y"], 'data.train["y"]': data.train["y"]}


def confusions(cm, nb: Notebook, arguments: dict) -> dict:
    return dict(_confusions(nb.seed))


def trained_as(run, nb: Notebook, bug=None, seams=None, **config) -> str | None:
    """How `run` was not trained as the setup of the zoo `bug`, the exercise's `seams` and the
    `config` values given (the rest at labkit's defaults) on the notebook's seed, in words
    ("was trained with lr=30.0, not 0.1"); None if it was, however long it trained."""
    from ....core.config import Config

    meta = getattr(run, "meta", None)
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        return "is not a run labkit.train returned"
    want = {"bug": bug, "seams": seams or {}, **Config(**config, seed=nb.seed).as_dict()}
    had = {"bug": meta.get("bug"), "seams": meta.get("seams") or {}, **meta["config"]}
    wrong = next((k for k, v in want.items() if k not in FREE and had.get(k) != v), None)
    return (
        None
        if wrong is None
        else f"was trained with {wrong}={had.get(wrong)!r}, not {want[wrong]!r}"
    )


def setup(what: str, bug=None, seams=None, **config):
    """A run the check names by its setup (`what`, in words), as `trained_as` reads it; the run
    itself is the grader's already."""

    def check(run, nb: Notebook, arguments: dict) -> dict:
        if why := trained_as(run, nb, bug, seams, **config):
            raise ValueError(f"{what}: it {why}")
        return {what: run}

    return check


def named(optional=(), **setups):
    """A dict of runs, each under the name of its setup (name -> `trained_as`'s arguments);
    the names in `optional` may be left out."""
    what = f"the runs the exercise names ({', '.join(setups)})"

    def check(runs, nb: Notebook, arguments: dict) -> dict:
        names = set(runs) if isinstance(runs, dict) else None
        if names is None or not set(setups) - set(optional) <= names <= set(setups):
            keys = list(runs) if isinstance(runs, dict) else type(runs).__name__
            raise ValueError(f"{what}: it holds runs under {keys!r}")
        for name, run in runs.items():
            if why := trained_as(run, nb, **setups[name]):
                raise ValueError(f"{what}: the run under {name!r} {why}")
        return {what: runs}

    return check


def dropout_run(run, nb: Notebook, arguments: dict) -> dict:
    """Exercise D's dropout run: its config with the notebook's dropout parameter."""
    return setup(f"the dropout={nb.dropout:g} run", dropout=nb.dropout, **D_RUNS)(
        run, nb, arguments
    )


def constant(name: str, value):
    return lambda given, nb, arguments: {f"the exercise's {name}": value}


HEALTHY, DETACHED = setup("the healthy run"), setup("the detached run", bug="detach")
GIVEN = {  # check -> {argument: maker(given, nb, arguments) -> {what: the grader's own}}, in
    # the order they are made; a maker raises ValueError("WHAT: why not") where the argument
    # cannot be any of them
    "ex_a_steps_to": {"healthy": HEALTHY, "detached": DETACHED},
    "ex_a_review": {"healthy": HEALTHY, "detached": DETACHED},
    "ex_a_transfer": {
        "deeper": setup("the deeper detach's run", seams={"forward": "forward_detach_deeper"})
    },
    "ex_b_growth": {
        "run": setup("the backbone_only run", bug="missing_optimizer_params"),
        "healthy": HEALTHY,
    },
    "ex_b_review": {
        "runs": named(
            ("healthy",),
            healthy={},
            backbone_only={"bug": "missing_optimizer_params"},
            head_only={"bug": "missing_optimizer_params:head_only"},
        )
    },
    "ex_b_transfer": {
        "run": setup("the run without backbone.2", seams={"optimizer": "optimizer_skip_middle"})
    },
    "ex_d_first_gap": {"control": setup("the dropout=0 control", dropout=0.0, **D_RUNS)},
    "ex_d_transfer": {
        "new_run": setup("the dropout=0.2 run", dropout=0.2, **D_RUNS),
        "run": dropout_run,
    },
    "ex_d_review": {
        "control": setup("the dropout=0 control", dropout=0.0, **D_RUNS),
        "run": dropout_run,
        "seen": four_way,
    },
    "ex_e_transfer": {
        "no_eos": setup("the run without EOS", seams={"data": "data_without_eos"}, **E_RUNS),
        "correct": setup("the correct run", **E_RUNS),
    },
    "ex_e_review": {
        "runs": named(
            correct=E_RUNS,
            double_shift={"bug": "double_shift", **E_RUNS},
            padding_in_loss={"bug": "padding_in_loss", **E_RUNS},
            all_masked_labels={"bug": "all_masked_labels", **E_RUNS},
            prompt_in_loss={**E_RUNS, "response_only": False},
        ),
        "batches": first_batches,
    },
    "ex_f_transfer": {
        "new_run": setup("the 20% minority run", seams={"data": "twenty_percent"}, **F_RUNS),
        "run": setup("the original run", **F_RUNS),
    },
    "ex_f_review": {"run": setup("the original run", **F_RUNS), "cm_early": confusions},
    "ex_c_review": {"runs": sweep_runs},
    "ex_c_update_ratio": {"runs": sweep_runs},
    "ex_c_uphill_lr": {"g_sq": uphill("g_sq"), "g_h_g": uphill("g_h_g")},
    "ex_c_transfer": {"sweep": sweep},
    "ex_e_two_ahead_floor": {"split": lm_split, "succ": successors},
    "ex_f_majority_accuracy": {"y_true": labels},
    "ex_f_constant_loss": {"y_true": labels},
    "ex_f_minority_precision": {"cm": confusions, "minority": constant("minority class", 1)},
    "ex_f_exact_match": {
        "p_token": constant("per-token accuracy", P_TOKEN),
        "n_tokens": constant("number of tokens", N_TOKENS),
    },
    "lab15_conviction": {"mystery": notebook_mystery, "record": measured_record},
}
