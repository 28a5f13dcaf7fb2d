"""The replay's readings beside ``step()``: a loop without torch.optim, and what any loop does
between ``backward()`` and ``step()`` and between two steps (the loop audit).

The loop audit, for every optimizer step (`before_step`, `after_step`):
- ``over_produced``: with several ``backward()`` calls before a step, the norm of the gradient
  the step uses over the norm of what those calls added, summed: 1 for gradients summed and
  used as they are, 1/k for the mean of k (one process's step on the whole batch);
- ``edit``: the gradients' norm at step time over their norm when the last ``backward()`` left
  them (1 when nothing touches them; a clip, a division, an accumulation mistake changes it);
- ``outside``: how far the parameters moved since the previous step ended, by something other
  than the optimizer (a re-initialisation, a hand-written projection), relative to their norm,
  and how many tensors moved;
- ``descent``: the cosine between the update and minus the gradient (above 0: the step goes
  down the loss, to first order; below 0: it climbs it).
`watch_schedulers` records every LR scheduler's ``step()`` while the replay is open.

A loop without torch.optim:

A loop that updates with ``p.data.add_(p.grad, alpha=-lr)`` calls no ``optimizer.step()``,
so the replay's step hooks never fire. While no optimizer has been seen, `Replay` calls:
- `after_backward` at the end of every ``backward()``: the gradients as backward left them
  (before any clipping) and a copy of the parameters;
- `settle` at the start of the next top-level forward (and when the replay closes): if the
  parameters moved since that copy, one step is recorded as the optimizer hooks would have
  recorded it, with the update read as the difference and, for the learning rate, the
  step size plain SGD would have taken (`own_carry.effective_lr`).
"""

from __future__ import annotations

import math

import torch

import torch.optim.lr_scheduler as lr_scheduler

from .carry import effective_lr

SCHEDULER_SETTINGS = ("mode", "factor", "patience", "threshold", "step_size", "gamma", "T_max")


def watch_schedulers(rp):
    """Record each scheduler.step() into ``rp.schedules``; returns the function that undoes it."""
    classes = [lr_scheduler.LRScheduler, lr_scheduler.ReduceLROnPlateau]
    originals = [c.__dict__["step"] for c in classes]

    def wrap(orig):
        def step(sched, *args, **kwargs):
            metric = args[0] if args else kwargs.get("metrics")
            try:
                value = None if metric is None else float(metric)
            except (TypeError, ValueError, RuntimeError):
                value = None
            rp.schedules.append(
                {
                    "id": id(sched),
                    "kind": type(sched).__name__,
                    "settings": {
                        k: getattr(sched, k) for k in SCHEDULER_SETTINGS if hasattr(sched, k)
                    },
                    "at": len(rp.steps),
                    "metric": value,
                }
            )
            return orig(sched, *args, **kwargs)

        return step

    for c, orig in zip(classes, originals):
        c.step = wrap(orig)

    def undo():
        for c, orig in zip(classes, originals):
            c.step = orig

    return undo


def _norms(tensors) -> list[float]:
    kept = [t.detach().float() for t in tensors]
    return [float(n) for n in torch._foreach_norm(kept)] if kept else []


def before_backward(rp, params) -> None:
    """The gradients as they stand before a backward(), for what it adds (`after_backward_norms`)."""
    rp._grad_before = {id(p): p.grad.detach().clone() for p in params if p.grad is not None}


def after_backward_norms(rp, params) -> None:
    """Each parameter's gradient norm as backward() left it, for `before_step`'s ``edit``; and
    what the backward() calls since the last step added, summed (``produced``)."""
    with_grad = [p for p in params if p.grad is not None]
    rp._grad_after = dict(zip(map(id, with_grad), _norms([p.grad for p in with_grad])))
    before, produced = getattr(rp, "_grad_before", {}), rp.__dict__.setdefault("_produced", {})
    for p in with_grad:
        added = p.grad.detach() - before[id(p)] if id(p) in before else p.grad.detach()
        produced[id(p)] = produced[id(p)] + added if id(p) in produced else added.clone()


def before_step(rp, optimizer, params, grads) -> None:
    step = rp.steps[-1]
    after = getattr(rp, "_grad_after", {})
    pairs = [(after[id(p)], g) for p, g in zip(params, grads) if g is not None and id(p) in after]
    if pairs and rp._since_step:
        now = _norms([g for _, g in pairs])
        then = math.sqrt(sum(a * a for a, _ in pairs))
        step["edit"] = math.sqrt(sum(n * n for n in now)) / then if then else None
    produced = getattr(rp, "_produced", {})
    made = [
        (produced[id(p)], g) for p, g in zip(params, grads) if g is not None and id(p) in produced
    ]
    if made and rp._since_step >= 2:  # several backward() calls: the step's gradient over their sum
        total = math.sqrt(sum(n * n for n in _norms([m for m, _ in made])))
        used = math.sqrt(sum(n * n for n in _norms([g for _, g in made])))
        step["over_produced"] = used / total if total else None
    rp._produced = {}
    kept = getattr(rp, "_after_step", None)
    if kept is not None and kept[0] == id(optimizer) and len(kept[1]) == len(params):
        moved = _norms([p.detach() - a for p, a in zip(params, kept[1])])
        size = math.sqrt(sum(n * n for n in _norms(kept[1]))) or 1.0
        step["outside"] = math.sqrt(sum(n * n for n in moved)) / size
        step["outside_tensors"] = sum(1 for n in moved if n > 0)
    rp._grad_after = {}


def descent(grads, deltas) -> float | None:
    """The cosine between the update and minus the gradient (None without both)."""
    pairs = [(g.detach().float(), d) for g, d in zip(grads, deltas) if g is not None]
    if not pairs:
        return None
    dot = sum(float((g * d).sum()) for g, d in pairs)
    size = math.sqrt(sum(float(g.pow(2).sum()) for g, _ in pairs)) * math.sqrt(
        sum(float(d.pow(2).sum()) for _, d in pairs)
    )
    return -dot / size if size and math.isfinite(size) else None


def after_step(rp, optimizer, params, grads, deltas) -> None:
    rp.steps[-1]["descent"] = descent(grads, deltas)
    rp._after_step = (id(optimizer), [p.detach().clone() for p in params])


def after_backward(rp) -> None:
    params = [p for p in rp.watched() if p.requires_grad]
    grads = [p.grad for p in params]
    kept = [g.detach().float() for g in grads if g is not None]
    norms = [float(n) for n in torch._foreach_norm(kept)] if kept else []
    rp._manual = {
        "params": params,
        "before": [p.detach().clone() for p in params],
        "grads_none": len(grads) - len(kept),
        "grads_zero": sum(1 for n in norms if n == 0.0),
        "grad_norm": math.sqrt(sum(n * n for n in norms)) if norms else None,
        "nonfinite_grad": any(not math.isfinite(n) for n in norms),
        "grads": [None if g is None else g.detach().clone() for g in grads],
    }


def settle(rp) -> None:
    kept = getattr(rp, "_manual", None)
    if kept is None or rp.optimizers:
        return
    params, before = kept["params"], kept["before"]
    moved = [p.detach().float() - b.float() for p, b in zip(params, before)]
    norms = [float(n) for n in torch._foreach_norm(moved)] if moved else []
    update = math.sqrt(sum(n * n for n in norms))
    if not update:
        return  # not a step yet (gradients accumulating), or a step that moved nothing
    rp._manual = None
    rp.steps.append(
        {
            "optimizer": None,
            "lr": [effective_lr(update, kept["grad_norm"])],
            "n_params": len(params),
            "grads_none": kept["grads_none"],
            "grads_zero": kept["grads_zero"],
            "grad_norm": kept["grad_norm"],
            "nonfinite_grad": kept["nonfinite_grad"],
            "backwards": rp._since_step,
            "update_norm": update,
            "loss_after": None,
            "manual": True,
            "descent": descent(kept["grads"], moved),
        }
    )
    rp._since_step, rp._stepped = 0, True
    if rp.after_step_loss and rp._last_input is not None:
        batch = rp._batches.get(rp._last_input[0])
        if batch is not None:
            rp.steps[-1]["loss_after"] = rp._loss_now(rp._last_input[1], batch)
