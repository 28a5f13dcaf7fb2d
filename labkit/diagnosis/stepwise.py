"""What both explorers share: running a fixed list of triage steps one at a time.

`Explorer` (a zoo bug) and `SetupExplorer` (the learner's own code) each list their
`steps`, define one ``_step_<name>()`` per step, and say with `_wants_intervention()`
whether the intervention and confirmation steps apply to the finding they reached.
"""

from __future__ import annotations


def two_seeds(seeds) -> list:
    """`seeds` as a list of two different seeds, or a ValueError saying why not."""
    seeds = list(seeds)
    if len(seeds) != 2 or seeds[0] == seeds[1]:
        raise ValueError(
            f"seeds={seeds} must be two different seeds: one to convict, one to confirm."
        )
    return seeds


class Stepwise:
    steps: tuple = ()
    done: list

    def _wants_intervention(self) -> bool:
        raise NotImplementedError

    @property
    def next_step(self) -> str | None:
        """The next step to run, or None when the triage has nothing left to do."""
        for step in self.steps:
            if step not in self.done:
                if step in ("intervention", "confirmation") and not self._wants_intervention():
                    continue
                return step
        return None

    def run_next(self) -> str:
        """Run one step and return a sentence saying what it found."""
        step = self.next_step
        if step is None:
            return "nothing left to run"
        message = getattr(self, f"_step_{step}")()
        self.done.append(step)
        return f"{step}: {message}"

    def run_all(self):
        """Every remaining step; returns the filled record."""
        while self.next_step is not None:
            self.run_next()
        return self.record
