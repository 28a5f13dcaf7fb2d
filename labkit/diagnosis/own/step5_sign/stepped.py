"""labkit's own intervention for a tensor the loss depends on that no optimizer holds
(`leaves.graph_rule`, ``leaf_not_stepped``): the learner's own loop, with the optimizer that
``make_optimizer`` returns also holding those tensors (one more parameter group, the
optimizer's own defaults), and nothing else changed.

It runs on a shallow copy of the setup (without the deadline's per-instance wrappers, which
call the original; ``train`` keeps its deadline through `setup.call`), whose ``make_optimizer`` finds the tensors by the names
the setup's code gives them (``self.logit_scale``, ``self.table``), so each run's own tensors
are the ones added. A tensor that lives only in a local variable of ``train()`` cannot be
reached: then labkit has no intervention and the prescription alone signs the conviction.
The forecast is read off seed 0's run: its loss lands at least halfway from the learner's run to
it, on both seeds.

`moving_plan` does the same for a held tensor that never moves (``leaf_never_moves``): the
groups at LR 0 that hold it get the optimizer's default LR.
"""

from __future__ import annotations

import copy
import math

import torch

from ..step1_capture import setup as proto
from ..step4_h1.leaves import leaves
from .refloss import level


def _resolve(obj, name: str):
    for part in name.removeprefix("self.").split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, torch.Tensor) else None


def with_method(setup, method: str, change):
    """A shallow copy of `setup` whose `method` (``make_optimizer``, ``make_model``) returns
    the learner's result passed through `change(result, copy, argument)`; every other method is
    the learner's."""
    make = getattr(type(setup), method, None)
    fixed = copy.copy(setup)
    for name, value in list(vars(fixed).items()):  # the deadline's wrappers call the original
        if getattr(value, "labkit_bounded", False):
            delattr(
                fixed, name
            )  # the class's own method, bound to the copy (train keeps its deadline)

    def changed(argument):
        return change(make(fixed, argument), fixed, argument)

    setattr(fixed, method, changed)
    return fixed


def with_optimizer(setup, change):
    """`with_method` on ``make_optimizer``: `change(optimizer, copy, model)`."""
    return with_method(setup, "make_optimizer", change)


def _with_leaves(setup, names: list[str]):
    def add(opt, fixed, model):
        held = {id(p) for g in opt.param_groups for p in g["params"]}
        extra = [t for t in (_resolve(fixed, n) for n in names) if t is not None]
        extra = [t for t in extra if id(t) not in held]
        if extra:
            opt.add_param_group({"params": extra})
        return opt

    return with_optimizer(setup, add)


def _with_lr(setup, names: list[str]):
    """The optimizer's groups at LR 0 that hold a tensor of `names` at its default LR."""

    def lift(opt, fixed, model):
        own = dict(model.named_parameters()) if isinstance(model, torch.nn.Module) else {}
        ids = {id(t) for t in (own.get(n) or _resolve(fixed, n) for n in names) if t is not None}
        for g in opt.param_groups:
            if g["lr"] == 0 and any(id(p) in ids for p in g["params"]):
                g["lr"] = opt.defaults.get("lr", 0.0)
        return opt

    return with_optimizer(setup, lift)


def trial_forecast(evs, run):
    """(forecast, run) from a seed-0 trial of `run`: its loss lands at least halfway from the
    learner's run (the lower of both seeds' losses) to the trial's, or None when it does not
    beat both."""
    ev = evs[0]
    step = int(ev.run.table["step"][-1])
    before = min(level(e.run, step) for e in evs)
    after = level(run(ev.seed), step)  # the trial the forecast is read off
    if not (math.isfinite(after) and math.isfinite(before) and after < before):
        return None
    from .intervene import _num  # plain decimals: the forecast parser reads no 'e+05'

    return f"loss < {_num(after + 0.5 * (before - after))} by step {step}", run


def own_loop_plan(evs, changed, variable):
    """(forecast, run(seed) -> Run, variable) of the learner's own loop with one change made:
    `changed()` gives the changed setup, anew for every run (the forecast is sealed before the
    intervention starts); None when the seed-0 trial does not beat the learner's run."""

    def run(seed):
        return proto.train(changed(), seed, evs[0].epochs)

    found = trial_forecast(evs, run)
    return None if found is None else (*found, variable)


def moving_plan(evs):
    """labkit's own intervention for a held tensor that never moves (``leaf_never_moves``): the
    learner's own loop with the groups at LR 0 that hold those tensors at the optimizer's
    default LR, nothing else changed; None where the default is 0 too, a tensor has no name the
    setup's code or the model gives it, or the run does not beat the learner's on seed 0."""
    ev = evs[0]
    rows = [r for r in leaves(ev)["rows"] if r["step_grad"] and not r["moved"] and r["held"]]
    names = [r["name"] for r in rows]
    if not rows or not all(r["named"] or r["in_model"] for r in rows):
        return None
    if getattr(type(ev.setup), "make_optimizer", None) is None:
        return None

    return own_loop_plan(
        evs,
        lambda: _with_lr(ev.setup, names),
        (
            "the LR of " + ", ".join(names),
            "0",
            "the optimizer's default LR (your loop otherwise unchanged)",
        ),
    )


def plan(evs):
    """(forecast, run(seed) -> Run, variable), or None when a tensor has no name the setup's code
    gives it, or when holding them does not beat the learner's run on seed 0."""
    ev = evs[0]
    rows = [
        r
        for r in leaves(ev)["rows"]
        if r["grad"] and not r["moved"] and not r["in_model"] and not r["held"]
    ]
    names = [r["name"] for r in rows]
    if (
        not rows
        or not all(r["named"] and r["name"].startswith("self.") for r in rows)
        or getattr(type(ev.setup), "make_optimizer", None) is None
    ):
        return None

    return own_loop_plan(
        evs,
        lambda: _with_leaves(ev.setup, names),
        (
            "the optimizer's parameters",
            "as make_optimizer() builds them",
            "the same, with " + ", ".join(names) + " added",
        ),
    )
