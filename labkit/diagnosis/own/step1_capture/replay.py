"""`Replay`: watch the learner's own loop run, without changing a line of it.

While the context is open, PyTorch's global hooks and three temporary wrappers see:
- every ``optimizer.step()`` of any optimizer (global step pre/post hooks): the learning
  rate of each group, the gradients at step time (None / exactly zero / finite, their
  norm) and the size of the update;
- every ``Tensor.backward()``: the value backpropagated, whether it has a graph, and
  whether gradients from an earlier step were still there (no ``zero_grad``), or, for a
  second backward before one step, whether the first one's were cleared;
- every top-level module call (global forward hooks): grad mode, autocast, whether the
  output has a graph, which submodules ran, and, when its input came from a batch that
  batches() made, that batch's rows, label positions and labels not -100 (``counts``);
- ``torch.nn.utils.clip_grad_norm_`` / ``clip_grad_value_``: the limit asked for, and whether
  the parameters held a gradient then;
- which dropout and normalisation layers were in eval mode in each forward with grad on;
- every LR scheduler's ``step()`` (``schedules``): its class, settings, the metric it was given
  and the optimizer step it came at;
- what the loop does beside ``backward()`` and ``step()`` (`manual`): gradients edited between
  them, parameters changed between steps by something other than the optimizer, and whether
  each update goes down the gradient;
- per parameter (``per_param``): the summed gradient and update norms over the steps;
- the whole graph (``graph``, see `graph`): every leaf the first losses depend on, in the
  model or not, whether it gets a gradient and whether it moves over the run.

Every hook and wrapper is removed in ``__exit__``, also when the loop raises.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.utils as nn_utils
import torch.nn.utils.clip_grad as clip_grad
import torch.optim.optimizer as optim_hooks
from torch.nn.modules import module as module_hooks

from . import manual as own_manual
from .. import averaged, terms as own_terms
from .graph import Graph
from .rows import columns
from .setup import inputs_of, labels_of


def total_norm(tensors) -> float | None:
    """Euclidean norm over a list of tensors (None entries skipped); None if there are none."""
    kept = [t.detach().float() for t in tensors if t is not None]
    if not kept:
        return None
    return float(torch.linalg.vector_norm(torch.stack(torch._foreach_norm(kept))))


def _mode_layer(m) -> bool:
    """A layer that trains otherwise than it evaluates: dropout with p > 0, a normalisation
    that keeps running statistics."""
    if isinstance(m, nn.modules.dropout._DropoutNd):
        return m.p > 0
    return isinstance(m, nn.modules.batchnorm._NormBase) and m.track_running_stats


def _counts(batch) -> tuple[int, int, int] | None:
    """(rows, label positions, labels not -100) of a batch that batches() made, or None."""
    try:
        y = labels_of(batch) if batch is not None else None
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    if not torch.is_tensor(y) or y.dim() == 0:
        return None
    kept = y.numel() if y.is_floating_point() else int((y != -100).sum())
    return len(y), y.numel(), kept


def _columns(out, batch, parts: bool = True) -> dict | None:
    """`rows.columns` on the labels of a batch that batches() made (None without one)."""
    try:
        y = labels_of(batch) if batch is not None else None
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    return columns(out, y, parts)


def _eval_layers(module) -> list[str]:
    """The layers of `module` that train otherwise than they evaluate and are in eval mode,
    named by class, once each."""
    return sorted({type(m).__name__ for m in module.modules() if _mode_layer(m) and not m.training})


class Replay:
    """Context manager recording what the loop inside it does; see the module docstring."""

    def __init__(self, setup=None, after_step_loss: bool = False):
        self.setup, self.after_step_loss = setup, after_step_loss
        self.models: dict[int, nn.Module] = {}  # top-level modules with parameters
        self.optimizers: dict[int, torch.optim.Optimizer] = {}
        self.forwards: list[dict] = []  # one per top-level call of a module with parameters
        self.backwards: list[dict] = []
        self.steps: list[dict] = []
        self.clips: list[tuple[str, float]] = []
        self.clip_grads: list[bool] = []  # per clip call: whether it found a non-zero gradient
        self.schedules: list[dict] = []  # one per scheduler.step() (see `audit.schedules`)
        self.called: set[int] = set()  # ids of modules that ran inside a forward with grad on
        self.per_param: dict[
            int, list
        ] = {}  # id(param) -> [sum of grad norms, of update norms, steps]
        self.ever_grad: set[int] = set()  # ids of parameters that had a gradient after a backward
        self.ever_nonzero: set[int] = set()  # ... and a gradient not exactly 0 after one
        self.graph = Graph()
        self._depth, self._busy, self._since_step, self._stepped = 0, False, 0, False
        self._batches: dict[int, object] = {}
        self._last_input = None
        self._plain = None  # a step's loss was the plain cross-entropy of its outputs (or not)
        self.terms: list | None = None  # a loss summing weighted terms: each's value (`terms`)
        self._before: list[torch.Tensor] = []
        self._grads: list = []

    # ---- installing and removing -------------------------------------------------
    def __enter__(self):
        self._handles = [
            optim_hooks.register_optimizer_step_pre_hook(self._pre_step),
            optim_hooks.register_optimizer_step_post_hook(self._post_step),
            module_hooks.register_module_forward_pre_hook(self._fwd_pre),
            module_hooks.register_module_forward_hook(self._fwd_post, always_call=True),
        ]
        self._orig = {
            "backward": torch.Tensor.backward,
            "norm": clip_grad.clip_grad_norm_,
            "value": clip_grad.clip_grad_value_,
        }
        replay, orig_backward = self, torch.Tensor.backward

        def backward(tensor, *args, **kwargs):
            if replay._busy:
                return orig_backward(tensor, *args, **kwargs)
            replay._backward_start(tensor)
            out = orig_backward(tensor, *args, **kwargs)
            replay._backward_end()
            return out

        def clip_norm(parameters, max_norm, *args, **kwargs):
            self.clips.append(("max_norm", float(max_norm)))
            return self._orig["norm"](self._clipped(parameters), max_norm, *args, **kwargs)

        def clip_value(parameters, clip_value, *args, **kwargs):
            self.clips.append(("clip_value", float(clip_value)))
            return self._orig["value"](self._clipped(parameters), clip_value, *args, **kwargs)

        torch.Tensor.backward = backward
        self._unpatch = own_manual.watch_schedulers(self)
        nn_utils.clip_grad_norm_ = clip_grad.clip_grad_norm_ = clip_norm
        nn_utils.clip_grad_value_ = clip_grad.clip_grad_value_ = clip_value
        self._wrapped_batches = False
        if self.after_step_loss and self.setup is not None:
            self._wrap_batches()
            own_terms.watch(self)
        return self

    def __exit__(self, *exc):
        own_manual.settle(self)  # a loop without torch.optim: its last step
        averaged.settle(self)  # an averaged copy of the model: its loss after the last step
        self.graph.settle()
        for h in self._handles:
            h.remove()
        torch.Tensor.backward = self._orig["backward"]
        self._unpatch()
        nn_utils.clip_grad_norm_ = clip_grad.clip_grad_norm_ = self._orig["norm"]
        nn_utils.clip_grad_value_ = clip_grad.clip_grad_value_ = self._orig["value"]
        if self._wrapped_batches:
            if self._batches_before is None:
                del self.setup.batches
            else:  # the deadline's wrapper (own.bounded) goes back
                self.setup.batches = self._batches_before
        own_terms.unwatch(self)
        self._before = []
        return False

    def _clipped(self, parameters) -> list:
        """The parameters a clip call was given, listed; whether any held a gradient then is
        recorded in ``clip_grads`` (a clip called before backward() finds none)."""
        params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
        self.clip_grads.append(bool(total_norm([p.grad for p in params])))
        return params

    def _wrap_batches(self):
        before = vars(self.setup).get("batches")
        if before is not None and not getattr(before, "labkit_bounded", False):
            return  # an instance attribute of the learner's own: leave it alone
        self._batches_before = before
        original = self.setup.batches

        def batches(seed):
            out = original(seed)
            for b in out if isinstance(out, (list, tuple)) else ():
                try:
                    self._batches[id(inputs_of(b))] = b
                except (TypeError, ValueError):
                    pass
            return out

        self.setup.batches = batches
        self._wrapped_batches = True

    # ---- forward -------------------------------------------------------------------
    def _fwd_pre(self, module, args):
        if self._busy:
            return
        if self._depth > 0 and torch.is_grad_enabled():
            self.called.add(id(module))
        elif self._depth == 0 and not self.optimizers:
            own_manual.settle(self)  # a loop without torch.optim: did the last one step?
        self._depth += 1

    def _fwd_post(self, module, args, output):
        if self._busy:
            return
        self._depth = max(0, self._depth - 1)
        if self._depth or not any(True for _ in module.parameters()):
            return
        self.models.setdefault(id(module), module)
        grad_on = torch.is_grad_enabled()
        if grad_on:
            self.called.add(id(module))
        out = output if isinstance(output, torch.Tensor) else getattr(output, "logits", None)
        if isinstance(output, tuple) and output and isinstance(output[0], torch.Tensor):
            out = output[0]
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        if grad_on and first is not None:
            self._last_input = (id(first), module)
        self.forwards.append(
            {
                "grad_enabled": grad_on,
                "autocast": torch.is_autocast_enabled("cpu"),
                "graph": bool(out is not None and out.requires_grad),
                "dtype": str(out.dtype) if out is not None else None,
                "step": len(self.steps),
                "param_dtypes": sorted({str(p.dtype) for p in module.parameters()}),
                "eval_layers": _eval_layers(module) if grad_on else [],
                "counts": _counts(self._batches.get(id(first))) if first is not None else None,
                "rows": len(first) if first is not None and first.dim() else None,
                "columns": _columns(out, self._batches.get(id(first)), self._parts_wanted())
                if grad_on
                else None,
            }
        )

    def _parts_wanted(self) -> bool:
        """Whether each forward still computes a cross-entropy's parts (`rows.columns`): not
        once a step's loss was the plain cross-entropy of its outputs (no smoothing to read)."""
        if not self.backwards or self._plain is not None:
            return not self._plain
        last = self.backwards[-1]
        cols = next(
            (f["columns"] for f in reversed(self.forwards[-8:]) if f["step"] == last["step"]
             and f["grad_enabled"] and f["columns"]), None,
        )  # fmt: skip
        if cols and "nll" in cols and abs(cols["uniform"] - cols["nll"]) > 1e-3 * cols["nll"]:
            self._plain = abs(last["value"] - cols["nll"]) <= 1e-5 * cols["nll"]
        return not self._plain

    # ---- backward ------------------------------------------------------------------
    def watched(self) -> list[nn.Parameter]:
        seen, out = set(), []
        for m in self.models.values():
            for p in m.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
        return out

    def _backward_start(self, tensor):
        value = float(tensor.detach().float().sum()) if tensor.numel() <= 1 else math.nan
        checked = self._stepped and self._since_step == 0  # the first backward after a step
        self.graph.walk(tensor, self.setup)
        own_terms.before_backward(self, tensor)
        stale = total_norm([p.grad for p in self.watched()]) if checked else None
        # a later backward of the same step: whether the earlier ones' gradients were cleared
        cleared = not total_norm([p.grad for p in self.watched()]) if self._since_step else None
        own_manual.before_backward(self, self.watched())
        self.backwards.append(
            {
                "value": value,
                "graph": tensor.grad_fn is not None,
                "leaf": tensor.grad_fn is None,
                "stale_checked": checked,
                "stale_norm": stale,
                "cleared": cleared,
                "step": len(self.steps),
            }
        )
        self._since_step += 1

    def _backward_end(self):
        params = self.watched()
        self.ever_grad.update(id(p) for p in params if p.grad is not None)
        self.ever_nonzero.update(
            id(p)
            for p in params
            if id(p) not in self.ever_nonzero
            and p.grad is not None
            and (p.grad.is_sparse or bool(p.grad.any()))
        )
        self.graph.after_backward()
        self.backwards[-1]["grad_norm_after"] = total_norm([p.grad for p in params])
        own_manual.after_backward_norms(self, params)
        if not self.optimizers:
            own_manual.after_backward(self)

    # ---- optimizer.step() ----------------------------------------------------------
    def _pre_step(self, optimizer, args, kwargs):
        averaged.before_step(self)  # an averaged copy of the model: its loss after the last step
        self.optimizers.setdefault(id(optimizer), optimizer)
        params = [p for g in optimizer.param_groups for p in g["params"]]
        grads = [p.grad for p in params]
        self.ever_grad.update(id(p) for p, g in zip(params, grads) if g is not None)
        kept = [g for g in grads if g is not None]
        norms = (
            [float(n) for n in torch._foreach_norm([g.detach().float() for g in kept])]
            if kept
            else []
        )
        self.steps.append(
            {
                "optimizer": id(optimizer),
                "lr": [float(g["lr"]) for g in optimizer.param_groups],
                "n_params": len(params),
                "grads_none": len(grads) - len(kept),
                "grads_zero": sum(1 for n in norms if n == 0.0),
                "grad_norm": math.sqrt(sum(n * n for n in norms)) if norms else None,
                "nonfinite_grad": any(not math.isfinite(n) for n in norms),
                "backwards": self._since_step,
                "update_norm": None,
                "loss_after": None,
            }
        )
        own_manual.before_step(self, optimizer, params, grads)
        self._before = [p.detach().clone() for p in params]
        self._grad_norms = [None if g is None else float(g.detach().float().norm()) for g in grads]
        self._grads = grads
        self._since_step = 0

    def _post_step(self, optimizer, args, kwargs):
        params = [p for g in optimizer.param_groups for p in g["params"]]
        if len(params) == len(self._before):
            deltas = [p.detach().float() - b.float() for p, b in zip(params, self._before)]
            norms = (
                torch._foreach_norm(deltas) if deltas else []
            )  # once: the total and each parameter's
            self.steps[-1]["update_norm"] = (
                float(torch.linalg.vector_norm(torch.stack(norms))) if norms else 0.0
            )
            for p, d, g in zip(params, norms, self._grad_norms):
                acc = self.per_param.setdefault(id(p), [0.0, 0.0, 0])
                acc[0], acc[1], acc[2] = acc[0] + (g or 0.0), acc[1] + float(d), acc[2] + 1
            own_manual.after_step(self, optimizer, params, self._grads, deltas)
        self._before, self._grads = [], []
        self._stepped = True
        if self.after_step_loss and self._last_input is not None:
            batch = self._batches.get(self._last_input[0])
            if batch is not None:
                self.steps[-1]["loss_after"] = self._loss_now(self._last_input[1], batch)

    def _loss_now(self, model, batch) -> float | None:
        """The learner's loss_fn on this step's batch, after the step (the RNG state and the
        setup's attributes kept: a loss_fn that stores its parts for the logger, as
        ``self.losses = ...``, leaves the loop's own values there)."""
        self._busy, kept = True, dict(getattr(self.setup, "__dict__", {}))
        state = torch.get_rng_state()
        try:
            with torch.no_grad():
                return float(self.setup.loss_fn(model, batch))
        except Exception:  # a loss_fn that refuses this batch: no loss to report
            return None
        finally:
            torch.set_rng_state(state)
            self._busy = False
            if kept:  # by identity: the learner's own objects go back, none compared
                vars(self.setup).clear()
                vars(self.setup).update(kept)
