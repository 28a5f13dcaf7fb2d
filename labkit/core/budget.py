"""The memory budget of `labkit.watch`: which parameters it copies whole and which it samples.

An update norm needs each parameter as it was before the step. A copy of every parameter
costs as much memory as the model (28 GB for a 7B fp32 model), so the watch keeps at most
`budget` bytes beside the parameters:

- **exact** while all of the optimizer's parameters fit: every update norm is exact;
- otherwise tensors of up to 1,024 elements, then the smallest others up to a tenth of the
  budget, are still copied whole, and each larger tensor is **sampled** in contiguous
  blocks (up to 256 elements) in two parts:

  * **top**: before each step, the blocks with the largest gradient norm (one pass over
    the gradient, on the device, which also gives the tensor's exact gradient norm, then
    ``topk``) are copied exactly. A step often moves a few rows a lot: SGD changes only
    the embedding rows of the batch's tokens, and an LM head moves the rows of the target
    tokens most. A uniform sample alone would miss them;
  * **spread**: a fixed systematic sample, every s-th block from a random offset (s a
    prime that does not divide the row length, so all columns are visited). Each block
    is in it with probability 1/s, so s times the squared update of its blocks outside
    the top estimates the rest without bias (Horvitz-Thompson).

  The estimate is ``sqrt(top**2 + s * (spread**2 - overlap**2))``: its square is
  unbiased for the squared update norm. Per sampled tensor a step costs about a dozen
  small device ops and no host sync; the norms go into the watch's one fused
  ``torch._foreach_norm`` call.

An update that is exactly zero reads exactly zero: parameters the optimizer does not hold
are never copied and read 0, and every sampled difference of an unchanged tensor is 0.
"""

from __future__ import annotations

import math

import torch

DEFAULT_FRACTION = 0.05  # of the watched parameter bytes: leaves room under 10% for transients
MIN_BUDGET = 1 << 20  # 1 MiB: models up to 262,144 fp32 parameters (every labkit toy) are exact
BLOCK = 256  # largest block: 1 KiB of fp32, contiguous, cheap to gather
MIN_BLOCK = 16  # a tensor whose size has no divisor in [16, 256] is copied whole
SMALL = 4 * BLOCK  # tensors this small are always copied whole
EXACT_SHARE = 0.1  # of the budget, for copying small tensors (biases, norms) whole


def default_budget(param_bytes: int) -> int:
    """All of the parameter bytes while they fit in 1 MiB (exact), else 5% of them.

    A sampled model keeps 5% whatever its size: each kept byte is copied before the step and
    read after it, and a floor above 5% (1 MiB was 40% of a 650k-parameter MLP) spent more
    memory traffic on the estimate than the bar of 1.10x allows (docs/developer/benchmarks.md).
    """
    return param_bytes if param_bytes <= MIN_BUDGET else int(DEFAULT_FRACTION * param_bytes)


def dense_values(grad):
    """A sparse gradient (``nn.Embedding(sparse=True)``) as the values it holds, summed per
    index: the same norm as the dense gradient, which fused norms cannot take sparse."""
    return grad.coalesce().values() if grad is not None and grad.is_sparse else grad


def sparse_block_norms(grad: torch.Tensor, blocks: int, width: int) -> torch.Tensor:
    """(blocks,) norms of a sparse COO gradient cut into blocks of `width` elements, with
    no dense copy: only the rows it holds are visited; the others are exactly 0."""
    g = grad.coalesce()
    values = g.values().reshape(g.values().shape[0], -1).float()  # (nnz, dense numel)
    rows = torch.zeros(g.indices().shape[1], dtype=torch.long, device=values.device)
    for d in range(g.sparse_dim()):  # the flat index of each stored row
        rows = rows * g.shape[d] + g.indices()[d]
    cols = torch.arange(values.shape[1], device=values.device)
    block = ((rows.unsqueeze(1) * values.shape[1] + cols) // width).reshape(-1)
    out = torch.zeros(blocks, dtype=torch.float32, device=values.device)
    return out.index_add_(0, block, values.pow(2).reshape(-1)).sqrt_()


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def block_len(numel: int) -> int:
    """The largest divisor of numel up to BLOCK (0 if it is below MIN_BLOCK)."""
    d = next(d for d in range(min(BLOCK, numel), 0, -1) if numel % d == 0)
    return d if d >= MIN_BLOCK else 0


def _stride(target: int, row_blocks: int) -> int:
    """The smallest prime >= target that does not divide the row length (in blocks)."""
    n = max(2, target)
    while any(n % q == 0 for q in range(2, math.isqrt(n) + 1)) or row_blocks % n == 0:
        n += 1
    return n


class Sample:
    """One parameter measured on its top blocks plus a fixed systematic spread of blocks."""

    def __init__(self, param: torch.Tensor, k: int, gen: torch.Generator):
        self.param = param
        data = param.detach()
        width = block_len(data.numel())
        self.body = data.view(-1, width)  # (blocks, width)
        blocks = self.blocks = self.body.shape[0]
        row_blocks = data.numel() // data.shape[0] // width if data.dim() >= 2 else 1
        dev = data.device
        self.n_top = max(1, min(k // 2, blocks // 2))
        self.stride = _stride(blocks // max(1, k - self.n_top), max(row_blocks, 1))
        self.offset = int(torch.randint(self.stride, (), generator=gen))
        # (m,) may be empty when stride > blocks: still each block in with chance 1/stride
        self.spread = torch.arange(self.offset, max(blocks, self.offset), self.stride, device=dev)
        self.top = torch.arange(self.n_top, device=dev)  # reused while the gradient is None
        self.top_before = torch.empty(self.n_top, width, dtype=data.dtype, device=dev)
        self.spread_before = torch.empty(len(self.spread), width, dtype=data.dtype, device=dev)
        self._spread_rows = self.body[self.offset :: self.stride][: len(self.spread)]  # a view
        self._in_spread = torch.zeros(blocks, dtype=data.dtype, device=dev)  # 1 on the spread
        self._in_spread[self.spread] = 1
        self._top_in_spread = self._in_spread[self.top].unsqueeze(1)  # (n_top, 1) of 0 and 1
        self.grad_norm = None  # 0-d: this step's exact gradient norm, from the block norms
        self.kept_bytes = (
            nbytes(self.top_before)
            + nbytes(self.spread_before)
            + nbytes(self.top)
            + nbytes(self.spread)
            + nbytes(self._in_spread)
        )
        self.fraction = (self.n_top + len(self.spread)) / blocks
        self.how = (
            f"the {self.n_top} of {blocks} blocks of {width} elements with the largest "
            f"gradient exactly, the rest from one block in {self.stride} "
            f"({len(self.spread)} blocks)"
        )

    def keep(self) -> None:
        """Before the step: find the top blocks from the gradient, copy them and the spread."""
        grad = self.param.grad
        if grad is not None:
            norms = (
                sparse_block_norms(grad, self.blocks, self.body.shape[1])
                if grad.is_sparse
                else torch.linalg.vector_norm(
                    grad.reshape(self.blocks, -1), dim=1, dtype=torch.float32
                )
            )  # (blocks,)
            self.grad_norm = torch.linalg.vector_norm(norms)
            self.top = torch.topk(norms, self.n_top, sorted=False).indices  # (n_top,)
            self._top_in_spread = self._in_spread.index_select(0, self.top).unsqueeze(1)
        else:
            self.grad_norm = None
        torch.index_select(self.body, 0, self.top, out=self.top_before)
        self.spread_before.copy_(self._spread_rows)  # every stride-th row: no gather

    def diffs(self) -> list[torch.Tensor]:
        """After the step: (top, spread, the top blocks that are also in the spread)."""
        top = self.top_before.sub_(self.body.index_select(0, self.top))  # (n_top, width)
        spread = self.spread_before.sub_(self._spread_rows)
        return [top, spread, top * self._top_in_spread]

    def combine(self, top, spread, overlap):
        """Update norm estimate from the three norms (float64 tensors, one per step)."""
        return (top**2 + self.stride * (spread**2 - overlap**2).clamp(min=0)).sqrt()


class Plan:
    """How the watch measures each parameter's update within `budget` bytes.

    `exact` (indices into the watched parameters) are copied whole; `samples` maps the
    others the optimizer holds to a `Sample`. Parameters in neither read 0. ``diffs()``
    after a step gives `width` tensors whose norms ``combine()`` turns into update norms.
    """

    def __init__(self, params: list, owned: list[bool], budget: int, seed: int = 0):
        self.budget = budget
        cands = [i for i, p in enumerate(params) if owned[i]]
        exact = cands
        if sum(nbytes(params[i]) for i in cands) > budget:
            exact, used = [], 0
            for i in sorted(cands, key=lambda i: params[i].numel()):
                if params[i].numel() > SMALL and used + nbytes(params[i]) > EXACT_SHARE * budget:
                    break
                exact.append(i)
                used += nbytes(params[i])
            # copied whole as well: what a view cannot cut into blocks (said in kept_bytes)
            exact += [
                i
                for i in cands
                if i not in exact
                and (not params[i].is_contiguous() or not block_len(params[i].numel()))
            ]
        self.exact = sorted(exact)
        used = sum(nbytes(params[i]) for i in self.exact)
        rest = [i for i in cands if i not in set(self.exact)]
        self._data = [params[i].detach() for i in self.exact]
        self._before = [d.clone() for d in self._data]
        self.samples: dict[int, Sample] = {}
        share = max(budget - used, 0) / max(sum(nbytes(params[i]) for i in rest), 1)
        gen = torch.Generator().manual_seed(seed)
        for i in rest:  # each sampled tensor gets the same share of its blocks
            blocks = params[i].numel() // block_len(params[i].numel())
            self.samples[i] = Sample(params[i], max(2, int(share * blocks)), gen)
        self.width = len(self.exact) + 3 * len(self.samples)
        self.kept_bytes = sum(nbytes(b) for b in self._before) + sum(
            s.kept_bytes for s in self.samples.values()
        )

    @property
    def all_exact(self) -> bool:
        return not self.samples

    def keep(self) -> None:
        """Before the step: copy what the plan keeps."""
        if self._before:
            torch._foreach_copy_(self._before, self._data)
        for s in self.samples.values():
            s.keep()

    def diffs(self) -> list[torch.Tensor]:
        """After the step: the tensors whose norms give the update norms (see combine)."""
        if self._before:
            torch._foreach_sub_(self._before, self._data)
        if not self.samples:
            return self._before
        return self._before + [d for s in self.samples.values() for d in s.diffs()]

    def combine(self, norms: torch.Tensor, n_params: int) -> torch.Tensor:
        """(steps, width) norms of diffs() -> (steps, n_params) update norms; 0 where unheld."""
        out = torch.zeros(norms.shape[0], n_params, dtype=norms.dtype)
        E = len(self.exact)
        out[:, self.exact] = norms[:, :E]
        for j, (i, s) in enumerate(self.samples.items()):
            out[:, i] = s.combine(*norms[:, E + 3 * j : E + 3 * j + 3].unbind(1))
        return out
