"""The evidence automatic triage gathers for one seed, and the form of a finding.

`Evidence` runs each stage at most once and keeps its result: the 50-step baseline,
raw vs reported, the overfit probe on 64 training rows and the label-shuffle
control. `Finding` is what a rule of `labkit.diagnosis.rules` concludes from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..bugs import get_bug
from ..bugs.inject import Trainer
from ..core.config import Config
from ..core.seams import Seams, make_batch
from .probes import label_shuffle_control, overfit_probe, raw_vs_reported

BASELINE_STEPS = 50
CONFIRM_STEPS = 160  # the intervention runs far enough to judge "... by step 150"


@dataclass
class Finding:
    system: str  # "H1" | "H2" | "H3" | "NONE"
    key: str  # short id of the mechanism, compared across seeds
    mechanism: str  # the conviction's mechanism line
    seam: str | None = None  # the seam to put back to the reference in the intervention
    forecast: str | None = None  # the FORECAST for that intervention


def _setup(bug, config: Config) -> dict:
    return {**config.as_dict(), "bug": bug, "reference_seam": None}


def _trainer(setup: dict, seed: int, steps: int | None = None) -> Trainer:
    settings = {k: v for k, v in setup.items() if k not in ("bug", "reference_seam")}
    settings.update(seed=seed, **({"steps": steps} if steps else {}))
    seams = None
    if setup.get("reference_seam"):
        name = setup["reference_seam"]
        seams = get_bug(setup["bug"]).patch(Seams()).replace(**{name: getattr(Seams(), name)})
        return Trainer(Config(**settings), seams=seams)
    return Trainer(Config(**settings), bug=setup.get("bug"))


def _descent_forecast(task: str) -> str:
    return "loss < 1.0 by step 150" if task == "classify" else "loss < 1.5 by step 150"


def _probe_optimizer(task: str):
    """Plain SGD for the MLP (the chapter's probe); Adam for the transformer, which SGD
    cannot fit in 100 steps."""
    if task == "classify":
        return 200, lambda params: torch.optim.SGD(params, lr=0.5)
    return 100, lambda params: torch.optim.Adam(params, lr=1e-2)


class Evidence:
    """The evidence for one seed, gathered stage by stage (each stage at most once)."""

    def __init__(self, setup: dict, seed: int):
        self.setup, self.seed = setup, seed
        self.trainer = _trainer(setup, seed)
        self.task = self.trainer.config.task
        self.forward, self.loss_fn = self.trainer.pipeline()
        self.results: dict = {}

    def baseline(self):
        if "base" not in self.results:
            self.results["base"] = self.trainer.run(BASELINE_STEPS)
        return self.results["base"]

    def raw_vs_reported(self):
        if "raw_vs_reported" not in self.results:
            self.results["raw_vs_reported"] = raw_vs_reported(self.baseline())
        return self.results["raw_vs_reported"]

    def subset(self):
        """(a fresh trainer at init, its first 64 training rows), built once per seed; the
        probes deep-copy the model, so every probe starts from the same init."""
        if "subset" not in self.results:
            fresh = _trainer(self.setup, self.seed)
            self.results["subset"] = (fresh, make_batch(fresh.ctx.data.train, torch.arange(64),
                                                        fresh.config, 0))
        return self.results["subset"]

    def overfit(self):
        if "overfit" not in self.results:
            fresh, subset = self.subset()
            steps, make_opt = _probe_optimizer(self.task)
            self.results["overfit"] = overfit_probe(
                fresh.ctx.model, subset, forward=self.forward, loss_fn=self.loss_fn, steps=steps,
                make_optimizer=make_opt)
        return self.results["overfit"]

    def label_shuffle(self):
        if "label_shuffle" not in self.results:
            fresh, subset = self.subset()
            steps, make_opt = _probe_optimizer(self.task)
            self.results["label_shuffle"] = label_shuffle_control(
                fresh.ctx.model, subset, real=self.overfit(), forward=self.forward,
                loss_fn=self.loss_fn, steps=steps, make_optimizer=make_opt)
        return self.results["label_shuffle"]
