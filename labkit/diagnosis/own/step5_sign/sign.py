"""Signing a conviction of the setup triage: by labkit's own intervention where it has one, else
by the learner's fix, passed to ``record.intervene(fixed_setup)``.

- `first_plan(finding, evs)`: labkit's one-change run of the learner's own loop, before the
  plain arm: for an LR too high, the same loop at the lower LR (`scaled`);
- `own_plan(finding, evs)`: labkit's own intervention for a mechanism its plain arms do not
  cover: for one in the loss, the reference loss on the same model output (`own.refloss`; for
  the alignment of targets, the next-token loss along the measured time axis); for
  a tensor the loss depends on that no optimizer holds, the same loop holding it (`stepped`);
  for a label left in the inputs, the same loop with those features held constant (`unleaked`);
  for batches in an unmixed order, the same rows mixed across the epoch (`mixed`); for an
  augmentation that changes what the label means, the table's rows un-augmented (`untransformed`);
- `prescribe_rows(record, finding, evs)`: otherwise, the prescription (`own_prescribe`) in the
  intervention row, with the seeds in the confirmation row, both still UNKNOWN;
- `intervene(record, fixed_setup)`: checks that the fix is the one change prescribed
  (`own_onechange`), seals the forecast, runs the fixed setup on both seeds and signs the
  verdict, or refuses with the reason.
"""

from __future__ import annotations

import time

from ....core.run import Run
from . import refloss as own_refloss
from ..step1_capture import setup as proto
from ..step1_capture.carry import adapt
from ..step1_capture.loops import plain_loop
from .onechange import changes, describe
from .prescribe import CHANGES, LOSS, prescribe, text
from ...record.prediction import TriageRefused


ALIGNED = ("labels_are_inputs", "double_shift")  # findings on which target each output meets


def first_plan(finding, evs):
    """labkit's one-change run of the learner's own loop, tried before the plain arm the
    finding names: for an LR too high, the same loop at the lower LR (`scaled`); or None."""
    from .scaled import plan as scaled_plan

    return scaled_plan(finding, evs)


def own_plan(finding, evs):
    """(forecast, run(seed) -> Run, variable) of labkit's own intervention, or None."""
    if finding.key == "leaf_not_stepped":  # the tensors added to the optimizer (`stepped`)
        from .stepped import plan as stepped_plan

        return stepped_plan(evs)
    if finding.key == "leaf_never_moves":  # the same loop, those groups at the default LR
        from .stepped import moving_plan

        return moving_plan(evs)
    if finding.key == "first_step_read":  # the RNN read in reverse time order (`reread`)
        from .reread import plan as reread_plan

        return reread_plan(evs)
    if finding.key == "order_unmixed":  # the same rows mixed across the epoch (`mixed`)
        from .mixed import plan as mixed_plan

        return mixed_plan(evs)
    if finding.key == "transform_changes_label":  # the table's rows un-augmented (`untransformed`)
        from .untransformed import plan as untransformed_plan

        return untransformed_plan(evs)
    if finding.key in ("penalty_dominates", "category_as_number"):  # `penalty`, `codes`
        from .. import codes, penalty

        return (penalty if finding.key == "penalty_dominates" else codes).plan(evs)
    if finding.key == "label_in_inputs":  # the leaked features held constant (`unleaked`)
        from .unleaked import plan as unleaked_plan

        return unleaked_plan(evs)
    touches = CHANGES.get(finding.key, (set(), ""))[0]
    if LOSS not in touches:
        return None
    if finding.key in ALIGNED:  # the next-token loss along the axis the offset was measured on
        from ..step3_h2.offset import measure

        ev = evs[0]
        m = ev.once("offset", lambda: measure(ev.setup, ev.seed, ev.batches[0]))
        found = own_refloss.plan(evs, f"next:{m['axis']}") if m is not None else None
        if found is not None:
            return found
    if finding.key == "quantile_flipped":  # both runs scored by the pinball loss, y - pred
        from ..step4_h1.losspath import audit

        ev = evs[0]
        q = ev.once("loss_path", lambda: audit(ev.setup, ev.seed, ev.batches))["quantiles"]
        return own_refloss.plan(evs, "pinball:" + ",".join(f"{v:.6g}" for v in q["levels"]))
    if finding.key == "padding_in_loss":  # both runs scored on the real tokens only
        from ..step4_h1.padding import _pad_id

        pad = _pad_id(evs[0].batches)
        return own_refloss.plan(evs, f"pad:{pad[0]}") if pad is not None else None
    return own_refloss.plan(evs)


def prescribe_rows(record, finding, evs, labkit_plan=None) -> dict:
    """The prescription in the record: in the intervention row while nothing has tested the
    conviction, else beside labkit's own intervention, in the conviction row's data."""
    p = prescribe(finding, evs, labkit_plan)
    record.rows["conviction"]["data"]["prescription"] = p
    if labkit_plan is not None:
        record.notes.append(
            f"the fix in your code: {p['change']}; record.intervene(fixed_setup) "
            f"judges it against {p['forecast'] or 'no forecast: ' + p['why']}"
        )
        return p
    record.set_row("intervention", text(p), status="UNKNOWN", prescription=p)
    record.set_row(
        "confirmation",
        f"the fixed run on seed {p['seeds'][1]}, against the same sealed forecast",
        status="UNKNOWN",
    )
    record.notes.append(
        "labkit cannot make this change in your code: make the one change the "
        "intervention row prescribes, then pass your fixed setup to "
        "record.intervene(fixed_setup)"
    )
    return p


def _refuse(message: str):
    raise TriageRefused(message)


def check_fix_object(fixed_setup, diagnosed: tuple, *, with_: str, overriding: str) -> None:
    """TypeError for a fix given as None or as a class, ValueError for the diagnosed setup
    itself (any of `diagnosed`), each with the fix's shape; `with_` and `overriding` say what
    the one change is (the one-process prescription, or one method of a distributed setup)."""
    name = type(diagnosed[0]).__name__
    if fixed_setup is None or isinstance(fixed_setup, type):
        what = "None" if fixed_setup is None else f"the class {fixed_setup.__name__}"
        raise TypeError(
            f"fixed_setup is {what}; pass an instance of your fixed setup, e.g. "
            f"Fixed() for class Fixed({name}) with {with_}."
        )
    if any(fixed_setup is d for d in diagnosed if d is not None):
        raise ValueError(
            "fixed_setup is the setup that was diagnosed, unchanged; pass a new setup "
            f"with the one change made, e.g. class Fixed({name}) overriding {overriding}."
        )


def _checked(record, fixed_setup, triage):
    conv = record.rows["conviction"]["data"]
    if conv.get("system") in (None, "NONE"):
        _refuse(
            f"there is no conviction to test: the record says "
            f"{record.rows['conviction']['text'] or 'nothing'}."
        )
    p = conv.get("prescription")
    if p is None:
        _refuse(
            "this conviction holds no prescription (it was made by hand, not by "
            "labkit.diagnose), so there is no forecast for a fix of yours to meet."
        )
    if record.rows["intervention"]["data"].get("fixed_by") and not record.missing():
        _refuse(
            f"your fix already signed this conviction ({record.verdict()}); nothing is left "
            "to test."
        )
    named = f"the one method the prescription names ({', '.join(p['touches'])})"
    check_fix_object(
        fixed_setup,
        (triage.setup, getattr(triage.setup, "setup", None)),
        with_=f"{named} changed",
        overriding=named,
    )
    missing = [m for m in proto.METHODS if not callable(getattr(fixed_setup, m, None))]
    if missing:
        raise TypeError(
            f"fixed_setup={fixed_setup!r:.60} is not a setup: it lacks "
            f"{', '.join(m + '()' for m in missing)}; pass the diagnosed setup with the one "
            f"change made, e.g. an instance of class Fixed({type(triage.setup).__name__})."
        )
    if p["forecast"] is None:
        _refuse(f"labkit has no forecast to judge a fix of this mechanism by: {p['why']}.")
    return triage, p


def _one_change(triage, fixed_setup, p) -> str:
    found = changes(triage.setup, fixed_setup, triage.evs)
    allowed = set(p["touches"])
    where = " or ".join(f"{m}()" for m in p["touches"])
    if len(found) > 1:
        _refuse(
            f"the fix changes {len(found)} things: {describe(found)}. An intervention changes "
            f"one, or nobody can tell which change did it; keep the one in {where} and undo "
            "the others."
        )
    if found and not set(found) <= allowed:
        _refuse(
            f"the fix changes {describe(found)}, but the mechanism convicted lives in {where}; "
            f"the prescribed change is: {p['change']}."
        )
    if not found and "train" not in allowed:
        _refuse(
            f"the fixed setup changes nothing labkit can see: the same data and init hashes, "
            f"optimizer and loss, and the same code; the prescribed change, in {where}, is: "
            f"{p['change']}."
        )
    return next(iter(found), "train")


def _run(p: dict, setup, seed: int):
    if p["judged_by"].split(":", 1)[0] == "reference":  # the fixed loss trains; the reference
        ruler = p["judged_by"].partition(":")[2]  # loss the forecast was read on is logged
        return own_refloss.run(setup, seed, p["steps"], "scored", proto.batches(setup, seed), ruler)
    if p["judged_by"].startswith("held-out:"):  # a plain loop on the fixed batches, scored held out
        started, arm = time.time(), p["judged_by"].split(":", 1)[1]
        res = plain_loop(
            setup,
            seed,
            p["steps"],
            arm,
            batches=proto.batches(setup, seed),
            held_out=proto.batches(setup, seed, "val_batches"),
        )
        return res.evals_run(seed, started, "held-out loss of the fix")
    if p["judged_by"].startswith("epoch:"):  # a plain loop on the fixed batches, scored on them
        from .mixed import epoch_run

        data, arm = proto.batches(setup, seed), p["judged_by"].partition(":")[2]
        return epoch_run(setup, seed, p["steps"], data, data, arm)
    run = proto.train(setup, seed, p["epochs"])
    if not p["forecast"].startswith("loss_reported"):
        return run
    kept = [i for i, v in enumerate(run.table["loss_reported"]) if v is not None]  # the reports
    columns = {k: [run.table[k][i] for i in kept] for k in ("step", "loss_raw", "loss_reported")}
    return Run.from_log(
        columns, seed=seed, started_at=run.timing["started_at"], config={"task": "your reports"}
    )


def intervene(record, fixed_setup, triage, budget_s: float | None = None) -> str:
    """Judge `fixed_setup` against the sealed forecast on both seeds, every call into either
    setup within `budget_s` (default: the diagnose budget, `own.budget`); the signed verdict
    or TriageRefused with the reason (see the module docstring)."""
    from ..step1_capture.bounded import bounded
    from ..step1_capture.budget import DEFAULT_BUDGET_S, budget

    seconds = getattr(record, "budget_s", DEFAULT_BUDGET_S) if budget_s is None else budget_s
    with budget(seconds):
        triage, p = _checked(record, fixed_setup, triage)
        with bounded(fixed_setup, triage.setup):
            return _judge(record, fixed_setup, triage, p)


def _judge(record, fixed_setup, triage, p) -> str:
    fixed_setup = adapt(fixed_setup)  # a carried state or a loop without torch.optim, as diagnosed
    method = _one_change(triage, fixed_setup, p)
    name = type(fixed_setup).__name__
    if not record.missing():
        earlier = record.rows["intervention"]["text"]
        record.notes.append(
            f"labkit's own intervention had signed it ({earlier}); your fix replaces it"
        )
    record.plan_intervention({method: "as diagnosed"}, {method: f"{name}.{method}"}, p["forecast"])
    record.rows["intervention"]["data"].update(prescription=p, fixed_by=f"{name}.{method}")
    first, second = p["seeds"]
    record.record_intervention_run(_run(p, fixed_setup, first))
    record.record_confirmation(_run(p, fixed_setup, second))
    for row, seed in (("intervention", first), ("confirmation", second)):
        d = record.rows[row]["data"]
        if not d.get("met"):
            _refuse(
                f"the forecast was not met on seed {seed}: the fixed run reads {d['observed']:.4g}, "
                f"and the forecast was {p['forecast']!r}; the conviction stays unsigned. Either "
                "the fix is not the one the mechanism needs, or the mechanism is not the cause."
            )
    record.notes.append(
        f"signed by your fix ({name}.{method}), judged on seeds {first} and {second}"
    )
    return record.verdict()
