"""`Prediction`: a FORECAST line such as "loss < 1.5 by step 100", sealed before its run.

It is the quantitative half of an intervention in the `TriageRecord`: the record
refuses to judge a run against a forecast sealed after that run began, or edited
since it was sealed.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from dataclasses import dataclass

from ...errors import suggest, teaching_lines

_FORECAST = re.compile(
    r"^\s*(?P<column>[a-z_]+)\s*(?P<op><|>)\s*(?P<value>-?[0-9.]+(?:[eE][-+]?\d+)?)"
    r"\s+by\s+step\s+(?P<step>\d+)\s*$"
)
FORECAST_COLUMNS = ("loss", "loss_raw", "loss_reported", "grad_norm", "update_norm")


class TriageRefused(ValueError):
    """A rule of the form was broken; the message lists what is missing or wrong."""

    def _render_traceback_(self) -> list[str]:  # in a notebook: the sentence, not labkit's source
        return teaching_lines(self, "Refused", "TriageRefused")


@dataclass
class Prediction:
    """A FORECAST such as "loss < 1.5 by step 100", sealed before the run it predicts.

    It is judged on the mean of the column over the ten steps ending at that step, so one
    noisy batch cannot decide it.
    """

    text: str
    sealed_at: float | None = None
    content_hash: str | None = None

    def __post_init__(self):
        self.parse()

    def parse(self) -> dict:
        m = _FORECAST.match(self.text)
        if not m:
            raise ValueError(
                f"forecast={self.text!r} is not understood; write it as "
                "'<column> < or > <number> by step <N>', e.g. 'loss < 1.5 by step 100'."
            )
        if m["column"] not in FORECAST_COLUMNS:
            raise ValueError(
                f"forecast column {m['column']!r} is not allowed; choose one of "
                f"{', '.join(FORECAST_COLUMNS)}.{suggest(m['column'], FORECAST_COLUMNS)}"
            )
        return {
            "column": "loss_raw" if m["column"] == "loss" else m["column"],
            "op": m["op"],
            "value": float(m["value"]),
            "step": int(m["step"]),
        }

    def _digest(self) -> str:
        return hashlib.sha256(f"{self.text}|{self.sealed_at!r}".encode()).hexdigest()[:16]

    def seal(self) -> Prediction:
        if self.sealed_at is not None:
            raise TriageRefused(
                "this forecast is already sealed; write a new one instead of re-sealing it."
            )
        self.sealed_at = time.time()
        self.content_hash = self._digest()
        return self

    def intact(self) -> bool:
        return self.sealed_at is not None and self.content_hash == self._digest()

    def check(self, run) -> tuple[bool, float]:
        """(met, observed) for a run; the run must have started after the seal."""
        if not self.intact():
            raise TriageRefused(
                f"the forecast {self.text!r} was edited after it was sealed "
                "(its content hash no longer matches); write and seal a new one."
            )
        started = run.timing.get("started_at")
        if started is None or started < self.sealed_at:
            raise TriageRefused(
                "the forecast was sealed after this run started; a forecast "
                "must be written before the run it predicts."
            )
        p = self.parse()
        return self.judge(run.table["step"], run.column(p["column"]))

    def judge(self, steps, values) -> tuple[bool, float]:
        """(met, observed) for one column given as its steps and values; no seal is checked."""
        p = self.parse()
        window = [v for s, v in zip(steps, values) if p["step"] - 9 <= s <= p["step"]]
        if not window:
            raise TriageRefused(
                f"the run has no steps near step {p['step']} (it has {len(steps)})."
            )
        observed = sum(window) / len(window) if all(v is not None for v in window) else math.nan
        met = math.isfinite(observed) and (
            observed < p["value"] if p["op"] == "<" else observed > p["value"]
        )
        return met, observed


NO_EVIDENCE = (
    "record.intervene() judges your fixed setup against the evidence labkit.diagnose "
    "gathered on the original one; this record holds none (it was filled by hand or "
    "loaded from a file). Run labkit.diagnose(setup) again and call intervene() on the "
    "record it returns."
)
