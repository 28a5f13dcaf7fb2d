"""The windows a logger may sum over (`Windows`), and the tolerance its reports are read at:
shared by the logger check (`logger`) and the off-by-one count (`logcount`)."""

from __future__ import annotations

import math

from . import smoothing

TOL = 0.01  # relative


def same_value(a, b, tol=TOL) -> bool:
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.isfinite(a) == math.isfinite(b)
    return abs(a - b) <= tol * max(abs(b), 1e-8) + 1e-9


METRIC_WORDS = {
    "accuracy": "the training accuracy (the share of the batch whose argmax is its label)",
    "error_rate": "the training error rate (1 - accuracy: the share of the batch it gets wrong)",
}
BROADCAST_WORDS = {
    "broadcast_mse": "the mean squared error",
    "broadcast_l1": "the mean absolute error",
}


def column_words(key: str) -> tuple[str, str]:
    """(what, hint) of a ``column<c>of<K>_<mse|l1>`` series, of the accuracy or error rate
    (`logcount._columns`), or of a loss beside a smoothed cross-entropy (`smoothing.series`)."""
    if smoothing.words(key) is not None:  # a loss beside the smoothed one trained on
        return smoothing.words(key)
    if key in BROADCAST_WORDS:
        return (
            f"{BROADCAST_WORDS[key]} of the (B, 1) output against the (B,) labels, which "
            "broadcast to (B, B): every prediction scored against every label of the batch"
        ), (
            "squeeze the output to (B,) (or the labels to (B, 1)) where that error is computed; "
            "the loss passed to backward() is not this error"
        )
    if key == "averaged_copy":  # `own.averaged`: logcount puts the copy's numbers in
        return (
            "an averaged copy of the model",
            "show the trained model's loss, or a copy that follows it",
        )
    if key in METRIC_WORDS:
        return METRIC_WORDS[key], (
            "a metric is not the loss: it falls by steps of 1/batch and stops at 0 while the "
            "loss goes on; report the loss passed to backward() and the metric in a column of "
            "its own"
        )
    column, _, kind = key.partition("_")
    c, k = column.removeprefix("column").split("of")
    error = "squared" if kind == "mse" else "absolute"
    what = f"one output's error alone: the mean {error} error of column {c} of the {k} outputs"
    hint = (
        "the loss passed to backward() averages every output; report that loss (the mean over "
        "the outputs), or name the output shown"
    )
    return what, hint


class Windows:
    """Sums and counts of a per-row series over the windows a logger may keep."""

    def __init__(self, values, per_epoch: int, logged: list[int], sizes: list[float]):
        n = len(values)
        self.v, self.w = values, [values[t] * sizes[t] for t in range(n)]
        self.sizes = sizes
        self.start = {"run": [0] * n, "epoch": [t - t % per_epoch for t in range(n)]}
        prev, last = [], -1
        for t in range(n):
            prev.append(last + 1)
            if t in logged:
                last = t
        self.start["log"] = prev
        self.start["log+epoch"] = [max(a, b) for a, b in zip(prev, self.start["epoch"])]
        self.start["step"] = list(range(n))
        self._cum = {k: cumsum(s) for k, s in (("v", self.v), ("w", self.w), ("n", sizes))}

    def total(self, kind: str, window: str, t: int) -> float:
        c = self._cum[kind]
        s = self.start[window][t]
        return c[t + 1] - c[s]

    def count(self, window: str, t: int) -> int:
        return t - self.start[window][t] + 1


def cumsum(xs):
    out, acc = [0.0], 0.0
    for x in xs:
        acc += x
        out.append(acc)
    return out


BETAS = [i / 100 for i in range(50, 99)] + [i / 1000 for i in range(990, 1000)]
