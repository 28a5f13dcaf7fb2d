"""The distributed zoo: bugs of a DistributedDataParallel run, each replacing one seam of
`labkit.core.ddp_loop` (run them on two real ranks with `labkit.learn.lessons.ranks`).

Each entry: the seam it replaces, the symptom to look for, and the mechanism. `healthy` is
the loop as it should be.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def _allreduce_again(model) -> None:
    """Sum the gradients over the ranks by hand, on top of DDP's average."""
    import torch.distributed as dist

    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)


@dataclass(frozen=True)
class DDPBug:
    name: str
    seams: dict = field(default_factory=dict)
    symptom: str = ""
    mechanism: str = ""


DDP_BUGS = {
    b.name: b
    for b in [
        DDPBug(
            "healthy",
            {},
            "every rank holds the same parameters and buffers at every step",
            "DDP averages the gradients in backward; set_epoch reshuffles each epoch",
        ),
        DDPBug(
            "forward_through_module",
            {"forward": lambda ddp: ddp.module},
            "the ranks' parameters drift apart while each rank's loss falls as usual",
            "the forward goes through ddp.module, so DDP's hooks never all-reduce the "
            "gradients: each rank steps on its own shard's gradient",
        ),
        DDPBug(
            "no_sync_every_step",
            {"sync": lambda ddp, step: ddp.no_sync()},
            "the ranks' parameters drift apart, as with no DDP at all",
            "gradient accumulation under no_sync() that never leaves it: the sync that should "
            "come on the last micro-batch never runs",
        ),
        DDPBug(
            "no_set_epoch",
            {"epoch_start": lambda sampler, epoch: None},
            "every epoch visits the examples in the same order on each rank",
            "DistributedSampler seeds its shuffle with seed + epoch; without "
            "sampler.set_epoch(epoch) the epoch stays 0",
        ),
        DDPBug(
            "double_allreduce",
            {"after_backward": _allreduce_again},
            "steps world-size times larger than the healthy run's from the first step; the "
            "ranks stay equal, so no check of consistency sees it",
            "the gradients, already averaged by DDP, are summed again by hand: an effective "
            "learning rate world-size times too large",
        ),
        DDPBug(
            "local_reported_loss",
            {"reported": lambda loss, world: loss.item()},
            "the reported loss differs from rank to rank and from the mean over ranks",
            "each rank reports its own shard's loss, not the mean over all ranks",
        ),
        DDPBug(
            "buffers_not_broadcast",
            {"ddp_kwargs": {"broadcast_buffers": False}},
            "the ranks' parameters stay equal while their BatchNorm running statistics drift "
            "apart, so the same model evaluates differently on each rank",
            "DDP(broadcast_buffers=False) with BatchNorm: each rank keeps its own running "
            "statistics (use SyncBatchNorm, or leave broadcast_buffers on)",
        ),
    ]
}
