"""Exercise B's answer checks: parameters left out of the optimizer."""

from __future__ import annotations

from ._base import CheckFailed, answer_check, layer_groups, need_bool, need_one_of

GRAD_STATES = ("none", "zero", "finite")
VARIANTS = ("backbone_only", "head_only")  # which part the optimizer was given


@answer_check
def ex_b_frozen_groups(answer, run) -> str:
    """Which layer groups never move (update_norm exactly 0 at every step) in this run?"""
    truth = {g for g in run.groups if all(v == 0 for v in run.table[f"update_norm/{g}"])}
    if not truth:
        raise CheckFailed("Every group of this run moves at some step, so no parameter was left "
                          "out of its optimizer: pass a run trained with "
                          "bug='missing_optimizer_params' or its ':head_only' variant.")
    given = layer_groups(answer, run)
    if given - truth:
        extra = ", ".join(sorted(given - truth))
        raise CheckFailed(f"You listed {extra}, whose update_norm is above 0 at least once: those "
                          "weights move, however slowly, because the optimizer owns them.")
    if truth - given:
        raise CheckFailed(f"You missed {len(truth - given)} group(s) whose update_norm is exactly 0 "
                          "at every step: a group can have a large gradient and still never move.")
    return f"ok: {', '.join(sorted(truth))}: a gradient at every step, an update of exactly 0"


@answer_check
def ex_b_grad_state(answer) -> str:
    """The gradient of the parameters left out of the optimizer: 'none', 'zero' or 'finite'?"""
    need_one_of(answer, GRAD_STATES)
    if answer == "none":
        raise CheckFailed("None would mean autograd never reached those weights, yet they are still "
                          "between the input and the loss: their grad_norm column holds numbers, "
                          "not null.")
    if answer == "zero":
        raise CheckFailed("Their grad_norm column is far above 0 at every step: the gradient is "
                          "computed, and what is missing is the step that applies it.")
    return "ok: a finite, nonzero gradient that nothing applies"


@answer_check
def ex_b_zero_grad_clears(answer) -> str:
    """Does optimizer.zero_grad() clear the gradient of a parameter the optimizer does not own?"""
    need_bool(answer)
    if answer:
        raise CheckFailed("If zero_grad() cleared it, the left-out group's grad_norm would stay "
                          "near its step-0 size as in the healthy run: compare its first and last "
                          "values.")
    return "ok: zero_grad() clears only what the optimizer owns, so the left-out gradient piles up"


@answer_check
def ex_b_worse_variant(answer) -> str:
    """Which omission hurts the loss more: optimizing the backbone only, or the head only?"""
    need_one_of(answer, VARIANTS)
    if answer == "head_only":
        raise CheckFailed("Compare the means of the last 20 raw losses of the two runs before you "
                          "answer: the variant hurt more is the one whose loss ends higher.")
    return "ok: a frozen random head blocks more than a frozen random backbone"
