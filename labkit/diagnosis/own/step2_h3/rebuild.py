"""H3: a logger's mechanism is the hypothesis that reproduces the reported series.

When the logger check (`logger`, `logcount`) finds the reports dishonest, each candidate
logger below rebuilds the reported values from the raw losses, and the ones that reproduce
every report (to EXACT, relative) are named. Where two reproduce them equally, both are
named, with the run that would tell them apart. Candidates:
- the first raw loss, never refreshed (of the run, or of each epoch): a snapshot;
- the highest or lowest raw loss so far (of the run, or of the epoch): a running max or min;
- an epoch total kept in an integer (truncated at every add), divided by the count;
- the previous epoch's mean, shown all through the next epoch: a stale copy;
- an honest mean times one constant (`scaled`): a loss in bits, or another unit;
- a function of an honest mean (`scaled`): exp (the perplexity), the square root (an RMSE).
"""

from __future__ import annotations

import math

EXACT = 1e-6


def _starts(n: int, per_epoch: int, window: str) -> list[int]:
    return [0] * n if window == "run" else [t - t % per_epoch for t in range(n)]


def _first(raw, per_epoch, window):
    s = _starts(len(raw), per_epoch, window)
    return [raw[s[t]] for t in range(len(raw))]


def _extreme(raw, per_epoch, window, pick):
    s = _starts(len(raw), per_epoch, window)
    return [pick(raw[s[t] : t + 1]) for t in range(len(raw))]


def _integer(raw, per_epoch):
    """int(total + loss) at every add; for losses >= 0 the same as total + int(loss)."""
    out, total = [], 0
    for t, v in enumerate(raw):
        total = int((0 if t % per_epoch == 0 else total) + v)
        out.append(total / (t % per_epoch + 1))
    return out


def _previous_epoch(raw, per_epoch):
    out, shown = [], math.nan
    for t in range(len(raw)):
        if t % per_epoch == 0 and t:
            shown = sum(raw[t - per_epoch : t]) / per_epoch
        out.append(shown)
    return out


CANDIDATES = {
    "first_value": (
        (
            "the first raw loss of the run, never refreshed (a snapshot taken once, such as "
            "the initial model's loss)"
        ),
        lambda r, e: _first(r, e, "run"),
    ),
    "first_of_epoch": (
        (
            "the first batch's loss of each epoch, never refreshed within it: a stale value "
            "from an earlier step"
        ),
        lambda r, e: _first(r, e, "epoch"),
    ),
    "running_max": (
        "the highest raw loss so far (a running max)",
        lambda r, e: _extreme(r, e, "run", max),
    ),
    "running_max_epoch": (
        "the highest raw loss so far in the epoch (a running max)",
        lambda r, e: _extreme(r, e, "epoch", max),
    ),
    "running_min": (
        "the lowest raw loss so far (a running min, a 'best' value)",
        lambda r, e: _extreme(r, e, "run", min),
    ),
    "int_total": (
        (
            "an epoch total kept in an integer: every add truncates the total to an int (a loss "
            "under 1.0 adds 0), then it is divided by the count"
        ),
        lambda r, e: _integer(r, e),
    ),
    "previous_epoch": (
        "the previous epoch's mean, shown all through the next epoch: a stale copy",
        lambda r, e: _previous_epoch(r, e),
    ),
}
APART = {  # (a, b) -> the run that would tell the two apart
    frozenset(
        {"first_value", "running_max"}
    ): "a run whose loss rises above its first value (a higher LR, or shuffled labels)",
    frozenset(
        {"first_of_epoch", "running_max_epoch"}
    ): "a run whose loss rises within an epoch above the epoch's first batch",
}


def _same(a: float, b: float) -> bool:
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= EXACT * max(abs(a), abs(b), 1e-12)


def reproducing(raw, rep, rows, per_epoch: int) -> list[str]:
    """The candidates that rebuild every report in `rows` exactly, none of them an honest summary."""
    honest = [sum(raw[t - t % per_epoch : t + 1]) / (t % per_epoch + 1) for t in range(len(raw))]
    out = []
    for key, (_, build) in CANDIDATES.items():
        series = build(raw, per_epoch)
        if all(_same(series[t], rep[t]) for t in rows) and not all(
            _same(series[t], honest[t]) for t in rows
        ):
            out.append(key)
    return out


SCALES = {  # a constant factor on an honest mean, and what it reads as
    1 / math.log(2): "the loss in bits (divided by ln 2)",
    1 / math.log(10): "the loss in decimal digits (divided by ln 10)",
    math.log(2): "the loss multiplied by ln 2 (a loss in bits converted the wrong way)",
}


def _safe(f, v: float) -> float:
    try:
        return f(v)
    except (OverflowError, ValueError):
        return math.nan


TRANSFORMS = {  # a function of an honest mean, and what it reads as
    "exp": (math.exp, "exp of", "the perplexity, exp(loss), shown as the loss"),
    "sqrt": (math.sqrt, "the square root of", "a root-mean-square, sqrt(loss), shown as the loss"),
}


def _transformed(honest, rep, rows, window: str) -> tuple[str, str] | None:
    for key, (f, of, reads) in TRANSFORMS.items():
        if all(_same(_safe(f, honest[t]), rep[t]) for t in rows) and not all(
            _same(honest[t], rep[t]) for t in rows
        ):
            return f"transformed:{key}", (
                f"the reported value is {of} the honest mean of the {window} so far at every one "
                f"of the {len(rows)} reports ({reads}): the numbers are another quantity than "
                "the loss passed to backward(); report the loss itself, or label what is shown"
            )
    return None


def _weighted(raw, per_epoch: int, sizes) -> list[float] | None:
    """The epoch's mean so far weighted by each batch's size (a short last batch counts less)."""
    if not sizes or len(set(sizes)) < 2 or per_epoch != len(sizes):
        return None
    out, total, seen = [], 0.0, 0
    for t, v in enumerate(raw):
        n = sizes[t % per_epoch]
        total, seen = (0.0, 0) if t % per_epoch == 0 else (total, seen)
        total, seen = total + v * n, seen + n
        out.append(total / seen)
    return out


def scaled(raw, rep, rows, per_epoch: int, sizes=None) -> tuple[str, str] | None:
    """(key, mechanism) when every report is one constant times an honest mean (of the epoch
    so far, or of the run so far): a loss shown in other units, or a constant left in the
    report. The factor is read off the first report and must hold at every other. Else, when
    every report is one of `TRANSFORMS` of an honest mean (the perplexity, a root)."""
    for window in ("epoch", "run"):
        start = _starts(len(raw), per_epoch, window)
        honest = [sum(raw[start[t] : t + 1]) / (t + 1 - start[t]) for t in range(len(raw))]
        weighted = _weighted(raw, per_epoch, sizes) if window == "epoch" else None
        for mean in (honest, weighted) if weighted else (honest,):
            found = _transformed(mean, rep, rows, window)
            if found is not None:
                return found
        t0 = rows[0]
        if not honest[t0] or not math.isfinite(rep[t0]):
            continue
        c = rep[t0] / honest[t0]
        if _same(c, 1.0) or not all(_same(rep[t], c * honest[t]) for t in rows):
            continue
        if c < 0:  # the sign flipped: a quantity to maximise shown as the loss
            times = "" if _same(c, -1.0) else f" times {-c:.4g}"
            return "sign_flipped", (
                f"the reported value is minus the honest mean of the {window} so far{times} at "
                f"every one of the {len(rows)} reports: its sign is flipped, as when a "
                "log-likelihood (or another score to maximise) is shown where its negative, "
                "the loss passed to backward(), was meant, so the curve rises as the loss "
                "falls; report the loss itself"
            )
        name = next((v for k, v in SCALES.items() if abs(c / k - 1) < 1e-4), None)
        what = f"{name}: x{c:.4g}" if name else f"x{c:.4g}"
        return "constant_scale", (
            f"the reported value is the honest mean of the {window} so far times one constant "
            f"scale, {what} at every one of the {len(rows)} reports: the numbers are right but "
            "in other units than the loss passed to backward(); report the loss itself, or "
            "label the unit"
        )
    return None


def explain(run, per_epoch: int, named: str | None = None, sizes=None) -> tuple[str, str] | None:
    """(key, mechanism) naming the candidate(s) that reproduce the reports, or None. A constant
    scale (`scaled`) is read only where the logger check named nothing sharper (`named`, its
    mechanism, is "other_tensor", "stale" or None): a divisor or a sum keeps its own words.
    `sizes`: each batch's size by its position in the epoch (for a mean weighted by them)."""
    raw = [float(v) for v in run.table["loss_raw"]]
    rep_col = run.table.get("loss_reported") or []
    rows = [t for t, v in enumerate(rep_col) if v is not None]
    if len(rows) < 3 or len(rep_col) != len(raw):
        return None
    rep = [float(v) if v is not None else math.nan for v in rep_col]
    found = reproducing(raw, rep, rows, per_epoch)
    if not found:
        return (
            scaled(raw, rep, rows, per_epoch, sizes)
            if named in (None, "other_tensor", "stale")
            else None
        )
    if len(found) == 1:
        return found[
            0
        ], f"the reported value is {CANDIDATES[found[0]][0]}: it reproduces every report exactly"
    both = " or ".join(CANDIDATES[k][0] for k in found[:2])
    apart = APART.get(frozenset(found[:2]), "a run where the two readings differ")
    return "|".join(found[:2]), (
        f"the reported value is {both}: on this run both reproduce every report "
        f"exactly, and {apart} would tell them apart"
    )
