"""Exercise E's answer checks: five causal-LM runs that differ only in their labels."""

from __future__ import annotations

import math

from ...errors import suggest
from ._base import CheckFailed, answer_check

RUNS = ("correct", "double_shift", "padding_in_loss", "all_masked_labels", "prompt_in_loss")


def _run_name(answer) -> str:
    if answer not in RUNS:
        raise CheckFailed(f"Answer with one of the run names {', '.join(map(repr, RUNS))}; got "
                          f"{answer!r}.{suggest(answer, RUNS)}")
    return answer


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CheckFailed(f"{name} must be a finite number; got {value!r}.")
    return float(value)


@answer_check
def ex_e_nan_variant(answer: str) -> str:
    """Which run's loss is NaN from the first step?"""
    if _run_name(answer) != "all_masked_labels":
        raise CheckFailed(f"The {answer!r} run logs a finite loss at every step; find the run "
                          "whose valid_tokens column is 0, since a mean over zero tokens is 0/0.")
    return "ok: every label is -100, so the mean is 0/0 = NaN and every update is exactly 0"


@answer_check
def ex_e_two_ahead(answer: str) -> str:
    """Which run trains position t to predict the token at t+2?"""
    if _run_name(answer) != "double_shift":
        raise CheckFailed(f"The {answer!r} run pairs each position with the next token; look for "
                          "the run whose val_response_loss rises while its training loss falls, "
                          "then read its labels row against input_ids in the audit.")
    return "ok: labels shifted by hand and again in the model: each position targets t+2"


@answer_check
def ex_e_double_shift_floor(value: float) -> str:
    """The lowest loss a double-shifted run can reach on this corpus, in nats."""
    value = _number("value", value)
    if abs(value - math.log(2)) < 0.05:
        raise CheckFailed("ln 2 is the floor one step ahead, where a token has 2 equally likely "
                          "successors; two steps ahead the chain has branched twice, so count paths.")
    if abs(value - math.log(4)) > 0.05:
        raise CheckFailed(f"{value:.3f} nats is not the floor: a uniform choice among k equally "
                          "likely tokens costs ln k, so count the tokens reachable in two steps.")
    return f"ok: 2 x 2 = 4 equally likely paths two steps ahead, floor ln 4 = {math.log(4):.3f}"


@answer_check
def ex_e_inflated_count(answer) -> str:
    """Which runs put more target tokens into the mean than the correct run does?"""
    names = {_run_name(a) for a in ([answer] if isinstance(answer, str) else answer)}
    expected = {"padding_in_loss", "prompt_in_loss"}
    if names - expected:
        raise CheckFailed(f"{sorted(names - expected)} do not count more tokens than the correct "
                          "run; compare each run's mean valid_tokens with the correct run's.")
    if expected - names:
        raise CheckFailed(f"You found {len(names)} of the runs that count extra tokens; check the "
                          "mean valid_tokens of every run against the correct run, not only one.")
    return "ok: padding_in_loss adds pad targets, prompt_in_loss adds unlearnable prompt targets"


@answer_check
def ex_e_perplexity(loss: float, perplexity: float) -> str:
    """Perplexity is e to the mean per-token loss (the loss is in nats)."""
    loss, perplexity = _number("loss", loss), _number("perplexity", perplexity)
    if math.isclose(perplexity, math.exp(loss), rel_tol=1e-3):
        return f"ok: e^{loss:.3f} = {math.exp(loss):.2f}"
    if any(math.isclose(perplexity, b ** loss, rel_tol=1e-3) for b in (2, 10)):
        raise CheckFailed("Use the base of the loss: PyTorch's cross-entropy is a natural log "
                          "(nats), so undo it with e, not with 2 or 10.")
    raise CheckFailed(f"{perplexity!r} is not the perplexity of a loss of {loss:.3f}: perplexity "
                      "undoes the log of the mean per-token loss, so exponentiate the loss.")
