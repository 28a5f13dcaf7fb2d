"""A mechanism as a structured claim the program judges exactly, beside prose a person reads.

A `Claim` is a small form: each field names one part of the mechanism in the exercise's own
terms and takes one answer from a closed list (`Field.choices`). The check compares each
field with the one right choice, so every right claim passes and every wrong one fails, with
the teaching sentence of the first part that is off (`Field.look`), whatever the words.

The learner's explanation beside it is never judged by its words. It is kept: the check's
line says so, `labkit grade --manual` exports it for a person, and the rubric's reading
comes back only as a hint ("the rubric finds 3 of the 4 ideas ...").
"""

from __future__ import annotations

from dataclasses import dataclass

from ._base import CheckFailed, NotYetAnswered
from ._meaning import Rubric
from ._words import need_text, read_reason

KEPT = "your explanation is kept for your instructor and for you to compare with the model answer"


@dataclass(frozen=True)
class Field:
    """One part of a claim: the closed list of answers, the right one, and where to look."""

    choices: tuple  # of str, as the learner types them (case and spaces do not matter)
    right: str
    look: str  # a sentence for a wrong choice: what to read again, never the answer

    def __post_init__(self):
        if self.right not in self.choices:
            raise ValueError(f"right={self.right!r} is not one of choices={self.choices!r}.")


@dataclass(frozen=True)
class Claim:
    """The form of a structured claim: field name -> Field. Print it to see the form."""

    fields: dict

    def __str__(self):
        return "\n".join(
            f"- {name!r}: one of {', '.join(map(repr, f.choices))}"
            for name, f in self.fields.items()
        )

    __repr__ = __str__

    def stub(self) -> dict:
        """The form to fill in, every field a ... placeholder."""
        return dict.fromkeys(self.fields, ...)

    def judge(self, answer) -> int:
        """The number of fields, when every one is right; else CheckFailed that teaches."""
        if not isinstance(answer, dict) or set(answer) != set(self.fields):
            raise CheckFailed(
                f"Answer with a dict of the keys {', '.join(map(repr, self.fields))}, one "
                f"choice each (print the form to see them); got {answer!r}."
            )
        if any(v is ... for v in answer.values()):
            missing = [k for k, v in answer.items() if v is ...]
            raise NotYetAnswered(
                f"Replace the ... of {', '.join(map(repr, missing))} with one of its choices, "
                "then run this cell again."
            )
        wrong = []
        for name, field in self.fields.items():
            given = _normal(answer[name])
            if given not in {_normal(c) for c in field.choices}:
                raise CheckFailed(
                    f"{name!r} takes one of {', '.join(map(repr, field.choices))}; "
                    f"got {answer[name]!r}."
                )
            if given != _normal(field.right):
                wrong.append(name)
        if wrong:
            first = self.fields[wrong[0]]
            raise CheckFailed(
                f"{len(wrong)} of the {len(self.fields)} parts of your claim "
                f"{'is' if len(wrong) == 1 else 'are'} not what the runs show; "
                f"{wrong[0]!r} first: {first.look}"
            )
        return len(self.fields)


def _normal(value) -> str:
    return " ".join(str(value).lower().split())


def judge_mechanism(claim, explanation, form: Claim, rubric: Rubric, model: str) -> str:
    """The claim decides; the explanation is required, kept and shown the model answer.
    The rubric's reading comes back as a hint and never changes the verdict."""
    parts = form.judge(claim)
    need_text(explanation, "your explanation")
    hint = read_reason(explanation, rubric, "your explanation").replace(
        " (a person grades the reason)", ""
    )
    lines = [
        f"ok: all {parts} parts of the mechanism are right; {KEPT}:",
        f"  model answer: {model}",
    ]
    if hint:
        lines.append(f"  a hint, not a grade: {hint}")
    return "\n".join(lines)
