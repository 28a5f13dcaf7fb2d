"""A sixth batch, written for the two misses of the held-out batches that the loss-path audit
was then extended for: a causal LM trained on labels equal to its inputs (no shift), and
label smoothing so strong that the loss cannot fall. Written before the rules, in shapes
unlike the fourth and fifth batches' setups (a GRU LM, a loss_fn that takes the labels
from the inputs itself, another class count and smoothing value, the smoothing given
to `F.cross_entropy` directly), with three healthy controls that sit next to each bug:
a sequence autoencoder whose labels are its inputs but whose model sees the whole
sequence, a causal LM that shifts inside its loss_fn, and mild label smoothing.

Nothing here uses labkit but `Run.from_log` (through `plain_train`).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import MLP, N_CLASSES, TinyGRULM, batches_of, blob_mixture, markov_tokens, split
from .fourth import TinyCausalLM, plain_train, rule_tokens, shuffled


class _Blobs:
    def __init__(self):
        (self.x, self.y), (self.val_x, self.val_y) = split(*blob_mixture(n=1280, seed=71))

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return batches_of(self.x, self.y, 32, seed)

    def val_batches(self, seed):
        return batches_of(self.val_x, self.val_y, 64, seed)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class SmoothingAsConfidence(_Blobs):
    """Bug: `F.cross_entropy(logits, y, label_smoothing=0.8)`, meant as "80% confidence":
    with 6 classes the target puts 0.33 on the true class and 0.13 on each other one."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y, label_smoothing=0.8)


class MildSmoothing(_Blobs):
    """Healthy: label smoothing 0.1, as many recipes use."""

    def __init__(self):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    def loss_fn(self, model, batch):
        x, y = batch
        return self.criterion(model(x), y)


class _GruLm:
    def __init__(self):
        self.ids = markov_tokens(n=512, seed=73)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyGRULM()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=5e-3)

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class GruLmNoShift(_GruLm):
    """Bug: the batch holds `labels = input_ids` (copied from a recipe whose model shifts
    inside), and the loss_fn compares position t's logits with label t: a GRU sees token t
    at position t, so it learns to copy it."""

    def batches(self, seed):
        return [{"input_ids": self.ids[i], "labels": self.ids[i].clone()}
                for i in shuffled(len(self.ids), 32, seed)]

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"])
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())


class LmTargetsFromInputs:
    """Bug: the batch is `(ids, next_ids)` as it should be, but the loss_fn takes its targets
    from the first element ("the targets are the tokens"), so every position is asked for the
    token it was given; the logits are passed as (B, V, T)."""

    def __init__(self):
        self.ids = rule_tokens(n=512, seed=79)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyCausalLM()

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.ids[i, :-1], self.ids[i, 1:]) for i in shuffled(len(self.ids), 32, seed)]

    def loss_fn(self, model, batch):
        tokens, _next = batch
        return F.cross_entropy(model(tokens).transpose(1, 2), tokens)

    def train(self, seed, epochs):
        return plain_train(self, seed, epochs)


class LmShiftInLoss(_GruLm):
    """Healthy: the batch holds `labels = input_ids`, and the loss_fn shifts them itself:
    logits[:, :-1] against labels[:, 1:], as Hugging Face models do inside."""

    def batches(self, seed):
        return [{"input_ids": self.ids[i], "labels": self.ids[i]} for i in shuffled(len(self.ids), 32, seed)]

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"])[:, :-1]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["labels"][:, 1:].reshape(-1))


class SequenceAutoencoder(_GruLm):
    """Healthy: a GRU encoder reads the whole sequence into one vector and a decoder writes the
    sequence back from it; labels are the inputs, which is the task, and every output
    position depends on every input token through the bottleneck."""

    class Model(nn.Module):
        def __init__(self, vocab=20, dim=32, length=16):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.enc = nn.GRU(dim, dim, batch_first=True)
            self.pos = nn.Parameter(0.1 * torch.randn(length, dim))
            self.dec = nn.GRU(dim, dim, batch_first=True)
            self.out = nn.Linear(dim, vocab)

        def forward(self, ids):  # (B, T) -> (B, T, V)
            _, h = self.enc(self.embed(ids))
            steps = self.pos[None, : ids.shape[1]].expand(ids.shape[0], -1, -1).contiguous()
            out, _ = self.dec(steps, h)
            return self.out(out)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return self.Model()

    def batches(self, seed):
        return [{"input_ids": self.ids[i], "labels": self.ids[i]} for i in shuffled(len(self.ids), 32, seed)]

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["labels"].reshape(-1))


SIXTH = {
    "sixth_h1_smoothing_as_confidence": SmoothingAsConfidence,
    "sixth_h2_gru_lm_no_shift": GruLmNoShift,
    "sixth_h2_lm_targets_from_inputs": LmTargetsFromInputs,
    "sixth_ok_mild_smoothing": MildSmoothing,
    "sixth_ok_lm_shift_in_loss": LmShiftInLoss,
    "sixth_ok_sequence_autoencoder": SequenceAutoencoder,
}

SIXTH_EXPECTED = {
    "sixth_h1_smoothing_as_confidence": ("H1", [("smoothing", "smoothed", "soft target", "soft label")]),
    "sixth_h2_gru_lm_no_shift": ("H2", [("shift", "same as the input", "equal to the input",
                                         "identical to the input", "copy of the input", "leak")]),
    "sixth_h2_lm_targets_from_inputs": ("H2", [("shift", "same as the input", "equal to the input",
                                                "identical to the input", "copy of the input", "leak")]),
    "sixth_ok_mild_smoothing": ("NONE", []),
    "sixth_ok_lm_shift_in_loss": ("NONE", []),
    "sixth_ok_sequence_autoencoder": ("NONE", []),
}
assert N_CLASSES == 6
