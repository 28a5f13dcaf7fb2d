"""Which of a learner's class-id labels a loss scores, for any cross-entropy labkit computes
itself on the learner's targets.

A learner's loss leaves some label positions out: ``ignore_index`` (-100 by default in
``cross_entropy``, set to the pad id by some loops), or a negative sentinel (-1) that a mask
drops before the loss. labkit's own cross-entropies (a padding check, a reference loss) must
leave out the same positions, or a healthy tagger whose tags hold -100 on its padding raises
"Target -100 is out of bounds". `kept(y, classes, ignore)` is the mask of the labels scored:
in range(classes) and not `ignore`; `cross_entropy` is the mean over those only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def kept(y: torch.Tensor, classes: int, ignore: int | None = None) -> torch.Tensor:
    """The labels of `y` a loss over `classes` outputs scores: in range, and not `ignore`."""
    mask = (y >= 0) & (y < classes)
    return mask if ignore is None else mask & (y != ignore)


def cross_entropy(logits: torch.Tensor, y: torch.Tensor, ignore: int | None = None):
    """Cross-entropy of (..., C) `logits` against (...) class ids, over the labels scored only
    (`kept`); None where no label is scored."""
    logits, y = logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
    mask = kept(y, logits.shape[-1], ignore)
    if not bool(mask.any()):
        return None
    return F.cross_entropy(logits[mask], y[mask])
