"""Real code shapes, re-created small but as their projects write them. Nothing here uses labkit
but `Run.from_log` (and, where a test asks, `labkit.watch`).

- `GPT`: nanoGPT's model, whose ``forward(idx, targets)`` returns ``(logits, loss)``, the loss
  computed inside with ``F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=-1)``;
  batches from ``get_batch``: ``x = data[i:i+block]``, ``y = data[i+1:i+1+block]``.
- `HFStyleLM`: a Hugging Face-style causal LM: ``forward(input_ids, labels=None)`` returns an
  object with ``.logits`` and ``.loss``, the shift by one done inside (``labels=input_ids``
  is right).
- `RNNModel`: PyTorch examples' word_language_model: sequence-first (35 x 20) batches from
  ``batchify``/``get_batch`` with flattened targets, ``log_softmax`` + ``NLLLoss``, a hidden
  state carried across batches with ``repackage_hidden``, and the example's loop: no
  optimizer, ``clip_grad_norm_`` then ``p.data.add_(p.grad, alpha=-lr)``.

Each has a ``bug`` switch: ``"unshifted"`` makes the targets the inputs.
"""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run

VOCAB = 20


def token_stream(n: int = 6000, seed: int = 5, follow: float = 0.85) -> torch.Tensor:
    """(n,) token ids: the next token is rule[token] with probability `follow`."""
    gen = torch.Generator().manual_seed(seed)
    rule = torch.randperm(VOCAB, generator=gen)
    out = torch.empty(n, dtype=torch.long)
    out[0] = 0
    keep = torch.rand(n, generator=gen) < follow
    noise = torch.randint(0, VOCAB, (n,), generator=gen)
    for t in range(1, n):
        out[t] = rule[out[t - 1]] if keep[t] else noise[t]
    return out


# ---- nanoGPT ---------------------------------------------------------------------------
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size,
                                                                                          block_size))

    def forward(self, x):
        B, T, C = x.size()  # (B, T, C)
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v  # (B, nh, T, hs)
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size=VOCAB, block_size=16, n_layer=2, n_head=2, n_embd=32):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd), wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, block_size) for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd)))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying, as nanoGPT does

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)  # (b, t, n_embd)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)  # (b, t, vocab)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits, loss = self.lm_head(x[:, [-1], :]), None
        return logits, loss


def nanogpt_init(model: nn.Module) -> None:
    """nanoGPT's `_init_weights`: every Linear and Embedding weight drawn from N(0, 0.02), every
    Linear bias zero (the tied lm_head/wte weight is drawn once more, by whichever comes last)."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)


class GPTSetup:
    """nanoGPT's train.py, cut down: get_batch, AdamW, the loop; ``bug="unshifted"``: y = x.
    ``bug="nanogpt_init"``: nanoGPT's own init (healthy); ``bug="frozen_tied_head"``: the same
    init, then ``lm_head.weight.requires_grad_(False)`` ("keep the output layer fixed"), which
    freezes the tied token embedding with it at its random init."""

    block_size, batch_size, n_batches = 16, 16, 8

    def __init__(self, bug: str | None = None, **size):
        self.bug, self.data, self.size = bug, token_stream(), size  # size: n_layer, n_head, n_embd

    def make_model(self, seed):
        torch.manual_seed(seed)
        model = GPT(block_size=self.block_size, **self.size)
        if self.bug in ("nanogpt_init", "frozen_tied_head"):
            nanogpt_init(model)
        if self.bug == "frozen_tied_head":
            model.lm_head.weight.requires_grad_(False)
        return model

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)

    def get_batch(self, gen):
        ix = torch.randint(len(self.data) - self.block_size - 1, (self.batch_size,), generator=gen)
        x = torch.stack([self.data[i:i + self.block_size] for i in ix])
        off = 0 if self.bug == "unshifted" else 1
        y = torch.stack([self.data[i + off:i + off + self.block_size] for i in ix])
        return x, y

    def batches(self, seed):
        gen = torch.Generator().manual_seed(seed)
        return [self.get_batch(gen) for _ in range(self.n_batches)]

    def loss_fn(self, model, batch):
        x, y = batch
        _, loss = model(x, y)
        return loss

    def train(self, seed, epochs):
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        data, started, raw = self.batches(seed), time.time(), []
        for _ in range(epochs):
            for x, y in data:
                _, loss = model(x, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                raw.append(loss.item())
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw}, seed=seed, started_at=started)


# ---- a Hugging Face-style causal LM ---------------------------------------------------------
class HFStyleLM(nn.Module):
    """forward(input_ids, labels=None) -> .logits (B, T, V), .loss (labels shifted inside)."""

    def __init__(self, vocab_size=VOCAB, n_embd=32):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, n_embd)
        self.rnn = nn.GRU(n_embd, n_embd, batch_first=True)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, input_ids, labels=None):
        h, _ = self.rnn(self.embed(input_ids))
        logits = self.lm_head(h)  # (B, T, V)
        loss = None
        if labels is not None:  # as transformers' ForCausalLMLoss: pad, then shift
            labels = F.pad(labels.to(logits.device), (0, 1), value=-100)
            shift = labels[..., 1:].contiguous()
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), shift.view(-1), ignore_index=-100)
        return SimpleNamespace(loss=loss, logits=logits)


class HFStyleSetup:
    """A dict batch {input_ids, labels}; ``labels=input_ids`` as Hugging Face's docs say."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return HFStyleLM()

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=3e-3)

    def batches(self, seed):
        data = token_stream().view(-1, 24)[:96]
        order = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))
        return [{"input_ids": data[i], "labels": data[i]} for i in order.split(16)]

    def loss_fn(self, model, batch):
        return model(input_ids=batch["input_ids"], labels=batch["labels"]).loss

    def train(self, seed, epochs):
        model, started, raw = self.make_model(seed), time.time(), []
        opt = self.make_optimizer(model)
        for _ in range(epochs):
            for batch in self.batches(seed):
                loss = self.loss_fn(model, batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
                raw.append(loss.item())
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw}, seed=seed, started_at=started)


# ---- PyTorch examples' word_language_model -------------------------------------------------
class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, ntoken=VOCAB, ninp=16, nhid=16, nlayers=1, dropout=0.2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout if nlayers > 1 else 0.0)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, input, hidden):  # input: (seq_len, batch)
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output))  # (seq_len, batch, ntoken)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()  # (nbatch, bsz): sequence-first


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


class WordLMSetup:
    """main.py of word_language_model: bptt 35, batch 20, lr 20, clip 0.25, no optimizer."""

    bptt, batch_size, lr, clip = 35, 20, 20.0, 0.25

    def __init__(self, bug: str | None = None, n: int = 2821, **size):
        self.bug, self.size = bug, size  # size: ninp, nhid, nlayers
        self.train_data = batchify(token_stream(n), self.batch_size)  # (141, 20)
        self.criterion = nn.NLLLoss()

    def get_batch(self, source, i):
        seq_len = min(self.bptt, len(source) - 1 - i)
        data = source[i:i + seq_len]
        off = 0 if self.bug == "unshifted" else 1
        target = source[i + off:i + off + seq_len].view(-1)
        return data, target

    def make_model(self, seed):
        torch.manual_seed(seed)
        return RNNModel(**self.size)

    def make_optimizer(self, model):
        return None  # the example's loop updates the parameters itself

    def update(self, model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), self.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-self.lr)

    def batches(self, seed):  # the order is the text's: the seed does not change it
        return [self.get_batch(self.train_data, i) for i in range(0, self.train_data.size(0) - 1, self.bptt)]

    def init_state(self, model, batch):
        return model.init_hidden(batch[0].size(1))

    def loss_fn(self, model, batch, hidden):
        output, hidden = model(batch[0], hidden)
        return self.criterion(output, batch[1]), hidden

    def train(self, seed, epochs):
        model, started, raw = self.make_model(seed), time.time(), []
        for _ in range(epochs):
            model.train()
            hidden = model.init_hidden(self.batch_size)
            for batch, i in enumerate(range(0, self.train_data.size(0) - 1, self.bptt)):
                data, targets = self.get_batch(self.train_data, i)
                hidden = repackage_hidden(hidden)
                model.zero_grad()
                output, hidden = model(data, hidden)
                loss = self.criterion(output, targets)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), self.clip)
                for p in model.parameters():
                    p.data.add_(p.grad, alpha=-self.lr)
                raw.append(loss.item())
        return Run.from_log({"step": list(range(len(raw))), "loss_raw": raw}, seed=seed, started_at=started)
