"""`labkit.watch(model)` with no optimizer: a loop that updates the parameters itself.

PyTorch's word_language_model example steps with ``p.data.add_(p.grad, alpha=-lr)`` after
``clip_grad_norm_``; there is no ``optimizer.step()`` to hook. The watch reads the step
from the parameters instead:
- at the end of every ``backward()`` (one post-accumulate-grad hook per parameter queues
  one callback that runs when the whole backward is done), it measures the gradients, as
  backward left them, before any clipping, and copies the parameters (within the budget);
- at the next call of the model (and at `run()` / `close()`), if the parameters moved since
  that copy, it records one step: those gradient norms and the update read as the
  difference. A backward whose parameters did not move (gradient accumulation) is not a
  step yet; the gradients measured at the next backward include it.

There is no learning rate to read: the ``lr`` column holds the step size plain SGD would
have taken, update norm / gradient norm (with clipping, the clipped step over the raw norm).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from .guard import guarded


class _NoOptimizer(torch.optim.Optimizer):
    """Stands where the optimizer would be: it holds the trainable parameters, never steps."""

    def __init__(self, params):
        super().__init__(params, {"lr": math.nan})

    def step(self, closure=None):
        raise RuntimeError(
            "a watch without an optimizer reads the update from the parameters; "
            "there is no optimizer to step."
        )


class ManualSteps:
    """Mixed into `labkit.core.watch.Watch` by `manual`: the steps read from the parameters."""

    def _any_step(self, optimizer, args, kwargs) -> None:
        pass  # no optimizer to follow: a step by any optimizer is read as the loop's own

    def _start(self, model) -> None:
        self._kept, self._queued = False, False
        self._handles += [
            p.register_post_accumulate_grad_hook(self._grad_ready)
            for p in self.params
            if p.requires_grad
        ]
        self._handles.append(model.register_forward_pre_hook(self._forward))

    @guarded
    def _grad_ready(self, param) -> None:
        if not self._queued:  # once per backward: measure when all of it is done
            self._queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._backward_done)

    @guarded
    def _backward_done(self) -> None:
        self._queued = False
        self.measure_grads()
        self.plan.keep()
        self._kept = True

    @guarded
    def _forward(self, module, args) -> None:
        self._settle()

    def _settle(self) -> None:
        """Record one step if the parameters moved since the last backward."""
        if not self._kept:
            return
        self._kept = False
        unorms = list(self._norms(self.plan.diffs())) + self.plan.ready()
        if not any(float(n) > 0 for n in unorms):
            return  # no step: gradients accumulate, or the loop left the weights alone
        if self._pending is None:
            self.measure_grads()
        (gnorms, present), self._pending = self._pending, None
        grad = math.sqrt(sum(float(n) ** 2 for n, here in zip(gnorms, present) if here))
        sq = self.plan.combine(torch.stack(unorms).double().cpu().view(1, -1), len(self.params))
        update = math.sqrt(float(sq[0].sum()))  # sampled: the estimate's centre
        self.optimizer.param_groups[0]["lr"] = update / grad if update and grad else math.nan
        self._add(gnorms + unorms, present, skipped=False)

    @guarded
    def flush(self) -> None:
        self._settle()  # the last step has no next forward to reveal it
        super().flush()


_CLASSES: dict = {}


def manual(watch_cls, model: nn.Module, *, budget: int | None = None, seed: int = 0, writer=None):
    """A watch of `model` whose loop has no optimizer (``labkit.watch(model)``)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}.")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError(
            f"model {type(model).__name__} has no trainable parameter (requires_grad="
            "True); a loop without an optimizer has nothing to update."
        )
    if watch_cls not in _CLASSES:
        _CLASSES[watch_cls] = type("ManualWatch", (ManualSteps, watch_cls), {"__doc__": __doc__})
    w = _CLASSES[watch_cls](model, _NoOptimizer(params), budget=budget, seed=seed, writer=writer)
    w._start(model)
    return w
