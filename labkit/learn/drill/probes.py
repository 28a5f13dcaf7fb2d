"""Each probe's answer for a `Case`: the lines the learner reads, and one outcome.

Every answer names one outcome from `words.OUTCOMES[probe]`, which is what a forecast
is scored against. The menu (prices, what each probe shows) is `menu.MENU`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...forecast.shapes import classify_shape
from .case import Case
from .front.text import num, point_rows


@dataclass
class Answer:
    probe: str
    outcome: str
    lines: list
    curves: dict = field(default_factory=dict)  # label -> list of losses, for plots


def answer(case: Case, name: str) -> Answer:
    return _ANSWERS[name](case)


def _every(values, k):
    return [v for i, v in enumerate(values) if i % k == 0]


def _raw_vs_reported(case: Case) -> Answer:
    base, result = case.baseline(), case.raw_vs_reported()
    raw = base.table["loss_raw"]
    lines = [
        "raw loss of each batch (the reported curve is the symptom above):",
        *point_rows(raw),
        f"verdict: {result.verdict}",
    ]
    outcome = "agree" if result.details["agree"] else "disagree"
    return Answer(
        "raw_vs_reported", outcome, lines, {"raw": raw, "reported": base.table["loss_reported"]}
    )


def _gradient_audit(case: Case) -> Answer:
    facts = case.gradient_audit()
    rows = facts["audit"].details["rows"]
    lines = ["one step at step 0: parameter, in optimizer, gradient, gradient norm"]
    for r in rows:
        lines.append(
            f"  {r['name']:<34} {'yes' if r['in_optimizer'] else 'NO':<4} "
            f"{r['grad']:<10} {num(r['grad_norm'])}"
        )
    ratio = facts["second_over_first"]
    lines.append(
        "a second backward on the same batch multiplies the gradient norm by "
        f"{num(ratio, 3)} (1 = cleared between steps, 2 = it accumulates)"
    )
    norms = facts["grad_norm"]
    lines.append(
        "total gradient norm, every 10th step: " + " ".join(num(v, 3) for v in _every(norms, 10))
    )
    finite = [g for g in norms if g is not None and math.isfinite(g)]
    if any(not r["in_optimizer"] for r in rows if r["requires_grad"]):
        outcome = "outside"
    elif any(r["grad"] == "none" for r in rows):
        outcome = "none"
    elif ratio is not None and abs(ratio - 2) < 0.1:
        outcome = "accumulating"
    elif any(g is not None and not math.isfinite(g) for g in norms):
        outcome = "nonfinite"
    elif all(r["grad"] == "zero" for r in rows):
        outcome = "zero"
    elif finite and finite[-1] > 10 * finite[0]:
        outcome = "growing"
    else:
        outcome = "ok"
    return Answer("gradient_audit", outcome, lines)


def _update_probe(case: Case) -> Answer:
    table, groups = case.baseline().table, case.baseline().groups
    steps = [0, 1, 2, 5, 10, 20, 30, 40, 49]
    lines = [
        "learning rate and update norm per layer group (rows) at steps "
        + ", ".join(map(str, steps)),
        "  " + f"{'lr':<22}" + " ".join(f"{num(table['lr'][s], 3):>8}" for s in steps),
    ]
    cols = {g: table[f"update_norm/{g}"] for g in groups}
    for g, col in cols.items():
        lines.append(f"  {g[:22]:<22}" + " ".join(f"{num(col[s], 3):>8}" for s in steps))
    return Answer("update_probe", _update_outcome(table["lr"], cols), lines)


def _update_outcome(lrs, cols) -> str:
    values = [v for col in cols.values() for v in col if v is not None]
    if any(not math.isfinite(v) for v in values):
        return "nonfinite"
    late = {g: [v or 0.0 for v in col[5:]] for g, col in cols.items()}
    dead = [g for g, col in late.items() if all(v == 0 for v in col)]
    if len(dead) == len(cols):
        return "zero"
    if dead:
        return "partial"
    total = [sum((col[i] or 0.0) for col in cols.values()) for i in range(len(lrs))]
    if (lrs[0] > 0 and lrs[-1] < 1e-4 * lrs[0]) or max(total[-5:]) < 1e-3 * max(total[:5]):
        return "vanishing"
    if sorted(total[-5:])[2] > 10 * sorted(total[:5])[2]:
        return "growing"
    return "ok"


def _first_nonfinite(case: Case) -> Answer:
    f = case.first_nonfinite()
    if f["step"] is None:
        return Answer(
            "first_nonfinite",
            "finite",
            ["no NaN or inf anywhere in the 50 logged steps: the loss stayed finite"],
        )
    lines = [
        f"the loss is first non-finite at step {f['step']}; that step replayed:",
        f"  first non-finite value: {f['where']} ({f['stage']})",
    ]
    if f["note"]:
        lines.append(f"  {f['note']}")
    if f["fp16"]:
        lines.append(
            "  the run uses fp16 autocast; the same step in fp32: "
            + ("all finite" if f["fp32_where"] is None else f"{f['fp32_where']} again")
        )
    if f["grad_first"]:
        lines.append(
            f"  total gradient norm before it: {num(f['grad_first'], 3)} at step 0, "
            f"largest {num(f['grad_max'], 3)} (x{f['grad_max'] / f['grad_first']:.1e})"
        )
    where = f["where"] or ""
    outcome = (
        "input"
        if where.startswith("input")
        else "labels"
        if where == "labels"
        else "loss"
        if where == "loss"
        else "gradients"
        if where.startswith("gradient")
        else "forward"
    )
    return Answer("first_nonfinite", outcome, lines)


def _label_audit(case: Case) -> Answer:
    f = case.label_audit()
    if f["task"] == "lm":
        audit = f["audit"]
        lines = [
            "the first sequence of the batch, positions 0-11:",
            "  input_ids      " + " ".join(f"{v:>5}" for v in f["ids"]),
            "  labels         " + " ".join(f"{v:>5}" for v in f["labels"]),
            "  attention_mask " + " ".join(f"{v:>5}" for v in f["mask"]),
            f"verdict over 64 sequences: {audit.verdict}",
        ]
        d = audit.details
        outcome = (
            "empty"
            if d["supervised"] == 0
            else "padding"
            if d["pad_supervised"]
            else "shifted"
            if d["pre_shifted"] and d["pre_shifted"] > 0.9
            else "ok"
        )
        return Answer("label_audit", outcome, lines)
    lines = [
        f"training inputs ({f['rows']} rows): non-finite values {f['nonfinite']}"
        + (f" in rows {f['bad_rows']}" if f["bad_rows"] else ""),
        "  per-feature std " + " ".join(num(v, 3) for v in f["std"]),
        "  per-feature min "
        + " ".join(num(v, 3) for v in f["min"])
        + ", max "
        + " ".join(num(v, 3) for v in f["max"]),
        "  label counts    " + " ".join(map(str, f["labels"])),
        (
            f"model output on 64 rows at init: min {num(f['out_min'], 3)}, max "
            f"{num(f['out_max'], 3)}, mean row sum {num(f['row_sums'], 4)}"
        ),
    ]
    outcome = (
        "nonfinite"
        if f["nonfinite"]
        else "constant"
        if max(f["std"]) < 1e-6
        else "probabilities"
        if f["out_rows_are_probs"]
        else "ok"
    )
    return Answer("label_audit", outcome, lines)


def _overfit(case: Case) -> Answer:
    r = case.overfit()
    d = r.details
    losses = d["losses"]
    k = max(1, len(losses) // 10)
    lines = [
        f"{d['steps']} steps on the same 64 rows; loss every {k} steps:",
        *point_rows(_every(losses, k), every=k),
        (
            f"gradient norm: median {num(d['start_grad_norm'], 3)} over the first 10 steps, "
            f"{num(d['median_grad_norm'], 3)} over the second half"
        ),
        f"verdict: {r.verdict}",
    ]
    outcome = (
        "reaches" if d["reached"] else "nan" if not math.isfinite(d["loss_last"]) else "stalls"
    )
    return Answer("overfit", outcome, lines, {"overfit": losses})


def _label_shuffle(case: Case) -> Answer:
    real, r = case.overfit(), case.label_shuffle()
    d = r.details
    k = max(1, len(d["shuffled_losses"]) // 10)
    lines = [
        f"shuffled labels, loss every {k} steps:",
        *point_rows(_every(d["shuffled_losses"], k), every=k),
        (
            f"mean loss over the run: real labels {num(d['real_mean'], 4)}, shuffled "
            f"{num(d['shuffled_mean'], 4)}"
        ),
        f"verdict: {r.verdict}",
    ]
    outcome = "inconclusive" if d["inconclusive"] else "same" if d["same"] else "differs"
    return Answer(
        "label_shuffle",
        outcome,
        lines,
        {"real labels": real.details["losses"], "shuffled": d["shuffled_losses"]},
    )


def _lr_sweep(case: Case) -> Answer:
    f = case.lr_sweep()
    lines = ["the same loop from the same init, 50 steps per arm; raw loss every 10 steps:"]
    curves, last = {}, {}
    for factor, run in f["arms"].items():
        raw = run.table["loss_raw"]
        label = {0.1: "LR /10", 1.0: "LR x1", 10.0: "LR x10"}[factor]
        curves[label] = raw
        last[factor] = raw[-1]
        lines.append(
            f"  {label:<7} (lr {num(f['lr'] * factor, 3):>7}) "
            + " ".join(f"{num(v):>7}" for v in _every(raw, 10) + [raw[-1]])
        )
    first = f["arms"][1.0].table["loss_raw"][0]
    bad = {k: not math.isfinite(v) for k, v in last.items()}
    if all(bad.values()):
        outcome = "unstable"
    elif bad[1.0] or (not bad[0.1] and last[0.1] < last[1.0] - 0.05 * first):
        outcome = "too_high"
    elif max(first - v for k, v in last.items() if not bad[k]) < 0.05 * first:
        outcome = "flat"
    else:
        outcome = "responds"
    return Answer("lr_sweep", outcome, lines, curves)


def _second_seed(case: Case) -> Answer:
    first, again = case.baseline().table["loss_reported"], case.second_seed().table["loss_reported"]
    lines = [f"seed {case.mystery.run_seed + 1}, reported loss of each step:", *point_rows(again)]
    a, b = classify_shape(first), classify_shape(again)
    close = all(math.isfinite(v) for v in (first[-1], again[-1])) and abs(
        first[-1] - again[-1]
    ) <= 0.15 * abs(first[-1])
    outcome = "same" if a == b or close else "different"
    lines.append(f"shape: '{b}' on this seed, '{a}' on the first ({outcome})")
    return Answer("second_seed", outcome, lines, {"second seed reported": again})


_ANSWERS = {
    "raw_vs_reported": _raw_vs_reported,
    "gradient_audit": _gradient_audit,
    "update_probe": _update_probe,
    "first_nonfinite": _first_nonfinite,
    "label_audit": _label_audit,
    "overfit": _overfit,
    "label_shuffle": _label_shuffle,
    "lr_sweep": _lr_sweep,
    "second_seed": _second_seed,
}
