"""Two real ranks for notebook `18_distributed`, started once from the notebook.

`start()` starts two gloo ranks with torch.multiprocessing's "spawn" method; they import
torch while the learner sketches and wait for their plan, and `launch(waiting=...)` sends it
after the seal (a file rendezvous, a timeout on every collective, as in
`labkit.learn.lessons.ranks`). On each rank it measures:

* `anatomy`: one step of a small MLP under DistributedDataParallel: which tensors DDP
  all-reduces (the gradients, bucket by bucket, during backward) and what they come out as
  (the mean of the ranks' own gradients, which is the gradient of one process on the whole
  global batch);
* `accumulate`: gradient accumulation over two micro-batches with `no_sync()` left on the
  last one, and never left;
* the runs of the distributed zoo it is asked for (`labkit.core.ddp_loop.train_rank`),
  each rank's own loss at every step included, and after each run's last step the
  distributed checklist (`labkit.learn.checklist.ranks`) on that step's batch.

Outside the ranks: `shards` (what `DistributedSampler` hands each rank, per epoch),
`setup_hash` and `rank_runs` (a rank's loss as a `labkit.Run`, for a sealed sketch).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from ...core.learner import pending
from ...core.ddp_loop import BATCH, N_EXAMPLES, data
from .ranks import TIMEOUT_S, plan_of

WORLD, STEPS, EVERY = 2, 120, 20
BUCKET_MB = 0.0005  # 500 bytes: each weight and bias of the small MLP in a bucket of its own
RUNS = {  # bug: steps; each as long as what the lesson reads from it needs
    "healthy": STEPS,  # the drift against forward_through_module, the checklist
    "forward_through_module": STEPS,  # the sketched run
    "no_set_epoch": 48,  # three epochs of 16 steps: the same first batch each time
    "double_allreduce": 20,  # the first update
    "buffers_not_broadcast": 20,  # the checklist
}  # no_sync_every_step is `accumulate(leave=False)`, which the lesson runs anyway


def _mlp() -> nn.Module:
    torch.manual_seed(0)  # the same initial weights on every rank, as DDP would broadcast
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))


def _rows(rank: int, world: int, start: int):
    """This rank's share of the global batch of BATCH rows starting at `start`."""
    x, y, _ = data().tensors
    lo = start % N_EXAMPLES + rank * (BATCH // world)
    return x[lo : lo + BATCH // world], y[lo : lo + BATCH // world]


def _flat(tensors) -> torch.Tensor:
    return torch.cat([t.detach().flatten() for t in tensors])


def _gather(t: torch.Tensor) -> list[torch.Tensor]:
    import torch.distributed as dist

    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return out


def _counting(ddp, calls: list, names: dict, flag: dict) -> None:
    """A comm hook that notes each bucket DDP all-reduces, then all-reduces it as usual."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    def hook(state, bucket):
        calls.append(
            {
                "params": [names[id(p)] for p in bucket.parameters()],
                "in_backward": flag["on"],
            }
        )
        return default_hooks.allreduce_hook(None, bucket)

    ddp.register_comm_hook(None, hook)


def anatomy() -> dict:
    """One step under DDP on this rank's half of the first global batch."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, world = dist.get_rank(), dist.get_world_size()
    model = _mlp()
    params = list(model.parameters())
    names = {id(p): n for n, p in model.named_parameters()}
    ddp = DDP(model, bucket_cap_mb=BUCKET_MB)
    x, y = _rows(rank, world, 0)
    own = _flat(torch.autograd.grad(F.cross_entropy(model(x), y), params))  # no sync
    buckets, flag = [], {"on": False}
    _counting(ddp, buckets, names, flag)
    F.cross_entropy(ddp(x), y).backward()  # DDP rebuilds its buckets after the first backward,
    buckets.clear()  # in the order the gradients came ready: the second shows them
    model.zero_grad()
    loss = F.cross_entropy(ddp(x), y)
    flag["on"] = True
    loss.backward()
    flag["on"] = False
    synced = _flat(p.grad for p in params)
    mean = torch.stack(_gather(own)).mean(0)
    whole, (xa, ya) = _mlp(), _rows(0, 1, 0)  # one process, the whole global batch
    one = _flat(torch.autograd.grad(F.cross_entropy(whole(xa), ya), list(whole.parameters())))
    return {
        "rank": rank,
        "rows": len(y),
        "global_batch": len(y) * world,
        "params": [n for n, _ in model.named_parameters()],
        "buckets": buckets,
        "loss": float(loss.detach()),
        "losses": [float(v) for v in _gather(loss.detach().reshape(1))],
        "vs_mean": float((synced - mean).abs().max()),
        "vs_own": float((synced - own).abs().max()),
        "vs_one_process": float((synced - one).abs().max()),
        "largest_grad": float(one.abs().max()),
    }


def accumulate(leave: bool, *, steps: int = 40, micro: int = 2, lr: float = 0.05) -> dict:
    """`steps` optimizer steps, each over `micro` micro-batches; the backward of all but the
    last under `no_sync()`, and of the last too unless `leave`."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, world = dist.get_rank(), dist.get_world_size()
    model = _mlp()
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9)
    calls, flag = [], {"on": True}
    _counting(ddp, calls, {id(p): n for n, p in model.named_parameters()}, flag)
    for step in range(steps):
        optimizer.zero_grad()
        for i in range(micro):
            x, y = _rows(rank, world, (step * micro + i) * BATCH)
            last = i == micro - 1
            with contextlib.nullcontext() if last and leave else ddp.no_sync():
                (F.cross_entropy(ddp(x), y) / micro).backward()
        optimizer.step()
    flat = _flat(model.parameters())
    return {
        "steps": steps,
        "backward_passes": steps * micro,
        "allreduces": len(calls),
        "max_param_diff": float(max((g - flat).abs().max() for g in _gather(flat))),
    }


def _audit(ddp, batch, forward, sync, sampler, epoch) -> dict:
    """The distributed checklist after a run's last step (`train_rank`'s `at_end`)."""
    from ..checklist.ranks import audit_ranks

    found = audit_ranks(ddp, batch, forward=forward, sync=sync, sampler=sampler, epoch=epoch)
    return {"status": found.status(), "text": str(found)}


def _rank(rank: int, world: int, rendezvous: str, bugs: dict, every: int, out: str) -> None:
    import torch.distributed as dist

    from ...bugs.ddp import DDP_BUGS
    from ...core.ddp_loop import join_gloo, train_rank

    join_gloo(rank, world, rendezvous, TIMEOUT_S)
    try:
        result = {
            "anatomy": anatomy(),
            "accumulate": {"leave": accumulate(True), "never_leave": accumulate(False)},
            "runs": {
                bug: train_rank(DDP_BUGS[bug].seams, steps=steps, every=every, at_end=_audit)
                for bug, steps in bugs.items()
            },
        }
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
    finally:
        dist.destroy_process_group()


class Waiting:
    """Two ranks started ahead (`start()`), importing torch and DDP while the learner
    sketches, then waiting for their plan; `launch(waiting=...)` sends it. Dropped unused,
    or left waiting WAIT_S seconds, or orphaned by their kernel, they exit."""

    def __init__(self):
        from ...core.process.children import scratch, start

        self.folder, self.sent = scratch(), False
        self.context = start(_waiting, (WORLD, self.folder, os.getpid()), WORLD)

    def send(self, plan: dict) -> None:
        if self.sent:
            raise ValueError(
                "These two ranks have trained already; start new ones with start(), or "
                "call launch() without waiting= to start them there."
            )
        self.sent = True
        part = os.path.join(self.folder, "plan.part")
        with open(part, "w") as f:
            json.dump(plan, f)
        os.replace(part, os.path.join(self.folder, "plan.json"))  # whole, or not there

    def join(self) -> list[dict]:
        from ...core.process.children import owned

        try:
            with owned(self.context):  # an interrupted cell ends the ranks too
                while not self.context.join():
                    pass
            ranks = []
            for rank in range(WORLD):
                with open(os.path.join(self.folder, f"rank{rank}.json")) as f:
                    ranks.append(json.load(f))
            return ranks
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __del__(self):
        if not getattr(self, "sent", True):
            with contextlib.suppress(Exception):
                self.send({})  # nothing to train: the waiting ranks exit

    def __repr__(self) -> str:
        return f"Waiting({WORLD} ranks, {'sent their plan' if self.sent else 'waiting for a plan'})"


WAIT_S = 1800  # how long started ranks wait for their plan before they exit


def _waiting(rank: int, world: int, folder: str, parent: int) -> None:
    import torch._dynamo  # noqa: F401  (DDP's first construction imports it: seconds)

    plan_path, deadline = os.path.join(folder, "plan.json"), time.monotonic() + WAIT_S
    while not os.path.exists(plan_path):
        if time.monotonic() > deadline or os.getppid() != parent:
            return  # nobody will send a plan
        time.sleep(0.05)
    with open(plan_path) as f:
        plan = json.load(f)
    if plan:
        _rank(rank, world, os.path.join(folder, "rendezvous"), plan["bugs"], plan["every"], folder)


def start() -> Waiting:
    """Start the two ranks now, so that they are ready when `launch(waiting=...)` sends
    their plan; they train nothing before it."""
    return Waiting()


def launch(bugs=None, *, steps: int = STEPS, every: int = EVERY, waiting=None) -> dict:
    """On two gloo ranks (`waiting`, from `start()`, or two started here): `anatomy`,
    `accumulate` both ways, then each run of `bugs`: {name of `labkit.bugs.ddp.DDP_BUGS`:
    steps}, or names trained `steps` steps each (default: `RUNS`). Returns {"started_at",
    "steps": {bug: steps}, "anatomy": [rank 0's, rank 1's], "accumulate": {"leave": [...],
    "never_leave": [...]}, "runs": {bug: [rank 0's, rank 1's]}}."""
    plan = plan_of(RUNS if bugs is None else bugs, steps, every, minimum=2, maximum=10_000)
    if waiting is not None and not isinstance(waiting, Waiting):
        raise TypeError(f"waiting must be what start() returns; got {type(waiting).__name__}.")
    pending.consult()  # the sketch of these runs first: wait for its Seal, or refuse
    waiting = waiting or Waiting()
    started = time.time()  # training starts now: a sketch sealed before this is a forecast
    waiting.send({"bugs": plan, "every": every})
    ranks = waiting.join()
    return {
        "started_at": started,
        "steps": plan,
        "anatomy": [r["anatomy"] for r in ranks],
        "accumulate": {k: [r["accumulate"][k] for r in ranks] for k in ("leave", "never_leave")},
        "runs": {bug: [r["runs"][bug] for r in ranks] for bug in plan},
    }


def shards(epoch: int, *, set_epoch: bool = True, world: int = WORLD) -> list[list[int]]:
    """The example indices `DistributedSampler` gives each rank in `epoch` (the loop's
    sampler: shuffled, seed 0), with `sampler.set_epoch(epoch)` called or not."""
    from torch.utils.data.distributed import DistributedSampler

    out = []
    for rank in range(world):
        sampler = DistributedSampler(data(), num_replicas=world, rank=rank, shuffle=True, seed=0)
        if set_epoch:
            sampler.set_epoch(epoch)
        out.append(list(sampler))
    return out


def setup_hash(bug: str, steps: int = STEPS) -> str:
    """The 12-hex setup a sketch of this lesson's run of `bug` is sealed for."""
    text = json.dumps({"lesson": "18_distributed", "bug": bug, "steps": steps, "world": WORLD})
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def rank_runs(launched: dict, bug: str) -> dict:
    """{"rank 0": Run, "rank 1": Run}: each rank's own loss at every step of `bug`'s run, as
    runs a sketch sealed for `setup_hash(bug)` is scored against."""
    from ...core.run import Run

    steps = launched["steps"][bug]
    return {
        f"rank {r['rank']}": Run(
            table={"step": list(range(steps)), "loss_raw": r["local_loss"]},
            evals={},
            meta={"config_hash": setup_hash(bug, steps), "bug": bug, "series": "loss"},
            timing={"started_at": launched["started_at"]},
        )
        for r in launched["runs"][bug]
    }
