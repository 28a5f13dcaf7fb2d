"""The causal-LM objective on labkit's token data (notebook `12_causal_lm_objective`).

* `decode` / `show_example`: one example as text, ids, labels, shifted pairs and masks;
* `token_losses`: per-target losses of a model on a split, with the mask that selects them;
* `mean_of_batch_means`: the two ways to average a variable-length corpus, side by side;
* `exact_match`: token accuracy next to whole-response exact match.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...core.data import IGNORE, N_SPECIAL

SPECIAL = ["<pad>", "<bos>", "<sep>", "<eos>"]
# Stand-in words for the 46 content ids of the default vocabulary (4..49): the data are
# random tokens, so "text" here is only a readable name for each id.
WORDS = (
    "ant bay cat dog elm fig gum hat ink jam kit log map net oak pen quay rat sun tea "
    "urn van wax yak zip arc bud cod dew eel fox gem hen ivy jar keg lid mud nut owl "
    "pod rug sap tub vat web"
).split()


def word(token_id: int) -> str:
    if token_id < N_SPECIAL:
        return SPECIAL[token_id]
    i = token_id - N_SPECIAL
    return WORDS[i] if i < len(WORDS) else f"t{token_id}"


def decode(ids, skip_padding: bool = True) -> str:
    return " ".join(word(int(t)) for t in ids if not (skip_padding and int(t) == 0))


def show_example(split: dict, row: int = 0) -> str:
    """One example end to end: the packet's step-2 view, as fixed-width text.

    Columns per position t: the token, its id, attention mask, label (-100 = ignored), and
    the pair the loss actually scores once the model shifts: logits at t against label t+1."""
    ids, att, labels = split["input_ids"][row], split["attention_mask"][row], split["labels"][row]
    n = int(att.sum())
    lines = [
        f"text:   {decode(ids)}",
        f"tokens: {ids[:n].tolist()} + {len(ids) - n} x <pad>",
        (
            f"{'t':>3} {'token':>6} {'id':>4} {'attn':>5} {'label':>6} {'loss':>5}  "
            "scored pair (input t -> target t+1)"
        ),
    ]
    for t in range(len(ids)):
        nxt = int(labels[t + 1]) if t + 1 < len(ids) else IGNORE
        pair = f"{word(int(ids[t]))} -> {word(nxt)}" if nxt != IGNORE else "-"
        lines.append(
            f"{t:>3} {word(int(ids[t])):>6} {int(ids[t]):>4} {int(att[t]):>5} "
            f"{int(labels[t]):>6} {int(labels[t] != IGNORE):>5}  {pair}"
        )
    valid = int((labels[1:] != IGNORE).sum())
    lines.append(f"real tokens (attention mask): {n}; loss mask keeps {valid} targets")
    return "\n".join(lines)


def causal_view(split: dict, row: int = 0, width: int = 6) -> str:
    """Which keys each of the last `width` positions may attend to: causal AND not padding,
    the same rule `TinyCausalLM` builds (``tril(ones(T, T)) & attention_mask``)."""
    att = split["attention_mask"][row].bool()
    allowed = torch.ones(len(att), len(att), dtype=torch.bool).tril() & att[None, :]  # (T, T)
    ids, keep = split["input_ids"][row], range(len(att) - width, len(att))
    lines = ["query \\ key " + " ".join(f"{word(int(ids[j])):>5}" for j in keep)]
    for i in keep:
        marks = " ".join(f"{'x' if allowed[i, j] else '.':>5}" for j in keep)
        lines.append(f"{word(int(ids[i])):>11} {marks}")
    return "\n".join(lines)


@torch.no_grad()
def token_losses(model, split: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, correct, mask), each (N, T-1): the loss and argmax hit of every shifted target,
    and which targets the loss mask keeps. The model runs in eval() mode."""
    was = model.training
    model.eval()
    try:
        logits = model(split["input_ids"], attention_mask=split["attention_mask"]).logits
    finally:
        model.train(was)
    logits, target = logits[:, :-1].float(), split["labels"][:, 1:]  # (N, T-1, V), (N, T-1)
    mask = target != IGNORE
    loss = F.cross_entropy(logits.transpose(1, 2), target.clamp(min=0), reduction="none")
    return loss * mask, (logits.argmax(-1) == target) & mask, mask


def mean_of_batch_means(model, split: dict, batch_size: int = 16, by_length: bool = True) -> dict:
    """Average the loss two ways over the same rows.

    `by_length` groups rows of similar length into a batch, as length-bucketed loaders do,
    so batches differ in how many targets they hold. The valid-token-weighted mean counts
    each target once; the mean of batch means lets a short batch's targets weigh more."""
    loss, _, mask = token_losses(model, split)
    counts = mask.sum(1)  # (N,) targets per row
    order = torch.argsort(counts, stable=True) if by_length else torch.arange(len(counts))
    means, sizes = [], []
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        means.append(float(loss[rows].sum() / mask[rows].sum()))
        sizes.append(int(mask[rows].sum()))
    return {
        "mean_of_batch_means": sum(means) / len(means),
        "token_weighted": float(loss.sum() / mask.sum()),
        "batch_means": means,
        "batch_tokens": sizes,
    }


def exact_match(model, split: dict) -> dict:
    """Token accuracy over all kept targets, and the share of rows whose every kept target is
    right (teacher-forced), next to what independent tokens would give: mean of acc ** n."""
    _, correct, mask = token_losses(model, split)
    n = mask.sum(1)  # (N,)
    acc = float(correct.sum() / mask.sum())
    exact = float(((correct.sum(1) == n) & (n > 0)).float().mean())
    independent = float((acc ** n.double()).mean())
    return {
        "token_accuracy": acc,
        "exact_match": exact,
        "independent_guess": independent,
        "mean_targets": float(n.float().mean()),
    }
