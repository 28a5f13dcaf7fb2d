"""A category read as a number (issue 55, `twentysecond_h2_store_id_as_number`): an input
column that holds a few values on an evenly spaced grid (integer codes, or a standardised copy
of them) and enters an `nn.Linear` as one number.

The reading needs table rows (float inputs of shape (rows, features)) that the first layer
takes as they come; a column of 3 to LEVELS distinct values whose gaps are whole multiples of the
smallest is a candidate (a binary flag, 2 values, reads the same one-hot or not, and is left
out). A grid alone convicts nothing: counts, weekdays and years are grids too. The one-change
run decides: a plain loop (the learner's optimizer) on the same model whose first layer takes
the candidate columns one-hot (one input per level, the layer's other inputs as they were). Where
that run ends below HALF of the plain loop on the columns as served, beyond the seed spread, on
both seeds, the column is a category whose levels the model cannot separate as one number (H2);
otherwise the acquittal names the columns and both levels.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .margins import above, below
from .step1_capture import setup as proto
from .step1_capture.loops import Changed, plain_loop
from ..finding import OwnFinding

LEVELS = 50  # at most this many distinct values: a code, not a measurement
MIN_ROWS = 5  # rows per level at least, on average
MAX_FEATURES = 256  # wider rows (pixels, embeddings) are not a table's columns
HALF = 0.5  # the one-hot run ends below this share of the run as served: the codes are categories
TOLERANCE = 1e-3  # a level's offset from the grid, in grid steps


def _grid(col: torch.Tensor) -> tuple | None:
    """(first level, step, levels) where the column's distinct values lie on an evenly spaced
    grid of 3 to LEVELS values, else None."""
    values = torch.unique(col.double())
    if not 3 <= len(values) <= LEVELS or len(col) < MIN_ROWS * len(values):
        return None
    step = float(values.diff().min())
    if step <= 0:
        return None
    offsets = (values - values[0]) / step
    if (offsets - offsets.round()).abs().max() > TOLERANCE or offsets[-1] > 2 * LEVELS:
        return None
    return float(values[0]), step, int(offsets[-1].round()) + 1


def candidates(batches) -> dict:
    """{column: (first level, step, levels)} over the epoch's inputs, {} where they are no table."""
    try:
        x = torch.cat([proto.inputs_of(b) for b in batches])
    except Exception:
        return {}
    if x.dim() != 2 or not x.is_floating_point() or not 1 <= x.shape[1] <= MAX_FEATURES:
        return {}
    found = {j: _grid(x[:, j]) for j in range(x.shape[1])}
    found = {j: g for j, g in found.items() if g is not None}
    # most columns on a grid: quantised signals (8-bit pixels) or ordinal answers, not ids
    return found if len(found) <= max(4, x.shape[1] // 2) else {}


def first_linear(setup, model, batch) -> str | None:
    """The name of the nn.Linear that takes the batch's inputs as they come, or None."""
    x, seen = proto.inputs_of(batch), []
    hooks = [
        m.register_forward_pre_hook(lambda m, a, n=n: seen.append(n) if a and a[0] is x else None)
        for n, m in model.named_modules()
        if isinstance(m, nn.Linear)
    ]
    try:
        with torch.no_grad():
            proto.loss(setup, model, batch)
    except Exception:
        return None
    finally:
        for h in hooks:
            h.remove()
    return seen[0] if len(seen) == 1 else None


class _Recoded(nn.Module):
    """The layer `linear` with the columns of `grids` fed one-hot: a fresh nn.Linear (as
    PyTorch draws it) over the other columns and one input per level; or, `one_hot` False,
    the layer itself with each of those columns centred and scaled by its grid (unit spread)."""

    def __init__(self, linear: nn.Linear, grids: dict, one_hot: bool = True):
        super().__init__()
        self.grids, self.one_hot = grids, one_hot
        n_in = linear.in_features - len(grids) + sum(g[2] for g in grids.values())
        bias = linear.bias is not None
        self.linear = nn.Linear(n_in, linear.out_features, bias=bias) if one_hot else linear

    def forward(self, x):
        if not self.one_hot:
            x = x.clone()
            for j, (first, step, levels) in self.grids.items():
                x[..., j] = (x[..., j] - first - step * (levels - 1) / 2) / (step * levels / 3.46)
            return self.linear(x)
        keep = [j for j in range(x.shape[-1]) if j not in self.grids]
        parts = [x[..., keep]]
        for j, (first, step, levels) in self.grids.items():
            code = ((x[..., j] - first) / step).round().long().clamp(0, levels - 1)
            parts.append(F.one_hot(code, levels).to(x.dtype))
        return self.linear(torch.cat(parts, -1))


def _encoded(setup, layer: str, grids: dict, one_hot: bool = True):
    """The learner's setup whose model takes the candidate columns one-hot at `layer` (or
    centred and scaled: `_Recoded`)."""

    def make_model(seed):
        model = setup.make_model(seed)
        torch.manual_seed(seed)
        parent, _, leaf = layer.rpartition(".")
        recoded = _Recoded(model.get_submodule(layer), grids, one_hot)
        setattr(model.get_submodule(parent) if parent else model, leaf, recoded)
        return model

    return Changed(setup, make_model=make_model)


def _weigh(ev) -> dict | None:
    grids = candidates(ev.batches)
    if not grids:
        return None
    layer = first_linear(ev.setup, proto.make_model(ev.setup, ev.seed), ev.batches[0])
    if layer is None:
        return None
    found = {"grids": grids, "layer": layer, "served": ev.arm("own").level(), "scaled": None}
    try:
        found["one_hot"] = _run(ev, layer, grids, True)
        if found["one_hot"] < HALF * found["served"]:  # its scale, or its levels? a third run
            found["scaled"] = _run(ev, layer, grids, False)
    except Exception:
        return None
    return found


def _run(ev, layer: str, grids: dict, one_hot: bool) -> float:
    setup = _encoded(ev.setup, layer, grids, one_hot)
    return plain_loop(setup, ev.seed, ev.steps, "own", batches=ev.batches).level()


def weighed(ev) -> dict | None:
    """The candidate columns and the plain loops' levels (as served, one-hot, and where one-hot
    beats the columns as served, the columns centred and scaled), once per seed."""
    return ev.once("codes", lambda: _weigh(ev))


def codes_rule(evs) -> OwnFinding | None:
    """H2 where the one-hot run beats the columns as served, and as centred and scaled (a scale
    alone is no category), on both seeds; else None, with the measured levels beside the
    acquittal."""
    first = weighed(evs[0])
    if first is None:
        return None
    found = [first, weighed(evs[1])]
    if found[1] is None or found[1]["grids"].keys() != first["grids"].keys():
        return None
    spread = 3 * abs(found[0]["one_hot"] - found[1]["one_hot"])
    beats = all(
        below("codes.one_hot_beats", f["one_hot"], HALF * f["served"], seed=ev.seed, log=True)
        and above("codes.beyond_spread", f["served"] - f["one_hot"], spread, seed=ev.seed)
        for f, ev in zip(found, evs)
    )
    a, b = found
    cols = sorted(a["grids"])
    named = ", ".join(f"{j} ({a['grids'][j][2]} levels)" for j in cols)
    many = len(cols) > 1
    what = (
        f"input column{'s' if many else ''} {named} of the rows hold{'' if many else 's'} "
        "values on an evenly spaced grid (integers, or a standardised copy of them) and "
        f"enter{'' if many else 's'} nn.Linear `{a['layer']}` as one number each"
    )
    measured = (
        f"a plain loop with your optimizer, the same model with those columns one-hot encoded "
        f"(one input per level), ends at a loss of {a['one_hot']:.3g} / {b['one_hot']:.3g} "
        f"against {a['served']:.3g} / {b['served']:.3g} on the columns as served (seeds "
        f"{evs[0].seed} / {evs[1].seed})"
    )
    note = evs[0].results.setdefault("advice", [])
    if not beats:
        note.append(f"{what}; {measured}: one-hot does not end below {HALF:g}x the columns as "
                    "served beyond the seed spread on both seeds: read as numbers, no defect")  # fmt: skip
        return None
    scaled = f"{a['scaled']:.3g} / {b['scaled']:.3g} with those columns centred and scaled"
    if not all(
        below(
            "codes.one_hot_beats_scaled", f["one_hot"], HALF * f["scaled"], seed=ev.seed, log=True
        )
        for f, ev in zip(found, evs)
    ):
        note.append(f"{what}; {measured}, and {scaled}: the gap is the columns' scale, not "
                    "their levels")  # fmt: skip
        return None
    line = (
        f"{what}; {measured}, and {scaled} to a unit spread: a categorical id read as a number, whose levels one number cannot "
        "separate for the model; one-hot encode it in batches() (or give it an nn.Embedding) "
        "instead of passing its code as one numeric feature"
    )
    return OwnFinding(
        "H2",
        "category_as_number",
        line,
        variable=(f"columns {cols}", "one number each", "one-hot"),
    )


def plan(evs):
    """(forecast, run(seed) -> Run, variable) of labkit's one change: the same model taking
    the coded columns one-hot; forecast: it ends at least halfway from the columns as served
    (the lower seed's) down to its seed-0 run."""
    found = [weighed(ev) for ev in evs]
    if any(f is None for f in found):
        return None
    from .step5_sign.intervene import _batches, halfway

    ev, f = evs[0], found[0]
    encoded = _encoded(ev.setup, f["layer"], f["grids"])
    return halfway(
        evs,
        f["one_hot"],
        min(g["served"] for g in found),
        lambda seed: plain_loop(encoded, seed, ev.steps, "own", batches=_batches(evs, seed)).run,
        (f"columns {sorted(f['grids'])}", "one number each", "one-hot, one input per level"),
    )
