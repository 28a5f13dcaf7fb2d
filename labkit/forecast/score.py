"""`ForecastScore`: how a sealed forecast compares with the run it predicted."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from ..core.metrics import ZERO_NORM, norm_shape
from .shapes import classify_shape


def quantity(column: str) -> str:
    """What a column measures, as a score's sentence names it: "the loss", "the accuracy"."""
    name = column.lower()
    for part, words in (
        ("acc", "the accuracy"),
        ("grad_norm", "the gradient norm"),
        ("update_norm", "the update norm"),
        ("recall", "the recall"),
        ("loss", "the loss"),
    ):
        if part in name:
            return words
    return f"the {column.replace('_', ' ')}"


CLOSE = 0.1  # mean log-error below this (within ~10%) counts as a close forecast
ROUGH = 0.5  # ... below this (within a factor ~1.6) as roughly right


@dataclass(frozen=True)
class ForecastScore:
    """How a sealed forecast compares with its run. A checkpoint where the run was NaN is a miss."""

    steps: list  # the forecast's checkpoint steps
    predicted: list  # forecast loss at each checkpoint
    actual: list  # the run's raw loss there; None where it was not finite
    log_errors: list  # |ln predicted - ln actual|; None for a miss
    mean_log_error: float | None  # over the checkpoints that are not misses
    misses: int
    nan_predicted: int | None
    nan_actual: int | None
    nan_hit: bool  # both finite, or both NaN within 10% of the run's length
    shape_predicted: str
    shape_actual: str
    verdict: str

    @property
    def shape_match(self) -> bool:
        return self.shape_predicted == self.shape_actual

    @classmethod
    def compare(cls, forecast, run, column: str = "loss_raw") -> ForecastScore:
        """Score `forecast` against `run.table[column]` (the raw loss, or e.g. ``grad_norm``).

        A value at or below zero can't be compared on a log scale; for a column other than
        the loss (a gradient norm of exactly 0) both sides are floored at 1e-8 instead.
        """
        if column not in run.table:
            raise ValueError(
                f"column={column!r} is not in this run; it has {', '.join(sorted(run.table))}."
            )
        floor = None if column == "loss_raw" else 1e-8
        loss_at = dict(zip(run.table["step"], run.table[column]))
        steps, predicted, actual, errors = [], [], [], []
        for step, pred in forecast.points:
            if step not in loss_at:
                raise ValueError(
                    f"The forecast has a point at step {step}, but the run has steps "
                    f"0 to {len(run) - 1}; forecast only steps the run has."
                )
            real = loss_at[step]
            if floor is not None and (real is None or math.isfinite(real)):
                real, pred = max(real or 0.0, floor), max(pred, floor)
            real = real if real is not None and math.isfinite(real) and real > 0 else None
            steps.append(step)
            predicted.append(pred)
            actual.append(real)
            errors.append(None if real is None else abs(math.log(pred) - math.log(real)))
        hits = [e for e in errors if e is not None]
        mean = sum(hits) / len(hits) if hits else None
        values = run.table[column]
        if floor is not None:  # no gradient at all (None) reads as a norm of zero
            values = [floor if v is None else v for v in values]
        nan_pred, nan_real = forecast.nan_step, run.first_nonfinite_step(column)
        nan_hit = (nan_pred is None and nan_real is None) or (
            None not in (nan_pred, nan_real) and abs(nan_pred - nan_real) <= max(1, len(run) // 10)
        )
        shape_pred, shape_real = forecast.expected_shape, classify_shape(values)
        what = quantity(run.meta.get("series", column) if column == "loss_raw" else column)
        span = None
        if "norm" in column:  # a norm is read as the record reads it: zero, steady, growing
            shape_pred = norm_shape(v for _, v in forecast.points)
            finite = [v for v in values if v is not None and math.isfinite(v)]
            last = nan_real if nan_real is not None else len(values)
            shape_real = norm_shape(v for v in values[:last] if v is not None)
            span = (finite[0], finite[-1]) if finite else None
        verdict = cls._verdict(
            mean,
            errors.count(None),
            nan_pred,
            nan_real,
            nan_hit,
            shape_pred,
            shape_real,
            what,
            span,
        )
        return cls(
            steps,
            predicted,
            actual,
            errors,
            mean,
            errors.count(None),
            nan_pred,
            nan_real,
            nan_hit,
            shape_pred,
            shape_real,
            verdict,
        )

    @staticmethod
    def _verdict(
        mean,
        misses,
        nan_pred,
        nan_real,
        nan_hit,
        shape_pred,
        shape_real,
        what: str = "the loss",
        span=None,
    ) -> str:
        """The score in words. `span`: a norm run's first and last finite values, said with
        the same 4 digits as Lab 15's OBSERVATION; a norm drawn at zero against one that is
        not (or the reverse) is said as that, not as a ratio to a zero."""
        zero_apart = span is not None and (shape_pred == "zero") != (shape_real == "zero")
        close = not zero_apart and (mean is None or mean < CLOSE)
        right = close + nan_hit + (shape_pred == shape_real)
        head = {3: "A good forecast", 2: "Partly right", 1: "Mostly wrong", 0: "A miss"}[right]
        went = "" if span is None else f"the run's went {span[0]:.4g} -> {span[1]:.4g}"
        if zero_apart and shape_pred == "zero":
            loss = f"you drew {what} at zero (below {ZERO_NORM:g}), but {went}"
        elif zero_apart:
            loss = f"you drew {what} above zero, but it collapsed to zero ({went})"
        elif mean is None:
            loss = "no checkpoint could be compared"
        else:
            size = "close" if mean < CLOSE else "roughly right" if mean < ROUGH else "far off"
            loss = f"{what} was {size} (off by x{math.exp(mean):.2f} on average" + (
                f"; {went})" if went else ")"
            )
        loss += f", {misses} checkpoint(s) fell where the run was already NaN" if misses else ""
        shape = (
            f"the shape '{shape_real}' was right"
            if shape_pred == shape_real
            else f"you expected '{shape_pred}' but the run was '{shape_real}'"
        )
        if nan_pred is None and nan_real is None:
            nan = "both stayed finite"
        elif nan_real is None:
            nan = f"the predicted NaN at step {nan_pred} never came"
        elif nan_pred is None:
            nan = f"the run went NaN at step {nan_real}, which you did not predict"
        else:
            nan = f"NaN predicted at step {nan_pred}, it came at step {nan_real}"
        return f"{head}: {loss}; {shape}; {nan}."

    def __repr__(self) -> str:
        mean = "n/a" if self.mean_log_error is None else f"{self.mean_log_error:.3f}"
        return (
            f"ForecastScore(mean_log_error={mean}, misses={self.misses}, "
            f"shape {self.shape_predicted!r} vs {self.shape_actual!r}, "
            f"nan_step {self.nan_predicted} vs {self.nan_actual})\n{self.verdict}"
        )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d) -> ForecastScore:
        return cls(**d)
