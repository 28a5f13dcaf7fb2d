"""H3 on the learner's own log: is the reported number an honest summary of the raw losses?

Only the steps where a value was reported are compared (``None`` elsewhere, as in a loop
that prints once per epoch). Honest loggers recognised: the raw loss, the mean since the
previous report, the epoch running mean (also weighted by batch size), the mean over the
run so far, and an exponential moving average (with or without bias correction).

When none matches, the common loggers' mistakes are named when the numbers fit them:
a value logged after the step (needs the replay's after-step losses), the lowest loss so
far, an EMA started at 0 without bias correction, a stale value,
a sum where a mean was meant, a constant divisor, an accumulator never reset, the sum
and the count reset at different times, a mean over padded batches that counts the padding,
a moving average without its (1 - beta), the gradient norm or the learning rate shown as
the loss;
otherwise the value came from another tensor. Where the replay saw each step's batch, a mean
weighted by its labels scored (not -100) is honest too.
"""

from __future__ import annotations

import math

from ...probes import ProbeResult
from .ema import honest as honest_ema
from .windows import BETAS, Windows, column_words, same_value


def honest_matches(raw, rep, rows, win: Windows) -> list[str]:
    found = []
    for name, fn in (
        ("per-batch raw loss", lambda t: raw[t]),
        ("epoch running mean", lambda t: win.total("v", "epoch", t) / win.count("epoch", t)),
        (
            "epoch running mean weighted by batch size",
            lambda t: win.total("w", "epoch", t) / win.total("n", "epoch", t),
        ),
        (
            "mean since the previous report",
            lambda t: win.total("v", "log", t) / win.count("log", t),
        ),
        (
            "mean since the previous report in this epoch",
            lambda t: win.total("v", "log+epoch", t) / win.count("log+epoch", t),
        ),
        ("running mean over the run", lambda t: win.total("v", "run", t) / (t + 1)),
    ):
        if all(same_value(rep[t], fn(t)) for t in rows):
            found.append(name)
    if not found and (smoothed := honest_ema(raw, rep, rows, win.start["epoch"])):
        found.append(smoothed)  # named with its beta and correction
    return found


def _extreme(raw, rep, rows, win: Windows) -> str | None:
    """The lowest (or highest) raw loss so far, over the run or the epoch: a 'best' shown."""
    for window in ("run", "epoch"):
        for name, pick in (("lowest", min), ("highest", max)):
            if all(same_value(rep[t], pick(raw[win.start[window][t] : t + 1])) for t in rows):
                if all(same_value(rep[t], raw[t]) for t in rows):
                    return None  # a loss that only falls: the raw value itself fits
                return (
                    f"the reported value is the {name} raw loss so far (a running "
                    f"{'min' if pick is min else 'max'} over the {window}, a 'best' value): it "
                    "never shows the loss going the other way, so spikes and rises are hidden"
                )
    return None


def _ema_from_zero(raw, rep, rows) -> float | None:
    """The factor of an EMA started at 0 and shown without bias correction, if one fits."""
    if len(rows) != len(raw) or len(raw) < 3:
        return None
    for beta in BETAS:
        ema = 0.0
        for t, x in enumerate(raw):
            ema = beta * ema + (1 - beta) * x
            if not same_value(rep[t], ema):
                break
        else:
            return beta
    return None


_LR_HINT = (
    "the scheduler's get_last_lr() or a param group's 'lr' logged under the loss's name; log "
    "loss.item() there"
)
SERIES = {  # what a report may show in the loss's place: (its name, how it gets there)
    "grad_norm": (
        "the gradient norm after backward()",
        (
            "clip_grad_norm_ returns the norm it measured: `loss = clip_grad_norm_(...)` puts "
            "it where the loss was; keep the loss and the norm in two names"
        ),
    ),
    "lr": ("the learning rate at the step", _LR_HINT),
    "lr_next": ("the learning rate after the step's scheduler update", _LR_HINT),
}


def _ema_words(key: str, beta: float, raw, rep, rows) -> str:
    if key == "ema_from_zero":
        return (
            f"the reported value is an exponential moving average (beta {beta:g}) started at 0 "
            f"and shown without bias correction: the early reports are pulled toward 0 (the "
            f"first is {rep[rows[0]]:.3g} for a raw loss of {raw[rows[0]]:.3g}), so the curve "
            "starts far too low"
        )
    return (
        f"the reported value is a moving average without its (1 - beta) factor, smooth = "
        f"{beta:g} * smooth + loss: it settles near 1 / (1 - beta) = {1 / (1 - beta):.3g} times "
        f"the loss; write smooth = {beta:g} * smooth + {1 - beta:.3g} * loss"
    )


def _ema_unscaled(raw, rep, rows) -> float | None:
    """The factor of a smoothing without its (1 - beta), s = beta * s + loss (from 0), if one
    reproduces every report."""
    if len(rows) != len(raw) or len(raw) < 3:
        return None
    for beta in BETAS:
        s = 0.0
        for t, x in enumerate(raw):
            s = beta * s + x
            if not same_value(rep[t], s):
                break
        else:
            return beta
    return None


def _correlation(a: list, b: list) -> float | None:
    if len(a) < 3:
        return None
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va, vb = sum((x - ma) ** 2 for x in a), sum((y - mb) ** 2 for y in b)
    if va <= 0 or vb <= 0:
        return None
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / math.sqrt(va * vb)


def _stale(raw, rep, rows, honest_values) -> str | None:
    vals = [rep[t] for t in rows]
    moving = len({round(raw[t], 6) for t in rows}) > 1
    if len(rows) >= 3 and len(set(vals)) == 1 and moving:
        return f"the reported value is stuck at {vals[0]:.4g} while the raw loss moves"
    repeats = sum(1 for a, b in zip(rows, rows[1:]) if rep[a] == rep[b] and raw[a] != raw[b])
    earlier = sum(1 for t in rows if any(same_value(rep[t], h) for s, h in honest_values if s < t))
    if len(rows) >= 3 and (repeats >= 0.5 * (len(rows) - 1) or earlier >= 0.75 * len(rows)):
        return (
            "the reported value is stale: it repeats a value computed at an earlier step "
            f"({earlier} of {len(rows)} reports equal an earlier honest value, {repeats} repeat "
            "the previous report)"
        )
    return None


def _family(raw, rep, rows, win: Windows, per_epoch: int) -> tuple[str, str] | None:
    """reported = (sum over one window) / (a count over another window, or a constant)."""
    fits = []  # (kind, window, constant divisor)
    for kind in ("v", "w"):
        for window in ("step", "epoch", "log", "log+epoch", "run"):
            ratios = [win.total(kind, window, t) / rep[t] for t in rows if rep[t]]
            if len(ratios) < 2 or not all(map(math.isfinite, ratios)):
                continue
            c = sorted(ratios)[len(ratios) // 2]
            if c > 0 and all(same_value(r, c) for r in ratios):
                fits.append((kind, window, c))
    what = {"v": "batch losses", "w": "per-sample losses (loss x batch size)"}
    where = {
        "epoch": "over this epoch",
        "log": "since the previous report",
        "run": "over the whole run",
        "log+epoch": "since the previous report",
        "step": "of this batch",
    }
    for kind, window, c in fits:
        if abs(c - 1) < 0.01:
            return "sum", (
                f"a sum where a mean was meant: the reported value is the sum of the "
                f"{what[kind]} {where[window]}, never divided by their number"
            )
    for num in ("run", "epoch", "log"):
        for den in ("epoch", "log", "run", "log+epoch"):
            if num == den or (num, den) in (("log", "log+epoch"),):
                continue
            if all(same_value(rep[t], win.total("v", num, t) / win.count(den, t)) for t in rows):
                if num == "run":
                    return "never_reset", (
                        "an accumulator never reset: the sum runs over the whole run "
                        f"but is divided by the number of batches since the "
                        f"{'epoch' if den == 'epoch' else 'previous report'} began"
                    )
                if den == "run":
                    return "never_reset", (
                        "a count never reset: the sum restarts each "
                        f"{'epoch' if num == 'epoch' else 'report'} but the count "
                        "runs over the whole run"
                    )
                return "windows", "the sum and the count are reset at different times"
    for kind, window, c in fits:
        if kind == "w" and all(same_value(win.total("n", window, t), c) for t in rows):
            continue  # divided by the number of samples: an honest mean
        true = {
            "epoch": f"the {per_epoch} batches of an epoch",
            "run": "the number of batches so far",
            "log": "the number of batches since the previous report",
            "log+epoch": "the number of batches since the previous report",
            "step": "1",
        }[window]
        return "divisor", (
            f"a constant divisor: the sum of the {what[kind]} {where[window]} is "
            f"divided by {c:.4g} at every report instead of {true}"
        )
    return None


def _padding_counted(raw, rep, rows, per_epoch: int, counts: dict | None) -> str | None:
    """The loss summed over the labels scored, divided by every label position of the padded
    batches (the ignored ones too), over some window, if that reproduces every report."""
    if not counts or len(counts["kept"]) != len(raw) or counts["kept"] == counts["positions"]:
        return None
    kept = Windows(raw, per_epoch, set(rows), [float(n) for n in counts["kept"]])
    every = Windows(raw, per_epoch, set(rows), [float(n) for n in counts["positions"]])
    for window in ("epoch", "step", "log", "log+epoch", "run"):
        shown = [kept.total("w", window, t) / every.total("n", window, t) for t in rows]
        if all(same_value(rep[t], v) for t, v in zip(rows, shown)):
            honest = [kept.total("w", window, t) / kept.total("n", window, t) for t in rows]
            share = sum(r / h for r, h in zip(shown, honest) if h) / len(rows)
            return (
                "the reported mean counts the padding: the loss summed over the labels scored "
                f"is divided by every label position of the padded batches, the ignored ones "
                f"(-100) too, so the reports show {share:.2f} of the honest loss per scored label "
                "on average; divide by the number of labels scored, (labels != -100).sum()"
            )
    return None


def check_logger(
    run,
    *,
    per_epoch: int,
    sizes_by_position: list[float] | None = None,
    after_step: list | None = None,
    counts: dict | None = None,
    series: dict | None = None,
) -> ProbeResult:
    """Compare the reported values of the learner's run with honest recomputations.
    `counts` (`SeedEvidence.counts`): per row, the rows, label positions and labels not -100
    of the batch its step trained on; a mean weighted by them is honest too. `series`: per
    row, other numbers of the run a report may show in the loss's place, by `SERIES` key."""
    raw = [float(v) for v in run.table["loss_raw"]]
    rep_col = run.table.get("loss_reported") or [None] * len(raw)
    rows = [t for t, v in enumerate(rep_col) if v is not None]
    rep = [float(v) if v is not None else math.nan for v in rep_col]
    sizes = [
        float((sizes_by_position or [1.0])[t % per_epoch % len(sizes_by_position or [1.0])])
        for t in range(len(raw))
    ]
    details = {"agree": True, "steps_compared": len(rows), "mechanism": None, "matches": None}
    if not rows:
        return ProbeResult("raw vs reported", "nothing to compare: no value was reported", details)
    finite = [t for t in rows if math.isfinite(raw[t])]
    rows = finite or rows
    if counts and len(counts["rows"]) == len(raw):
        sizes = [float(n) for n in counts["rows"]]  # each step's own batch, as it trained
    win = Windows(raw, per_epoch, set(rows), sizes)
    found = honest_matches(raw, rep, rows, win)
    if (
        not found
        and counts
        and counts["kept"] != counts["rows"]
        and len(counts["kept"]) == len(raw)
    ):
        win_kept = Windows(raw, per_epoch, set(rows), [float(n) for n in counts["kept"]])
        found = [
            f.replace("batch size", "the number of labels scored (not -100)")
            for f in honest_matches(raw, rep, rows, win_kept)
            if "weighted" in f
        ]
    if found:
        details["matches"] = found[0]
        return ProbeResult(
            "raw vs reported",
            f"agree: the logger shows the {found[0]} ({len(rows)} reports compared)",
            details,
        )
    details["agree"] = False
    if after_step and len(after_step) == len(raw) and all(after_step[t] is not None for t in rows):
        win_after = Windows([float(v) for v in after_step], per_epoch, set(rows), sizes)
        moved = honest_matches([float(v) for v in after_step], rep, rows, win_after)
        if moved:
            details["mechanism"] = "after_step"
            return ProbeResult(
                "raw vs reported",
                "disagree: the reported value is the loss recomputed "
                f"after the step (the {moved[0]} of the after-step losses): the model had "
                "already learned from the batch, so the curve looks better than the "
                "training is",
                details,
            )
    padded = _padding_counted(raw, rep, rows, per_epoch, counts)
    if padded:
        details["mechanism"] = "padding_counted"
        return ProbeResult("raw vs reported", f"disagree: {padded}", details)
    extreme = _extreme(raw, rep, rows, win)
    if extreme:
        details["mechanism"] = "running_extreme"
        return ProbeResult("raw vs reported", f"disagree: {extreme}", details)
    for key, fit in (("ema_from_zero", _ema_from_zero), ("ema_unscaled", _ema_unscaled)):
        beta = fit(raw, rep, rows)
        if beta is not None:
            details["mechanism"] = key
            return ProbeResult(
                "raw vs reported", "disagree: " + _ema_words(key, beta, raw, rep, rows), details
            )
    for key, values in (series or {}).items():
        if len(values) != len(raw) or any(v is None for v in values):
            continue
        values = [float(v) for v in values]
        shown = honest_matches(values, rep, rows, Windows(values, per_epoch, set(rows), sizes))
        if shown:
            details["mechanism"] = f"{key}_shown"
            what, hint = SERIES[key] if key in SERIES else column_words(key)
            return ProbeResult(
                "raw vs reported",
                f"disagree: the reported value is the {shown[0].replace('raw loss', 'value')} "
                f"of {what}, not of the loss "
                f"({hint})",
                details,
            )
    honest_values = [(t, raw[t]) for t in range(len(raw))]
    honest_values += [
        (t, win.total("v", "epoch", t) / win.count("epoch", t)) for t in range(len(raw))
    ]
    stale = _stale(raw, rep, rows, honest_values)
    if stale:
        details["mechanism"] = "stale"
        return ProbeResult("raw vs reported", f"disagree: {stale}", details)
    fam = _family(raw, rep, rows, win, per_epoch)
    if fam:
        details["mechanism"] = fam[0]
        return ProbeResult("raw vs reported", f"disagree: {fam[1]}", details)
    gap = max(abs(rep[t] - raw[t]) for t in rows)
    r = _correlation([rep[t] for t in rows], [raw[t] for t in rows])
    if r is not None and r < -0.7 and all(0 <= rep[t] <= 1 for t in rows):
        details["mechanism"] = "metric"
        return ProbeResult(
            "raw vs reported",
            "disagree: the reported value is another metric: it stays "
            f"within [0, 1] and rises as the raw loss falls (correlation {r:.2f}), like "
            "an accuracy logged under the name of the loss",
            details,
        )
    details["mechanism"] = "other_tensor"
    return ProbeResult(
        "raw vs reported",
        "disagree: the reported value matches no honest summary of "
        f"the loss passed to backward() (largest gap to the raw loss {gap:.3g}): it is "
        "computed from another tensor: another forward pass, the model in eval mode, or another "
        "batch (a validation batch?)",
        details,
    )
