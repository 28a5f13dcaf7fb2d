"""Which scored forecasts the calibration record counts: forecasts, not drawings.

- A loss forecast and a gradient-norm forecast are different questions: they are counted
  apart (a forecast's note names its quantity, ``lab15/H1/grad_norm``), and the habit line
  reads the loss forecasts only.
- Lab 15's hypotheses (series ``H1``, ``H2``, ``H3`` of one sealing, same setup) are one
  set of alternatives, of which at most one can be right: the one the run supported (the
  closest) counts against the run; the others are kept as alternatives, not as misses.
- The same forecast question for the same setup (same note and config) scored again, after
  a redraw or a restart, counts once: the first answer.
"""

from __future__ import annotations

import re

HYPOTHESIS = re.compile(r"^H\d$")
SAME_SEALING_S = 60.0  # the curves of one sketch are sealed within this many seconds


def parts(entry: dict) -> list[str]:
    """The note's tag, split: [exercise, series, quantity?]."""
    tag = (entry["forecast"].get("note") or "").split(" | ")[0]
    return tag.split("/") if tag else []


def quantity(entry: dict) -> str:
    return "grad_norm" if "grad_norm" in parts(entry)[2:] else "loss"


def counted(scored: list[dict]) -> tuple[list, list, list]:
    """(loss forecasts, gradient-norm forecasts, alternatives left out), oldest first."""
    first, seen = [], set()
    for e in scored:
        key = (e["forecast"].get("note"), e["forecast"].get("config_hash"))
        if key[0] and key in seen:
            continue  # a redraw of a question already answered
        seen.add(key)
        first.append(e)
    sets: dict = {}
    for e in first:
        p = parts(e)
        if len(p) >= 2 and HYPOTHESIS.match(p[1]):
            sets.setdefault((p[0], quantity(e), e["forecast"].get("config_hash")), []).append(e)
    alternatives = []
    for members in sets.values():
        members.sort(key=lambda e: e["forecast"]["sealed_at"])
        groups, current = [], [members[0]]
        for e in members[1:]:
            if e["forecast"]["sealed_at"] - current[0]["forecast"]["sealed_at"] <= SAME_SEALING_S:
                current.append(e)
            else:
                groups.append(current)
                current = [e]
        groups.append(current)
        for group in groups:
            best = min(
                group,
                key=lambda e: (
                    e["score"]["mean_log_error"] is None,
                    e["score"]["mean_log_error"] or 0.0,
                ),
            )
            alternatives += [e for e in group if e is not best]
    out = [e for e in first if not any(e is a for a in alternatives)]
    return (
        [e for e in out if quantity(e) == "loss"],
        [e for e in out if quantity(e) == "grad_norm"],
        alternatives,
    )
