"""`Finding`: what one rule of either triage concludes (`OwnFinding` is the same class).

Its ``arm`` names the one-variable intervention that tests it (a plain-loop arm of
`own.loops`, or "logger", "shuffled", "cleaned", "held_out_train"), ``variable`` the
(name, before, after) of that one change, and ``expect`` what the intervention's
sealed forecast says: a "lower" loss, "same" (no better than before), "finite".
On the zoo (`zoo.rules`), ``seam`` is the seam put back to the reference instead, and
``forecast`` the sealed FORECAST of that run.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Finding:
    system: str  # H1 | H2 | H3 | NONE | UNKNOWN
    key: str  # short id of the mechanism, compared across seeds
    mechanism: str
    seam: str | None = None  # zoo: the seam to put back to the reference in the intervention
    forecast: str | None = None  # zoo: the FORECAST for that intervention
    arm: str | None = None  # the intervention: "own", "rebuilt", "lr/10", "logger", ...
    variable: tuple | None = None  # (name, before, after) of the one variable changed
    expect: str = "lower"  # the forecast: "lower" loss, "same" (no better), "finite", "held_out"
    notes: list = field(default_factory=list)


OwnFinding = Finding  # the name the own-code rules were written with
