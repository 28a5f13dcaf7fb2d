"""How a batch's labels may line up with its inputs: one label row per input row, or one
label per position of a token grid, flattened, as PyTorch's word_language_model builds its
targets (``source[i+1:i+1+seq_len].view(-1)``: (35, 20) inputs, 700 labels)."""

from __future__ import annotations


def label_rows_fit(x, y) -> bool:
    """One label row per input row, or one label per position of a 2-D token grid (flattened)."""
    return len(y) == len(x) or (x.dim() >= 2 and y.dim() == 1 and len(y) == x.shape[0] * x.shape[1])


def check_rows(x, y, where: str) -> None:
    """Refuse a batch whose labels fit neither its input rows nor its positions."""
    if len(x) == 0 or not label_rows_fit(x, y):
        grid_hint = (
            f" or one per position of the {tuple(x.shape[:2])} token grid ({x.shape[0] * x.shape[1]}, "
            "flattened)"
            if x.dim() >= 2
            else ""
        )
        raise ValueError(
            f"{where} has {len(x)} inputs and {len(y)} labels; a batch needs at least one "
            f"example, and one label row per input{grid_hint}."
        )
