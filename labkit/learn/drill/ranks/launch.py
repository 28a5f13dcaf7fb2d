"""One launch of two gloo ranks for a distributed mystery: every run its probes read, trained
in turn by the same two processes, with a line of progress per unit of work.

Starting two processes that import torch is most of the cost (seconds on two cores); a run
of 64 steps is a fraction of a second. So a mystery starts its ranks once, trains the
mystery run and the second-seed run one after the other, and every probe then reads what
they returned. The ranks use the "spawn" start method and run `labkit.learn.lessons.ranks.run_ranks`.
"""

from __future__ import annotations

import json
import os
import time

STEPS, EVERY = 64, 16  # a run: four epochs of 16 steps; the watch compares the ranks every 16


class RanksFailed(RuntimeError):
    """A rank raised or died before the launch's runs were done (the sentence says which)."""


def check_runs(runs) -> list[tuple[str, int, int]]:
    """[(bug, seed, steps)] with every bug in the distributed zoo; a sentence for anything else."""
    from ....errors import check_number
    from ...lessons.ranks import check_bug

    out = []
    for run in runs:
        bug, seed, steps = run
        check_bug(bug)
        check_number("seed", seed, minimum=0, integer=True)
        check_number(f"steps for {bug}", steps, minimum=2, maximum=10_000, integer=True)
        out.append((bug, int(seed), int(steps)))
    if not out:
        raise ValueError("runs is empty; give at least one (bug, seed, steps).")
    return out


def launch(runs, *, every: int = EVERY, progress=None, meanwhile=None) -> list[list[dict]]:
    """Start two gloo ranks once and train each of `runs` ((bug, seed, steps), bug a name of
    `labkit.bugs.ddp.DDP_BUGS`) in turn; [[rank 0's result, rank 1's]] per run, in order.

    `progress(line)`, if given, gets a line when the ranks have started and one per run
    trained, each with the seconds since the launch began. `meanwhile()`, if given, runs here
    while the ranks start (the drill computes its one-process reference then)."""
    from torch.multiprocessing.spawn import ProcessException

    from ....core.process.children import owned, scratch_folder, start as start_ranks
    from ...lessons.ranks import run_ranks

    runs = check_runs(runs)
    say = progress or (lambda line: None)
    start = time.monotonic()
    say(f"starting two gloo ranks (spawn, one thread each) for {len(runs)} run(s) ...")
    with scratch_folder() as tmp:
        rendezvous = os.path.join(tmp, "rendezvous")
        ctx = start_ranks(run_ranks, (2, rendezvous, runs, every, tmp), 2)
        with owned(ctx):  # ended however this ends: an error, Ctrl-C, SIGTERM
            if meanwhile is not None:
                meanwhile()
            seen, done = 0, False
            while not done:
                try:
                    done = ctx.join(timeout=0.2)
                except ProcessException as exc:  # a rank raised or died: say so, in one sentence
                    first = str(exc).strip().splitlines()
                    raise RanksFailed(
                        "the two ranks stopped before their runs were done"
                        + (f": {first[-1]}" if first else "")
                    ) from None
                seen = _relay(tmp, seen, runs, start, say)
        ranks = []
        for rank in range(2):
            with open(os.path.join(tmp, f"rank{rank}.json")) as f:
                ranks.append(json.load(f))
    return [[ranks[0][i], ranks[1][i]] for i in range(len(runs))]


def _relay(tmp: str, seen: int, runs: list, start: float, say) -> int:
    path = os.path.join(tmp, "progress")
    if not os.path.exists(path):
        return seen
    with open(path) as f:  # whole lines only: rank 0 may be writing the next one now
        lines = f.read().split("\n")[:-1]
    t = time.monotonic() - start
    for i, line in enumerate(lines[seen:], start=seen):
        if line == "joined":
            say(f"  both ranks started and joined their process group: {t:.1f} s")
        else:
            _, _, seed, steps = line.split()
            n = sum(x.startswith("run ") for x in lines[: i + 1])
            say(f"  run {n} of {len(runs)} trained (seed {seed}, {steps} steps): {t:.1f} s")
    return len(lines)
