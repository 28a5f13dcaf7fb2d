"""`ZooSetup`: labkit's reference loop with one bug of the zoo (or none), as the zoo's
triage runs it.

The bug is resolved once, when the setup is made (`ZooSetup.of`): its patched seams and
the `Config` it shows under are kept as they are, never flattened into a dict and built
again. `trainer(seed)` gives a fresh run of it on one seed; `with_reference(seam)` is the
same setup with one seam put back to the reference (the one-variable intervention), and
`as_dict()` is what the `TriageRecord` compares (its settings, the bug, that seam).
"""

from __future__ import annotations

import dataclasses

from ...bugs.inject import resolve
from ...core.config import Config
from ...core.seams import Seams
from ...core.train import Trainer


@dataclasses.dataclass(frozen=True)
class ZooSetup:
    config: Config
    seams: Seams  # the reference seams with the bug's seam patched in
    bug: str | None = None  # the bug's name, kept in every run's meta
    reference_seam: str | None = None  # the one seam put back to the reference, if any

    @classmethod
    def of(cls, bug: str | None = None, config: Config | None = None) -> ZooSetup:
        """The zoo bug `bug` (a name, or None for the healthy reference) under `config`, or,
        without one, under the setup where the bug shows."""
        config, seams, name = resolve(config, bug, None, {})
        return cls(config, seams, name)

    @property
    def subject(self) -> str:
        return f"bug {self.bug}" if self.bug else f"reference setup (task={self.config.task})"

    def with_reference(self, seam: str) -> ZooSetup:
        return dataclasses.replace(self, reference_seam=seam)

    def trainer(self, seed: int, steps: int | None = None) -> Trainer:
        """A fresh run of this setup on `seed` (for `steps` steps instead of the config's)."""
        config = self.config.replace(seed=seed, **({"steps": steps} if steps else {}))
        seams = self.seams
        if self.reference_seam:
            seams = seams.replace(**{self.reference_seam: getattr(Seams(), self.reference_seam)})
        return Trainer(config, seams=seams, bug=self.bug)

    def as_dict(self) -> dict:
        return {**self.config.as_dict(), "bug": self.bug, "reference_seam": self.reference_seam}


def descent_forecast(task: str) -> str:
    """The sealed FORECAST of an intervention that should let the reference loop descend."""
    return "loss < 1.0 by step 150" if task == "classify" else "loss < 1.5 by step 150"
