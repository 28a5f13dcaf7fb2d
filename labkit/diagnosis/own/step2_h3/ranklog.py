"""H3 on a distributed setup: a reported loss that is one rank's local value.

Each rank's raw loss is the value it backpropagated (`rankhooks`); the loss of the step is
their mean over the ranks. A report that equals the rank's own raw loss at every step while
it differs from that mean is a rank's local value, not the global one.
"""

from __future__ import annotations

from ...finding import Finding
from ..margins import above

GAP = 1e-4  # relative: a report this far from the mean over ranks is not that mean
SAME = 1e-5  # relative: a report this close to the rank's own loss is that loss (loss.item())


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-12)


def compare(ranks: list[dict]) -> dict | None:
    """On one seed: the largest gap between a report and the mean over ranks, and between a
    report and its own rank's raw loss; None when the steps cannot be paired (not one
    backward per logged step on every rank, or no report)."""
    if any(len(ev["raw"]) != len(ev["reported"]) for ev in ranks):
        return None
    mean = [sum(vs) / len(vs) for vs in zip(*(ev["raw"] for ev in ranks))]
    pairs = [(r, i, v) for r, ev in enumerate(ranks) for i, v in enumerate(ev["reported"])]
    pairs = [(r, i, v) for r, i, v in pairs if v is not None]
    if not pairs:
        return None
    gap = max((_rel(v, mean[i]), r, i) for r, i, v in pairs)
    local = max(_rel(v, ranks[r]["raw"][i]) for r, i, v in pairs)
    allreduced = [  # the one change: each step's reports averaged over the ranks
        sum(ev["reported"][i] for ev in ranks) / len(ranks)
        for i in range(len(mean))
        if all(ev["reported"][i] is not None for ev in ranks)
    ]
    fixed = [m for i, m in enumerate(mean) if all(ev["reported"][i] is not None for ev in ranks)]
    after = max((_rel(a, m) for a, m in zip(allreduced, fixed)), default=None)
    return {"gap": gap[0], "rank": gap[1], "step": gap[2], "local": local, "after": after}


def reported_rule(evs: dict) -> Finding | None:
    """`evs`: {seed: [each rank's evidence]}."""
    seen = {seed: compare(ranks) for seed, ranks in evs.items()}
    if not all(
        c is not None
        and above("ranks.report_gap", c["gap"], GAP, seed=seed, log=True)
        and not above("ranks.report_local", c["local"], SAME, seed=seed)
        for seed, c in seen.items()
    ):
        return None
    seen = list(seen.values())
    c = seen[0]
    return Finding(
        "H3",
        "local_reported_loss",
        f"the reported loss is each rank's local value, not the mean over the ranks: every "
        f"report equals its own rank's loss (within {SAME:g}, relative), and differs from the "
        f"mean over the ranks by up to {c['gap']:.3g} (relative; rank {c['rank']}, step "
        f"{c['step']}): log the loss all-reduced and divided by world_size",
        arm="allreduce_report",
        variable=("the reported loss", "each rank's loss.item()", "all-reduced / world_size"),
    )


def sign_reported(evs: dict) -> list[tuple[bool, str]]:
    """Per seed: whether averaging the ranks' reports gives the mean loss (the one change)."""
    out = []
    for seed, ranks in evs.items():
        c = compare(ranks)
        after = None if c is None else c["after"]
        if after is None:  # no step with a report on every rank: nothing to average
            out.append(
                (False, f"seed {seed}: the ranks' reports could not be averaged step by step")
            )
            continue
        met = after <= SAME
        out.append(
            (
                met,
                (
                    f"seed {seed}: the reports averaged over the ranks differ from the mean loss by "
                    f"{after:.2g} at most (relative), {'within' if met else 'beyond'} {SAME:g}"
                ),
            )
        )
    return out


def sign_fixed_report(fixed: dict) -> list[tuple[bool, str]]:
    """Per seed, for a fix of the learner's: whether its reports equal the mean loss over the
    ranks (within `SAME`, relative) at every step."""
    out = []
    for seed, ranks in fixed.items():
        c = compare(ranks)
        if c is None:
            out.append((False, f"seed {seed}: the reports could not be paired with the losses"))
            continue
        met = c["gap"] <= SAME
        said = (
            f"seed {seed}: the fixed reports differ from the mean loss over the ranks by "
            f"{c['gap']:.2g} at most (relative), {'within' if met else 'beyond'} {SAME:g}"
        )
        out.append((met, said))
    return out
