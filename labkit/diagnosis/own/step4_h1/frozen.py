"""Frozen parameters (`requires_grad=False`) in the learner's model: which, how many elements,
whether the optimizer holds them, and whether the freeze is a mistake.

Freezing on purpose is common (a pretrained backbone under a new head, a linear probe, a
fixed normalisation), so a frozen parameter alone convicts nothing: it is reported in the
record's notes. Learning faster unfrozen is no defect either: a probe that learns is healthy,
and the faster unfrozen loop is advice (`baseline.advise`). It convicts (H1, the
model/optimizer setup) when the plain loop with everything unfrozen reaches a clearly lower
loss than the same loop as given, on both seeds, and either
- the freeze has a shape no deliberate freeze has: part of a layer frozen while the rest of
  it trains (a weight frozen, its bias training), a frozen layer that runs after a
  trainable one (a frozen head on a trained body), or frozen layers that hold their own
  random init (they differ between seeds and lie exactly as nn.Linear / nn.Conv draws them:
  nothing was ever loaded into them, so there is nothing pretrained to keep); or
- the loop as given does not learn at all while the unfrozen one does.
"""

from __future__ import annotations

import torch

from ..step1_capture import setup as proto
from ..baseline import advise, learns
from ...finding import OwnFinding
from ..margins import below
from .flow import param_names

MARGIN = 0.05  # the unfrozen loop's loss below the frozen one's by this share of the start loss
INIT_BOUND = (
    1.05  # the largest |value| over the init's bound 1/sqrt(fan_in): within it (a draw reaches ~1)
)
INIT_SPREAD = (
    0.15  # the spread off a uniform's std by less than this share: drawn as the init draws
)


def _order(ev) -> list[str]:
    """Names of the modules with parameters, in the order a forward pass of loss_fn calls them."""

    def make():
        model = proto.make_model(ev.setup, ev.seed)
        order, handles = [], []
        for name, mod in model.named_modules():
            if any(True for _ in mod.parameters(recurse=False)):
                handles.append(
                    mod.register_forward_pre_hook(
                        lambda m, a, name=name: order.append(name) if name not in order else None
                    )
                )
        try:
            with torch.no_grad():
                ev.setup.loss_fn(model, ev.batches[0])
        except Exception:  # a forward this check cannot run: no order measured
            return []
        finally:
            for h in handles:
                h.remove()
        return order

    return ev.once("forward_order", make)


def frozen_params(ev) -> list[dict]:
    """The frozen floating-point parameters of the modules that ran in the learner's loop."""

    def make():
        rp = ev.replay
        names = param_names(rp.models.values())
        held = {id(p) for o in rp.optimizers.values() for g in o.param_groups for p in g["params"]}
        out = []
        for p in rp.watched():
            if p.requires_grad or not p.is_floating_point() or id(p) not in names:
                continue
            if names[id(p)][1] in rp.called:
                out.append({"name": names[id(p)][0], "numel": p.numel(), "held": id(p) in held})
        return out

    return ev.once("frozen", make)


def _owner(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else name


def _by_name(ev) -> dict:
    names = param_names(ev.replay.models.values())
    return {names[id(p)][0]: p for p in ev.replay.watched() if id(p) in names}


def _at_default_init(module, p) -> bool:
    """`p` (a weight or bias of an nn.Linear / nn.ConvNd) lies as the layer's own init draws it:
    uniform within 1/sqrt(fan_in), with a uniform's spread. Trained or loaded weights leave it."""
    if not isinstance(module, (torch.nn.Linear, torch.nn.modules.conv._ConvNd)) or p.numel() < 32:
        return False
    bound = 1 / module.weight[0].numel() ** 0.5
    v = p.detach().float()
    spread = float(v.std()) / (bound / 3**0.5)  # 1 for a uniform within the bound
    return below("frozen.init_within_bound", float(v.abs().max()) / bound, INIT_BOUND) and below(
        "frozen.init_spread", abs(spread - 1), INIT_SPREAD
    )


def _random_init(evs, frozen: list[dict]) -> list[str]:
    """The frozen parameters that hold their own random init: their values differ between the
    seeds' models (weights loaded from a checkpoint are the same whatever the seed) and lie as
    the layer's init draws them (a body pretrained from a seeded init has moved away)."""
    a, b = _by_name(evs[0]), _by_name(evs[1])
    modules = {n: m for model in evs[0].replay.models.values() for n, m in model.named_modules()}
    return [
        f["name"]
        for f in frozen
        if f["name"] in a
        and f["name"] in b
        and a[f["name"]].shape == b[f["name"]].shape
        and not torch.equal(a[f["name"]], b[f["name"]])
        and _at_default_init(
            modules.get(_owner(f["name"]) if "." in f["name"] else ""), a[f["name"]]
        )
    ]


def _tied_owners(ev, frozen: list[dict]) -> set[str]:
    """The modules that hold a frozen parameter under another name too (a tied weight: an
    output layer that shares the embedding is frozen with it)."""
    ids = {id(p) for n, p in _by_name(ev).items() if n in {f["name"] for f in frozen}}
    return {
        _owner(name)
        for model in ev.replay.models.values()
        for name, p in model.named_parameters(remove_duplicate=False)
        if id(p) in ids
    }


def _shape_of_mistake(evs, frozen: list[dict]) -> str | None:
    ev = evs[0]
    rp = ev.replay
    trainable = [
        n
        for i, (n, _m) in param_names(rp.models.values()).items()
        if any(id(p) == i and p.requires_grad for p in rp.watched())
    ]
    owners = {_owner(f["name"]) for f in frozen} | _tied_owners(ev, frozen)
    partial = sorted(o for o in owners if any(_owner(n) == o for n in trainable))
    if partial:
        return (
            f"part of a layer is frozen while the rest of it trains ({', '.join(partial[:4])}: "
            "its weight frozen, its bias training), which no deliberate freeze does"
        )
    order = _order(ev)
    trained_at = [i for i, name in enumerate(order) if any(_owner(n) == name for n in trainable)]
    after = [
        name for i, name in enumerate(order) if name in owners and trained_at and i > trained_at[0]
    ]
    if after:
        tied = [a for a in after if a not in {_owner(f["name"]) for f in frozen}]
        return (
            f"the frozen {', '.join(after[:4])} {'runs' if len(after) == 1 else 'run'} after a trainable layer "
            "(a frozen head on a trained body), where a deliberate freeze keeps the first layers"
            + (
                f"; {', '.join(tied[:4])} {'holds' if len(tied) == 1 else 'hold'} the same "
                "tensor as a frozen input layer (tied weights), so the freeze holds the output "
                "layer too"
                if tied
                else ""
            )
        )
    random = _random_init(evs, frozen)
    if random:
        return (
            f"the frozen {', '.join(random[:4])} {'differs' if len(random) == 1 else 'differ'} between seeds "
            f"{evs[0].seed} and {evs[1].seed}: frozen at a random init, where a deliberate freeze keeps "
            "weights loaded from a checkpoint or computed from the data, the same whatever the seed"
        )
    return None


def describe(frozen: list[dict], total: int) -> str:
    n = sum(f["numel"] for f in frozen)
    held = [f for f in frozen if f["held"]]
    listed = ", ".join(f"{f['name']} ({f['numel']})" for f in frozen[:6]) + (
        " ..." if len(frozen) > 6 else ""
    )
    return (
        f"{listed}: {n} of {total} elements ({n / max(1, total):.0%}) have requires_grad=False; the "
        + (
            "optimizer holds all of them"
            if len(held) == len(frozen)
            else "optimizer holds none of them"
            if not held
            else f"optimizer holds {len(held)} of them"
        )
    )


def frozen_rule(evs) -> OwnFinding | None:
    found = [frozen_params(ev) for ev in evs]
    if not found[0] or [f["name"] for f in found[0]] != [f["name"] for f in found[1]]:
        return None
    total = sum(p.numel() for p in evs[0].replay.watched() if p.is_floating_point())
    text = describe(found[0], total)
    for ev in evs:
        ev.results["frozen_note"] = "frozen parameters: " + text
    levels = []
    for ev in evs:
        start = abs(ev.arm("ref").losses[0])
        levels.append((ev.arm("unfrozen").level(), ev.arm("ref").level(), start))
    if not all(
        below("frozen.unfrozen_learns", free, ref - MARGIN * start, seed=i)
        for i, (free, ref, start) in enumerate(levels)
    ):
        return None
    shape = _shape_of_mistake(evs, found[0])
    stuck = all(ref > 0.8 * start and free < 0.5 * start for free, ref, start in levels)
    if shape is None and not stuck:
        free, ref, _ = levels[0]
        advise(
            evs[0],
            f"advice, not a defect: the freeze looks deliberate and {learns(evs[0])}; with "
            f"every parameter trainable a plain loop reaches {free:.3g} instead of {ref:.3g} "
            "(fine-tuning the frozen layers would learn faster, if that is what you want)",
        )
        return None
    why = shape or "the loop as given does not learn, and with them unfrozen it does"
    free, ref, _ = levels[0]
    return OwnFinding(
        "H1",
        "frozen",
        f"frozen parameters: {text}. {why[0].upper()}{why[1:]}; with "
        f"every parameter trainable the same plain loop reaches a loss of {free:.3g} "
        f"instead of {ref:.3g} (seed {evs[0].seed})",
        arm="unfrozen",
        variable=("requires_grad", "False", "True"),
    )
