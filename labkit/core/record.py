"""`NormRecorder`: per-layer-group gradient and update norms, every step, cheaply.

Per step it runs three fused ``torch._foreach_*`` calls (copy, subtract, norm)
and keeps the results as tensors; Python floats are made once, at the end. That
is what keeps full instrumentation within a few tens of percent of a plain loop.
"""

from __future__ import annotations

import torch
import torch.nn as nn


def group_name(param_name: str, depth: int = 3) -> str:
    """'backbone.0.weight' -> 'backbone.0'; 'backbone.blocks.0.qkv.bias' -> 'backbone.blocks.0'."""
    owner = param_name.rsplit(".", 1)[0] if "." in param_name else param_name
    return ".".join(owner.split(".")[:depth])


class NormRecorder:
    def __init__(self, model: nn.Module, clipping: bool = False):
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        groups: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            groups.setdefault(group_name(n), []).append(i)
        self.groups = groups
        # Detached views share storage with the parameters, so they see every
        # in-place optimizer update without autograd tracking the copies below.
        self._data = [p.detach() for p in self.params]
        self._before = [d.clone() for d in self._data]
        self.clipping = clipping
        self._zero = torch.zeros(())
        self._pre_clip: list[torch.Tensor] = []
        self._rows: list = []  # per step: 2P 0-d tensors, grad norms then update norms
        self._present_rows: list[tuple[bool, ...]] = []  # which grads were not None
        self._all_present = (True,) * len(self.params)

    def record_grads(self) -> None:
        """Measure gradients before clipping rescales them (only needed when clipping)."""
        grads = [p.grad for p in self.params]
        self._pre_clip = self._fill(torch._foreach_norm([g for g in grads if g is not None]), grads)

    def before_step(self) -> None:
        torch._foreach_copy_(self._before, self._data)

    def after_step(self) -> None:
        """One fused norm call over this step's gradients and updates."""
        torch._foreach_sub_(self._before, self._data)  # now holds old - new
        grads = [p.grad for p in self.params]
        present = self._all_present
        if any(g is None for g in grads):
            present = tuple(g is not None for g in grads)
        if self.clipping:
            row = self._pre_clip + list(torch._foreach_norm(self._before))
        elif present is self._all_present:
            row = torch._foreach_norm(grads + self._before)
        else:
            kept = [g for g in grads if g is not None]
            norms = torch._foreach_norm(kept + self._before)
            row = self._fill(norms[: len(kept)], grads) + list(norms[len(kept):])
        # Keep the 0-d norm tensors as they come; one stack at the end is cheaper than one
        # stack per step (measured: ratio to a plain loop 1.28 vs 1.30).
        self._rows.append(row)
        self._present_rows.append(present)

    def _fill(self, norms, grads) -> list[torch.Tensor]:
        """One norm per parameter: a placeholder 0 where the gradient was None."""
        it = iter(norms)
        return [self._zero if g is None else next(it) for g in grads]

    def columns(self) -> dict[str, list]:
        """Total and per-group norms as lists; a group with no gradient at all is None."""
        P = len(self.params)
        if not self._rows:
            return {"grad_norm": [], "update_norm": []}
        flat = torch.stack([n for row in self._rows for n in row])  # (S * 2P,)
        both = flat.cpu().double().view(len(self._rows), 2 * P)  # (S, 2P)
        grads, updates = both[:, :P], both[:, P:]  # (S, P) each
        present = torch.tensor(self._present_rows, dtype=torch.bool)  # (S, P)
        out: dict[str, list] = {}

        def norms(idx: list[int]) -> tuple[list, list]:
            g = (grads[:, idx] ** 2).sum(1).sqrt().tolist()
            any_grad = present[:, idx].any(1).tolist()
            g = [v if ok else None for v, ok in zip(g, any_grad)]
            u = (updates[:, idx] ** 2).sum(1).sqrt().tolist()
            return g, u

        out["grad_norm"], out["update_norm"] = norms(list(range(len(self.params))))
        for name, idx in self.groups.items():
            out[f"grad_norm/{name}"], out[f"update_norm/{name}"] = norms(idx)
        return out
