"""`Finding`: what one rule of either triage concludes, the zoo's (`zoo.rules`) or the
learner's own code's (`own.rules`).

Both say which ``system`` (H1, H2, H3, NONE; UNKNOWN on the own-code side), a short
``key`` compared across seeds, and the ``mechanism`` line of the conviction. Then each
says how its one-variable intervention goes:
- on the zoo, ``seam`` is the seam put back to the reference and ``forecast`` the sealed
  FORECAST of that run;
- on the learner's own code, ``arm`` names the intervention (a plain-loop arm of
  `own.loops`, or "logger", "shuffled", "cleaned", "held_out_train"), ``variable`` the
  (name, before, after) of that one change, and ``expect`` what its sealed forecast says:
  a "lower" loss, "same" (no better than before), "finite".
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
    arm: str | None = None  # own code: the intervention: "own", "rebuilt", "lr/10", "logger", ...
    variable: tuple | None = None  # own code: (name, before, after) of the one variable changed
    expect: str = "lower"  # own code: the forecast: "lower" loss, "same", "finite", "held_out"
    notes: list = field(default_factory=list)


OwnFinding = Finding  # the name the own-code rules were written with: the very same class
