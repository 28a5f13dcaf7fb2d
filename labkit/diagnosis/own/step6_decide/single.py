"""The one-process checks on a distributed setup: the rules of `rules` (the logger, the data,
the optimizer and the loop) run in the parent on what the ranks' runs showed.

A DDP bug is not the only bug a DDP script can carry: an LR of 0, a layer left out of the
optimizer, a stale report. What each rank saw travels to the parent (`shipped`, read on the
rank from the one-process `Replay`, beside the learner's own log), and `RankEvidence` hands
it to the one-process rules as a `SeedEvidence`:

- ``run``: the learner's log on one rank, its raw loss the mean over the ranks (the loss of
  the step, the one a report should summarise) and its reports that rank's own;
- ``facts``: the replay's facts on rank 0 (``own_level`` from the mean over the ranks);
- the plain loops (``arm``, ``shuffled``): labkit's own loops on ``make_model``,
  ``make_optimizer``, ``batches`` and ``loss_fn``, in this process, as long as the ranks'
  runs (the ranks average their gradients over the whole batch that ``batches`` gives);
- what only the replay's live objects hold (the modules, the graph, per-parameter norms) is
  read on the rank into the `PIECES` the rules read (frozen parameters, the graph's leaves,
  each layer's norms, units that never fire); anything else a rule needs from them raises
  `NotOnRanks`, and the rule is named as not checked.
"""

from __future__ import annotations

import json
import math
import time
from types import SimpleNamespace

from ....core.run import Run
from ...cache import OncePerSeed
from ...finding import Finding
from ..step1_capture import setup as proto
from ..step3_h2 import features
from ..step3_h2.features import leak_rule
from ..step3_h2.data import signal_words
from ..step3_h2.offset import offset_rule
from ..step4_h1.flow import facts
from ..step4_h1.frozen import frozen_params, frozen_rule
from ..step4_h1.leaves import graph_rule, leaves, still_rule
from ..step4_h1.losspath import loss_path
from ..step4_h1.lossrange import range_rule
from ..step4_h1.norms import dead_units, layer_norms, norms_rule
from ..step4_h1.padding import padding_rule
from . import rules
from .evidence import SeedEvidence


class NotOnRanks(Exception):
    """A piece of the one-process evidence that does not travel from the ranks."""


class _View:
    """A rank's replay seen through DDP: its models are the learner's own module, so names
    read ``0.weight`` (not DDP's ``module.0.weight``); the rest is the replay's."""

    def __init__(self, replay, inner):
        self._replay = replay
        self.models = {id(inner): inner} if inner is not None else replay.models

    def __getattr__(self, name):
        return getattr(self._replay, name)


class _OnRank(OncePerSeed):
    """On a rank, after the learner's train(): what the one-process pieces read off an
    evidence (the replay, the run, the facts, the batches)."""

    def __init__(self, replay, run, setup, seed: int, inner):
        super().__init__(seed)
        self.replay, self.run, self.setup = _View(replay, inner), run, setup

    @property
    def facts(self) -> dict:
        return self.once("facts", lambda: facts(self.replay, self.run))

    @property
    def batches(self) -> list:
        return self.once("batches", lambda: proto.batches(self.setup, self.seed))


# the pieces a rank reads off its replay's live objects for the rules that need them
PIECES = {
    "frozen": frozen_params,
    "graph_leaves": leaves,
    "layer_norms": layer_norms,
    "dead_units": dead_units,
}


def shipped(replay, run, setup, seed: int, inner) -> dict:
    """On a rank: the replay's `facts` as plain data, with every step's LR, each optimizer's
    base LR, and the `PIECES` (a piece that cannot be read here is left out: its rule is then
    named as not checked)."""
    ev = _OnRank(replay, run, setup, seed, inner)
    f = dict(ev.facts)
    f["orphans"] = [list(s) for s in f["orphans"]]
    f["clip_zero"] = [list(c) for c in f["clip_zero"]]
    f["step_lrs"] = [st["lr"] for st in replay.steps]
    f["base_lrs"] = [
        [float(g.get("initial_lr", g["lr"])) for g in o.param_groups]
        for o in replay.optimizers.values()
    ]
    f["pieces"] = {}
    for key, piece in PIECES.items():
        try:
            f["pieces"][key] = json.loads(json.dumps(piece(ev)))
        except Exception:  # a piece this loop does not allow: its rule is not checked
            continue
    return f


HELD = {  # what a rule reads that stays in the ranks' processes, in the learner's words
    "models": "the model's modules",
    "graph": "the autograd graph of the loss",
    "called": "which modules ran",
    "per_param": "each parameter's update sizes",
    "backwards": "each backward call",
    "forwards": "each forward call",
}


class _Shipped:
    """The replay as it reaches the parent: the LRs; anything else raises `NotOnRanks`."""

    def __init__(self, f: dict):
        self.steps = [{"lr": lr, "loss_after": None} for lr in f["step_lrs"]]
        self.optimizers = {
            i: SimpleNamespace(param_groups=[{"lr": lr} for lr in lrs])
            for i, lrs in enumerate(f["base_lrs"])
        }

    def watched(self):
        raise NotOnRanks("the model's parameters")

    def __getattr__(self, name):
        raise NotOnRanks(HELD.get(name, name))


def _mean(columns: list[list]) -> list:
    return [
        None if any(v is None for v in vs) else sum(float(v) for v in vs) / len(vs)
        for vs in zip(*columns)
    ]


class RankEvidence(SeedEvidence):
    """One seed's evidence from the ranks (`ranks`: each rank's, as `rankhooks.observe`
    returns it), seen from rank `rank`; see the module docstring."""

    def __init__(self, setup, seed: int, ranks: list[dict], rank: int = 0):
        super().__init__(setup, seed)
        self.ranks = ranks
        self.epochs = ranks[0]["epochs"]
        self.steps = self.epochs * self.n_batches  # the plain loops: as long as the ranks' runs
        log = ranks[rank]["log"]
        raw = _mean([ev["log"]["loss_raw"] for ev in ranks])
        reported = log.get("loss_reported") or [None] * len(raw)
        run = Run.from_log(
            {"step": log["step"], "loss_raw": raw, "loss_reported": reported},
            seed=seed,
            started_at=time.time(),
            config={"task": f"rank {rank}'s log, the raw loss averaged over the ranks"},
        )
        f = dict(ranks[0]["facts"])
        tail = raw[-max(1, len(raw) // 5) :]
        f["own_level"] = (
            sum(tail) / len(tail)
            if tail and all(v is not None and math.isfinite(v) for v in tail)
            else math.inf
        )
        self.results["own"] = (run, _Shipped(f))
        self.results["facts"] = f
        self.results.update(f.get("pieces", {}))  # the rules read them as if made here

    def once(self, key, make):
        if key == "third_seed":  # its run would be the learner's train(), on the ranks
            raise NotOnRanks("a third seed")
        return super().once(key, make)


def _logger(evs) -> Finding | None:
    """The one-process logger check on every rank's reports, against the mean raw loss."""
    ranks = len(evs[0].ranks)
    for r in range(ranks):
        on = evs if r == 0 else [RankEvidence(ev.setup, ev.seed, ev.ranks, r) for ev in evs]
        found = rules._h3(on)
        if found is not None:
            if ranks > 1:
                found.mechanism = f"on rank {r}: {found.mechanism}"
            return found
    return None


# (what the rule checks, in the learner's words; the rule), in the order of `rules.decide`
# but one: the optimizer and the loop come before the label-shuffle control. The plain loops
# here are as short as the ranks' runs (24 steps for the tests' setups), too short for the
# reference optimizer to learn, so an LR of 0 would read as labels without signal; the
# replay's facts (an LR of 0, parameters missing from the optimizer) need no plain loop.
RULES = (
    ("the logger on every rank", _logger),
    ("the inputs and labels", rules._h2),
    ("a feature that copies the label", leak_rule),
    ("frozen parameters", frozen_rule),
    ("tensors the loss depends on that no optimizer steps", graph_rule),
    ("dead or stalled layers", norms_rule),
    ("the loss path", loss_path),
    ("the token offset", offset_rule),
    ("the loss's range", range_rule),
    ("padding in the loss", padding_rule),
    ("the optimizer and the loop", rules._h1),
    ("the label-shuffle control", rules._h2_signal),
    ("held tensors that never move", still_rule),
)


def decide(setup, own: dict, seeds) -> tuple[Finding, list, list[str], list[str]]:
    """The one-process rules, H3 -> H2 -> H1, on the ranks' evidence `own` ({seed: [each
    rank's]}): (the finding, the evidence, what was checked, what could not be)."""
    evs = [RankEvidence(setup, seed, own[str(seed)]) for seed in seeds]
    done, missing = [], []
    for name, rule in RULES:
        try:
            found = rule(evs)
        except NotOnRanks as exc:
            missing.append(f"{name} (it reads {exc}, held in the ranks' processes)")
            continue
        done.append(name)
        if found is not None:
            return found, evs, done, missing
    try:
        found = rules._healthy_or_unknown(evs)
    except NotOnRanks:  # its words read the replay: the verdict was NONE
        found = Finding("NONE", "healthy", "")
    return found, evs, done, missing


NOT_RUN = "the overfit-64 gate (labkit's Adam on 64 of your examples)"


def acquittal(evs, done: list[str], missing: list[str]) -> str:
    """What the one-process checks measured on a healthy setup, and what they could not."""
    said, unsaid = features.describe(evs[0])
    sig = evs[0].results.get("signal") or {}
    plain = evs[0].arm("own").level()
    head = (
        f"the one-process checks found no defect (checked: {', '.join(done)}): every rank's "
        "report rebuilt from the mean raw loss over the ranks"
    )
    parts = [head, said]
    if sig.get("verdict") == "signal":
        parts.append(f"the labels carry signal ({signal_words(sig)})")
    lrs = [lr for step in evs[0].replay.steps for lr in step["lr"]]
    if lrs:
        parts.append(f"the LR reaches {max(lrs):.2g}")
    own = evs[0].facts["own_level"]
    parts.append(
        f"your loop ends at {own:.3g} (mean over the ranks) where a plain loop with the same "
        f"model, data, loss and optimizer reaches {plain:.3g}"
    )
    if all(ev.ran("init") for ev in evs):  # the reference `rules` trained before acquitting
        init = " / ".join(f"{ev.arm('init').level():.3g}" for ev in evs)
        parts.append(
            f"the same loop on your model re-initialised by PyTorch's defaults reaches {init}"
        )
    line = ", ".join(parts)
    unchecked = [*missing, *([unsaid] if unsaid else []), NOT_RUN]
    if unchecked:
        line += "; not checked at world_size > 1: " + ", ".join(unchecked)
    return line


def sign(rec, f: Finding, evs, seeds) -> None:
    """A one-process conviction's intervention: labkit's own plain loops, in this process,
    where its arm is one (`step5_sign.intervene.plan`); for the logger, the forecast is sealed
    and ``record.intervene(fixed_setup)`` runs the fix on the ranks (`rankfix`)."""
    from ..step5_sign.intervene import plan

    try:
        planned = plan(f, evs) if f.arm else None
    except NotOnRanks:
        planned = None
    if planned is None or f.variable is None:
        for row in ("intervention", "confirmation"):
            rec.set_row(
                row,
                "not run: labkit has no change of its own to make for this mechanism on the "
                "ranks; make the fix named above and run labkit.diagnose again",
                status="UNKNOWN",
            )
        return
    forecast, run = planned
    name, before, after = f.variable
    rec.plan_intervention({name: before}, {name: after}, forecast)
    if f.arm == "logger":  # the learner's loop, logged honestly: only the learner can change it
        rec.set_row(
            "confirmation",
            f"your fixed setup on seed {seeds[1]}, on the ranks, against the same sealed forecast",
            status="UNKNOWN",
        )
        rec.notes.append(
            "labkit cannot change your logger for you: make the one change named above, then "
            "pass your fixed setup to record.intervene(fixed_setup), which runs it on the "
            "ranks against this sealed forecast"
        )
        return
    rec.record_intervention_run(run(seeds[0]))
    rec.record_confirmation(run(seeds[1]))
