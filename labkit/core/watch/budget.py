"""The memory budget of `labkit.watch`: how it measures each parameter's update.

An update norm needs each parameter as it was before the step, or the step's own arithmetic.
A copy of every parameter costs as much memory as the model (28 GB for a 7B fp32 model), so
the watch keeps at most `budget` bytes beside the parameters, and measures each parameter in
one of three ways:

- **copied** while all of the optimizer's parameters fit in the budget: the update is the
  difference, exact;
- **read from the optimizer** (`labkit.core.watch.updates`) above it, where the optimizer is
  torch's own SGD, Adam, AdamW, SparseAdam, RMSprop or Adagrad and the weights are float32,
  float64 or complex: the update is computed from the gradients and the optimizer's state, exact, with
  no copy;
- **sampled** otherwise (another optimizer, half-precision weights), an *estimate* with a
  measured bound. Each large tensor is cut into contiguous blocks (up to 256 elements):

  * **prediction**: each block's update is predicted as its squared gradient (one pass over
    the gradient, which also gives the tensor's exact gradient norm) times the block's
    *gain*, the squared update over the squared gradient it showed the last time it was
    measured (blocks not seen yet: the mean gain of the first step's). Under SGD the gain is lr**2 everywhere; under
    Adam or RMSprop it is 1 / (sqrt(v) + eps)**2, which moves slowly, so a block whose
    small gradient meets a tiny second moment (a unit that rarely fires) is expected to
    move a lot. Ranking by gradient alone missed such blocks: 87.5% of 200 steps covered
    at 25M parameters under an RMSprop subclass, every miss an underestimate;
  * **top**: the blocks with the largest predicted update are copied exactly. A step
    often moves a few rows a lot (the embedding rows of the batch's tokens);
  * **draws**: k blocks drawn with replacement, afresh at every step (from the watch's
    seeded generator: the same seed gives the same table), each with a chance half uniform,
    half in proportion to its predicted update. A draw weighs its squared update by
    1 / (k * chance), 0 on a top block: the sum is an unbiased estimate of the rest at every
    step, whatever the structure of the update (the chances depend only on earlier steps
    and this step's gradient), with a standard error from the draws' own spread. An update
    that follows the prediction is then estimated almost exactly.

  The estimate of a group's squared norm is the sum of its parts; its band is
  ``Z = 4`` standard errors of the draws (wider than a normal law's 99.9%, 3.29: the draws
  of a skewed update are not normal), turned into a norm:
  ``update_norm_bound`` is the half-width, beside ``update_norm`` in the table. The bound
  was checked against the parameters' change in float64 (tests/core/watch/test_watch_exact.py).

An update that is exactly zero reads exactly zero: parameters the optimizer does not hold
are never measured and read 0, a zero learning rate reads 0, and every sampled difference of
an unchanged tensor is 0.
"""

from __future__ import annotations

import torch

from .updates import DTYPES, Formula, kind_of, readable

DEFAULT_FRACTION = 0.05  # of the watched parameter bytes: leaves room under 10% for transients
MIN_BUDGET = 40 << 20  # 40 MiB: models up to 10M fp32 parameters are copied whole (exact)
SGD_COPIED = 1 << 20  # 1 MiB: under SGD, models up to 262,144 fp32 parameters are copied
BLOCK = 256  # largest block: 1 KiB of fp32, contiguous, cheap to gather
MIN_BLOCK = 16  # a tensor whose size has no divisor in [16, 256] is copied whole
SMALL = 4 * BLOCK  # tensors this small are always copied whole
EXACT_SHARE = 0.1  # of the budget, for copying small tensors (biases, norms) whole
FORMULA_SHARE = 0.04  # of the parameter bytes: the transient of reading updates from state


def default_budget(param_bytes: int) -> int:
    """All of the parameter bytes while they fit in `MIN_BUDGET` (40 MiB, 10M fp32
    parameters: copied, exact), else 5% of them.

    Below 10M parameters a copy is the cheapest exact way for every optimizer but SGD above
    1 MiB (whose update is read from the step's own numbers, `Plan`): Adam's update read from
    its moments costs a square root and a division per element, more than a copy and a
    subtraction (gpt-2M, one thread: 1.05x copied, 1.17x read from the moments). The memory
    it costs is the model's size again (40 MB at 10M parameters), said in `kept_bytes`. Above, a model
    keeps 5%: its update is read from the optimizer where it can be, else sampled.
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


UNIFORM = 0.5  # of a draw's chance spread evenly over the blocks; the rest by squared gradient
Z = 4.0  # standard errors in an estimate's band (3.29 is 99.9% under a normal law; the
# draws of a skewed update are not normal: 3.29 covered 96.7% of 120 RMSprop steps, 4.0 all)


class Sample:
    """One parameter estimated from its top blocks plus blocks drawn afresh at every step."""

    def __init__(self, param: torch.Tensor, k: int, gen: torch.Generator):
        self.param = param
        data = param.detach()
        width = block_len(data.numel())
        self.body = data.view(-1, width)  # (blocks, width)
        blocks = self.blocks = self.body.shape[0]
        dev = self.device = data.device
        self.gen = (
            gen
            if dev.type == "cpu"
            else torch.Generator(dev).manual_seed(int(torch.randint(1 << 62, (), generator=gen)))
        )
        self.n_top = max(1, min(k // 2, blocks // 2))
        self.n_draw = max(64, k - self.n_top)  # enough draws for their spread to be read
        self.top = torch.arange(self.n_top, device=dev)  # reused while the gradient is None
        self.draw = torch.arange(self.n_draw, device=dev) % blocks
        self.top_before = torch.empty(self.n_top, width, dtype=data.dtype, device=dev)
        self.draw_before = torch.empty(self.n_draw, width, dtype=data.dtype, device=dev)
        self._is_top = torch.zeros(blocks, dtype=torch.float32, device=dev)
        self._counted = torch.ones(self.n_draw, dtype=torch.float32, device=dev)
        self.grad_norm = None  # 0-d: this step's exact gradient norm, from the block norms
        self.gain = None  # (blocks,): each block's last squared update / squared gradient
        self._seen_sq = None  # this step's squared gradients of the top and drawn blocks
        self.kept_bytes = (
            nbytes(self.top_before)
            + nbytes(self.draw_before)
            + nbytes(self.top)
            + nbytes(self.draw)
            + nbytes(self._is_top)
            + nbytes(self._counted)
            + nbytes(self._is_top)  # the gains (the same shape), made at the first step
        )
        self.how = (
            f"estimated: the {self.n_top} of {blocks} blocks of {width} elements with the "
            "largest predicted update (gradient times the block's last gain) exactly, the "
            f"rest from {self.n_draw} blocks drawn at random at every step (band: "
            "update_norm_bound)"
        )

    def keep(self) -> None:
        """Before the step: predict each block's update from its gradient and its gain, take
        the top blocks by prediction exactly, draw the others, copy both."""
        grad = self.param.grad
        if grad is not None:
            norms = (
                sparse_block_norms(grad, self.blocks, self.body.shape[1])
                if grad.is_sparse
                else torch.linalg.vector_norm(
                    grad.reshape(self.blocks, -1), dim=1, dtype=torch.float32
                )
            )  # (blocks,)
            self.grad_norm = torch.linalg.vector_norm(norms.double()).float()
            sq = norms.square_()  # (blocks,) squared gradients
            # the predicted squared update: the gradient times the block's last gain (SGD:
            # the lr everywhere; Adam, RMSprop: 1 / sqrt of the second moment, which moves
            # slowly, so a block whose small gradient meets a tiny moment is expected)
            pred = sq if self.gain is None else sq * self.gain
            self._is_top.index_fill_(0, self.top, 0.0)
            self.top = torch.topk(pred, self.n_top, sorted=False).indices  # (n_top,)
            self._is_top.index_fill_(0, self.top, 1.0)
            total = pred.sum()
            # a draw's chance: half uniform, half in proportion to the prediction, so that an
            # update that follows it is estimated almost exactly, and any other unbiasedly
            share = 1.0 - UNIFORM
            chance = pred.div(torch.where(total > 0, total / share, 1.0)).add_(
                UNIFORM / self.blocks
            )
            chance.div_(chance.sum())
        else:
            self.grad_norm, sq = None, None
            chance = torch.full((self.blocks,), 1.0 / self.blocks, device=self.device)
        self.draw = torch.multinomial(chance, self.n_draw, replacement=True, generator=self.gen)
        # each draw's weight: 1 / (draws * chance), 0 on a top block (measured exactly)
        weight = chance.index_select(0, self.draw).mul_(self.n_draw).reciprocal_()
        torch.mul(weight, 1.0 - self._is_top.index_select(0, self.draw), out=self._counted)
        self._seen_sq = (
            None if sq is None else (sq.index_select(0, self.top), sq.index_select(0, self.draw))
        )
        torch.index_select(self.body, 0, self.top, out=self.top_before)
        torch.index_select(self.body, 0, self.draw, out=self.draw_before)

    def after(self) -> list[torch.Tensor]:
        """After the step: the top's squared update, and the sum and the sum of squares of
        the draws' weighted squared updates (0 for a draw on a top block)."""
        top = self.top_before.sub_(self.body.index_select(0, self.top))  # (n_top, width)
        drawn = self.draw_before.sub_(self.body.index_select(0, self.draw))  # (n_draw, width)
        top_rows = torch.linalg.vector_norm(top, dim=1, dtype=torch.float32).square_()
        y = torch.linalg.vector_norm(drawn, dim=1, dtype=torch.float32).square_()
        if self._seen_sq is not None:
            self._learn(top_rows, y)
        y.mul_(self._counted)  # (n_draw,): each an unbiased estimate of the rest / n_draw
        top_sq = top_rows.double().sum().float()
        return [top_sq, y.sum(), y.square().sum()]

    def _learn(self, top_rows, y) -> None:
        """Each block seen this step keeps its gain (squared update / squared gradient) for
        the next step's prediction; blocks not seen yet keep the first step's mean gain."""
        seen = torch.cat([self.top, self.draw])
        upd, grad = torch.cat([top_rows, y]), torch.cat(self._seen_sq)
        moved = grad > 0
        gain = torch.where(moved, upd / grad.clamp(min=torch.finfo(grad.dtype).tiny), 0.0)
        gain = torch.nan_to_num(gain, nan=0.0, posinf=0.0)
        if self.gain is None:
            n = moved.sum().clamp(min=1)
            self.gain = torch.zeros_like(self._is_top).add_(gain.sum() / n)
        self.gain.index_put_((seen[moved],), gain[moved])

    def combine(self, top_sq, s1, s2):
        """(squared update estimate, its variance), float64 tensors, one per step."""
        k = self.n_draw  # s1 is the mean of k unbiased estimates k * y; its variance:
        return top_sq + s1, ((s2 * k - s1**2) / (k - 1)).clamp(min=0)


class Plan:
    """How the watch measures each parameter's update within `budget` bytes.

    `exact` (indices into the watched parameters) are copied whole; `formula` reads the
    update of the parameters it covers from the optimizer (`labkit.core.watch.updates`); `samples`
    maps the others the optimizer holds to a `Sample`. Parameters in none read 0.
    ``keep()`` before a step; after it, ``diffs()`` (tensors whose norms the watch takes in
    its one fused call) and ``ready()`` (0-d values) give the `width` columns of a row that
    ``combine()`` turns into squared update norms and their variances.
    """

    def __init__(
        self,
        params: list,
        owned: list[bool],
        budget: int,
        seed: int = 0,
        optimizer=None,
        scaler=None,
    ):
        self.budget = budget
        cands = [i for i, p in enumerate(params) if owned[i]]
        exact, covered = cands, []
        kind = None if optimizer is None else kind_of(optimizer, scaler)
        # SGD's update is read from what the step already has (the gradient norm, or one
        # pass over its buffer), cheaper than a copy, above `SGD_COPIED` (below, a copy keeps
        # exact what the formula cannot: a step that rounding swallows whole reads 0)
        total = sum(nbytes(params[i]) for i in cands)
        if total > budget or (kind == "sgd" and total > SGD_COPIED):
            group_of = (
                {id(p): g for g in optimizer.param_groups for p in g["params"]} if kind else {}
            )
            covered = [
                i
                for i in cands
                if kind
                and params[i].dtype in DTYPES
                and readable(kind, group_of[id(params[i])], params[i])
            ]
            rest = [i for i in cands if i not in set(covered)]
            exact, used = [], 0
            if sum(nbytes(params[i]) for i in rest) <= budget:  # the rest fits: copied
                exact, rest = rest, []
            for i in sorted(rest, key=lambda i: params[i].numel()):
                if params[i].numel() > SMALL and used + nbytes(params[i]) > EXACT_SHARE * budget:
                    break
                exact.append(i)
                used += nbytes(params[i])
            # copied whole as well: what a view cannot cut into blocks (said in kept_bytes)
            exact += [
                i
                for i in rest
                if i not in exact
                and (not params[i].is_contiguous() or not block_len(params[i].numel()))
            ]
        self.exact = sorted(exact)
        used = sum(nbytes(params[i]) for i in self.exact)
        self.formula = None
        if covered:  # it keeps nothing; its one temporary (fp32 or fp64) per batch of slices
            # stays under FORMULA_SHARE of the parameter bytes, and in cache
            share = FORMULA_SHARE * sum(nbytes(params[i]) for i in cands) // 8
            self.formula = Formula(optimizer, kind, params, covered, min(share, 1 << 16))
        taken = set(self.exact) | set(covered)
        rest = [i for i in cands if i not in taken]
        self._data = [params[i].detach() for i in self.exact]
        self._zero = torch.zeros((), device=params[0].device) if params else None
        self._before = [d.clone() for d in self._data]
        self.samples: dict[int, Sample] = {}
        share = max(budget - used, 0) / max(sum(nbytes(params[i]) for i in rest), 1)
        gen = torch.Generator().manual_seed(seed)
        for i in rest:  # each sampled tensor gets the same share of its blocks
            blocks = params[i].numel() // block_len(params[i].numel())
            self.samples[i] = Sample(params[i], max(16, int(share * blocks)), gen)
        self.covered = covered
        self.width = len(self.exact) + 2 * len(covered) + 3 * len(self.samples)
        self.kept_bytes = sum(nbytes(b) for b in self._before) + sum(
            s.kept_bytes for s in self.samples.values()
        )

    @property
    def all_exact(self) -> bool:
        """Every update copied whole (the fast path: one fused norm call per step)."""
        return not self.samples and self.formula is None

    @property
    def estimated(self) -> bool:
        return bool(self.samples)

    def keep(self) -> None:
        """Before the step: copy what the plan keeps, read what the formula needs."""
        if self._before:
            torch._foreach_copy_(self._before, self._data)
        if self.formula is not None:
            self.formula.before()
        for s in self.samples.values():
            s.keep()

    def diffs(self) -> list[torch.Tensor]:
        """After the step: the copied tensors' differences (their norms: the updates)."""
        if self._before:
            torch._foreach_sub_(self._before, self._data)
        return self._before

    def ready(self, grad_norms: dict | None = None) -> list[torch.Tensor]:
        """After the step: the formula's update norms and weight bounds (`grad_norms`: the
        watch's norms of the gradients the step used, by id, where it has them), then three
        values per sample."""
        out = [] if self.formula is None else self.formula.after(grad_norms)
        for s in self.samples.values():
            out += s.after()
        return out

    def blank(self) -> list[torch.Tensor]:
        """The `width` columns of a row where the optimizer did not step: no update."""
        out = [] if self.formula is None else self.formula.blank()
        return out + [self._zero] * (self.width - len(out))

    def combine(self, values: torch.Tensor, n_params: int, first: int = 0):
        """(steps, width) values of a row -> three (steps, n_params) tensors: the squared
        update norms, the variances of the sampled ones, and a bound on how far each update
        computed from the optimizer can be from the weights' change (0 where copied).
        `first`: the plan's row that the first of `values` is (the formula's scales are
        kept per row)."""
        sq = torch.zeros(values.shape[0], n_params, dtype=values.dtype)
        var, rounding = torch.zeros_like(sq), torch.zeros_like(sq)
        E, F = len(self.exact), len(self.covered)
        sq[:, self.exact] = values[:, :E] ** 2
        if F:
            updates = self.formula.scaled(values[:, E : E + F], first)
            weights = self.formula.weight_bounds(values[:, E + F : E + 2 * F], updates)
            sq[:, self.covered] = updates**2
            rounding[:, self.covered] = self.formula.rounding(updates, weights, self.formula.dtypes)
        for j, (i, s) in enumerate(self.samples.items()):
            at = E + 2 * F + 3 * j
            sq[:, i], var[:, i] = s.combine(*values[:, at : at + 3].unbind(1))
        return sq, var, rounding


ROUNDING_SHOWN = 1e-3  # relative: below it, the weights' rounding leaves the value exact


def band(sq: torch.Tensor, var: torch.Tensor, rounding: torch.Tensor):
    """Summed over a group's tensors, a squared norm, its variance and the squared rounding
    bounds -> the norm and the half-width of its band: Z standard errors of the sample, plus
    the rounding where it exceeds `ROUNDING_SHOWN` of the norm (0 where exact)."""
    norm = sq.clamp(min=0).sqrt()
    half = Z * var.sqrt()
    lo, hi = (sq - half).clamp(min=0).sqrt(), (sq + half).sqrt()
    sampled = torch.maximum(hi - norm, norm - lo)
    off = rounding.sqrt()
    shown = (var > 0) | (off > ROUNDING_SHOWN * norm)
    return norm, torch.where(shown, sampled + off, torch.zeros_like(norm))
