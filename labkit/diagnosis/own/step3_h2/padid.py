"""H2: a real token that shares the padding's id.

``nn.Embedding(padding_idx=p)`` keeps row p at zero and never updates it: it is meant for the
positions that pad a sequence, before its first real token or after its last. A vocabulary
numbered from 0 (``enumerate(words)``) gives a real word the id 0 that the embedding keeps for
padding, and that word then reads as nothing. Read on the learner's integer inputs (rows of
token ids): the share of rows where id p stands between two other ids, inside the sequence
where padding never is. At least SHARE of the rows on every seed names it.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from ...finding import OwnFinding
from ..margins import above
from ..step1_capture import setup as proto
from ..step1_capture.loops import learner_model

SHARE = 0.2  # the padding id inside the sequence in at least this share of the rows


def _pad_ids(ev) -> list[int]:
    return sorted(
        {
            int(m.padding_idx)
            for m in learner_model(ev).modules()
            if isinstance(m, nn.Embedding) and m.padding_idx is not None
        }
    )


def inside_share(batches, pad: int) -> float | None:
    """The share of rows where `pad` stands between two other ids, or None where the inputs
    are not rows of integer ids."""
    rows = seen = 0
    for b in batches:
        try:
            x = proto.inputs_of(b)
        except (KeyError, ValueError, TypeError, IndexError):
            return None
        if not torch.is_tensor(x) or x.dim() != 2 or x.is_floating_point() or x.shape[1] < 3:
            return None
        real = x != pad
        pos = torch.arange(x.shape[1]).expand_as(x)
        first = torch.where(real, pos, x.shape[1]).min(1).values
        last = torch.where(real, pos, -1).max(1).values
        inside = (~real) & (pos > first[:, None]) & (pos < last[:, None])
        rows, seen = rows + int(inside.any(1).sum()), seen + len(x)
    return rows / seen if seen else None


def collision_rule(evs) -> OwnFinding | None:
    """H2 where the embedding's padding id stands inside the sequences on every seed."""
    try:
        pads = _pad_ids(evs[0])
    except Exception:  # a model this reading cannot build again: nothing measured
        return None
    for pad in pads:
        shares = [inside_share(ev.batches, pad) for ev in evs]
        if any(s is None for s in shares) or not all(
            above("padid.inside", s, SHARE, seed=ev.seed) for s, ev in zip(shares, evs)
        ):
            continue
        return OwnFinding(
            "H2",
            "pad_id_collides",
            f"a real token shares the padding's id: id {pad} is your nn.Embedding's "
            f"padding_idx, whose vector stays 0 and never learns, and it stands between other "
            f"tokens in {shares[0]:.0%} / {shares[1]:.0%} of the rows (seeds {evs[0].seed} / "
            f"{evs[1].seed}), inside the sequence where padding never is; to the model that "
            "token reads as nothing (a vocabulary numbered from 0 where 0 was kept for "
            "padding): number the vocabulary from 1, or give padding an id no token has",
        )
    return None
