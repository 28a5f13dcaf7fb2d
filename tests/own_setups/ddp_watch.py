"""What one rank runs for the watch's tests that need a loop of their own on two gloo ranks
(importable by "spawn": tests/ is on the children's sys.path)."""

from __future__ import annotations

import json
import time


def rank_zero_only_steps(rank: int, rendezvous: str, out: str, wait_s: float) -> None:
    """A DDP loop whose optimizer.step() sits under ``if rank == 0`` (a guard meant for
    logging that took in the step): rank 1 never steps, so it never sends the watch's
    checks. Writes what each rank's watch said to `out`.RANK.json."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    import labkit
    from labkit.core.ddp_loop import join_gloo
    from labkit.core.watch import ranks as watch_ranks

    watch_ranks.WAIT_S = wait_s
    join_gloo(rank, 2, rendezvous, 60)
    torch.manual_seed(0)
    ddp = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    started = time.monotonic()
    w = labkit.watch(ddp, opt, check_every=10)
    for _ in range(40):
        opt.zero_grad()
        x, y = torch.randn(16, 8, generator=g), torch.randint(0, 4, (16,), generator=g)
        F.cross_entropy(ddp(x), y).backward()
        if rank == 0:
            opt.step()
    w.close()
    said = {"findings": list(w.findings), "steps": w.steps, "s": time.monotonic() - started}
    with open(f"{out}.{rank}.json", "w") as f:
        json.dump(said, f)
    dist.destroy_process_group()
