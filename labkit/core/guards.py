"""Guards: cheap checks to put in a training loop so a bug stops with a sentence, not a NaN."""

from __future__ import annotations

import torch

from .data import IGNORE


def require_supervised_tokens(
    labels: torch.Tensor, ignore_index: int = IGNORE, shifted: bool = True
) -> int:
    """Return the number of target tokens that carry loss; raise if there are none.

    With ``shifted=True`` (Hugging Face convention) the first position is never a
    target, so ``labels[:, 1:]`` is counted. A mean over zero tokens is 0/0 = NaN.
    """
    if not isinstance(labels, torch.Tensor):
        raise TypeError(f"labels must be a tensor; got {type(labels).__name__}.")
    targets = labels[:, 1:] if shifted and labels.dim() == 2 else labels
    count = int((targets != ignore_index).sum())
    if count == 0:
        raise ValueError(
            f"the batch has no supervised tokens: all {targets.numel()} labels are "
            f"{ignore_index}, so a mean loss would be 0/0 = NaN. Check the loss "
            "mask (response search, truncation, padding)."
        )
    return count


def require_finite(name: str, tensor: torch.Tensor) -> None:
    """Raise naming `name` and the count of NaN/inf entries if `tensor` is not all finite."""
    bad = ~torch.isfinite(tensor)
    if bad.any():
        raise ValueError(
            f"{name} has {int(bad.sum())} non-finite values (NaN or inf) out of "
            f"{tensor.numel()}; first at index {tuple(bad.nonzero()[0].tolist())}."
        )
