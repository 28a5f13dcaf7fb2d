"""Two real ranks on one laptop: the distributed reference loop (`labkit.core.ddp_loop`) on
two gloo processes, healthy or with a bug of the distributed zoo (`labkit.bugs.ddp`),
watched by `labkit.watch`.

The ranks are processes started with torch.multiprocessing's "spawn" method, so the
function they run lives here, in an importable module, not in a notebook cell.
`train_two_ranks(bugs)` starts them once, trains one run per bug in turn, and returns each
rank's result per bug as plain data.
"""

from __future__ import annotations

import json
import os
import tempfile

TIMEOUT_S = 60  # every collective: a rank that dies becomes an error in the others, not a hang


def _rank(rank: int, world: int, rendezvous: str, bugs: dict, every: int, out: str) -> None:
    import torch.distributed as dist

    from ...bugs.ddp import DDP_BUGS
    from ...core.ddp_loop import join_gloo, train_rank

    join_gloo(rank, world, rendezvous, TIMEOUT_S)
    try:
        results = {
            bug: train_rank(DDP_BUGS[bug].seams, steps=steps, every=every)
            for bug, steps in bugs.items()
        }
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(results, f)
    finally:
        dist.destroy_process_group()


def plan_of(bugs, steps: int, every: int, *, minimum: int = 1, maximum: int = 100_000) -> dict:
    """{bug: steps} from a name, names (each `steps` steps) or a {name: steps} dict, every name
    in the distributed zoo (`labkit.bugs.ddp.DDP_BUGS`); a sentence for anything else."""
    from ...bugs.ddp import DDP_BUGS
    from ...errors import check_number, suggest

    bugs = (bugs,) if isinstance(bugs, str) else bugs
    plan = dict(bugs) if isinstance(bugs, dict) else dict.fromkeys(bugs, steps)
    for bug, n in plan.items():
        if bug not in DDP_BUGS:
            raise ValueError(
                f"bug={bug!r} is not in the distributed zoo; choose one of "
                f"{', '.join(map(repr, DDP_BUGS))}.{suggest(bug, DDP_BUGS)}"
            )
        check_number(f"steps for {bug}", n, minimum=minimum, maximum=maximum, integer=True)
    check_number("every", every, minimum=1, integer=True)
    return plan


def train_two_ranks(
    bugs=("healthy",), *, steps: int = 200, every: int = 50
) -> dict[str, list[dict]]:
    """Start two gloo ranks and train `steps` steps under each of `bugs` (names of
    `labkit.bugs.ddp.DDP_BUGS`, "healthy" for none; or {name: steps} for runs of different
    lengths), one run after another; {bug: [rank 0's result, rank 1's]}."""
    import torch.multiprocessing as mp

    bugs = plan_of(bugs, steps, every)
    with tempfile.TemporaryDirectory() as tmp:
        rendezvous = os.path.join(tmp, "rendezvous")
        mp.spawn(_rank, args=(2, rendezvous, bugs, every, tmp), nprocs=2, join=True)
        ranks = []
        for rank in range(2):
            with open(os.path.join(tmp, f"rank{rank}.json")) as f:
                ranks.append(json.load(f))
    return {bug: [r[bug] for r in ranks] for bug in bugs}
