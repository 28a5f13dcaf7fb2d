"""Two real ranks on one laptop: a small MLP under DistributedDataParallel on gloo, each rank
on batches of its own, watched by `labkit.watch`.

The ranks are processes started with torch.multiprocessing's "spawn" method, so the
function they run lives here, in an importable module, not in a notebook cell.
`train_two_ranks(modes)` starts them once, trains one run per mode in turn, and returns each
rank's result per mode as plain data:

    "ddp"      the forward goes through the DDP wrapper: gradients averaged, ranks equal
    "module"   the forward goes through ``ddp.module``: DDP's gradient sync never runs
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import timedelta

MODES = ("ddp", "module")
TIMEOUT_S = 60  # every collective: a rank that dies becomes an error in the others, not a hang


def _rank(rank: int, world: int, rendezvous: str, modes: tuple, steps: int, every: int,
          out: str) -> None:
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank,
                            world_size=world, timeout=timedelta(seconds=TIMEOUT_S))
    try:
        results = {mode: _train(rank, world, mode, steps, every) for mode in modes}
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(results, f)
    finally:
        dist.destroy_process_group()


def _train(rank: int, world: int, mode: str, steps: int, every: int) -> dict:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    import labkit
    torch.manual_seed(0)  # the same init on every rank (DDP broadcasts rank 0's anyway)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)  # each rank's own shard of the data
    x = torch.randn(512, 8, generator=g)
    y = (x[:, :4].argmax(1) + (x[:, 4] > 1).long()) % 4
    forward = ddp.module if mode == "module" else ddp
    w = labkit.watch(ddp, optimizer, check_every=every)
    losses = []
    for step in range(steps):
        i = (step * 32) % 512
        optimizer.zero_grad()
        loss = F.cross_entropy(forward(x[i:i + 32]), y[i:i + 32])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    w.close()
    run = w.run(loss_raw=losses)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    return {"rank": rank, "mode": mode, "steps": steps, "groups": list(w.groups),
            "findings": list(w.findings), "checks": w.describe()["ranks"]["checks"],
            "loss": [losses[0], losses[-1]], "table_steps": len(run.table["step"]),
            "max_param_diff": float(max((t - flat).abs().max() for t in gathered))}


def train_two_ranks(modes=MODES, *, steps: int = 200, every: int = 50) -> dict[str, list[dict]]:
    """Start two gloo ranks and train `steps` steps in each of `modes` (see MODES), one run
    after another; {mode: [rank 0's result, rank 1's]}."""
    import torch.multiprocessing as mp
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    for mode in modes:
        if mode not in MODES:
            from ...errors import suggest
            raise ValueError(f"mode={mode!r} is not a mode; choose one of "
                             f"{', '.join(map(repr, MODES))}.{suggest(mode, MODES)}")
    with tempfile.TemporaryDirectory() as tmp:
        rendezvous = os.path.join(tmp, "rendezvous")
        mp.spawn(_rank, args=(2, rendezvous, modes, steps, every, tmp), nprocs=2, join=True)
        ranks = []
        for rank in range(2):
            with open(os.path.join(tmp, f"rank{rank}.json")) as f:
                ranks.append(json.load(f))
    return {mode: [r[mode] for r in ranks] for mode in modes}
