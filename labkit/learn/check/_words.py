"""Reading a written explanation by a key-term rubric that the learner can read too.

A rubric is a dict {idea: phrases}: the idea is what the explanation must say, in the
learner's words; the phrases are the words that count as saying it, matched at word
boundaries exactly as the drill matches them (`labkit.learn.drill.words.found`). Every
idea must be named. An explanation longer than `MAX_WORDS` is refused, so that pasting
the printed outputs cannot stand in for one. Print a rubric with `rubric_text(RUBRIC)`.
"""

from __future__ import annotations

from ..drill.words import found
from ._base import CheckFailed, NotYetAnswered

MAX_WORDS = 120


def rubric_text(rubric: dict) -> str:
    """The rubric as lines a learner reads: each idea and the words that name it."""
    return "\n".join(f"- {idea}: {', '.join(repr(p) for p in phrases)}"
                     for idea, phrases in rubric.items())


def ideas_found(text: str, rubric: dict) -> list[str]:
    """The ideas of `rubric` that `text` names."""
    return [idea for idea, phrases in rubric.items() if any(found(p, text) for p in phrases)]


def need_text(text, what: str = "your explanation") -> str:
    """Refuse anything but a non-empty string of at most MAX_WORDS words."""
    if text is None or (isinstance(text, str) and not text.strip()):
        raise NotYetAnswered(f"Write {what} as a string of a few sentences, then run this cell "
                             "again.")
    if not isinstance(text, str):
        raise CheckFailed(f"Write {what} as a string; got {type(text).__name__}.")
    if len(text.split()) > MAX_WORDS:
        raise CheckFailed(f"{what.capitalize()} has {len(text.split())} words; say it in your own "
                          f"words in at most {MAX_WORDS}, not by pasting outputs.")
    return text


def score_rubric(text, rubric: dict, what: str = "your explanation") -> str:
    """Pass when `text` names every idea of `rubric`; else name the first idea it misses."""
    need_text(text, what)
    named = ideas_found(text, rubric)
    missing = [idea for idea in rubric if idea not in named]
    if missing:
        raise CheckFailed(f"{what.capitalize()} names {len(named)} of the {len(rubric)} ideas of "
                          f"the rubric; it does not yet {missing[0]}.")
    return f"ok: all {len(rubric)} ideas of the rubric named"
