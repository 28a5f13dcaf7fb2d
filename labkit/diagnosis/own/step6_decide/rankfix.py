"""``record.intervene(fixed_setup)`` for a distributed setup: the learner's fix, run on the
ranks, judged against the record's forecast.

The fixed setup is launched as the setup was (`step1_capture.launch`: the same number of gloo
ranks, both seeds, the learner's ``train`` watched, a timeout on the launch and on every
collective, so that a rank that dies or hangs ends in a sentence). Then:

- a distributed conviction is judged by its own measurement on the fixed runs (`ranks`'
  FORECASTS: the ranks' parameters equal, the order changing from epoch to epoch, the first
  gradient world_size times smaller, the reports equal to the mean loss);
- a one-process conviction by its sealed forecast (a loss or a reported loss by a step),
  read off the fixed runs as the triage read the learner's (`single.RankEvidence`: the raw
  loss averaged over the ranks, rank 0's reports).
"""

from __future__ import annotations

from ...finding import Finding
from ...record.prediction import TriageRefused
from ..step1_capture.setup import check_methods, world_size_of
from ..step5_sign.sign import check_fix_object
from ..step2_h3.ranklog import sign_fixed_report, sign_reported
from ..step3_h2.shares import sign_set_epoch
from ..step4_h1.drift import sign_double, sign_drift

FORECASTS = {
    "wrapper": "the ranks' parameters stay equal (relative difference 0 at every check)",
    "sync": "the ranks' parameters stay equal (relative difference 0 at every check)",
    "broadcast_buffers": "the ranks' buffers agree at every check (relative difference 0)",
    "set_epoch": "the order of the rows changes from epoch to epoch",
    "no_hand_allreduce": "the first gradient shrinks by a factor of world_size",
    "allreduce_report": "the reports averaged over the ranks equal the mean loss",
}
FIXED = {**FORECASTS, "allreduce_report": "every rank's report equals the mean loss over the ranks"}
# convictions no arm of labkit's can fix (the change is in the learner's own lines): a fix of
# the learner's, through record.intervene, is judged by the same check of the parameters
FIX_ONLY = {
    "optimizer_differs_per_rank": FORECASTS["wrapper"],
    "steps_apart": FORECASTS["wrapper"],
}


def signs(f: Finding, own: dict, signed: dict, world: int, fix=False) -> list[tuple[bool, str]]:
    if f.arm == "allreduce_report":
        return sign_fixed_report(signed) if fix else sign_reported(own)
    if f.arm == "set_epoch":
        return sign_set_epoch(signed)
    if f.arm == "no_hand_allreduce":
        return sign_double(own, signed, world)
    if f.arm == "broadcast_buffers":
        return sign_drift(signed, "buffers")
    return sign_drift(signed)


def _checked(record, fixed_setup, setup, world: int) -> None:
    conv = record.rows["conviction"]
    if conv["data"].get("system") in (None, "NONE") or conv["status"] == "UNKNOWN":
        raise TriageRefused(
            f"there is no conviction to test: the record says {conv['text'] or 'nothing'}."
        )
    if record.rows["intervention"]["data"].get("fixed_by") and not record.missing():
        raise TriageRefused(
            f"your fix already signed this conviction ({record.verdict()}); nothing is left "
            "to test."
        )
    check_fix_object(fixed_setup, (setup,), with_="the one change made", overriding="one method")
    check_methods(fixed_setup)
    if world_size_of(fixed_setup) != world:
        raise ValueError(
            f"fixed_setup.world_size={world_size_of(fixed_setup)}: the setup was diagnosed on "
            f"{world} ranks, and its fix is judged on as many; give it world_size = {world}."
        )


def sign_fix(record, fixed_setup, *, budget_s=None, setup, finding, own, world, seeds) -> str:
    """Run `fixed_setup` on `world` ranks and both seeds, within `budget_s` (default: the
    launch's, `launch.LAUNCH_S`); the signed verdict, or TriageRefused with the reason."""
    from ....errors import check_number
    from ..step1_capture.launch import COLLECTIVE_S, LAUNCH_S, launch
    from .single import RankEvidence, shipped

    _checked(record, fixed_setup, setup, world)
    if budget_s is not None:
        check_number("budget_s", budget_s, minimum=10, maximum=3600)
    timeout = budget_s or LAUNCH_S
    name = type(fixed_setup).__name__
    out = launch(
        {name: fixed_setup},
        world,
        seeds,
        None,
        timeout_s=timeout,
        collective_s=min(COLLECTIVE_S, timeout / 6),
        read=shipped,
    )
    fixed = out["results"].get(name, {}).get("own")
    if not fixed:
        why = "; ".join(out["problems"]) or "the ranks returned no result"
        raise TriageRefused(
            f"your fix did not run to its end on the {world} ranks: {why}. The conviction "
            "stays unsigned."
        )
    var = finding.variable[0] if finding.variable else "your code"
    if record.rows["intervention"]["data"].get("met") is not None:
        record.notes.append(
            f"labkit's own intervention had signed it ({record.rows['intervention']['text']}); "
            "your fix replaces it"
        )
    forecast = FIXED.get(finding.arm) or FIX_ONLY.get(finding.key)
    if forecast is not None:
        said = signs(finding, own, fixed, world, fix=True)
        for row, seed, (met, text) in zip(("intervention", "confirmation"), seeds, said):
            record.set_row(
                row,
                f"{var}: as diagnosed -> {name}; FORECAST: {forecast} | {text} "
                f"{'MET' if met else 'NOT met'}",
                variable=var,
                before="as diagnosed",
                after=name,
                forecast=forecast,
                seed=seed,
                met=met,
                fixed_by=name,
            )
        failed = [(seed, text) for seed, (met, text) in zip(seeds, said) if not met]
    else:
        if record.forecast is None:
            raise TriageRefused(
                "labkit sealed no forecast for this conviction, so there is nothing to judge a "
                "fix by; run labkit.diagnose(fixed_setup) again."
            )
        forecast = record.forecast.text
        record.plan_intervention({var: "as diagnosed"}, {var: name}, forecast)
        record.rows["intervention"]["data"]["fixed_by"] = name
        runs = [RankEvidence(fixed_setup, seed, fixed[str(seed)]).run for seed in seeds]
        met = [record.record_intervention_run(runs[0]), record.record_confirmation(runs[1])]
        failed = [
            (seed, record.rows[row]["text"])
            for seed, row, ok in zip(seeds, ("intervention", "confirmation"), met)
            if not ok
        ]
    if failed:
        seed, said = failed[0]
        raise TriageRefused(
            f"the forecast was not met on seed {seed} ({said.split(' | ')[-1]}); the conviction "
            "stays unsigned. Either the fix is not the one the mechanism needs, or the "
            "mechanism is not the cause."
        )
    record.notes.append(
        f"signed by your fix ({name}), run on {world} ranks and judged on seeds "
        f"{seeds[0]} and {seeds[1]} in {out['seconds']:.1f} s"
    )
    return record.verdict()
