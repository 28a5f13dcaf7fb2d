"""A seventh batch: the softmax taken over the batch instead of the classes, a classic slip
(`dim=0` where `dim=1` was meant) that trains without error and looks healthy. Written
before the rule for it, and scored then (0 of 2 right: both acquitted as healthy), with a
healthy control beside it that takes a softmax over dim 0 on purpose: a symmetric
contrastive term over two noisy views, whose examples-against-examples matrix is square.

Nothing here uses labkit but `Run.from_log` (through `plain_train`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .sixth import _Blobs


class LogSoftmaxOverBatch(_Blobs):
    """Bug: `F.nll_loss(F.log_softmax(logits, dim=0), y)`: each class is normalised over the
    32 examples of the batch."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.nll_loss(F.log_softmax(model(x), dim=0), y)


class ProbabilityOfTrueClassOverBatch(_Blobs):
    """Bug: a hand-written cross-entropy that takes `logits.softmax(0)` and reads the true
    class's probability: the softmax runs over the batch."""

    def loss_fn(self, model, batch):
        x, y = batch
        p = model(x).softmax(0)
        return -(p[torch.arange(len(y)), y] + 1e-9).log().mean()


class ContrastiveAuxiliary(_Blobs):
    """Healthy: cross-entropy plus 0.1 x a symmetric InfoNCE term between the logits of two
    noisy views of the batch; the term takes log_softmax over both dims of the square
    similarity matrix, as CLIP-style losses do."""

    def loss_fn(self, model, batch):
        x, y = batch
        gen = torch.Generator().manual_seed(int(y.sum()))
        a = model(x + 0.1 * torch.randn(x.shape, generator=gen))
        b = model(x + 0.1 * torch.randn(x.shape, generator=gen))
        sim = F.normalize(a, dim=1) @ F.normalize(b, dim=1).T / 0.5
        aux = -(F.log_softmax(sim, dim=0).diagonal().mean() + F.log_softmax(sim, dim=1).diagonal().mean()) / 2
        return F.cross_entropy(a, y) + 0.1 * aux


SEVENTH = {
    "seventh_h1_log_softmax_over_batch": LogSoftmaxOverBatch,
    "seventh_h1_true_class_probability_over_batch": ProbabilityOfTrueClassOverBatch,
    "seventh_ok_contrastive_auxiliary": ContrastiveAuxiliary,
}

SEVENTH_EXPECTED = {
    "seventh_h1_log_softmax_over_batch": ("H1", [("dim=0", "batch dimension", "over the batch")]),
    "seventh_h1_true_class_probability_over_batch": ("H1", [("dim=0", "batch dimension",
                                                             "over the batch")]),
    "seventh_ok_contrastive_auxiliary": ("NONE", []),
}
