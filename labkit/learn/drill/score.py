"""The drill's rubric: six parts, 100 points, every deduction explained in one line.

  system      35  the conviction names the mystery's system (H1, H2, H3, or NONE if healthy)
  mechanism   20  with the right system: the share of the mechanism's key-term groups named
  probes      15  the best cheapest path: (share of its probes you ran) x min(1, its cost / spent)
  forecasts   10  the share of probes whose written forecast named the outcome they showed
  order       10  -5 for an LR sweep before raw_vs_reported and the overfit or label-shuffle
                  probe; -2 when the first probe is not raw_vs_reported; -1 per probe run with
                  no hypothesis stated (at most -3); 0 with no probe at all
  time        10  no clock: 10 up to 15 minutes, then -1 per 3 minutes; a clock of N minutes:
                  5 + 5 x the share of it left; 0 without a conviction or once the clock ran out

A distributed mystery (`drill.ranks`) is scored by the same six parts against its own menu,
paths and key terms (the mystery carries them); its first probe is reported_vs_mean and its
expensive one, held back until the cheap ones are read, is second_seed.

A wrong system caps the score at 45, and a right system with its mechanism named
starts at 55, so a careless wrong conviction always scores below a disciplined right one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .words import groups_matched

MAX = {"system": 35, "mechanism": 20, "probes": 15, "forecasts": 10, "order": 10, "time": 10}
FREE_MINUTES = 15  # with no clock, time costs nothing up to here ...
MINUTES_PER_POINT = 3  # ... then one point per this many minutes


@dataclass
class Score:
    parts: list  # (name, points, max, why)
    best_path: list  # the cheapest path closest to what the learner did: [(probe, outcome)]

    @property
    def total(self) -> int:
        return sum(p for _, p, _, _ in self.parts)

    def as_dict(self) -> dict:
        return {name: points for name, points, _, _ in self.parts}


def _path_cost(path, menu) -> int:
    return sum(menu[name].price for name, _ in path)


def score(
    mystery,
    probes: list,
    conviction: dict | None,
    *,
    elapsed_s: float,
    minutes: float | None = None,
    timed_out: bool = False,
) -> Score:
    """`probes`: the probes run, in order, as dicts with name, hypothesis, predicted, outcome.
    `conviction`: {"system", "text"} or None. `mystery`: a `Mystery` or a distributed
    `RankMystery`; its menu, paths, key terms and order rule are what it is scored against."""
    parts = []
    right = conviction is not None and conviction["system"] == mystery.system
    if conviction is None:
        parts.append(("system", 0, MAX["system"], "no conviction"))
    else:
        parts.append(
            (
                "system",
                MAX["system"] if right else 0,
                MAX["system"],
                f"you named {conviction['system']}; it was {mystery.system}",
            )
        )
    groups = mystery.key_terms
    hits = groups_matched(conviction["text"], groups) if conviction else [False] * len(groups)
    named = [g[0] for g, hit in zip(groups, hits) if hit]
    missed = [g[0] for g, hit in zip(groups, hits) if not hit]
    mech = round(MAX["mechanism"] * sum(hits) / len(groups)) if right else 0
    why = (
        "the system was wrong, so the mechanism earns nothing"
        if conviction and not right
        else "no conviction"
        if conviction is None
        else f"named {', '.join(named) or 'none'}"
        + (f"; missing a word like {' or '.join(missed)}" if missed else "")
    )
    parts.append(("mechanism", mech, MAX["mechanism"], why))
    parts.append(_probes_part(mystery, probes))
    parts.append(_forecast_part(probes))
    parts.append(_order_part(mystery, probes))
    parts.append(_time_part(conviction is not None, elapsed_s, minutes, timed_out))
    return Score(parts, _closest_path(mystery, probes))


def _closest_path(mystery, probes: list):
    names = {p["name"] for p in probes}
    return max(mystery.paths, key=lambda path: sum(n in names for n, _ in path) / len(path))


def _probes_part(mystery, probes: list):
    menu = mystery.menu
    spent = sum(menu[p["name"]].price for p in probes)
    names = {p["name"] for p in probes}
    best = 0.0
    for path in mystery.paths:
        covered = sum(n in names for n, _ in path) / len(path)
        ratio = min(1.0, _path_cost(path, menu) / spent) if spent else 0.0
        best = max(best, covered * ratio)
    cheapest = min(_path_cost(p, menu) for p in mystery.paths)
    why = (
        f"spent {spent} credit(s); the cheapest sufficient path costs {cheapest}"
        if spent
        else "no probe run: nothing was checked"
    )
    return ("probes", round(MAX["probes"] * best), MAX["probes"], why)


def _forecast_part(probes: list):
    if not probes:
        return ("forecasts", 0, MAX["forecasts"], "no probe, so no forecast to check")
    right = sum(p.get("predicted") == p["outcome"] for p in probes)
    unwritten = sum(p.get("predicted") is None for p in probes)
    why = f"{right} of {len(probes)} right" + (
        f"; {unwritten} unwritten or unreadable" if unwritten else ""
    )
    return ("forecasts", round(MAX["forecasts"] * right / len(probes)), MAX["forecasts"], why)


def _order_part(mystery, probes: list):
    if not probes:
        return ("order", 0, MAX["order"], "no probe run")
    points, notes = MAX["order"], []
    names = [p["name"] for p in probes]
    late, every, some, note = mystery.late_rule
    if late in names:
        before = names[: names.index(late)]
        if not set(every) <= set(before) or not set(some) & set(before):
            points -= 5
            notes.append(note)
    first = mystery.first_probe
    if names[0] != first:
        points -= 2
        notes.append(f"first probe {names[0]}, not {first} (-2)")
    blind = sum(not p.get("hypothesis") for p in probes)
    if blind:
        points -= min(3, blind)
        notes.append(f"{blind} probe(s) with no hypothesis stated (-{min(3, blind)})")
    return (
        "order",
        max(0, points),
        MAX["order"],
        "; ".join(notes) or "instrumentation first, a hypothesis before every probe",
    )


def _time_part(convicted: bool, elapsed_s: float, minutes: float | None, timed_out: bool):
    used = f"{elapsed_s / 60:.1f} min" if elapsed_s >= 60 else f"{elapsed_s:.0f} s"
    if timed_out:
        return ("time", 0, MAX["time"], f"the {minutes:g}-minute clock ran out")
    if not convicted:
        return ("time", 0, MAX["time"], f"{used}, no conviction")
    if minutes:
        left = max(0.0, 1 - elapsed_s / (minutes * 60))
        return ("time", round(5 + 5 * left), MAX["time"], f"{used} of a {minutes:g}-minute clock")
    over = max(0.0, elapsed_s / 60 - FREE_MINUTES)
    return (
        "time",
        max(0, round(MAX["time"] - over / MINUTES_PER_POINT)),
        MAX["time"],
        f"{used} (no clock: free up to {FREE_MINUTES} min)",
    )
