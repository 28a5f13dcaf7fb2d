"""The triage of a distributed setup (``world_size`` of 2 or more), decided and recorded.

`choose` runs on every rank (the same gathered evidence gives the same finding, so the ranks
agree on which intervention to run) and again here: H3 (a reported loss that is one rank's
own), H2 (the ranks' shares of the data, the order of each epoch), H1 (the ranks' parameters
or buffers drifting apart, gradients summed twice), on every seed. Here, in the parent, the
one-process checks (`single`) run on what the ranks saw, and the first system wins: H3, then
H2, then H1, the distributed finding first within a system. `triage_ranks` launches the ranks
once for several setups (`step1_capture.launch`) and fills one `TriageRecord` each;
``record.intervene(fix)`` runs the fix on the ranks (`rankfix`).
"""

from __future__ import annotations

import contextlib
import functools

import torch

from ...finding import Finding
from .. import margins
from ...record.triage import UNKNOWN, TriageRecord
from ...stepwise import two_seeds
from . import single
from .rankfix import FIX_ONLY, FORECASTS, sign_fix, signs
from ..step2_h3.ranklog import compare, reported_rule
from ..step3_h2.shares import describe as describe_shares, shares_rule
from ..step4_h1.drift import (
    buffers_rule,
    double_rule,
    drift_rule,
    steps_apart_rule,
    unanswered_rule,
)


def choose(evs: dict, world: int) -> Finding | None:
    """The first finding that holds on every seed, H3 -> H2 -> H1; None: nothing found.
    `evs`: {seed: [each rank's evidence]}."""
    rules = (
        reported_rule,
        shares_rule,
        steps_apart_rule,
        drift_rule,
        buffers_rule,
        unanswered_rule,
    )
    for rule in rules:
        found = rule(evs)
        if found is not None:
            return found
    return double_rule(evs, world)


ORDER = ("H3", "H2", "H1")


def first(found: Finding | None, one: Finding | None) -> Finding | None:
    """The distributed finding `found` or the one-process `one`, whichever system comes first
    (H3, H2, H1); the distributed one on a tie. None: both healthy; UNKNOWN: the one-process
    checks could not tell and nothing distributed was found."""
    if one is None or one.system not in ORDER:
        return found if found is not None or one is None or one.system == "NONE" else one
    if found is None or ORDER.index(one.system) < ORDER.index(found.system):
        return one
    return found


def _baseline(own: dict, world: int) -> str:
    ev = next(iter(own.values()))
    rows = [_rows_per_step(r) for r in ev]
    lr = ev[0]["lr"]
    if not ev[0]["raw"]:
        return f"your loop on {world} ranks, {ev[0]['steps']} steps: no loss was backpropagated"
    return (
        f"your loop on {world} ranks, {ev[0]['steps']} steps ({ev[0]['epochs']} epochs): rank "
        f"0's loss {ev[0]['raw'][0]:.3g} -> {ev[0]['raw'][-1]:.3g}; "
        f"{' + '.join(f'{n:g}' for n in rows)} = {sum(rows):g} rows per optimizer step over the "
        f"ranks (the effective batch), lr {lr[0] if lr else None}"
    )


def _rows_per_step(ev: dict) -> float:
    """Rows a rank trains on per optimizer step: its first batch's rows where it steps once
    per forward, else its rows over its optimizer steps (micro-batches under accumulation)."""
    forwards, steps = ev["rows_per_forward"], ev.get("optimizer_steps")
    if not forwards:
        return 0
    if not steps or steps == len(forwards):
        return forwards[0]
    return round(sum(forwards) / steps, 1)


def _acquit(own: dict, alone: str, gap: list, shares: str) -> str:
    """What the healthy evidence measured, each clause from its own numbers; `alone`: the
    one-process checks' words (`single.acquittal`); `gap` and `shares`: the report's
    comparison per seed and the shares' sentence, as the record's rows have them."""
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
    return (
        "; ".join(
            [
                (
                    f"no distributed defect measured on {len(own)} seeds: the ranks' parameters differ "
                    f"by {params:.3g} at most over {len(checks)} checks (relative)"
                ),
                f"their buffers by {max(buffers):.3g} at most over {len(buffers)} checks"
                if buffers
                else "the model holds no floating-point buffers",
                shares,
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
        )
        + f". {alone[0].upper()}{alone[1:]}"
    )


def record(
    label: str,
    world: int,
    seeds: list,
    result: dict | None,
    problems: list,
    setup=None,
    budget_s: float | None = None,
) -> TriageRecord:
    """The filled record of one setup, its threshold comparisons in ``record.margins``. The
    one-process checks' plain loops run on one thread, as each rank does: the model of a
    distributed setup is small enough to fit a laptop's two ranks, and on a busy 2-core
    machine (load 8) two threads took 16 ms a step of the tests' MLP, one thread 0.7 ms."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the plain loops here, as the ranks: one thread (see below)
    try:
        with margins.recording() as log:
            rec = _record(label, world, seeds, result, problems, setup, budget_s)
    finally:
        torch.set_num_threads(threads)
    rec.margins = log
    return rec


def _first_line(exc: Exception) -> str:
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


@contextlib.contextmanager
def _in_budget(setup, seconds):
    """Every call into `setup` here within `seconds` (`budget`, `bounded`), as in one process."""
    from ..step1_capture import skips
    from ..step1_capture.bounded import bounded
    from ..step1_capture.budget import budget

    skips.start()
    with budget(seconds), bounded(setup):
        yield


def _record(
    label: str, world: int, seeds: list, result, problems: list, setup, budget_s
) -> TriageRecord:
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
    shares = describe_shares(own)
    rec.notes.append("the ranks' shares of the data: " + shares)
    found = choose(own, world)
    one, evs, done, missing = None, None, [], []
    if setup is not None and (found is None or found.system != "H3"):  # H3 comes first
        try:
            with _in_budget(setup, budget_s):
                one, evs, done, missing = single.decide(setup, own, seeds)
        except Exception as exc:  # a method that never returns or raises: said; the rest stands
            missing = [f"the one-process checks, stopped by {_first_line(exc)}"]
    f = first(found, one)
    if f is not None and f.system == "NONE":
        f = None
    if missing:
        rec.notes.append("one-process checks not run at world_size > 1: " + ", ".join(missing))
    if f is None:
        rec.finding_key = "healthy"
        alone = (
            single.acquittal(evs, done, missing)
            if evs is not None
            else f"not checked: {', '.join(missing) or 'the one-process checks (no setup given)'}"
        )
        rec.convict("NONE", _acquit(own, alone, gaps, shares), by="diagnose", seeds=list(seeds))
        rec.not_needed("intervention", "n/a: no defect to intervene on")
        rec.not_needed("confirmation", f"n/a: seed {seeds[1]} shows the same healthy evidence")
        return rec
    rec.finding_key = f.key
    if f.system == "UNKNOWN":
        rec.set_row("conviction", f"UNKNOWN: {f.mechanism}", status=UNKNOWN, by="diagnose")
        return rec
    rec.convict(f.system, f.mechanism, by="diagnose", seeds=list(seeds))
    if setup is not None:
        rec.intervener = functools.partial(
            sign_fix, rec, setup=setup, finding=f, own=own, world=world, seeds=list(seeds)
        )
    if f is one:  # a one-process finding: signed by labkit's plain loops where it can be
        try:
            with _in_budget(setup, budget_s):
                single.sign(rec, f, evs, seeds)
        except Exception as exc:
            rec.set_row("intervention", f"not run: {_first_line(exc)}", status=UNKNOWN)
        return rec
    if f.variable is None:  # a change labkit cannot make for you
        for row in ("intervention", "confirmation"):
            rec.set_row(
                row,
                "not run: labkit cannot make this change for you; make the fix named above "
                "and sign it with record.intervene(fixed_setup), run on the ranks"
                if f.key in FIX_ONLY
                else "not run: make the fix named above and run labkit.diagnose again",
            )
            rec.rows[row]["status"] = UNKNOWN
        return rec
    name, before, after = f.variable
    for row, seed, (met, said) in zip(
        ("intervention", "confirmation"), seeds, signs(f, own, signed, world)
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
    from ...record.prediction import TriageRefused

    raise TriageRefused(
        "there is no conviction to test: the ranks returned no evidence, or found no defect."
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
    out = launch(
        setups, world, seeds, choose, timeout_s=timeout_s, read=single.shipped, **launch_kw
    )
    records = {
        label: record(
            label, world, seeds, out["results"].get(label), out["problems"], setup, timeout_s
        )
        for label, setup in setups.items()
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
