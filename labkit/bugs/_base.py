"""`Bug`: a named replacement for one seam of the reference loop, plus what it teaches."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field, replace
from collections.abc import Callable

from ..errors import check_choice

SYSTEMS = {"H1": "optimizer/loss", "H2": "data", "H3": "instrumentation"}
STAGES = (
    "data/targets",
    "forward",
    "loss/masking",
    "graph",
    "gradients",
    "optimizer",
    "evaluation/logging",
)
SEAMS = ("data", "model", "optimizer", "forward", "loss", "backward", "step", "log")


@dataclass(frozen=True)
class Bug:
    name: str
    system: str  # "H1" | "H2" | "H3": which system the triage should convict
    stage: str  # one of STAGES: where in the diagnostic stack it breaks
    symptom: str  # one line a learner would notice first
    mechanism: str  # one line: why, the conviction's mechanism line
    exercise: str  # where it is taught, e.g. "Exercise A"
    seam: str  # the one seam of the reference loop it replaces
    replacement: Callable = field(repr=False)
    setup: dict = field(
        default_factory=dict
    )  # Config settings under which it shows (e.g. task="lm")
    variants: dict = field(
        default_factory=dict
    )  # name -> (seam, replacement): the same bug elsewhere

    def __post_init__(self):
        check_choice("system", self.system, SYSTEMS)
        check_choice("stage", self.stage, STAGES)
        check_choice("seam", self.seam, SEAMS)

    def variant(self, name: str) -> Bug:
        """The same bug planted in another way, e.g. ``zero_lr:per_batch_scheduler``."""
        if name not in self.variants:
            from ..errors import suggest

            listed = ", ".join(self.variants) or "none"
            raise ValueError(
                f"bug {self.name!r} has no variant {name!r}; variants: "
                f"{listed}.{suggest(name, self.variants)}"
            )
        seam, replacement = self.variants[name]
        return replace(
            self, name=f"{self.name}:{name}", seam=seam, replacement=replacement, variants={}
        )

    def patch(self, seams):
        """The reference seams with this bug's one seam swapped in."""
        return seams.replace(**{self.seam: self.replacement})

    @property
    def doc(self) -> str:
        return inspect.getdoc(inspect.getmodule(self.replacement)) or ""

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "system": self.system,
            "stage": self.stage,
            "symptom": self.symptom,
            "mechanism": self.mechanism,
            "exercise": self.exercise,
            "seam": self.seam,
            "setup": self.setup,
            "variants": sorted(self.variants),
        }
