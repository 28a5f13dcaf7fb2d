"""Naive strategies play every exercise's checks; none may pass a whole exercise (issue 15).

Each exercise's checks are called the way its solution calls them, on runs of the same
setups (Exercise E's five at 60 steps, not 200: see `ex_e`), with answers four naive players
would give:

* ``first``: the first choice everywhere (the first listed option, True, the first group,
  0 for a number, a stock sentence for text);
* ``random``: a random choice from each answer space (seeded), random words for text;
* ``empty``: an empty answer ("", None, [] or {});
* ``copy``: what is printed above the question in the executed solution: the printed number
  closest to the right one (an oracle copier, the strongest form), groups and choices named
  in the outputs, and for text each printed output block and all of them together.

A transfer check grades its structured claim exactly (issue 54), so a player who guesses the
choice right passes the machine's part; its reason goes to a person, and the rubric's reading
comes back after the ok line. A pass whose reason the rubric flags for that person ("a
person grades the reason") is not counted as passed here: the person marks it.

Predictions sealed before a run are records, not tests: a well-formed prediction passes its
sealing and its review whatever it says, so those rows count as passed for any player who
fills them in. The graded checks after the runs are what must stop the naive players.
Run with ``-s`` to see the table.
"""

import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable

import nbformat
import pytest

import labkit
from labkit.learn.check import _predict
from labkit.learn.check._base import CheckFailed

ROOT = Path(__file__).resolve().parents[3]
STRATEGIES = ("first", "random", "empty", "copy")
STOCK = "The loss goes down because the model learns."
FOR_A_PERSON = "a person grades the reason"  # labkit.learn.check._words.read_reason


@dataclass
class Arg:
    kind: str  # choice, bool, groups, text, int, number, intdict, numdict, prediction, claim
    choices: tuple = ()
    truth: Callable | None = None  # for number kinds: the right value (the oracle copier's target)
    forms: object = field(default_factory=dict)  # for prediction: its FORMS; for claim: a Claim


@dataclass
class Question:
    check: str  # the check's name, as the solution calls it
    args: list  # Arg per answer argument
    call: Callable  # call(ctx, *answers) -> str, raises CheckFailed


def printed_above(notebook: str, check: str) -> list[str]:
    """The text outputs of the code cells above the first cell that calls `check`."""
    nb = nbformat.read(ROOT / "solutions" / notebook, as_version=4)
    blocks = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if re.search(rf"\b{check}\(", cell.source):
            return blocks
        for out in cell.get("outputs", []):
            text = out.get("text") or out.get("data", {}).get("text/plain", "")
            if text and not text.startswith("<Figure"):
                blocks.append(text)
    raise AssertionError(f"{notebook} never calls {check}")


def numbers_in(blocks) -> list[float]:
    return [float(m) for b in blocks for m in re.findall(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", b)]


def closest(values, target):
    values = [v for v in values if math.isfinite(v)] or [0.0]
    return min(values, key=lambda v: abs(v - target))


def answers(arg: Arg, strategy: str, blocks, rng, ctx):
    """Candidate answers of one argument under a strategy (copy may offer several)."""
    text_all = "\n".join(blocks)
    k = arg.kind
    if k == "prediction":
        return [
            {
                name: answers(
                    Arg(*form[:1], choices=form[1] if len(form) > 1 else ()),
                    strategy,
                    blocks,
                    rng,
                    ctx,
                )[0]
                if form[0] != "roles"
                else {
                    key: (form[2][0] if strategy in ("first", "copy") else rng.choice(form[2]))
                    for key in form[1]
                }
                if strategy != "empty"
                else {}
                for name, form in arg.forms.items()
            }
        ]
    if strategy == "empty":
        return [
            {
                "choice": "",
                "bool": None,
                "groups": [],
                "text": "",
                "int": None,
                "number": None,
                "intdict": {},
                "numdict": {},
                "claim": {},
            }[k]
        ]
    if k == "claim":  # a mechanism's form: one choice per part (labkit.learn.check._claim)
        own = random.Random(repr(sorted(arg.forms.fields)))  # its own draws: a part added to
        # a claim does not reshuffle the other questions' random answers
        pick = {
            "first": lambda f: f.choices[0],
            "random": lambda f: own.choice(f.choices),
            "copy": lambda f: next((c for c in f.choices if c in text_all), f.choices[0]),
        }[strategy]
        return [{name: pick(f) for name, f in arg.forms.fields.items()}]
    if k == "choice":
        named = [c for c in arg.choices if str(c) in text_all]
        return [
            {
                "first": arg.choices[0],
                "random": rng.choice(arg.choices),
                "copy": named[0] if named else arg.choices[0],
            }[strategy]
        ]
    if k == "bool":
        return [{"first": True, "random": rng.random() < 0.5, "copy": "True" in text_all}[strategy]]
    if k == "groups":
        named = [c for c in arg.choices if c in text_all]
        return [
            {
                "first": [arg.choices[0]],
                "random": rng.sample(arg.choices, rng.randint(1, len(arg.choices))),
                "copy": named,
            }[strategy]
        ]
    if k == "text":
        if strategy == "first":
            return [STOCK]
        words = text_all.split() or ["loss"]
        if strategy == "random":
            return [" ".join(rng.choice(words) for _ in range(25))]
        return [*blocks, text_all] if blocks else [STOCK]
    truth = arg.truth(ctx)
    printed = numbers_in(blocks)
    if k in ("int", "number"):
        cast = int if k == "int" else float
        return [
            {
                "first": cast(0),
                "random": cast(rng.uniform(0, 200 if k == "int" else 3)),
                "copy": cast(closest(printed, truth)),
            }[strategy]
        ]
    cast = int if k == "intdict" else float
    return [
        {
            key: {
                "first": cast(0),
                "random": cast(rng.uniform(0, 200 if k == "intdict" else 3)),
                "copy": cast(closest(printed, value)),
            }[strategy]
            for key, value in truth.items()
        }
    ]


def play(notebook: str, questions, ctx, strategy: str, seed: int = 0) -> dict:
    """{check: passed?} for one strategy over one exercise."""
    rng = random.Random(seed)
    result, sealed = {}, {}
    for q in questions:
        blocks = printed_above(notebook, q.check)
        options = [answers(a, strategy, blocks, rng, ctx) for a in q.args]
        if q.check.endswith("_review"):  # the review reads the prediction that was sealed
            options = [[sealed.get("prediction")]]
        passed = False
        combo = None
        for combo in _combos(options):
            try:
                said = q.call(ctx, *combo)
            except CheckFailed:
                continue
            if FOR_A_PERSON not in str(said):  # a reason the rubric flags goes to a person
                passed = True
                break
        if q.check.endswith("_predict"):
            key = q.check.split("_predict")[0]
            if key in _predict._SEALED:  # the runs in ctx were trained first: date the seal back
                text, _ = _predict._SEALED[key]
                _predict._SEALED[key] = (text, 0.0)
            sealed["prediction"] = combo[0]
        result[q.check] = passed
    _predict._SEALED.clear()
    return result


def _combos(options):
    if not options:
        yield ()
        return
    for first in options[0]:
        for rest in _combos(options[1:]):
            yield (first, *rest)


# ---- the exercises: the same runs and calls as the solutions ----------------------------------


def ex_a():
    from labkit.check import ex_a as c
    from labkit.core.seams import Seams

    def deeper_forward(ctx):
        hidden = ctx.model.backbone[:2](ctx.batch["x"]).detach()
        return ctx.model.head(ctx.model.backbone[2:](hidden))

    ctx = {
        "healthy": labkit.train(seed=0),
        "detached": labkit.train(bug="detach", seed=0),
        "deeper": labkit.train(seed=0, seams=Seams().replace(forward=deeper_forward)),
    }
    pred = Arg("prediction", forms=c.FORMS)
    questions = [
        Question("ex_a_predict", [pred], lambda x, p: c.ex_a_predict(p)),
        Question("ex_a_review", [pred], lambda x, p: c.ex_a_review(p, x["healthy"], x["detached"])),
        Question(
            "ex_a_mechanism",
            [Arg("claim", forms=c.CLAIM), Arg("text")],
            lambda x, m, t: c.ex_a_mechanism(m, t),
        ),
        Question(
            "ex_a_steps_to",
            [
                Arg(
                    "intdict",
                    truth=lambda x: {n: c.first_below(x[n]) for n in ("healthy", "detached")},
                )
            ],
            lambda x, a: c.ex_a_steps_to(a, x["healthy"], x["detached"]),
        ),
        Question(
            "ex_a_transfer",
            [Arg("groups", c.GROUPS), Arg("text")],
            lambda x, g, r: c.ex_a_transfer(g, r, x["deeper"]),
        ),
    ]
    return "ex_a_break_the_graph.ipynb", questions, ctx


def ex_b():
    from labkit.check import ex_b as c
    from labkit.core.seams import Seams, make_optimizer

    def skip_middle(config, model):
        return make_optimizer(
            config, model, [*model.backbone[0].parameters(), *model.head.parameters()]
        )

    runs = {
        "healthy": labkit.train(seed=0),
        "backbone_only": labkit.train(bug="missing_optimizer_params", seed=0),
        "head_only": labkit.train(bug="missing_optimizer_params:head_only", seed=0),
    }
    subset = labkit.train(seed=0, seams=Seams().replace(optimizer=skip_middle))
    ctx = {"runs": runs, "subset": subset}
    pred = Arg("prediction", forms=c.FORMS)
    questions = [
        Question("ex_b_predict", [pred], lambda x, p: c.ex_b_predict(p)),
        Question("ex_b_review", [pred], lambda x, p: c.ex_b_review(p, x["runs"])),
        Question(
            "ex_b_mechanism",
            [Arg("claim", forms=c.CLAIM), Arg("text")],
            lambda x, m, t: c.ex_b_mechanism(m, t),
        ),
        Question(
            "ex_b_growth",
            [Arg("number", truth=lambda x: c.growth(x["runs"]["backbone_only"]))],
            lambda x, v: c.ex_b_growth(v, x["runs"]["backbone_only"], x["runs"]["healthy"]),
        ),
        Question(
            "ex_b_transfer",
            [Arg("groups", c.GROUPS), Arg("bool"), Arg("text")],
            lambda x, g, b, r: c.ex_b_transfer(g, b, r, x["subset"]),
        ),
    ]
    return "ex_b_optimizer_membership.ipynb", questions, ctx


def ex_c():
    import torch
    import torch.nn.functional as F
    from labkit.check import ex_c as c
    from labkit.probes import lr_sweep

    base = labkit.Config(seed=0)
    runs = {lr: labkit.train(base.replace(lr=lr)) for lr in c.LRS}
    trainer = labkit.Trainer(base.replace(lr=1.0))
    model, batch = trainer.ctx.model, trainer.batch(0)
    params = list(model.parameters())
    grads = torch.autograd.grad(
        F.cross_entropy(model(batch["x"]), batch["y"]), params, create_graph=True
    )
    g_sq = sum((g * g).sum() for g in grads)
    hess_g = torch.autograd.grad(g_sq / 2, params)
    g_h_g = sum((g * hg).sum() for g, hg in zip(grads, hess_g)).item()
    best = labkit.Trainer(base.replace(lr=1.0))
    best.run(steps=100)
    sweep = lr_sweep(best.ctx.model, [best.batch(i) for i in range(100, 110)], lr=1.0)
    ctx = {"runs": runs, "g_sq": g_sq.item(), "g_h_g": g_h_g, "sweep": sweep}
    pred = Arg("prediction", forms=c.FORMS)
    questions = [
        Question("ex_c_predict", [pred], lambda x, p: c.ex_c_predict(p)),
        Question("ex_c_review", [pred], lambda x, p: c.ex_c_review(p, x["runs"])),
        Question(
            "ex_c_update_ratio",
            [
                Arg(
                    "numdict",
                    truth=lambda x: {
                        lr: r.table["update_norm"][0] / r.table["grad_norm"][0]
                        for lr, r in x["runs"].items()
                    },
                )
            ],
            lambda x, r: c.ex_c_update_ratio(r, x["runs"]),
        ),
        Question(
            "ex_c_uphill_lr",
            [Arg("number", truth=lambda x: 2 * x["g_sq"] / x["g_h_g"])],
            lambda x, v: c.ex_c_uphill_lr(v, x["g_sq"], x["g_h_g"]),
        ),
        Question(
            "ex_c_mechanism",
            [Arg("claim", forms=c.CLAIM), Arg("text")],
            lambda x, m, t: c.ex_c_mechanism(m, t),
        ),
        Question(
            "ex_c_transfer",
            [Arg("choice", c.X10), Arg("text")],
            lambda x, a, r: c.ex_c_transfer(a, r, x["sweep"]),
        ),
    ]
    return "ex_c_learning_rate_sweep.ipynb", questions, ctx


def ex_d():
    from labkit.check import ex_d as c
    from labkit.learn.check.ex.made import four_way_table

    config = labkit.Config(dropout=0.5, epochs=20, eval_every=16, seed=0)
    trainer = labkit.Trainer(config)
    run = trainer.run()
    seen = four_way_table(trainer.ctx.model, trainer.ctx.data.val["x"])  # the notebook's cell
    ctx = {
        "run": run,
        "control": labkit.train(config.replace(dropout=0.0)),
        "seen": seen,
        "run_02": labkit.train(config.replace(dropout=0.2)),
    }
    orderings = (
        "online > train_eval > val",
        "val > train_eval ≈ online",
        "online ≈ train_eval ≈ val",
        "online > train_eval ≈ val",
    )
    forms = {**c.FORMS, "dropout_run": ("choice", orderings), "control_run": ("choice", orderings)}
    pred = Arg("prediction", forms=forms)

    def gap(x):
        first = c.three_at(x["control"], 0)
        return first["online"] - first["train_eval"]

    questions = [
        Question("ex_d_predict", [pred], lambda x, p: c.ex_d_predict(p)),
        Question(
            "ex_d_review", [pred], lambda x, p: c.ex_d_review(p, x["run"], x["control"], x["seen"])
        ),
        Question(
            "ex_d_mechanism",
            [Arg("claim", forms=c.CLAIM), Arg("text")],
            lambda x, m, t: c.ex_d_mechanism(m, t),
        ),
        Question(
            "ex_d_first_gap",
            [Arg("number", truth=gap)],
            lambda x, v: c.ex_d_first_gap(v, x["control"]),
        ),
        Question(
            "ex_d_transfer",
            [Arg("choice", c.GAP_VS_HALF), Arg("text")],
            lambda x, a, r: c.ex_d_transfer(a, r, x["run_02"], x["run"]),
        ),
    ]
    return "ex_d_validation_below_training.ipynb", questions, ctx


def ex_e():
    from labkit.check import ex_e as c
    from labkit.core.data import EOS, IGNORE
    from labkit.core.seams import make_data
    from labkit.bugs._lm import rewrite_labels
    from labkit.learn.lm_floor import floor, successor_table

    # 60 steps, not the solution's 200: the checks read only which run is which (NaN, two
    # ahead, inflated, lowest), and test_check_ex_e::test_the_truth_is_read_from_the_runs
    # proves 60-step runs give the same answers; the floor comes from the data, not the runs
    base = labkit.Config(task="lm", seed=0, steps=60, eval_every=20)
    setups = {
        "correct": (base, None),
        "double_shift": (base, "double_shift"),
        "padding_in_loss": (base, "padding_in_loss"),
        "all_masked_labels": (base, "all_masked_labels"),
        "prompt_in_loss": (base.replace(response_only=False), None),
    }
    trainers = {n: labkit.Trainer(cfg, bug=bug) for n, (cfg, bug) in setups.items()}
    batches = {n: t.batch(0) for n, t in trainers.items()}

    def without_eos(split):
        return split["labels"].masked_fill(split["input_ids"] == EOS, IGNORE)

    from labkit.core.seams import Seams

    ctx = {
        "runs": {n: t.run() for n, t in trainers.items()},
        "batches": batches,
        "val": make_data(base).val,
        "succ": successor_table(50, 0),
        "no_eos": labkit.train(
            base, seams=Seams().replace(data=lambda cfg: rewrite_labels(cfg, without_eos))
        ),
    }
    pred = Arg("prediction", forms=c.FORMS)
    questions = [
        Question("ex_e_predict", [pred], lambda x, p: c.ex_e_predict(p)),
        Question("ex_e_review", [pred], lambda x, p: c.ex_e_review(p, x["runs"], x["batches"])),
        Question(
            "ex_e_mechanism",
            [Arg("claim", forms=c.CLAIM), Arg("text")],
            lambda x, m, t: c.ex_e_mechanism(m, t),
        ),
        Question(
            "ex_e_two_ahead_floor",
            [Arg("number", truth=lambda x: floor(x["val"], x["succ"], ahead=2))],
            lambda x, v: c.ex_e_two_ahead_floor(v, x["val"], x["succ"]),
        ),
        Question(
            "ex_e_transfer",
            [Arg("choice", c.DIRECTIONS), Arg("choice", c.DIRECTIONS), Arg("text")],
            lambda x, a, b, r: c.ex_e_transfer(a, b, r, x["no_eos"], x["runs"]["correct"]),
        ),
    ]
    return "ex_e_masking_errors.ipynb", questions, ctx


def ex_f():
    from labkit.check import ex_f as c
    from labkit.core import data as datasets
    from labkit.core.metrics import model_confusion
    from labkit.core.seams import Seams

    config = labkit.Config(dataset="imbalanced", n_classes=2, eval_every=10, seed=0)
    trainer = labkit.Trainer(config)
    val = trainer.ctx.data.val
    trainer.run(steps=50)
    cm_early = model_confusion(trainer.ctx.model, val["x"], val["y"], 2)
    run = trainer.run()
    cm_final = model_confusion(trainer.ctx.model, val["x"], val["y"], 2)
    ctx = {
        "run": run,
        "cm_early": cm_early,
        "cm_final": cm_final,
        "y": val["y"],
        "balanced": labkit.train(
            config,
            seams=Seams().replace(
                data=lambda cfg: datasets.load("imbalanced", seed=cfg.seed, minority=0.2)
            ),
        ),
    }
    pred = Arg("prediction", forms=c.FORMS)
    questions = [
        Question(
            "ex_f_majority_accuracy",
            [Arg("number", truth=lambda x: float((x["y"] == 0).float().mean()))],
            lambda x, v: c.ex_f_majority_accuracy(v, x["y"]),
        ),
        Question("ex_f_predict", [pred], lambda x, p: c.ex_f_predict(p)),
        Question("ex_f_review", [pred], lambda x, p: c.ex_f_review(p, x["run"], x["cm_early"])),
        Question(
            "ex_f_minority_precision",
            [Arg("number", truth=lambda x: float(x["cm_final"][1, 1] / x["cm_final"][:, 1].sum()))],
            lambda x, v: c.ex_f_minority_precision(x["cm_final"], v),
        ),
        Question(
            "ex_f_constant_loss",
            [Arg("number", truth=lambda x: c.constant_loss(x["y"]))],
            lambda x, v: c.ex_f_constant_loss(v, x["y"]),
        ),
        Question(
            "ex_f_mechanism",
            [Arg("claim", forms=c.CLAIM), Arg("text")],
            lambda x, m, t: c.ex_f_mechanism(m, t),
        ),
        Question(
            "ex_f_exact_match",
            [Arg("number", truth=lambda x: 0.95**10)],
            lambda x, v: c.ex_f_exact_match(0.95, 10, v),
        ),
        Question(
            "ex_f_transfer",
            [Arg("choice", c.EARLIER), Arg("text")],
            lambda x, a, r: c.ex_f_transfer(a, r, x["balanced"], x["run"]),
        ),
    ]
    return "ex_f_loss_metric_mismatch.ipynb", questions, ctx


EXERCISES = {"ex_a": ex_a, "ex_b": ex_b, "ex_c": ex_c, "ex_d": ex_d, "ex_e": ex_e, "ex_f": ex_f}
TABLE: dict = {}


@pytest.mark.parametrize(
    "exercise", [pytest.param(e, marks=getattr(pytest.mark, e)) for e in EXERCISES]
)
@pytest.mark.slow
def test_no_naive_strategy_passes_a_whole_exercise(exercise):
    notebook, questions, ctx = EXERCISES[exercise]()
    for strategy in STRATEGIES:
        result = play(notebook, questions, ctx, strategy)
        TABLE[exercise, strategy] = result
        graded = [q.check for q in questions if not q.check.endswith(("_predict", "_review"))]
        print(
            f"\n{exercise} {strategy:6s}: {sum(result.values())}/{len(result)} checks passed "
            f"(graded: {sum(result[g] for g in graded)}/{len(graded)}); "
            f"passed: {', '.join(k for k, v in result.items() if v) or 'none'}"
        )
        assert not all(result.values()), f"{strategy} passes every check of {exercise}"
        assert not any(result[g] for g in graded), f"{strategy} passes a graded check of {exercise}"
