"""Two toy models with a named `backbone` and `head`, so bugs and probes can talk about each.

* `MLP`           classifier for 2-D points
* `TinyCausalLM`  a 1-2 block transformer following the Hugging Face causal-LM
                  convention: pass ``labels=`` and the model shifts them itself
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .data import IGNORE
from ..errors import check_number


class MLP(nn.Module):
    """backbone: (Linear -> ReLU [-> Dropout]) x depth; head: Linear to class logits."""

    def __init__(
        self,
        in_dim: int = 2,
        hidden: int = 64,
        n_classes: int = 10,
        depth: int = 2,
        dropout: float = 0.0,
        head_init_scale: float = 0.1,
    ):
        super().__init__()
        check_number("depth", depth, minimum=1, integer=True)
        check_number("dropout", dropout, minimum=0.0, maximum=0.99)
        layers: list[nn.Module] = []
        width = in_dim
        for _ in range(depth):
            layers += [nn.Linear(width, hidden), nn.ReLU()]
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
            width = hidden
        self.backbone = nn.Sequential(*layers)
        self.head = nn.Linear(hidden, n_classes)
        # Small head weights make the first logits nearly equal, so the loss at
        # init sits at ln C -- a number the learner can check before training.
        with torch.no_grad():
            self.head.weight.mul_(head_init_scale)
            self.head.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.backbone(x)  # (B, hidden)
        return self.head(hidden)  # (B, C)


@dataclass
class LMOutput:
    """What `TinyCausalLM` returns, named like Hugging Face's CausalLMOutput."""

    loss: torch.Tensor | None  # scalar, mean over supervised target tokens
    logits: torch.Tensor  # (B, T, V)


def shifted_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of position t's logits against the token at t+1; IGNORE is skipped."""
    shift_logits = logits[:, :-1, :]  # (B, T-1, V): predictions for positions 1..T-1
    shift_labels = labels[:, 1:]  # (B, T-1): the tokens they should predict
    return F.cross_entropy(
        shift_logits.reshape(-1, shift_logits.size(-1)),
        shift_labels.reshape(-1),
        ignore_index=IGNORE,
    )


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention then an MLP, each residual."""

    def __init__(self, d_model: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)  # each (B, T, C)
        q, k, v = (
            t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v)
        )  # (B, H, T, C/H)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)  # (B, H, T, C/H)
        x = x + self.proj(att.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class LMBackbone(nn.Module):
    """Token + position embeddings, blocks, final LayerNorm: ids (B, T) -> hidden (B, T, C)."""

    def __init__(self, vocab_size: int, d_model: int, n_layer: int, n_head: int, max_len: int):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_head) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
        B, T = input_ids.shape
        pos = torch.arange(T, device=input_ids.device)
        x = self.tok_emb(input_ids) + self.pos_emb(pos)  # (B, T, C)
        # allowed[b, 0, i, j]: may query i attend to key j?  causal AND key is not padding.
        allowed = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()  # (T, T)
        if attention_mask is not None:
            allowed = allowed & attention_mask.bool()[:, None, None, :]  # (B, 1, T, T)
        for block in self.blocks:
            x = block(x, allowed)
        return self.ln_f(x)


class TinyCausalLM(nn.Module):
    """A small GPT-style LM. ``model(ids, attention_mask=..., labels=...)`` -> `LMOutput`.

    Like Hugging Face's ``GPT2LMHeadModel``, the labels are shifted *inside*
    the model: pass ``labels=input_ids`` (with IGNORE = -100 where no loss is
    wanted), never labels you have already shifted yourself.
    """

    def __init__(
        self,
        vocab_size: int = 50,
        d_model: int = 32,
        n_layer: int = 2,
        n_head: int = 2,
        max_len: int = 32,
        dropout: float = 0.0,
    ):
        super().__init__()
        check_number("n_layer", n_layer, minimum=1, maximum=2, integer=True)
        if d_model % n_head:
            raise ValueError(f"d_model={d_model} must be divisible by n_head={n_head}.")
        self.max_len = max_len
        self.backbone = LMBackbone(vocab_size, d_model, n_layer, n_head, max_len)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        with torch.no_grad():
            self.head.weight.mul_(0.1)  # near-uniform first predictions: loss at init ~ ln V

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> LMOutput:
        if input_ids.dim() != 2 or input_ids.dtype != torch.long:
            raise TypeError(
                "input_ids must be a (batch, time) tensor of token ids (torch.long); "
                f"got shape {tuple(input_ids.shape)} and dtype {input_ids.dtype}."
            )
        if input_ids.size(1) > self.max_len:
            raise ValueError(
                f"input_ids has {input_ids.size(1)} positions; "
                f"this model allows at most max_len={self.max_len}."
            )
        hidden = self.dropout(self.backbone(input_ids, attention_mask))  # (B, T, C)
        logits = self.head(hidden)  # (B, T, V)
        loss = shifted_lm_loss(logits, labels) if labels is not None else None
        return LMOutput(loss=loss, logits=logits)
