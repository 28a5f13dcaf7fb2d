"""`labkit.watch` follows the optimizer: a param group added after the watch was made
(``optimizer.add_param_group``, as when a layer is unfrozen mid-run) is measured from the
step it joins, and the finding that its parameters are "not in the optimizer" is withdrawn.
A parameter the watch did not measure at first (frozen, and not in the optimizer) joins its
tensors, after the ones already measured, so earlier columns keep their places.

Each time the optimizer's parameters change, the rows so far are closed as one segment with
the `Plan` that measured them and its width, and a new plan (the same budget and seed)
measures the rest; `watch_table.columns` combines each segment with its own plan, and a
tensor that joined later reads 0 (update) and no gradient before it joined.
"""

from __future__ import annotations

import torch

from .budget import Plan
from .norms import FUSED_MAX
from .updates import DTYPES
from .checks import NOT_HELD, findings, moved_elsewhere, not_held


def owned_by(optimizer) -> set:
    """The ids of the tensors `optimizer` holds, in every param group."""
    return {id(p) for g in optimizer.param_groups for p in g["params"]}


def held(optimizer) -> int:
    """How many tensors the optimizer holds: a cheap test, once per step, for a change."""
    return sum(len(g["params"]) for g in optimizer.param_groups)


def start(w, model, named, owned: set, seed: int) -> None:
    """The first plan, and what `follow` compares against."""
    w._model, w._named, w._seed, w._held = model, named, seed, held(w.optimizer)
    w._done = []  # closed segments: (plan, blocks, how many tensors they measured)
    _plan(w, owned)


def _plan(w, owned: set) -> None:
    w.plan = Plan(
        w.params,
        [id(p) in owned for p in w.params],
        w.budget,
        w._seed,
        optimizer=w.optimizer,
        scaler=w.scaler,
    )
    # gradient norms from the fused call: every parameter the plan does not sample
    w._dense = [i for i in range(len(w.params)) if i not in w.plan.samples]
    w._fast = not w.plan.samples and w._norm_dtype is None
    w._ids = [id(p) for p in w.params]
    # small real tensors only: one fused norm call, without `norms`' look at each tensor
    w._fused = all(p.numel() <= FUSED_MAX and not p.is_complex() for p in w.params)
    w._ring, w._ring_ok = None, True  # a small model's rows, kept (watch/ring.py): at a step
    w._where = storage(w)  # `moved` re-plans when a tensor's storage changes
    w.findings = findings(w._model, w._named, owned)
    # parameters outside the optimizer: a finding says no step moves them, unless they move
    w._outside = [(n, p) for n, p in w._named if p.requires_grad and id(p) not in owned]
    w._outside_at = None  # their versions after the last step (`outside`)


def follow(w) -> None:
    """Before a step: if the optimizer's parameters changed, close the segment and re-plan."""
    now = held(w.optimizer)
    if now == w._held:
        return
    w._held = now
    _close(w)
    owned = owned_by(w.optimizer)
    _join(w, owned)
    _plan(w, owned)


_GLOBAL: list = []  # (a weak reference to a watch, its hook among torch's global pre-hooks)


def hook_rebuilds(w) -> None:
    """Every optimizer's step in the process reaches `w._any_step` (torch's global pre-hook),
    through a weak reference: torch's registry would otherwise keep a watch that was dropped
    unclosed alive, with its model. `close()` removes the hook (`unhook_global`); a watch
    dropped unclosed, or stopped inside a step, loses it here, when the next watch is made:
    never while a step may be reading the registry (a watch collected or stopped inside
    another optimizer's step would change the dict torch is iterating over: "OrderedDict
    mutated during iteration")."""
    import weakref

    from torch.optim.optimizer import register_optimizer_step_pre_hook

    for ref, handle in list(_GLOBAL):
        watch = ref()
        if watch is None or watch._closed:
            handle.remove()
            _GLOBAL.remove((ref, handle))
            if watch is not None:  # stopped inside a step and never closed: its hooks too
                for h in watch._stale:
                    h.remove()
                watch._stale = []
    ref = weakref.ref(w)

    def any_step(optimizer, args, kwargs):
        watch = ref()
        if watch is not None and not watch._closed:
            watch._any_step(optimizer, args, kwargs)

    _GLOBAL.append((ref, register_optimizer_step_pre_hook(any_step)))


def unhook_global(w) -> None:
    """Remove `w`'s global hook now: `close()`, called by the learner between steps, puts
    torch's registry back as it was before the watch."""
    for ref, handle in list(_GLOBAL):
        if ref() is w:
            handle.remove()
            _GLOBAL.remove((ref, handle))


def rebuilt(w, optimizer) -> bool:
    """Whether `optimizer`, which is not the watched one, holds every tensor the watched one
    holds: an optimizer made again mid-run (after unfreezing a layer, or with a new learning
    rate), which the watch then follows (`adopt`). One that holds only some of them (a
    SparseAdam beside the watched Adam) is another optimizer, not a rebuilt one."""
    said = w._others.get(id(optimizer))
    if said is None or said[0] is not optimizer:
        mine = owned_by(w.optimizer)
        theirs = owned_by(optimizer)
        said = w._others[id(optimizer)] = (optimizer, bool(mine) and mine <= theirs)
    return said[1]


def adopt(w, optimizer) -> None:
    """Before `optimizer`'s step: follow it instead of the watched optimizer, which it was
    made to replace (`rebuilt`). The steps so far close as one segment; the hooks move to the
    new optimizer (registered now, they run for this very step: torch reads its hooks after
    the global ones) and a new plan measures the rest, tensors it adds included."""
    _close(w)
    for h in w._step_handles:
        h.remove()
    w.optimizer, w._others = optimizer, {}
    w._step_handles = [
        optimizer.register_step_pre_hook(w._pre),
        optimizer.register_step_post_hook(w._post),
    ]
    w._held = held(optimizer)
    owned = owned_by(optimizer)
    _join(w, owned)
    _plan(w, owned)


def outside(w) -> None:
    """Before a step: parameters outside the optimizer whose values changed in place since
    the last step (their version counters moved) are moved by something else, so the finding
    that no step moves them is withdrawn for them and replaced by one that says so."""
    at, w._outside_at = w._outside_at, None
    moved = [n for (n, p), v in zip(w._outside, at) if p._version != v]
    if not moved:
        return
    w._outside = [(n, p) for n, p in w._outside if n not in moved]
    kept = [n for n, _ in w._outside]
    for i, f in enumerate(w.findings):
        if NOT_HELD in f:
            w.findings[i : i + 1] = [not_held(kept)] if kept else []
            break
    w.findings.append(moved_elsewhere(moved))


def storage(w) -> list:
    """Where each watched tensor's values live: a cheap test, once per step, for new storage."""
    return list(map(_PTR, w.params))


_PTR = torch.Tensor.data_ptr


def moved(w) -> None:
    """Before a step: a watched tensor was given new storage (``p.data = ...``, or a dtype or
    device changed after the watch was made). The plan's copies and the ring read each tensor
    through a view made once, which would keep reading the old storage (its update then reads
    0): the segment closes and a new plan reads the tensors where they live now."""
    from .budget import nbytes

    _close(w)
    w.param_bytes = sum(nbytes(p) for p in w.params)
    w._norm_dtype = None if all(p.dtype in DTYPES for p in w.params) else torch.float32
    w._multi_device = len({p.device for p in w.params}) > 1
    w._zero = torch.zeros((), device=w.params[0].device)
    _plan(w, owned_by(w.optimizer))


def _close(w) -> None:
    """The rows so far, closed as one segment with the plan that measured them."""
    w.fold()
    if w._rows:
        w._blocks.append(w._stack(w._rows))
        w._rows = []
    if w._blocks:
        w._done.append((w.plan, w._blocks, len(w.params)))
        w._blocks = []


def _join(w, owned: set) -> None:
    """Add the model's parameters the optimizer now holds and the watch did not measure."""
    known = {id(p) for p in w.params}
    new = [(n, p) for n, p in w._model.named_parameters() if id(p) in owned and id(p) not in known]
    if not new:
        return
    from ..record import group_name
    from .budget import nbytes

    for n, p in new:
        w.groups.setdefault(group_name(n), []).append(len(w.params))
        w.names.append(n)
        w.params.append(p)
    w._named = w._named + new
    w.param_bytes += sum(nbytes(p) for _, p in new)
    w._all_present = (True,) * len(w.params)
    w._multi_device = len({p.device for p in w.params}) > 1
    if any(p.dtype not in DTYPES for _, p in new):
        w._norm_dtype = torch.float32


def segments(w) -> list:
    """(plan, blocks, width) of every segment, the open one last (its rows stacked)."""
    w.fold()
    return w._done + [(w.plan, w._blocks + ([w._stack(w._rows)] if w._rows else []), len(w.params))]
