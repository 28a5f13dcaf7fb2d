"""Calibration across the course: how the learner's scored forecasts went, by exercise and
by the shape the run really had, and the learner's habits in one or two sentences.

    >>> report = calibration_report(ForecastHistory().entries())
    >>> print(report["text"])           # what `labkit forecasts` prints
    >>> plot_calibration(entries)       # what ForecastHistory().plot() draws

An entry's exercise is the first part of its forecast's note (``ex_a/healthy`` belongs to
``ex_a``); a forecast without a note counts under "(other)".
"""

from __future__ import annotations

import math
from statistics import mean

MIN_FOR_HABIT = 2  # a habit needs at least this many forecasts showing it


def _exercise(entry: dict) -> str:
    note = (entry["forecast"].get("note") or "").split(" | ")[0]
    return note.split("/")[0] if note else "(other)"


def _signed_log_error(score: dict) -> float | None:
    """Mean of ln(predicted / actual) over the checkpoints both sides have: > 0 is too high."""
    pairs = [
        (p, a)
        for p, a in zip(score["predicted"], score["actual"])
        if a is not None and p is not None and p > 0 and a > 0
    ]
    return mean(math.log(p / a) for p, a in pairs) if pairs else None


def _plateau_offset(score: dict) -> float | None:
    """For a run that really stayed flat: mean (predicted - actual) loss, in loss units."""
    if score["shape_actual"] != "flat":
        return None
    pairs = [(p, a) for p, a in zip(score["predicted"], score["actual"]) if a is not None]
    return mean(p - a for p, a in pairs) if pairs else None


def habits(scored: list[dict]) -> list[str]:
    """At most two sentences on the learner's systematic errors, the larger first."""
    found = []  # (weight, sentence)
    late = [
        s["nan_predicted"] - s["nan_actual"]
        for s in scored
        if s["nan_predicted"] is not None and s["nan_actual"] is not None
    ]
    if len(late) >= MIN_FOR_HABIT and abs(mean(late)) >= 5:
        when = "late" if mean(late) > 0 else "early"
        found.append(
            (
                abs(mean(late)) / 20,
                (
                    f"you forecast NaN too {when} by about "
                    f"{abs(round(mean(late)))} steps ({len(late)} NaN runs)"
                ),
            )
        )
    missed = sum(s["nan_actual"] is not None and s["nan_predicted"] is None for s in scored)
    if missed >= MIN_FOR_HABIT:
        n_nan = sum(s["nan_actual"] is not None for s in scored)
        found.append(
            (
                missed / max(n_nan, 1) * 2,
                (
                    f"you missed {missed} of {n_nan} runs that "
                    "went NaN: ask what could overflow before you draw"
                ),
            )
        )
    flat = [o for o in map(_plateau_offset, scored) if o is not None]
    if len(flat) >= MIN_FOR_HABIT and abs(mean(flat)) >= 0.1:
        side = "too high" if mean(flat) > 0 else "too low"
        found.append((abs(mean(flat)), f"your plateaus sit {abs(mean(flat)):.1f} {side}"))
    bias = [b for b in map(_signed_log_error, scored) if b is not None]
    if len(bias) >= MIN_FOR_HABIT and abs(mean(bias)) >= math.log(1.25):
        side = "higher" if mean(bias) > 0 else "lower"
        found.append(
            (
                abs(mean(bias)),
                (
                    f"you expect losses about x{math.exp(abs(mean(bias))):.1f} "
                    f"{side} than they turn out"
                ),
            )
        )
    confusions = {}
    for s in scored:
        if s["shape_predicted"] != s["shape_actual"]:
            pair = (s["shape_predicted"], s["shape_actual"])
            confusions[pair] = confusions.get(pair, 0) + 1
    if confusions:
        (pred, real), n = max(confusions.items(), key=lambda kv: kv[1])
        if n >= MIN_FOR_HABIT:
            found.append(
                (n / len(scored), f"{n} times you drew '{pred}' for a run that was '{real}'")
            )
    found.sort(key=lambda wf: -wf[0])
    return [s for _, s in found[:2]]


def _group(scored_entries, key) -> dict:
    out = {}
    for e in scored_entries:
        s = e["score"]
        g = out.setdefault(key(e), {"n": 0, "errors": [], "shape_right": 0, "nan_right": 0})
        g["n"] += 1
        g["shape_right"] += s["shape_predicted"] == s["shape_actual"]
        g["nan_right"] += bool(s["nan_hit"])
        if s["mean_log_error"] is not None:
            g["errors"].append(s["mean_log_error"])
    return {
        k: {
            "n": g["n"],
            "mean_log_error": mean(g["errors"]) if g["errors"] else None,
            "shape_right": g["shape_right"],
            "nan_right": g["nan_right"],
        }
        for k, g in sorted(out.items())
    }


def calibration_report(entries: list[dict]) -> dict:
    """Per exercise, per real shape, the learner's habits, and the text that prints them."""
    from .counting import counted

    loss, grad, alternatives = counted([e for e in entries if e.get("score") is not None])
    report = {
        "n_entries": len(entries),
        "n_scored": len(loss) + len(grad),
        "by_exercise": _group(loss, _exercise),
        "by_shape": _group(loss, lambda e: e["score"]["shape_actual"]),
        "gradient_norm": _group(grad, _exercise),
        "alternatives": len(alternatives),
        "habits": habits([e["score"] for e in loss]),
    }
    report["text"] = _text(report)
    return report


def _table(title: str, groups: dict) -> list[str]:
    lines = [
        f"{title:<14} {'forecasts':>9} {'log error':>10} {'shape right':>12} {'NaN right':>10}"
    ]
    for name, g in groups.items():
        err = "n/a" if g["mean_log_error"] is None else f"{g['mean_log_error']:.2f}"
        lines.append(
            f"{name:<14} {g['n']:>9} {err:>10} {g['shape_right']:>8}/{g['n']:<3} "
            f"{g['nan_right']:>6}/{g['n']}".rstrip()
        )
    return lines


def _text(report: dict) -> str:
    if not report["n_scored"]:
        return (
            f"{report['n_entries']} forecast(s) sealed, none scored yet: seal a sketch, run, "
            "and score it (sketch.score(run)) to start your calibration record."
        )
    lines = [
        f"{report['n_scored']} scored forecast(s) of {report['n_entries']} sealed."
        + (
            f" {report['alternatives']} alternative hypothesis curve(s) are kept but not "
            "scored as misses (one hypothesis of a set can be right)."
            if report["alternatives"]
            else ""
        ),
        "",
    ]
    lines += _table("exercise", report["by_exercise"]) + [""]
    lines += _table("real shape", report["by_shape"]) + [""]
    if report["gradient_norm"]:
        lines += _table("gradient norm", report["gradient_norm"]) + [""]
    if report["habits"]:
        lines.append("Your habit: " + "; and ".join(report["habits"]) + ".")
    else:
        lines.append("No systematic habit yet: your misses do not lean one way.")
    return "\n".join(lines)


def plot_calibration(entries: list[dict], ax=None):
    """Each scored forecast's log error in the order made, coloured by exercise (a falling
    cloud means your forecasts are getting closer); returns the Axes."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    from .counting import counted

    scored = [
        e
        for e in counted([e for e in entries if e.get("score") is not None])[0]
        if e["score"]["mean_log_error"] is not None
    ]
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.4))
    for name in sorted({_exercise(e) for e in scored}):
        pts = [
            (i, e["score"]["mean_log_error"])
            for i, e in enumerate(scored, 1)
            if _exercise(e) == name
        ]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", label=name)
    ax.axhline(0.1, color="grey", ls="--", lw=1, label="close (0.1)")
    ax.set(
        xlabel="forecast number (oldest first)",
        ylabel="mean log error",
        title=f"your loss calibration: {len(scored)} scored forecast(s)",
    )
    ax.set_xlim(0.5, max(len(scored), 1) + 0.5)  # forecasts 1 to n, counted in whole numbers
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    if scored:
        ax.legend(fontsize=7, ncol=2)
    return ax
