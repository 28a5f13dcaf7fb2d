"""Lab 15's three mystery setups: one instrumentation, one data, one optimizer defect.

The chapter suggests exactly these injections: the logged loss computed wrongly (H3),
100% of labels shuffled (H2), and the LR driven to 0 by a scheduler stepped too
often (H1). Each mystery hides which one it is; `fix=` is the single variable a
learner may change in an intervention: put the logger, the data or the scheduler
step back to the reference implementation.
"""

from __future__ import annotations

import torch

from ..bugs import get_bug
from ..errors import check_choice
from ..core.seams import Seams, make_batch
from ..core.train import Trainer

_MYSTERIES = {"A": "wrong_logging_divisor", "B": "shuffled_labels", "C": "zero_lr:per_batch_scheduler"}
FIXES = {"logger": "log", "data": "data", "scheduler": "step"}
LETTERS = tuple(_MYSTERIES)


def _trainer(mystery: str, seed: int, steps: int, fix: str | None) -> Trainer:
    check_choice("mystery", mystery, LETTERS)
    if fix is not None:
        check_choice("fix", fix, FIXES)
    seams = get_bug(_MYSTERIES[mystery]).patch(Seams())
    if fix is not None:
        seam = FIXES[fix]
        seams = seams.replace(**{seam: getattr(Seams(), seam)})
    return Trainer(seams=seams, seed=seed, steps=steps)


def run_mystery(mystery: str, *, seed: int = 0, steps: int = 50, fix: str | None = None):
    """Train mystery `mystery` ("A", "B" or "C"); `fix` puts one part back to the reference."""
    return _trainer(mystery, seed, steps, fix).run()


def pipeline(mystery: str, *, seed: int = 0):
    """(model at init, a fixed 64-sample batch, forward, loss_fn) of the mystery's own code,
    ready for `labkit.probes.overfit_probe` and `label_shuffle_control`."""
    t = _trainer(mystery, seed, 1, None)
    forward, loss_fn = t.pipeline()
    return t.ctx.model, make_batch(t.ctx.data.train, torch.arange(64), t.config, 0), forward, loss_fn


def truth(mystery: str) -> str:
    """The triage system of a mystery (for `labkit.check`; no peeking while you triage)."""
    check_choice("mystery", mystery, LETTERS)
    return get_bug(_MYSTERIES[mystery]).system
