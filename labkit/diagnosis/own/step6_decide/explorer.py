"""`SetupExplorer`: the triage of a learner's own setup, one step at a time, filling a
`TriageRecord`; `diagnose_setup(setup)` runs every step.

Steps, in the chapter's order: check the five methods; the baseline (the learner's own
loop, watched by the replay); raw vs reported (H3); the overfit-64 gate and the
dataset-wide label-shuffle control (H2 vs H1); the suggested conviction (both seeds);
the one-variable intervention with its sealed FORECAST, and its confirmation on the
second seed. It has the same step interface as `Explorer`, so `ExplorerPanel` drives it.
"""

from __future__ import annotations

import functools

import torch

from .. import margins
from ..step1_capture import setup as proto, skips as own_skips
from ..step1_capture.carry import adapt
from ..step3_h2.data import describe_signal
from ..step3_h2.entropy import explain_model_stall, explain_stall
from .evidence import SeedEvidence
from ..step5_sign.intervene import plan
from .rules import decide, logger_check
from ..step5_sign.sign import first_plan, intervene, own_plan, prescribe_rows
from ...probes import overfit_probe
from ...stepwise import Stepwise, two_seeds
from ...record.triage import UNKNOWN, TriageRecord

STEPS = (
    "check",
    "baseline",
    "raw_vs_reported",
    "overfit",
    "label_shuffle",
    "suggest",
    "intervention",
    "confirmation",
)
OVERFIT_STEPS, OVERFIT_LR = 100, 1e-2  # Adam on 64 examples: memorised in 100 steps when it can be


def _fmt(v) -> str:
    return "null" if v is None else f"{v:.3g}"


class SetupExplorer(Stepwise):
    steps = STEPS

    def __init__(self, setup, seeds=(0, 1)):
        proto.check_methods(setup)
        seeds = two_seeds(seeds)
        self.setup, self.seeds = adapt(setup), seeds  # a carried state, a loop without torch.optim
        self.record = TriageRecord(f"setup {type(setup).__name__}")
        self.record.finding_key = (
            None  # the mechanism's key once suggested ('unsettled', 'unknown', ...)
        )
        self.record.margins = []  # the threshold comparisons of `diagnose_setup` (own.margins)
        # what record.intervene(fixed_setup) judges a fix against: this triage's evidence
        self.record.intervener = functools.partial(intervene, self.record, triage=self)
        self.done: list[str] = []
        self.finding = None
        self._plan = None
        self._evs: list[SeedEvidence] | None = None

    @property
    def evs(self) -> list[SeedEvidence]:
        if self._evs is None:
            self._evs = [SeedEvidence(self.setup, s) for s in self.seeds]
        return self._evs

    def _wants_intervention(self) -> bool:
        return self._plan is not None

    # ---- the steps -------------------------------------------------------------------
    def _step_check(self) -> str:
        lines = proto.check(self.setup, self.seeds[0])
        self.record.notes.append("setup checked: " + "; ".join(lines))
        return "; ".join(lines)

    def _step_baseline(self) -> str:
        ev = self.evs[0]
        data_hash, init_hash = ev.hashes()
        self.record.set_row(
            "hashes",
            f"{ev.seed} / {data_hash} / {init_hash}",
            seed=ev.seed,
            data_hash=data_hash,
            init_hash=init_hash,
        )
        loss, steps = ev.run.table["loss_raw"], ev.replay.steps
        grads = [s["grad_norm"] for s in steps]
        text = (
            f"your loop, {len(loss)} steps ({ev.epochs} epochs of {ev.n_batches} batches): loss "
            f"{_fmt(loss[0])} -> {_fmt(loss[-1])}; seen by the replay: {len(steps)} optimizer steps, "
            f"grad_norm {_fmt(grads[0] if grads else None)} -> {_fmt(grads[-1] if grads else None)}, "
            f"lr {_fmt(ev.facts['lr_first'])} -> {_fmt(ev.facts['lr_last'])}"
        )
        self.record.set_row("baseline", text, steps=len(loss), loss=[loss[0], loss[-1]])
        return text

    def _step_raw_vs_reported(self) -> str:
        a, b = (logger_check(ev) for ev in self.evs)
        self.record.record_probe("raw_vs_reported", a)
        same = a.details["agree"] == b.details["agree"]
        text = a.verdict + ("" if same else f" (seed {self.seeds[1]}: {b.verdict})")
        self.record.rows["raw_vs_reported"]["text"] = text
        return text

    def _step_overfit(self) -> str:
        ev = self.evs[0]
        if not own_skips.affordable("the overfit-64 gate", OVERFIT_STEPS):
            self.record.set_row("overfit", "skipped to keep to the time budget", status="n/a")
            return self.record.rows["overfit"]["text"]
        torch.manual_seed(ev.seed)
        model = proto.make_model(self.setup, ev.seed)
        proto.make_optimizer(self.setup, model)  # it may change the model, as the loop sees it
        result = overfit_probe(
            model,
            proto.take(ev.batches, 64),
            forward=lambda m, b: m,
            loss_fn=lambda m, b: self.setup.loss_fn(m, b),
            steps=OVERFIT_STEPS,
            make_optimizer=lambda ps: torch.optim.Adam(ps, lr=OVERFIT_LR),
            stop_when_reached=True,
        )
        self.record.record_probe("overfit", result)
        self._overfit_reached = result.details["reached"]
        return result.verdict + " (a pass does not clear the data: see the label-shuffle control)"

    def _step_label_shuffle(self) -> str:
        self.finding = decide(self.evs)
        if self.finding.system == "NONE" and not getattr(self, "_overfit_reached", True):
            self.finding = self._failed_gate()
        sig = self.evs[0].results.get("signal")
        if self.finding.system == "NONE":
            explain_stall(self.record, self.evs[0].batches, sig)
        explain_model_stall(self.record, self.finding)
        if sig is None:
            text = f"not run: the evidence was decided before it ({self.finding.system})"
            self.record.set_row("label_shuffle", text, status="n/a")
            return text
        words = {
            "signal": "the labels carry signal",
            "none": "no signal: real and shuffled train alike",
            "unclear": "unclear",
            "unread": "not run: your loss reads no labels",
        }[sig["verdict"]]
        text = f"{words}; {describe_signal(sig)}"
        self.record.set_row(
            "label_shuffle",
            text,
            verdict=sig["verdict"],
            gaps=sig.get("gaps"),
            spread=sig.get("spread"),
        )
        return text

    def _failed_gate(self):
        """The loop looks healthy but the overfit gate failed. Targets that are partly random
        (a language model's next token) stall it honestly, so only a measured loss floor on
        both seeds changes the finding."""
        from ..step4_h1.floor import STEPS, loss_floor

        if not own_skips.affordable(
            "the loss-floor check behind the failed overfit gate", 2 * STEPS
        ):
            return self.finding
        found = [loss_floor(self.setup, ev.seed, ev.batches) for ev in self.evs]
        return found[0] if all(f is not None for f in found) else self.finding

    def _step_suggest(self) -> str:
        rec, (s0, s1), f = self.record, self.seeds, self.finding or decide(self.evs)
        self.finding = f
        rec.finding_key = f.key
        rec.notes.extend(n for n in f.notes if n not in rec.notes)
        own_skips.note(rec)
        if f.system == "UNKNOWN":
            rec.set_row("conviction", f"UNKNOWN: {f.mechanism}", status=UNKNOWN, by="diagnose")
            rec.notes.append(f"no conviction: {f.mechanism}")
            return rec.rows["conviction"]["text"]
        rec.convict(f.system, f.mechanism, by="diagnose", seeds=[s0, s1])
        if f.system == "NONE":
            rec.not_needed("intervention", "n/a: no defect to intervene on")
            rec.not_needed("confirmation", f"n/a: seed {s1} shows the same healthy evidence")
            return rec.rows["conviction"]["text"]
        self._plan = first_plan(f, self.evs)
        if self._plan is None:
            self._plan = plan(f, self.evs) if f.arm else None
            self._plan = self._plan + (f.variable,) if self._plan else own_plan(f, self.evs)
        prescribe_rows(rec, f, self.evs, self._plan)
        return rec.rows["conviction"]["text"]

    def _step_intervention(self) -> str:
        forecast, run, (name, before, after) = self._plan
        self.record.plan_intervention({name: before}, {name: after}, forecast)  # sealed first
        self.record.record_intervention_run(run(self.seeds[0]))
        return self.record.rows["intervention"]["text"]

    def _step_confirmation(self) -> str:
        self.record.record_confirmation(self._plan[1](self.seeds[1]))
        return self.record.rows["confirmation"]["text"]


def diagnose_setup(setup, seeds=(0, 1)) -> TriageRecord:
    """Triage a learner's own setup (five methods, see `labkit.diagnosis.own.step1_capture.setup`) on two seeds.

    Returns a filled `TriageRecord`; its conviction is a suggestion for a human to check.
    """
    own_skips.start()
    with margins.recording() as log:
        record = SetupExplorer(setup, seeds=seeds).run_all()
    record.margins = log
    return record
