"""The checklist of a distributed (DDP) run, checked with code on each rank's real batch.

    >>> from labkit.learn.checklist.ranks import audit_ranks
    >>> print(audit_ranks(ddp, (x, y), sampler=sampler, epoch=epoch))   # on every rank

Call it on every rank at the same point of the loop, between two optimizer steps: it makes
collectives (a few small all-gathers), so a rank that does not call it leaves the others
waiting until the process group's timeout. It runs one forward and backward of `batch` the
way the loop does (`forward`, `loss_fn`, and `sync`, the context the loop's backward runs
in), then puts back every gradient and buffer it touched; the parameters never change.

Each item compares what the ranks hold, exactly: under DDP the ranks' parameters and
averaged gradients are equal bit for bit, so any difference is a finding, not rounding.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from . import Checklist, Result

# key, what the item asks, the item it builds on
ITEMS = (
    ("same_parameters", "every rank holds the same parameters", None),
    ("same_buffers", "every rank holds the same buffers (BatchNorm's statistics)", None),
    ("own_shard", "each rank reads its own examples", None),
    ("gradients_averaged", "one backward leaves the same gradient on every rank", "own_shard"),
    ("sampler_epoch", "the sampler is told the epoch (set_epoch)", None),
)


def _tensors(batch) -> list[torch.Tensor]:
    if isinstance(batch, torch.Tensor):
        return [batch]
    values = batch.values() if isinstance(batch, dict) else batch
    return [t for t in values if isinstance(t, torch.Tensor)]


def _fingerprint(tensors) -> torch.Tensor:
    """Per tensor, the float64 sum and sum of squares (zeros for a missing gradient)."""
    rows = [
        torch.zeros(2, dtype=torch.float64)
        if t is None
        else torch.stack([t.detach().double().sum(), t.detach().double().pow(2).sum()])
        for t in tensors
    ]
    return torch.cat(rows) if rows else torch.zeros(0, dtype=torch.float64)


def _compare(tensors, names) -> tuple[list[str], float]:
    """The names whose fingerprints differ between this rank and any other, and the largest
    relative difference among them."""
    import torch.distributed as dist

    mine = _fingerprint(tensors)
    gathered = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, mine)
    diff = torch.stack([(g - mine).abs() for g in gathered]).amax(0)
    rel = diff / mine.abs().clamp_min(1e-30)
    per = [bool((diff[2 * i : 2 * i + 2] > 0).any()) for i in range(len(names))]
    largest = float(rel.max()) if len(rel) else 0.0
    return [n for n, d in zip(names, per) if d], largest


def _differ(what: str, differ: list[str], total: int, largest: float, why: str):
    if not differ:
        return "PASS", f"all {total} {what} are equal on every rank, bit for bit"
    shown = ", ".join(differ[:3]) + (", ..." if len(differ) > 3 else "")
    return "FAIL", (
        f"{len(differ)} of {total} {what} differ between ranks ({shown}; largest relative "
        f"difference {largest:.2g}): {why}"
    )


def _step(model, inner, batch, forward, loss_fn, sync, params, buffers):
    """One forward and backward as the loop does them: the gradients, and the buffers as the
    forward saw them (DDP broadcasts rank 0's just before); every gradient and buffer is put
    back afterwards."""
    saved_grads = {n: p.grad for n, p in params.items()}
    saved_buffers = {n: b.detach().clone() for n, b in buffers.items()}
    seen = []
    hook = inner.register_forward_pre_hook(
        lambda module, args: (
            None if seen else seen.extend(b.detach().clone() for b in buffers.values())
        )
    )
    try:
        for p in params.values():
            p.grad = None
        with sync():
            loss_fn(forward(model, batch), batch).backward()
        return [p.grad for p in params.values()], seen
    finally:
        hook.remove()
        with torch.no_grad():
            for n, p in params.items():
                p.grad = saved_grads[n]
            for n, b in buffers.items():
                b.copy_(saved_buffers[n])


def audit_ranks(
    model, batch, *, forward=None, loss_fn=None, sync=None, sampler=None, epoch=None
) -> Checklist:
    """Check the items of `ITEMS` on this rank; every rank must call it together.

    `model` is the DDP-wrapped model; `batch` this rank's batch ((inputs, targets) by
    default). `forward(model, batch)` and `loss_fn(output, batch)` say how the loop computes
    its loss (default: `model(batch[0])` and cross-entropy against `batch[1]`); `sync()` gives
    the context its backward runs in (default none; e.g. `model.no_sync`). With `sampler` and
    `epoch` (the loop's epoch, from 0), the sampler's epoch is checked too."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        raise ValueError(
            "audit_ranks checks a distributed run, but no process group is running; call it "
            "on every rank after torch.distributed.init_process_group(...)."
        )
    if not _tensors(batch):
        raise ValueError(
            f"batch must be a tensor, or a tuple, list or dict of tensors; got "
            f"{type(batch).__name__} with none."
        )
    forward = forward or (lambda m, b: m(b[0]))
    loss_fn = loss_fn or (lambda out, b: F.cross_entropy(out, b[1]))
    sync = sync or contextlib.nullcontext
    inner = getattr(model, "module", model)
    params = dict(inner.named_parameters())
    buffers = {n: b for n, b in inner.named_buffers() if b.is_floating_point()}
    world = dist.get_world_size()
    results: dict[str, Result] = {}

    def put(key, status, evidence):
        title = next(t for k, t, _ in ITEMS if k == key)
        results[key] = Result(key, title, status, evidence)

    differ, largest = _compare(list(params.values()), list(params))
    put(
        "same_parameters",
        *_differ(
            "parameter tensors",
            differ,
            len(params),
            largest,
            "the ranks are no longer training one model (a skipped gradient sync, or "
            "different initial weights)",
        ),
    )
    data = _tensors(batch)
    apart, _ = _compare(data, [f"batch[{i}]" for i in range(len(data))])
    if apart:
        put("own_shard", "PASS", f"the {world} ranks' batches differ")
    else:
        put(
            "own_shard",
            "FAIL",
            f"all {world} ranks got the same batch: the work is duplicated, not shared "
            "(a DataLoader without DistributedSampler)",
        )
    grads, seen = _step(model, inner, batch, forward, loss_fn, sync, params, buffers)
    if buffers:  # as the forward saw them: after DDP's broadcast of rank 0's, if it ran
        differ, largest = _compare(seen, list(buffers))
        put(
            "same_buffers",
            *_differ(
                "floating-point buffers",
                differ,
                len(buffers),
                largest,
                "each rank's forward uses its own statistics, so the model computes "
                "differently per rank (DDP broadcasts rank 0's before a forward through the "
                "wrapper, unless broadcast_buffers=False or the last backward ran under "
                "no_sync(); SyncBatchNorm keeps them equal)",
            ),
        )
    else:
        put("same_buffers", "N/A", "the model has no floating-point buffers")
    differ, largest = _compare(grads, list(params))  # every rank gathers, whatever it judges
    if results["own_shard"].status != "PASS":
        put("gradients_averaged", "N/A", "not judged: equal batches give equal gradients anyway")
    else:
        put(
            "gradients_averaged",
            *_differ(
                "gradients",
                differ,
                len(params),
                largest,
                "DDP did not average them (a forward through model.module, or a backward "
                "under no_sync())",
            ),
        )
    if sampler is None or epoch is None:
        put("sampler_epoch", "N/A", "not judged: give sampler= and epoch= to check it")
    elif getattr(sampler, "epoch", None) == epoch:
        put("sampler_epoch", "PASS", f"sampler.epoch is {epoch}, the loop's epoch")
    else:
        put(
            "sampler_epoch",
            "FAIL",
            f"sampler.epoch is {getattr(sampler, 'epoch', None)} in the loop's epoch {epoch}: "
            "set_epoch is not called, so every epoch repeats the same order",
        )
    name = f"{type(inner).__name__} on rank {dist.get_rank()} of {world}"
    return Checklist(name, [results[k] for k, _, _ in ITEMS])
