"""The whole graph, judged: every tensor the learner's loss depends on, stepped or not.

`Replay.graph` (see `step1_capture.graph`) walks the loss that the learner's own loop passes to
``backward()`` and keeps every persistent leaf that requires grad, in ``model.parameters()`` or
not. Here each leaf is named in the learner's terms (``model.head.weight``, ``self.temperature``,
or its shape when it lives in a local variable of ``train()``) and read against the optimizer:

- **not stepped**: a leaf the loss depends on, that gets a gradient and never moves over the
  run, while no optimizer holds it (a tensor made outside the model, so ``model.parameters()``
  left it out): H1 on both seeds. A model parameter missing from the optimizer is `flow`'s
  ``not_in_optimizer``; a leaf the loop moves by hand is updated, not missing;
- **held, never moved**: in the optimizer, a gradient when the optimizer steps, not one change
  (its group's LR is 0): H1 only when the run fails by its own test (`baseline.fails`), since a
  group at LR 0 may be a deliberate freeze; read after every other H1 rule (`still_rule`),
  and for a tensor made outside the model with `graph_rule`, before the label-shuffle control
  (`still_outside_rule`: labkit's plain loops cannot move it either).

`describe` gives the acquittal its words for the graph: what was checked and what could not be.
"""

from __future__ import annotations

from ...finding import OwnFinding
from .. import baseline
from .flow import param_names


def _shape(shape) -> str:
    return "a scalar" if not shape else f"shape {tuple(shape)}"


def leaves(ev) -> dict:
    """The graph's summary for one seed (once): traced or not, and a row per persistent leaf."""

    def make():
        rp = ev.replay
        g, names = rp.graph, param_names(rp.models.values())
        groups = {
            id(p): grp
            for o in rp.optimizers.values()
            for grp in o.param_groups
            for p in grp["params"]
        }
        rows = []
        for e in g.persistent():
            t = e["tensor"]
            in_model = id(t) in names
            name = names[id(t)][0] if in_model else e.get("name")
            shape = e.get("shape", tuple(t.shape))
            rows.append(
                {
                    "name": name
                    or ("a scalar tensor" if not shape else f"a tensor of {_shape(shape)}"),
                    "named": name is not None,
                    "in_model": in_model,
                    "held": id(t) in groups,
                    "lr": float(groups[id(t)]["lr"]) if id(t) in groups else None,
                    "grad": e["grad"],
                    "step_grad": bool(rp.per_param.get(id(t), (0.0,))[0] > 0),  # at step time
                    "moved": e.get("moved", False),
                    "shape": e.get("shape", tuple(t.shape)),
                    "numel": e.get("numel", t.numel()),
                    "value": e.get("value"),
                }
            )
        return {
            "traced": g.walks > 0,
            "untraced": g.untraced,
            "backwards": len(rp.backwards),
            "optimizers": bool(rp.optimizers),
            "rows": rows,
        }

    return ev.once("graph_leaves", make)


def _unstepped(ev) -> list[dict]:
    s = leaves(ev)
    return [
        r for r in s["rows"] if r["grad"] and not r["moved"] and not r["in_model"] and not r["held"]
    ]


def _held_still(ev, outside: bool = False) -> list[dict]:
    s = leaves(ev)
    rows = [r for r in s["rows"] if r["step_grad"] and not r["moved"] and r["held"]]
    return [r for r in rows if not r["in_model"]] if outside else rows


def _names(rows) -> list[str]:
    return sorted(r["name"] for r in rows)


def _what(r) -> str:
    value = f", holding {r['value']:.3g}" if r["numel"] == 1 and r["value"] is not None else ""
    where = (
        f" ({_shape(r['shape'])}{value})" if r["named"] else value.replace(", holding", " holding")
    )
    return r["name"] + where


def graph_rule(evs) -> OwnFinding | None:
    """H1 for a leaf the loss depends on that gets gradients and is never stepped (see above)."""
    found = [_unstepped(ev) for ev in evs]
    if found[0] and _names(found[0]) == _names(found[1]):
        rows, has_opt = found[0], leaves(evs[0])["optimizers"]
        many = len(rows) > 1
        what = ", ".join(_what(r) for r in rows[:4]) + (
            f" and {len(rows) - 4} more" if len(rows) > 4 else ""
        )
        held = (
            f"{'are' if many else 'is'} not in the optimizer"
            if has_opt
            else f"{'are' if many else 'is'} never updated by your loop"
        )
        return OwnFinding(
            "H1",
            "leaf_not_stepped",
            f"{what} {held}: your loss depends on {'them' if many else 'it'} and "
            f"{'they get' if many else 'it gets'} a gradient at every traced step, but "
            f"{'they are' if many else 'it is'} made outside the model, so model.parameters() "
            f"leaves {'them' if many else 'it'} out and {'they' if many else 'it'} never "
            "change" + ("" if many else "s") + " over the run (pass "
            f"{'them' if many else 'it'} to the optimizer beside the model's parameters)",
        )
    return None


def still_rule(evs, outside: bool = False) -> OwnFinding | None:
    """H1 for a held tensor that never moves though it has a gradient when the optimizer steps,
    read last: the LR of 0, gradients cleared or clipped to 0 have their own rules first.
    With `outside`, only tensors made outside the model (`still_outside_rule`)."""
    still = [_held_still(ev, outside) for ev in evs]
    if still[0] and _names(still[0]) == _names(still[1]) and all(baseline.fails(ev) for ev in evs):
        rows = still[0]
        lrs = ", ".join(f"{lr:g}" for lr in sorted({r["lr"] for r in rows if r["lr"] is not None}))
        one = len(rows) == 1
        return OwnFinding(
            "H1",
            "leaf_never_moves",
            f"{', '.join(_what(r) for r in rows[:4])} never move{'s' if one else ''}: the "
            f"optimizer holds {'it' if one else 'them'} and {'it holds' if one else 'they hold'} "
            "a gradient when it steps, but not one value changes over the run "
            f"({'its' if one else 'their'} group's LR is {lrs}), and {baseline.fails(evs[0])}",
        )
    return None


def still_outside_rule(evs) -> OwnFinding | None:
    """`still_rule` for tensors made outside the model, read with `graph_rule`, before the
    label-shuffle control: labkit's plain loops hold the model's parameters only, so a run
    that needs such a tensor to move (an embedding table beside the model, its group at LR 0)
    trains alike on real and shuffled labels there, and would read as data without signal."""
    return still_rule(evs, outside=True)


def describe(ev) -> tuple[str | None, str | None]:
    """(what was checked, what could not be) about the graph, in the learner's terms."""
    s = leaves(ev)
    if not s["traced"]:
        if s["untraced"]:
            why = "the tensor your loop passes to backward() has no graph"
        elif not s["backwards"]:
            why = (
                "your loop never calls Tensor.backward() (torch.autograd.backward or "
                "torch.autograd.grad are not traced)"
            )
        else:
            why = "no loss reached backward()"
        return None, f"the tensors your loss depends on (the loss could not be traced: {why})"
    rows = s["rows"]
    n, outside = len(rows), [r for r in rows if not r["in_model"]]
    grad = [r for r in rows if r["grad"]]
    moved = [r for r in rows if r["moved"]]
    stepped = [r for r in moved if r["held"]]
    by_hand = [r for r in moved if not r["held"]]
    parts = [
        (f"all {n}" if len(grad) == n else f"{len(grad)} of the {n}")
        + " tensors your loss depends on "
        "(walked back from the loss through autograd"
        + (
            f", {len(outside)} of them outside the model: {', '.join(_names(outside)[:3])}"
            if outside
            else ""
        )
        + ") get gradients"
    ]
    if s["optimizers"]:
        parts.append(f"{len(stepped)} of them are stepped by the optimizer and move over the run")
    if by_hand:
        parts.append(
            f"{len(by_hand)} {'is' if len(by_hand) == 1 else 'are'} moved by your own loop"
        )
    still = [r for r in rows if not r["moved"]]
    if still:
        parts.append(
            f"{len(still)} never move{'s' if len(still) == 1 else ''} ({', '.join(_names(still)[:3])})"
        )
    return ", ".join(parts), None
