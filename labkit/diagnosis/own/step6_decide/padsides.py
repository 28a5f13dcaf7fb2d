"""H2: token ids and their per-position labels padded on opposite sides.

A tagger's batch holds (B, T) token ids and (B, T) labels, one per position, the labels of
the padding set to a value the loss ignores (-100, or another negative sentinel). Where the
tokenizer pads on the left (`padding_side="left"`, set for a decoder elsewhere) and the labels
are padded on the right, row i's label at position t belongs to token t - (T - L_i): each
label sits beside another token, and beside the padding, while the real tokens at the end of
the row are left unscored. Measured on the training epoch, without training:

- the pad id: the id that fills the most end positions (first or last column) of the rows;
- per row that holds padding and ignored labels, the side each run sits on (the ids' pad at
  position 0 or T-1, the ignored labels at position 0 or T-1); the share of rows where the
  two sides differ, and the share of pad positions whose label is scored.

Where both reach SHARE on every seed, a plain loop with the learner's model, loss and
optimizer is trained on the same batches with each row's scored labels moved onto its real
tokens, in order; it must end below half of the same loop on the batches as given, on every
seed and below both seeds of it, for the finding to stand.
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above
from ..step1_capture import setup as proto
from ..step1_capture.loops import changed_data
from ..step3_h2.layout import far_better

SHARE = 0.5  # this share of the padded rows with ids and labels padded on opposite sides


def _grid(batch):
    """(ids, labels), both (B, T) integer, or None."""
    try:
        x, y = proto.inputs_of(batch), proto.labels_of(batch)
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    if not (torch.is_tensor(x) and torch.is_tensor(y)) or x.dim() != 2 or y.shape != x.shape:
        return None
    if x.is_floating_point() or y.is_floating_point() or x.shape[1] < 3:
        return None
    return x, y


def _sides(x, y, pad: int):
    """Per row: padding present and ignored labels present, the ids' pad side, the labels'."""
    padded, ignored = x == pad, y < 0

    def side(mask):  # 0: left (position 0), 1: right (position T-1), -1: neither end
        return torch.where(mask[:, 0], 0, torch.where(mask[:, -1], 1, -1))

    both = padded.any(1) & ignored.any(1)
    return both, side(padded), side(ignored)


def reading(batches) -> dict | None:
    """The pad id, the padded rows counted, the share whose ids and labels are padded on
    opposite sides (with the sides), the share of pad positions with a scored label; None
    where the batches are not token grids with ignored labels."""
    grids = [_grid(b) for b in batches]
    if not grids or any(g is None for g in grids):
        return None
    grids = [g for g in grids if g[0].shape[1] == grids[0][0].shape[1]]
    x, y = torch.cat([g[0] for g in grids]), torch.cat([g[1] for g in grids])
    if not bool((y < 0).any()):
        return None
    ends = torch.cat([x[:, 0], x[:, -1]])
    pad = int(ends.mode().values)
    both, ids_side, labels_side = _sides(x, y, pad)
    if int(both.sum()) < 8:
        return None
    apart = both & (ids_side >= 0) & (labels_side >= 0) & (ids_side != labels_side)
    padded = x == pad
    names = ("left", "right")
    return {
        "pad": pad,
        "rows": int(both.sum()),
        "apart": float(apart[both].float().mean()),
        "ids_side": names[int(ids_side[apart].mode().values)] if apart.any() else None,
        "labels_side": names[int(labels_side[apart].mode().values)] if apart.any() else None,
        "scored_on_pad": float((y[padded] >= 0).float().mean()),
    }


def realigned_batches(batches: list, pad: int) -> list:
    """The batches with each row's scored labels moved, in order, onto its real tokens (where
    the row holds as many of each); other rows as given."""
    out = []
    for b in batches:
        x, y = _grid(b)
        labels = y.clone()
        for i in range(len(x)):
            real, scored = x[i] != pad, y[i] >= 0
            if int(real.sum()) == int(scored.sum()) and not torch.equal(real, scored):
                labels[i] = torch.full_like(y[i], -100 if bool((y[i] == -100).any()) else -1)
                labels[i, real] = y[i, scored]
        out.append(proto.with_labels(b, labels))
    return out


def padsides_rule(evs) -> OwnFinding | None:
    """H2 where ids and labels are padded on opposite sides on every seed, and a plain loop on
    the labels moved onto their tokens learns far better (see above)."""
    read = [ev.once("padsides", lambda ev=ev: reading(ev.batches)) for ev in evs]
    if any(r is None for r in read) or not all(
        above("padsides.apart", r["apart"], SHARE, seed=ev.seed)
        and above("padsides.scored_on_pad", r["scored_on_pad"], SHARE, seed=ev.seed)
        for r, ev in zip(read, evs)
    ):
        return None
    pad = read[0]["pad"]
    changed = [changed_data(ev, "realigned", lambda b: realigned_batches(b, pad)) for ev in evs]
    fixed, plain = far_better(evs, changed, "padsides.realigned_learns")
    if fixed is None:
        return None
    r = read[0]
    return OwnFinding(
        "H2",
        "pad_sides_differ",
        f"the token ids and their labels are padded on opposite sides, so the labels are not "
        f"aligned with their tokens: in {r['apart']:.0%} of the {r['rows']} padded rows the "
        f"ids' padding (id {pad}) sits on the {r['ids_side']} and the ignored labels on the "
        f"{r['labels_side']}, and {r['scored_on_pad']:.0%} of the pad positions carry a "
        "scored label, each label shifted onto another token by the row's padding; a plain "
        "loop with your model, loss and optimizer on the same batches with each row's labels "
        f"moved onto its real tokens reaches {fixed[0]:.3g} / {fixed[1]:.3g}, where on the "
        f"batches as given it ends at {plain[0]:.3g} / {plain[1]:.3g}; pad the ids and the "
        "labels on the same side (the tokenizer's padding_side)",
        arm="realigned",
        variable=("labels", "as given", "moved onto their tokens"),
    )
