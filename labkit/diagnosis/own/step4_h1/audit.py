"""The loop audit: where the learner's loop differs from a plain one, measured step by step.

A run whose loop ends far above a plain loop with the same model, data, loss and optimizer
(or that does not learn at all) has a mechanism in the loop itself. The replay
(`step1_capture.manual`) reads, at every optimizer step, what happened beside ``backward()``
and ``step()``; this module names the reading that explains the gap:
- parameters that moved between two steps with no step between them (``outside``): a
  re-initialisation or a reload inside the loop;
- gradients shrunk or blown up between ``backward()`` and ``step()`` (``edit``): a clip far
  below the gradients' size, a division by the wrong count;
- updates that climb the loss (``descent`` below 0): a sign flipped in a hand-written update;
- ``backward()`` given minus the loss the loop logs: a sign flipped before the backward;
- dropout or normalisation layers in eval mode through the training forwards (``eval_layers``):
  ``model.eval()`` left on;
- fewer steps than the epochs asked hold: something ends the loop early.
Each is convicted only where the run fails by the triage's own test (see `rules`), so a loop
that edits its gradients and still learns like a plain loop is never convicted here.

`describe_schedule` names the LR scheduler(s) a run stepped and how often, for the rules that
read the LR.
"""

from __future__ import annotations

import math

from ...finding import OwnFinding
from ..margins import above, below

IN_LOOP = {  # the one change that tests a loop finding: labkit's plain loop
    "arm": "own",
    "variable": ("training loop", "your train()", "a plain loop with your optimizer"),
}
OUTSIDE = 0.1  # parameters moved by this share of their norm with no step between: replaced
EDIT = 1e-2  # gradients at step time below this share (or above its inverse) of backward's
CLIMB = -0.2  # a median cosine between the update and minus the gradient below this: ascent


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def _every(steps: list[int]) -> str:
    gaps = {b - a for a, b in zip(steps, steps[1:])}
    return f" (every {gaps.pop()} steps)" if len(gaps) == 1 else ""


def _outside(ev) -> OwnFinding | None:
    steps = ev.replay.steps
    jumps = [i for i, st in enumerate(steps) if (st.get("outside") or 0) > 0]
    size = max((steps[i]["outside"] for i in jumps), default=0.0)
    if not jumps or not above("audit.outside", size, OUTSIDE, seed=ev.seed, log=True):
        return None
    big = [i for i in jumps if steps[i]["outside"] >= OUTSIDE * size]
    epoch = ev.n_batches
    at_epochs = all(i % epoch == 0 for i in big)
    shown = ", ".join(map(str, big[:6])) + (", ..." if len(big) > 6 else "")
    longest = max(b - a for a, b in zip([0, *big], [*big, len(steps)]))
    return OwnFinding(
        "H1",
        "params_outside_step",
        f"your loop changes the parameters outside optimizer.step(): before steps {shown}"
        f"{_every(big)}{', the start of each epoch' if at_epochs else ''}, "
        f"{max(steps[i].get('outside_tensors', 0) for i in big)} tensors moved by up to "
        f"{size:.0%} of the parameters' norm with no step between, as a re-initialisation "
        "does (reset_parameters(), apply(init), load_state_dict inside the loop); the model "
        f"never trains longer than {longest} steps in a row",
        **IN_LOOP,
    )


def _clip_named(rp) -> str:
    if not rp.clips:
        return "a scaling of p.grad by hand"
    kind, limit = rp.clips[-1]
    call = "clip_grad_value_" if kind == "clip_value" else "clip_grad_norm_"
    return f"{call}(..., {kind}={limit:g})"


def _edited(ev) -> OwnFinding | None:
    rp = ev.replay
    ratios = [st["edit"] for st in rp.steps if st.get("edit") and math.isfinite(st["edit"])]
    ratio = _median(ratios)
    if ratio is None:
        return None
    shrunk = below("audit.edit_shrinks", ratio, EDIT, seed=ev.seed, log=True)
    if not shrunk and not above("audit.edit_grows", ratio, 1 / EDIT, seed=ev.seed, log=True):
        return None
    how = "smaller" if shrunk else "larger"
    factor = 1 / ratio if shrunk else ratio
    return OwnFinding(
        "H1",
        "grad_edited",
        f"your loop {'shrinks' if shrunk else 'blows up'} the gradients between backward() and "
        f"optimizer.step(): at step time they are {ratio:.1e} times the size backward() left "
        f"(median over {len(ratios)} steps), by {_clip_named(rp)}, so every step is about "
        f"{factor:.3g} times {how} than the optimizer's LR intends",
        **IN_LOOP,
    )


def _climbs(ev) -> OwnFinding | None:
    cosines = [
        st["descent"]
        for st in ev.replay.steps
        if st.get("descent") is not None and math.isfinite(st["descent"])
    ]
    cos = _median(cosines)
    if cos is None or not below("audit.descent", cos, CLIMB, seed=ev.seed):
        return None
    manual = any(st.get("manual") for st in ev.replay.steps)
    return OwnFinding(
        "H1",
        "update_climbs",
        f"your updates climb the loss: the median cosine between each update and minus the "
        f"gradient is {cos:+.2f} over {len(cosines)} steps (a descent step gives a positive "
        "one), so every step moves the parameters up the gradient; a sign is flipped in "
        + (
            "your update (p += lr * grad where p -= lr * grad is meant)"
            if manual
            else "the optimizer (maximize=True, or a negated loss or gradient)"
        ),
        arm="ref",
        variable=("optimizer", "your update", "Adam(lr=1e-3)"),
    )


def _negated(ev) -> OwnFinding | None:
    """backward() given minus the loss the loop logs, step for step."""
    values = [b["value"] for b in ev.replay.backwards]
    raw = list(ev.run.table["loss_raw"])
    if len(values) != len(raw):
        return None  # no one backward per logged loss to pair them
    ratios = [
        v / r
        for v, r in zip(values, raw)
        if r is not None and math.isfinite(v) and math.isfinite(r) and r != 0
    ]
    ratio = _median(ratios)
    if ratio is None or not below("audit.backward_over_logged", ratio, 0.0, seed=ev.seed):
        return None
    return OwnFinding(
        "H1",
        "backward_negated",
        f"your loop backpropagates the negative of the loss it logs: backward() gets "
        f"{ratio:+.2f} x the logged loss (median over {len(ratios)} steps), so the optimizer "
        "descends on minus the loss and every step climbs the loss you log; drop the minus "
        "sign in front of the loss you call backward() on",
        **IN_LOOP,
    )


EVAL_SHARE = 0.5  # this share of the training forwards in eval mode: model.eval() left on
STOPPED = 0.5  # the run took under this share of the steps its epochs hold: it stopped early


def _eval_mode(ev) -> OwnFinding | None:
    """Dropout or normalisation layers in eval mode through the forwards with grad on."""
    fwd = [f for f in ev.replay.forwards if f.get("grad_enabled")]
    off = [f for f in fwd if f.get("eval_layers")]
    if not fwd or not above("audit.eval_share", len(off) / len(fwd), EVAL_SHARE, seed=ev.seed):
        return None
    kinds = sorted({k for f in off for k in f["eval_layers"]})
    does = [
        *(
            ["a normalisation layer uses running statistics it never updates"]
            if any("Norm" in k for k in kinds)
            else []
        ),
        *(["dropout is off"] if any("Dropout" in k for k in kinds) else []),
    ]
    return OwnFinding(
        "H1",
        "eval_mode",
        f"your model trains in eval mode: in {len(off)} of the {len(fwd)} forward passes with "
        f"gradients on, its {', '.join(kinds)} layers were in eval mode (model.eval() left "
        f"on, or called again inside the loop): {' and '.join(does) or 'they act as in eval'}; "
        "call model.train() before training",
        **IN_LOOP,
    )


def _stopped(ev) -> OwnFinding | None:
    """The run took far fewer steps than `epochs` epochs of `batches` hold."""
    taken = max(len(ev.run), len(ev.replay.steps))
    if not below("audit.steps_taken", taken / max(1, ev.steps), STOPPED, seed=ev.seed):
        return None
    return OwnFinding(
        "H1",
        "stopped_early",
        f"your loop stops early: train(seed, epochs={ev.epochs}) took {len(ev.replay.steps)} "
        f"optimizer steps and logged {len(ev.run)} rows, where {ev.epochs} epochs of "
        f"{ev.n_batches} batches hold {ev.steps} steps; something ends the loop before the "
        "epochs asked (an early-stopping test, read which way its comparison goes, a break "
        "or a return inside the loop)",
        **IN_LOOP,
    )


def audit(ev) -> OwnFinding | None:
    """The first loop-audit reading that names a mechanism on this seed."""
    for rule in (_negated, _outside, _edited, _climbs, _eval_mode, _stopped):
        found = rule(ev)
        if found is not None:
            return found
    return None


def describe_schedule(rp, n_batches: int) -> str:
    """'set by ReduceLROnPlateau(mode='max', ...), stepped 5 times in 80 steps (once per
    epoch)', and for a plateau scheduler whose metric moved the way its mode calls worse,
    what that does; '' when no scheduler stepped."""
    by_id: dict[int, list[dict]] = {}
    for rec in rp.schedules:
        by_id.setdefault(rec["id"], []).append(rec)
    parts = []
    for recs in by_id.values():
        calls = [r for r in recs if r["at"] > 0] or recs
        settings = ", ".join(f"{k}={v!r}" for k, v in recs[0]["settings"].items())
        n = len(calls)
        per = len(rp.steps) / n if n else math.inf
        cadence = (
            "every batch"
            if per <= 1.5
            else "once per epoch"
            if abs(per - n_batches) <= 1
            else f"once every {per:.0f} steps"
        )
        text = (
            f"set by {recs[0]['kind']}({settings}), stepped {n} times in {len(rp.steps)} "
            f"steps ({cadence})"
        )
        metrics = [r["metric"] for r in calls if r["metric"] is not None]
        mode = recs[0]["settings"].get("mode")
        if recs[0]["kind"] == "ReduceLROnPlateau" and len(metrics) >= 2 and mode in ("min", "max"):
            fell = metrics[-1] < metrics[0]
            if (mode == "max") == fell:
                text += (
                    f"; its metric {'fell' if fell else 'rose'} ({metrics[0]:.3g} -> "
                    f"{metrics[-1]:.3g}) while mode={mode!r} counts only a "
                    f"{'rise' if mode == 'max' else 'fall'} as an improvement, so every step "
                    "of progress reads as a plateau and cuts the LR"
                )
        parts.append(text)
    return "; ".join(parts)


def describe(ev) -> tuple[str | None, str | None]:
    """(what the loop audit read, what it could not) for the acquittal, in the learner's terms:
    a loop that edits its gradients or moves its weights outside step() and still learns is
    acquitted, and the line says so instead of claiming the loop is plain."""
    steps = ev.replay.steps
    if not steps:
        return None, "your loop's steps (the replay saw no step)"
    said, unsaid = [], []
    manual = any(st.get("manual") for st in steps)
    own = "your loop updates the weights itself"
    edit = _median([st["edit"] for st in steps if st.get("edit") and math.isfinite(st["edit"])])
    if edit is None:
        why = own if manual else "no Tensor.backward() to compare them with"
        unsaid.append(f"whether the gradients change between backward() and the step ({why})")
    elif 0.5 <= edit <= 2.0:
        said.append("the gradients reach step() as backward() left them")
    else:
        said.append(f"the gradients scaled by x{edit:.2g} between backward() and step()")
    outside = [st["outside"] for st in steps if st.get("outside") is not None]
    if not outside:
        why = own if manual else "no two steps of one optimizer to compare"
        unsaid.append(f"whether the parameters change between steps ({why})")
    elif max(outside) == 0:
        said.append("no parameter changes outside step()")
    else:
        said.append(
            f"the parameters also change outside step() (up to {max(outside):.0%} of their norm)"
        )
    cos = _median([st["descent"] for st in steps if st.get("descent") is not None])
    if cos is not None:
        said.append(f"the updates go down the gradient, median cosine {cos:+.2f}")
    line = f"your loop's {len(steps)} steps ({'; '.join(said)})" if said else None
    return line, ", ".join(unsaid) or None
