"""A small model's norms, taken many steps at a time: `labkit.watch` where a step is short.

At 10k parameters one training step takes a few hundred microseconds, most of it the cost
of each call rather than arithmetic. Taking every gradient's and every update's norm at every
step (one fused norm over twice as many tensors as the model holds, then stacking those 0-d
results) is a large part of what watching adds there. For a model the watch copies whole
(`Plan.all_exact`) and small enough that `MIN_ROWS` rows fit in `RING_BYTES`, a `Ring` keeps
the gradients and the updates of the last K steps instead, in two flat buffers:

- before the step, one fused copy of the weights into the update buffer's next row;
- after it, one fused subtraction (the weights after the step, taken from that copy: minus
  the update) and one fused copy of the gradients the step used.

That is three fused calls a step, no reduction and no Python object per tensor. When the rows
are read (`Watch.columns`, a writer, a change of the optimizer's parameters, a step the ring
cannot take) or the buffers are full, every norm of those steps is taken at once, per tensor
over its span of the rows (summed in float64 past `FUSED_MAX` elements), and the K rows
join the table as one block. The values are those of the differences and gradients
themselves, exact to the same rounding as the per-step norms (`labkit.core.watch.norms`); an
update that is exactly zero reads exactly zero. The memory it keeps (`bytes`, added to
`kept_bytes`) is at most `RING_BYTES`: with the model, within a core's cache. With 8 MiB
of rows a 100k-parameter model's step grew slower, not faster (1.17x a plain step before,
1.35x after, `benchmarks/bench_watch_ab.py`): each new row pushed the model out of the cache.
"""

from __future__ import annotations

import torch

from .norms import FUSED_MAX

RING_BYTES = 1 << 20  # 1 MiB of kept rows at most: with the model, within a core's cache
MIN_ROWS = 4  # fewer rows than this would not save the calls: the per-step path is kept
MAX_ROWS = 32  # steps a block holds at most: enough to make the norms' calls rare
ROW_DTYPES = (torch.float32, torch.float64)


class Ring:
    """The last `rows` steps' gradients (every watched tensor) and updates (the copied ones)
    of one plan, in two flat buffers; `n` of those rows are filled."""

    def __init__(self, params: list, exact: list[int], rows: int):
        p0 = params[0]
        self.rows, self.n, self.dtype = rows, 0, p0.dtype
        self._data = [params[i].detach() for i in exact]
        self._grad_spans, grad_len = _spans(params)
        self._update_spans, update_len = _spans([params[i] for i in exact])
        self._grads = torch.empty(rows, grad_len, dtype=p0.dtype, device=p0.device)
        self._updates = torch.empty(rows, update_len, dtype=p0.dtype, device=p0.device)
        self._grad_rows = [_views(self._grads[r], params, self._grad_spans) for r in range(rows)]
        self._update_rows = [
            _views(self._updates[r], [params[i] for i in exact], self._update_spans)
            for r in range(rows)
        ]
        self.bytes = (grad_len + update_len) * rows * p0.element_size()

    def keep(self) -> None:
        """Before a step: the weights, into the next row of the update buffer."""
        torch._foreach_copy_(self._update_rows[self.n], self._data)

    def put(self, grads: list) -> bool:
        """After a step the ring takes: its update and gradients, as row `n`. True when the
        buffers are full (the watch then folds them into a block). A None gradient raises
        TypeError, a sparse one RuntimeError, before the update is taken: the watch then
        measures that step on its own, from `diffs`."""
        torch._foreach_copy_(self._grad_rows[self.n], grads)
        torch._foreach_sub_(self._update_rows[self.n], self._data)
        self.n += 1
        return self.n == self.rows

    def diffs(self) -> list:
        """After a step the ring does not take (a None gradient, gradients measured before a
        clip): the update of each copied tensor, as tensors whose norms the watch takes now.
        Row `n` stays free for the next step; the rows before it are folded first."""
        torch._foreach_sub_(self._update_rows[self.n], self._data)
        return self._update_rows[self.n]

    def block(self) -> torch.Tensor:
        """The filled rows' norms, (n, tensors + copied tensors): gradients, then updates;
        the ring is empty afterwards."""
        n, self.n = self.n, 0
        cols = [  # float32 sums within 3e-6 up to FUSED_MAX elements (`norms`), else float64
            torch.linalg.vector_norm(
                buf[:n, a:b], dim=1, dtype=torch.float64 if b - a > FUSED_MAX else None
            )
            for buf, spans in ((self._grads, self._grad_spans), (self._updates, self._update_spans))
            for a, b in spans
        ]
        return torch.stack(cols, 1).to(self.dtype)


def make(w) -> Ring | None:
    """A ring for watch `w`'s plan, or None where the per-step path is kept: a plan that
    reads from the optimizer or samples, ranks to compare each step with, parameters of
    several devices or dtypes (or not float32/float64), or rows too large to hold
    `MIN_ROWS` of them in `RING_BYTES`."""
    plan, params = w.plan, w.params
    if not plan.all_exact or not w._fast or w._ranks is not None or not params:
        return None
    p0 = params[0]
    if p0.dtype not in ROW_DTYPES or any(
        p.device != p0.device or p.dtype != p0.dtype or p.is_sparse for p in params
    ):
        return None
    row = (sum(p.numel() for p in params) + sum(params[i].numel() for i in plan.exact)) * (
        p0.element_size()
    )
    rows = min(MAX_ROWS, RING_BYTES // max(row, 1))
    if rows < MIN_ROWS:
        return None
    plan._before, plan.kept_bytes = [], 0  # the plan's own copy is the ring's row now
    return Ring(params, plan.exact, rows)


def _spans(tensors: list) -> tuple[list[tuple[int, int]], int]:
    spans, at = [], 0
    for t in tensors:
        spans.append((at, at + t.numel()))
        at += t.numel()
    return spans, at


def _views(row: torch.Tensor, tensors: list, spans: list) -> list:
    return [row[a:b].view(t.shape) for t, (a, b) in zip(tensors, spans)]
