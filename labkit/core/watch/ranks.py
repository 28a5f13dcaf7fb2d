"""`labkit.watch` on a torch.distributed run: every rank watches its own steps, and every
`every` steps the ranks compare what they hold.

Made inside an initialised process group of two or more ranks, a watch adds no collective
to a step. At its start, every `every` optimizer steps (default 50) and at `close`, it makes
one `all_gather` of a small float64 summary per rank: for each layer group, the sum and the
sum of squares of its parameters (a fingerprint), and the last step's gradient and update
norms. The model's floating-point buffers (BatchNorm's running statistics) are compared the
same way inside the next forward, once DDP has broadcast rank 0's (a forward pre-hook).
Under DistributedDataParallel the ranks hold the same parameters, bit for bit, at
every step; a group whose fingerprints differ by more than `TOLERANCE` (relative) is a
finding, said once: between which checks the ranks diverged, where, by how much, and
whether the gradients already differed (DDP's gradient sync was skipped) or only the
updates (an optimizer that differs per rank).

Every rank keeps its own per-step table and all the checks (the all-gather hands every rank
every summary, so no rank is special and losing rank 0 loses nothing); `run.meta["watch"]
["ranks"]` has them. Bytes exchanged per check: 8 x (1 + 4 x groups) per rank, and 16 more for the buffers.

All ranks must make the watch, step and close it together, as they run DDP's collectives
together; a rank that stops early leaves the others waiting in the check until the process
group's timeout (`init_process_group(..., timeout=...)`).
"""

from __future__ import annotations

import time

import torch
import torch.nn as nn

from .guard import safely

EVERY = 50  # optimizer steps between two checks
WAIT_S = 30.0  # at close, how long to wait for the other ranks' answers to this rank's checks
TOLERANCE = 1e-6  # relative difference beyond which two ranks' groups differ; DDP's are 0
WRAPPERS = ("DistributedDataParallel", "FullyShardedDataParallel", "DataParallel")


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside a DDP (or FSDP, DataParallel) wrapper and inside `torch.compile`'s
    (its `_orig_mod`, in either order), so groups read `0`, not `module.0` or
    `_orig_mod.0`; any other model as it is."""
    while True:
        name = type(model).__name__
        inner = getattr(model, "module" if name in WRAPPERS else "_orig_mod", None)
        if name not in WRAPPERS and name != "OptimizedModule" or not isinstance(inner, nn.Module):
            return model
        model = inner


def process_group():
    """torch.distributed when a process group of two or more ranks is running, else None."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist
    return None


class RankCheck:
    """The cross-rank check of one watch: a summary all-gathered every `every` steps.

    The all-gathers go on a process group of the watch's own (gloo, CPU tensors), made once
    by every rank with the watch, and are asynchronous: a check is sent at its step and read
    at a later step once every rank has sent its own. So the check never waits on the
    slowest rank inside a step, never mixes with DDP's own collectives, and a rank that
    makes fewer optimizer steps than the others (a step behind ``if rank == 0``) cannot hang
    the run: at `close` the watch waits at most `wait_s` for the checks still unanswered,
    then says which ones and stops comparing.
    """

    def __init__(self, w, dist, every: int = EVERY, wait_s: float | None = None):
        self.dist, self.every = dist, every
        self.wait_s = _wait_s(dist) if wait_s is None else wait_s
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.group = _watch_group(dist)  # every rank makes the watch together
        self.checks: list[dict] = []  # {"step", "max_rel_diff": {group: d}, "grads_differ", ...}
        self.finding: str | None = None  # the parameters' drift, said once
        self.buffer_finding: str | None = None  # the buffers' (running statistics), said once
        self.unanswered: str | None = None  # checks the other ranks never answered, said once
        self.buffers = [b for b in w._model.buffers() if b.is_floating_point()]
        self.last_step = None  # the step of the last check sent
        self._pending: list = []  # (kind, work, gathered, step), oldest first
        self._buffers_due = False
        if self.buffers:  # BatchNorm's running statistics and the like, checked in a forward

            def before_forward(module, args) -> None:  # returns None: the input is untouched
                if self._buffers_due:
                    safely(w, self._send_buffers, w)

            w._handles.append(w._model.register_forward_pre_hook(before_forward))
        self.check(w)  # at the start: the ranks should begin equal (DDP broadcasts rank 0's)

    def step_done(self, w) -> None:
        if self._pending:
            self._drain(w, None)  # what has arrived since: no wait
        if w.steps % self.every == 0:
            self.check(w)

    def _summary(self, w) -> torch.Tensor:
        groups = list(w.groups.values())
        with torch.no_grad():
            fp = [_fingerprint(ps) for ps in ([w.params[i] for i in idx] for idx in groups)]
            last = _last_row(w)
        norms = torch.zeros(2 * len(groups), dtype=torch.float64)
        if last is not None:
            grads, updates = last
            for k, idx in enumerate(groups):
                norms[2 * k] = grads[idx].pow(2).sum().sqrt()
                norms[2 * k + 1] = updates[idx].pow(2).sum().sqrt()
        head = torch.tensor([float(w.steps)], dtype=torch.float64)
        return torch.cat([head, torch.stack(fp).flatten().cpu(), norms])

    def _send(self, kind: str, mine: torch.Tensor, step: int) -> None:
        """All-gather `mine` (CPU, float64) on the watch's group, without waiting."""
        if self.unanswered is not None:
            return  # the ranks fell out of step: no more checks
        gathered = [torch.empty_like(mine) for _ in range(self.world)]
        work = self.dist.all_gather(gathered, mine, group=self.group, async_op=True)
        self._pending.append((kind, work, gathered, step))

    def check(self, w) -> None:
        """Send this step's summary; it is compared once every rank's has arrived."""
        self.last_step = int(w.steps)
        self._send("params", self._summary(w), self.last_step)
        self._buffers_due = bool(self.buffers)  # compared at the next forward, after DDP's sync

    def _send_buffers(self, w) -> None:
        """Inside the model's next forward, once DDP has broadcast rank 0's buffers (when it
        does): the buffers' fingerprints."""
        self._buffers_due = False
        with torch.no_grad():
            fp = _fingerprint(self.buffers).cpu()
        self._send("buffers", fp, self.last_step)

    def _drain(self, w, wait_s: float | None) -> None:
        """Compare every check whose all-gather has completed, oldest first; with `wait_s`,
        wait up to that long for the rest, then say which never got an answer."""
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while self._pending:
            kind, work, gathered, step = self._pending[0]
            if not work.is_completed():
                if deadline is None:
                    return
                while not work.is_completed() and time.monotonic() < deadline:
                    time.sleep(0.005)
                if not work.is_completed():
                    self._give_up(w, step, f"waited {self.wait_s:g} s")
                    return
            try:
                work.wait()
            except RuntimeError as exc:  # another rank left: its end of the group closed
                closed = "closed" in str(exc).lower()
                self._give_up(w, step, "another rank closed its end" if closed else str(exc)[:120])
                return
            self._pending.pop(0)
            rows = torch.stack(gathered)
            self._compare(w, rows) if kind == "params" else self._compare_buffers(w, rows)

    def _give_up(self, w, step: int, why: str) -> None:
        behind = len(self._pending)
        self._pending = []
        self.unanswered = (
            f"the other ranks did not answer this rank's check at step {step} ({why}; "
            f"{behind} check(s) unanswered): either the ranks did not make the same number "
            f"of optimizer steps (this rank made {w.steps}; optimizer.step() on some ranks "
            "only?) or another rank stopped or fell behind; the checks stopped there."
        )
        w.findings.append(self.unanswered)

    def _compare(self, w, rows: torch.Tensor) -> None:
        names, n = list(w.groups), len(w.groups)
        counts = [sum(w.params[i].numel() for i in idx) for idx in w.groups.values()]  # may grow
        diff = _rel_diff(rows[:, 1 : 1 + 2 * n].view(self.world, n, 2), counts)
        norms = rows[:, 1 + 2 * n :].view(self.world, n, 2)
        entry = {
            "step": int(rows[self.rank, 0]),
            "steps_per_rank": [int(s) for s in rows[:, 0].tolist()],
            "max_rel_diff": dict(zip(names, diff.tolist())),
            "grads_differ": _differ(norms[:, :, 0]),
            "updates_differ": _differ(norms[:, :, 1]),
        }
        self.checks.append(entry)
        if self.finding is None and float(diff.max()) > TOLERANCE:
            self.finding = _finding(self.checks, names, diff)
            w.findings.append(self.finding)

    def _compare_buffers(self, w, rows: torch.Tensor) -> None:
        fp = rows.view(self.world, 1, 2)
        d = float(_rel_diff(fp, [sum(b.numel() for b in self.buffers)])[0])
        entry = next((c for c in reversed(self.checks) if "buffers_rel_diff" not in c), None)
        if entry is None:
            return
        entry["buffers_rel_diff"] = d
        if self.buffer_finding is None and d > TOLERANCE:
            params = max(entry["max_rel_diff"].values(), default=0.0)
            self.buffer_finding = _buffer_finding(self.checks, d, params)
            w.findings.append(self.buffer_finding)

    def close(self, w) -> None:
        """The last steps' check, if due, then every check still in flight, compared."""
        if self.last_step != w.steps and self.unanswered is None:
            self.check(w)
        self._drain(w, self.wait_s)
        _OLD_GROUPS.append(self.group)

    def describe(self) -> dict:
        return {
            "world_size": self.world,
            "rank": self.rank,
            "every": self.every,
            "tolerance": TOLERANCE,
            "checks": list(self.checks),
            **({"unanswered": self.unanswered} if self.unanswered else {}),
        }


def _wait_s(dist) -> float:
    """`WAIT_S`, or a third of the process group's collective timeout if that is shorter: the
    other ranks, waiting in their next collective for this one, must not time out first."""
    try:
        backend = dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu"))
        return min(WAIT_S, backend.options._timeout.total_seconds() / 3)
    except Exception:  # noqa: BLE001 - a backend that does not say: the default
        return WAIT_S


_OLD_GROUPS: list = []  # the groups of closed watches, destroyed once every rank is past them


def _watch_group(dist):
    """A gloo group for this watch's checks alone, made by every rank together.

    A group of its own per watch: a check another rank never answered (one that stopped
    stepping) stays queued in its group and can never pair with a later watch's. The groups
    of earlier watches are destroyed here, once the new group exists: every rank has made
    it, so every rank has closed the watches before it (a gloo group's end is this rank's).
    """
    group = dist.new_group(backend="gloo")
    while _OLD_GROUPS:
        old = _OLD_GROUPS.pop()
        try:
            dist.destroy_process_group(old)
        except Exception:  # noqa: BLE001 - already gone with its process group: nothing to free
            pass
    return group


def _rel_diff(fp: torch.Tensor, counts: list) -> torch.Tensor:
    """(world, k, 2) fingerprints -> per k, the largest relative difference from rank 0's."""
    scale = fp[0, :, 1].sqrt() * torch.tensor(counts, dtype=torch.float64).sqrt()
    d_sum = (fp[:, :, 0] - fp[0, :, 0]).abs() / scale.clamp_min(1e-300)
    d_sq = (fp[:, :, 1] - fp[0, :, 1]).abs() / fp[0, :, 1].clamp_min(1e-300)
    return torch.maximum(d_sum, d_sq).max(0).values


def _fingerprint(tensors: list) -> torch.Tensor:
    """The float64 sum and sum of squares of `tensors`: equal on ranks that hold equal ones."""
    data = [t.detach() for t in tensors]  # summed in float64 as they are read: no copies
    sums = torch.stack([t.sum(dtype=torch.float64) for t in data]).sum()
    squares = torch.stack(torch._foreach_norm(data, 2, dtype=torch.float64)).square().sum()
    return torch.stack([sums, squares])


def _last_row(w):
    """The last step's (grad norms, update norms) per tensor, in float64 on the CPU."""
    P = len(w.params)
    if w._rows:
        row = torch.stack([n.to(w._zero.device) for n in w._rows[-1]]).double().cpu()
    elif w._blocks:
        row = w._blocks[-1][-1].double().cpu()
    else:
        return None
    at = sum(b.shape[0] for b in w._blocks) + len(w._rows) - 1  # the plan's row
    return row[:P], w.plan.combine(row[P:].view(1, -1), P, first=at)[0][0].sqrt()


def _differ(values: torch.Tensor) -> bool:
    """Whether any rank's norms differ from rank 0's beyond TOLERANCE (relative)."""
    return bool(((values - values[0]).abs() > TOLERANCE * values[0].abs().clamp_min(1e-12)).any())


def _when(checks: list[dict]) -> str:
    now, before = checks[-1]["step"], checks[-2]["step"] if len(checks) > 1 else None
    return (
        f"between step {before} and step {now}"
        if before is not None
        else f"at the start (step {now}), before any step"
    )


def _buffer_finding(checks: list[dict], d: float, params: float) -> str:
    same = (
        "while their parameters still agree"
        if params <= TOLERANCE
        else "and their parameters differ too"
    )
    return (
        f"ranks' buffers (running statistics such as BatchNorm's) diverged {_when(checks)}: "
        f"max relative difference {d:.3g} between ranks, {same}; each rank keeps its own "
        "statistics (DDP with broadcast_buffers=False?), so the same model evaluates "
        "differently on each rank: use SyncBatchNorm, or leave broadcast_buffers on."
    )


def _finding(checks: list[dict], names: list[str], diff: torch.Tensor) -> str:
    now = checks[-1]
    worst = names[int(diff.argmax())]
    when = _when(checks)
    if now["grads_differ"]:
        why = (
            "the ranks' gradients differ too at step "
            f"{now['step']}, so their gradients were "
            "not averaged: DDP's gradient sync was skipped (a forward through ddp.module, or "
            "every step under no_sync())"
        )
    elif now["updates_differ"]:
        why = (
            "the gradients agree but the updates do not: the optimizer differs across ranks "
            "(its settings, its state, or its learning-rate schedule)"
        )
    else:
        why = (
            "gradients and updates agree at that step, so the parameters were changed outside "
            "the optimizer's step, or the ranks started apart"
        )
    return (
        f"ranks diverged {when}: group {worst}, max relative difference "
        f"{float(diff.max()):.3g} between ranks (0 under DDP); {why}."
    )
