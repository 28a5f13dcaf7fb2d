"""`ForecastHistory`: every sealed forecast and its score, in one JSON file that
survives kernel restarts and is never silently overwritten."""

from __future__ import annotations

import os
import time
from pathlib import Path

from .forecast import Forecast
from .score import ForecastScore
from ..store import atomic_write_json, read_json

HISTORY_FORMAT = "labkit.forecast_history/1"


def default_history_path() -> Path:
    return Path(os.environ.get("LABKIT_HOME") or Path.home() / ".labkit") / "forecasts.json"


class ForecastHistory:
    """Every sealed forecast (and its score, once scored), in one JSON file.

    Each write re-reads the file first, so two notebooks (or a restarted kernel)
    append to the same list instead of overwriting each other.
    """

    def __init__(self, path=None):
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a file path; got {type(path).__name__}.")
        self.path = Path(path) if path is not None else default_history_path()

    def __repr__(self) -> str:
        return f"ForecastHistory({len(self)} entries)"

    def __len__(self) -> int:
        return len(self.entries())

    def entries(self) -> list[dict]:
        """The stored entries, oldest first: {"forecast": ..., "score": ... or None, "added_at"}."""
        if not self.path.exists():
            return []
        data = read_json(self.path, what="forecast history")
        if not isinstance(data, dict) or data.get("format") != HISTORY_FORMAT:
            raise ValueError(f"The file at {str(self.path)!r} is not a labkit forecast history "
                             f"(expected format {HISTORY_FORMAT!r}); it was left untouched.")
        return data["entries"]

    def add(self, forecast: Forecast, score: ForecastScore | None = None) -> dict:
        """Record a sealed forecast, or attach its score to the entry already recorded."""
        forecast.verify()
        entries = self.entries()  # re-read: never write over entries added elsewhere
        new = score.to_dict() if score is not None else None
        for entry in entries:
            if entry["forecast"].get("content_hash") == forecast.content_hash:
                if new is None or entry["score"] == new:
                    return entry
                if entry["score"] is not None:
                    raise ValueError("This forecast already has a different score in the "
                                     "history; a forecast is scored once, against its own run.")
                entry["score"] = new
                break
        else:
            entry = {"forecast": forecast.to_dict(), "score": new, "added_at": time.time()}
            entries.append(entry)
        atomic_write_json(self.path, {"format": HISTORY_FORMAT, "entries": entries})
        return entry

    def forecasts(self) -> list[Forecast]:
        return [Forecast.from_dict(e["forecast"]) for e in self.entries()]

    def calibration(self) -> dict:
        """Error over time: per-entry mean log-error, its trend, shape and NaN hit rates."""
        scored = [e["score"] for e in self.entries() if e["score"] is not None]
        errors = [s["mean_log_error"] for s in scored]
        known = [(i, e) for i, e in enumerate(errors) if e is not None]
        trend = None
        if len(known) >= 2:  # least-squares slope of error against entry number
            mx, my = (sum(i for i, _ in known) / len(known), sum(e for _, e in known) / len(known))
            trend = (sum((i - mx) * (e - my) for i, e in known) /
                     sum((i - mx) ** 2 for i, _ in known))
        out = {"n_entries": len(self), "n_scored": len(scored), "mean_log_error": errors,
               "trend_per_forecast": trend,
               "shape_hit_rate": sum(s["shape_predicted"] == s["shape_actual"] for s in scored)
               / len(scored) if scored else None,
               "nan_hit_rate": sum(s["nan_hit"] for s in scored) / len(scored) if scored else None}
        out["summary"] = _calibration_text(out, [e for _, e in known])
        return out


def _calibration_text(c: dict, errors: list) -> str:
    if not c["n_scored"]:
        return f"{c['n_entries']} forecast(s) recorded, none scored yet."
    text = f"{c['n_scored']} of {c['n_entries']} forecast(s) scored"
    if errors:
        text += (f"; mean log-error {sum(errors) / len(errors):.2f} (first {errors[0]:.2f}, "
                 f"latest {errors[-1]:.2f})")
    if c["trend_per_forecast"] is not None:
        t = c["trend_per_forecast"]
        text += ", " + ("improving" if t < -0.01 else "getting worse" if t > 0.01 else "steady")
    return (text + f"; shape right {c['shape_hit_rate']:.0%}, NaN step right "
            f"{c['nan_hit_rate']:.0%}.")
