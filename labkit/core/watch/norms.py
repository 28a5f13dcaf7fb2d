"""Norms to float32 rounding, and norms of what a function makes of many tensors in batches.

`norms` is how the watch takes every norm it records; `chunked_norms` runs an optimizer's
update arithmetic (`labkit.core.watch.updates`) on slices of at most a given number of
elements, several tensors per fused call, with the layout kept from one step to the next.
"""

from __future__ import annotations

import functools
import math

import torch

FUSED_MAX = 4096  # elements: up to here one float32 reduction is within 3e-6 (measured)
ROW = 256  # elements per partial sum of a larger tensor's norm


def norms(tensors: list, dtype=None) -> list:
    """The 2-norm of each tensor as a 0-d tensor, to float32 rounding however large it is.

    One float32 reduction over many squares drifts on the CPU: against float64, 7e-6 off at
    16k equal elements, 1.7e-4 at 262k, 1e-3 at 16M (equal values, as Adam's first update,
    are the worst case). Up to `FUSED_MAX` elements the drift is below 3e-6, and those
    tensors share one fused ``torch._foreach_norm`` call. A larger one is cut into rows
    (`_row_len`: both the row and the number of rows at most `FUSED_MAX`): one reduction
    gives the rows' norms, which join the fused call (below 4e-6 at every size up to 16M,
    measured; one call per tensor beside the fused one, where four were needed before). A
    tensor past 16M elements, or whose size has no such rows, is summed in rows of `ROW`,
    then in float64. Complex tensors: the norm of their values.
    """
    out: list = [None] * len(tensors)
    fused, big = [], []
    for i, t in enumerate(tensors):
        t = torch.view_as_real(t) if t.is_complex() else t
        n = t.numel()
        if n <= FUSED_MAX or not t.is_contiguous():
            fused.append((i, t))
        elif (r := _row_len(n)) and t.dtype in _ROWS_DTYPES:
            rows = torch.linalg.vector_norm(t.view(-1, r), dim=1, dtype=dtype)
            fused.append((i, rows))
        else:
            big.append((i, t))
    if fused:
        found = (
            torch._foreach_norm([t for _, t in fused])
            if dtype is None
            else torch._foreach_norm([t for _, t in fused], 2, dtype=dtype)
        )
        for (i, _), n in zip(fused, found):
            out[i] = n
    for i, t in big:
        flat, k = t.view(-1), t.numel() // ROW
        rows = torch.linalg.vector_norm(flat[: k * ROW].view(k, ROW), dim=1, dtype=dtype)
        if t.numel() > k * ROW:
            rows = torch.cat([rows, torch.linalg.vector_norm(flat[k * ROW :], dtype=dtype)[None]])
        out[i] = torch.linalg.vector_norm(rows.double()).to(rows.dtype)
    return out


_ROWS_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


@functools.lru_cache(maxsize=4096)
def _row_len(n: int) -> int:
    """The divisor r of n nearest sqrt(n) with r and n // r both at most `FUSED_MAX`, or 0
    (a size past 16M, or one with no such divisor, e.g. a large prime)."""
    if n > FUSED_MAX * FUSED_MAX:
        return 0
    lo = -(-n // FUSED_MAX)  # the fewest elements a row may hold
    root = math.isqrt(n)
    for d in range(root, 0, -1):  # the largest divisor up to sqrt(n), then its partner
        if n % d == 0:
            for r in (d, n // d):
                if lo <= r <= FUSED_MAX:
                    return r
            return 0
    return 0


def _real(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t) if t.is_complex() else t


def _slices(t: torch.Tensor, n: int) -> list[torch.Tensor]:
    t = _real(t)
    if t.numel() <= n or not t.is_contiguous():
        return [t]
    flat = t.view(-1)
    return [flat[a : a + n] for a in range(0, flat.numel(), n)]


class Batches:
    """The slices of rows of same-shaped tensors, packed into batches of at most `n`
    elements, made once and reused at every step while the rows are the same tensors (an
    optimizer's state and the parameters stay the same tensors from step to step)."""

    def __init__(self):
        self._key, self._rows, self.packed = None, None, []

    def get(self, rows: list[tuple], n: int) -> list:
        key = (n,) + tuple(id(t) for row in rows for t in row)
        if key != self._key:  # the rows are kept: their ids cannot be reused meanwhile
            self._key, self._rows, self.packed = key, rows, _pack(rows, n)
        return self.packed


def _pack(rows: list[tuple], n: int) -> list[tuple[list[int], list[list]]]:
    packed, owners, slices, size = [], [], [], 0
    for r, row in enumerate(rows):
        for sl in zip(*(_slices(t, n) for t in row)):
            if owners and size + sl[0].numel() > n:
                packed.append((owners, [list(ops) for ops in zip(*slices)]))
                owners, slices, size = [], [], 0
            owners.append(r)
            slices.append(sl)
            size += sl[0].numel()
    if owners:
        packed.append((owners, [list(ops) for ops in zip(*slices)]))
    return packed


def chunked_norms(fn, rows: list[tuple], n: int, batches: Batches | None = None) -> list:
    """``||fn(*row)||`` for each row of same-shaped tensors, as 0-d tensors.

    `fn` takes one list per operand (slices of the rows) and returns the list of tensors to
    take norms of; it is called on batches of at most `n` elements in all (`batches` keeps
    their layout from one step to the next).
    """
    parts: list[list[torch.Tensor]] = [[] for _ in rows]
    for owners, operands in (batches or Batches()).get(rows, n):
        for r, norm in zip(owners, norms(fn(*operands))):
            parts[r].append(norm)
    return [p[0] if len(p) == 1 else torch.linalg.vector_norm(torch.stack(p)) for p in parts]
