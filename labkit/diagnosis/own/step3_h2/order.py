"""The whole epoch, not the last batches: a model that fits what it just saw and not its data.

A plain loop's loss is read on the batch it trains on. A model that only ever fits the batches
of the moment (the batches come in an order that is not mixed: sorted by label, by time, by a
feature) shows a falling batch loss while it is wrong on most of its data. `order_rule` reads
the trained plain loop's model on every batch of the epoch, in eval mode:
- where it keeps more than `SHARE` of a fresh model's whole-epoch loss, the same plain loop is
  trained again on the same rows shuffled across the epoch's batches (`mixed_rows`, one
  change);
- the order is the mechanism where the first model has not learned its epoch as a whole (above
  `CHANCE` of a fresh model's loss) and the second has (below `MIXED` of the first's), or where
  the first scores far worse than the second (`WHOLE` times, and apart by `SHARE` of a fresh
  model's loss): a model several times worse on its own data is no slower learner;
- the batches' make-up says why, where it can: each batch holding one class (the share of its
  commonest label, against the epoch's), and the same order on every seed.
It is read only where an unmixed order can be: batches in the same order for every seed, or
batches that each hold one class. It convicts the data's order (H2) on both seeds. The
acquittal's words are unchanged: a model that fits its whole epoch is what a mixed order gives.
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above, below
from ..step1_capture import setup as proto
from ..step1_capture.loops import held_out_loss, plain_loop

WHOLE = 3.0  # the whole epoch's loss above this multiple of the mixed order's: the order hurts
SHARE = 0.05  # ... and above it by this share of a fresh model's whole-epoch loss
CHANCE = 0.5  # or: the whole epoch's loss above this share of a fresh model's (no learning),
MIXED = 0.67  # ... where the mixed order's is below this share of it
PURE = 0.9  # a batch whose commonest label holds this share of its rows: one class


def _purity(batches) -> tuple[float, float] | None:
    """(median share of each batch's commonest label, the epoch's commonest share), for one
    integer label per row; None otherwise."""
    try:
        labels = [proto.labels_of(b) for b in batches]
    except (TypeError, ValueError):
        return None
    if not labels or any(y.dim() != 1 or y.is_floating_point() for y in labels):
        return None
    shares = sorted(float(torch.bincount(y - y.min()).max()) / len(y) for y in labels if len(y) > 1)
    every = torch.cat(labels)
    if not shares or len(every.unique()) < 2:
        return None
    return shares[len(shares) // 2], float(torch.bincount(every - every.min()).max()) / len(every)


def _same_order(evs) -> bool:
    a, b = evs[0].batches, evs[1].batches
    try:
        return len(a) == len(b) and all(
            torch.equal(proto.inputs_of(x), proto.inputs_of(y)) for x, y in zip(a, b)
        )
    except (TypeError, ValueError, RuntimeError):
        return False


def mixed_rows(batches: list, seed: int) -> list | None:
    """The same rows, whole (every tensor of a row moves together), permuted across the epoch
    and cut into batches of the same sizes; None for batches that cannot be pooled."""
    first = batches[0]
    keys = list(first) if isinstance(first, dict) else list(range(len(first)))
    sizes = [len(proto.labels_of(b)) for b in batches]
    try:
        pooled = {k: torch.cat([b[k] for b in batches]) for k in keys}
    except (TypeError, RuntimeError, IndexError, KeyError):
        return None
    if any(not isinstance(v, torch.Tensor) or len(v) != sum(sizes) for v in pooled.values()):
        return None
    perm = torch.randperm(sum(sizes), generator=torch.Generator().manual_seed(20_000 + seed))
    out, start = [], 0
    for n in sizes:
        rows = {k: v[perm[start : start + n]] for k, v in pooled.items()}
        out.append(rows if isinstance(first, dict) else type(first)(rows[k] for k in keys))
        start += n
    return out


@torch.no_grad()
def _at_init(ev) -> float:
    """The whole epoch's loss of a fresh model: the scale the order's harm is read against."""
    torch.manual_seed(ev.seed)
    return held_out_loss(ev.setup, proto.make_model(ev.setup, ev.seed), ev.batches)


def whole_epoch(ev) -> tuple[float, float, float] | None:
    """(the whole-epoch loss of the plain loop's model, of the same loop's on mixed rows, of a
    fresh model), or None where the first is already within `SHARE` of the fresh model's;
    once per seed (the order's signing, `step5_sign.mixed`, reads the same figures)."""
    return ev.once("order_whole", lambda: _whole(ev))


def _whole(ev) -> tuple[float, float, float] | None:
    own = ev.arm("own")
    if own.model is None or not own.losses:
        return None
    whole, init = held_out_loss(ev.setup, own.model, ev.batches), _at_init(ev)
    if not above("order.not_fit", whole, SHARE * abs(init), seed=ev.seed):
        return None  # the model fits its whole epoch: no order to blame
    mixed = ev.once("mixed_rows", lambda: mixed_rows(ev.batches, ev.seed))
    if mixed is None:
        return None
    arm = ev.once(
        "mixed_arm", lambda: plain_loop(ev.setup, ev.seed, ev.steps, "own", batches=mixed)
    )
    if arm.model is None:
        return None
    return whole, held_out_loss(ev.setup, arm.model, ev.batches), init


def order_rule(evs) -> OwnFinding | None:
    purity, same = _purity(evs[0].batches), _same_order(evs)
    pure = purity is not None and purity[0] >= PURE and purity[1] < PURE
    if not (same or pure):
        return None  # a seeded order of mixed batches: the learner shuffles
    got = []
    for ev in evs:
        pair = whole_epoch(ev)
        if pair is None:
            return None
        whole, mixed, init = pair
        if above("order.at_chance", whole, CHANCE * abs(init), seed=ev.seed):
            if not below("order.mixed_learns", mixed, MIXED * whole, seed=ev.seed, log=True):
                return None  # no better on the epoch mixed: the order is not why
        elif not (
            above("order.whole_above_mixed", whole, WHOLE * mixed, seed=ev.seed, log=True)
            and above("order.gap", whole - mixed, SHARE * abs(init), seed=ev.seed)
        ):
            return None
        got.append(pair[:2])
    if pure:
        why = (
            f"the batches are sorted by label: each batch holds one class (its commonest label "
            f"fills {purity[0]:.0%} of it, median over the epoch, while the epoch's commonest "
            f"holds {purity[1]:.0%})"
        )
    else:
        why = "the batches come in an order that is not mixed"
    (w0, l0), (w1, l1) = got
    return OwnFinding(
        "H2",
        "order_unmixed",
        f"{why}{', in the same order for every seed' if same else ''}, so the model follows "
        f"the batches of the moment: after a plain loop its loss on the whole epoch is "
        f"{w0:.3g} / {w1:.3g}, and {l0:.3g} / {l1:.3g} when the same rows are shuffled "
        "across the epoch's batches (one change); shuffle the rows across the epoch",
    )
