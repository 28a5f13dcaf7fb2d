"""The strict half of a `TriageRecord` (Lab 15's record): its sketches, beliefs and
observations. The rules themselves are `labkit.diagnosis.record.strict`."""

from __future__ import annotations

import warnings

from ...errors import suggest
from . import strict as rules
from .prediction import TriageRefused

UNKNOWN = "UNKNOWN"


class StrictRows:
    """Mixed into `TriageRecord`; every method here is a no-op or refused unless strict."""

    def _turn(self, row: str) -> None:
        if self.strict:
            rules.require_turn(self, row)

    def _probe_observation(self, name: str, result) -> tuple[str, dict]:
        d = result.details
        if name == "raw_vs_reported":
            cols = self.baseline_columns
            text, observed = rules.observe(
                {"raw": cols["loss_raw"], "reported": cols["loss_reported"]}, len(cols["step"])
            )
            return (
                f"{'agree' if d.get('agree') else 'disagree'} over {d.get('steps_compared')} "
                f"steps; {text}"
            ), observed
        if name == "overfit":  # the verdict's head says what happened, never why
            text, observed = rules.observe(
                {"loss": d["losses"], "grad_norm": d["grad_norms"]}, len(d["losses"])
            )
            return f"{result.verdict.split(':')[0]}; {text}", observed
        cols = {"shuffled loss": d["shuffled_losses"]}
        if d.get("shuffled_grad_norms"):
            cols["grad_norm"] = d["shuffled_grad_norms"]
        text, observed = rules.observe(cols, len(d["shuffled_losses"]))
        same = "same as" if d.get("same") else "differs from"
        return (
            f"{same} real labels (mean loss {d['shuffled_mean']:.4g} vs {d['real_mean']:.4g}); "
            f"{text}"
        ), observed

    def predict(self, loss_sketch, grad_norm_sketch) -> dict:
        """Record the sealed H1/H2/H3 sketches (loss, gradient norm); refused once a probe ran."""
        done = [r for r in rules.PROBE_ROWS if self.rows[r]["status"] != UNKNOWN]
        if done:
            raise TriageRefused(
                f"the {done[0]} row is already recorded, so a prediction now would "
                "be hindsight; sketches come before any probe."
            )
        self.predictions = rules.predictions(loss_sketch, grad_norm_sketch)
        return self.predictions

    def believe(self, row: str, text: str) -> None:
        """Write the UPDATED BELIEF of a run row, after its OBSERVATION is recorded."""
        if row not in rules.RUN_ROWS:
            raise ValueError(
                f"row={row!r} holds no run; beliefs go on "
                f"{', '.join(rules.RUN_ROWS)}.{suggest(row, rules.RUN_ROWS)}"
            )
        if not rules.filled(self, row):
            raise TriageRefused(
                f"the {row} row has no OBSERVATION yet; run it before updating your belief."
            )
        text = rules.require_belief(text)
        rules.require_consistent(self, row, text)
        self.rows[row]["data"]["belief"] = text

    def _strict_convict(self, system: str, mechanism: str) -> None:
        self._turn("conviction")
        rules.require_said(mechanism, "mechanism line", "name what broke and where in the loop")
        rules.require_overfit_gate(self, system, mechanism)
        self.attempts += 1

    def _kept_on_conviction(self) -> None:
        try:
            self.kept_as = self.keep()
        except (ValueError, OSError) as exc:  # the record itself stays usable
            warnings.warn(
                f"This convicted record was not kept in the learner store: {exc}", stacklevel=3
            )

    def _strict_run_data(self, run, row: str) -> dict:
        """Refuse a run that is not the declared setup; else its OBSERVATION and sketch score."""
        rules.require_declared(self, run, row)
        if row == "intervention" and "met" in self.rows["intervention"]["data"]:
            raise TriageRefused(
                "the intervention already ran; one intervention per record "
                "(confirm it on a second seed, or start a new record)."
            )
        text, observed = rules.observe_run(run)
        out = {
            "observation": text,
            "observation_values": observed,
            "hashes": f"{run.meta['seed']} / {run.meta['data_hash']} / {run.meta['init_hash']}",
        }
        if self.sketch is not None:  # the same sealed sketch scores both seeds
            score = rules.sketch_score(self.sketch, run)
            out["sketch_score"] = score["text"]
            out["sketch_mean_log_error"] = score["mean_log_error"]
        return out

    def _strict_baseline(self, run) -> dict:
        """The baseline row's OBSERVATION and setup; its columns judge a FORECAST later."""
        text, observed = rules.observe_run(run)
        self.baseline_columns = {
            k: list(run.table[c])
            for k, c in (
                ("step", "step"),
                ("loss", "loss_raw"),
                ("loss_raw", "loss_raw"),
                ("loss_reported", "loss_reported"),
                ("grad_norm", "grad_norm"),
                ("update_norm", "update_norm"),
            )
            if c in run.table
        }
        return {"observation": text, "observation_values": observed, "setup": rules.setup_of(run)}

    def _strict_plan(self, parent: dict, prediction, sketch) -> None:
        self._turn("intervention")
        rules.require_parent(self, parent)
        if sketch is None:
            raise TriageRefused(
                "the FORECAST needs its sealed sketch too: draw the curve you "
                "expect from the intervention, seal it, and pass sketch=."
            )
        (sketch,) = rules.forecasts_of(sketch).values()
        rules.require_sealed("intervention", sketch)
        rules.require_informative(self, prediction)
        self.sketch = sketch

    def _strict_dict(self) -> dict:
        sketch = (
            self.sketch.to_dict()
            if self.sketch is not None
            else getattr(self, "_saved_sketch", None)
        )
        return {
            "predictions": self.predictions,
            "attempts": self.attempts,
            "baseline_columns": self.baseline_columns,
            "sketch": sketch,
        }

    def _load_strict(self, st: dict) -> None:
        self.strict, self.predictions, self.attempts = True, st["predictions"], st["attempts"]
        self.baseline_columns = st["baseline_columns"]
        self._saved_sketch = st.get("sketch")  # kept as saved: a loaded record scores no new run

    def _strict_missing(self) -> list[str]:
        out = []
        if self.predictions is None:
            out.append("no sealed H1/H2/H3 sketches were recorded before the probes")
        for row in rules.RUN_ROWS:
            data, done = self.rows[row]["data"], self.rows[row]["status"] != UNKNOWN
            if done and not data.get("observation"):
                out.append(f"the {row} row has no OBSERVATION")
            if done and not data.get("belief"):
                out.append(f"the {row} row has no UPDATED BELIEF")
        return out
