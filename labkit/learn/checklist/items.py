"""The items of the LLM training checklist, each checked with code on a real batch and model.

Every item is a function of a `Subject` (the model, one training batch and what else is
known) returning (status, evidence): "PASS", "FAIL" or "N/A" and one sentence with the
numbers that decided it. `labkit.learn.checklist` runs them in order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ...core.data import IGNORE


@dataclass
class Subject:
    model: torch.nn.Module
    batch: dict  # input_ids, attention_mask, labels (Hugging Face convention), maybe response_mask
    val: dict | None = None  # a validation batch made by the val pipeline
    train_split: dict | None = None  # whole splits, for the split audit
    val_split: dict | None = None
    batches: list = field(default_factory=list)  # every training batch of an epoch, if known
    response_only: bool | None = None  # the intent: loss on responses only?
    specials: dict = field(default_factory=dict)  # {"bos", "sep", "eos", "pad"} ids, if known
    max_len: int | None = None  # the model's context window


def _out(model, ids, att, labels=None):
    return model(input_ids=ids, attention_mask=att, labels=labels)


def _targets(labels):  # (B, T-1): what each position t is scored against once the model shifts
    return labels[:, 1:]


def shift_once(s: Subject):
    ids, labels, att = s.batch["input_ids"], s.batch["labels"], s.batch["attention_mask"]
    kept = labels != IGNORE
    if not kept[:, 1:].any():
        return "N/A", "no supervised targets to compare (see supervised_tokens)"
    aligned = float((labels[kept] == ids[kept]).float().mean())
    ahead = labels[:, :-1] != IGNORE
    pre = float((labels[:, :-1][ahead] == ids[:, 1:][ahead]).float().mean()) if ahead.any() else 0.0
    out = _out(s.model, ids, att, labels)
    logits = out.logits.float()
    once = F.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, 1:], ignore_index=IGNORE)
    unshifted = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=IGNORE)
    model_loss = float(out.loss)
    if aligned < 0.9 and pre > 0.9:
        return "FAIL", (
            f"labels[t] equals input_ids[t+1] at {pre:.0%} of labelled positions: they "
            "were shifted by hand, and the model shifts again, so position t is "
            "trained on token t+2"
        )
    if math.isclose(model_loss, float(unshifted), rel_tol=1e-4) and not math.isclose(
        model_loss, float(once), rel_tol=1e-4
    ):
        return "FAIL", (
            f"the model's loss {model_loss:.4f} is logits[t] against labels[t] "
            f"({float(unshifted):.4f}): no shift at all, each position copies its input"
        )
    if aligned > 0.99 and math.isclose(model_loss, float(once), rel_tol=1e-4):
        return "PASS", (
            f"labels equal input_ids at {aligned:.0%} of {int(kept.sum())} labelled "
            f"positions, and the model's loss {model_loss:.4f} equals logits[:, :-1] "
            f"against labels[:, 1:] ({float(once):.4f}): one shift, inside the model"
        )
    return "FAIL", (
        f"labels match input_ids at only {aligned:.0%} of labelled positions; the "
        f"model's loss {model_loss:.4f}, shifted once by hand {float(once):.4f}"
    )


@torch.no_grad()
def causal_mask(s: Subject):
    ids, att = s.batch["input_ids"][:1], s.batch["attention_mask"][:1]
    n = int(att.sum())
    cut = n // 2
    before = _out(s.model, ids, att).logits[0].float()  # (T, V)
    changed = ids.clone()
    changed[0, cut:n] = (ids[0, cut:n] + 1) % before.shape[-1]  # other tokens from `cut` on
    after = _out(s.model, changed, att).logits[0].float()
    moved = float((before[:cut] - after[:cut]).abs().max())
    where = f"changing tokens {cut}..{n - 1} of row 0 moves the logits at positions 0..{cut - 1}"
    if moved > 1e-5:
        return "FAIL", f"{where} by up to {moved:.3g}: earlier positions can see the future"
    return "PASS", f"{where} by less than 1e-5: no position sees a later token"


def padding_excluded(s: Subject):
    pads = s.batch["attention_mask"] == 0
    labelled = int((pads & (s.batch["labels"] != IGNORE)).sum())
    text = f"{labelled} of {int(pads.sum())} padding positions carry a label"
    if labelled:
        return "FAIL", f"{text}: the loss is averaged over padding"
    return "PASS", f"{text} (all are -100)"


def supervised_tokens(s: Subject):
    batches = s.batches or [s.batch]
    counts = [int((_targets(b["labels"]) != IGNORE).sum()) for b in batches]
    if min(counts) == 0:
        empty = sum(c == 0 for c in counts)
        return "FAIL", (
            f"{empty} of {len(counts)} batches have no supervised target: the mean "
            "loss over such a batch is 0/0 = NaN"
        )
    if s.batches:
        return "PASS", (
            f"every one of the {len(counts)} batches of an epoch has supervised "
            f"targets (fewest: {min(counts)})"
        )
    return "PASS", f"the batch has {counts[0]} supervised targets (other batches were not given)"


def prompt_intent(s: Subject):
    if "response_mask" not in s.batch or s.response_only is None:
        return "N/A", "the batch has no response_mask, or the intent (response_only) is not given"
    resp, att = s.batch["response_mask"][:, 1:], s.batch["attention_mask"][:, 1:].bool()
    kept = _targets(s.batch["labels"]) != IGNORE
    prompt = att & ~resp  # prompt targets: real tokens outside the response
    in_loss, total = int((kept & prompt).sum()), int(prompt.sum())
    text = f"{in_loss} of {total} prompt targets carry loss, {int((kept & resp).sum())} response targets do"
    want = 0 if s.response_only else total
    intent = "response-only" if s.response_only else "prompt included"
    if in_loss != want:
        return "FAIL", f"{text}, but the intent is {intent}"
    return "PASS", f"{text}: {intent}, as intended"


def token_normalised(s: Subject):
    ids, att, labels = s.batch["input_ids"], s.batch["attention_mask"], s.batch["labels"]
    out = _out(s.model, ids, att, labels)
    logits, target = out.logits[:, :-1].float(), _targets(labels)
    per = F.cross_entropy(logits.transpose(1, 2), target, ignore_index=IGNORE, reduction="none")
    kept = target != IGNORE
    n = int(kept.sum())
    by_token = float(per.sum() / n)
    by_row = float(((per.sum(1) / kept.sum(1).clamp(min=1))[kept.any(1)]).mean())
    model_loss = float(out.loss)
    text = (
        f"the model's loss {model_loss:.4f}; summed target loss / {n} valid targets "
        f"{by_token:.4f}; mean of per-row means {by_row:.4f}"
    )
    if math.isclose(model_loss, by_token, rel_tol=1e-4):
        return "PASS", text + ": normalised by the valid-token count"
    return "FAIL", text + ": not normalised by the valid-token count"


def eos_boundary(s: Subject):
    eos = s.specials.get("eos")
    if eos is None:
        return "N/A", "the EOS id is not known"
    ids, labels = s.batch["input_ids"], s.batch["labels"]
    is_eos = ids == eos
    rows = int(is_eos.any(1).sum())
    taught = int((is_eos & (labels != IGNORE))[:, 1:].any(1).sum())
    text = f"{taught} of {rows} rows with an EOS have it as a supervised target"
    if taught < rows:
        return "FAIL", f"{text}: the model is not taught where an answer ends"
    return "PASS", f"{text}: the model is taught to stop"


@torch.no_grad()
def packing(s: Subject):
    eos = s.specials.get("eos")
    if eos is None:
        return "N/A", "the EOS id is not known, so documents cannot be told apart"
    ids, att = s.batch["input_ids"], s.batch["attention_mask"]
    per_row = (ids == eos).sum(1)
    after = torch.cumsum(ids == eos, 1) - (ids == eos).long()  # EOSes before each position
    trailing = int(((after > 0) & (att == 1)).sum())  # real tokens after a row's first EOS
    if int(per_row.max()) <= 1 and trailing == 0:
        return "PASS", "not packed: every row holds one example (at most one EOS, then padding)"
    row = int(torch.argmax((per_row > 1).long() + (trailing > 0)))
    first_end = int((ids[row] == eos).nonzero()[0])
    a = _out(s.model, ids[row : row + 1], att[row : row + 1]).logits[0, first_end + 1 :]
    changed = ids[row : row + 1].clone()
    changed[0, :first_end] = (changed[0, :first_end] + 1) % a.shape[
        -1
    ]  # a different first document
    b = _out(s.model, changed, att[row : row + 1]).logits[0, first_end + 1 :]
    moved = float((a.float() - b.float()).abs().max())
    if moved > 1e-5:
        return "FAIL", (
            f"row {row} is packed and changing its first document moves the next "
            f"document's logits by up to {moved:.3g}: attention crosses the boundary"
        )
    return "PASS", f"row {row} is packed, and its documents do not see each other"


def _shape(batch: dict, sp: dict) -> dict:
    ids, att = batch["input_ids"], batch["attention_mask"]
    n = att.sum(1)
    last = ids.gather(1, (n - 1).clamp(min=0)[:, None])[:, 0]
    right_padded = bool((att == (torch.arange(ids.shape[1]) < n[:, None]).long()).all())
    return {
        "bos first": float((ids[:, 0] == sp["bos"]).float().mean()),
        "one sep": float(((ids == sp["sep"]).sum(1) == 1).float().mean()),
        "eos last": float((last == sp["eos"]).float().mean()),
        "right-padded": float(right_padded),
    }


def same_template(s: Subject):
    if s.val is None or not {"bos", "sep", "eos"} <= set(s.specials):
        return "N/A", "needs a validation batch and the BOS, SEP and EOS ids"
    a, b = _shape(s.batch, s.specials), _shape(s.val, s.specials)
    top = max(int(s.batch["input_ids"].max()), int(s.val["input_ids"].max()))
    text = "; ".join(f"{k} {a[k]:.0%} / {b[k]:.0%}" for k in a) + f" (train / val); ids up to {top}"
    if any(abs(a[k] - b[k]) > 0.05 for k in a):
        return "FAIL", text + ": the two pipelines format rows differently"
    return "PASS", text + ": the same format"


def context_window(s: Subject):
    if s.val is None or s.max_len is None:
        return "N/A", "needs a validation batch and the model's context window"
    lengths = s.val["attention_mask"].sum(1)
    text = f"longest val row {int(lengths.max())} tokens, context window {s.max_len}"
    eos = s.specials.get("eos")
    if eos is not None:
        last = s.val["input_ids"].gather(1, (lengths - 1)[:, None])[:, 0]
        ended = float((last == eos).float().mean())
        text += f"; {ended:.0%} of val rows end with their EOS inside it"
        if ended < 1:
            return "FAIL", text + ": validation rows are cut off"
    if int(lengths.max()) > s.max_len:
        return "FAIL", text + ": validation rows are longer than the window"
    return "PASS", text


def split_by_group(s: Subject):
    if s.train_split is None or s.val_split is None or "sep" not in s.specials:
        return "N/A", "needs both whole splits and the SEP id to find each example's prompt"

    def prompts(split):
        out = set()
        for row in split["input_ids"].tolist():
            out.add(
                tuple(row[: row.index(s.specials["sep"])])
                if s.specials["sep"] in row
                else tuple(row)
            )
        return out

    train, val = prompts(s.train_split), prompts(s.val_split)
    shared = len(train & val)
    text = f"{shared} of {len(val)} val prompts also occur in training"
    return ("FAIL", text + ": the split leaks whole examples") if shared else ("PASS", text)
