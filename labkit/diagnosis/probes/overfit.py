"""The overfit probe and the label-shuffle control: the chapter's structural gate (H2 vs H1).

A healthy pipeline memorises a fixed 64-sample batch: plain SGD, no scheduler, no
augmentation, no weight decay, 200 steps. If it cannot, no learning-rate schedule
is to blame. Shuffling the labels of the same batch tells "the model never reads
the labels" (H2, both runs alike) from "the loss cannot descend" (H1).
"""

from __future__ import annotations

import copy
import math

import torch
import torch.nn as nn

from ...core.data import IGNORE
from ...errors import check_number
from ._common import ProbeResult, default_forward, default_loss, fit

REACHED = 0.1  # "about 0": final loss below this fraction of the first loss
DEAD_NORM = 1e-6  # a gradient norm this small counts as no flow
FELL = 1e-2  # a norm below 1% of its own start (two orders of magnitude) has vanished


def _sgd(lr):
    return lambda params: torch.optim.SGD(params, lr=lr)


def overfit_probe(
    model: nn.Module,
    batch,
    *,
    forward=default_forward,
    loss_fn=default_loss,
    steps: int = 200,
    lr: float = 0.5,
    make_optimizer=None,
    stop_when_reached: bool = False,
) -> ProbeResult:
    """Train a copy of `model` on one fixed batch; verdict: reaches ~0, stalls with ~0 norms,
    stalls as its norm vanishes (below DEAD_NORM, or below FELL times its own start), or
    stalls with healthy norms. The learner's model is not modified. `stop_when_reached`:
    end at the first step whose loss is ~0 (the answer is known; the rest would be spent)."""
    check_number("steps", steps, minimum=1, integer=True)
    check_number("lr", lr, minimum=0.0)
    model = copy.deepcopy(model)
    batches = (
        _until_reached(batch, steps, loss_fn) if stop_when_reached else ([batch] * steps, loss_fn)
    )
    losses, norms = fit(model, batches[0], forward, batches[1], make_optimizer or _sgd(lr))
    steps = len(losses)
    first, last = losses[0], losses[-1]
    tail = [n for n in norms[steps // 2 :] if n is not None]
    head = [n for n in norms[:10] if n is not None]
    median_norm = sorted(tail)[len(tail) // 2] if tail else None
    start_norm = sorted(head)[len(head) // 2] if head else None
    if not math.isfinite(last):
        verdict = "diverged to NaN/inf on one batch: locate the first non-finite value"
    elif last < REACHED * first:
        verdict = f"reaches ~0: {first:.3f} -> {last:.3f}; the pipeline can learn"
    elif start_norm is None or start_norm < DEAD_NORM:
        verdict = (
            f"stalls with gradient norm ~0 from the start ({first:.3f} -> {last:.3f}): "
            "gradient flow is blocked -- not an LR problem"
        )
    elif median_norm < DEAD_NORM or median_norm < FELL * start_norm:
        verdict = (
            f"stalls on a plateau ({first:.3f} -> {last:.3f}): the gradient norm vanished, "
            f"from {start_norm:.3g} over the first 10 steps to a median {median_norm:.3g} "
            f"over the second half ({_fold(start_norm, median_norm)}) -- no signal beyond "
            "what the model learned first"
        )
    else:
        verdict = (
            f"stalls with healthy gradient norms ({first:.3f} -> {last:.3f}; median norm "
            f"{start_norm:.3g} over the first 10 steps, {median_norm:.3g} over the second "
            "half): the data or the loss carries no usable signal"
        )
    return ProbeResult(
        "overfit probe",
        verdict,
        {
            "loss_first": first,
            "loss_last": last,
            "start_grad_norm": start_norm,
            "median_grad_norm": median_norm,
            "reached": last < REACHED * first,
            "losses": losses,
            "grad_norms": norms,
            "steps": steps,
        },
    )


def _fold(start: float, now: float) -> str:
    """How many times smaller `now` is than `start`, in words that fit any ratio."""
    return f"{start / now:,.0f} times smaller" if now > 0 else "down to exactly 0"


def _until_reached(batch, steps: int, loss_fn):
    """(batches, loss_fn) for `fit`: the batch `steps` times, ending once a loss is ~0."""
    seen = []

    def watched(out, b):
        loss = loss_fn(out, b)
        seen.append(float(loss.detach()))
        return loss

    def batches():
        for _ in range(steps):
            if len(seen) > 1 and seen[-1] < REACHED * seen[0]:
                return
            yield batch

    return batches(), watched


def shuffle_labels(batch, seed: int = 0):
    """The same batch with labels permuted across examples (for LMs: whole label rows)."""
    gen = torch.Generator().manual_seed(seed)
    out = dict(batch) if isinstance(batch, dict) else list(batch)
    key = ("labels" if "labels" in out else "y") if isinstance(out, dict) else 1
    labels = out[key]
    perm = torch.randperm(len(labels), generator=gen)
    if torch.equal(perm, torch.arange(len(labels))):
        perm = perm.roll(1)
    out[key] = labels[perm]
    return out if isinstance(batch, dict) else type(batch)(out)


def label_shuffle_control(
    model: nn.Module,
    batch,
    *,
    real: ProbeResult | None = None,
    forward=default_forward,
    loss_fn=default_loss,
    steps: int = 200,
    lr: float = 0.5,
    make_optimizer=None,
    tolerance: float = 0.1,
) -> ProbeResult:
    """Overfit the same batch with shuffled labels. "Same as real labels" means the model
    never used the labels: the data carries no signal (H2). Runs are compared by their mean
    loss over all steps, since a big enough model memorises even random labels in the end."""
    check_number("tolerance", tolerance, minimum=0.0)
    real = real or overfit_probe(
        model,
        batch,
        forward=forward,
        loss_fn=loss_fn,
        steps=steps,
        lr=lr,
        make_optimizer=make_optimizer,
    )
    shuffled = overfit_probe(
        model,
        shuffle_labels(batch),
        forward=forward,
        loss_fn=loss_fn,
        steps=steps,
        lr=lr,
        make_optimizer=make_optimizer,
    )
    a = sum(real.details["losses"]) / len(real.details["losses"])
    b = sum(shuffled.details["losses"]) / len(shuffled.details["losses"])
    scale = max(real.details["loss_first"], 1e-12)
    both_memorised = real.details["reached"] and shuffled.details["reached"]
    same = (
        math.isfinite(a)
        and math.isfinite(b)
        and abs(a - b) < tolerance * scale
        and not both_memorised
    )
    if both_memorised and abs(a - b) < tolerance * scale:
        verdict = (
            "inconclusive: the model memorised the batch with real and with shuffled "
            "labels alike; use the overfit result and the label audit instead"
        )
    elif same:
        verdict = "same as real labels: the model is not reading the labels (no signal, H2)"
    else:
        verdict = "differs from real labels: the labels carry signal the model uses"
    return ProbeResult(
        "label-shuffle control",
        verdict,
        {
            "real_mean": a,
            "shuffled_mean": b,
            "same": same,
            "inconclusive": both_memorised,
            "shuffled_losses": shuffled.details["losses"],
            "shuffled_grad_norms": shuffled.details["grad_norms"],
        },
    )


def label_alignment(batch) -> ProbeResult:
    """Causal-LM label audit: are labels the input ids themselves (the model shifts), with
    padding ignored and at least one supervised token?"""
    ids, labels = batch["input_ids"], batch["labels"]
    mask = batch.get("attention_mask", torch.ones_like(ids))
    kept = labels != IGNORE
    n = int(kept[:, 1:].sum())  # position 0 is never a target once the model shifts
    if n == 0:
        return ProbeResult(
            "label audit",
            "no supervised tokens: every label is -100",
            {"supervised": 0, "aligned": None, "pre_shifted": None, "pad_supervised": 0},
        )
    aligned = float((labels[kept] == ids[kept]).float().mean())
    ahead = labels[:, :-1] != IGNORE
    pre_shifted = float((labels[:, :-1][ahead] == ids[:, 1:][ahead]).float().mean())
    pad_supervised = int((kept & (mask == 0)).sum())
    if pad_supervised:
        verdict = f"{pad_supervised} padding positions carry labels: the loss averages over padding"
    elif aligned < 0.9 and pre_shifted > 0.9:
        verdict = (
            "labels are already shifted by one: a model that shifts internally will "
            "learn to predict two tokens ahead"
        )
    elif aligned < 0.9:
        verdict = f"labels match the inputs at only {aligned:.0%} of supervised positions"
    else:
        verdict = "ok: labels are the input ids, padding ignored"
    return ProbeResult(
        "label audit",
        verdict,
        {
            "supervised": n,
            "aligned": aligned,
            "pre_shifted": pre_shifted,
            "pad_supervised": pad_supervised,
        },
    )
