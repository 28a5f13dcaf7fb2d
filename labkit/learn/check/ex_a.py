"""Exercise A's answer checks: a detach between backbone and head."""

from __future__ import annotations

from ._base import CheckFailed, answer_check, layer_groups, need_bool, need_one_of

CURVES = {"flat": "stays at ln C, nothing learns", "slower": "falls, but more slowly than healthy "
          "and ends well above it", "same": "matches the healthy run", "nan": "blows up"}


@answer_check
def ex_a_null_groups(answer, run) -> str:
    """Which layer groups of the detached run never receive a gradient (grad is None)?"""
    truth = {g for g in run.groups if all(v is None for v in run.table[f"grad_norm/{g}"])}
    if not truth:
        raise CheckFailed("Every grad_norm column of this run holds numbers, so it is not the "
                          "detached run: pass the run you trained with bug='detach'.")
    given = layer_groups(answer, run)
    if given - truth:
        extra = ", ".join(sorted(given - truth))
        raise CheckFailed(f"You listed {extra}, whose grad_norm column holds numbers, not None: "
                          "a layer after the detach is still on the path from the loss.")
    if truth - given:
        raise CheckFailed(f"You missed {len(truth - given)} group(s) whose grad_norm column is None "
                          "at every step: the detach cuts off every layer before it, not only the "
                          "nearest one.")
    return f"ok: {len(truth)} of {len(run.groups)} groups never get a gradient (None, not 0)"


@answer_check
def ex_a_head_learns(answer) -> str:
    """Can the head still learn with the backbone detached?"""
    need_bool(answer)
    if not answer:
        raise CheckFailed("The head sits after the detach, so the loss still reaches it: read "
                          "grad_norm/head and update_norm/head in the detached run, and how far its "
                          "loss falls from step 0.")
    return "ok: the head learns, on features the frozen random backbone gives it"


@answer_check
def ex_a_curve(answer) -> str:
    """What does the detached run's loss curve look like next to the healthy one?"""
    need_one_of(answer, CURVES)
    hints = {"flat": "A flat curve means nothing learns, yet the detached loss moves: compare its "
                     "step-0 loss with the mean of its last 20 steps.",
             "same": "Put the two runs on one plot and compare the means of their last 20 raw "
                     "losses: freezing the backbone costs something.",
             "nan": "No loss of the detached run is non-finite (run.first_nonfinite_step() is "
                    "None): look at how fast it falls, not whether it blows up."}
    if answer in hints:
        raise CheckFailed(hints[answer])
    return f"ok: the curve {CURVES[answer]}"
