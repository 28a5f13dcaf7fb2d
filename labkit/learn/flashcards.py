"""Flashcards for the packet's interview questions, drilled with Leitner boxes.

    >>> deck = Deck()                      # progress in the learner store, $LABKIT_HOME/labkit.sqlite3
    >>> card = deck.due()[0]; card.question
    >>> deck.answer(card.id, knew_it=True)  # moves the card up a box, saved at once
    >>> print(deck.listing())              # every card, its box and its answer, as text

Leitner boxes: every card starts in box 1. Knowing a card moves it up one box, missing it
sends it back to box 1, and a card in box b is due again after INTERVAL_DAYS[b] days.

Progress goes through a narrow interface, `load_progress` and `record_answer`, to the
learner store (records of kind "flashcard", one per card): each answer is one SQLite
transaction, so two notebooks answering at once never lose an answer, and `labkit export`
takes the progress along. A ``flashcards.json`` from an earlier labkit is imported once.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import suggest
from ..store.exchange import ON_OPEN, READERS, import_once

FORMAT = "labkit.flashcards/1"
BOXES = 5
INTERVAL_DAYS = {1: 0, 2: 1, 3: 3, 4: 7, 5: 14}  # box -> days until the card is due again


@dataclass(frozen=True)
class Card:
    id: str
    question: str
    answer: str


CARDS = (
    Card(
        "first-test",
        "A model does not learn at all. Which experiment comes first?",
        "Train on one small, clean batch until it is memorised. If even that fails, the loop "
        "itself (loss, gradients, optimizer) is broken; if it works, look at capacity, "
        "regularisation or the data at scale.",
    ),
    Card(
        "none-vs-zero",
        "What does a gradient of None tell you that a gradient of exactly zero does not?",
        "None: autograd never computed one, because the tensor is not on the path from the "
        "loss (detached, unused, or the loss has no graph). Zero: it is on the path, but this "
        "batch's derivative happens to be 0 (a dead ReLU, a masked input).",
    ),
    Card(
        "eval-vs-no-grad",
        "Why can model.eval() and torch.no_grad() not stand in for each other?",
        "eval() changes how layers behave (dropout off, batch norm on running statistics); "
        "no_grad() stops autograd from recording a graph. Evaluation usually wants both.",
    ),
    Card(
        "grads-but-no-change",
        "The gradients are non-zero, yet the weights do not change. Where do you look?",
        "Whether those parameters are in the optimizer at all, the learning rate (zero, or a "
        "schedule that collapsed), steps skipped by an AMP GradScaler, and whether you are "
        "inspecting the tensors this optimizer really holds.",
    ),
    Card(
        "same-step-spike",
        "The loss spikes at the same point of every epoch. What do you inspect?",
        "What arrives at that point: the batch or shard, the data order, and any scheduler "
        "event tied to that step.",
    ),
    Card(
        "late-spike",
        "The loss spikes only after many normal steps. What do you suspect?",
        "Instability that builds up: optimizer state (momentum, Adam's moments), weights that "
        "have grown large, a schedule that raised the learning rate, or numbers slowly going bad.",
    ),
    Card(
        "val-below-train",
        "Why can the validation loss sit below the training loss?",
        "Dropout or augmentation that only training uses, a regulariser added to the training "
        "loss, a training curve averaged over an epoch of older weights, or a validation set "
        "that really is easier.",
    ),
    Card(
        "loss-vs-accuracy",
        "Why can the loss improve while accuracy stays flat?",
        "The loss responds to every change in the probabilities; accuracy changes only when "
        "the top-ranked class changes.",
    ),
    Card(
        "lm-exact-match",
        "Why can a language model's loss fall while exact match stays flat?",
        "The token loss can improve on easy or prompt tokens while the answer tokens that "
        "matter, or free-running generation, stay wrong; exact match needs every token right.",
    ),
    Card(
        "nan-first",
        "What is the most useful first response to a NaN loss?",
        "Find the first value that is not finite (input, activation, loss, gradient or "
        "parameter) instead of staring at the NaN at the end.",
    ),
    # distributed training (notebook 18_distributed): the staple interview questions
    Card(
        "ddp-allreduce",
        "What does DistributedDataParallel all-reduce, and when?",
        "The gradients, nothing else: during backward, bucket by bucket as each bucket's "
        "gradients come ready (last layers first), overlapping the rest of backward; each is "
        "divided by the world size, so every rank ends with the mean. The loss is not "
        "all-reduced, and the parameters stay equal only because every rank takes the same "
        "step; rank 0's buffers are broadcast in forward.",
    ),
    Card(
        "loss-per-rank",
        "Why does my loss differ from rank to rank under DDP?",
        "Each rank computes the loss of its own shard of the batch, and DDP averages the "
        "gradients, not the loss: different per-rank losses are normal. To log the global "
        "loss, all-reduce it and divide by the world size. Differing weights are not normal: "
        "that is a skipped gradient sync.",
    ),
    Card(
        "no-sync-accumulation",
        "What does no_sync() do to gradient accumulation under DDP?",
        "It skips the gradient all-reduce, so gradients accumulate locally: use it for every "
        "micro-batch but the last, whose backward outside no_sync() averages the whole "
        "accumulated gradient once. Never leaving it turns DDP off: the ranks drift apart "
        "while each loss looks normal.",
    ),
    Card(
        "same-order-epochs",
        "Why does every epoch visit the data in the same order under DistributedSampler?",
        "DistributedSampler shuffles with the seed plus the epoch, and only knows the epoch if "
        "told: call sampler.set_epoch(epoch) at the start of every epoch, or every epoch "
        "replays epoch 0's order.",
    ),
    Card(
        "ranks-drift",
        "Every rank's loss curve looks normal. How do you tell whether the DDP ranks have "
        "drifted apart?",
        "Compare what the ranks hold, not what they log: every K steps, all-gather a small "
        "fingerprint of each layer's parameters (a sum and a sum of squares) and check they "
        "are identical. Under DDP they are equal bit for bit; a forward through ddp.module or "
        "no_sync() never left makes them differ.",
    ),
    Card(
        "effective-batch",
        "You move from 1 GPU to 8 at the same per-GPU batch. What happens to the effective "
        "batch and the learning rate?",
        "Each step now averages over 8 times as many examples (effective batch = per-GPU "
        "batch x world size) and an epoch has 8 times fewer steps; the usual answer is to "
        "scale the learning rate with the batch (linear rule, with warmup), on purpose. "
        "Summing gradients on top of DDP's average scales it by accident.",
    ),
)
BY_ID = {c.id: c for c in CARDS}


def next_box(box: int, knew_it: bool) -> int:
    """Leitner: up one box when known (at most BOXES), back to box 1 when missed."""
    return min(box + 1, BOXES) if knew_it else 1


def _store(path=None):
    """The learner store at `path` (default ``$LABKIT_HOME/labkit.sqlite3``)."""
    from ..store.learner import default_store

    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path; got {type(path).__name__}.")
    if path is not None and Path(path).suffix == ".json":
        raise ValueError(
            f"path={str(path)!r} names a JSON file, but flashcard progress is kept "
            "in the learner store; give a store file such as 'labkit.sqlite3' (or "
            "nothing, for $LABKIT_HOME/labkit.sqlite3)."
        )
    return default_store(path)


def _day(today) -> dt.date:
    if today is None:
        return dt.date.today()
    if isinstance(today, str):
        return dt.date.fromisoformat(today)
    if isinstance(today, dt.date):
        return today
    raise TypeError(f"today must be a date or 'YYYY-MM-DD'; got {type(today).__name__}.")


def load_progress(path=None) -> dict[str, dict]:
    """card id -> {"box", "due", "seen", "known"}; cards never answered are absent."""
    return {r["key"]: r["body"] for r in _store(path).records("flashcard")}


def record_answer(card_id: str, knew_it: bool, *, today=None, path=None) -> dict:
    """Move one card between boxes and save it, as one transaction."""
    if card_id not in BY_ID:
        raise ValueError(
            f"card_id={card_id!r} is not a card; cards are "
            f"{', '.join(BY_ID)}.{suggest(card_id, BY_ID)}"
        )
    if not isinstance(knew_it, bool):
        raise TypeError(f"knew_it must be True or False; got {knew_it!r}.")
    day = _day(today)

    def change(entry):
        entry = entry or {"box": 1, "seen": 0, "known": 0}
        box = next_box(entry["box"], knew_it)
        return {
            "box": box,
            "seen": entry["seen"] + 1,
            "known": entry["known"] + knew_it,
            "due": (day + dt.timedelta(days=INTERVAL_DAYS[box])).isoformat(),
        }

    return _store(path).update("flashcard", card_id, change)["body"]


def _import_old_progress(store) -> None:
    """Bring ``flashcards.json`` beside the store in, once; rename it ``.imported``."""
    import_once(store, "flashcards.json", _records, "old flashcard progress")


def _records(doc, source) -> list[dict]:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{source} is not labkit flashcard progress")
    return [{"kind": "flashcard", "key": k, "body": v} for k, v in doc.get("cards", {}).items()]


READERS[FORMAT] = _records
if _import_old_progress not in ON_OPEN:
    ON_OPEN.append(_import_old_progress)


class Deck:
    """The cards and the learner's progress: what is due, what to answer, what box is where."""

    def __init__(self, path=None):
        self.path = _store(path).path

    def progress(self) -> dict[str, dict]:
        return load_progress(self.path)

    def box(self, card_id: str) -> int:
        return self.progress().get(card_id, {}).get("box", 1)

    def due(self, today=None) -> list[Card]:
        """Cards due on `today`: lowest box first (the cards you know least), and within a box
        the least practised first, so a card just missed goes behind the ones not yet seen."""
        day, progress = _day(today).isoformat(), self.progress()
        due = [c for c in CARDS if progress.get(c.id, {}).get("due", day) <= day]
        return sorted(
            due,
            key=lambda c: (
                progress.get(c.id, {}).get("box", 1),
                progress.get(c.id, {}).get("seen", 0),
            ),
        )

    def answer(self, card_id: str, knew_it: bool, today=None) -> dict:
        return record_answer(card_id, knew_it, today=today, path=self.path)

    def boxes(self) -> dict[int, int]:
        """box -> how many cards sit in it."""
        progress = self.progress()
        counts = dict.fromkeys(range(1, BOXES + 1), 0)
        for card in CARDS:
            counts[progress.get(card.id, {}).get("box", 1)] += 1
        return counts

    def listing(self) -> str:
        """Every card as text, for a terminal or a notebook without widgets."""
        progress, lines = self.progress(), []
        for i, card in enumerate(CARDS, 1):
            entry = progress.get(card.id, {"box": 1, "seen": 0})
            lines += [
                f"{i:2d}. [box {entry['box']}, seen {entry['seen']}x] {card.question}",
                f"    {card.answer}",
            ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        boxes = " ".join(f"{b}:{n}" for b, n in self.boxes().items())
        return f"Deck({len(CARDS)} cards; boxes {boxes})"
