"""How a batch's labels may line up with its inputs: one label row per input row, or one
label per position of a token grid, flattened, as PyTorch's word_language_model builds its
targets (``source[i+1:i+1+seq_len].view(-1)``: (35, 20) inputs, 700 labels); and how a
forward's outputs compare with its batch's labels (`columns`, recorded by the replay).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


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


@torch.no_grad()
def columns(out, y, parts: bool = True) -> dict | None:
    """Each output column's squared and absolute error against float labels `y` of the same shape
    (B, K), K > 1: one output's part of a regression loss (a report may show one of them);
    against class ids, the accuracy of the argmax and, where `parts`, a cross-entropy's parts,
    per label and per row; for a (B, 1) output against (B,) labels,
    the errors broadcasting gives (B, B); None for any other output or labels."""
    if not (torch.is_tensor(out) and torch.is_tensor(y) and out.is_floating_point()):
        return None
    if not y.is_floating_point():  # class ids, over the positions not -100: the share the argmax
        # gets right (a metric), -log p of the label and the mean -log p over classes (`smoothing`)
        if out.dim() < 2 or out.shape[-1] < 2 or out.shape[:-1] != y.shape or not y.numel():
            return None
        x, t = out.detach().float().flatten(0, -2), y.flatten()  # (N, K), (N,)
        try:  # at label_smoothing 1, a cross-entropy is the mean -log p over the classes
            sums = [
                F.cross_entropy(x, t, reduction="sum", label_smoothing=s)
                for s in ((0.0, 1.0) if parts else ())
            ]
        except (IndexError, RuntimeError):  # labels outside the outputs' range
            sums = []
        hits, n, *ce = torch.stack([(x.argmax(-1) == t).sum(), (t != -100).sum(), *sums]).tolist()
        if not n:
            return None
        found = dict(zip(("nll", "uniform"), (v / n for v in ce)))
        found.update(zip(("nll_rows", "uniform_rows"), (v / len(y) for v in ce)))
        return {"accuracy": hits / n, **found}
    if y.dim() == 1 and out.shape == (len(y), 1):  # what a (B, 1) against (B,) broadcasts to
        d = out.detach().float() - y.float()  # (B, B): every prediction against every label
        return {"broadcast_mse": float((d * d).mean()), "broadcast_l1": float(d.abs().mean())}
    if out.shape != y.shape or out.dim() != 2 or out.shape[1] < 2:
        return None
    d = out.detach().float() - y.float()
    return {"mse": (d * d).mean(0).tolist(), "l1": d.abs().mean(0).tolist()}
