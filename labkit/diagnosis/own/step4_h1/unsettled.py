"""H1: an LR at the edge of stability, convicted on evidence every CPU path shares.

Whether such a run's loss goes non-finite depends on the init, the batch order and the CPU's
rounding (MKL's and ATen's kernels): the divergence rule of `flow`, which waits for a blow-up,
convicted it on some machines and said UNKNOWN on others. This rule reads what holds on all of
them (docs/developer/portability.md).
"""

from __future__ import annotations

import math

from ...finding import OwnFinding
from ..baseline import WINDOW, advise, fails, learns, smoothed
from ..margins import above, below

UNSETTLED = (
    2.0  # the smoothed loss climbs back to this multiple of its best so far: it never settles
)
DIPPED = 0.5  # ... after its best fell below this share of its start: it learned, then lost it
LOWER_LR = (
    0.2  # at LR/10 the same plain loop ends below this share of its level at the learner's LR
)


def rebound(losses: list[float], window: int = WINDOW) -> float:
    """The largest factor by which the moving mean of the loss climbs back above its best so far
    (1.0 for a loss that only falls; inf once it is not finite)."""
    best, worst = math.inf, 1.0
    for mean in smoothed(losses, window):
        if not math.isfinite(mean):
            return math.inf
        if 0 < best < math.inf:
            worst = max(worst, mean / best)
        best = min(best, mean)
    return worst


def unsettled(ev, f, own) -> OwnFinding | None:
    """An LR on the edge of stability. Whether such a run blows up depends on the init, the batch
    order and the CPU's rounding, so a rule that waits for a non-finite loss convicts on some
    machines and seeds only. What holds on all of them: the loss learns (its moving mean falls
    well below its start), then climbs far back above its best (it never settles), and a tenth
    of the LR, nothing else changed, ends far lower. A loss that rises from the start (a
    maximised objective, a sign error) never dipped, and is not this. The learner's own run must
    fail too (`baseline.fails`): a loop of theirs that learns (micro-batches accumulated into
    one step) is not convicted for what a plain loop does at its LR."""
    lr, level = f["lr_first"], own.level()
    if not lr or not own.losses or not math.isfinite(level) or level <= 0:
        return None
    means = smoothed(own.losses)
    if not means or not all(map(math.isfinite, means)) or means[0] <= 0:
        return None
    climbs = rebound(own.losses)
    if not below(
        "unsettled.dipped", min(means) / means[0], DIPPED, seed=ev.seed, log=True
    ) or not above("unsettled.rebound", climbs, UNSETTLED, seed=ev.seed, log=True):
        return None
    low = ev.arm("lr/10")
    if not math.isfinite(low.level()) or not below(
        "unsettled.lr/10_over_lr", low.level() / level, LOWER_LR, seed=ev.seed, log=True
    ):
        return None
    if (
        fails(ev) is None
    ):  # a plain loop is unstable at your LR; your own loop (accumulating) is not
        advise(
            ev,
            f"advice, not a defect: {learns(ev)}, while a plain loop with your optimizer at LR "
            f"{lr:g} never settles and at LR/10 reaches {low.level():.3g}",
        )
        return None
    return OwnFinding(
        "H1",
        "unsettled",
        f"the LR is too high for this model: at LR {lr:g} the loss never "
        f"settles (a plain loop's loss, averaged over {WINDOW} steps, falls to "
        f"{min(means):.3g} from {means[0]:.3g}, then climbs back to x{climbs:.3g} its best so far "
        f"and ends at {level:.3g}), while at LR/10 the same loop reaches {low.level():.3g}; the "
        "LR sits at the edge of stability, where whether the run diverges outright depends on "
        "the init, the batch order and the CPU",
        arm="lr/10",
        variable=("lr", f"{lr:g}", f"{lr / 10:g}"),
    )
