"""Raw vs reported: is the number on screen the number being optimised? (the H3 check)"""

from __future__ import annotations

import math
import statistics

from ...errors import check_number
from ._common import ProbeResult


def _epoch_mean(raw, batch_id):
    out, total, count = [], 0.0, 0
    for v, b in zip(raw, batch_id):
        if b == 0:
            total, count = 0.0, 0
        total, count = total + v, count + 1
        out.append(total / count)
    return out


def _epoch_sum(raw, batch_id):
    return [m * (b + 1) for m, b in zip(_epoch_mean(raw, batch_id), batch_id)]


def _same(x, y, tol):
    if not (math.isfinite(x) and math.isfinite(y)):
        return math.isfinite(x) == math.isfinite(y)  # a NaN logged where a NaN happened is honest
    return abs(x - y) <= tol * max(abs(y), 1e-12)


def _close(a, b, tol):
    return all(_same(x, y, tol) for x, y in zip(a, b))


def raw_vs_reported(
    run=None, *, raw=None, reported=None, batch_id=None, tolerance: float = 0.01
) -> ProbeResult:
    """Recompute what an honest logger would show from the raw per-batch losses and compare.

    Accepts a labkit `Run`, or the three lists from your own loop (batch_id = the batch's
    index within its epoch, 0 at each epoch start). Honest loggers recognised: per-batch
    raw loss, the epoch running mean, the mean over the whole run so far.
    """
    check_number("tolerance", tolerance, minimum=0.0)
    if run is not None:
        raw, reported, batch_id = (
            run.table["loss_raw"],
            run.table["loss_reported"],
            run.table["batch_id"],
        )
    if raw is None or reported is None:
        raise ValueError("raw_vs_reported needs a Run, or both raw= and reported= lists.")
    if len(raw) != len(reported):
        raise ValueError(
            f"raw has {len(raw)} values but reported has {len(reported)}; they "
            "must be logged at the same steps."
        )
    batch_id = batch_id if batch_id is not None else [0] + [1] * (len(raw) - 1)
    honest = {
        "per-batch raw loss": list(raw),
        "epoch running mean": _epoch_mean(raw, batch_id),
        "running mean over the run": _epoch_mean(raw, [0] + [1] * (len(raw) - 1)),
    }
    sums = _epoch_sum(raw, batch_id)
    logged = [i for i, v in enumerate(reported) if v is not None]  # None: not logged at that step
    if len(logged) < len(reported):
        raw, reported, sums = ([seq[i] for i in logged] for seq in (raw, reported, sums))
        honest = {k: [v[i] for i in logged] for k, v in honest.items()}
    matches = [name for name, values in honest.items() if _close(reported, values, tolerance)]
    if matches:
        prefer = "epoch running mean" if "epoch running mean" in matches else matches[0]
        others = [m for m in matches if m != prefer]
        also = (
            f" (on this curve also indistinguishable from the {' and the '.join(others)})"
            if others
            else ""
        )
        return ProbeResult(
            "raw vs reported",
            f"agree: the logger shows the {prefer}{also}",
            {
                "agree": True,
                "matches": prefer,
                "all_matches": matches,
                "steps_compared": len(raw),
                "mechanism": None,
            },
        )
    finite = [
        i
        for i, (a, b) in enumerate(zip(honest["epoch running mean"], reported))
        if math.isfinite(a) and math.isfinite(b)
    ]
    raw_f = [raw[i] for i in finite]
    rep_f = [reported[i] for i in finite]
    sum_f = [sums[i] for i in finite]
    details = {"agree": False, "steps_compared": len(finite), "matches": None}
    epoch_mean = [honest["epoch running mean"][i] for i in finite]
    gap = max((abs(a - b) for a, b in zip(rep_f, epoch_mean)), default=math.nan)
    details["max_abs_gap"] = gap
    if not finite:
        details["mechanism"] = "other"
        verdict = "disagree: the reported values are non-finite where the raw loss is not"
        return ProbeResult("raw vs reported", verdict, details)
    if len(set(rep_f)) == 1 and len({round(v, 6) for v in raw_f}) > 1:
        details["mechanism"] = "stale"
        verdict = (
            f"disagree: the reported value is stuck at {rep_f[0]:.4g} while the raw loss "
            f"moves ({raw_f[0]:.3g} -> {raw_f[-1]:.3g}): the logger reads a stale value"
        )
    else:
        divisors = [s / r for s, r in zip(sum_f, rep_f) if r]
        d = statistics.median(divisors) if divisors else math.nan
        if divisors and all(abs(x - d) <= 0.01 * abs(d) for x in divisors):
            details.update(mechanism="divisor", divisor=d)
            verdict = (
                f"disagree: reported = epoch loss sum / {d:.0f} at every step; the true "
                "divisor is the number of batches seen"
            )
        else:
            details["mechanism"] = "other"
            verdict = (
                f"disagree: reported differs from every honest recomputation (largest "
                f"gap {gap:.3g}); check which tensor and which reduction is logged"
            )
    return ProbeResult("raw vs reported", verdict, details)
