"""The label-shuffle control's close case, decided by further label permutations.

A model wide enough to memorise noise learns shuffled labels too, only later: real labels then
beat shuffled ones on every seed, by less than three seed spreads, and the shuffled runs' own
spread (each seed draws another permutation) can be as large as the gap. Whether the real
labels are just one more permutation is what the spread across permutations tells, so where
the control is close (`data.close`), each seed trains `PERMUTATIONS` more shuffled runs of the
same arm (the same init and batch order, another permutation) and `data.permuted_signal`
reads the gap against their spread. Elsewhere nothing more trains.
"""

from __future__ import annotations

from ..step1_capture import skips as own_skips
from ..step3_h2.data import PERMUTATIONS, close, permuted_signal


def widened(evs, sig: dict) -> dict:
    """`sig`, read again over further permutations where it is close and the budget allows."""
    if not close(sig):
        return sig
    steps = sum(ev.steps for ev in evs) * PERMUTATIONS
    if not own_skips.affordable("further label permutations (the label-shuffle control)", steps):
        return sig
    arm = sig["arm"]
    more = [
        [ev.shuffled(arm, permutation=j).mean for j in range(1, PERMUTATIONS + 1)] for ev in evs
    ]
    return permuted_signal(sig, more)
