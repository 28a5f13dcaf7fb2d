"""The rules of automatic triage, H3 -> H2 -> H1, read off one seed's `Evidence`.

It looks only at evidence a learner could gather: the baseline's per-step table,
the probes run on the setup's own pipeline (its data, model, forward and loss),
and interventions that put one seam back to the reference implementation. It
never reads which bug was injected. Its conviction is a *suggestion*: the record
says so, and a human signs off.

Order of the rules, first match wins (each on two seeds, which must agree):
  H3  raw vs reported disagree                          -> the logger (log seam)
  --  a non-finite loss: locate the first non-finite value
      input NaN/inf -> H2 data; no supervised tokens -> H2 data;
      loss non-finite from finite outputs under fp16, finite in fp32 -> H1 fp16 overflow;
      gradient norm grew >100x before the NaN -> H1 divergence (LR)
  H1  per-layer norms of the baseline (read at the overfit gate, free to compute):
      null gradients, gradients without updates, updates all zero (LR 0 / no step),
      gradients that double on a second backward (no zero_grad), outputs that are
      already probabilities (softmax before cross_entropy)
  H2  LM label audit (pre-shifted labels -> H2; labels on padding -> H1 loss over padding);
      overfit 64 stalls and the label-shuffle control behaves the same -> H2
  H1  LR x10 / ÷10 from the step-50 state: the current LR diverges -> H1 LR too high
  NONE otherwise.
"""

from __future__ import annotations

import math

import torch

from ..finding import Finding
from ..probes import first_nonfinite, gradient_audit, grad_total, label_alignment, lr_sweep
from .evidence import BASELINE_STEPS, Evidence
from .setup import ZooSetup, descent_forecast


def _structure(setup: ZooSetup, seed: int, base) -> Finding | None:
    """H1 checks on the baseline's per-layer norms and one replayed step of the pipeline."""
    groups = base.groups
    null = [g for g in groups if all(v is None for v in base.table[f"grad_norm/{g}"])]
    t = setup.trainer(seed)
    ctx, seams = t.ctx, t.seams
    ctx.batch = t.batch(0)
    with torch.autocast("cpu", dtype=torch.float16) if t.config.precision == "fp16" else _null():
        ctx.output = seams.forward(ctx)
        ctx.loss = seams.loss(ctx)
    out = getattr(ctx.output, "logits", ctx.output)
    if null and len(null) == len(groups):
        if out.grad_fn is not None:
            return Finding(
                "H1",
                "loss_disconnected",
                "the loss is rebuilt outside the graph: the "
                "model's output has a graph but no parameter receives a gradient",
                "loss",
                descent_forecast(t.config.task),
            )
        return Finding(
            "H1",
            "forward_disconnected",
            "the forward pass runs without a graph: no parameter receives a gradient",
            "forward",
            descent_forecast(t.config.task),
        )
    if null:
        return Finding(
            "H1",
            "flow_blocked",
            f"gradient flow is blocked: {', '.join(null)} never "
            "get a gradient (None), the layers after them do (a detach in forward)",
            "forward",
            descent_forecast(t.config.task),
        )
    seams.backward(ctx)
    audit = gradient_audit(ctx.model, ctx.optimizer, ctx.loss)
    outside = [
        r["name"] for r in audit.details["rows"] if r["requires_grad"] and not r["in_optimizer"]
    ]
    if outside:
        owners = sorted({n.rsplit(".", 1)[0] for n in outside})
        verb = "is" if len(owners) == 1 else "are"
        return Finding(
            "H1",
            "not_in_optimizer",
            f"{', '.join(owners)} {verb} not in the optimizer: "
            "gradients arrive but the update is exactly 0",
            "optimizer",
            descent_forecast(t.config.task),
        )
    updates, lrs = base.table["update_norm"], base.table["lr"]
    grads = [g for g in base.table["grad_norm"] if g is not None]
    finite_loss = all(math.isfinite(v) for v in base.table["loss_raw"])
    flowing = finite_loss and grads and min(grads) > 0
    if flowing and lrs[0] > 0 and lrs[-1] < 1e-4 * lrs[0]:
        return Finding(
            "H1",
            "lr_collapsed",
            f"the LR schedule collapses from {lrs[0]:.3g} to "
            f"{lrs[-1]:.1e} within {len(lrs)} steps (a per-epoch scheduler stepped every "
            "batch), so the updates vanish",
            "step",
            descent_forecast(t.config.task),
        )
    if flowing and all(u == 0 for u in updates[5:]):
        if all(lr == 0 for lr in lrs):
            return Finding(
                "H1",
                "lr_zero",
                "the learning rate is 0: gradients flow, every update is exactly 0",
                "optimizer",
                descent_forecast(t.config.task),
            )
        return Finding(
            "H1",
            "no_step",
            f"optimizer.step() is never applied: gradients flow and "
            f"lr = {lrs[0]:.3g}, yet every update is exactly 0",
            "step",
            descent_forecast(t.config.task),
        )
    first = grad_total(ctx.model.parameters())
    with torch.autocast("cpu", dtype=torch.float16) if t.config.precision == "fp16" else _null():
        ctx.output = seams.forward(ctx)
        ctx.loss = seams.loss(ctx)
    seams.backward(ctx)
    second = grad_total(ctx.model.parameters())
    if first and second and abs(second / first - 2.0) < 0.05:
        return Finding(
            "H1",
            "grad_accumulates",
            "gradients accumulate across steps: a second "
            "backward on the same batch doubles .grad (zero_grad is missing)",
            "backward",
            descent_forecast(t.config.task),
        )
    if (
        t.config.task == "classify"
        and out.min() >= 0
        and out.max() <= 1
        and torch.allclose(out.float().sum(-1), torch.ones(len(out), device=out.device), atol=1e-3)
    ):
        return Finding(
            "H1",
            "double_softmax",
            "the model's outputs are already probabilities "
            "(rows in [0, 1] summing to 1) and cross_entropy applies log_softmax again",
            "forward",
            descent_forecast(t.config.task),
        )
    return None


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _nonfinite(setup: ZooSetup, seed: int, base, k: int) -> Finding:
    t = setup.trainer(seed)
    t.run(k)
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
    spot = where.details.get("where") or ""
    task = t.config.task
    if spot.startswith("input"):
        return Finding(
            "H2",
            "input_nonfinite",
            f"the data holds non-finite values ({spot}, "
            f"{where.details['note']}): they reach the loss at step {k}",
            "data",
            descent_forecast(task),
        )
    if spot == "labels":
        return Finding(
            "H2",
            "no_supervised_tokens",
            "every label in the batch is -100: no supervised tokens, so the mean loss is 0/0 = NaN",
            "data",
            descent_forecast(task),
        )
    grads = [g for g in base.table["grad_norm"][:k] if g is not None and math.isfinite(g)]
    if spot == "loss" and fp16:
        again = first_nonfinite(t.ctx.model, batch, forward=forward, loss_fn=loss_fn)
        if again.details.get("where") is None:
            return Finding(
                "H1",
                "fp16_overflow",
                f"fp16 overflow inside the loss at step {k}: the "
                "model output is finite and the same step in fp32 is finite",
                "loss",
                descent_forecast(task),
            )
    if len(grads) >= 2 and max(grads) > 100 * grads[0]:
        return Finding(
            "H1",
            "divergence",
            f"divergence: the gradient norm grew x{max(grads) / grads[0]:.0e} "
            f"before the first NaN at step {k}; the LR is too high",
            "optimizer",
            descent_forecast(task),
        )
    return Finding("H1", "nonfinite_other", f"{where.verdict} at step {k}", None, None)


def investigate(
    setup: ZooSetup, seed: int, evidence: Evidence | None = None
) -> tuple[Finding, Evidence]:
    """Gather what is missing of the evidence for one seed; return the first rule that fires."""
    ev = evidence or Evidence(setup, seed)
    return _decide(ev), ev


def _decide(ev: Evidence) -> Finding:
    setup, seed, task, t = ev.setup, ev.seed, ev.task, ev.trainer
    base, rv = ev.baseline(), ev.raw_vs_reported()
    overfit, shuffle = ev.overfit(), ev.label_shuffle()
    forward, loss_fn = ev.forward, ev.loss_fn
    if not rv.details["agree"]:
        mech = rv.details.get("mechanism")
        if mech == "divisor":
            return Finding(
                "H3",
                "divisor",
                f"the epoch loss sum is divided by "
                f"{rv.details['divisor']:.0f} instead of the number of batches seen",
                "log",
                "loss_reported > 0.1 by step 150",
            )
        target = "1.0" if task == "classify" else "1.5"
        what = (
            "the logger reports a stale value read once, not the current loss"
            if mech == "stale"
            else "the logged number is not the optimised loss"
        )
        return Finding("H3", mech or "other", what, "log", f"loss_reported < {target} by step 150")
    k = base.first_nonfinite_step()
    if k is not None:
        return _nonfinite(setup, seed, base, k)
    found = _structure(setup, seed, base)
    if found:
        return found
    _, subset = ev.subset()
    if task == "lm":
        audit = label_alignment(subset)
        ev.results["label_audit"] = audit
        if audit.details["pad_supervised"]:
            return Finding(
                "H1",
                "loss_over_padding",
                f"the loss is averaged over padding: "
                f"{audit.details['pad_supervised']} pad positions of 64 sequences "
                "carry labels instead of -100",
                "data",
                descent_forecast(task),
            )
        if audit.details["pre_shifted"] and audit.details["pre_shifted"] > 0.9:
            return Finding(
                "H2",
                "double_shift",
                "labels were shifted by hand and the model "
                "shifts them again: it is trained to predict two tokens ahead",
                "data",
                descent_forecast(task),
            )
    if not overfit.details["reached"] and shuffle.details["same"]:
        x = subset.get("x")
        if x is not None and float(x.std(0).max()) < 1e-6:
            return Finding(
                "H2",
                "constant_inputs",
                "every input row is identical (zero variance "
                "per feature): the inputs carry no information",
                "data",
                descent_forecast(task),
            )
        return Finding(
            "H2",
            "labels_decorrelated",
            "the labels are decorrelated from the inputs: "
            "overfitting real and shuffled labels looks the same",
            "data",
            descent_forecast(task),
        )
    batches = [t.batch(BASELINE_STEPS + i) for i in range(20)]
    cfg = t.config
    make = (
        (lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=cfg.momentum))
        if cfg.optimizer == "sgd"
        else (lambda ps, lr: torch.optim.Adam(ps, lr=lr))
    )
    sweep = lr_sweep(
        t.ctx.model,
        batches,
        lr=t.ctx.optimizer.param_groups[0]["lr"],
        make_optimizer=make,
        forward=forward,
        loss_fn=loss_fn,
    )
    ev.results["lr_sweep"] = sweep
    if sweep.details["arms"][1.0]["nonfinite"]:
        return Finding(
            "H1",
            "divergence",
            "the current LR diverges from the step-50 state while ÷10 descends",
            "optimizer",
            descent_forecast(task),
        )
    return Finding(
        "NONE",
        "healthy",
        "no defect found: the logger is honest, every layer gets "
        "gradients and updates, the 64-sample batch is memorised, and the current LR "
        "descends from the step-50 state",
    )
