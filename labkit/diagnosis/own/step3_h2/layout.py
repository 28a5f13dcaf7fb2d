"""H2: images whose memory is channels-last, read as channels-first.

Images stored as (N, H, W, C), as image libraries and NumPy give them, and made channels-first
with ``.view(N, C, H, W)`` or ``.reshape`` instead of ``.permute(0, 3, 1, 2)``, keep their
values but lose their layout: each "channel" is then a third of the image with its colours
interleaved. Two readings of the learner's 4-D float inputs (N, C, H, W), with 2 to 4
channels, are compared:

- as given: the correlation between the channels at the same position, which in a colour
  image is high (the channels of one pixel move together);
- read back as channels-last memory (``x.reshape(N, H, W, C).permute(0, 3, 1, 2)``): the
  same correlation.

Where the given channels barely correlate (below LOW) and the re-read ones are near copies of
each other (above HIGH), a plain loop with the learner's model, loss and optimizer is trained
on the re-read inputs; it must end below HALF of the same loop on the inputs as given on every
seed, and below both seeds of it, for the finding to stand. Single-channel images are not read: one
channel has no colour to correlate.
"""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above, below
from ..step1_capture import setup as proto
from ..step1_capture.loops import changed_data

LOW = 0.3  # the given channels' mean correlation below this: they do not look like colours
HIGH = 0.8  # the re-read channels' mean correlation above this: they do
ELEMENTS = 2_000_000  # at most this many input values are read (whole images, 8 at least)
HALF = 0.5  # the plain loop on the re-read inputs ends below this share of the loop as given


def _channel_corr(x: torch.Tensor) -> float | None:
    """Mean correlation between the channels of (N, C, H, W) images at the same position."""
    c = x.shape[1]
    flat = x.double().transpose(0, 1).reshape(c, -1)
    if bool((flat.std(1) == 0).any()):
        return None
    corr = torch.corrcoef(flat)
    return float(corr[~torch.eye(c, dtype=torch.bool)].mean())


def _reread(x: torch.Tensor) -> torch.Tensor:
    n, c, h, w = x.shape
    return x.contiguous().reshape(n, h, w, c).permute(0, 3, 1, 2).contiguous()


def readings(batches: list) -> tuple[float, float] | None:
    """(channel correlation as given, as re-read from channels-last memory), or None where the
    inputs are not 4-D float images of 2 to 4 channels."""
    try:
        xs = [proto.inputs_of(b) for b in batches]
    except (ValueError, TypeError, KeyError, IndexError):
        return None
    if not xs or not all(torch.is_tensor(x) and x.dim() == 4 for x in xs):
        return None
    x = xs[0]
    if not x.is_floating_point() or not 2 <= x.shape[1] <= 4 or min(x.shape[2:]) < 4:
        return None
    same = [b for b in xs if b.shape[1:] == x.shape[1:]]  # batches of the first one's shape
    x = torch.cat(same)[: max(8, ELEMENTS // x[0].numel())].detach().float()
    given, reread = _channel_corr(x), _channel_corr(_reread(x))
    return None if given is None or reread is None else (given, reread)


def reread_batches(batches: list) -> list:
    """The batches with their images re-read from channels-last memory."""
    return [proto.with_inputs(b, _reread(proto.inputs_of(b))) for b in batches]


def reread(ev):
    """The plain loop (the learner's optimizer) on the re-read images, once per seed."""
    return changed_data(ev, "reread", reread_batches)


def far_better(evs, changed: list, name: str, half: float = HALF) -> tuple:
    """(levels of the `changed` plain loops, of the plain loop on the batches as given), one
    per seed, where each changed one ends below `half` of the one as given and below both of
    its seeds; (None, None) otherwise."""
    fixed = [c.level() for c in changed]
    plain = [ev.arm("own").level() for ev in evs]
    if not (
        all(below(name, f, half * p, seed=ev.seed) for p, f, ev in zip(plain, fixed, evs))
        and below(name.split(".")[0] + ".seeds_apart", max(fixed), min(plain))
    ):
        return None, None
    return fixed, plain


def layout_rule(evs) -> OwnFinding | None:
    """H2 where the images read as channels-last memory have colours and, so read, a plain
    loop learns beyond the seed spread better than on the inputs as given (see above)."""
    read = [readings(ev.batches) for ev in evs]
    if any(r is None for r in read) or not all(
        below("layout.given_corr", g, LOW, seed=ev.seed)
        and above("layout.reread_corr", r, HIGH, seed=ev.seed)
        for (g, r), ev in zip(read, evs)
    ):
        return None

    fixed, plain = far_better(evs, [reread(ev) for ev in evs], "layout.reread_learns")
    if fixed is None:
        return None
    (given, again), shape = read[0], tuple(proto.inputs_of(evs[0].batches[0]).shape)
    return OwnFinding(
        "H2",
        "channels_last_viewed",
        f"the images {shape} look like channels-last memory read as channels-first (a "
        f".view() or .reshape() where .permute(0, 3, 1, 2) was meant): their channels at one "
        f"position barely correlate ({given:.2f} on average), while read back as (N, H, W, C) "
        f"they move together as a pixel's colours do ({again:.2f}); a plain loop with your "
        f"model, loss and optimizer on the inputs so re-read reaches "
        f"{fixed[0]:.3g} / {fixed[1]:.3g}, where on the inputs as given it ends at "
        f"{plain[0]:.3g} / {plain[1]:.3g}; make the images channels-first with "
        ".permute(0, 3, 1, 2)",
        arm="reread",
        variable=("images", "as given", "re-read as channels-last and permuted"),
    )
