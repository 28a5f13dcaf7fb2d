"""Cross-entropy by numbers (notebook `11_cross_entropy`).

* `surprise`: -ln p, the loss of one example whose correct class got probability p;
* `loss_at_init`: an untrained MLP's loss next to ln C, for several class counts;
* `overflow_point`: the largest logit whose exp() a dtype can still hold, ln(max);
* `softmax_then_log` vs `F.log_softmax`: the hand-written loss next to the stable one.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ...core.data import load
from ...core.models import MLP
from ...diagnosis.probes import loss_at_init as probe_loss_at_init


def surprise(p: float) -> float:
    """-ln p: the cross-entropy of one example whose correct class received probability p."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"p={p!r} is not a probability of the correct class; use 0 < p <= 1.")
    return -math.log(p)


def loss_at_init(classes=(2, 10, 100), seed: int = 0) -> list[dict]:
    """For each class count C: the loss of a freshly built MLP on blobs, and ln C."""
    rows = []
    for n in classes:
        torch.manual_seed(seed)
        data = load("blobs", n_classes=n, seed=seed)
        model = MLP(n_classes=n)
        batch = (data.train["x"], data.train["y"])
        result = probe_loss_at_init(model, batch)
        rows.append(
            {"C": n, "loss": result.details["loss"], "ln_C": math.log(n), "verdict": result.verdict}
        )
    return rows


def overflow_point(dtype: torch.dtype) -> float:
    """ln of the dtype's largest finite number: exp() of anything above it is inf."""
    return math.log(torch.finfo(dtype).max)


def softmax_then_log(logits: torch.Tensor) -> torch.Tensor:
    """log(softmax(z)) written out by hand: exp, normalise, log. Fine on paper, fragile in floats."""
    e = torch.exp(logits)
    return torch.log(e / e.sum(dim=-1, keepdim=True))


def manual_vs_stable(
    gaps=(5.0, 11.0, 11.2, 50.0, 89.0),
    dtypes=(torch.float16, torch.float32),
    target: str = "right",
    n_classes: int = 3,
) -> list[dict]:
    """The loss of one example with logits [gap, 0, 0, ...], by hand and the stable way.

    target="right": the correct class is the big logit, so the true loss is nearly 0;
    target="wrong": the correct class is a small one, so the true loss is about `gap`.
    Per dtype: the hand-written softmax-then-log, and F.log_softmax (which subtracts the
    largest logit before exp, so nothing overflows)."""
    if target not in ("right", "wrong"):
        raise ValueError(f"target={target!r} is not allowed; choose 'right' or 'wrong'.")
    index = 0 if target == "right" else 1
    rows = []
    for gap in gaps:
        row = {"gap": gap}
        for dtype in dtypes:
            z = torch.zeros(1, n_classes, dtype=dtype)  # (1, C)
            z[0, 0] = gap
            name = str(dtype).removeprefix("torch.")
            row[f"manual_{name}"] = float(-softmax_then_log(z)[0, index])
            row[f"stable_{name}"] = float(-F.log_softmax(z, dim=-1)[0, index])
        rows.append(row)
    return rows
