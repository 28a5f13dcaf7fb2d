"""Exercise C's answer checks: a learning-rate sweep.

Before the sweep: `ex_c_predict` seals a role for every LR, with a reason. After it:
`ex_c_review` (misses are shown, not failed); `ex_c_update_ratio` and `ex_c_uphill_lr`,
numbers computed from the runs; `ex_c_mechanism` (a claim from `CLAIM`, judged exactly; the explanation kept for a person); and
`ex_c_transfer`, LR x10 from a later state of the best run, before that run.
"""

from __future__ import annotations

import math

from .. import _predict
from .._base import CheckFailed, answer_check, need_one_of
from .._claim import judge_mechanism
from .._words import noted, read_reason
from .claims import CLAIMS, MODEL_ANSWERS
from .rubrics.c import MECHANISM, TRANSFER_REASON

CLAIM = CLAIMS["ex_c"]  # the mechanism's form: print(CLAIM)

ROLES = ("too small", "slow", "best", "too large")
LRS = (1e-6, 1e-4, 1e-2, 1, 30)
STUCK = 0.1  # a raw loss that never strays this far from its first value has not moved
FORMS = {"roles": ("roles", LRS, ROLES), "why": ("text",)}
X10 = ("falls faster", "about the same", "blows up")  # ex_c_transfer's answer space


def _measured(run) -> dict:
    """How far the raw loss strayed from its first value, and where its last 10 steps ended."""
    loss = run.table["loss_raw"]
    end = sum(loss[-10:]) / len(loss[-10:])
    stray = max(abs(v - loss[0]) for v in loss) if all(map(math.isfinite, loss)) else math.inf
    return {"stray": stray, "drop": loss[0] - end, "end": end, "steps": len(loss)}


def roles_of(runs: dict) -> dict:
    """Each LR's role from its own run: never moved, went down, ended lowest, or blew up."""
    m = {lr: _measured(run) for lr, run in runs.items()}
    went_down = [lr for lr in runs if m[lr]["stray"] >= STUCK and m[lr]["drop"] >= STUCK]
    best = min(went_down, key=lambda lr: m[lr]["end"], default=None)
    return {
        lr: "too small"
        if m[lr]["stray"] < STUCK
        else "best"
        if lr == best
        else "slow"
        if lr in went_down
        else "too large"
        for lr in runs
    }


@answer_check
def ex_c_predict(prediction) -> str:
    """Before the sweep: {'roles': {lr: role for every lr in LRS}, 'why': str}."""
    roles = prediction.get("roles") if isinstance(prediction, dict) else None
    if (
        isinstance(roles, dict)
        and set(roles) == set(LRS)
        and list(roles.values()).count("best") != 1
    ):
        raise CheckFailed(
            "Name exactly one LR 'best': a forecast that hedges cannot be wrong, "
            "so it cannot teach you anything."
        )
    return _predict.seal("ex_c", prediction, FORMS)


@answer_check
def ex_c_review(prediction, runs: dict) -> str:
    """After the sweep: the sealed roles against the roles the runs measured."""
    return _predict.review("ex_c", prediction, {"roles": roles_of(runs)}, list(runs.values()))


@answer_check
def ex_c_update_ratio(ratios: dict, runs: dict) -> str:
    """Plain SGD moves the weights by lr * gradient, so update_norm / grad_norm is the LR."""
    if not isinstance(ratios, dict) or set(ratios) != set(runs):
        raise CheckFailed(
            "Answer with a dict {lr: update_norm / grad_norm at step 0} for every "
            f"run; got {ratios!r}."
        )
    for lr, ratio in ratios.items():
        row = runs[lr].table
        truth = row["update_norm"][0] / row["grad_norm"][0]
        if not (isinstance(ratio, (int, float)) and math.isclose(ratio, truth, rel_tol=1e-3)):
            raise CheckFailed(
                f"At lr={lr:g} your ratio is {ratio!r}, which is not update_norm / "
                "grad_norm at step 0: divide the two norms taken from row 0 of "
                "run.table."
            )
    return "ok: " + ", ".join(f"lr={lr:g}: {r / lr:.3f} x lr" for lr, r in ratios.items())


@answer_check
def ex_c_uphill_lr(value, g_sq: float, g_h_g: float) -> str:
    """The LR above which the quadratic picture predicts that one step raises the loss."""
    truth = 2 * g_sq / g_h_g
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CheckFailed(f"Answer with a number (an LR); got {value!r}.")
    if not math.isclose(value, truth, rel_tol=0.05):
        raise CheckFailed(
            "Set the change -lr ||g||^2 + lr^2/2 g^T H g to zero and solve for lr, "
            "using the two measured numbers printed above."
        )
    return f"ok: above lr = {truth:.0f} one step goes uphill in the quadratic picture"


@answer_check
def ex_c_mechanism(claim, explanation) -> str:
    """The mechanism as a claim (`CLAIM`, judged exactly) and your explanation (kept
    for a person; the `MECHANISM` rubric's reading comes back as a hint only)."""
    return judge_mechanism(claim, explanation, CLAIM, MECHANISM, MODEL_ANSWERS["ex_c"])


@answer_check
def ex_c_transfer(answer, reason, sweep) -> str:
    """Before the x10 run from the best run's step-100 weights: 'falls faster', 'about the same'
    or 'blows up', and why. `sweep` is the lr_sweep result with factors 0.1, 1 and 10."""
    need_one_of(answer, X10)
    note = read_reason(reason, TRANSFER_REASON)
    arms = sweep.details["arms"]
    x10, x1 = arms[10.0], arms[1.0]
    truth = (
        "blows up"
        if x10["nonfinite"] or x10["drop"] < -0.5
        else "falls faster"
        if x10["drop"] > 1.5 * x1["drop"]
        else "about the same"
    )
    if answer != truth:
        raise CheckFailed(
            f"Not {answer!r}: read the x10 arm's losses in sweep.details['arms'] "
            "and compare them with the x1 arm's."
        )
    return noted(
        f"ok: x10 {truth}: lr {x10['lr']:g} is past what this region's curvature allows",
        note,
    )
