"""Exercise E's answer checks: five causal-LM runs that differ only in their labels.

Before the audit and the runs: `ex_e_predict` seals which run goes NaN, which trains two
tokens ahead, which count extra targets and which shows the lowest training loss, with a
reason. After them: `ex_e_review` (misses are shown, not failed); `ex_e_mechanism` (the
`MECHANISM` rubric); `ex_e_two_ahead_floor`, a floor computed from the generator's table;
`ex_e_transfer`, EOS left out of the loss, before that run.
"""

from __future__ import annotations

import math

from ...lm_floor import floor
from .. import _predict
from .._base import CheckFailed, answer_check, need_one_of
from .._claim import judge_mechanism
from .._words import noted, read_reason
from .claims import CLAIMS, MODEL_ANSWERS
from .rubrics.e import MECHANISM, TRANSFER_REASON

CLAIM = CLAIMS["ex_e"]  # the mechanism's form: print(CLAIM)

RUNS = ("correct", "double_shift", "padding_in_loss", "all_masked_labels", "prompt_in_loss")
FORMS = {
    "nan_run": ("choice", RUNS),
    "two_ahead_run": ("choice", RUNS),
    "inflated_runs": ("groups", RUNS),
    "lowest_train_loss": ("choice", RUNS),
    "why": ("text",),
}
DIRECTIONS = ("higher", "about the same", "lower")  # ex_e_transfer's answer space


def _last20(run, n=None) -> float:
    loss = run.table["loss_raw"][: n or len(run)]
    return sum(loss[-20:]) / len(loss[-20:])


def _two_ahead(batch) -> bool:
    """Whether each supervised label equals the input token one step on (a hand shift)."""
    ids, labels = batch["input_ids"], batch["labels"]
    keep = labels[:, :-1] != -100
    return bool(keep.any()) and bool((labels[:, :-1][keep] == ids[:, 1:][keep]).all())


def truth_of(runs: dict, batches: dict) -> dict:
    """What the five runs and their first batches show, field by field of FORMS."""
    tokens = {n: sum(r.table["valid_tokens"]) / len(r) for n, r in runs.items()}
    finite = [n for n, r in runs.items() if all(map(math.isfinite, r.table["loss_raw"]))]
    return {
        "nan_run": next(n for n, r in runs.items() if not math.isfinite(r.table["loss_raw"][0])),
        "two_ahead_run": next(n for n, b in batches.items() if _two_ahead(b)),
        "inflated_runs": sorted(n for n in runs if tokens[n] > 1.05 * tokens["correct"]),
        "lowest_train_loss": min(finite, key=lambda n: _last20(runs[n])),
    }


@answer_check
def ex_e_predict(prediction) -> str:
    """Before the audit and the runs: the five fields of FORMS."""
    return _predict.seal("ex_e", prediction, FORMS)


@answer_check
def ex_e_review(prediction, runs: dict, batches: dict) -> str:
    """After the runs: the sealed prediction against the runs and their first batches."""
    return _predict.review("ex_e", prediction, truth_of(runs, batches), list(runs.values()))


@answer_check
def ex_e_mechanism(claim, explanation) -> str:
    """The mechanism as a claim (`CLAIM`, judged exactly) and your explanation (kept
    for a person; the `MECHANISM` rubric's reading comes back as a hint only)."""
    return judge_mechanism(claim, explanation, CLAIM, MECHANISM, MODEL_ANSWERS["ex_e"])


@answer_check
def ex_e_two_ahead_floor(value, split: dict, succ) -> str:
    """The best loss a model trained two tokens ahead can reach on `split`, in nats."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CheckFailed(f"Answer with a finite number of nats; got {value!r}.")
    truth, one = floor(split, succ, ahead=2), floor(split, succ, ahead=1)
    if abs(value - one) < 0.01:
        raise CheckFailed(
            "That is the floor one token ahead; the double-shifted run is scored on "
            "the token after that, so ask the same function for two tokens ahead."
        )
    if abs(value - truth) > 0.01:
        raise CheckFailed(
            f"{value:.3f} nats is not that floor: average the entropy of the "
            "two-step distribution over the split's supervised targets, as "
            "labkit.learn.lm_floor.floor does with ahead=2."
        )
    return (
        f"ok: {truth:.3f} nats two ahead against {one:.3f} one ahead (ln 4 - ln 2 would "
        f"say {math.log(2):.3f} apart; duplicate successors, EOS and the first response "
        "token make it less)"
    )


def _eval_at(run, step: int, column: str) -> float:
    return run.evals[column][run.evals["step"].index(step)]


@answer_check
def ex_e_transfer(train_loss, response_loss, reason, no_eos, correct) -> str:
    """Before the run without EOS in its labels: its training loss and its val_response_loss
    against the correct run's at the same step, each 'higher', 'about the same' or 'lower'."""
    need_one_of(train_loss, DIRECTIONS)
    need_one_of(response_loss, DIRECTIONS)
    note = read_reason(reason, TRANSFER_REASON)
    n = len(no_eos)
    step = max(s for s in no_eos.evals["step"] if s in correct.evals["step"])

    def direction(new, old):
        if abs(new - old) <= 0.05 * old:
            return "about the same"
        return "lower" if new < old else "higher"

    truth = (
        direction(_last20(no_eos), _last20(correct, n)),
        direction(*(_eval_at(r, step, "val_response_loss") for r in (no_eos, correct))),
    )
    for said, real, what in (
        (train_loss, truth[0], "mean of the last 20 raw training losses"),
        (response_loss, truth[1], ("val_response_loss at the last step both runs evaluated")),
    ):
        if said != real:
            raise CheckFailed(f"Not {said!r}: compare the two runs' {what}.")
    return noted(
        (
            f"ok: training loss {truth[0]}, response loss {truth[1]}: the run never learns when "
            "a response ends, and the mask hides that from its own loss"
        ),
        note,
    )
