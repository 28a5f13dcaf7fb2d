"""Exercise C's answer checks: a forecast per LR, the update/gradient ratio, each LR's role."""

from __future__ import annotations

import math

from ._base import CheckFailed, answer_check

ROLES = ("too small", "slow", "best", "too large")
STUCK = 0.1  # a raw loss that never strays this far from its first value has not moved


def _roles_or_fail(answer, what: str, lrs) -> None:
    if not isinstance(answer, dict) or not answer:
        raise CheckFailed(f"Write {what} as a dict {{lr: role}}, e.g. {{1e-6: 'too small'}}; "
                          f"got {answer!r}.")
    missing = sorted(set(lrs) - set(answer))
    if missing:
        raise CheckFailed(f"Give {what} for every LR you run; missing: {missing}.")
    bad = {f"{k:g}": v for k, v in answer.items() if v not in ROLES}
    if bad:
        raise CheckFailed(f"Each role must be one of {', '.join(map(repr, ROLES))}; "
                          f"these are not: {bad}.")


@answer_check
def ex_c_forecast(forecast: dict, lrs) -> str:
    """Before any run: a role for every LR, exactly one of them 'best'."""
    _roles_or_fail(forecast, "a forecast", lrs)
    if list(forecast.values()).count("best") != 1:
        raise CheckFailed("Name exactly one LR 'best': a forecast that hedges cannot be wrong, "
                          "so it cannot teach you anything.")
    return f"ok: forecast written down for {len(forecast)} learning rates before any run"


@answer_check
def ex_c_update_ratio(ratios: dict) -> str:
    """Plain SGD moves the weights by lr * gradient, so update_norm / grad_norm is the LR."""
    for lr, ratio in ratios.items():
        if not (isinstance(ratio, (int, float)) and math.isclose(ratio, lr, rel_tol=0.02)):
            raise CheckFailed(f"At lr={lr:g} your update_norm / grad_norm is {ratio!r}, but a "
                              "plain SGD step is -lr times the gradient: divide the two norms "
                              "taken from the same row of run.table.")
    return "ok: for plain SGD, update_norm / grad_norm = lr at every LR"


def _measured(run) -> dict:
    """How far the raw loss strayed from its first value, and where its last 10 steps ended."""
    loss = run.table["loss_raw"]
    end = sum(loss[-10:]) / len(loss[-10:])
    stray = max(abs(v - loss[0]) for v in loss) if all(map(math.isfinite, loss)) else math.inf
    return {"stray": stray, "drop": loss[0] - end, "end": end, "steps": len(loss)}


@answer_check
def ex_c_lr_roles(roles: dict, runs: dict) -> str:
    """Each LR's role from its own run: never moved, went down, ended lowest, or blew up."""
    _roles_or_fail(roles, "a role", runs)
    m = {lr: _measured(run) for lr, run in runs.items()}
    went_down = [lr for lr in runs if m[lr]["stray"] >= STUCK and m[lr]["drop"] >= STUCK]
    best = min(went_down, key=lambda lr: m[lr]["end"], default=None)
    for lr in sorted(runs):
        said, r = roles[lr], m[lr]
        truth = ("too small" if r["stray"] < STUCK else "best" if lr == best
                 else "slow" if lr in went_down else "too large")
        if said == truth:
            continue
        if truth == "too large":
            why = "its loss moved, but not down (it ended higher or non-finite): read grad_norm"
        elif said == "too large":
            why = f"its loss ended {r['drop']:.2f} below its start, so its steps went downhill"
        elif truth == "too small":
            why = (f"its loss never strayed more than {r['stray']:.3f} from its start in "
                   f"{r['steps']} steps: compare its update_norm with the others'")
        elif said == "too small":
            why = f"its loss did fall, by {r['drop']:.2f}: slow but steady is not stuck"
        elif truth == "best":
            why = f"no run ends below its {r['end']:.3f}: read the 'loss end' column again"
        else:
            why = "another run ends lower: compare the 'loss end' column across the runs"
        raise CheckFailed(f"lr={lr:g} is not '{said}': {why}.")
    return "ok: " + ", ".join(f"lr={lr:g} {roles[lr]}" for lr in sorted(runs))
