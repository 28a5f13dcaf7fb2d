"""The losses a report may show in place of a label-smoothed cross-entropy.

A cross-entropy with ``label_smoothing=eps`` is ``(1 - eps) * nll + eps * uniform``, where
``nll`` is -log p of the label and ``uniform`` the mean -log p over the classes, both averaged
over the labels scored (`replay._columns` records both, per label and per row, on each step's
forward). Where every raw loss of the run is that mix of its step's parts for one eps > 0, the
loss trains with that smoothing, and the candidates a report may show in its place are computed
from the same logits and labels: the cross-entropy without the smoothing (a metrics helper's
`F.cross_entropy(logits, targets)` at its default), and, for sequences, either loss summed over
each row's labels and averaged over rows. `series` gives them to the logger check, which names
the one the reports match (`words`).
"""

from __future__ import annotations

import math

FIT = 1e-4  # how close (relative) every raw loss must sit to the smoothed mix of its parts
SMALLEST = 1e-3  # a fitted eps below this is no smoothing


def fitted(raw: list, nll: list, uniform: list) -> float | None:
    """The eps for which raw = (1 - eps) * nll + eps * uniform at every step (least squares,
    then checked at each step), if one in (SMALLEST, 1) does; else None."""
    pairs = [(r - n, u - n) for r, n, u in zip(raw, nll, uniform)]
    if not pairs or not all(math.isfinite(a) and math.isfinite(b) for a, b in pairs):
        return None
    spread = sum(b * b for _, b in pairs)
    if spread <= 0:
        return None
    eps = sum(a * b for a, b in pairs) / spread
    if not SMALLEST < eps < 1:
        return None
    if any(abs(a - eps * b) > FIT * max(abs(r), 1e-8) for (a, b), r in zip(pairs, raw)):
        return None
    return eps


def series(forwards: list, raw: list) -> dict:
    """Per step, the losses a report may show in place of a smoothed cross-entropy, by a key
    that carries the fitted eps (`words`); {} unless every step's last forward with grad on
    scored class ids and the raw losses fit one eps > 0."""
    last = {f["step"]: f["columns"] for f in forwards if f.get("columns")}
    steps = range(len(raw))
    if any(t not in last or "nll" not in last[t] for t in steps):
        return {}
    part = {k: [last[t][k] for t in steps] for k in ("nll", "uniform", "nll_rows", "uniform_rows")}
    eps = fitted(raw, part["nll"], part["uniform"])
    if eps is None:
        return {}
    tag = f"{eps:.3g}"
    out = {f"ce_unsmoothed_{tag}": part["nll"]}
    if any(abs(a - b) > FIT * abs(b) for a, b in zip(part["nll_rows"], part["nll"])):
        out[f"ce_unsmoothed_per_row_{tag}"] = part["nll_rows"]  # several labels a row
        out[f"ce_smoothed_per_row_{tag}"] = [
            (1 - eps) * n + eps * u for n, u in zip(part["nll_rows"], part["uniform_rows"])
        ]
    return out


def words(key: str) -> tuple[str, str] | None:
    """(what, hint) of a `series` key, or None for another key."""
    name, _, eps = key.rpartition("_")
    smoothing = f"label_smoothing={eps}"
    if name == "ce_unsmoothed":
        return (
            f"the cross-entropy of the same outputs and labels without the label smoothing "
            f"({eps}) the loss trains with"
        ), (
            f"the loss passed to backward() uses {smoothing} and the reported cross-entropy "
            f"does not (its default is 0): pass {smoothing} where the report computes its loss, "
            "or report loss.item()"
        )
    rows = "summed over each row's labels and averaged over the rows, where the loss averages "
    if name == "ce_unsmoothed_per_row":
        return (
            f"the cross-entropy without the label smoothing ({eps}) the loss trains with, {rows}"
            "over every label scored"
        ), f"report the loss passed to backward() ({smoothing}, a mean over the labels scored)"
    if name == "ce_smoothed_per_row":
        return (
            f"the loss trained on (cross-entropy with {smoothing}) {rows}over every label scored"
        ), "divide by the number of labels scored, or report loss.item()"
    return None
