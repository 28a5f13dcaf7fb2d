"""The learner's sealed exercise predictions and how they fared, read from the learner store.

Each exercise seals a prediction before its runs and reviews it after them
(`labkit.learn.check._predict`); the review keeps one ``prediction`` record. `summary()`
turns those records into one line per exercise and a sentence, for the end of an exercise.
"""

from __future__ import annotations


def records(store=None) -> list[dict]:
    """Every kept prediction review, oldest first: {"exercise", "hits", "total", ...}."""
    from ..store.learner import default_store

    return [r["body"] for r in (store or default_store()).records("prediction")]


def summary(store=None) -> str:
    """Hits per exercise over every reviewed prediction, and the total."""
    kept = records(store)
    if not kept:
        return "No prediction reviewed yet."
    per: dict = {}
    for body in kept:
        hits, total = per.get(body["exercise"], (0, 0))
        per[body["exercise"]] = (hits + body["hits"], total + body["total"])
    lines = [
        f"{name}: {hits} of {total} predicted answers hit"
        for name, (hits, total) in sorted(per.items())
    ]
    hits, total = sum(h for h, _ in per.values()), sum(t for _, t in per.values())
    lines.append(
        f"all exercises: {hits} of {total} ({hits / total:.0%}); every miss is kept "
        "with what the run showed"
    )
    return "\n".join(lines)
