"""`Case`: the mystery's real run and the real probes of labkit on it, each run at most once.

Every answer comes from training the mystery's own setup (its seams, its data) or from
a probe of `labkit.diagnosis.probes` on its own pipeline. The work is done on one
thread: the models are tiny, and one thread is faster than two fighting over a core.
"""

from __future__ import annotations

import contextlib
import math

import torch

from ...bugs.inject import Trainer
from ...diagnosis.probes import first_nonfinite, grad_total, gradient_audit, label_alignment
from ...diagnosis.zoo.evidence import BASELINE_STEPS, Evidence
from ...diagnosis.zoo.setup import ZooSetup
from .mystery import Mystery

SWEEP = (0.1, 10.0)  # the two single-variable arms beside the baseline (x1): LR /10 and x10


@contextlib.contextmanager
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Case:
    """The mystery's evidence, gathered lazily; `run(name)` gives a probe's raw facts."""

    def __init__(self, mystery: Mystery):
        self.mystery = mystery
        self.config = mystery.config
        self.setup = ZooSetup.of(mystery.bug, self.config)
        self._cache: dict = {}
        with one_thread():
            self.evidence = Evidence(self.setup, mystery.run_seed)

    def _trainer(self, seed: int | None = None, **changes) -> Trainer:
        config = self.config.replace(
            seed=self.mystery.run_seed if seed is None else seed, **changes
        )
        return Trainer(config, bug=self.mystery.bug)

    def once(self, key: str, compute):
        if key not in self._cache:
            with one_thread():
                self._cache[key] = compute()
        return self._cache[key]

    # ---- what the symptom and the probes read ----------------------------------------
    def baseline(self):
        """The first 50 steps of the mystery run, exactly as the team logged them."""
        return self.once("baseline", self.evidence.baseline)

    def raw_vs_reported(self):
        return self.once("raw_vs_reported", self.evidence.raw_vs_reported)

    def overfit(self):
        return self.once("overfit", self.evidence.overfit)

    def label_shuffle(self):
        return self.once("label_shuffle", self.evidence.label_shuffle)

    def gradient_audit(self) -> dict:
        return self.once("gradient_audit", self._gradient_audit)

    def _gradient_audit(self) -> dict:
        """One step of the mystery's own forward, loss and backward at step 0, audited; then
        a second backward on the same batch, to see whether .grad is cleared between steps."""
        t = self._trainer()
        ctx, seams = t.ctx, t.seams
        ctx.batch = t.batch(0)
        with _amp(t):
            ctx.output = seams.forward(ctx)
            ctx.loss = seams.loss(ctx)
        seams.backward(ctx)
        audit = gradient_audit(ctx.model, ctx.optimizer, ctx.loss)
        first = grad_total(ctx.model.parameters())
        with _amp(t):
            ctx.output = seams.forward(ctx)
            ctx.loss = seams.loss(ctx)
        seams.backward(ctx)
        second = grad_total(ctx.model.parameters())
        ratio = second / first if first and second and math.isfinite(second / first) else None
        return {
            "audit": audit,
            "second_over_first": ratio,
            "grad_norm": self.baseline().table["grad_norm"],
        }

    def first_nonfinite(self) -> dict:
        return self.once("first_nonfinite", self._first_nonfinite)

    def _first_nonfinite(self) -> dict:
        base = self.baseline()
        k = base.first_nonfinite_step()
        if k is None:
            return {"step": None}
        t = self._trainer()
        t.run(k)  # the model as it was just before the first non-finite loss
        forward, loss_fn = t.pipeline()
        batch = t.batch(k)
        fp16 = t.config.precision == "fp16"
        where = first_nonfinite(
            t.ctx.model,
            batch,
            forward=forward,
            loss_fn=loss_fn,
            autocast_dtype=torch.float16 if fp16 else None,
        )
        fp32 = None
        if fp16 and where.details.get("where"):  # the same step without autocast
            again = first_nonfinite(t.ctx.model, batch, forward=forward, loss_fn=loss_fn)
            fp32 = again.details.get("where")
        norms = [g for g in base.table["grad_norm"][:k] if g is not None and math.isfinite(g)]
        return {
            "step": k,
            "where": where.details.get("where"),
            "stage": where.details.get("stage"),
            "note": where.details.get("note", ""),
            "fp16": fp16,
            "fp32_where": fp32,
            "grad_first": norms[0] if norms else None,
            "grad_max": max(norms, default=None),
        }

    def label_audit(self) -> dict:
        return self.once("label_audit", self._label_audit)

    def _label_audit(self) -> dict:
        fresh, subset = self.evidence.subset()
        if self.mystery.task == "lm":
            audit = label_alignment(subset)
            ids, labels = subset["input_ids"], subset["labels"]
            return {
                "task": "lm",
                "audit": audit,
                "ids": ids[0, :12].tolist(),
                "labels": labels[0, :12].tolist(),
                "mask": subset["attention_mask"][0, :12].tolist(),
            }
        x = fresh.ctx.data.train["x"]
        finite = torch.isfinite(x)
        bad_rows = sorted({int(r) for r in (~finite).nonzero()[:, 0]})[:5]
        clean = torch.where(finite, x, torch.zeros_like(x))
        forward, _ = fresh.pipeline()
        with torch.no_grad(), _amp(fresh):
            out = forward(fresh.ctx.model, subset).float()
        return {
            "task": "classify",
            "rows": len(x),
            "bad_rows": bad_rows,
            "nonfinite": int((~finite).sum()),
            "std": clean.std(0).tolist(),
            "min": clean.min(0).values.tolist(),
            "max": clean.max(0).values.tolist(),
            "labels": torch.bincount(
                fresh.ctx.data.train["y"], minlength=self.config.n_classes
            ).tolist(),
            "out_min": float(out.min()),
            "out_max": float(out.max()),
            "row_sums": float(out.sum(-1).mean()),
            "out_rows_are_probs": bool(
                out.min() >= 0
                and out.max() <= 1
                and torch.allclose(out.sum(-1), torch.ones(len(out)), atol=1e-3)
            ),
        }

    def lr_sweep(self) -> dict:
        return self.once("lr_sweep", self._lr_sweep)

    def _lr_sweep(self) -> dict:
        """The mystery's own loop from the same init, LR /10 and x10, 50 steps each."""
        arms = {1.0: self.baseline()}
        for factor in SWEEP:
            arms[factor] = self._trainer(lr=self.config.lr * factor).run(BASELINE_STEPS)
        return {"arms": {f: arms[f] for f in sorted(arms)}, "lr": self.config.lr}

    def second_seed(self):
        return self.once(
            "second_seed", lambda: self._trainer(seed=self.mystery.run_seed + 1).run(BASELINE_STEPS)
        )


def _amp(trainer):
    if trainer.config.precision == "fp16":
        return torch.autocast("cpu", dtype=torch.float16)
    return contextlib.nullcontext()
