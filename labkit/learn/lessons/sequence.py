"""The packet's six-step debugging sequence on one broken setup (notebook `14_debugging_sequence`).

Steps 2-5 use `labkit.probes` and `causal_lm.show_example` directly; this module holds
what steps 1 and 6 read off a run, and the batch the probes work on.
"""

from __future__ import annotations

from ...bugs.inject import Trainer
from ...core.data import IGNORE


def setup(bug: str | None = "padding_in_loss", seed: int = 0, steps: int = 100) -> Trainer:
    """The setup under study: the tiny causal LM, `steps` steps, evaluated every quarter."""
    settings = {"task": "lm", "seed": seed, "steps": steps, "eval_every": steps // 4}
    return Trainer(bug=bug, **settings) if bug else Trainer(**settings)


def first_batch(trainer: Trainer) -> dict:
    return {k: v for k, v in trainer.batch(0).items() if k != "batch_id"}


def comparable(run) -> list[dict]:
    """Step 1: at each evaluation, the losses a dashboard would put side by side.

    online      what the logger reported (the epoch's running mean of batch losses)
    train_eval  the training split in eval() mode, with the training labels
    val         the validation split, with its labels
    val_resp    the validation split scored on response tokens only, from the response
                mask and not from the labels, so it cannot share a labels bug"""
    ev = run.evals
    return [
        {
            "step": s,
            "online": run.table["loss_reported"][s],
            "train_eval": te,
            "val": v,
            "val_resp": r,
        }
        for s, te, v, r in zip(
            ev["step"], ev["train_eval_loss"], ev["val_loss"], ev["val_response_loss"]
        )
    ]


def target_counts(batch: dict) -> dict:
    """Step 1 again, in counts: targets the labels keep, real tokens, response targets."""
    targets = batch["labels"][:, 1:] != IGNORE
    return {
        "labelled_targets": int(targets.sum()),
        "real_targets": int(batch["attention_mask"][:, 1:].sum()),
        "response_targets": int(batch["response_mask"][:, 1:].sum()),
    }
