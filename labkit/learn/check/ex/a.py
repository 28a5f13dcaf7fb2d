"""Exercise A's answer checks: a detach between backbone and head.

Before the runs: `ex_a_predict` seals which groups lose their gradient and whether the head
learns, with a reason. After them: `ex_a_review` shows the prediction against the runs (a
miss is the lesson, not a failure); `ex_a_mechanism` judges the claim (`CLAIM`) exactly and keeps the explanation for a person;
`ex_a_steps_to` asks for a number computed from the runs; `ex_a_transfer` asks about a
detach one layer deeper before that run exists.
"""

from __future__ import annotations

import math

from .. import _predict
from .._base import CheckFailed, answer_check, layer_groups
from .._claim import judge_mechanism
from .._words import noted, read_reason
from .claims import CLAIMS, MODEL_ANSWERS
from .rubrics.a import MECHANISM, TRANSFER_REASON

CLAIM = CLAIMS["ex_a"]  # the mechanism's form: print(CLAIM)

GROUPS = ("backbone.0", "backbone.2", "head")
FORMS = {"null_groups": ("groups", GROUPS), "head_learns": ("bool",), "why": ("text",)}
LEVEL = 2.0  # ex_a_steps_to: the first step whose raw loss is below this


def null_groups(run) -> set:
    """The groups whose gradient is None at every step of `run`."""
    return {g for g in run.groups if all(v is None for v in run.table[f"grad_norm/{g}"])}


@answer_check
def ex_a_predict(prediction) -> str:
    """Before the runs: {'null_groups': [...], 'head_learns': bool, 'why': str}."""
    return _predict.seal("ex_a", prediction, FORMS)


@answer_check
def ex_a_review(prediction, healthy, detached) -> str:
    """After the runs: the sealed prediction against what the detached run measured."""
    loss = detached.table["loss_raw"]
    moved = all(u is not None and u > 0 for u in detached.table["update_norm/head"])
    truth = {
        "null_groups": sorted(null_groups(detached)),
        "head_learns": moved and loss[0] - sum(loss[-20:]) / 20 > 0.1,
    }
    return _predict.review("ex_a", prediction, truth, [healthy, detached])


@answer_check
def ex_a_mechanism(claim, explanation) -> str:
    """The mechanism as a claim (`CLAIM`, judged exactly) and your explanation (kept
    for a person; the `MECHANISM` rubric's reading comes back as a hint only)."""
    return judge_mechanism(claim, explanation, CLAIM, MECHANISM, MODEL_ANSWERS["ex_a"])


def first_below(run, level: float = LEVEL):
    """The first step whose raw loss is below `level`, or None."""
    return next(
        (
            s
            for s, v in zip(run.table["step"], run.table["loss_raw"])
            if math.isfinite(v) and v < level
        ),
        None,
    )


@answer_check
def ex_a_steps_to(answer, healthy, detached) -> str:
    """{'healthy': step, 'detached': step}: the first step whose raw loss is below LEVEL."""
    truth = {"healthy": first_below(healthy), "detached": first_below(detached)}
    if not isinstance(answer, dict) or set(answer) != set(truth):
        raise CheckFailed(
            f"Answer with a dict {{'healthy': step, 'detached': step}}; got {answer!r}."
        )
    for name, step in answer.items():
        if isinstance(step, bool) or not isinstance(step, int):
            raise CheckFailed(f"answer[{name!r}] must be a step number (an int); got {step!r}.")
        if step != truth[name]:
            raise CheckFailed(
                f"Step {step} is not where the {name} run's raw loss first drops "
                f"below {LEVEL}: scan its run.table['loss_raw'] from step 0 and stop "
                "at the first value below it."
            )
    return (
        f"ok: below {LEVEL} at step {truth['healthy']} (healthy) and {truth['detached']} "
        f"(detached), {truth['detached'] / max(truth['healthy'], 1):.1f} times later"
    )


@answer_check(points=2)  # transfer to a deeper model: the exercise's hardest step
def ex_a_transfer(groups, reason, deeper) -> str:
    """Before the deeper-detach run: its null-gradient groups, and why."""
    truth = null_groups(deeper)
    if not truth:
        raise CheckFailed(
            "Every grad_norm column of this run holds numbers, so it is not the "
            "deeper-detach run: pass the run trained with the deeper forward."
        )
    given = layer_groups(groups, deeper)
    note = read_reason(reason, TRANSFER_REASON)
    if given != truth:
        raise CheckFailed(
            f"The deeper run has {len(truth)} group(s) with grad None at every step, "
            f"and your list has {len(given)}, or other names: find where its forward "
            "calls detach() and follow the backward pass from the loss to it."
        )
    verb = "gets" if len(truth) == 1 else "get"
    return noted(
        f"ok: {', '.join(sorted(truth))} {verb} None; every group after the detach still learns",
        note,
    )
