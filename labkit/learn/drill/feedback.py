"""What the learner reads when a drill ends: the score, the path, the answer to give."""

from __future__ import annotations

from .answers import PARTS
from .menu import MENU
from .score import Score
from .front.text import wrap


def path_text(path, menu=None) -> str:
    cost = sum((menu or MENU)[n].price for n, _ in path)
    steps = " -> ".join(f"{n} ({o})" for n, o in path)
    return f"{steps}: {cost} credit{'s' if cost != 1 else ''}"


def where_you_left(path, names: list[str]) -> str:
    """Where the learner's sequence of probes first departs from the path."""
    want = [n for n, _ in path]
    if not names:
        return "you ran no probe; the path starts with " + want[0]
    for i, name in enumerate(want):
        if i >= len(names):
            return f"you stopped after {i} probe(s); the path goes on with {name}"
        if names[i] != name:
            return f"probe {i + 1} was {names[i]}; the path runs {name} there"
    extra = len(names) - len(want)
    return "you followed it" + (f", then ran {extra} more probe(s)" if extra > 0 else "")


def ending_lines(mystery, score: Score, probes: list, conviction: dict | None) -> list[str]:
    out = []
    if conviction:
        out += wrap(f"CONVICTION: {conviction['system']} -- {conviction['text']}")
    hidden = f"bug {mystery.bug}" if mystery.bug else "no bug (a healthy run)"
    out += wrap(
        f"The hidden setup: {hidden}, system {mystery.system}, run seed {mystery.run_seed}."
    )
    out += wrap(f"Its mechanism: {mystery.mechanism}.", "  ")
    out.append("Score:")
    for name, points, top, why in score.parts:
        out += wrap(f"{name:<10} {points:>2}/{top:<2}  {why}", "  ")
    out.append("The cheapest sufficient path:")
    out += wrap(path_text(score.best_path, mystery.menu), "  ")
    out += wrap(
        "yours: "
        + (", ".join(p["name"] for p in probes) or "(no probes)")
        + f" -- {where_you_left(score.best_path, [p['name'] for p in probes])}",
        "  ",
    )
    out.append("The interview answer, in five parts:")
    for part, text in zip(PARTS, mystery.interview):
        out += wrap(f"{part}: {text}", "  ")
    return out
