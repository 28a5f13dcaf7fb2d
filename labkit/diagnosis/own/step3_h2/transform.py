"""H2: a transform of the data that changes what the label means, or removes what sets it.

Two readings, each made only where the triage would otherwise acquit, and each measured with a
reference learner that shares nothing with the learner's setup (K nearest neighbours on the
inputs, each feature standardised over the rows it is read on):

- `table_rule`, an augmentation: the inputs change between two calls of ``batches()`` (a random
  transform, `calls.drift`), and the setup holds its data set as a table (tensors of one
  epoch's rows, among its attributes or a ``TensorDataset``'s, shaped as the batches' inputs and
  labels). Each row of that table, un-augmented, is placed among its classes (class ids, the
  largest share of a soft target, or a real target's quartile) twice: by its K neighbours among
  the other rows of the table (`raw`), and by its K neighbours among the augmented rows one
  call of ``batches()`` gives, with the labels they carry (`given`). A label-keeping
  augmentation places the table's rows about as well as the table does; one that turns an
  input into another class's while its label stays (a flip or a sign change of an input whose
  label names a side, images mixed while their targets are not) places them worse by GAP nats
  or more, on every seed and beyond three times the seeds' spread. Signed by a plain loop on
  the table's rows un-augmented (`step5_sign.untransformed`).
- `rows_rule`, a normalisation per row: every input row's scale (its standard deviation, its
  L2 or L1 norm or its largest value) is the same on every row, so whatever the rows' sizes
  said is gone from the inputs; and a label column (a class id, or one real target) that the
  neighbours place no better than the same column shuffled (within PLACED nats). A total or a
  magnitude set by the rows' size is such a target. Where every label column is placed, the
  normalisation kept what the labels need, and nothing is read.
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above, below
from ..step1_capture import setup as proto
from . import calls

K, ROWS, CELLS = 16, 2048, 2**22  # neighbours; rows read at most; values read at most
GAP = 0.25  # nats: the augmented rows place the table's rows this much worse than the table
PLACED = 0.1  # nats: a label column placed by less than this over shuffled is not placed
SHUFFLED = ("labels", "as given", "permuted across the epoch")  # the label-shuffle control's run
SAME = 1e-3  # a row statistic whose spread over the rows is below this share of its median


def _cat(batches, part) -> torch.Tensor | None:
    try:
        ts = [part(b) for b in batches]
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    if not ts or not all(torch.is_tensor(t) and t.dim() >= 1 for t in ts):
        return None
    if len({tuple(t.shape[1:]) for t in ts}) != 1:
        return None
    return torch.cat([t.detach() for t in ts])


def codes(y: torch.Tensor) -> list[tuple[str, torch.Tensor, int]]:
    """Each label column as (name, (N,) codes, number of codes): class ids as given, a soft or
    one-hot target (N, C) as its largest share, a real target (or each column of a (N, K) one)
    as its quartile."""
    if not y.is_floating_point():
        if y.dim() != 1 or y.numel() == 0 or int(y.min()) < 0:
            return []
        return [("the class", y.long(), int(y.max()) + 1)]
    y = y.double()
    if (
        y.dim() == 2
        and y.shape[1] > 1
        and bool((y >= 0).all())
        and bool(torch.allclose(y.sum(1), torch.ones(len(y), dtype=y.dtype), atol=1e-4))
    ):
        return [("the class", y.argmax(1), y.shape[1])]  # targets that are probabilities
    cols = [y] if y.dim() == 1 else list(y.T) if y.dim() == 2 else []
    out = []
    for i, c in enumerate(c.contiguous() for c in cols):
        cuts = torch.quantile(c, torch.tensor([0.25, 0.5, 0.75], dtype=c.dtype))
        name = "the target" if len(cols) == 1 else f"target column {i}"
        out.append((name, torch.bucketize(c, cuts), 4))
    return out


def _read(x: torch.Tensor) -> int:
    """How many rows of `x` the readings take: ROWS, fewer for wide rows (CELLS values)."""
    return min(len(x), ROWS, CELLS // max(1, x[0].numel()))


def _standard(x: torch.Tensor) -> torch.Tensor:
    x = x.reshape(len(x), -1).double()
    return (x - x.mean(0)) / x.std(0).clamp_min(1e-12)


def _placed(query, q_codes, ref, r_codes, n_codes: int, self_out: bool) -> float:
    """Mean -log of each query row's own code's share among its K nearest reference rows
    (add-one smoothed), in nats; `self_out`: the query is the reference, each row left out."""
    d = torch.cdist(query, ref)
    if self_out:
        d.fill_diagonal_(float("inf"))
    near = d.topk(K, largest=False).indices
    hits = (r_codes[near] == q_codes[:, None]).sum(1).double()
    return float(-torch.log((hits + 1) / (K + n_codes)).mean())


# ------------------------------------------------------------------ the table behind the batches
def _tensors(setup) -> list[torch.Tensor]:
    out = []
    for obj in (setup, getattr(setup, "setup", None)):  # an adapted setup wraps the learner's
        try:
            values = list(vars(obj).values()) if obj is not None else []
        except TypeError:
            continue
        for v in values:
            held = getattr(v, "tensors", None)  # a TensorDataset
            out += [v] if torch.is_tensor(v) else list(held) if isinstance(held, tuple) else []
    return [t for t in out if torch.is_tensor(t)]


def table_of(setup, batches) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(inputs, labels): the setup's own table of one epoch's rows, shaped as the batches'
    inputs and labels, whose inputs are not the batches' (something transforms them on the
    way); None where the setup holds no such table."""
    x, y = _cat(batches, proto.inputs_of), _cat(batches, proto.labels_of)
    if x is None or y is None or not x.is_floating_point() or len(x) != len(y):
        return None
    held = _tensors(setup)
    xs = [t for t in held if t.shape == x.shape and t.dtype == x.dtype]
    ys = [t for t in held if t.shape == y.shape and t.is_floating_point() == y.is_floating_point()]
    for tx in xs:
        for ty in ys:
            if tx is not ty and calls._changed(calls._rows([tx], 0), calls._rows([x], 0)) > 0:
                return tx.detach(), ty.detach()
    return None


def augmented(setup, batches) -> dict | None:
    """{"raw", "given", "name", "rows", "kept"}: the table's rows placed among their classes by
    their neighbours in the table (each row left out) and in the batches as given (nats), and
    whether the batches' labels are the table's own rows ("kept"); None without a table."""
    table = table_of(setup, batches)
    if table is None:
        return None
    tx, ty = table
    n = _read(tx)
    x, y = _cat(batches, proto.inputs_of)[:n], _cat(batches, proto.labels_of)[:n]
    raw, given = codes(ty[:n]), codes(y)
    if len(raw) != 1 or len(given) != 1 or raw[0][2] != given[0][2] or n < 4 * K:
        return None
    (name, t_codes, m), (_, g_codes, _) = raw[0], given[0]
    query = _standard(tx[:n])
    kept = calls._changed(calls._rows([ty], 0), calls._rows([y], 0)) == 0
    return {
        "raw": _placed(query, t_codes, query, t_codes, m, True),
        "given": _placed(query, t_codes, _standard(x), g_codes, m, False),
        "name": name,
        "rows": n,
        "kept": kept and len(y) == len(ty),
    }


def table_rule(evs) -> OwnFinding | None:
    """H2 where an augmentation places the table's rows GAP nats or more worse than the table
    does, on every seed, beyond three times the seeds' spread (see the module docstring)."""
    shares = calls.re_made(evs, "inputs")
    if shares is None or calls.drift(evs[0])["integer"]:
        return None
    got = [ev.once("transform_table", lambda ev=ev: augmented(ev.setup, ev.batches)) for ev in evs]
    if any(g is None for g in got):
        return None
    gaps = [g["given"] - g["raw"] for g in got]
    margin = max(GAP, 3 * abs(gaps[0] - gaps[-1]))
    if not all(above("transform.gap", v, margin, seed=ev.seed) for v, ev in zip(gaps, evs)):
        return None
    g = got[0]
    labels = (
        "the labels are the table's own, unchanged, while the inputs are transformed"
        if g["kept"]
        else "the batches' labels are not the table's rows as stored (transformed too)"
    )
    return OwnFinding(
        "H2",
        "transform_changes_label",
        f"the augmentation changes what the label means: the input values change between two "
        f"calls of batches() ({shares[0]:.0%} / {shares[1]:.0%} of one call's examples are not "
        f"in the other, seeds {evs[0].seed} / {evs[1].seed}), and the data set your setup holds "
        f"({g['rows']} rows) tells {g['name']} of its own un-augmented rows better than the "
        f"augmented batches do: {K} nearest neighbours among the table's other rows score "
        f"{g['raw']:.3f} nats, among the augmented rows with the labels they carry "
        f"{g['given']:.3f} / {got[-1]['given']:.3f}; {labels}. The likely cause: a transform that "
        "turns an input into another class's while its label stays (a flip or a sign change of "
        "an input whose label names a side or a direction, images mixed while their targets "
        "are not); apply only transforms that keep each label, or transform the label with its "
        "input",
        variable=("batches()", "augmented", "the table's rows, un-augmented"),
    )


# ------------------------------------------------------------------ a normalisation per row
def row_scale(x: torch.Tensor) -> tuple[str, float, int] | None:
    """(statistic, its value, rows read) where every row read of the (N, ...) float inputs has
    the same scale by that statistic (spread below SAME of its median) and holds 3 or more
    distinct values on average (not one-hot rows); None otherwise."""
    if not x.is_floating_point() or len(x) < 4 * K:
        return None
    x = x[: _read(x)]
    x = x.reshape(len(x), -1).double()
    if len(x) < 4 * K or x.shape[1] < 3 or not bool(torch.isfinite(x).all()):
        return None
    distinct = sum(len(r.unique()) for r in x[:64]) / min(len(x), 64)
    if distinct < 3:
        return None
    stats = {
        "standard deviation": x.std(1),
        "L2 norm": x.norm(dim=1),
        "L1 norm": x.abs().sum(1),
        "largest value": x.abs().max(1).values,
    }
    for name, s in stats.items():
        mid = float(s.median())
        if mid > 0 and float(s.max() - s.min()) < SAME * mid:
            return name, mid, len(x)
    return None


def unplaced(batches) -> list[dict]:
    """The label columns the neighbours place no better than shuffled (within PLACED nats), each
    {"name", "real", "shuffled"}, on inputs of one scale per row; [] otherwise."""
    x, y = _cat(batches, proto.inputs_of), _cat(batches, proto.labels_of)
    if x is None or y is None or len(x) != len(y) or row_scale(x) is None:
        return []
    x, y = _standard(x[: _read(x)]), y[: _read(x)]
    g, out = torch.Generator().manual_seed(0), []
    for name, c, m in codes(y):
        real = _placed(x, c, x, c, m, True)
        shuffled = [c[torch.randperm(len(c), generator=g)] for _ in range(3)]
        shuf = sum(_placed(x, s, x, s, m, True) for s in shuffled) / 3
        if below("transform.row_placed", shuf - real, PLACED):
            out.append({"name": name, "real": real, "shuffled": shuf})
    return out


def rows_rule(evs, shuffled: bool = False) -> OwnFinding | None:
    """H2 where every input row is normalised on its own and a label column is placed by no
    reference on every seed (see the module docstring). `shuffled`: the label-shuffle control
    read no signal, so its one-change run (the labels permuted: the same loss) signs it."""
    got = [ev.once("transform_rows", lambda ev=ev: unplaced(ev.batches)) for ev in evs]
    if not all(got):
        return None
    stat, value, rows = row_scale(_cat(evs[0].batches, proto.inputs_of))
    col = got[0][0]
    return OwnFinding(
        "H2",
        "rows_normalised",
        f"every input row is normalised on its own: its {stat} is {value:.4g} on every one of "
        f"the {rows} rows read, so whatever a row's size said (a total, a magnitude, a count) is "
        f"gone from the inputs; and a reference learner does not place {col['name']}: {K} "
        f"nearest neighbours on the inputs place its "
        f"{'quartile' if col['name'] != 'the class' else 'id'} at {col['real']:.3f} nats, the "
        f"same column shuffled at {col['shuffled']:.3f} (seed {evs[0].seed}; seed "
        f"{evs[1].seed} alike). If that target depends on the rows' size, "
        "normalise each feature over the data set (dim=0, the training set's mean and standard "
        "deviation per column), not each row over its features (dim=1)",
        **(
            dict(arm="shuffled", variable=SHUFFLED, expect="same")
            if shuffled
            else dict(variable=("inputs", "normalised per row", "normalised per feature"))
        ),
    )
