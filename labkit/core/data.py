"""Toy datasets made in memory from a seed: nothing is ever downloaded.

Three sets, each a `Dataset` with a train/val split and a content hash:

* `make_blobs`      separable 2-D clusters, C classes (C = 10 gives ln 10 = 2.303 at init)
* `make_imbalanced` an imbalanced binary set (about 94/6 at seed 0) where "always say majority"
  already scores about 94% accuracy
* `make_tokens`     prompt/response token sequences for a tiny causal LM, right-padded
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import torch

from .hashing import hash_tensors
from ..errors import check_number

IGNORE = -100  # label value that cross-entropy skips (PyTorch and Hugging Face convention)
PAD, BOS, SEP, EOS = 0, 1, 2, 3  # special token ids; content tokens start at 4
N_SPECIAL = 4


@dataclass
class Dataset:
    """Tensors for a train and a val split, keyed by field name (x, y or input_ids, ...)."""

    kind: str  # "classify" or "lm"
    train: dict[str, torch.Tensor]
    val: dict[str, torch.Tensor]
    n_classes: int  # classes, or vocabulary size for token data
    info: dict = field(default_factory=dict)

    @property
    def hash(self) -> str:
        named = {f"train.{k}": v for k, v in self.train.items()}
        named.update({f"val.{k}": v for k, v in self.val.items()})
        return hash_tensors(named)

    def __len__(self) -> int:
        return len(next(iter(self.train.values())))

    def __repr__(self) -> str:
        n_val = len(next(iter(self.val.values())))
        return (
            f"Dataset(kind={self.kind!r}, train={len(self)}, val={n_val}, "
            f"n_classes={self.n_classes}, hash={self.hash!r})"
        )


def _split(tensors: dict[str, torch.Tensor], n_val: int, gen: torch.Generator):
    n = len(next(iter(tensors.values())))
    order = torch.randperm(n, generator=gen)
    val_idx, train_idx = order[:n_val], order[n_val:]
    return (
        {k: v[train_idx] for k, v in tensors.items()},
        {k: v[val_idx] for k, v in tensors.items()},
    )


def make_blobs(
    n_classes: int = 10, n_train: int = 1024, n_val: int = 256, spread: float = 0.2, seed: int = 0
) -> Dataset:
    """C Gaussian clusters on a circle, standardised to unit scale; cleanly separable."""
    check_number("n_classes", n_classes, minimum=2, integer=True)
    check_number("n_train", n_train, minimum=1, integer=True)
    check_number("n_val", n_val, minimum=1, integer=True)
    gen = torch.Generator().manual_seed(seed)
    n = n_train + n_val
    y = torch.arange(n) % n_classes
    angle = 2 * math.pi * y.double() / n_classes
    centres = torch.stack([angle.cos(), angle.sin()], dim=1)  # (N, 2) on the unit circle
    x = centres * 2.0 + spread * torch.randn(n, 2, generator=gen, dtype=torch.float64)
    x = (x - x.mean(0)) / x.std(0)  # standardised inputs, as a careful pipeline would
    train, val = _split({"x": x.float(), "y": y}, n_val, gen)
    return Dataset("classify", train, val, n_classes, {"name": "blobs", "seed": seed})


def make_imbalanced(
    n_train: int = 1024, n_val: int = 512, minority: float = 0.05, seed: int = 0
) -> Dataset:
    """Binary set with a small, partly overlapping minority class (label 1)."""
    check_number("minority", minority, minimum=0.0, maximum=0.5, strict_min=True)
    gen = torch.Generator().manual_seed(seed)
    n = n_train + n_val
    y = (torch.rand(n, generator=gen) < minority).long()
    centre = torch.where(y[:, None] == 1, torch.tensor([1.2, 1.2]), torch.tensor([0.0, 0.0]))
    x = centre + torch.randn(n, 2, generator=gen)
    train, val = _split({"x": x, "y": y}, n_val, gen)
    return Dataset(
        "classify", train, val, 2, {"name": "imbalanced", "minority": minority, "seed": seed}
    )


def _successors(vocab_size: int, gen: torch.Generator) -> torch.Tensor:
    """Each content token gets two possible next tokens: a Markov chain with entropy ln 2."""
    n_content = vocab_size - N_SPECIAL
    return N_SPECIAL + torch.randint(0, n_content, (vocab_size, 2), generator=gen)


def make_tokens(
    vocab_size: int = 50,
    n_train: int = 1024,
    n_val: int = 128,
    prompt_len: tuple[int, int] = (3, 8),
    response_len: tuple[int, int] = (3, 8),
    response_only: bool = True,
    seed: int = 0,
) -> Dataset:
    """Prompt/response sequences: ``BOS prompt SEP response EOS PAD...``.

    Prompts are uniform random tokens (nothing to learn). Responses follow a
    fixed Markov chain whose every token has two equally likely successors, so
    a model that reads the previous token can reach ln 2 = 0.693 per response
    token, and one predicting two tokens ahead cannot do better than ln 4.

    Fields: input_ids, attention_mask (1 = real token), response_mask (True on
    response tokens and EOS) and labels (input_ids with IGNORE on padding and,
    when ``response_only``, on the prompt).
    """
    check_number("vocab_size", vocab_size, minimum=N_SPECIAL + 4, integer=True)
    gen = torch.Generator().manual_seed(seed)
    succ = _successors(vocab_size, gen)
    n = n_train + n_val
    max_len = 3 + prompt_len[1] + response_len[1]  # BOS + prompt + SEP + response + EOS
    input_ids = torch.full((n, max_len), PAD, dtype=torch.long)
    response_mask = torch.zeros((n, max_len), dtype=torch.bool)
    p_lens = torch.randint(prompt_len[0], prompt_len[1] + 1, (n,), generator=gen)
    r_lens = torch.randint(response_len[0], response_len[1] + 1, (n,), generator=gen)
    coins = torch.randint(0, 2, (n, response_len[1] + 1), generator=gen)
    prompts = torch.randint(N_SPECIAL, vocab_size, (n, prompt_len[1]), generator=gen)
    for i in range(n):
        p, r = int(p_lens[i]), int(r_lens[i])
        seq = [BOS, *prompts[i, :p].tolist(), SEP]
        tok = seq[-2]
        for j in range(r):
            tok = int(succ[tok, coins[i, j]])
            seq.append(tok)
        seq.append(EOS)
        input_ids[i, : len(seq)] = torch.tensor(seq)
        response_mask[i, p + 2 : len(seq)] = True
    attention_mask = (input_ids != PAD).long()
    keep = response_mask if response_only else attention_mask.bool()
    labels = input_ids.masked_fill(~keep, IGNORE)
    tensors = {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "response_mask": response_mask,
        "labels": labels,
    }
    train, val = _split(tensors, n_val, gen)
    return Dataset(
        "lm",
        train,
        val,
        vocab_size,
        {"name": "tokens", "response_only": response_only, "seed": seed, "max_len": max_len},
    )


DATASETS = {"blobs": make_blobs, "imbalanced": make_imbalanced, "tokens": make_tokens}


@functools.lru_cache(maxsize=32)
def _cached(name: str, frozen_kwargs: tuple) -> Dataset:
    return DATASETS[name](**dict(frozen_kwargs))


def load(name: str, **kwargs) -> Dataset:
    """`DATASETS[name](**kwargs)`, built once per process; each call gets its own copy."""
    ds = _cached(name, tuple(sorted(kwargs.items())))
    return Dataset(
        ds.kind,
        {k: v.clone() for k, v in ds.train.items()},
        {k: v.clone() for k, v in ds.val.items()},
        ds.n_classes,
        dict(ds.info),
    )
