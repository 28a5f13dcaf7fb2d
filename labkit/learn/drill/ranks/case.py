"""`RankCase`: the runs a distributed mystery's probes read, from ONE launch of two ranks.

The launch trains the mystery run (its run seed) and the second-seed run (run seed + 1)
one after the other in the same two processes, and the same model's first update in one
process is computed here while they train. Every probe then reads these results: after the
launch, each answer is immediate. Results made elsewhere (`runs`, e.g. a test's launch of
several bugs at once) can be handed in instead of launching.
"""

from __future__ import annotations

from .launch import STEPS, launch
from .mystery import RankMystery


class RankCase:
    def __init__(self, mystery: RankMystery, *, runs: dict | None = None, steps: int = STEPS):
        self.mystery, self.steps = mystery, steps
        self.seeds = (mystery.run_seed, mystery.run_seed + 1)
        self._runs = runs  # {seed: [rank 0's result, rank 1's]}
        self.progress = None  # where the launch's progress lines go (set by the drill)

    def runs(self) -> dict:
        """{seed: [rank 0's result, rank 1's]}, launching the two ranks on the first call."""
        if self._runs is None:
            got = launch(
                [(self.mystery.name, s, self.steps) for s in self.seeds],
                progress=self.progress,
                meanwhile=lambda: [self.one_process(s == self.seeds[1]) for s in self.seeds],
            )
            self._runs = dict(zip(self.seeds, got))
        return self._runs

    def pair(self, second: bool = False) -> list[dict]:
        return self.runs()[self.seeds[1 if second else 0]]

    def one_process(self, second: bool = False) -> float:
        """The first update's norm of the same model in one process, on the same 32 examples
        (cached by `first_update_one_process` itself)."""
        from ....core.ddp_loop import first_update_one_process

        return first_update_one_process(self.seeds[1 if second else 0])

    def reported(self) -> list:
        """Rank 0's reported loss: what the team's dashboard shows (the symptom)."""
        return self.pair()[0]["reported"]
