"""Exercise B's answer checks: parameters left out of the optimizer.

Before the runs: `ex_b_predict` seals, for both broken runs, which groups never move, the
state of a left-out gradient, whether zero_grad() clears it, and which omission costs
more, with a reason. After them: `ex_b_review` (misses are shown, not failed);
`ex_b_mechanism` (a claim from `CLAIM`, judged exactly; the explanation kept for a person); `ex_b_growth`, a number computed from the
run; `ex_b_transfer`, an optimizer built from another subset, before that run.
"""

from __future__ import annotations

import math

from .. import _predict
from .._base import CheckFailed, answer_check, layer_groups, need_bool
from .._claim import judge_mechanism
from .._words import noted, read_reason
from .claims import CLAIMS, MODEL_ANSWERS
from .rubrics.b import MECHANISM, TRANSFER_REASON

CLAIM = CLAIMS["ex_b"]  # the mechanism's form: print(CLAIM)

GROUPS = ("backbone.0", "backbone.2", "head")
GRAD_STATES = ("finite", "none", "zero")  # "finite": a nonzero number
VARIANTS = ("backbone_only", "head_only")  # which part the optimizer was given
FORMS = {
    "frozen_backbone_only": ("groups", GROUPS),
    "frozen_head_only": ("groups", GROUPS),
    "left_out_grad": ("choice", GRAD_STATES),
    "zero_grad_clears": ("bool",),
    "worse": ("choice", VARIANTS),
    "why": ("text",),
}


def frozen_groups(run) -> set:
    """The groups whose update norm is exactly 0 at every step."""
    return {g for g in run.groups if all(v == 0 for v in run.table[f"update_norm/{g}"])}


def _grad_state(run, group) -> str:
    grads = run.table[f"grad_norm/{group}"]
    if all(g is None for g in grads):
        return "none"
    return "zero" if all(g == 0 for g in grads) else "finite"


def _last20(run) -> float:
    loss = run.table["loss_raw"]
    return sum(loss[-20:]) / len(loss[-20:])


@answer_check
def ex_b_predict(prediction) -> str:
    """Before the runs: the six fields of FORMS."""
    return _predict.seal("ex_b", prediction, FORMS)


@answer_check
def ex_b_review(prediction, runs: dict) -> str:
    """After the runs: the sealed prediction against the healthy and the two broken runs."""
    bo, ho = runs["backbone_only"], runs["head_only"]
    left_out = sorted(frozen_groups(bo))
    head = bo.table["grad_norm/head"]
    truth = {
        "frozen_backbone_only": left_out,
        "frozen_head_only": sorted(frozen_groups(ho)),
        "left_out_grad": _grad_state(bo, left_out[0]) if left_out else "finite",
        "zero_grad_clears": not (head[-1] > 3 * head[0]),
        "worse": max(VARIANTS, key=lambda v: _last20(runs[v])),
    }
    return _predict.review("ex_b", prediction, truth, list(runs.values()))


@answer_check
def ex_b_mechanism(claim, explanation) -> str:
    """The mechanism as a claim (`CLAIM`, judged exactly) and your explanation (kept
    for a person; the `MECHANISM` rubric's reading comes back as a hint only)."""
    return judge_mechanism(claim, explanation, CLAIM, MECHANISM, MODEL_ANSWERS["ex_b"])


def growth(run, group: str = "head") -> float:
    """How many times larger `group`'s gradient norm is at the last step than at step 0."""
    grads = run.table[f"grad_norm/{group}"]
    return grads[-1] / grads[0]


@answer_check
def ex_b_growth(value, run, healthy) -> str:
    """In the backbone_only run: grad_norm/head at the last step over its step-0 value."""
    truth = growth(run)
    if truth < 10:
        raise CheckFailed(
            "The head's gradient norm of this run does not grow tenfold, so it is "
            "not the backbone_only run: pass runs['backbone_only']."
        )
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CheckFailed(f"Answer with a number (a ratio); got {value!r}.")
    if abs(value - truth) > 0.01 * truth:
        raise CheckFailed(
            "Divide the left-out head's gradient norm at the last step by its value "
            "at step 0, both from the backbone_only run's table."
        )
    return (
        f"ok: x{truth:.0f} in {len(run)} steps, against x{growth(healthy):.2f} in the healthy "
        "run: close to one fresh gradient added per step"
    )


@answer_check
def ex_b_transfer(frozen, piles_up, reason, run) -> str:
    """Before the run whose optimizer owns backbone.0 and head: its frozen groups, whether the
    left-out gradient piles up (True/False), and why."""
    truth = frozen_groups(run)
    if not truth:
        raise CheckFailed(
            "Every group of this run moves at some step: pass the run whose "
            "optimizer was built without backbone.2."
        )
    given = layer_groups(frozen, run)
    need_bool(piles_up)
    note = read_reason(reason, TRANSFER_REASON)
    left = sorted(truth)[0]
    grads = run.table[f"grad_norm/{left}"]
    grows = grads[-1] > 3 * grads[0]
    if given != truth:
        raise CheckFailed(
            "Your list is not the set of groups whose update_norm is 0 at every "
            "step of this run: read the optimizer it was built with, group by group."
        )
    if piles_up != grows:
        raise CheckFailed(
            f"Read grad_norm/{left} of this run at its first and its last step, then "
            "ask again whether anything clears that gradient between steps."
        )
    return noted(
        f"ok: {left} never moves, and its gradient {'piles up' if grows else 'does not pile up'}",
        note,
    )
