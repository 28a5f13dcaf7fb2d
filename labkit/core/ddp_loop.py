"""The reference loop on one rank of a DistributedDataParallel run, with its seams.

The same shape as `labkit.core.train` for one process: a small MLP with a BatchNorm (so the
model holds buffers as well as parameters), SGD with momentum, a `DistributedSampler` that
gives each rank its own shard, and a reported loss averaged over the ranks. The places where
distributed training goes wrong are seams, each a function the distributed zoo
(`labkit.bugs.ddp`) replaces one at a time:

    forward(ddp)               what the batch goes through: the DDP wrapper
    sync(ddp, step)            the context of backward: DDP's gradient sync on (nullcontext)
    epoch_start(sampler, e)    sampler.set_epoch(e): a new order every epoch
    after_backward(model)      nothing: DDP has averaged the gradients already
    reported(loss, world)      the loss all-reduced and averaged over the ranks
    ddp_kwargs                 DDP's own options: {} (rank 0's buffers broadcast each forward)

`train_rank` must run inside an initialised process group; `labkit.learn.lessons.ranks`
starts two gloo ranks on one machine and runs it on each.
"""

from __future__ import annotations

import contextlib
import functools
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

N_EXAMPLES, BATCH = 512, 32  # per epoch, over all ranks; each rank sees half


def join_gloo(rank: int, world: int, rendezvous: str, timeout_s: float) -> None:
    """Join a gloo process group of `world` ranks on one machine, through the file
    `rendezvous`, with `timeout_s` on every collective: a rank that dies becomes an error in
    the others, not a hang. One thread per rank, so two ranks share two cores."""
    from datetime import timedelta

    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"file://{rendezvous}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=timeout_s),
    )


def _reported(loss: torch.Tensor, world: int) -> float:
    import torch.distributed as dist

    total = loss.detach().clone()
    dist.all_reduce(total)
    return float(total) / world


SEAMS = {
    "forward": lambda ddp: ddp,
    "sync": lambda ddp, step: contextlib.nullcontext(),
    "epoch_start": lambda sampler, epoch: sampler.set_epoch(epoch),
    "after_backward": lambda model: None,
    "reported": _reported,
    "ddp_kwargs": {},
}


def data(seed: int = 0):
    """Four classes of 8 features: the same dataset on every rank, sharded by the sampler."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(N_EXAMPLES, 8, generator=g)
    y = (x[:, :4].argmax(1) + (x[:, 4] > 1).long()) % 4
    return torch.utils.data.TensorDataset(x, y, torch.arange(N_EXAMPLES))


def make_model(seed: int = 0) -> nn.Module:
    """The reference model, initialised from `seed`: the same on every rank."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))


def train_rank(
    seams: dict | None = None,
    *,
    steps: int = 200,
    seed: int = 0,
    every: int = 50,
    lr: float = 0.05,
    momentum: float = 0.9,
    at_end=None,
) -> dict:
    """Train this rank for `steps` steps under `seams` (defaults: `SEAMS`); plain data back.

    `at_end(ddp, batch, forward, sync, sampler, epoch)`, if given, runs once after the last
    step on every rank (the last batch, the seams' forward and backward context); what it
    returns is the result's "at_end". `seed` sets the model's initialisation and the sampler's
    shuffle (the data stay those of `data(0)`)."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from .watch import watch

    s = {**SEAMS, **(seams or {})}
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model(seed)
    with warnings.catch_warnings():  # torch 2.13 names broadcast_buffers deprecated, and
        warnings.simplefilter("ignore", FutureWarning)  # says to keep it for rank-local buffers
        ddp = DDP(model, **s["ddp_kwargs"])
    optimizer = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=momentum)
    sampler = torch.utils.data.distributed.DistributedSampler(data(), shuffle=True, seed=seed)
    loader = torch.utils.data.DataLoader(data(), batch_size=BATCH // world, sampler=sampler)
    w = watch(ddp, optimizer, check_every=every)
    raw, reported, local, orders, step, epoch = [], [], [], [], 0, 0
    while step < steps:
        s["epoch_start"](sampler, epoch)
        for i, (x, y, index) in enumerate(loader):
            if i == 0:
                orders.append(index[:4].tolist())  # where each epoch starts, on this rank
            optimizer.zero_grad()
            with s["sync"](ddp, step):
                loss = F.cross_entropy(s["forward"](ddp)(x), y)
                loss.backward()
            s["after_backward"](model)
            optimizer.step()
            local.append(float(loss.detach()))  # this rank's own shard
            raw.append(_reported(loss, world))  # the true mean over the ranks
            same = s["reported"] is _reported  # the healthy report is that mean: one all-reduce
            reported.append(raw[-1] if same else s["reported"](loss, world))
            step += 1
            if step == steps:
                break
        epoch += 1
    w.close()
    run = w.run(loss_raw=raw, loss_reported=reported)
    out = {
        "rank": rank,
        "groups": list(w.groups),
        "findings": list(w.findings),
        "checks": w.describe()["ranks"]["checks"],
        "loss": [raw[0], raw[-1]],
        "local_loss": local,
        "reported": reported,
        "mean_loss": raw,
        "reported_gap": max(abs(a - b) for a, b in zip(raw, reported)),
        "update_norm_0": run.table["update_norm"][0],
        "epoch_orders": orders,
        "steps": len(run.table["step"]),
        "max_param_diff": _max_diff(list(model.parameters()), world),
        "max_buffer_diff": _max_diff([b for b in model.buffers() if b.is_floating_point()], world),
    }
    if at_end is not None:
        sync = lambda: s["sync"](ddp, step)  # noqa: E731
        out["at_end"] = at_end(
            ddp, (x, y), lambda m, b: s["forward"](m)(b[0]), sync, sampler, epoch - 1
        )
    return out


def _max_diff(tensors: list, world: int) -> float:
    """The largest elementwise difference of `tensors` between this rank and any other."""
    import torch.distributed as dist

    flat = torch.cat([t.detach().flatten().float() for t in tensors])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    return float(max((g - flat).abs().max() for g in gathered))


@functools.lru_cache(maxsize=16)  # a pure function of its arguments: computed once per seed
def first_update_one_process(seed: int = 0, *, lr: float = 0.05, momentum: float = 0.9) -> float:
    """The norm of the first update of the same model in ONE process, on the whole batch of
    `BATCH` examples that the two ranks' first batches make together (the sampler's first
    `BATCH` indices). No process group needed: what healthy DDP should match."""
    model = make_model(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    sampler = torch.utils.data.distributed.DistributedSampler(
        data(), num_replicas=1, rank=0, shuffle=True, seed=seed
    )
    x, y, _ = next(iter(torch.utils.data.DataLoader(data(), batch_size=BATCH, sampler=sampler)))
    before = [p.detach().clone() for p in model.parameters()]
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    deltas = [(p.detach() - b).double().pow(2).sum() for p, b in zip(model.parameters(), before)]
    return float(torch.stack(deltas).sum().sqrt())
