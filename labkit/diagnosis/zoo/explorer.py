"""`Explorer`: the triage of one setup, one step at a time, filling a `TriageRecord`.

Steps, in the chapter's order: baseline (and hashes), raw vs reported (H3), the
overfit probe and the label-shuffle control (H2 vs H1), the suggested conviction
(every rule of `labkit.diagnose` on both seeds), then the one-variable intervention
with its sealed FORECAST and the confirmation on the second seed. `labkit.diagnose`
of a zoo bug is `Explorer(...).run_all()`; the Explorer panel widget calls `run_next()`.
"""

from __future__ import annotations

from ...core.config import Config
from ..record.triage import TriageRecord
from ..stepwise import Stepwise, two_seeds
from .evidence import CONFIRM_STEPS, Evidence
from .rules import investigate
from .setup import ZooSetup

STEPS = (
    "baseline",
    "raw_vs_reported",
    "overfit",
    "label_shuffle",
    "suggest",
    "intervention",
    "confirmation",
)


class Explorer(Stepwise):
    steps = STEPS

    def __init__(self, bug: str | None = None, seeds=(0, 1), config: Config | None = None):
        seeds = two_seeds(seeds)
        self.setup = ZooSetup.of(bug, config)
        self.bug, self.seeds, self.config = bug, seeds, self.setup.config
        self._evidence = Evidence(self.setup, seeds[0])
        self.record = TriageRecord(self.setup.subject)
        self.done: list[str] = []
        self.finding = None

    def _wants_intervention(self) -> bool:
        f = self.finding
        return f is not None and f.system != "NONE" and bool(f.seam and f.forecast)

    # ---- the steps -------------------------------------------------------------
    def _step_baseline(self) -> str:
        base = self._evidence.baseline()
        self.record.record_hashes(base)
        self.record.record_baseline(base)
        return self.record.rows["baseline"]["text"]

    def _probe_row(self, name: str) -> str:
        result = getattr(self._evidence, name)()
        self.record.record_probe(name, result)
        return result.verdict

    def _step_raw_vs_reported(self) -> str:
        return self._probe_row("raw_vs_reported")

    def _step_overfit(self) -> str:
        return self._probe_row("overfit")

    def _step_label_shuffle(self) -> str:
        return self._probe_row("label_shuffle")

    def _step_suggest(self) -> str:
        rec, (s0, s1) = self.record, self.seeds
        a, _ = investigate(self.setup, s0, self._evidence)
        b, _ = investigate(self.setup, s1, Evidence(self.setup, s1))
        if (a.system, a.key) != (b.system, b.key):
            rec.notes.append(
                f"seed {s0} points to {a.system} ({a.key}) but seed {s1} to "
                f"{b.system} ({b.key}); the conviction stays UNKNOWN"
            )
            return rec.notes[-1]
        self.finding = a
        rec.convict(a.system, a.mechanism, by="diagnose", seeds=[s0, s1])
        if a.system == "NONE":
            rec.not_needed("intervention", "n/a: no defect to intervene on")
            rec.not_needed("confirmation", f"n/a: seed {s1} shows the same healthy evidence")
        elif not (a.seam and a.forecast):
            rec.notes.append("no single seam to put back was identified; intervene by hand")
        return rec.rows["conviction"]["text"]

    def _step_intervention(self) -> str:
        child = self.setup.with_reference(self.finding.seam)
        self.record.plan_intervention(
            self.setup.as_dict(), child.as_dict(), self.finding.forecast
        )  # sealed first
        self.record.record_intervention_run(child.trainer(self.seeds[0], CONFIRM_STEPS).run())
        return self.record.rows["intervention"]["text"]

    def _step_confirmation(self) -> str:
        child = self.setup.with_reference(self.finding.seam)
        self.record.record_confirmation(child.trainer(self.seeds[1], CONFIRM_STEPS).run())
        return self.record.rows["confirmation"]["text"]
