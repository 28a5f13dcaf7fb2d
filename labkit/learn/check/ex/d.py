"""Exercise D's answer checks: validation loss below the online training loss.

Before the runs: `ex_d_predict` seals the order of the three losses in each run, the cause,
and what eval() and no_grad() each switch, with a reason. After them: `ex_d_review` (misses
are shown, not failed); `ex_d_mechanism` (a claim from `CLAIM`, judged exactly; the explanation kept for a person); `ex_d_first_gap`, a
number from the control run; `ex_d_transfer`, another dropout rate, before that run.
"""

from __future__ import annotations

import re

from .. import _predict
from .._base import CheckFailed, answer_check, need_one_of
from .._claim import judge_mechanism
from .._words import noted, read_reason
from .claims import CLAIMS, MODEL_ANSWERS
from .rubrics.d import MECHANISM, TRANSFER_REASON

CLAIM = CLAIMS["ex_d"]  # the mechanism's form: print(CLAIM)

NAMES = {"online": "online", "loss_reported": "online", "train_eval": "train_eval", "val": "val"}
CLOSE = 0.2  # two losses within 20% of each other count as ≈
CAUSES = ("dropout", "split", "timing")
GAP_VS_HALF = ("larger", "about the same", "smaller")  # ex_d_transfer's answer space


def _three(run) -> dict:
    """online (the logger's epoch mean), train_eval and val at evaluation `i` (the last)."""
    return three_at(run, -1)


def three_at(run, i: int) -> dict:
    step = run.evals["step"][i]
    return {
        "online": run.table["loss_reported"][run.table["step"].index(step)],
        "train_eval": run.evals["train_eval_loss"][i],
        "val": run.evals["val_loss"][i],
    }


def _chain(names: list, near: list) -> list:
    """Names from highest to lowest loss as groups; near[i] joins names i and i+1 with ≈."""
    groups = [{names[0]}]
    for joined, name in zip(near, names[1:]):
        groups[-1].update({name}) if joined else groups.append({name})
    return groups


def _parse(ordering) -> list:
    parts = re.split(r"\s*([<>≈~=])\s*", str(ordering).strip())
    names, ops = [NAMES.get(p.lower().removesuffix("_loss")) for p in parts[::2]], parts[1::2]
    if sorted(map(str, names)) != ["online", "train_eval", "val"] or {"<", ">"} <= set(ops):
        raise CheckFailed(
            "Write each of online, train_eval and val once, joined by '>' and "
            f"'≈', e.g. 'val > online ≈ train_eval'; got {ordering!r}."
        )
    if "<" in ops:
        names, ops = names[::-1], ops[::-1]
    return _chain(names, [op in "≈~=" for op in ops])


def ordering_of(run) -> str:
    """The measured order of the three losses at the last evaluation, as text."""
    losses = _three(run)
    names = sorted(losses, key=losses.get, reverse=True)
    groups = _chain(
        names, [losses[a] - losses[b] <= CLOSE * losses[a] for a, b in zip(names, names[1:])]
    )
    return " > ".join(" ≈ ".join(sorted(g)) for g in groups)


def cause_of(run, control) -> str:
    (o, te, v), (co, cte, _) = _three(run).values(), _three(control).values()
    gap, timing = o - te, co - cte  # the control has no dropout: its gap is timing alone
    return "split" if te - v > CLOSE * te else "dropout" if timing < 0.5 * gap else "timing"


FORMS = {
    "dropout_run": ("check", _parse),
    "control_run": ("check", _parse),
    "cause": ("choice", CAUSES),
    "dropout_under_no_grad": ("bool",),
    "graph_under_eval": ("bool",),
    "why": ("text",),
}


@answer_check
def ex_d_predict(prediction) -> str:
    """Before the runs: the six fields of FORMS."""
    return _predict.seal("ex_d", prediction, FORMS)


@answer_check
def ex_d_review(prediction, run, control, seen: dict) -> str:
    """After the runs and the four-way table `seen`: the prediction against the measurements."""
    truth = {
        "dropout_run": ordering_of(run),
        "control_run": ordering_of(control),
        "cause": cause_of(run, control),
        "dropout_under_no_grad": seen["train", "no_grad"]["dropout active"],
        "graph_under_eval": seen["eval", "grad on"]["graph recorded"],
    }
    same_order = lambda said, actual: _parse(said) == _parse(actual)  # noqa: E731
    return _predict.review(
        "ex_d",
        prediction,
        truth,
        [run, control],
        same={"dropout_run": same_order, "control_run": same_order},
    )


@answer_check
def ex_d_mechanism(claim, explanation) -> str:
    """The mechanism as a claim (`CLAIM`, judged exactly) and your explanation (kept
    for a person; the `MECHANISM` rubric's reading comes back as a hint only)."""
    return judge_mechanism(claim, explanation, CLAIM, MECHANISM, MODEL_ANSWERS["ex_d"])


@answer_check
def ex_d_first_gap(value, control) -> str:
    """online - train_eval of the dropout=0 control at its first evaluation (epoch 1)."""
    first = three_at(control, 0)
    truth = first["online"] - first["train_eval"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CheckFailed(f"Answer with a number; got {value!r}.")
    if abs(value - truth) > 0.0005:
        raise CheckFailed(
            "Take the control's loss_reported at the step of its first evaluation "
            "and subtract its first train_eval_loss, in that order."
        )
    last = _three(control)
    return (
        f"ok: {truth:.3f} at epoch 1 against {last['online'] - last['train_eval']:.3f} at the "
        "end: the epoch mean lags most while the loss falls fast"
    )


@answer_check
def ex_d_transfer(answer, reason, new_run, run) -> str:
    """Before the dropout=0.2 run: its final online - train_eval gap against dropout 0.5's."""
    need_one_of(answer, GAP_VS_HALF)
    note = read_reason(reason, TRANSFER_REASON)
    new, old = (_three(r)["online"] - _three(r)["train_eval"] for r in (new_run, run))
    truth = (
        "about the same" if abs(new - old) <= 0.2 * old else "smaller" if new < old else "larger"
    )
    if answer != truth:
        raise CheckFailed(
            f"Not {answer!r}: compute online - train_eval at the last evaluation of "
            "both runs and compare the two gaps."
        )
    return noted(
        (
            f"ok: the gap is {new:.3f} at dropout {new_run.config['dropout']:g} against "
            f"{old:.3f} at dropout {run.config['dropout']:g}"
        ),
        note,
    )
