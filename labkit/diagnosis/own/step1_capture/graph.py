"""The whole graph: every tensor the learner's loss depends on, found from the loss itself.

`Graph` walks the autograd graph of the first few losses passed to ``backward()``
(``loss.grad_fn``, ``next_functions``, ``AccumulateGrad.variable``) and keeps every leaf
tensor that requires grad, whether or not it is in ``model.parameters()``: a learned
temperature made outside the model, an embedding table kept beside it, a second module's
weight used through ``F.linear``. A leaf seen in every walk is persistent (a tensor made anew
from each batch, such as an input given requires_grad, is not). For each persistent leaf it
records whether a gradient reached it in the walked steps, and (`settle`, when the loop ends)
whether its values moved from where the first walk found them.

A loss that never reaches ``Tensor.backward()`` (``torch.autograd.backward``/``grad`` called
directly) or that has no graph is not traced; the caller says so instead of claiming a check.
"""

from __future__ import annotations

import torch
import torch.nn as nn

WALKS = 3  # the first losses walked: enough to tell a persistent leaf from one made per batch
MAX_NODES = 200_000  # a walk stops here (a graph this large is read as far as it went)


def nodes_of(loss: torch.Tensor) -> list:
    """Every autograd node ``loss`` depends on (at most `MAX_NODES`), ``loss.grad_fn`` first."""
    fn = getattr(loss, "grad_fn", None)
    if fn is None:
        return []
    seen, stack, out = {fn}, [fn], []
    while stack and len(seen) < MAX_NODES:
        node = stack.pop()
        out.append(node)
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return out


def leaves_of(loss: torch.Tensor) -> list[torch.Tensor]:
    """Every leaf tensor requiring grad that ``loss`` depends on, in the order first reached."""
    if loss.grad_fn is None:
        return [loss] if loss.requires_grad else []
    # AccumulateGrad nodes hold the leaf they accumulate into
    return [
        v for n in nodes_of(loss) if isinstance(v := getattr(n, "variable", None), torch.Tensor)
    ]


def setup_names(setup) -> dict[int, str]:
    """id(tensor) -> how the setup's own code names it (``self.temperature``,
    ``self.head.weight``), read while the learner's loop runs (a later make_model rebinds them)."""
    out = {}
    for attr, value in vars(setup).items() if hasattr(setup, "__dict__") else ():
        if isinstance(value, nn.Module):
            for name, p in value.named_parameters():
                out.setdefault(id(p), f"self.{attr}.{name}")
        elif isinstance(value, torch.Tensor):
            out.setdefault(id(value), f"self.{attr}")
    return out


class Graph:
    """The leaves of the first `WALKS` losses (see the module docstring)."""

    def __init__(self):
        self.walks = 0  # losses walked
        self.untraced = 0  # backward() called on a tensor without a graph
        self.leaves: dict[int, dict] = {}  # id -> {"tensor", "start", "seen", "grad"}
        self._check = False  # a walk was made: read the gradients after its backward

    def walk(self, loss: torch.Tensor, setup=None) -> None:
        if self.walks >= WALKS:
            return
        if loss.grad_fn is None:
            self.untraced += 1
            return
        self.walks, self._check = self.walks + 1, True
        names = setup_names(setup) if setup is not None else {}
        for t in leaves_of(loss):
            entry = self.leaves.get(id(t))
            if entry is None:
                entry = self.leaves[id(t)] = {
                    "tensor": t,
                    "start": t.detach().clone(),
                    "seen": 0,
                    "grad": False,
                    "name": names.get(id(t)),
                }
            entry["seen"] += 1

    def after_backward(self) -> None:
        """Which leaves hold a non-zero gradient now (checked while walks are still made)."""
        if not self._check:
            return
        self._check = False
        for entry in self.leaves.values():
            g = entry["tensor"].grad
            if g is not None and not entry["grad"]:
                entry["grad"] = bool(g.detach().abs().sum() > 0)

    def persistent(self) -> list[dict]:
        need = self.walks if self.walks < 2 else 2
        return [e for e in self.leaves.values() if e["seen"] >= need]

    def settle(self) -> None:
        """Whether each persistent leaf moved from its first-walk value, then drop the copies."""
        for e in self.persistent():
            t, start = e["tensor"].detach(), e.pop("start", None)
            e["moved"] = start is not None and not torch.equal(t, start.to(t.device))
            e["shape"], e["numel"] = tuple(t.shape), t.numel()
            e["value"] = float(t.float().flatten()[0]) if t.numel() else None
        for e in self.leaves.values():
            e.pop("start", None)
