"""The memory budget of `labkit.watch`: which parameters it copies whole and which it samples.

An update norm needs each parameter as it was before the step. A copy of every parameter
costs as much memory as the model (28 GB for a 7B fp32 model), so the watch keeps at most
`budget` bytes beside the parameters:

- **exact** while all of the optimizer's parameters fit: the update norms are exact;
- otherwise the smallest tensors are copied whole (up to half the budget), and every larger
  tensor is **sampled**: cut into contiguous blocks of at most 256 elements, of which a
  fixed random set (drawn once) is copied. ``sqrt(blocks / sampled)`` times the sampled
  norm estimates the update norm; its square is unbiased for the squared norm;
- an ``nn.Embedding`` weight is sampled by **rows**. A step of SGD changes only the rows of
  the batch's tokens, and a random sample of rows would miss most of them. So each step
  also copies, exactly, the rows with the largest gradient norm (``topk`` on the device, no
  host sync), and estimates the other rows from the random rows that are not among them.

An update that is exactly zero reads exactly zero: parameters the optimizer does not hold
are never copied and read 0, and the sample of an unchanged tensor is all zeros.
"""

from __future__ import annotations

import math

import torch

DEFAULT_FRACTION = 0.05  # of the watched parameter bytes: leaves room under 10% for transients
MIN_BUDGET = 1 << 20  # 1 MiB: models up to 262,144 fp32 parameters (every labkit toy) are exact
BLOCK = 256  # elements per sampled block: 1 KiB of fp32, contiguous, cheap to gather
INDEX_BYTES = 8  # one int64 index per sampled block or row


def default_budget(param_bytes: int) -> int:
    """5% of the parameter bytes, at least 1 MiB."""
    return max(MIN_BUDGET, int(DEFAULT_FRACTION * param_bytes))


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def _block_len(numel: int) -> int:
    """The largest divisor of numel up to BLOCK, so the tensor views as (blocks, block_len)."""
    return next(d for d in range(min(BLOCK, numel), 0, -1) if numel % d == 0)


def _choose(n: int, k: int, gen: torch.Generator) -> torch.Tensor:
    """k of range(n), sorted: without replacement (with, for huge n, to bound memory)."""
    if n <= 1 << 20:
        return torch.randperm(n, generator=gen)[:k].sort().values
    return torch.randint(n, (k,), generator=gen).sort().values


class BlockSample:
    """A fixed random set of k contiguous blocks of one parameter."""

    def __init__(self, param: torch.Tensor, k: int, gen: torch.Generator):
        data = param.detach()
        self.view = data.view(-1, _block_len(data.numel()))  # (blocks, block_len)
        self.units = self.view.shape[0]
        self.index = _choose(self.units, k, gen).to(data.device)  # (k,)
        self.before = torch.empty(k, self.view.shape[1], dtype=data.dtype, device=data.device)
        self.scale = math.sqrt(self.units / k)
        self.kept_bytes = nbytes(self.before) + nbytes(self.index)
        self.fraction = k / self.units
        self.how = f"{k} of {self.units} blocks of {self.view.shape[1]} elements"

    def keep(self) -> None:
        torch.index_select(self.view, 0, self.index, out=self.before)

    def diff(self) -> torch.Tensor:
        """The sampled update (before - after); one gathered sample alive at a time."""
        return self.before.sub_(self.view.index_select(0, self.index))


class RowSample:
    """An embedding's rows: the `top` rows with the largest gradient norm, exactly, plus a
    fixed random set of rows standing for all the others."""

    def __init__(self, param: torch.Tensor, top: int, rand: int, gen: torch.Generator):
        self.param = param
        data = param.detach()
        self.view = data.view(data.shape[0], -1)  # (rows, row_len)
        rows, width = self.view.shape
        dev = data.device
        self.rows, self.n_top = rows, top
        self.top = torch.arange(top, device=dev)  # reused while the gradient is None
        self.rand = _choose(rows, rand, gen).to(dev)  # (rand,)
        self.top_before = torch.empty(top, width, dtype=data.dtype, device=dev)
        self.rand_before = torch.empty(rand, width, dtype=data.dtype, device=dev)
        self.in_top = torch.zeros(rows, dtype=torch.bool, device=dev)
        self.scale = 1.0  # estimate() returns the scaled norm itself
        self.kept_bytes = (nbytes(self.top_before) + nbytes(self.rand_before) + nbytes(self.top)
                           + nbytes(self.rand) + nbytes(self.in_top))
        self.fraction = (top + rand) / rows
        self.how = (f"the {top} rows with the largest gradient exactly, the other {rows - top} "
                    f"rows estimated from {rand} random rows")

    def keep(self) -> None:
        grad = self.param.grad
        if grad is not None:
            row_norms = torch.linalg.vector_norm(grad.reshape(self.rows, -1), dim=1,
                                                 dtype=torch.float32)  # (rows,)
            self.top = torch.topk(row_norms, self.n_top, sorted=False).indices
        torch.index_select(self.view, 0, self.top, out=self.top_before)
        torch.index_select(self.view, 0, self.rand, out=self.rand_before)

    def estimate(self) -> torch.Tensor:
        """0-d estimate of the update norm: top rows exact, the rest scaled up from a sample."""
        top = self.top_before.sub_(self.view.index_select(0, self.top))
        rand = self.rand_before.sub_(self.view.index_select(0, self.rand))
        self.in_top.zero_().index_fill_(0, self.top, True)
        outside = ~self.in_top.index_select(0, self.rand)  # random rows not among the top
        sq = torch.linalg.vector_norm(rand, dim=1, dtype=torch.float32).square() * outside
        n_outside = outside.sum().clamp(min=1)
        rest = sq.sum() * ((self.rows - self.n_top) / n_outside)
        return (torch.linalg.vector_norm(top, dtype=torch.float32).square() + rest).sqrt()


class Plan:
    """How the watch measures each parameter's update within `budget` bytes.

    ``diffs()`` after the step gives the tensors whose norms are the raw update norms,
    in the order of `positions` (indices into the watched parameters); multiplied by
    `scales` they estimate each parameter's update norm. ``estimates()`` gives the
    embedding estimates (already scaled) for `row_positions`.
    """

    def __init__(self, params: list, owned: list[bool], embeddings: set[int], budget: int,
                 seed: int = 0):
        self.budget = budget
        cands = [i for i, p in enumerate(params) if owned[i]]
        total = sum(nbytes(params[i]) for i in cands)
        exact, used = [], 0
        if total <= budget:
            exact, used = cands, total
        else:
            for i in sorted(cands, key=lambda i: params[i].numel()):
                if used + nbytes(params[i]) > budget // 2:
                    break
                exact.append(i)
                used += nbytes(params[i])
            # a view cannot sample a non-contiguous tensor: copy it whole (said in kept_bytes)
            exact += [i for i in cands if i not in exact and not params[i].is_contiguous()]
            used = sum(nbytes(params[i]) for i in exact)
        self.exact = sorted(exact)
        chosen = set(self.exact)
        rest = [i for i in cands if i not in chosen]
        self._data = [params[i].detach() for i in self.exact]
        self._before = [d.clone() for d in self._data]
        self.samples, self.rows = [], []
        self.positions, self.row_positions = list(self.exact), []
        if rest:
            gen = torch.Generator().manual_seed(seed)
            cost = sum(params[i].numel() * params[i].element_size() for i in rest)
            frac = max(budget - used, 0) / max(cost, 1)  # the share of each tensor we can copy
            for i in rest:
                p = params[i]
                if id(p) in embeddings and p.dim() == 2:
                    k = max(2, min(p.shape[0], int(frac * p.shape[0])))
                    self.rows.append(RowSample(p, k // 2, k - k // 2, gen))
                    self.row_positions.append(i)
                else:
                    units = p.numel() // _block_len(p.numel())
                    self.samples.append(BlockSample(p, max(1, min(units, int(frac * units))), gen))
                    self.positions.append(i)
        self.scales = [1.0] * len(self.exact) + [s.scale for s in self.samples]
        self.kept_bytes = (sum(nbytes(b) for b in self._before)
                           + sum(s.kept_bytes for s in self.samples + self.rows))

    @property
    def all_exact(self) -> bool:
        return not self.samples and not self.rows

    def keep(self) -> None:
        """Before the step: copy what the plan keeps."""
        if self._before:
            torch._foreach_copy_(self._before, self._data)
        for s in self.samples:
            s.keep()
        for r in self.rows:
            r.keep()

    def diffs(self) -> list[torch.Tensor]:
        """After the step: before - after, for the exact tensors and the block samples."""
        if self._before:
            torch._foreach_sub_(self._before, self._data)
        return self._before + [s.diff() for s in self.samples]

    def estimates(self) -> list[torch.Tensor]:
        return [r.estimate() for r in self.rows]

    def how(self, index: int) -> str | None:
        """How parameter `index` is measured: None when exactly."""
        for pos, s in zip(self.positions[len(self.exact):] + self.row_positions,
                          self.samples + self.rows):
            if pos == index:
                return s.how
        return None

    def fraction(self, index: int) -> float:
        for pos, s in zip(self.positions[len(self.exact):] + self.row_positions,
                          self.samples + self.rows):
            if pos == index:
                return s.fraction
        return 1.0
