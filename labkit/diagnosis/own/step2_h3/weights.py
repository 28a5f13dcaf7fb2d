"""A report that combines the loss's own terms with other weights than the loss does.

A multi-task or regularised loss is ``w1 * a + w2 * b + ...`` (`own.terms` reads the weights
from its graph and the terms' values while ``loss_fn`` runs). A logger that sums the terms as
the loss function returned them (``sum(losses.values())``), shows one of them, or weighs them
anew, reports another combination of the same terms. Where the terms rebuild every raw loss,
the weights a report uses are fitted (least squares) over an honest window of the terms (each
batch's own, the epoch's running mean, the mean since the previous report, the run's running
mean); where one window's fit reproduces every report and its weights are not the loss's,
both sets are named, with the share of the loss each term carries.

`reread(result, raw, rep, rows, per_epoch, parts)` is `logcount.logger_check`'s step: the
disagreeing `result` with the weights named; None where no combination reproduces the reports.
"""

from __future__ import annotations

import torch

from ...probes import ProbeResult
from .windows import Windows, same_value

TOL = 1e-3  # relative: every report must be reproduced this closely by the fitted weights
REBUILD = 1e-4  # relative: how close the weighted terms must sit to each raw loss
WINDOWS = {
    "step": "each batch's value",
    "epoch": "the epoch's running mean",
    "log": "the mean since the previous report",
    "log+epoch": "the mean since the previous report in the epoch",
    "run": "the running mean over the run",
}


def _nice(w: float) -> float:
    """`w` rounded to 3 significant digits (a fitted 0.99999 reads 1)."""
    return float(f"{w:.3g}")


def _fit(rep, rows, columns: list[list[float]]) -> list[float] | None:
    """The weights w' with rep[t] = sum_i w'_i columns[i][t] at every row, if any."""
    a = torch.tensor([[c[t] for c in columns] for t in rows], dtype=torch.float64)
    b = torch.tensor([rep[t] for t in rows], dtype=torch.float64)
    if not (torch.isfinite(a).all() and torch.isfinite(b).all()):
        return None
    w = torch.linalg.lstsq(a, b[:, None]).solution[:, 0]
    size = a.abs().mean(0) * w.abs()  # what each term adds to a report, on average
    w = torch.where(size < 1e-4 * b.abs().mean(), 0.0, w).tolist()  # a term left out: 0
    if all(same_value(rep[t], sum(x * c[t] for x, c in zip(w, columns)), TOL) for t in rows):
        return w
    return None


def _combination(names, weights) -> str:
    return " + ".join(f"{_nice(w):g} x {n}" for w, n in zip(weights, names) if _nice(w) != 0)


def reread(result: ProbeResult, raw, rep, rows, per_epoch: int, parts) -> ProbeResult | None:
    """The logger check's disagreeing `result` read again as another combination of the loss's
    terms (see above); None where the terms do not explain the reports."""
    if result.details.get("mechanism") not in ("other_tensor", "stale") or not parts:
        return None
    values, weights = parts["values"], parts["weights"]
    k, n = len(parts["names"]), len(raw)
    if len(values) != n or len(rows) < k + 3:
        return None
    if not all(
        same_value(raw[t], sum(w * v for w, v in zip(weights[t], values[t])), REBUILD)
        for t in range(n)
    ):
        return None  # the terms do not rebuild the loss passed to backward()
    names = [f"term {i + 1} ({name})" for i, name in enumerate(parts["names"])]
    for window, words in WINDOWS.items():
        columns = []
        for i in range(k):
            win = Windows([values[t][i] for t in range(n)], per_epoch, set(rows), [1.0] * n)
            columns.append([win.total("v", window, t) / win.count(window, t) for t in range(n)])
        fitted = _fit(rep, rows, columns)
        if fitted is None:
            continue
        used = [sum(weights[t][i] for t in range(n)) / n for i in range(k)]  # mean if they vary
        varying = any(weights[t] != weights[0] for t in range(n))
        if all(same_value(a, b, TOL) for a, b in zip(fitted, used)):
            return None  # the loss's own weights: honest over this window, read elsewhere
        shares = [
            sum(abs(weights[t][i] * values[t][i]) / max(abs(raw[t]), 1e-12) for t in range(n)) / n
            for i in range(k)
        ]
        carried = ", ".join(f"{name} {s:.0%}" for s, name in zip(shares, names))
        t = max(rows, key=lambda s: abs(rep[s] - raw[s]))
        what = (
            "the terms summed unweighted"
            if all(_nice(w) == 1 for w in fitted)
            else "one term alone"
            if sum(_nice(w) != 0 for w in fitted) == 1
            else "the terms with other weights"
        )
        text = (
            f"disagree: the reported value is {what}: every one of the {len(rows)} reports is "
            f"{words} of {_combination(names, fitted)} (each within {TOL:.1%}), where the loss "
            f"passed to backward() is {_combination(names, used)}"
            f"{' (its weights vary over the run: their means)' if varying else ''} (on average "
            f"the share of the loss each term carries: {carried}); at step {t} the report is "
            f"{rep[t]:.4g} for a loss of {raw[t]:.4g} ({rep[t] / (raw[t] or 1e-12):.3g}x). Report "
            "loss.item(), or each term with the weight the loss gives it"
        )
        details = {**result.details, "mechanism": "terms_reweighted", "weights": fitted}
        return ProbeResult(result.probe, text, details)
    return None
