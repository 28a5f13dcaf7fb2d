"""`ForecastHistory`: every sealed forecast and its score, kept in the learner store.

Each forecast is one ``forecast`` record of `labkit.store.learner`, keyed by its content
hash, so any number of notebooks, the CLI and restarted kernels add to the same history
without losing or overwriting each other's entries. A forecast's score is attached once;
a second, different score is refused.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .forecast import Forecast
from .kept import HISTORY_FORMAT, merge_entry  # noqa: F401 (registers forecasts with the store)
from .score import ForecastScore


def default_history_path() -> Path:
    """The store file ForecastHistory() uses: ``$LABKIT_HOME/labkit.sqlite3``."""
    from ..store.learner import store_path

    return store_path()


class ForecastHistory:
    """Every sealed forecast (and its score, once scored), oldest first.

    `path` is the store file (default ``$LABKIT_HOME/labkit.sqlite3``); nothing is opened
    until the history is first read or added to.
    """

    def __init__(self, path=None):
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path; got {type(path).__name__}.")
        if path is not None and Path(path).suffix == ".json":
            raise ValueError(
                f"path={str(path)!r} names a JSON file, but forecasts are now kept "
                "in the learner store; give a store file such as "
                "'labkit.sqlite3' (or nothing, for $LABKIT_HOME/labkit.sqlite3), and "
                "bring an old forecasts.json in with `labkit import PATH`."
            )
        from ..store.learner import default_store

        self.store = default_store(path)
        self.path = self.store.path

    def __repr__(self) -> str:
        return f"ForecastHistory({len(self)} entries)"

    def __len__(self) -> int:
        return self.store.count("forecast")

    def entries(self) -> list[dict]:
        """The stored entries, oldest first: {"forecast": ..., "score": ... or None, "added_at"}."""
        return [r["body"] for r in self.store.records("forecast")]

    def add(
        self, forecast: Forecast, score: ForecastScore | None = None, *, drawn: bool = False
    ) -> dict:
        """Record a sealed forecast, or attach its score to the entry already recorded.

        `drawn`: the learner drew it by hand (a sketch widget), so a sketch made again may
        bring it back (`labkit.widgets.sketch.gate`); curves given in code never come back."""
        forecast.verify()
        new = {
            "forecast": forecast.to_dict(),
            "added_at": time.time(),
            "score": score.to_dict() if score is not None else None,
        }
        if drawn:
            new["drawn"] = True
        return self.store.update(
            "forecast", forecast.content_hash, lambda old: merge_entry(old, new)
        )["body"]

    def forecasts(self) -> list[Forecast]:
        return [Forecast.from_dict(e["forecast"]) for e in self.entries()]

    def report(self) -> dict:
        """Scores by exercise and by real shape, and your habits; ``report()["text"]`` is
        what ``labkit forecasts`` prints (see `labkit.forecast.calibration`)."""
        from .calibration import calibration_report

        return calibration_report(self.entries())

    def plot(self, ax=None):
        """Each scored forecast's log error over time, coloured by exercise; then the text."""
        from .calibration import plot_calibration

        return plot_calibration(self.entries(), ax)

    def calibration(self) -> dict:
        """Error over time: per-entry mean log-error, its trend, shape and NaN hit rates."""
        scored = [e["score"] for e in self.entries() if e["score"] is not None]
        errors = [s["mean_log_error"] for s in scored]
        known = [(i, e) for i, e in enumerate(errors) if e is not None]
        trend = None
        if len(known) >= 2:  # least-squares slope of error against entry number
            mx, my = (sum(i for i, _ in known) / len(known), sum(e for _, e in known) / len(known))
            trend = sum((i - mx) * (e - my) for i, e in known) / sum(
                (i - mx) ** 2 for i, _ in known
            )
        out = {
            "n_entries": len(self),
            "n_scored": len(scored),
            "mean_log_error": errors,
            "trend_per_forecast": trend,
            "shape_hit_rate": sum(s["shape_predicted"] == s["shape_actual"] for s in scored)
            / len(scored)
            if scored
            else None,
            "nan_hit_rate": sum(s["nan_hit"] for s in scored) / len(scored) if scored else None,
        }
        out["summary"] = _calibration_text(out, [e for _, e in known])
        return out


def _calibration_text(c: dict, errors: list) -> str:
    if not c["n_scored"]:
        return f"{c['n_entries']} forecast(s) recorded, none scored yet."
    text = f"{c['n_scored']} of {c['n_entries']} forecast(s) scored"
    if errors:
        text += (
            f"; mean log-error {sum(errors) / len(errors):.2f} (first {errors[0]:.2f}, "
            f"latest {errors[-1]:.2f})"
        )
    if c["trend_per_forecast"] is not None:
        t = c["trend_per_forecast"]
        text += ", " + ("improving" if t < -0.01 else "getting worse" if t > 0.01 else "steady")
    return (
        text + f"; shape right {c['shape_hit_rate']:.0%}, NaN step right {c['nan_hit_rate']:.0%}."
    )
