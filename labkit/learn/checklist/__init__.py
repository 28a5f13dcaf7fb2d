"""The LLM training checklist, executable: each item checked with code on a real batch.

    >>> from labkit.learn import checklist
    >>> print(checklist.audit())                      # labkit's tiny LM, its first batch
    >>> checklist.audit(bug="padding_in_loss").failed  # ['padding_excluded']
    >>> checklist.audit(model=gpt2, batch=batch)       # any model taking input_ids/labels

From the shell: ``labkit checklist [--task lm] [--bug NAME] [--seed N]`` prints one line per
item and exits 1 if any item fails. An item prints N/A when it cannot be judged: the
information it needs was not given, or an item it builds on did not pass (a prompt mask
cannot be read off labels that are not aligned with the inputs).

The packet's items on generation (prompt, stop tokens, maximum length) and on perplexity
aggregation need an evaluation harness labkit does not have, so they are not here. The
checklist of a distributed (DDP) run, checked on every rank's batch, is `checklist.ranks`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...core.data import BOS, EOS, PAD, SEP
from . import items
from .items import Subject

# key, what the item asks, the function that checks it, the item it builds on
ITEMS = (
    ("shift_once", "inputs and targets are shifted exactly once", items.shift_once, None),
    ("causal_mask", "future tokens are blocked by the causal mask", items.causal_mask, None),
    ("padding_excluded", "padding is excluded from the loss", items.padding_excluded, None),
    (
        "supervised_tokens",
        "every batch has at least one supervised target",
        items.supervised_tokens,
        None,
    ),
    (
        "prompt_intent",
        "prompt tokens are in or out of the loss on purpose",
        items.prompt_intent,
        "shift_once",
    ),
    (
        "token_normalised",
        "the loss is normalised by the valid-token count",
        items.token_normalised,
        "supervised_tokens",
    ),
    (
        "eos_boundary",
        "EOS is a target, so the model learns where an answer ends",
        items.eos_boundary,
        "shift_once",
    ),
    ("packing", "packed examples cannot attend across their boundaries", items.packing, None),
    (
        "same_template",
        "train and val use the same tokenizer and template",
        items.same_template,
        None,
    ),
    ("context_window", "validation uses the intended context window", items.context_window, None),
    ("split_by_group", "no example is split across train and val", items.split_by_group, None),
)
STATUSES = ("PASS", "FAIL", "N/A")


@dataclass
class Result:
    key: str
    title: str
    status: str  # PASS | FAIL | N/A
    evidence: str

    def line(self) -> str:
        return f"{self.status:<4}  {self.key:<17} {self.title}: {self.evidence}"


@dataclass
class Checklist:
    subject: str
    results: list[Result]

    @property
    def failed(self) -> list[str]:
        return [r.key for r in self.results if r.status == "FAIL"]

    @property
    def passed(self) -> bool:
        return not self.failed

    def status(self) -> dict[str, str]:
        return {r.key: r.status for r in self.results}

    def __str__(self) -> str:
        counts = {s: sum(r.status == s for r in self.results) for s in STATUSES}
        tally = ", ".join(f"{n} {s}" for s, n in counts.items())
        return "\n".join(
            [f"checklist: {self.subject}"]
            + [r.line() for r in self.results]
            + [f"{len(self.results)} items: {tally}"]
        )

    __repr__ = __str__


def _labkit_subject(bug, seed: int) -> tuple[Subject, str]:
    from ...bugs.inject import Trainer

    trainer = Trainer(bug=bug, task="lm", seed=seed) if bug else Trainer(task="lm", seed=seed)
    data = trainer.ctx.data
    clean = lambda b: {k: v for k, v in b.items() if k != "batch_id"}  # noqa: E731
    epoch = [clean(trainer.batch(s)) for s in range(trainer.ctx.steps_per_epoch)]
    size = trainer.config.batch_size
    subject = Subject(
        trainer.ctx.model,
        epoch[0],
        val={k: v[:size] for k, v in data.val.items()},
        train_split=data.train,
        val_split=data.val,
        batches=epoch,
        response_only=trainer.config.response_only,
        specials={"pad": PAD, "bos": BOS, "sep": SEP, "eos": EOS},
        max_len=trainer.ctx.model.max_len,
    )
    return (
        subject,
        f"labkit TinyCausalLM at init, bug={bug}, seed {seed}, first batch of {size} rows",
    )


def _window(model) -> int | None:
    config = getattr(model, "config", None)
    return (
        getattr(model, "max_len", None)
        or getattr(config, "n_positions", None)
        or getattr(config, "max_position_embeddings", None)
    )


def audit(
    model=None,
    batch=None,
    *,
    val_batch=None,
    task: str = "lm",
    bug: str | None = None,
    seed: int = 0,
    response_only: bool | None = None,
    specials: dict | None = None,
    train_split=None,
    val_split=None,
) -> Checklist:
    """Check every item on `model` and `batch`, or on labkit's own tiny LM when both are None.

    `batch` holds input_ids, attention_mask and labels in the Hugging Face convention (the
    model shifts), optionally response_mask. Give what else you know (a validation batch,
    the intent, the special-token ids, both splits); items that need more say N/A."""
    if task != "lm":
        raise ValueError(
            f"task={task!r} is not allowed; the checklist checks causal-LM "
            "batches, so task must be 'lm'."
        )
    if (model is None) != (batch is None):
        raise ValueError("Give both model and batch, or neither (to audit labkit's own tiny LM).")
    if model is None:
        subject, name = _labkit_subject(bug, seed)
    else:
        if bug is not None:
            raise ValueError(
                f"bug={bug!r} applies to labkit's own setup only; with your own model "
                "and batch, plant the mistake in the batch itself."
            )
        missing = [k for k in ("input_ids", "attention_mask", "labels") if k not in batch]
        if not isinstance(batch, dict) or missing:
            raise ValueError(
                f"batch must be a dict with input_ids, attention_mask and labels; "
                f"missing {missing}."
            )
        subject = Subject(
            model,
            batch,
            val=val_batch,
            train_split=train_split,
            val_split=val_split,
            response_only=response_only,
            specials=dict(specials or {}),
            max_len=_window(model),
        )
        name = f"{type(model).__name__}, a batch of {len(batch['input_ids'])} rows"
    was = subject.model.training
    subject.model.eval()  # dropout would blur the comparisons
    results: dict[str, Result] = {}
    try:
        _run(subject, results)
    finally:
        subject.model.train(was)
    return Checklist(name, list(results.values()))


@torch.no_grad()
def _run(subject: Subject, results: dict) -> None:
    """Check the items in order; one whose prerequisite did not pass is N/A, not guessed."""
    for key, title, check, needs in ITEMS:
        if needs and results[needs].status != "PASS":
            status, evidence = (
                "N/A",
                (
                    f"not judged: it reads the labels that {needs} checks, "
                    "and that item did not pass"
                ),
            )
        else:
            status, evidence = check(subject)
        results[key] = Result(key, title, status, evidence)


__all__ = ["Checklist", "ITEMS", "Result", "Subject", "audit"]
