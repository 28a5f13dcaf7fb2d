"""Per-layer gradient and update norms of the learner's own loop, judged relative to each
layer's size and to the other layers.

A total gradient norm says nothing about where it went: 1e-3 can be a healthy late step or
one layer taking all of it while another gets none. `layer_norms` reads the replay's
per-parameter sums (`Replay.per_param`) and gives, for each layer the optimizer trains, its
mean gradient and update norms and the update relative to the layer's own weights. A layer
whose relative update is orders of magnitude below the median of the other layers is
stalled: "blocked" when its gradient is exactly 0 (units that never activate, a path cut
off), "vanishing" when it is tiny but not 0 (a gradient shrinking through many layers),
"unstepped" when it has a gradient and the optimizer moves it by exactly 0 (its group's LR is
0): convicted only when the run fails by its own test, else said as advice.
"""

from __future__ import annotations

import math

import torch

from ..step1_capture import setup as proto
from ...finding import OwnFinding
from ..margins import below
from .flow import param_names

RATIO = 1e-3  # a layer whose relative update is below this fraction of the others' median
MIN_LAYERS = 2
MIN_MATRIX = 16  # a layer is judged when it holds a weight matrix of at least this many elements
CHANNELS_FIRST = (torch.nn.modules.conv._ConvNd, torch.nn.modules.batchnorm._BatchNorm)
DEAD = 0.9  # this share of a layer's input units at exactly 0 for every example: they never fire


def _owner(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else name


def layer_norms(ev) -> list[dict]:
    """One row per layer (the module that owns the parameters) that the optimizer trains."""

    def make():
        rp = ev.replay
        names = param_names(rp.models.values())
        held = {id(p) for o in rp.optimizers.values() for g in o.param_groups for p in g["params"]}
        layers: dict[str, dict] = {}
        for p in rp.watched():
            acc = rp.per_param.get(id(p))
            if (
                not p.requires_grad
                or id(p) not in held
                or not acc
                or not acc[2]
                or id(p) not in names
                or names[id(p)][1] not in rp.called
            ):  # a module that never ran is not stalled
                continue
            name = names[id(p)][0]
            row = layers.setdefault(
                _owner(name),
                {"layer": _owner(name), "w2": 0.0, "g2": 0.0, "u2": 0.0, "numel": 0, "params": []},
            )
            row["w2"] += float(p.detach().float().pow(2).sum())
            row["g2"] += (acc[0] / acc[2]) ** 2
            row["u2"] += (acc[1] / acc[2]) ** 2
            row["numel"] += p.numel()
            row["params"].append(name)
            row["matrix"] = row.get("matrix", False) or (p.dim() >= 2 and p.numel() >= MIN_MATRIX)
        out = []
        for row in layers.values():
            w, g, u = (math.sqrt(row.pop(k)) for k in ("w2", "g2", "u2"))
            if w > 0 and math.isfinite(w) and math.isfinite(u) and math.isfinite(g):
                out.append({**row, "weight": w, "grad": g, "update": u, "rel_update": u / w})
        return out

    return ev.once("layer_norms", make)


def stalled_layers(ev) -> list[dict]:
    """The layers whose relative update is below RATIO x the median of the other layers."""
    rows = [
        r for r in layer_norms(ev) if r["matrix"]
    ]  # layers of weights, not a lone scale or norm
    if len(rows) < MIN_LAYERS or ev.facts["nonfinite_at"] is not None:
        return []
    out = []
    for row in rows:
        others = sorted(r["rel_update"] for r in rows if r is not row)
        median = others[len(others) // 2]
        if median > 0 and below(
            f"norms.rel_update:{row.get('name')}", row["rel_update"], RATIO * median
        ):
            out.append(
                {
                    **row,
                    "median_others": median,
                    "kind": "blocked"
                    if row["grad"] == 0
                    else "unstepped"
                    if row["update"] == 0
                    else "vanishing",
                }
            )
    return out


def _fmt(row) -> str:
    return (
        f"layer {row['layer']} ({', '.join(row['params'])}; {row['numel']} elements): relative update "
        f"{row['rel_update']:.1e} per step against a median of {row['median_others']:.1e} for the other "
        f"layers, mean gradient norm {row['grad']:.1e}"
    )


def _dead_inputs(model, setup, batch) -> dict[str, tuple[int, int, str]]:
    """Layer -> (units at exactly 0 for every example, units, the layer before it) for the
    layers after the first (the raw inputs may be sparse), inputs as (batch, ..., features)."""
    seen, order, handles = {}, [], []
    for name, mod in model.named_modules():
        if any(True for _ in mod.parameters(recurse=False)):

            def pre(m, args, name=name):
                x = args[0] if args and torch.is_tensor(args[0]) else None
                if name not in seen:
                    order.append(name)
                    if x is not None and x.is_floating_point() and x.dim() >= 2:
                        dim = 1 if isinstance(m, CHANNELS_FIRST) else -1
                        silent = (x.detach() == 0).movedim(dim, -1).flatten(0, -2).all(0)
                        seen[name] = (int(silent.sum()), silent.numel())
                    else:
                        seen[name] = None

            handles.append(mod.register_forward_pre_hook(pre))
    try:
        with torch.no_grad():
            setup.loss_fn(model, batch)
    except Exception:  # a forward this check cannot run: no inputs measured
        return {}
    finally:
        for h in handles:
            h.remove()
    return {
        name: (*seen[name], order[i - 1])
        for i, name in enumerate(order)
        if i and seen.get(name) and seen[name][0] >= DEAD * seen[name][1]
    }


def dead_units(ev) -> dict:
    """Layers whose inputs are dead both at init and at the end of the learner's run."""

    def make():
        if not ev.replay.models or ev.facts["nonfinite_at"] is not None:
            return {}
        batch = proto.take(ev.batches, 64)
        torch.manual_seed(ev.seed)
        start = _dead_inputs(proto.make_model(ev.setup, ev.seed), ev.setup, batch)
        end = _dead_inputs(next(iter(ev.replay.models.values())), ev.setup, batch)
        return {k: end[k] for k in start if k in end}

    return ev.once("dead_units", make)


def _dead_finding(evs) -> OwnFinding | None:
    found = [dead_units(ev) for ev in evs]
    layers = sorted(set(found[0]) & set(found[1]))
    if not layers:
        return None
    norms = {r["layer"]: r for r in layer_norms(evs[0])}
    parts = []
    for name in layers[:3]:
        dead, units, before = found[0][name]
        row = norms.get(before)
        moved = (
            f"; {before}'s relative update per step is {row['rel_update']:.1e}, mean gradient norm "
            f"{row['grad']:.1e}"
            if row
            else ""
        )
        parts.append(
            f"{dead} of the {units} units that feed {name} (the outputs of {before}) are exactly 0 "
            f"for every example, at init and still at the end of your run{moved}"
        )
    return OwnFinding(
        "H1",
        "dead_units",
        "gradient flow is blocked by units that never activate: "
        + "; ".join(parts)
        + ". A ReLU whose input stays below 0 (a bias or an init far "
        "off, inputs on another scale) passes no gradient back, so the layers before it "
        "never learn and the layers after it see a constant",
    )


def norms_rule(evs) -> OwnFinding | None:
    """H1 when both seeds find the same layers dead or stalled."""
    dead = _dead_finding(evs)
    if dead is not None:
        return dead
    found = [stalled_layers(ev) for ev in evs]
    layers = [{r["layer"] for r in f} for f in found]
    if not layers[0] or layers[0] != layers[1]:
        return None
    rows = found[0]
    if any(r["kind"] == "unstepped" for r in rows):
        at_zero = _lrs(evs, [r for r in rows if r["kind"] == "unstepped"]) == [0.0]
        if at_zero:
            return _unstepped(evs, [r for r in rows if r["kind"] == "unstepped"])
        # moved by exactly 0 at an LR above 0: a step too small for the weights' own rounding
        # (a gradient near 0 under Adam: no moments to divide by), which is a vanishing gradient
        rows = [{**r, "kind": "vanishing"} if r["kind"] == "unstepped" else r for r in rows]
    blocked = all(r["kind"] == "blocked" for r in rows)
    if blocked and all(ev.facts.get("blocked") for ev in evs):
        return None  # no gradient at all (None): the loop's own rule names the cut (flow.h1_rules)
    how = (
        "gets no gradient: its units never activate (a ReLU whose input stays below 0, from the init "
        "or a bias driven negative) or the path to it is cut"
        if blocked
        else "gets a gradient orders of magnitude smaller than the other layers': it vanishes on the way "
        "back (saturating activations, many layers, no normalisation), so plain SGD barely moves it"
    )
    what = "gradient flow is blocked" if blocked else "vanishing gradient"
    return OwnFinding(
        "H1",
        "flow_blocked" if blocked else "vanishing",
        f"{what} at layer{'s' if len(rows) > 1 else ''} {', '.join(r['layer'] for r in rows[:4])}"
        f"{' and more' if len(rows) > 4 else ''}: the layer {how}. "
        + "; ".join(_fmt(r) for r in rows[:4]),
    )


def _lrs(evs, rows) -> list[float]:
    """The distinct LRs of the parameter groups that hold these layers' parameters."""
    rp = evs[0].replay
    names = param_names(rp.models.values())
    wanted = {p for r in rows for p in r["params"]}
    return sorted(
        {
            float(g["lr"])
            for o in rp.optimizers.values()
            for g in o.param_groups
            for p in g["params"]
            if names.get(id(p), ("",))[0] in wanted
        }
    )


def _unstepped(evs, rows) -> OwnFinding | None:
    """Layers that get a gradient at every step and are moved by exactly 0: their parameter
    group's LR is 0. A defect when the run fails by its own test; else a choice (a freeze by LR),
    said as advice."""
    from .. import baseline

    lrs = _lrs(evs, rows)
    layers = ", ".join(r["layer"] for r in rows[:4]) + (" and more" if len(rows) > 4 else "")
    one = len(rows) == 1
    said = (
        f"layer{'' if one else 's'} {layers} get{'s' if one else ''} a gradient at every step "
        f"but the optimizer moves {'it' if one else 'them'} by exactly 0: "
        f"{'its' if one else 'their'} parameter group's LR is {', '.join(f'{lr:g}' for lr in lrs)}"
    )
    why = [baseline.fails(ev) for ev in evs]
    if not all(why):
        baseline.advise(
            evs[0],
            f"advice, not a defect: {said}; {baseline.learns(evs[0])}, so this reads as a freeze "
            "by LR (give the group an LR above 0 if the layer should train)",
        )
        return None
    return OwnFinding(
        "H1",
        "layer_never_moves",
        f"{said}, and {why[0]}. " + "; ".join(_fmt(r) for r in rows[:4]),
    )


def describe(ev) -> str:
    """A one-line table of the layers' relative updates, for the record's notes."""
    rows = sorted(layer_norms(ev), key=lambda r: r["rel_update"])
    if not rows:
        return "no per-layer norms: no optimizer step was seen"
    return (
        "relative update per step by layer (smallest first): "
        + ", ".join(f"{r['layer']} {r['rel_update']:.1e}" for r in rows[:8])
        + (" ..." if len(rows) > 8 else "")
    )
