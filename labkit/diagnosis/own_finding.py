"""`OwnFinding`: what one rule of the setup triage concludes.

Its ``arm`` names the one-variable intervention that tests it (a plain-loop arm of
`own_loops`, or "logger", "shuffled", "cleaned", "held_out_train"), ``variable`` the
(name, before, after) of that one change, and ``expect`` what the intervention's
sealed forecast says: a "lower" loss, "same" (no better than before), "finite".
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class OwnFinding:
    system: str  # H1 | H2 | H3 | NONE | UNKNOWN
    key: str  # short id of the mechanism, compared across seeds
    mechanism: str
    arm: str | None = None  # the intervention: "own", "rebuilt", "lr/10", "logger", ...
    variable: tuple | None = None  # (name, before, after) of the one variable changed
    expect: str = "lower"  # the forecast: "lower" loss, "same" (no better), "finite", "held_out"
    notes: list = field(default_factory=list)
