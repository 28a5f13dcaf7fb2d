"""`TriageRecord`: the Training Run Explorer, Lab 15's paper form made executable.

Rows, in the form's order: hashes (seed / data / init); baseline (50 steps: loss and gradient
norm, first -> last); raw_vs_reported (H3); overfit (H2 vs H1: 64 samples, can it learn?);
label_shuffle (does the model read the labels?); intervention (one variable, a FORECAST sealed
before the run); confirmation (the same on a second seed); conviction (system, mechanism).

Rules the record enforces: an intervention that changes more than one variable is refused
(naming the keys); a forecast is sealed (content hash + time) before the run it predicts and
any later edit is detected; a verdict is refused while a row is UNKNOWN or the decisive
result rests on one seed. ``TriageRecord(strict=True)`` is Lab 15's record: it adds the
chapter's rules in `labkit.diagnosis.record.strict` (order, sketches before probes, OBSERVATION and
UPDATED BELIEF per run, the declared setup, an informative FORECAST, the overfit gate, a
count of conviction attempts). `labkit.diagnose` fills a plain record (`intervene` judges a fix).
"""

from __future__ import annotations

from dataclasses import asdict

from ...errors import suggest
from ...store import decode_nonfinite, outputs, read_json
from ...store.exchange import CHECKS, READERS
from . import kept, triage_text
from .strict_rows import StrictRows
from .prediction import FORECAST_COLUMNS, NO_EVIDENCE, Prediction, TriageRefused  # noqa: F401

UNKNOWN = "UNKNOWN"
ROWS = (
    "hashes",
    "baseline",
    "raw_vs_reported",
    "overfit",
    "label_shuffle",
    "intervention",
    "confirmation",
    "conviction",
)
SYSTEM_NAMES = {"H1": "optimizer/loss", "H2": "data", "H3": "instrumentation", "NONE": "no defect"}
FORMAT = "labkit.triage/1"


def _row(status=UNKNOWN, text="", **data) -> dict:
    return {"status": status, "text": text, "data": data}


class TriageRecord(StrictRows):
    """One triage of one setup. Fill rows by hand or let `labkit.diagnose` fill them."""

    def __init__(self, subject: str = "my run", *, strict: bool = False):
        self.subject = subject
        self.strict = bool(strict)
        self.rows: dict[str, dict] = {name: _row() for name in ROWS}
        self.forecast: Prediction | None = None
        self.sketch = None  # strict: the intervention's sealed sketch (a labkit Forecast)
        self.predictions: dict | None = None  # strict: {H: {"loss": shape, "grad_norm": shape}}
        self.baseline_columns: dict = {}  # strict: the baseline's columns, to judge a FORECAST
        self.attempts = 0  # strict: convictions made on this record
        self.seeds: list[int] = []
        self.notes: list[str] = []
        self.intervener = None  # set by the triage that filled the record: judges a fix

    # ---- rows ---------------------------------------------------------------
    def set_row(self, name: str, text: str, status: str = "done", **data) -> None:
        if name not in ROWS:
            raise ValueError(
                f"row={name!r} is not a row of the form; rows are "
                f"{', '.join(ROWS)}.{suggest(name, ROWS)}"
            )
        self.rows[name] = _row(status, text, **data)

    def record_hashes(self, run) -> None:
        self._turn("hashes")
        m = run.meta
        self.set_row(
            "hashes",
            f"{m['seed']} / {m['data_hash']} / {m['init_hash']}",
            seed=m["seed"],
            data_hash=m["data_hash"],
            init_hash=m["init_hash"],
        )

    def record_baseline(self, run) -> None:
        self._turn("baseline")
        loss, grad = run.table["loss_raw"], run.table["grad_norm"]
        f = lambda v: "null" if v is None else f"{v:.3g}"  # noqa: E731
        extra = self._strict_baseline(run) if self.strict else {}
        self.set_row(
            "baseline",
            f"{len(run)} steps: loss {f(loss[0])} -> {f(loss[-1])}, "
            f"grad_norm {f(grad[0])} -> {f(grad[-1])}",
            steps=len(run),
            loss=[loss[0], loss[-1]],
            grad_norm=[grad[0], grad[-1]],
            **extra,
        )

    def record_probe(self, name: str, result) -> None:
        """Store a probe's verdict (raw_vs_reported, overfit, label_shuffle rows)."""
        if name not in ROWS:
            raise ValueError(
                f"row={name!r} is not a row of the form; rows are "
                f"{', '.join(ROWS)}.{suggest(name, ROWS)}"
            )
        self._turn(name)
        data = {k: v for k, v in result.details.items() if not isinstance(v, list) or len(v) <= 8}
        text = result.verdict
        if self.strict:  # the row shows what was measured, never a mechanism
            data.pop("mechanism", None)
            text, observed = self._probe_observation(name, result)
            data.update(observation=text, observation_values=observed)
        self.set_row(name, text, **data)

    # ---- the intervention and its forecast -------------------------------------
    def plan_intervention(
        self, parent: dict, child: dict, forecast: str, sketch=None
    ) -> Prediction:
        """Declare the one change and seal its forecast before anything runs. Strict: also
        a sealed sketch of the curve (a Forecast, or a one-series SketchForecast)."""
        keys = sorted(set(parent) | set(child))
        changed = [k for k in keys if parent.get(k) != child.get(k)]
        if len(changed) > 1:
            raise TriageRefused(
                f"an intervention must change one variable; this one changes "
                f"{len(changed)}: {', '.join(changed)}. Split it into separate runs."
            )
        if not changed:
            raise TriageRefused(
                "the intervention changes nothing: parent and child setups are equal."
            )
        prediction = Prediction(forecast)
        if self.strict:
            self._strict_plan(parent, prediction, sketch)
        self.forecast = prediction.seal()
        key = changed[0]
        self.set_row(
            "intervention",
            f"{key}: {parent.get(key)!r} -> {child.get(key)!r}; FORECAST: {forecast}",
            status=UNKNOWN,
            variable=key,
            before=parent.get(key),
            after=child.get(key),
            forecast=forecast,
            sealed_at=self.forecast.sealed_at,
            forecast_hash=self.forecast.content_hash,
            child=dict(child),
        )
        return self.forecast

    def record_intervention_run(self, run) -> bool:
        return self._judge("intervention", run)

    def record_confirmation(self, run) -> bool:
        if self.rows["intervention"]["status"] == UNKNOWN:
            raise TriageRefused("record the intervention run before its confirmation.")
        self._turn("confirmation")
        first = self.rows["intervention"]["data"].get("seed")
        if run.meta["seed"] == first:
            raise TriageRefused(
                f"the confirmation must use a second seed; seed {first} was "
                "already used for the intervention."
            )
        return self._judge("confirmation", run)

    def _judge(self, row: str, run) -> bool:
        if self.forecast is None:
            raise TriageRefused("no forecast was sealed: call plan_intervention() before running.")
        extra = self._strict_run_data(run, row) if self.strict else {}
        met, observed = self.forecast.check(run)
        old = self.rows["intervention"]
        text = (
            f"seed {run.meta['seed']}: observed {observed:.3g}, forecast "
            f"{self.forecast.text!r} {'MET' if met else 'NOT met'}"
        )
        if "sketch_score" in extra:
            text += f"; sketch {extra['sketch_score']}"
        if row == "intervention":
            self.set_row(
                row,
                old["text"] + f" | {text}",
                **{
                    **old["data"],
                    "seed": run.meta["seed"],
                    "met": met,
                    "observed": observed,
                    **extra,
                },
            )
        else:
            self.set_row(row, text, seed=run.meta["seed"], met=met, observed=observed, **extra)
        if run.meta["seed"] not in self.seeds:
            self.seeds.append(run.meta["seed"])
        return met

    def intervene(self, fixed_setup, *, budget_s: float | None = None) -> str:
        """Your fix of what `labkit.diagnose` prescribed, judged on both seeds against the sealed forecast
        (`diagnosis.own.step5_sign.sign`) within `budget_s` (default: the diagnose budget): the signed verdict, or TriageRefused."""
        from ...core.process.torch_state import as_found, sentence

        if self.intervener is None:
            raise TriageRefused(NO_EVIDENCE)
        with as_found() as changes:  # torch's global settings as the learner's fix left them
            verdict = self.intervener(fixed_setup, budget_s=budget_s)
        if sentence(changes):
            self.notes.append(sentence(changes).replace("the triage", "the intervention"))
        return verdict

    def not_needed(self, row: str, reason: str) -> None:
        """Mark the intervention/confirmation rows n/a (only a NONE conviction may)."""
        self.set_row(row, reason, status="n/a")

    # ---- the verdict ---------------------------------------------------------
    def convict(
        self, system: str, mechanism: str, *, by: str = "human", seeds: list[int] | None = None
    ) -> None:
        if system not in SYSTEM_NAMES:
            raise ValueError(
                f"system={system!r} is not allowed; choose one of "
                f"{', '.join(SYSTEM_NAMES)}.{suggest(system, SYSTEM_NAMES)}"
            )
        if not mechanism.strip():
            raise ValueError(
                "mechanism must name what broke, e.g. 'H3: epoch mean divided by 500'."
            )
        if self.strict:
            self._strict_convict(system, mechanism)
        self.set_row(
            "conviction",
            f"{system} ({SYSTEM_NAMES[system]}): {mechanism}",
            system=system,
            mechanism=mechanism,
            by=by,
            evidence_seeds=seeds or [],
        )
        if self.strict:  # Lab 15's record is kept once convicted (`labkit export` has it)
            self._kept_on_conviction()

    def missing(self) -> list[str]:
        out = [f"{name} is UNKNOWN" for name, row in self.rows.items() if row["status"] == UNKNOWN]
        conv = self.rows["conviction"]["data"]
        if self.forecast is not None and not self.forecast.intact():
            out.append("the forecast was edited after sealing")
        if conv.get("system") and conv["system"] != "NONE":
            for row in ("intervention", "confirmation"):
                if self.rows[row]["status"] == "n/a":
                    out.append(f"{row} cannot be n/a for a {conv['system']} conviction")
        seeds = set(self.seeds) | set(conv.get("evidence_seeds") or [])
        if not seeds:
            out.append(
                "no seed has run the decisive test yet; run it, then confirm on a second seed"
            )
        elif len(seeds) < 2:
            out.append(
                f"the decisive result rests on one seed ({sorted(seeds)[0]}); confirm on a "
                "second seed"
            )
        for row in ("intervention", "confirmation"):
            if self.rows[row]["data"].get("met") is False:
                out.append(f"the {row} run did not meet its FORECAST")
        if self.strict:
            out += self._strict_missing()
        return out

    def verdict(self) -> str:
        """The conviction line, or TriageRefused listing everything still missing."""
        missing = self.missing()
        if missing:
            raise TriageRefused("no verdict yet: " + "; ".join(missing) + ".")
        d = self.rows["conviction"]["data"]
        return f"CONVICTION: {d['system']} — {d['mechanism']}"

    # ---- rendering -------------------------------------------------------------
    def to_text(self) -> str:
        return triage_text.to_text(self)

    __str__ = to_text

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return triage_text.to_html(self)

    def plot_raw_vs_reported(self, run, ax=None):
        from ...core.plots import plot_loss

        return plot_loss(run, ax=ax, label=self.subject)

    # ---- storage -------------------------------------------------------------
    def to_dict(self) -> dict:
        d = {
            "format": FORMAT,
            "subject": self.subject,
            "rows": self.rows,
            "seeds": self.seeds,
            "notes": self.notes,
            "forecast": asdict(self.forecast) if self.forecast else None,
        }
        if self.strict:
            d["strict"] = self._strict_dict()
        return d

    @classmethod
    def from_dict(cls, d, source="this dict") -> TriageRecord:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            got = d.get("format") if isinstance(d, dict) else type(d).__name__
            raise ValueError(
                f"{source} is not a triage record (format {got!r}, expected {FORMAT!r})."
            )
        rec = cls(d["subject"])
        rec.rows, rec.seeds, rec.notes = d["rows"], d["seeds"], d["notes"]
        if d["forecast"]:
            rec.forecast = Prediction(**d["forecast"])
        if d.get("strict") is not None:
            rec._load_strict(d["strict"])
        return rec

    def save(self, path) -> None:
        """Write this record as a JSON file of its own (NaN written as "NaN")."""
        outputs.write_json(path, self.to_dict(), backup=True)

    @classmethod
    def load(cls, path) -> TriageRecord:
        return cls.from_dict(decode_nonfinite(read_json(path, what="triage record")), path)

    def keep(self, store=None) -> str:
        """Keep a snapshot of this record in the learner store (default $LABKIT_HOME); returns
        its key. Keeping it unchanged again adds nothing; after more rows, a new snapshot."""
        return kept.keep(self, store)

    @classmethod
    def kept(cls, store=None) -> list[TriageRecord]:
        """Every record kept in the learner store, oldest first."""
        return kept.kept(cls, store)


READERS[FORMAT] = kept.reader(TriageRecord)
CHECKS["triage"] = lambda record, source: kept.reader(TriageRecord)(record["body"], source)
