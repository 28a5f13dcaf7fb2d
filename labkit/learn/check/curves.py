"""The curve quiz's answer check: label each unlabelled curve with its case."""

from __future__ import annotations

from ...errors import suggest
from ..curves.quiz import Quiz
from ..curves import CASES
from ._base import CheckFailed, answer_check

# What to look at on a curve of each case, worded so that it does not name the case.
LOOK_AT = {
    "overfitting": "its val loss bottoms out early and then climbs while the training points "
    "keep falling",
    "high_flat": "its loss stays high and hardly moves even though the update norm is not zero",
    "spiking": "single steps jump far above their neighbours and the next step is back down",
    "val_below_train": "its val loss runs below the cloud of training points the whole way",
    "flat_train": "its update norm is exactly zero at every step, so the weights never move",
    "nan": "its loss stops being a number part way through and never comes back",
    "metric_flat": "its loss falls steadily while the accuracy panel hardly moves",
}


def _case(value) -> str | None:
    """A case key from a key or a case number (1-7); None if it is neither."""
    if isinstance(value, int) and not isinstance(value, bool):
        return next((k for k, c in CASES.items() if c.number == value), None)
    return value if value in CASES else None


@answer_check
def curves_quiz(quiz, answers) -> str:
    """Which case made each unlabelled curve of the quiz?"""
    if not isinstance(quiz, Quiz):
        raise CheckFailed(f"Pass the quiz you drew (curve_quiz.draw()), not {type(quiz).__name__}.")
    key = quiz.answer_key()
    if not isinstance(answers, dict) or set(answers) != set(key):
        raise CheckFailed(
            f"Answer with a dict that labels every curve, {', '.join(key)}, with a "
            f"case name such as 'spiking' or its number; got {answers!r}."
        )
    for letter in key:
        if _case(answers[letter]) is None:
            raise CheckFailed(
                f"Curve {letter}: {answers[letter]!r} is not a case; use one of "
                f"{', '.join(CASES)} or a number 1-7.{suggest(answers[letter], CASES)}"
            )
    wrong = [letter for letter in key if _case(answers[letter]) != key[letter]]
    if wrong:
        first = wrong[0]
        raise CheckFailed(
            f"{len(wrong)} of {len(key)} labels are not right yet; curve {first} is "
            f"not {_case(answers[first])!r}: {LOOK_AT[key[first]]}."
        )
    return f"ok: all {len(key)} curves labelled correctly (quiz seed {quiz.seed})"
