"""Reading a written explanation by a rubric of ideas that the learner can read too.

Where a check has a structured claim (which layers, which direction, which answer), the claim
alone decides it, exactly; the reason beside it is read by `read_reason` as feedback for the
learner and left to a person to grade. `score_rubric` still decides the checks whose answer
is prose only.

A rubric (`_meaning.Rubric`) lists the ideas an explanation must say, and reads each by its
concepts, so that other words for the same idea count and a reversal or denial of it does
not (see `_meaning`). Every idea must be said, and none contradicted. An explanation longer
than `MAX_WORDS` is refused, so that pasting the printed outputs cannot stand in for one.
Print a rubric (`print(MECHANISM)`) to see its ideas.
"""

from __future__ import annotations

from ...core.learner.prose import says_nothing
from ._base import CheckFailed, NotYetAnswered
from ._meaning import Rubric, read

MAX_WORDS = 120


def rubric_text(rubric: Rubric) -> str:
    """The rubric as lines a learner reads: each idea an explanation must say."""
    return str(rubric)


def need_text(text, what: str = "your explanation") -> str:
    """Refuse anything but a non-empty string of at most MAX_WORDS words."""
    if text is None or (isinstance(text, str) and not text.strip()):
        raise NotYetAnswered(
            f"Write {what} as a string of a few sentences, then run this cell again."
        )
    if not isinstance(text, str):
        raise CheckFailed(f"Write {what} as a string; got {type(text).__name__}.")
    if len(text.split()) > MAX_WORDS:
        raise CheckFailed(
            f"{what.capitalize()} has {len(text.split())} words; say it in your own "
            f"words in at most {MAX_WORDS}, not by pasting outputs."
        )
    empty = says_nothing(text)
    if empty:
        raise CheckFailed(
            f"{what.capitalize()} {empty}, so it says nothing a person could grade: write "
            "a sentence in the exercise's own terms (which layer, the loss, a gradient, a step)."
        )
    return text


def score_rubric(text, rubric: Rubric, what: str = "your explanation") -> str:
    """Pass when `text` says every idea of `rubric` and contradicts none; else say what is off."""
    need_text(text, what)
    named, wrong = read(text, rubric)
    if wrong:
        raise CheckFailed(
            f"{what.capitalize()} says {wrong[0]}, and that is not what happens: "
            "read the runs again and say what they show."
        )
    missing = [idea.says for idea in rubric.ideas if idea not in named]
    if missing:
        raise CheckFailed(
            f"{what.capitalize()} names {len(named)} of the {len(rubric)} ideas of "
            f"the rubric; it does not yet {missing[0]}."
        )
    return f"ok: all {len(rubric)} ideas of the rubric named"


def read_reason(text, rubric: Rubric, what: str = "your reason") -> str:
    """The rubric's reading of `text` as one clause of feedback ("" when it finds every idea).
    It never fails the check: only text that says nothing is refused (`need_text`)."""
    need_text(text, what)
    named, wrong = read(text, rubric)
    if wrong:
        return (
            f"the rubric reads {what} as saying {wrong[0]}, which the runs do not show "
            "(a person grades the reason)"
        )
    missing = [idea.says for idea in rubric.ideas if idea not in named]
    if missing:
        return (
            f"the rubric finds {len(named)} of the {len(rubric)} ideas in {what}; it does not "
            f"yet {missing[0]} (a person grades the reason)"
        )
    return ""


def noted(line: str, note: str) -> str:
    """A check's one line, with the rubric's feedback on the reason after it."""
    return f"{line}; {note}" if note else line
