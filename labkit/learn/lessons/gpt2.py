"""A Hugging Face GPT-2 on labkit's token data, built offline (notebook `17_llm_checklist`).

`transformers` is optional: `available()` says whether it is installed, and nothing here
imports it until `tiny_gpt2` is called, so ``import labkit`` stays cheap.
"""

from __future__ import annotations

import importlib.util

import torch

from ...core.data import BOS, EOS, IGNORE, PAD, SEP, load


def available() -> bool:
    return importlib.util.find_spec("transformers") is not None


def tiny_gpt2(seed: int = 0, vocab_size: int = 50, n_positions: int = 32):
    """GPT2LMHeadModel with 2 layers, 2 heads, width 32 and random weights: no download."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=32,
        vocab_size=vocab_size,
        n_positions=n_positions,
        bos_token_id=BOS,
        eos_token_id=EOS,
    )
    model = GPT2LMHeadModel(config)
    model.loss_type = "ForCausalLM"  # its class name names no loss; say which, quietly
    return model.eval()


def token_batches(seed: int = 0, size: int = 32) -> dict:
    """The audit's keyword arguments for labkit's token data: a train and a val batch, both
    splits, the intent (loss on responses only) and the special-token ids."""
    data = load("tokens", seed=seed)
    first = {k: v[:size] for k, v in data.train.items()}
    return {
        "batch": first,
        "val_batch": {k: v[:size] for k, v in data.val.items()},
        "train_split": data.train,
        "val_split": data.val,
        "response_only": True,
        "specials": {"pad": PAD, "bos": BOS, "sep": SEP, "eos": EOS},
    }


def shifted_by_hand(batch: dict) -> dict:
    """The same batch with labels shifted one place left, as a custom model would want:
    wrong for GPT-2, which shifts again inside."""
    labels = torch.full_like(batch["labels"], IGNORE)
    labels[:, :-1] = batch["labels"][:, 1:]
    return {**batch, "labels": labels}
