"""Distributed mysteries for the interview drill: a bug of the distributed zoo (or none) on
two real gloo ranks, `labkit drill --distributed`.

    >>> from labkit.learn.drill import Drill
    >>> from labkit.learn.drill.ranks import draw_ranks
    >>> drill = Drill(draw_ranks(4))    # the two ranks start once, at the symptom
    >>> drill.handle("probe rank_check")

One launch of two ranks per mystery trains everything its probes read (`case`); the probes
(`probes`) and the rule book (`book`: menu, forecast words, paths, key terms, interview
answers) are this folder's; the session, the rubric, the feedback and the log are the
drill's own. `BOOK` is what the session asks of a kind of mystery.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

from ..menu import menu_lines
from . import book
from .case import RankCase
from .mystery import RankMystery, draw_ranks, rank_mystery_names, rank_seed_for


def _intro(case: RankCase, out) -> None:
    case.progress = out
    out(f"Training the mystery run on two ranks: {case.steps} steps, and a second seed ...")
    for line in _symptom(case):
        out(line)


def _symptom(case: RankCase) -> list[str]:
    from .probes import symptom_lines

    return symptom_lines(case)


def _answer(case: RankCase, name: str):
    from .probes import answer

    return answer(case, name)


def _read_forecast(name: str, forecast: dict, case) -> str | None:
    from ..words import read_outcome

    return read_outcome(name, forecast.get("text") or "", book.OUTCOMES)


BOOK = SimpleNamespace(
    world=2,
    case=RankCase,
    intro=_intro,
    symptom=_symptom,
    menu=book.MENU,
    outcomes=book.OUTCOMES,
    menu_lines=functools.partial(menu_lines, menu=book.MENU, outcomes=book.OUTCOMES),
    answer=_answer,
    read_forecast=_read_forecast,
    running="  reading {name} from the two ranks' runs (trained at the start) ...",
)

__all__ = ["BOOK", "RankCase", "RankMystery", "draw_ranks", "rank_mystery_names", "rank_seed_for"]
