"""A report that is an exponential moving average (EMA) of the raw losses, and its correction.

An EMA ``ema = beta * ema + (1 - beta) * loss`` is kept over the run or restarted at each
epoch's start, from 0 or from the first loss it sees. Started at 0 it is pulled toward 0 early
on, which a bias correction undoes: ``ema / (1 - beta ** t)`` with t the number of updates the
EMA has had. The correction is honest when its t counts those updates (the run's step count
for an EMA kept over the run, the batch index + 1 for one restarted each epoch), as is an EMA
started at the first loss shown without correction. A correction whose counter restarts each
epoch while the EMA carries on divides the warm average by 1 - beta at every epoch's start
(10x the loss at beta 0.9); one counted over the run on an EMA restarted each epoch leaves the
restart's pull toward 0 uncorrected; a correction of an EMA started at the first loss inflates
the first reports by 1 / (1 - beta).

`honest(raw, rep, rows, epoch_start)` names an honest EMA on the usual betas (`BETAS`), for the
logger check; `reread(result, raw, rep, rows, per_epoch)` is `logcount.recount`'s step: it also
fits beta and tries the mismatched corrections, and turns the disagreeing `result` to agree
(an honest EMA whose beta is off the grid, or reported at some steps only) or names the wrong
counter, with the beta and the reports it inflates.
"""

from __future__ import annotations

from ...probes import ProbeResult
from .windows import BETAS, same_value

TOL = 1e-3  # relative: every report must be reproduced this closely (beta is searched)
# (start, kept over, correction counter): honest where the counter is the EMA's own age
HONEST = (("zero", "run", "run"), ("first", "run", None), ("zero", "epoch", "epoch"),
          ("first", "epoch", None))  # fmt: skip
WRONG = (("zero", "run", "epoch"), ("zero", "epoch", "run"), ("zero", "epoch", None), ("zero", "run", None),
         ("first", "run", "run"), ("first", "run", "epoch"), ("first", "epoch", "epoch"))  # fmt: skip
KEPT = {"run": "kept over the whole run", "epoch": "restarted at each epoch's start"}
COUNTER = {
    "run": "the run's step count",
    "epoch": "the batch index in the epoch + 1, a counter that restarts each epoch",
    None: "no bias correction",
}


def shown(raw, beta: float, scheme, epoch_start) -> list[float]:
    """The EMA of `raw` kept and corrected as `scheme` says, at every step."""
    start, kept, counter = scheme
    out, ema = [], 0.0
    for t, x in enumerate(raw):
        restart = t == 0 or (kept == "epoch" and epoch_start[t] == t)
        if restart:
            ema = 0.0 if start == "zero" else x
        ema = beta * ema + (1 - beta) * x
        n = t + 1 if counter == "run" else t - epoch_start[t] + 1
        out.append(ema / (1 - beta**n) if counter else ema)
    return out


def _fits(raw, rep, rows, beta, scheme, epoch_start, tol) -> bool:
    values = shown(raw, beta, scheme, epoch_start)
    return all(same_value(rep[t], values[t], tol) for t in rows)


def _grid(raw, rep, rows, schemes, epoch_start, tol) -> tuple[float, tuple] | None:
    """The first (beta, scheme) of `BETAS` that reproduces every report, checked row by row
    (most betas fail at the first few reports)."""
    last, rows = max(rows), set(rows)
    for scheme in schemes:
        start, kept, counter = scheme
        for beta in BETAS:
            ema, ok = 0.0, True
            for t in range(last + 1):
                x = raw[t]
                if t == 0 or (kept == "epoch" and epoch_start[t] == t):
                    ema = 0.0 if start == "zero" else x
                ema = beta * ema + (1 - beta) * x
                if t in rows:
                    n = t + 1 if counter == "run" else t - epoch_start[t] + 1
                    if not same_value(rep[t], ema / (1 - beta**n) if counter else ema, tol):
                        ok = False
                        break
            if ok:
                return beta, scheme
    return None


def _fitted(raw, rep, rows, scheme, epoch_start) -> float | None:
    """The beta in (0.5, 0.9999) whose EMA sits closest to the reports (golden section on the
    squared relative error), if it reproduces every report at `TOL`."""

    def err(beta):
        values = shown(raw, beta, scheme, epoch_start)
        return sum(((rep[t] - values[t]) / max(abs(values[t]), 1e-8)) ** 2 for t in rows)

    lo, hi, g = 0.5, 0.9999, (5**0.5 - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = err(a), err(b)
    for _ in range(40):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = err(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = err(b)
    beta = (lo + hi) / 2
    return beta if _fits(raw, rep, rows, beta, scheme, epoch_start, TOL) else None


def held(raw, rep, rows, epoch_start, tol: float = TOL) -> bool:
    """Whether every report is the loss of its epoch's first step, or of the run's: a value
    held, not an average. An EMA with beta near 1 started at the first loss reproduces it as
    well, and would name a stale report an honest average (the first batch of each epoch
    logged for the whole epoch was read so)."""
    return all(same_value(rep[t], raw[epoch_start[t]], tol) for t in rows) or all(
        same_value(rep[t], raw[0], tol) for t in rows
    )


def _starts(n: int, per_epoch: int) -> list[int]:
    return [t - t % per_epoch if per_epoch else 0 for t in range(n)]


def name(beta: float, scheme) -> str:
    start, kept, counter = scheme
    fix = f"bias-corrected by {COUNTER[counter]}" if counter else "no bias correction"
    return (
        f"exponential moving average of the raw loss (beta {beta:.4g}, {KEPT[kept]}, started "
        f"at {'0' if start == 'zero' else 'the first loss'}, {fix})"
    )


def honest(raw, rep, rows, epoch_start) -> str | None:
    """The honest EMA on `BETAS` that reproduces every report at the logger's tolerance, named
    with its beta and correction; None where none does."""
    if len(rows) < 3 or len(raw) < 3 or held(raw, rep, rows, epoch_start, 0.01):
        return None
    found = _grid(raw, rep, rows, HONEST, epoch_start, 0.01)
    return name(*found) if found else None


def _fit(raw, rep, rows, epoch_start):
    """(beta, scheme) reproducing every report at `TOL`: the grid, then a fitted beta; honest
    schemes first."""
    for schemes in (HONEST, WRONG):
        found = _grid(raw, rep, rows, schemes, epoch_start, TOL)
        if found:
            return found
        for scheme in schemes:
            beta = _fitted(raw, rep, rows, scheme, epoch_start)
            if beta is not None:
                return beta, scheme
    return None


def _harm(raw, rep, rows, beta, scheme, epoch_start) -> str:
    """What the wrong correction does to the reports, in numbers."""
    start, kept, counter = scheme
    t = max(rows, key=lambda s: abs(rep[s] / raw[s] - 1) if raw[s] else 0.0)
    worst = f"the farthest off, {rep[t]:.3g} at step {t}, is {rep[t] / (raw[t] or 1e-12):.3g}x its raw loss {raw[t]:.3g}"
    if kept == "run" and counter == "epoch":
        return (
            f"the average carries on across epochs while its counter restarts, so at each "
            f"epoch's start the warm average is divided by 1 - {beta:.3g} = {1 - beta:.3g}: "
            f"the reports jump to about {1 / (1 - beta):.3g}x the loss there ({worst})"
        )
    if start == "first" and counter:
        return (
            f"the average starts at the first loss, so there is no pull toward 0 to undo: the "
            f"correction inflates the first reports up to {1 / (1 - beta):.3g}x ({worst})"
        )
    where = "at each epoch's start" if kept == "epoch" else "once"
    return (
        f"the average starts at 0 {where} but its correction "
        f"{'counts the run' if counter else 'is missing'}, so the reports after each start are "
        f"pulled toward 0 ({worst})"
    )


def reread(result: ProbeResult, raw, rep, rows, per_epoch: int) -> ProbeResult | None:
    """The logger check's disagreeing `result` read again as an EMA (see above): agree, or the
    wrong correction named; None where no EMA reproduces every report."""
    if result.details.get("mechanism") not in ("other_tensor", "stale") or len(rows) < 4:
        return None
    epoch_start = _starts(len(raw), per_epoch)
    if held(raw, rep, rows, epoch_start):
        return None
    found = _fit(raw, rep, rows, epoch_start)
    if found is None:
        return None
    beta, scheme = found
    what = name(beta, scheme)
    if scheme in HONEST:
        return ProbeResult(
            result.probe,
            f"agree: the logger shows an {what} ({len(rows)} reports compared, each within "
            f"{TOL:.1%})",
            {**result.details, "agree": True, "mechanism": None, "matches": what},
        )
    right = "the run's step count" if scheme[1] == "run" else "the batch index in the epoch + 1"
    fix = (
        f"divide by 1 - beta^t with t {right}, the number of updates the average has had"
        if scheme[0] == "zero"
        else "drop the correction: an average started at the first loss needs none"
    )
    text = (
        f"disagree: a wrong bias correction: every one of the {len(rows)} reports is an {what} "
        f"(each within {TOL:.1%}), and no correction that counts the average's own updates "
        f"reproduces them: {_harm(raw, rep, rows, beta, scheme, epoch_start)}; {fix}"
    )
    return ProbeResult(result.probe, text, {**result.details, "mechanism": "ema_correction"})
