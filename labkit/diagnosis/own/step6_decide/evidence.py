"""The evidence the setup triage gathers for one seed, each piece at most once.

- ``run``/``replay``: the learner's own ``train(seed, epochs)``, watched by `Replay`;
- ``arm(name)``: a plain loop (see `loops`) on the learner's model, data and loss;
- ``shuffled(name)``: the same plain loop with labels permuted across the epoch;
- ``inputs``: the input checks of `data`; ``held_out``: the optional val batches.
A rule reads any other piece through the public cache, ``ev.once(key, make)``.

A rule's conclusion is a `Finding` (see `labkit.diagnosis.finding`).
"""

from __future__ import annotations

import math
import time

from ....core.hashing import hash_module, hash_tensors
from ...cache import OncePerSeed
from ..step1_capture import setup as proto, skips as own_skips
from ..step3_h2.data import input_checks
from ...finding import OwnFinding  # noqa: F401 (re-exported)
from ..step4_h1.flow import facts
from ..step1_capture.loops import LoopResult, plain_loop, shuffled_labels
from ..step1_capture.replay import Replay

TARGET_STEPS = 150  # the learner's run is asked for enough epochs to reach this many batches
MIN_EPOCHS, MAX_EPOCHS = 3, 50  # three epochs at least, so once-per-epoch logs give 3 points


def epochs_for(n_batches: int) -> int:
    return max(MIN_EPOCHS, min(MAX_EPOCHS, math.ceil(TARGET_STEPS / n_batches)))


class SeedEvidence(OncePerSeed):
    def __init__(self, setup, seed: int):
        super().__init__(seed)
        self.setup = setup
        self.batches = proto.batches(setup, seed)
        self.n_batches = len(self.batches)
        self.epochs = epochs_for(self.n_batches)
        self.steps = self.epochs * self.n_batches
        self.sizes = [len(proto.labels_of(b)) for b in self.batches]
        self._arms: dict = {}

    # ---- the learner's own run ------------------------------------------------------
    def _own(self):
        replay, started = Replay(self.setup, after_step_loss=True), time.perf_counter()
        with replay:
            run = proto.train(self.setup, self.seed, self.epochs)
        own_skips.measured(max(len(replay.steps), len(run), 1), time.perf_counter() - started)
        return run, replay

    @property
    def run(self):
        return self.once("own", self._own)[0]

    @property
    def replay(self) -> Replay:
        return self.once("own", self._own)[1]

    @property
    def facts(self) -> dict:
        return self.once("facts", lambda: facts(self.replay, self.run))

    @property
    def counts(self) -> dict | None:
        """Per row of the learner's run, the rows, label positions and labels not -100 of the
        batch its step trained on (from the replay's forwards), or None where a step's batch
        was not seen."""

        def make():
            seen = {}
            try:
                forwards = self.replay.forwards
            except Exception:  # the ranks keep their forwards (`single.NotOnRanks`): no counts
                return None
            for f in forwards:
                if f.get("grad_enabled") and f.get("counts") is not None:
                    seen.setdefault(f["step"], f["counts"])
            n = len(self.run)
            if n != len(self.replay.steps) or any(t not in seen for t in range(n)):
                return None
            rows, positions, kept = zip(*(seen[t] for t in range(n)))
            return {"rows": list(rows), "positions": list(positions), "kept": list(kept)}

        return self.once("counts", make)

    @property
    def rows_per_epoch(self) -> int:
        n = len(self.run)
        return n // self.epochs if n % self.epochs == 0 and n >= self.epochs else self.n_batches

    def hashes(self) -> tuple[str, str]:
        """The data's and the initial model's hashes (a model built and every batch hashed: once)."""
        return self.once("hashes", self._hashes)

    def _hashes(self) -> tuple[str, str]:
        data = {
            f"{i}.{k}": v
            for i, b in enumerate(self.batches)
            for k, v in (b.items() if isinstance(b, dict) else enumerate(b))
            if hasattr(v, "shape")
        }
        return hash_tensors(data), hash_module(proto.make_model(self.setup, self.seed))

    # ---- plain loops ----------------------------------------------------------------
    def arm(self, name: str) -> LoopResult:
        if name not in self._arms:  # the reference arms score the held-out batches as they train
            started, val = time.perf_counter(), self.val() if name in ("own", "ref") else None
            self._arms[name] = plain_loop(
                self.setup, self.seed, self.steps, name, batches=self.batches, held_out=val
            )
            own_skips.measured(self.steps, time.perf_counter() - started)
        return self._arms[name]

    def ran(self, name: str) -> bool:
        """Whether the plain arm `name` has run on this seed (a reference named only if so)."""
        return name in self._arms

    def val(self) -> list | None:
        if not callable(getattr(self.setup, "val_batches", None)):
            return None
        return self.once("val", lambda: proto.batches(self.setup, self.seed, "val_batches"))

    def best_arm(self) -> str:
        """The plain arm that learns: the learner's optimizer if it does at least as well as
        the reference, else the reference."""
        own = self.arm("own")
        if math.isfinite(own.mean) and own.level() < 0.5 * abs(own.losses[0]):
            return "own"  # it learns: no need to train the reference to know
        return "own" if math.isfinite(own.mean) and own.mean <= self.arm("ref").mean else "ref"

    def shuffled(self, name: str | None = None, permutation: int = 0) -> LoopResult:
        """The plain arm `name` on labels permuted across the epoch; `permutation` > 0: a
        further permutation of them (the same init and batch order)."""
        name = name or self.best_arm()
        key = f"shuffled:{name}" + (f":{permutation}" if permutation else "")
        if key not in self._arms:
            started = time.perf_counter()
            self._arms[key] = plain_loop(
                self.setup,
                self.seed,
                self.steps,
                name,
                batches=shuffled_labels(self.batches, self.seed + 100 * permutation),
            )
            if permutation:
                own_skips.measured(self.steps, time.perf_counter() - started)
        return self._arms[key]

    @property
    def inputs(self) -> dict:
        return self.once("inputs", lambda: input_checks(self.batches))

    def held_out(self) -> LoopResult | None:
        """The best arm, which scored the held-out batches as it trained (no second run)."""
        if self.val() is None:
            return None
        return self.arm(self.best_arm())
