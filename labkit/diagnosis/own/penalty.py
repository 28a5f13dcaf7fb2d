"""A loss that reads the parameters themselves: an L2 or L1 penalty written into `loss_fn`
(issue 55, `twentysecond_h1_weight_decay_twice`).

The reading, at init on the first batch: the model's outputs are held fixed (a copy of the model
whose forward returns the real model's outputs, detached) and the learner's `loss_fn` runs on
that copy. A loss that reads only the outputs then has no gradient; one that adds a penalty has
one on the copy's parameters, and where it is `2 * lam * p` (L2) or `lam * sign(p)` (L1) on
every parameter it reaches, the penalty is that norm with that `lam`, measured, not guessed.

The decision weighs what the penalty does, not that it is there: the one-change run is a plain
loop (the learner's optimizer) on the loss without the fitted penalty, and both trained models
are scored on the data term alone (the loss minus the penalty) over the held-out batches where
the setup has them (a regulariser is meant to help there), else over the epoch. A penalty that
holds the data term at twice that without it and beyond the seed spread convicts (H1); a smaller
one is a deliberate regulariser and is named beside the acquittal with its share.
"""

from __future__ import annotations

import copy

import torch
from torch.utils._pytree import tree_map

from .margins import above
from .step1_capture import setup as proto
from .step1_capture.loops import Changed, plain_loop
from ..finding import OwnFinding

FIT = 1e-3  # the gradient's residual off the norm's own form, relative to its size
WORSE = 2.0  # the data term with the penalty at this many times that without: it holds the fit


def _detached(out):
    return tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, out)


def _fit(p: torch.Tensor, g: torch.Tensor, kind: str) -> float | None:
    """lam where g = 2 lam p ("L2") or g = lam sign(p) ("L1") to FIT, else None."""
    p, g = p.detach().double().flatten(), g.double().flatten()
    if g.norm() == 0 or p.norm() == 0:
        return None
    if kind == "L2":
        lam = float((g @ p) / (2 * (p @ p)))
        return lam if lam > 0 and (g - 2 * lam * p).norm() <= FIT * g.norm() else None
    nz = p != 0
    lam = float(g[nz].abs().mean())
    return lam if lam > 0 and (g[nz] - lam * p[nz].sign()).norm() <= FIT * g[nz].norm() else None


def _one_norm(fits: dict) -> tuple[str, float] | None:
    """The norm whose form fits every gradient, with one weight for all: (kind, lam)."""
    for kind in ("L2", "L1"):
        lams = [_fit(p, g, kind) for p, g in fits.values()]
        if all(lam is not None for lam in lams) and max(lams) <= (1 + 10 * FIT) * min(lams):
            return kind, sum(lams) / len(lams)
    return None


def read(setup, seed: int, batch) -> dict | None:
    """The penalty `loss_fn` adds to the loss on the outputs, at init: {"kind", "lam",
    "names", "share"} (share: of the loss at init), or None where the loss reads no parameter
    but through the model's outputs, or reads one in a form that is no L2/L1 norm."""
    torch.manual_seed(seed)
    try:
        model = proto.make_model(setup, seed)
        shell = copy.deepcopy(model)
    except Exception:  # a model deepcopy refuses: not read
        return None
    shell.forward = lambda *a, **k: _detached(model(*a, **k))
    with torch.no_grad():  # a table or bias drawn at 0 has no L2 gradient: move the copy's
        for p in shell.parameters():  # (the outputs are the real model's, unmoved)
            if p.is_floating_point() and not p.any():
                p.normal_(0.0, 0.01)
    torch.manual_seed(seed)
    try:
        loss = proto.loss(setup, shell, batch)
    except Exception:
        return None
    named = [(n, p) for n, p in shell.named_parameters() if p.requires_grad]
    if not loss.requires_grad or not named:
        return None
    grads = torch.autograd.grad(loss, [p for _, p in named], allow_unused=True)
    fits = {n: (p, g) for (n, p), g in zip(named, grads) if g is not None and g.any()}
    norm = _one_norm(fits) if fits else None
    if norm is None:
        return None
    kind, lam = norm
    names = sorted(fits)
    value = penalty(kind, lam, [model.get_parameter(n) for n in names]).item()
    share = value / max(abs(loss.item()), 1e-12)
    size = sum(model.get_parameter(n).numel() for n in names)
    return {"kind": kind, "lam": lam, "names": names, "share": share, "values": size}


def penalty(kind: str, lam: float, params) -> torch.Tensor:
    return lam * sum((p.pow(2) if kind == "L2" else p.abs()).sum() for p in params)


def _without(setup, found: dict):
    """The learner's setup with the fitted penalty taken back out of its loss."""
    return Changed(setup, loss_fn=lambda m, b: setup.loss_fn(m, b) - own_penalty(m, found))


def own_penalty(model, found: dict) -> torch.Tensor:
    params = dict(model.named_parameters())
    return penalty(found["kind"], found["lam"], [params[n] for n in found["names"]])


@torch.no_grad()
def data_term(setup, model, batches, found: dict) -> float:
    """The trained model's loss minus the penalty, over `batches`, in eval mode."""
    was = model.training
    model.eval()
    try:
        pen = float(own_penalty(model, found))
        values = [float(proto.loss(setup, model, b)) - pen for b in batches]
    finally:
        model.train(was)
    return sum(values) / len(values)


def _weigh(ev) -> dict | None:
    found = read(ev.setup, ev.seed, ev.batches[0])
    if found is None:
        return None
    own = ev.arm("own")
    without = plain_loop(_without(ev.setup, found), ev.seed, ev.steps, "own", batches=ev.batches)
    rows = ev.val() or ev.batches
    found["with"] = data_term(ev.setup, own.model, rows, found)
    found["without"] = data_term(ev.setup, without.model, rows, found)
    found["rows"] = "the held-out batches" if ev.val() else "the epoch"
    found["without_level"] = without.level()
    found["decay"] = _optimizer_decay(ev)
    return found


def _optimizer_decay(ev) -> float:
    opt = proto.make_optimizer(ev.setup, proto.make_model(ev.setup, ev.seed))
    return max((float(g.get("weight_decay", 0.0) or 0.0) for g in opt.param_groups), default=0.0)


def weighed(ev) -> dict | None:
    """`read` and the one-change run, once per seed."""
    return ev.once("penalty", lambda: _weigh(ev))


def _what(f: dict) -> str:
    n = len(f["names"])
    form = "sum of squares" if f["kind"] == "L2" else "sum of absolute values"
    return (
        f"your loss_fn adds an {f['kind']} penalty on the parameters themselves ({form} times "
        f"{f['lam']:.3g} over all {f['values']} values of {n} parameter "
        f"tensor{'s' if n > 1 else ''}: measured as the "
        f"loss's gradient with the model's outputs held fixed), {100 * f['share']:.2g}% of the loss at init"
    )


def penalty_rule(evs) -> OwnFinding | None:
    """H1 where, on both seeds, the penalty holds the trained model's data term at WORSE times
    that of a plain loop without it, beyond the seed spread; else None (the acquittal's note)."""
    first = weighed(evs[0])
    if first is None or "with" not in first:
        return None
    found = [first, weighed(evs[1])]
    if any(f is None or "with" not in f for f in found):
        return None
    spread = 3 * abs(found[0]["without"] - found[1]["without"])
    holds = all(  # a ratio of data terms only where both are losses above 0
        f["without"] > 0
        and above("penalty.holds_fit", f["with"], WORSE * f["without"], seed=ev.seed, log=True)
        and above("penalty.beyond_spread", f["with"] - f["without"], spread, seed=ev.seed)
        for f, ev in zip(found, evs)
    )
    (a, b) = found
    measured = (
        f"a plain loop with your optimizer ends with a data term (your loss minus that penalty, "
        f"over {a['rows']}) of {a['with']:.3g} / {b['with']:.3g} with it and {a['without']:.3g} / "
        f"{b['without']:.3g} without it (seeds {evs[0].seed} / {evs[1].seed})"
    )
    if not holds:
        evs[0].results.setdefault("advice", []).append(
            f"{_what(a)}; {measured}: under {WORSE:g}x the data term without it, or within the "
            "seed spread, on a seed: read as a deliberate regulariser"
        )
        return None
    twice = ""
    if a["decay"] > 0 and a["kind"] == "L2":
        twice = (
            f", on top of the optimizer's own weight_decay={a['decay']:.3g}: the decay is applied "
            "twice"
        )
    line = (
        f"{_what(a)}{twice}; {measured}: the penalty holds the data term at "
        f"{a['with'] / a['without']:.3g}x / {b['with'] / b['without']:.3g}x the run's without it, "
        "its gradient pulling every value it covers toward 0 harder than the data pull them "
        "back; drop it from the loss (where the optimizer's weight_decay already regularises) "
        "or scale it down"
    )
    return OwnFinding(
        "H1",
        "penalty_dominates",
        line,
        variable=("loss_fn", f"+ {a['kind']} penalty x {a['lam']:.3g}", "without the penalty"),
    )


def plan(evs):
    """(forecast, run(seed) -> Run, variable) of labkit's one change: a plain loop on the loss
    without the fitted penalty, whose logged loss is then the data term alone; forecast: it
    ends at least halfway from the data term with the penalty (the lower seed's) down to its
    seed-0 run. None where that run did not end below."""
    found = [weighed(ev) for ev in evs]
    if any(f is None or "with" not in f for f in found):
        return None
    from .step5_sign.intervene import _batches, halfway

    ev = evs[0]
    return halfway(
        evs,
        found[0]["without_level"],
        min(f["with"] for f in found),
        lambda seed: (
            plain_loop(
                _without(ev.setup, found[0]), seed, ev.steps, "own", batches=_batches(evs, seed)
            ).run
        ),
        ("loss_fn", f"+ the {found[0]['kind']} penalty", "without it"),
    )
