"""Two seeds that agree on the system but not on the mechanism within it.

A conviction asks both seeds to agree. When they agree on the system only (the logger is
dishonest on both, but fits one mistake on one seed and another on the other; the replay
finds a mechanism on one seed and nothing on the other), labkit does not stop at UNKNOWN:
- it runs a third seed (`third`), and convicts the mechanism two of the three seeds show;
- when the seeds still name different mechanisms of the same system, it convicts the
  system and names both candidate mistakes;
- an instability (a divergence, an fp16 overflow) seen on any seed is a defect on its own:
  a setup that blows up on some seeds is not healthy, so one seed of three convicts it.
"""

from __future__ import annotations

from .evidence import SeedEvidence
from ...finding import OwnFinding

UNSTABLE = ("divergence", "fp16_overflow", "unsettled")


def third(evs) -> SeedEvidence:
    """Evidence on a third seed, one past the largest of the two, gathered once."""
    seed = max(ev.seed for ev in evs) + 1
    return evs[0].once("third_seed", lambda: SeedEvidence(evs[0].setup, seed))


def _both(system: str, findings: list, seeds: list) -> OwnFinding:
    first = findings[0]
    text = "; ".join(f"seed {s}: {f.mechanism}" for s, f in zip(seeds, findings))
    one = all(
        f.arm == first.arm and f.variable == first.variable for f in findings
    )  # one change tests both
    return OwnFinding(
        system,
        "|".join(sorted({f.key for f in findings})),
        f"{system} on every seed, with two candidate mistakes (the seeds fit different "
        f"ones; check both): {text}",
        arm=first.arm if one else None,
        variable=first.variable if one else None,
        expect=first.expect,
    )


def settle(evs, found: list, rule, system: str, what: str) -> OwnFinding | None:
    """`found`: the per-seed findings of `rule` (None where it found nothing) for the two seeds
    in `evs`. Returns a finding, an UNKNOWN saying why none, or None when neither seed found
    anything."""
    seeds = [ev.seed for ev in evs]
    if all(f is None for f in found):
        return None
    if all(f is not None for f in found) and found[0].key == found[1].key:
        return found[0]
    ev3 = third(evs)
    f3 = rule(ev3)
    alls, allseeds = found + [f3], seeds + [ev3.seed]
    got = [(s, f) for s, f in zip(allseeds, alls) if f is not None]
    keys = [f.key for _, f in got]
    for _, f in got:
        if keys.count(f.key) >= 2:
            on = [str(t) for t, g in got if g.key == f.key]
            off = [str(t) for t in allseeds if str(t) not in on]
            f.notes.append(
                f"seen on seeds {', '.join(on)}; not on seed {', '.join(off)}"
                if off
                else f"seen on seeds {', '.join(on)}"
            )
            f.mechanism += f" (seeds {', '.join(on)} of {', '.join(map(str, allseeds))})"
            return f
    unstable = [(s, f) for s, f in got if f.key in UNSTABLE]
    if unstable:
        s, f = unstable[0]
        f.mechanism += (
            f" (on seed {s} only of {', '.join(map(str, allseeds))}: at these settings the run "
            "is unstable, and whether it blows up depends on the init and the batch order)"
        )
        return f
    if len(got) >= 2:
        return _both(system, [f for _, f in got], [s for s, _ in got])
    named = "; ".join(f"seed {s}: {f.key if f else 'nothing'}" for s, f in zip(allseeds, alls))
    return OwnFinding(
        "UNKNOWN",
        "unknown",
        f"{what} on one seed of three only ({named}); a conviction needs two seeds to agree",
    )
