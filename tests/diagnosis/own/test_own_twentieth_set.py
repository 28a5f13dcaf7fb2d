"""The readings added from the twentieth batch's misses, written before each reading, on inputs
that batch does not hold (a second set): each must fire on its defect and stay silent on the
healthy look-alikes beside it (no training here but a few steps: each reading is a function of
a model and its batches, or of the replay of a short loop)."""

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit.diagnosis.own.step4_h1 import padding
from labkit.diagnosis.own.step5_sign import refloss


# ------------------------------------------------------------------ labels a loss ignores
class _Tagger(nn.Module):
    """A token tagger: an embedding and a linear head, (B, T) ids -> (B, T, 4) logits."""

    def __init__(self):
        super().__init__()
        self.embed, self.head = nn.Embedding(12, 8, padding_idx=0), nn.Linear(8, 4)

    def forward(self, ids):  # (B, T) -> (B, T, 4)
        return self.head(self.embed(ids))


def _tags(sentinel: int, rows=32, length=10, side="right"):
    """Ids 1..11 padded with 0, tags 0..3 (mostly 0) padded with `sentinel`, both on `side`."""
    g = torch.Generator().manual_seed(5)
    ids, tags = torch.zeros(rows, length, dtype=torch.long), torch.full((rows, length), sentinel)
    for i in range(rows):
        n = int(torch.randint(3, length - 2, (1,), generator=g))
        at = slice(0, n) if side == "right" else slice(length - n, length)
        ids[i, at] = torch.randint(1, 12, (n,), generator=g)
        tags[i, at] = torch.where(ids[i, at] < 6, 0, ids[i, at] % 4)
    return ids, tags


class _Tagging:
    """Cross-entropy that ignores `ignore` (-100 by default), or a mask that drops -1 tags."""

    def __init__(self, sentinel: int):
        self.sentinel = sentinel

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _Tagger()

    def loss_fn(self, model, batch):
        ids, tags = batch
        out = model(ids)
        if self.sentinel == -100:
            return F.cross_entropy(out.flatten(0, 1), tags.flatten(), ignore_index=-100)
        keep = tags >= 0  # a mask, where the loop marks padding with -1
        return F.cross_entropy(out[keep], tags[keep])


def test_the_padding_check_leaves_out_the_labels_a_loss_ignores():
    for sentinel in (-100, -1):
        setup = _Tagging(sentinel)
        ev = SimpleNamespace(setup=setup, seed=0, batches=[_tags(sentinel)])
        at_pad, at_real, loss, kept = padding._counted(ev, 0)  # raised IndexError before
        assert at_pad == 0 and at_real > 0 and kept is not None, sentinel


def test_the_reference_loss_over_real_tokens_leaves_out_negative_labels():
    ids, tags = _tags(-100)
    out = _Tagger()(ids)
    value = refloss.unpadded(out, (ids, tags), 0)  # raised IndexError before
    keep = (tags >= 0) & (tags != 0)
    assert torch.allclose(value, F.cross_entropy(out[keep], tags[keep]))
