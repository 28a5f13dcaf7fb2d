"""`OncePerSeed`: what a triage gathers on one seed, each piece made at most once.

Both triages keep their evidence this way: the zoo's `zoo.evidence.Evidence` and the
learner's own code's `own.evidence.SeedEvidence`. A rule asks ``ev.once(key, make)``
for a piece; the first ask makes it, every later one reads what was kept in
``ev.results``.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Callable


class OncePerSeed:
    def __init__(self, seed: int):
        self.seed = seed
        self.results: dict[str, Any] = {}

    def once(self, key: str, make: Callable[[], Any]):
        """The piece called `key`: made by ``make()`` the first time, then kept."""
        if key not in self.results:
            self.results[key] = make()
        return self.results[key]
