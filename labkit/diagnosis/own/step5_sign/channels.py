"""Input channels that are exact copies of each other, read beside an acquittal.

An image batch whose channels are equal value for value in every row (a gray image repeated to
3 channels: ``Grayscale(num_output_channels=3)``, ``x.expand(-1, 3, -1, -1)``) carries one
channel's information. That is healthy for digits repeated to fit a 3-channel network, and
fatal where the label depended on what the copies lost (a colour): the run cannot tell the
two apart, so this is a line beside an acquittal, never a conviction.
"""

from __future__ import annotations

import torch

from ..step1_capture import setup as proto


def _channel_dim(x) -> int | None:
    """dim 1 of a (B, C, ...) float batch with 2 to 4 channels, else the last dim of a (B, H, W,
    C) one; None for anything else."""
    if not (torch.is_tensor(x) and x.is_floating_point() and x.dim() >= 3):
        return None
    if 2 <= x.shape[1] <= 4:
        return 1
    return -1 if x.dim() == 4 and 2 <= x.shape[-1] <= 4 else None


def copied(batches) -> dict | None:
    """(channels, dim, rows, batches) where every batch's inputs hold channels that equal the
    first channel value for value in every row; else None (also where any batch is not such
    a tensor, or its channels differ anywhere)."""
    dims, rows = set(), 0
    for batch in batches:
        try:
            x = proto.inputs_of(batch)
        except Exception:  # a batch whose inputs this reading cannot find: nothing said
            return None
        d = _channel_dim(x)
        if d is None:
            return None
        first = x.select(d, 0).unsqueeze(d)
        if not torch.equal(x, first.expand_as(x)) or not bool(x.ne(0).any()):
            return None
        dims.add((x.shape[d], d))
        rows += len(x)
    if len(dims) != 1:
        return None
    (channels, d) = dims.pop()
    return {"channels": channels, "dim": d, "rows": rows, "batches": len(batches)}


def words(found: dict) -> str:
    return (
        f"finding: the inputs' {found['channels']} channels (dim {found['dim']}) are exact "
        f"copies of each other in every one of the {found['rows']} rows of the "
        f"{found['batches']} batches, so the inputs carry one channel's values; fine for a "
        "gray image repeated to fit the network, but if your labels depend on what told the "
        "channels apart (a colour: a Grayscale(num_output_channels=3) in the transforms?), "
        "no model can learn that from these inputs"
    )
