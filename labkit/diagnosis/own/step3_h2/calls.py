"""What differs between two calls of the learner's `batches`: the same epoch should come back in
another order, with the same contents.

A loop asks `batches(seed)` for each epoch with another seed (a new order). The rows should be
the same rows: the epoch's values, counted whatever the order and the layout (batch-first or
sequence-first), are then the same. Where they are not, something in `batches` re-makes the
data on every call: token ids assigned per batch (a vocabulary built from the batch), class ids
encoded per batch, or a random transform (an augmentation). Labkit's plain loops repeat one
call's epoch, so they can learn what a loop that calls `batches` again cannot.
"""

from __future__ import annotations

from collections import Counter

from ..step1_capture import setup as proto

DRIFT = 0.1  # this share of one call's examples missing from another: the data is re-made


def _rows(tensors: list, dim: int) -> list[bytes] | None:
    """Each example of the epoch as bytes: the slices of every batch along `dim`."""
    out = []
    for t in tensors:
        if not hasattr(t, "movedim") or t.dim() <= dim:
            return None
        t = t.detach().movedim(dim, 0).contiguous()
        out += [r.numpy().tobytes() for r in t.reshape(t.shape[0], -1)]
    return out


def _changed(a: list[bytes], b: list[bytes]) -> float:
    """The share of one call's examples that the other call does not hold (as multisets)."""
    common = sum((Counter(a) & Counter(b)).values())
    return 1 - common / max(len(a), len(b), 1)


def _pairs(xs: list, ys: list, dim: int) -> list[bytes] | None:
    """Each example with its label, as bytes, where the labels run along the same `dim`."""
    out = []
    for x, y in zip(xs, ys):
        if not hasattr(y, "movedim"):
            return None
        y = y.reshape(-1, 1) if y.dim() == 1 else y
        if y.dim() <= dim or y.shape[dim] != x.shape[dim]:
            return None
        rx, ry = _rows([x], dim), _rows([y], dim)
        out += [p + b"|" + q for p, q in zip(rx, ry)]
    return out


def _axes(xs: list, ys: list) -> tuple[int, ...]:
    """The axes the examples may run along: 0, and 1 where the labels run along it too (a
    sequence-first layout, (time, batch)); never the features' axis of a table."""
    x, y = xs[0], ys[0] if ys else None
    shared = hasattr(y, "dim") and y.dim() > 1 and x.dim() > 1 and y.shape[1] == x.shape[1]
    return (0, 1) if shared else (0,)


def changed_share(xa: list, ya: list, xb: list, yb: list) -> dict | None:
    """{"inputs": share, "pairs": share}: the share of the epoch's examples (inputs alone, and
    inputs with their labels) that one call holds and the other does not, along the axis on
    which the inputs change least among those the labels share (`_axes`: the examples' axis,
    whatever the layout)."""
    shapes = [tuple(getattr(t, "shape", ())) for t in xa + xb]
    if len({s[1:] for s in shapes}) > 1 and len({s[:1] + s[2:] for s in shapes}) > 1:
        return None  # padded per batch whatever the layout: equal examples would read unequal
    best = None
    for dim in _axes(xa, ya):
        ra, rb = _rows(xa, dim), _rows(xb, dim)
        if ra is None or rb is None:
            continue
        share = _changed(ra, rb)
        if best is None or share < best[0]:
            best = (share, dim)
    if best is None:
        return None
    share, dim = best
    pa, pb = _pairs(xa, ya, dim), _pairs(xb, yb, dim)
    return {"inputs": share, "pairs": None if pa is None or pb is None else _changed(pa, pb)}


def drift(ev) -> dict:
    """{"inputs": share, "labels": share, "integer": whether the inputs are ids} between
    `batches(seed)` and `batches(seed + 1)`, measured once per seed ("labels": the examples
    whose label differs, among those whose inputs both calls hold)."""

    def make():
        try:
            a, b = ev.batches, proto.batches(ev.setup, ev.seed + 1)
            got = changed_share(
                [proto.inputs_of(x) for x in a],
                [proto.labels_of(x) for x in a],
                [proto.inputs_of(x) for x in b],
                [proto.labels_of(x) for x in b],
            )
            integer = not proto.inputs_of(a[0]).is_floating_point()
        except Exception:  # a batches() this check cannot call twice: nothing measured
            got, integer = None, False
        got = got or {"inputs": None, "pairs": None}
        labels = got["pairs"]
        if labels is not None and got["inputs"] is not None:
            labels = max(0.0, labels - got["inputs"])
        return {"inputs": got["inputs"], "labels": labels, "integer": integer}

    return ev.once("calls_drift", make)


def re_made(evs, part: str) -> list[float] | None:
    """The share of `part` ("inputs" or "labels") that differs between two calls, on every seed,
    when it is beyond DRIFT on every seed; else None."""
    shares = [drift(ev)[part] for ev in evs]
    if all(s is not None and s > DRIFT for s in shares):
        return shares
    return None


def _class_ids(ev) -> bool:
    """Whether each example carries one label (class ids), as opposed to a sequence of them."""
    try:
        return proto.labels_of(ev.batches[0]).dim() == 1
    except Exception:  # labels this check cannot read: say nothing about their kind
        return False


def describe(evs, part: str, shares: list[float]) -> str:
    if part == "labels" and not _class_ids(evs[0]):  # sequences of labels: not re-encoded ids
        return (
            f"the labels change between two calls of batches() for the same inputs: "
            f"{shares[0]:.0%} / {shares[1]:.0%} of the examples both calls hold carry another "
            f"label sequence on seeds {evs[0].seed} / {evs[1].seed}, so each example's labels "
            "depend on which rows share its batch: the labels are decorrelated from their "
            "inputs (built from the rows in another order than the inputs, e.g. sorted or "
            "shuffled after the inputs were made); build inputs and labels from the same rows "
            "in the same order"
        )
    ids = part == "inputs" and drift(evs[0])["integer"]
    what = "the token ids" if ids else "the class ids" if part == "labels" else "the input values"
    cause = (
        "token ids assigned per batch (a vocabulary built from each batch, so an id means "
        "another token in every batch); build the vocabulary once, from the whole corpus"
        if ids
        else "labels encoded per batch (class ids given in order of appearance, so an id names "
        "another class in every batch); fit the label encoding once, on the whole data set"
        if part == "labels"
        else "a random transform of the inputs on every call (an augmentation), after which "
        "real and shuffled labels train alike: check that the transform keeps what each label "
        "means (a flip or a rotation that turns one class into another)"
    )
    held = (
        "of the examples both calls hold carry another label"
        if part == "labels"
        else "of one call's examples are not in the other"
    )
    return (
        f"{what} change between two calls of batches() that should return the same rows in "
        f"another order: {shares[0]:.0%} / {shares[1]:.0%} {held} on seeds {evs[0].seed} / "
        f"{evs[1].seed}; the likely cause: {cause}"
    )
