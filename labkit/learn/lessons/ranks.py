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

TIMEOUT_S = 60  # every collective: a rank that dies becomes an error in the others, not a hang


def run_ranks(rank: int, world: int, rendezvous: str, runs: list, every: int, out: str) -> None:
    """What each rank runs: join the gloo group, train each (bug, seed, steps) of `runs` in
    turn, write [result per run] to `out`/rankR.json. Rank 0 appends a line to `out`/progress
    when the group is joined and when each run is done (whole lines: a reader may follow)."""
    import torch.distributed as dist

    from ...bugs.ddp import DDP_BUGS
    from ...core.ddp_loop import join_gloo, train_rank

    def note(text: str) -> None:
        if rank == 0:
            with open(os.path.join(out, "progress"), "a") as f:
                f.write(text + "\n")

    join_gloo(rank, world, rendezvous, TIMEOUT_S)
    note("joined")
    try:
        results = []
        for bug, seed, steps in runs:
            results.append(train_rank(DDP_BUGS[bug].seams, steps=steps, seed=seed, every=every))
            note(f"run {bug} {seed} {steps}")
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(results, f)
    finally:
        dist.destroy_process_group()


def check_bug(bug) -> None:
    """A sentence for a name that is not in the distributed zoo (with the closest one)."""
    from ...bugs.ddp import DDP_BUGS
    from ...errors import suggest

    if bug not in DDP_BUGS:
        raise ValueError(
            f"bug={bug!r} is not in the distributed zoo; choose one of "
            f"{', '.join(map(repr, DDP_BUGS))}.{suggest(bug, DDP_BUGS)}"
        )


def plan_of(bugs, steps: int, every: int, *, minimum: int = 1, maximum: int = 100_000) -> dict:
    """{bug: steps} from a name, names (each `steps` steps) or a {name: steps} dict, every name
    in the distributed zoo (`labkit.bugs.ddp.DDP_BUGS`); a sentence for anything else."""
    from ...errors import check_number

    bugs = (bugs,) if isinstance(bugs, str) else bugs
    plan = dict(bugs) if isinstance(bugs, dict) else dict.fromkeys(bugs, steps)
    for bug, n in plan.items():
        check_bug(bug)
        check_number(f"steps for {bug}", n, minimum=minimum, maximum=maximum, integer=True)
    check_number("every", every, minimum=1, integer=True)
    return plan


def train_two_ranks(
    bugs=("healthy",), *, steps: int = 200, every: int = 50
) -> dict[str, list[dict]]:
    """Start two gloo ranks and train `steps` steps under each of `bugs` (names of
    `labkit.bugs.ddp.DDP_BUGS`, "healthy" for none; or {name: steps} for runs of different
    lengths), one run after another; {bug: [rank 0's result, rank 1's]}."""
    from ...core.process.children import owned, scratch_folder, start

    bugs = plan_of(bugs, steps, every)
    with scratch_folder() as tmp:
        rendezvous = os.path.join(tmp, "rendezvous")
        runs = [(bug, 0, n) for bug, n in bugs.items()]
        with owned(start(run_ranks, (2, rendezvous, runs, every, tmp), 2)) as ctx:
            while not ctx.join():
                pass
        ranks = []
        for rank in range(2):
            with open(os.path.join(tmp, f"rank{rank}.json")) as f:
                ranks.append(json.load(f))
    return {bug: [r[i] for r in ranks] for i, bug in enumerate(bugs)}
