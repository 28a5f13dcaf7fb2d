"""The evidence the zoo's triage gathers for one seed of a `ZooSetup`.

`Evidence` runs each stage at most once and keeps its result (`OncePerSeed`): the
50-step baseline, raw vs reported, the overfit probe on 64 training rows and the
label-shuffle control. A rule of `zoo.rules` concludes a `Finding` from it.
"""

from __future__ import annotations

import torch

from ...core.seams import make_batch
from ..cache import OncePerSeed
from ..finding import Finding  # noqa: F401 (re-exported)
from ..probes import label_shuffle_control, overfit_probe, raw_vs_reported
from .setup import ZooSetup

BASELINE_STEPS = 50
CONFIRM_STEPS = 160  # the intervention runs far enough to judge "... by step 150"


def _probe_optimizer(task: str):
    """Plain SGD for the MLP (the chapter's probe); Adam for the transformer, which SGD
    cannot fit in 100 steps."""
    if task == "classify":
        return 200, lambda params: torch.optim.SGD(params, lr=0.5)
    return 100, lambda params: torch.optim.Adam(params, lr=1e-2)


class Evidence(OncePerSeed):
    """The evidence for one seed, gathered stage by stage (each stage at most once). Nothing
    runs, and no model is built, until a stage is asked for."""

    def __init__(self, setup: ZooSetup, seed: int):
        super().__init__(seed)
        self.setup = setup

    @property
    def trainer(self):
        """The run of the setup on this seed that the baseline trains."""
        return self.once("trainer", lambda: self.setup.trainer(self.seed))

    @property
    def task(self) -> str:
        return self.setup.config.task

    @property
    def forward(self):
        return self.once("pipeline", self.trainer.pipeline)[0]

    @property
    def loss_fn(self):
        return self.once("pipeline", self.trainer.pipeline)[1]

    def baseline(self):
        return self.once("base", lambda: self.trainer.run(BASELINE_STEPS))

    def raw_vs_reported(self):
        return self.once("raw_vs_reported", lambda: raw_vs_reported(self.baseline()))

    def subset(self):
        """(a fresh trainer at init, its first 64 training rows), built once per seed; the
        probes deep-copy the model, so every probe starts from the same init."""

        def make():
            fresh = self.setup.trainer(self.seed)
            return fresh, make_batch(fresh.ctx.data.train, torch.arange(64), fresh.config, 0)

        return self.once("subset", make)

    def overfit(self):
        def make():
            fresh, subset = self.subset()
            steps, make_opt = _probe_optimizer(self.task)
            return overfit_probe(
                fresh.ctx.model,
                subset,
                forward=self.forward,
                loss_fn=self.loss_fn,
                steps=steps,
                make_optimizer=make_opt,
            )

        return self.once("overfit", make)

    def label_shuffle(self):
        def make():
            fresh, subset = self.subset()
            steps, make_opt = _probe_optimizer(self.task)
            return label_shuffle_control(
                fresh.ctx.model,
                subset,
                real=self.overfit(),
                forward=self.forward,
                loss_fn=self.loss_fn,
                steps=steps,
                make_optimizer=make_opt,
            )

        return self.once("label_shuffle", make)
