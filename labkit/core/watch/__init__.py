"""`labkit.watch`: per-step gradient and update norms on any training loop, in one line.

    watch = labkit.watch(model, optimizer)        # hooks optimizer.step (no optimizer: watch_manual)
    for batch in batches:                         # your loop, unchanged
        optimizer.zero_grad(); loss = loss_fn(model, batch); loss.backward(); optimizer.step()
        raw.append(loss.item())
    run = watch.run(loss_raw=raw)                 # a labkit.Run, for the probes and the triage
    watch.close()                                 # removes the hooks

At every ``optimizer.step()`` a step post-hook records, per layer group (`record.group_name`)
and in total: the gradient norm (None where every gradient of the group is None, never 0;
taken before clipping, see `watch_clip`), the update norm and each param group's lr. A pre-hook
copies what the update norm needs, within a memory budget (`labkit.core.watch.budget`): exact for
models up to 10M parameters (a copy; under SGD above 1 MiB, read from its gradients) and, above,
for torch's SGD, Adam, AdamW, SparseAdam, RMSprop and Adagrad (read from the optimizer's state,
`labkit.core.watch.updates`); for other optimizers an unbiased estimate with its band
(`update_norm_bound`). The norms stay on the device as 0-d tensors (one fused
``torch._foreach_norm``), read back only by `run()` or a `writer`. `labkit.train` uses this.
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn

from . import (
    clip as watch_clip,
    follow as watch_follow,
    manual as watch_manual,
    ranks as watch_ranks,
    ring as watch_ring,
    scaler as watch_scaler,
    table as watch_table,
    writer as watch_writer,
)
from .guard import guarded, safely
from .table import lr_value as _lr
from .budget import default_budget, dense_values, nbytes
from .norms import norms as tensor_norms
from .updates import DTYPES
from ..record import group_name
from .checks import check_arguments as _check

CHUNK = 256  # steps of 0-d norms kept as tensors before one stack folds them into a block


class Watch:
    """The hooks and the per-step rows. Build it with `labkit.watch`."""

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        scaler=None,
        budget: int | None = None,
        seed: int = 0,
        writer=None,
        check_every: int = watch_ranks.EVERY,
    ):
        _check(model, optimizer, scaler, budget)
        model = watch_ranks.unwrap(model)  # DDP's `module.0` is the learner's `0`
        self._writer = None if writer is None else watch_writer.ScalarWriter(writer)
        owned = {id(p) for g in optimizer.param_groups for p in g["params"]}
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad or id(p) in owned]
        if not any(id(p) in owned for _, p in named):
            raise ValueError(
                f"the optimizer ({type(optimizer).__name__}) holds none of the "
                f"trainable parameters of model {type(model).__name__}; it was "
                "built for another model, or before the model's layers were made."
            )
        self.model_name, self.optimizer, self.scaler = type(model).__name__, optimizer, scaler
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]
        self.groups: dict[str, list[int]] = {}
        for i, n in enumerate(self.names):
            self.groups.setdefault(group_name(n), []).append(i)
        self.param_bytes = sum(nbytes(p) for p in self.params)
        self.budget = default_budget(self.param_bytes) if budget is None else int(budget)
        # half precision is summed in float32; complex parameters: the norm of their values
        self._norm_dtype = None if all(p.dtype in DTYPES for p in self.params) else torch.float32
        watch_follow.start(self, model, named, owned, seed)  # the plan; findings
        self._zero = torch.zeros((), device=self.params[0].device)
        self._multi_device = len({p.device for p in self.params}) > 1
        self._all_present = (True,) * len(self.params)
        self._rows: list[list] = []  # this chunk's rows: P grad norms, then the update norms
        self._blocks: list[torch.Tensor] = []  # earlier chunks, stacked: (CHUNK, width) each
        self._present: list[tuple] = []  # per step: which gradients were not None
        self._lrs: list = []  # per step: the lr (one param group) or a tuple of lrs
        self._scales: list = []  # with a scaler, per step: its scale (0-d tensor), or None
        self._skipped: list[bool] = []  # per step: True where optimizer.step() did not run
        self._pending = None  # (grad norms, present) measured early, e.g. before clipping
        self._marked = 0  # rows when mark_step() was last called
        self._scale_now = None
        self.started_at = time.time()
        self.stopped = None  # why the watch stopped measuring after an error of its own
        self._step_handles = [
            optimizer.register_step_pre_hook(self._pre),
            optimizer.register_step_post_hook(self._post),
        ]
        self._others: dict = {}  # other optimizers seen stepping: rebuilt from this one?
        self._closed = False
        self._stale: list = []  # hooks left in place when it stopped inside a step (_unhook)
        watch_follow.hook_rebuilds(self)  # an optimizer made again mid-run is followed
        self._handles = [watch_clip.register(self)]  # the norm before clipping (watch/clip.py)
        if scaler is not None:
            watch_scaler.wrap(self, scaler)
        dist = watch_ranks.process_group()  # two or more ranks: a check every `check_every` steps
        self._ranks = None if dist is None else watch_ranks.RankCheck(self, dist, check_every)

    @property
    def steps(self) -> int:
        return len(self._present)

    @guarded
    def measure_grads(self) -> None:
        """Measure the gradients now, for the coming step (``clip_grad_norm_`` calls it)."""
        grads = [dense_values(p.grad) for p in self.params]
        kept = [g for g in grads if g is not None]
        self._pending = (self._fill(self._norms(kept), grads), tuple(g is not None for g in grads))

    @guarded
    def mark_step(self) -> None:
        """End of one loop iteration: if the optimizer did not step since the last mark (a
        GradScaler skip without ``scaler=``, a step left out), record a row with zero update."""
        if self.steps == self._marked:
            self._no_step_row(skipped=True)
        self._marked = self.steps

    def _any_step(self, optimizer, args, kwargs) -> None:
        """Every optimizer's step in this process: one that replaces the watched optimizer
        (made again mid-run over the same tensors or more) is followed from this step on."""
        if optimizer is not self.optimizer and self.stopped is None:
            self._adopt(optimizer)

    @guarded
    def _adopt(self, optimizer) -> None:
        if watch_follow.rebuilt(self, optimizer):
            watch_follow.adopt(self, optimizer)

    @guarded
    def _pre(self, optimizer, args, kwargs) -> None:
        groups = optimizer.param_groups  # a param group added since the last step joins here
        if len(groups) != 1 or len(groups[0]["params"]) != self._held:
            watch_follow.follow(self)
        if watch_follow.storage(self) != self._where:  # `p.data = ...` since the last step
            watch_follow.moved(self)
        if self._outside_at is not None:  # parameters outside the optimizer moved meanwhile?
            watch_follow.outside(self)
        if self._ring is None and self._ring_ok:  # built at the first step, ranks known
            self._ring = watch_ring.make(self)
            self._ring_ok = self._ring is not None
        if self._ring is not None:
            self._ring.keep()
        else:
            self.plan.keep()

    @guarded
    def _post(self, optimizer, args, kwargs) -> None:
        ring = self._ring
        if ring is not None and self._pending is None:  # a small model: norms taken later
            try:  # refused whole, before anything is written, for a None or sparse gradient
                full = ring.put([p.grad for p in self.params])
            except (TypeError, RuntimeError):
                pass  # that step is measured now, as a row of its own
            else:
                if full:
                    self.fold()
                self._step_done(self._all_present, False)
                return
        grads = [dense_values(p.grad) for p in self.params]
        diffs = self.plan.diffs() if ring is None else ring.diffs()
        if self._fast and self._pending is None and not any(g is None for g in grads):
            # the common case, kept lean: one fused norm call, and the formula's own work
            both = grads + diffs
            found = torch._foreach_norm(both) if self._fused else tensor_norms(both)
            if self.plan.formula is None:
                self._add(found, self._all_present, False)
                return
            gnorms = found[: len(grads)]  # the step used these very gradients
            known = dict(zip(self._ids, gnorms))
            self._add([*found, *self.plan.ready(known)], self._all_present, False)
            return
        known = None
        if self._pending is not None:  # measured before a clip: not what the step used
            (gnorms, present), self._pending = self._pending, None
            unorms = list(self._norms(diffs))
        else:
            present = self._all_present
            if any(g is None for g in grads):
                present = tuple(g is not None for g in grads)
            # one fused call: the gradients the plan does not sample, and the copies' updates
            kept = [grads[i] for i in self._dense if grads[i] is not None]
            norms = self._norms(kept + diffs)
            it, gnorms = iter(norms[: len(kept)]), [self._zero] * len(grads)
            for i in self._dense:
                if grads[i] is not None:
                    gnorms[i] = next(it)
            for i, s in self.plan.samples.items():  # from their block norms, before the step
                if grads[i] is not None and s.grad_norm is not None:
                    gnorms[i] = s.grad_norm
            unorms = list(norms[len(kept) :])
            if self.plan.formula is not None:  # the step used these very gradients
                known = {id(self.params[i]): gnorms[i] for i in self._dense if present[i]}
        self._add(gnorms + unorms + self.plan.ready(known), present, skipped=False)

    @guarded
    def _no_step_row(self, skipped: bool) -> None:
        if self._pending is not None:
            (gnorms, present), self._pending = self._pending, None
        else:
            grads = [dense_values(p.grad) for p in self.params]
            present = tuple(g is not None for g in grads)
            gnorms = self._fill(self._norms([g for g in grads if g is not None]), grads)
        if self.scaler is not None and self._scale_now is None:
            self._scale_now = watch_scaler.read_scale(self)
        self._add(gnorms + self.plan.blank(), present, skipped=skipped)

    def _add(self, row, present: tuple, skipped: bool) -> None:
        self.fold()  # the ring's steps came first
        self._rows.append(row)
        if len(self._rows) == CHUNK:  # fold 0-d tensors into one block: bounded host memory
            self._blocks.append(self._stack(self._rows))
            self._rows = []
        self._step_done(present, skipped)

    def fold(self) -> None:
        """The ring's steps (`labkit.core.watch.ring`), if it holds any, as one block after
        the rows before."""
        if self._ring is None or not self._ring.n:
            return
        if self._rows:
            self._blocks.append(self._stack(self._rows))
            self._rows = []
        self._blocks.append(self._ring.block())

    def _step_done(self, present: tuple, skipped: bool) -> None:
        self._present.append(present)
        groups = self.optimizer.param_groups
        lr = groups[0]["lr"] if len(groups) == 1 else tuple(_lr(g["lr"]) for g in groups)
        self._lrs.append(lr if type(lr) is float else _lr(lr))
        self._skipped.append(skipped)
        if self.scaler is not None:
            self._scales.append(self._scale_now)
        if self._writer is not None:  # TensorBoard: every `every` steps, one host read
            watch_writer.guarded(self, flush=False)
        if self._ranks is not None:
            self._ranks.step_done(self)
        if self._outside:
            self._outside_at = [p._version for _, p in self._outside]

    def _norms(self, tensors: list) -> list:
        return tensor_norms(tensors, self._norm_dtype) if tensors else []

    def _fill(self, norms, grads) -> list:
        """One norm per parameter: a placeholder 0 where the gradient was None."""
        it = iter(norms)
        return [self._zero if g is None else next(it) for g in grads]

    def _stack(self, rows: list[list]) -> torch.Tensor:
        flat = [n for row in rows for n in row]
        if self._multi_device:
            flat = [n.to(self._zero.device) for n in flat]
        return torch.stack(flat).view(len(rows), -1)  # (steps, P + updates)

    # ---- reading (watch/table.py; the writer: watch/writer.py) -------
    def columns(self) -> dict[str, list]:
        """Total and per-group norms, the lr, and (with a scaler) amp_scale and skipped."""
        return watch_table.columns(self)

    def describe(self) -> dict:
        """What `run.meta["watch"]` says: the budget, and which groups are estimated, how."""
        return watch_table.describe(self)

    def run(self, loss_raw, *, loss_reported=None, batch_id=None, per_step: str = "mean", **meta):
        """The `labkit.Run` of the steps watched so far; how losses line up with steps under
        gradient accumulation, and what `meta` takes, is `labkit.core.watch.table.to_run`."""
        self.flush()
        return watch_table.to_run(
            self,
            loss_raw,
            loss_reported=loss_reported,
            batch_id=batch_id,
            per_step=per_step,
            **meta,
        )

    def flush(self) -> None:
        """Write the steps not yet written to the `writer` given to `labkit.watch`, if any."""
        watch_writer.guarded(self, flush=True)

    def close(self) -> None:
        """Remove the hooks (and the scaler's wrapper), whatever the writer does; the rows
        stay readable."""
        try:
            self.flush()
            if self._ranks is not None and self.stopped is None:
                safely(self, self._ranks.close, self)  # the last steps, in flight too
        finally:
            self._unhook()

    def _unhook(self, inside_step: bool = False) -> None:
        """Remove every hook. `inside_step`: the watch stopped on an error of its own inside
        a step hook, while torch loops over the optimizer's hooks; removing one there made the
        learner's step raise "OrderedDict mutated during iteration" (and skip the learner's
        own hooks after it). So the optimizer's hooks stay, doing nothing, until `close()` or
        the next watch (`follow.hook_rebuilds`), and so does the global hook."""
        self._closed = True
        if inside_step:
            gone, self._stale = self._handles, self._stale + self._step_handles
        else:
            gone, self._stale = self._handles + self._step_handles + self._stale, []
            watch_follow.unhook_global(self)
        for h in gone:
            h.remove()
        self._handles, self._step_handles = [], []
        watch_scaler.unwrap(self.scaler)

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def __repr__(self) -> str:
        return watch_table.text(self)


def watch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer | None = None,
    *,
    scaler=None,
    budget: int | None = None,
    writer=None,
    check_every: int = watch_ranks.EVERY,
) -> Watch:
    """Hook `optimizer` so that every step records gradient (before any clipping) and update
    norms of `model`; with no optimizer, read a loop's own update from the parameters
    (`labkit.core.watch.manual`). `scaler`: your ``torch.amp.GradScaler``, so that a step it
    skips (inf/NaN gradients: no ``optimizer.step()``) is recorded, with ``skipped=True``, the
    scale and an update of exactly 0. `budget`: bytes kept beside the parameters (default: all
    of them up to 40 MiB, copied: exact, except under SGD above 1 MiB, whose update is read
    from its gradients; above 40 MiB, 5% of them, for the optimizers whose update cannot be
    read from their state: those are sampled, with `update_norm_bound` beside the value; see
    `labkit.core.watch.budget`). Make the watch once the model is on its
    device and the optimizer is built; `watch.findings` names, once, parameters that can
    never move. `writer`: a TensorBoard ``SummaryWriter`` (`labkit.core.watch.writer`).
    Inside a torch.distributed run (DDP), every `check_every` steps the ranks compare their
    parameters in one small all-gather (`labkit.core.watch.ranks`).
    """
    if optimizer is None and scaler is None:
        return watch_manual.manual(Watch, model, budget=budget, writer=writer)
    if not isinstance(check_every, int) or isinstance(check_every, bool) or check_every < 1:
        raise ValueError(f"check_every={check_every!r}: give a whole number of steps, 1 or more.")
    return Watch(
        model, optimizer, scaler=scaler, budget=budget, writer=writer, check_every=check_every
    )
