"""Which target each prediction is scored against: the offset, measured through the learner's
own loss call, not assumed.

For token data (a 2-D grid of integer inputs and a model output with one row of class scores
per input position, in any of the layouts `shapes.grid` reads), the model's output is replaced
by a leaf, the learner's ``loss_fn`` runs on it, and the gradient of the loss with respect to
each output row names the class that row is scored against: its most negative entry (for a
cross-entropy or NLL, the target's; a row with no loss term has a zero gradient). Those target
ids are matched against the input tokens at every offset k along both axes of the grid; the
offset is the (axis, k) where they agree at MATCH or more of the scored positions.

A causal LM is scored at k = 1 (position t against token t+1). The finding (H2, the
input-label pairs, as the zoo's double shift):
- k >= 2: a shift applied twice (batches already shifted, the loss shifts again);
- k <= 0 with a model that is causal along that axis (`shapes.causal`): the output at t is
  scored against a token it already sees (the shift missing, or applied to the inputs).
"""

from __future__ import annotations

import copy
import warnings

import torch

from ..step1_capture import setup as proto
from ...finding import OwnFinding
from ..margins import above
from ..step1_capture.shapes import causal, grid

MATCH = 0.9  # share of scored positions whose target is the input token at the offset
OFFSETS = range(-2, 4)


def _first_tensor(out):
    if torch.is_tensor(out):
        return out
    if isinstance(out, (tuple, list)):
        return next((o for o in out if torch.is_tensor(o)), None)
    return None


def targets_scored(setup, model, batch) -> torch.Tensor | None:
    """(a, b) class ids each output position is scored against (-1: no loss term), on the
    inputs' grid, or None when the output does not line up with the inputs."""
    x, box = proto.inputs_of(batch), {}
    if not torch.is_tensor(x) or x.dim() != 2 or x.is_floating_point():
        return None

    def swap(module, args, out):
        t = _first_tensor(out)
        if box or t is None or not t.is_floating_point():
            return None
        box["leaf"] = leaf = t.detach().clone().requires_grad_()
        if torch.is_tensor(out):
            return leaf
        return type(out)(leaf if o is t else o for o in out)

    handle = model.register_forward_hook(swap)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = setup.loss_fn(model, batch)
        if "leaf" not in box or not torch.is_tensor(loss) or loss.numel() != 1:
            return None
        (g,) = torch.autograd.grad(loss.float(), box["leaf"], allow_unused=True)
    except Exception:  # a loss this check cannot differentiate this way: nothing measured
        return None
    finally:
        handle.remove()
    g = grid(g, x) if g is not None else None
    if g is None or g.shape[-1] < 2:
        return None
    low, ids = g.min(-1)
    return torch.where(low < 0, ids, torch.full_like(ids, -1))


def measure(setup, seed: int, batch) -> dict | None:
    """{axis, offset, share} of the best-matching offset, or None when none matches."""
    torch.manual_seed(seed)
    model = proto.make_model(setup, seed)
    proto.make_optimizer(setup, model)
    model = copy.deepcopy(model)
    tgt = targets_scored(setup, model, batch)
    if tgt is None:
        return None
    x = proto.inputs_of(batch)
    best = None
    for axis in (0, 1):
        n = x.shape[axis]
        for k in OFFSETS:
            if abs(k) >= n - 1:
                continue
            lo, hi = max(0, -k), n - max(0, k)  # positions t with t + k inside the grid
            t = tgt.narrow(axis, lo, hi - lo)
            v = x.narrow(axis, lo + k, hi - lo)
            scored = t >= 0
            if int(scored.sum()) < 16:
                continue
            share = float((t[scored] == v[scored]).float().mean())
            if best is None or share > best["share"]:
                best = {"axis": axis, "offset": k, "share": share, "scored": int(scored.sum())}
    return best


def alignment(setup, seed: int, batch) -> dict | None:
    """{same, transposed}: the share of scored positions whose target is the label at the same
    position of the label grid, and the share where it is the label grid read transposed
    (flattened batch first where the outputs are flattened time first, or the other way);
    None when the targets are not the labels' own values (an offset, a shift inside)."""
    torch.manual_seed(seed)
    model = copy.deepcopy(proto.make_model(setup, seed))
    tgt, y = targets_scored(setup, model, batch), proto.labels_of(batch)
    if tgt is None or not torch.is_tensor(y) or y.numel() != tgt.numel() or tgt.dim() != 2:
        return None
    scored = tgt >= 0
    if int(scored.sum()) < 16:
        return None
    same = float((tgt[scored] == y.reshape(tgt.shape)[scored]).float().mean())
    transposed = 0.0
    if y.dim() == 2:  # the label grid flattened in the other order, laid on the outputs' grid
        moved = y.t().reshape(tgt.shape)
        transposed = float((tgt[scored] == moved[scored]).float().mean())
    return {"same": same, "transposed": transposed, "scored": int(scored.sum())}


def alignment_rule(evs) -> OwnFinding | None:
    """H2 when, on both seeds, the loss scores each output against the label of another
    position: the label grid flattened in another order than the outputs (a transpose)."""
    found = []
    for ev in evs:
        m = ev.once("alignment", lambda ev=ev: alignment(ev.setup, ev.seed, ev.batches[0]))
        if m is None or not above("offset.transposed", m["transposed"], MATCH, seed=ev.seed):
            return None
        if above("offset.same", m["same"], 0.5, seed=ev.seed):
            return None
        found.append(m)
    m = found[0]
    return OwnFinding(
        "H2",
        "targets_transposed",
        f"the targets are not aligned with the outputs: measured through your loss call, only "
        f"{m['same']:.0%} of the {m['scored']} scored positions of the first batch are scored "
        f"against the label at their own position, and {m['transposed']:.0%} against the label "
        "grid read transposed: the labels are flattened in another order than the logits "
        "(batch first against time first, a .t() or a view of the other layout), so each "
        "output is scored against another sequence's token; flatten labels and logits in the "
        "same order",
        arm="shuffled",  # signed as labels that carry no signal: permuted, they train alike
        variable=("labels", "as given", "permuted across the epoch"),
        expect="same",
    )


def offset_rule(evs) -> OwnFinding | None:
    """H2 when both seeds measure the same offset and it is not the one a causal LM needs;
    else when the labels are scored transposed (`alignment_rule`)."""
    found = []
    for ev in evs:
        m = ev.once("offset", lambda ev=ev: measure(ev.setup, ev.seed, ev.batches[0]))
        if m is None or not above("offset.match", m["share"], MATCH, seed=ev.seed):
            return alignment_rule(evs)
        found.append(m)
    if len({(m["axis"], m["offset"]) for m in found}) != 1 or found[0]["offset"] == 1:
        return None
    m, ev = found[0], evs[0]
    k, first = (
        m["offset"],
        "sequence-first (time, batch)" if m["axis"] == 0 else "batch-first (batch, time)",
    )
    where = (
        f"measured through your loss call, the output at position t is scored against input token t{k:+d} "
        f"(at {m['share']:.0%} of the {m['scored']} scored positions of the first batch, read as {first})"
    )
    if k >= 2:
        return OwnFinding(
            "H2",
            "double_shift",
            f"the targets are shifted twice: {where}, {k} tokens ahead "
            "where a causal LM predicts the next one; the batches were already shifted and the "
            "loss shifts them again (or the other way round): shift exactly once",
        )
    sees = causal(lambda b: _output(ev, b), ev.batches[0])
    if not sees:
        return None
    what = (
        "the shift by one is missing"
        if k == 0
        else "the shift is applied to the inputs instead of the "
        f"targets: the targets lag the inputs by {-k}"
    )
    return OwnFinding(
        "H2",
        "labels_are_inputs",
        f"{what}: {where}, a token the causal model already sees "
        "(its outputs before the last position do not change when the last input token does, "
        "measured), so it learns to copy its input; shift by one, position t against token t+1",
    )


@torch.no_grad()
def _output(ev, batch):
    torch.manual_seed(ev.seed)
    model = proto.make_model(ev.setup, ev.seed)
    outs = []
    handle = model.register_forward_hook(lambda m, a, o: outs.append(_first_tensor(o)))
    try:
        ev.setup.loss_fn(model, batch)
    finally:
        handle.remove()
    return outs[0] if outs else None
