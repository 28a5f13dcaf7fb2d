"""H2: dense labels (masks) transformed apart from their images.

A segmentation data set that flips, or rotates, the image and its mask with two random draws
(two ``RandomHorizontalFlip`` transforms, one in ``transform`` and one in
``target_transform``) serves in part of its pairs a mask that marks the object's mirror
image. Where the labels are maps of the inputs' height and width, each example's image
(averaged over its channels) is correlated with its mask as given and with the mask flipped
left-right or upside down. The pairs where a flipped mask matches the image clearly better than
the mask as given (|r| higher by MARGIN, and at least MATCH) are counted: a data set whose
image and mask get one draw has next to none, whatever its augmentation; an object that looks
alike flipped (a square) matches both ways and is not counted.

Where that share reaches SHARE on every seed, a plain loop with the learner's model, loss and
optimizer is trained on the same batches with those masks flipped back; it must end below
half of the same loop on the batches as given, on every seed and below both seeds of it, for
the finding to stand.
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above
from ..step1_capture import setup as proto
from ..step1_capture.loops import changed_data
from .layout import far_better

MARGIN = 0.2  # a flipped mask's |r| with the image above the given one's by this much
MATCH = 0.3  # and at least this: the flipped mask plainly marks the object
SHARE = 0.15  # this share of the pairs matching better flipped: the draws were apart
FLIPS = {"left-right": (-1,), "upside down": (-2,)}


def _maps(batch):
    """(images (B, H, W), masks (B, H, W)) as float, or None where the labels are not maps of
    the inputs' height and width."""
    try:
        x, y = proto.inputs_of(batch), proto.labels_of(batch)
    except (ValueError, TypeError, KeyError, IndexError):
        return None
    if not (torch.is_tensor(x) and torch.is_tensor(y) and x.is_floating_point()):
        return None
    if x.dim() != 4 or y.dim() not in (3, 4) or min(x.shape[2:]) < 4 or len(y) != len(x):
        return None
    if tuple(y.shape[-2:]) != tuple(x.shape[-2:]):
        return None
    y = y.float() if y.dim() == 3 else y.float().mean(1)
    return x.detach().float().mean(1), y.detach()


def _corr(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-example correlation of two (B, H, W) stacks (0 where either is constant)."""
    a = a.flatten(1) - a.flatten(1).mean(1, keepdim=True)
    b = b.flatten(1) - b.flatten(1).mean(1, keepdim=True)
    den = a.norm(dim=1) * b.norm(dim=1)
    return torch.where(den > 0, (a * b).sum(1) / den.clamp_min(1e-12), torch.zeros(()))


def _apart(x, y) -> dict[str, torch.Tensor]:
    """Per flip, which pairs match the image clearly better with the mask so flipped."""
    given = _corr(x, y).abs()
    out = {}
    for how, dims in FLIPS.items():
        flipped = _corr(x, y.flip(dims)).abs()
        out[how] = (flipped >= given + MARGIN) & (flipped >= MATCH)
    return out


def readings(batches: list) -> dict | None:
    """The flip that the most pairs match better, its share of the pairs, and the mean |r| of
    those pairs as given and flipped; None where the labels are not maps of the inputs."""
    maps = [_maps(b) for b in batches]
    if not maps or any(m is None for m in maps):
        return None
    x, y = torch.cat([m[0] for m in maps]), torch.cat([m[1] for m in maps])
    apart = _apart(x, y)
    how = max(apart, key=lambda k: int(apart[k].sum()))
    hit = apart[how]
    given, flipped = _corr(x, y).abs(), _corr(x, y.flip(FLIPS[how])).abs()
    return {
        "how": how,
        "share": float(hit.float().mean()),
        "given": float(given[hit].mean()) if hit.any() else float("nan"),
        "flipped": float(flipped[hit].mean()) if hit.any() else float("nan"),
    }


def repaired_batches(batches: list, how: str) -> list:
    """The batches with each mask that matches its image better flipped (`how`) flipped back."""
    out = []
    for b in batches:
        x, y = _maps(b)
        hit = _apart(x, y)[how]
        labels = proto.labels_of(b).clone()
        labels[hit] = labels[hit].flip(FLIPS[how])
        out.append(proto.with_labels(b, labels))
    return out


def repaired(ev, how: str):
    """The plain loop (the learner's optimizer) on the re-paired batches, once per seed."""
    return changed_data(ev, f"repaired:{how}", lambda b: repaired_batches(b, how))


def paired_rule(evs) -> OwnFinding | None:
    """H2 where a share of the masks match their images better flipped, on every seed, and a
    plain loop on the batches with those masks flipped back learns far better (see above)."""
    read = [readings(ev.batches) for ev in evs]
    if any(r is None for r in read) or not all(
        above("paired.share", r["share"], SHARE, seed=ev.seed) for r, ev in zip(read, evs)
    ):
        return None
    how = read[0]["how"]
    fixed, plain = far_better(evs, [repaired(ev, how) for ev in evs], "paired.repaired_learns")
    if fixed is None:
        return None
    r = read[0]
    return OwnFinding(
        "H2",
        "masks_transformed_apart",
        f"the masks are transformed apart from their images: in {r['share']:.0%} of the pairs "
        f"the mask flipped {how} matches its image better than the mask as given (|r| "
        f"{r['flipped']:.2f} against {r['given']:.2f} on those pairs), as when the image and "
        "its mask each get their own random flip; a plain loop with your model, loss and "
        f"optimizer on the same batches with those masks flipped back reaches "
        f"{fixed[0]:.3g} / {fixed[1]:.3g}, where on the batches as given it ends at "
        f"{plain[0]:.3g} / {plain[1]:.3g}; draw each random transform once per pair and apply "
        "it to the image and to its mask",
        arm=f"repaired:{how}",
        variable=("masks", "as given", f"flipped back ({how}) where they match flipped"),
    )
