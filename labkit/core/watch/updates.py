"""Exact update norms read from the gradients and the optimizer's own state: no copy.

A step of `torch.optim.SGD`, `Adam`, `AdamW`, `SparseAdam`, `RMSprop` or `Adagrad` applies
an update that is a known function of what the optimizer holds, so its norm needs no copy
of the weights:

- **SGD**, no momentum, no weight decay: ``-lr * g``, so ``|lr| * ||g||``;
- **SGD with momentum** (not Nesterov): ``-lr * buf``, the buffer as the step left it;
- **SGD with weight decay and no momentum, or Nesterov**: ``-lr * (g + wd * w)`` (plus
  ``momentum * buf_new`` for Nesterov), read before the step, where the weights ``w`` are
  still the old ones;
- **Adam**: ``-lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)`` from the moments after the step
  (``max_exp_avg_sq`` under amsgrad); **AdamW** (decoupled weight decay) adds
  ``-lr * wd * w_old``, with ``w_old = (w_new + adam) / (1 - lr * wd)``;
- **SparseAdam**: the same on the rows the sparse gradient holds, with its own bias terms;
- **RMSprop**: ``-lr * g / (sqrt(avg) + eps)`` (centered: ``avg - grad_avg**2``), or
  ``-lr * buf`` with momentum; **Adagrad**: ``-lr / (1 + (step - 1) * lr_decay) * g /
  (sqrt(sum) + eps)``, on the rows a sparse gradient holds where it is sparse. Their weight
  decay without momentum reads the old weights: those groups are sampled (`readable`).

The arithmetic runs on slices of at most `chunk` elements (temporaries stay within the
watch's memory budget and in cache), several tensors per fused ``torch._foreach_*`` call.

What it gives is the update the optimizer computed. The weights store it rounded to their
own precision (half a unit in the last place of each float32 weight), which is why only
float32, float64 and complex parameters are read this way; half-precision weights, whose
rounding can swallow a small update whole, are measured from their change instead.
Anything else (a subclass, an instance whose ``step`` was replaced, a fused step under a
GradScaler, which may skip inside the kernel) is left to the copy or the sample.
"""

from __future__ import annotations

import array
import functools
import math

import torch

from .norms import Batches, chunked_norms, norms

REREAD = 16  # steps between exact readings of the weights' norms (a bound in between)
DTYPES = (torch.float32, torch.float64, torch.complex64, torch.complex128)
_KINDS = {
    torch.optim.SGD: "sgd",
    torch.optim.Adam: "adam",
    torch.optim.AdamW: "adam",
    torch.optim.SparseAdam: "sparse_adam",
    torch.optim.RMSprop: "rmsprop",
    torch.optim.Adagrad: "adagrad",
}


def readable(kind: str, group: dict, param) -> bool:
    """Whether this parameter's update can be read after the step from what `kind` keeps.
    RMSprop without momentum and Adagrad divide a gradient that weight decay made from the
    old weights, which are gone after the step: such groups are sampled."""
    if kind == "rmsprop":
        return _num(group["weight_decay"]) == 0 or _num(group["momentum"]) > 0
    if kind == "adagrad":
        return _num(group["weight_decay"]) == 0 and not (
            param.grad is not None and param.grad.is_sparse
        )
    return True


def kind_of(optimizer, scaler=None) -> str | None:
    """The kind of update a step of torch's own optimizer makes (a key of `Formula.how`);
    None for any other optimizer, or one whose step was replaced."""
    kind = _KINDS.get(type(optimizer))
    own = vars(optimizer).get("step")  # an LR scheduler's counter wraps torch's own step
    if kind is None or (own is not None and not getattr(own, "_wrapped_by_lr_sched", False)):
        return None
    if scaler is not None and any(g.get("fused") for g in optimizer.param_groups):
        return None
    return kind


def _num(x) -> float:
    return float(x.detach()) if isinstance(x, torch.Tensor) else float(x)


def _sgd_direction(grads, weights, *bufs, wd, sign, mom, scale):
    """SGD's step direction from the old weights: g + wd * w, and Nesterov's look-ahead
    ``d + mom * buf_new`` = ``scale * d + mom**2 * buf_old`` (scale 1 + mom(1 - dampening);
    1 + mom on the first step, whose buffer is d itself)."""
    t = torch._foreach_mul(weights, wd)
    torch._foreach_add_(t, grads, alpha=sign)
    if mom != 0:
        torch._foreach_mul_(t, scale)
        if bufs:
            torch._foreach_add_(t, bufs[0], alpha=mom * mom)
    return t


def _adam_update(ms, vs, *weights, bc2_sqrt, eps, c, step_size):
    """Adam's ``m / (sqrt(v) / b + eps)`` is ``b * r`` with ``r = m / (sqrt(v) + eps * b)``
    (b = sqrt(bc2)); given the new weights (AdamW), the whole change ``w_new - w_old`` =
    ``-step_size * c * b * r + (1 - c) * w_new``, since ``w_old = (w_new + step_size * b *
    r) * c`` with ``c = 1 / (1 - lr * wd)``. Without weights, the norm of r (times
    step_size * b, outside)."""
    t = torch._foreach_sqrt(vs)
    torch._foreach_add_(t, eps * bc2_sqrt)
    torch._foreach_div_(t, ms)  # v's temporary becomes 1 / r, then r: no second buffer
    torch._foreach_reciprocal_(t)
    if weights:
        torch._foreach_mul_(t, -step_size * c * bc2_sqrt)
        torch._foreach_add_(t, weights[0], alpha=1 - c)
    return t


def _ratio(grads, squares, *, eps):
    """g / (sqrt(s) + eps): RMSprop's and Adagrad's step, before the learning rate."""
    t = torch._foreach_sqrt(squares)
    torch._foreach_add_(t, eps)
    torch._foreach_div_(t, grads)  # 1 / ratio, then the ratio: one temporary
    torch._foreach_reciprocal_(t)
    return t


def _centered_ratio(grads, squares, means, *, eps):
    """g / (sqrt(s - mean**2) + eps): centered RMSprop."""
    t = torch._foreach_mul(means, means)
    torch._foreach_mul_(t, -1.0)
    torch._foreach_add_(t, squares)
    torch._foreach_sqrt_(t)
    torch._foreach_add_(t, eps)
    torch._foreach_div_(t, grads)
    torch._foreach_reciprocal_(t)
    return t


def _dense(t):
    return t.coalesce().values() if t is not None and t.is_sparse else t


class Formula:
    """The update norms of the watched parameters `index` (all held by `optimizer`)."""

    def __init__(self, optimizer, kind: str, params: list, index: list[int], chunk: int):
        self.optimizer, self.kind, self.chunk = optimizer, kind, max(1024, int(chunk))
        self.index = list(index)
        self._col = {id(params[i]): j for j, i in enumerate(self.index)}
        self._zero = torch.zeros((), device=params[self.index[0]].device)
        self.dtypes = [params[i].dtype for i in self.index]
        self._params, self._steps, self._grad_norms = params, 0, {}
        self._batches: dict = {}  # the layout of each set of rows, kept between steps
        self._detached: dict = {}
        self._before: dict[int, torch.Tensor] = {}
        self.scales = array.array("f")  # per row, one scale per parameter: see `after`
        self._ids = [id(params[i]) for i in self.index]
        where = {id(p): k for k, g in enumerate(optimizer.param_groups) for p in g["params"]}
        self._group_index = [where[key] for key in self._ids]
        self._unread = [torch.full((), math.nan, device=self._zero.device)] * len(self.index)
        self.how = {
            "sgd": "from the gradients and SGD's momentum buffers (exact, no copy)",
            "adam": "from the gradients and Adam's moments (exact, no copy)",
            "sparse_adam": "from the sparse gradients and SparseAdam's moments (exact, no copy)",
            "rmsprop": "from the gradients and RMSprop's square averages (exact, no copy)",
            "adagrad": "from the gradients and Adagrad's sums of squares (exact, no copy)",
        }[kind]

    def _weight(self, p) -> torch.Tensor:
        """``p.detach()``, the same tensor from step to step while p keeps its storage."""
        d = self._detached.get(id(p))
        if d is None or d.data_ptr() != p.data_ptr() or d.shape != p.shape:
            d = self._detached[id(p)] = p.detach()
        return d

    def _groups(self):
        for g in self.optimizer.param_groups:
            ps = [p for p in g["params"] if id(p) in self._col and p.grad is not None]
            if ps:
                yield g, ps

    def before(self) -> None:
        """Before the step: SGD's updates that need the old weights (decay, Nesterov)."""
        self._before = {}
        if self.kind != "sgd" or self._plain():
            return
        for g, ps in self._groups():
            mom, wd = _num(g["momentum"]), _num(g["weight_decay"])
            if (mom == 0 and wd == 0) or (mom != 0 and not g["nesterov"]):
                continue
            lr, damp = abs(_num(g["lr"])), _num(g["dampening"])
            sign = -1.0 if g.get("maximize") else 1.0
            state = self.optimizer.state
            has_buf = {
                id(p) for p in ps if mom != 0 and state[p].get("momentum_buffer") is not None
            }
            first = [p for p in ps if id(p) not in has_buf]
            later = [p for p in ps if id(p) in has_buf]  # Nesterov with a buffer
            for batch, scale in ((first, 1 + mom), (later, 1 + mom * (1 - damp))):
                if not batch:
                    continue

                rows = [
                    (p.grad, self._weight(p))
                    + ((state[p]["momentum_buffer"],) if id(p) in has_buf else ())
                    for p in batch
                ]
                fn = functools.partial(_sgd_direction, wd=wd, sign=sign, mom=mom, scale=scale)
                batches = self._batches.setdefault((id(g), scale), Batches())
                for p, norm in zip(batch, chunked_norms(fn, rows, self.chunk, batches)):
                    self._before[id(p)] = (norm, lr)

    def after(self, grad_norms: dict | None = None) -> list[torch.Tensor]:
        """After the step: one 0-d norm per parameter of `index` (0 where unmoved), before
        its scale (the learning rate's factor, a float kept in `scales`: the multiplication
        is done once for all steps, when the table is read), then the norm of its weights
        on the steps they are read (every `REREAD`), NaN between. `grad_norms`: the watch's
        own norms of these gradients as the step left them, by id (no clipping since):
        plain SGD's update norm is one of them times the learning rate.

        The weights' norm bounds what storing the update in the weights' precision rounded
        (`rounding`); between two readings `weight_bounds` bounds it by the last reading
        plus the update norms since (the triangle inequality), so that a step does not pay
        a pass over the weights."""
        n = len(self.index)
        if grad_norms is not None and self._plain():  # |lr| * ||g||: the row has ||g||
            zero, lrs = self._zero, [abs(_num(g["lr"])) for g in self.optimizer.param_groups]
            out = [grad_norms.get(key, zero) for key in self._ids]  # None: unmoved
            self.scales.extend([lrs[k] for k in self._group_index])
        else:
            out, scale = [self._zero] * n, [0.0] * n
            self._grad_norms = grad_norms or {}
            for g, ps in self._groups():
                for p, (norm, factor) in zip(ps, getattr(self, "_" + self.kind)(g, ps)):
                    j = self._col[id(p)]
                    out[j], scale[j] = norm, factor
            self.scales.extend(scale)
        if self._steps % REREAD == 0:
            out += norms([self._params[i].detach() for i in self.index])
        else:
            out += self._unread
        self._steps += 1
        return out

    def _plain(self) -> bool:
        """Every group plain SGD (no momentum, no weight decay): the update is -lr * g."""
        return self.kind == "sgd" and all(
            _num(g["momentum"]) == 0 and _num(g["weight_decay"]) == 0
            for g in self.optimizer.param_groups
        )

    def blank(self) -> list[torch.Tensor]:
        """A row where the optimizer did not step: no update, the weights not read."""
        self.scales.extend([0.0] * len(self.index))
        return [self._zero] * len(self.index) + self._unread

    def scaled(self, values: torch.Tensor, first: int = 0) -> torch.Tensor:
        """(steps, F) norms as `after` gave them, from row `first` of this plan -> the
        update norms: each times its step's scale."""
        if not self.scales:  # no row yet
            return torch.zeros_like(values)
        sc = torch.frombuffer(self.scales, dtype=torch.float32).view(-1, len(self.index))
        return values * sc[first : first + values.shape[0]].to(values.dtype)

    @staticmethod
    def weight_bounds(weights: torch.Tensor, updates: torch.Tensor) -> torch.Tensor:
        """(steps, F) weight norms, NaN where not read, and the update norms -> a bound on
        each step's weight norm: the last reading plus the updates since."""
        S = weights.shape[0]
        read = ~torch.isnan(weights)
        total = updates.cumsum(0)
        rows = torch.arange(S).view(-1, 1).expand_as(weights)
        last = torch.where(read, rows, -1).cummax(0).values  # the last reading's row, or -1
        base = torch.where(read, weights - total, 0.0).gather(0, last.clamp(min=0))
        return torch.where(last >= 0, base, 0.0) + total

    def rounding(self, updates, weights, dtypes) -> torch.Tensor:
        """How far the weights' change can be from the update computed: each stored weight
        is rounded to half a unit in its last place (twice under AdamW's decay), so the
        change differs from the update by at most 2 * eps/2 * ||w||; plus 1e-6 of the update
        for the arithmetic of recomputing it."""
        unit = torch.tensor([torch.finfo(d).eps for d in dtypes], dtype=weights.dtype)
        return unit * weights + 1e-6 * updates

    def _sgd(self, g, ps) -> list:
        lr = abs(_num(g["lr"]))
        if _num(g["momentum"]) == 0 and _num(g["weight_decay"]) == 0:
            known = self._grad_norms
            if all(id(p) in known for p in ps):
                return [(known[id(p)], lr) for p in ps]
            return [(n, lr) for n in norms([_dense(p.grad) for p in ps])]
        if id(ps[0]) in self._before:
            return [self._before[id(p)] for p in ps]
        bufs = [_dense(self.optimizer.state[p]["momentum_buffer"]) for p in ps]
        return [(n, lr) for n in norms(bufs)]

    def _adam(self, g, ps) -> list:
        b1, b2 = _num(g["betas"][0]), _num(g["betas"][1])
        lr, eps, wd = _num(g["lr"]), _num(g["eps"]), _num(g["weight_decay"])
        decoupled = g.get("decoupled_weight_decay", False) and wd != 0
        second = "max_exp_avg_sq" if g.get("amsgrad") else "exp_avg_sq"
        by_step: dict[float, list] = {}
        for p in ps:  # parameters that skipped steps have their own bias corrections
            by_step.setdefault(_num(self.optimizer.state[p]["step"]), []).append(p)
        norms = {}
        for step, batch in by_step.items():
            bc2_sqrt = math.sqrt(1 - b2**step)
            step_size = lr / (1 - b1**step)
            c = 1 / (1 - lr * wd) if decoupled else 1.0

            state = self.optimizer.state
            rows = [
                (state[p]["exp_avg"], state[p][second]) + ((self._weight(p),) if decoupled else ())
                for p in batch
            ]
            scale = 1.0 if decoupled else abs(step_size) * bc2_sqrt
            fn = functools.partial(
                _adam_update, bc2_sqrt=bc2_sqrt, eps=eps, c=c, step_size=step_size
            )
            batches = self._batches.setdefault((id(g), len(norms)), Batches())
            for p, n in zip(batch, chunked_norms(fn, rows, self.chunk, batches)):
                norms[id(p)] = (n, scale)
        return [norms[id(p)] for p in ps]

    def _rmsprop(self, g, ps) -> list:
        lr, eps, mom = abs(_num(g["lr"])), _num(g["eps"]), _num(g["momentum"])
        state = self.optimizer.state
        if mom > 0:  # -lr * buf, the buffer as the step left it
            return [(n, lr) for n in norms([state[p]["momentum_buffer"] for p in ps])]
        fn = functools.partial(_ratio, eps=eps)  # -lr * g / (sqrt(avg) + eps); no decay here
        rows = [(p.grad, state[p]["square_avg"]) for p in ps]
        if g.get("centered"):  # avg = square_avg - grad_avg**2
            fn = functools.partial(_centered_ratio, eps=eps)
            rows = [row + (state[p]["grad_avg"],) for row, p in zip(rows, ps)]
        batches = self._batches.setdefault((id(g), "rmsprop"), Batches())
        return [(n, lr) for n in chunked_norms(fn, rows, self.chunk, batches)]

    def _adagrad(self, g, ps) -> list:
        lr, eps, decay = _num(g["lr"]), _num(g["eps"]), _num(g["lr_decay"])
        state = self.optimizer.state
        out = {}
        by_step: dict[float, list] = {}
        for p in ps:
            by_step.setdefault(_num(state[p]["step"]), []).append(p)
        for step, batch in by_step.items():  # clr = lr / (1 + (step - 1) * lr_decay)
            clr = abs(lr / (1 + (step - 1) * decay))
            for p in [p for p in batch if p.grad.is_sparse]:  # the rows the batch touched
                grad = p.grad.coalesce()
                std = state[p]["sum"].sparse_mask(grad)._values().sqrt().add_(eps)
                out[id(p)] = (torch.linalg.vector_norm(grad._values() / std), clr)
            batch = [p for p in batch if not p.grad.is_sparse]
            rows = [(p.grad, state[p]["sum"]) for p in batch]
            fn = functools.partial(_ratio, eps=eps)
            for p, n in zip(batch, chunked_norms(fn, rows, self.chunk)):
                out[id(p)] = (n, clr)
        return [out[id(p)] for p in ps]

    def _sparse_adam(self, g, ps) -> list:  # the rows of the batch: a few, one norm each
        b1, b2 = _num(g["betas"][0]), _num(g["betas"][1])
        lr, eps = _num(g["lr"]), _num(g["eps"])
        out = []
        for p in ps:
            grad, state = p.grad.coalesce(), self.optimizer.state[p]
            if grad._values().numel() == 0:
                out.append((self._zero, 0.0))
                continue
            step = _num(state["step"])
            m = state["exp_avg"].sparse_mask(grad)._values()
            v = state["exp_avg_sq"].sparse_mask(grad)._values()
            step_size = lr * math.sqrt(1 - b2**step) / (1 - b1**step)
            out.append((torch.linalg.vector_norm(m / v.sqrt().add_(eps)), abs(step_size)))
        return out
