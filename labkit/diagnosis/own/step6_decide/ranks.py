"""The triage of a distributed setup (``world_size`` of 2 or more), decided and recorded.

`choose` runs on every rank (the same gathered evidence gives the same finding, so the ranks
agree on which intervention to run) and again here: H3 (a reported loss that is one rank's
own), H2 (the ranks' shares of the data, the order of each epoch), H1 (the ranks' parameters
or buffers drifting apart, gradients summed twice), on every seed. `triage_ranks` launches the
ranks once for several setups (`step1_capture.launch`) and fills one `TriageRecord` each.
"""

from __future__ import annotations

from ...finding import Finding
from .. import margins
from ...record.triage import UNKNOWN, TriageRecord
from ...stepwise import two_seeds
from ..step2_h3.ranklog import compare, reported_rule, sign_reported
from ..step3_h2.shares import describe as describe_shares, shares_rule, sign_set_epoch
from ..step4_h1.drift import (
    buffers_rule,
    double_rule,
    drift_rule,
    sign_double,
    sign_drift,
)

FORECASTS = {
    "wrapper": "the ranks' parameters stay equal (relative difference 0 at every check)",
    "sync": "the ranks' parameters stay equal (relative difference 0 at every check)",
    "broadcast_buffers": "the ranks' buffers agree at every check (relative difference 0)",
    "set_epoch": "the order of the rows changes from epoch to epoch",
    "no_hand_allreduce": "the first gradient shrinks by a factor of world_size",
    "allreduce_report": "the reports averaged over the ranks equal the mean loss",
}


def choose(evs: dict, world: int) -> Finding | None:
    """The first finding that holds on every seed, H3 -> H2 -> H1; None: nothing found.
    `evs`: {seed: [each rank's evidence]}."""
    for rule in (reported_rule, shares_rule, drift_rule, buffers_rule):
        found = rule(evs)
        if found is not None:
            return found
    return double_rule(evs, world)


def _signs(f: Finding, own: dict, signed: dict, world: int) -> list[tuple[bool, str]]:
    if f.arm == "allreduce_report":
        return sign_reported(own)
    if f.arm == "set_epoch":
        return sign_set_epoch(signed)
    if f.arm == "no_hand_allreduce":
        return sign_double(own, signed, world)
    if f.arm == "broadcast_buffers":
        return sign_drift(signed, "buffers")
    return sign_drift(signed)


def _baseline(own: dict, world: int) -> str:
    ev = next(iter(own.values()))
    rows = [r["rows_per_forward"][0] if r["rows_per_forward"] else 0 for r in ev]
    lr = ev[0]["lr"]
    if not ev[0]["raw"]:
        return f"your loop on {world} ranks, {ev[0]['steps']} steps: no loss was backpropagated"
    return (
        f"your loop on {world} ranks, {ev[0]['steps']} steps ({ev[0]['epochs']} epochs): rank "
        f"0's loss {ev[0]['raw'][0]:.3g} -> {ev[0]['raw'][-1]:.3g}; "
        f"{' + '.join(map(str, rows))} = {sum(rows)} rows per step over the ranks (the "
        f"effective batch), lr {lr[0] if lr else None}"
    )


def _acquit(own: dict) -> str:
    """What the healthy evidence measured, each clause from its own numbers."""
    ranks = [ev for evs in own.values() for ev in evs]
    checks = [c for evs in own.values() for c in evs[0]["checks"]]
    if not checks:
        return (
            "no distributed defect measured, but the ranks were not compared: the watch "
            "found no optimizer holding the model's parameters at the first training forward"
        )
    params = max(max(c["max_rel_diff"].values(), default=0.0) for c in checks)
    buffers = [c["buffers_rel_diff"] for c in checks if "buffers_rel_diff" in c]
    fwd = [ev["forwards"] for ev in ranks]
    synced = all(f["ddp"] == f["inner"] == f["ddp_synced"] for f in fwd)
    hand = sum(ev["hand_reduces"] for ev in ranks)
    gap = [compare(r) for r in own.values()]
    return "; ".join(
        [
            (
                f"no distributed defect measured on {len(own)} seeds: the ranks' parameters differ "
                f"by {params:.3g} at most over {len(checks)} checks (relative)"
            ),
            f"their buffers by {max(buffers):.3g} at most over {len(buffers)} checks"
            if buffers
            else "the model holds no floating-point buffers",
            describe_shares(own),
            "every training forward went through DDP with its gradient sync on"
            if synced
            else f"training forwards through DDP / synced / in all: "
            f"{sum(f['ddp'] for f in fwd)} / {sum(f['ddp_synced'] for f in fwd)} / "
            f"{sum(f['inner'] for f in fwd)}",
            f"{hand} all-reduce calls by hand on a parameter's gradient",
            f"the reported loss is the mean over the ranks (within "
            f"{max(g['gap'] for g in gap):.2g}, relative)"
            if all(g is not None for g in gap)
            else "the reported loss was not paired with the ranks' losses step by step",
        ]
    ) + (
        ". The one-process checks of the logger, the data and the optimizer are those of "
        "labkit.diagnose with world_size=1 and were not run here."
    )


def record(
    label: str, world: int, seeds: list, result: dict | None, problems: list
) -> TriageRecord:
    """The filled record of one setup, its threshold comparisons in ``record.margins``."""
    with margins.recording() as log:
        rec = _record(label, world, seeds, result, problems)
    rec.margins = log
    return rec


def _record(label: str, world: int, seeds: list, result, problems: list) -> TriageRecord:
    rec = TriageRecord(f"setup {label} on {world} ranks")
    rec.finding_key, rec.margins, rec.seeds = None, [], list(seeds)
    rec.intervener = _no_intervene
    for row in ("hashes", "overfit", "label_shuffle"):
        rec.set_row(row, f"n/a: not run at world_size={world}", status="n/a")
    if result is None:
        why = "; ".join(problems) or "the ranks returned no result"
        rec.finding_key = "rank_failed"
        rec.set_row("conviction", f"UNKNOWN: {why}", status=UNKNOWN, by="diagnose")
        rec.notes.append(f"no conviction: {why}")
        return rec
    own, signed = result["own"], result["signed"]
    rec.set_row("baseline", _baseline(own, world))
    gaps = [compare(r) for r in own.values()]
    rec.set_row(
        "raw_vs_reported",
        "; ".join(
            f"seed {s}: the reports differ from the mean loss over the ranks by up to "
            f"{g['gap']:.3g} (relative), from each rank's own loss by {g['local']:.3g}"
            if g
            else f"seed {s}: not compared step by step"
            for s, g in zip(own, gaps)
        ),
    )
    rec.notes.append("the ranks' shares of the data: " + describe_shares(own))
    f = choose(own, world)
    if f is None:
        rec.finding_key = "healthy"
        rec.convict("NONE", _acquit(own), by="diagnose", seeds=list(seeds))
        rec.not_needed("intervention", "n/a: no defect to intervene on")
        rec.not_needed("confirmation", f"n/a: seed {seeds[1]} shows the same healthy evidence")
        return rec
    rec.finding_key = f.key
    if f.system == "UNKNOWN":
        rec.set_row("conviction", f"UNKNOWN: {f.mechanism}", status=UNKNOWN, by="diagnose")
        return rec
    rec.convict(f.system, f.mechanism, by="diagnose", seeds=list(seeds))
    if f.variable is None:  # a change labkit cannot make for you
        for row in ("intervention", "confirmation"):
            rec.set_row(row, "not run: make the fix named above and run labkit.diagnose again")
            rec.rows[row]["status"] = UNKNOWN
        return rec
    name, before, after = f.variable
    for row, seed, (met, said) in zip(
        ("intervention", "confirmation"), seeds, _signs(f, own, signed, world)
    ):
        rec.set_row(
            row,
            f"{name}: {before!r} -> {after!r}; FORECAST: {FORECASTS[f.arm]} | {said} "
            f"{'MET' if met else 'NOT met'}",
            variable=name,
            before=before,
            after=after,
            forecast=FORECASTS[f.arm],
            seed=seed,
            met=met,
        )
    return rec


def _no_intervene(fixed_setup, *, budget_s=None):
    raise ValueError(
        "record.intervene(fix) is not built for a setup with world_size > 1; run "
        "labkit.diagnose(fixed_setup) again: it runs the one-change arm on the ranks."
    )


def triage_ranks(setups: dict, seeds=(0, 1), *, timeout_s: float | None = None, **launch_kw):
    """{label: setup} of one world_size, triaged in one launch -> {label: TriageRecord}.
    `timeout_s` bounds the launch (default `LAUNCH_S`); every collective times out after a
    sixth of it, at most `COLLECTIVE_S`, so that a rank left waiting on a dead or hung one
    fails, says so, and leaves time for the sentence."""
    from ..step1_capture.launch import COLLECTIVE_S, LAUNCH_S, launch
    from ..step1_capture.setup import check_methods, world_size_of

    seeds = two_seeds(seeds)
    for s in setups.values():
        check_methods(s)
    worlds = {label: world_size_of(s) for label, s in setups.items()}
    world = max(worlds.values())
    if set(worlds.values()) != {world} or world < 2:
        raise ValueError(f"triage_ranks takes setups of one world_size of 2 or more; got {worlds}.")
    timeout_s = timeout_s or LAUNCH_S
    launch_kw.setdefault("collective_s", min(COLLECTIVE_S, timeout_s / 6))  # room to notice
    out = launch(setups, world, seeds, choose, timeout_s=timeout_s, **launch_kw)
    records = {
        label: record(label, world, seeds, out["results"].get(label), out["problems"])
        for label in setups
    }
    for label, rec in records.items():
        if label not in out["results"]:
            rec.notes.extend(out["problems"])
        rec.launch_s, rec.rank_times = out["seconds"], [s.get("times") for s in out["statuses"]]
    return records


def diagnose_ranks(setup, seeds=(0, 1), *, timeout_s: float | None = None) -> TriageRecord:
    """`labkit.diagnose` on one setup whose ``world_size`` is 2 or more."""
    from ....errors import check_number

    if timeout_s is not None:
        check_number("budget_s", timeout_s, minimum=10, maximum=3600)
    label = type(setup).__name__
    return triage_ranks({label: setup}, seeds, timeout_s=timeout_s)[label]
