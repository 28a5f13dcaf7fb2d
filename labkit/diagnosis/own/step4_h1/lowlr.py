"""H1: a learning rate too small all along, from the first step to the last; or one that keeps
rising to the end (`runaway_rule`).

The collapse rule of `flow` looks for an LR that falls; a warm-up far longer than the run
(LambdaLR over 100,000 steps, LinearLR from 1e-3 of the base) keeps the LR near 0 and never
lets it rise. Read off the learner's own run:
- the LR at every step (the replay reads each param group's ``lr`` before each step), and its
  peak against the optimizer's base LR (the ``initial_lr`` a scheduler keeps, else the LR
  ``make_optimizer`` gave): the peak below LOW of the base;
- the run fails by its own test (`baseline.fails`);
- the plain loop at the base LR (the learner's optimizer, no schedule) learns: its level
  below HALF of the learner's.
The line reports the per-layer relative updates of the learner's run beside the plain loop's.

Its mirror, a schedule that never levels off (a warm-up written by hand without its cap,
``lr = base * step / warmup``, a factor that grows each epoch): the LR at the last step is
RISE times or more the LR at the step where the run's moving-mean loss was lowest, and still
rising over the run's last half; the run fails by its own test; and a plain loop at the
constant LR of that best step, or a third or a tenth of it (the loss may have been lowest just
past the edge of stability, the LR still climbing) (`lr=<value>`), ends below HALF of the
learner's level.
"""

from __future__ import annotations

import math

from ...finding import OwnFinding
from ..baseline import fails, smoothed
from ..margins import above, below

LOW = 0.01  # the run's peak LR below this share of the base LR: it never reached a useful size
RISE = 4.0  # the last step's LR this many times the LR where the run did best: it ran away
HALF = 0.5  # the plain loop at the base LR ends below this share of the learner's level


def _base_lr(ev) -> float | None:
    groups = [g for o in ev.replay.optimizers.values() for g in o.param_groups]
    lrs = [float(g.get("initial_lr", g["lr"])) for g in groups]
    return max(lrs) if lrs else None


def _relative(res) -> float | None:
    """The plain loop's mean update norm over its final weights' norm."""
    if res.model is None or not res.update_norms:
        return None
    weights = math.sqrt(sum(float(p.detach().float().pow(2).sum()) for p in res.model.parameters()))
    moved = [u for u in res.update_norms if u is not None and math.isfinite(u)]
    return sum(moved) / len(moved) / weights if weights and moved else None


def _largest_relative(ev) -> float | None:
    """The largest mean update per step of any parameter of the learner's run, over its norm."""
    out = []
    for p in ev.replay.watched():
        acc = ev.replay.per_param.get(id(p))
        norm = float(p.detach().float().norm()) if p.is_floating_point() else 0.0
        if acc and acc[2] and norm > 0:
            out.append(acc[1] / acc[2] / norm)
    return max(out, default=None)


def low_lr_rule(ev, f) -> OwnFinding | None:
    """H1 when the LR never rises to a useful size and the base LR learns (see above)."""
    lrs = [max(st["lr"]) for st in ev.replay.steps if st["lr"]]
    base = _base_lr(ev)
    if not lrs or not base or base <= 0:
        return None
    peak = max(lrs)
    if not below("lowlr.peak_over_base", max(peak, 1e-30) / base, LOW, seed=ev.seed, log=True):
        return None
    why = fails(ev)
    if why is None:
        return None
    plain = ev.arm("own")
    if not below("lowlr.base_learns", plain.level(), HALF * f["own_level"], seed=ev.seed):
        return None
    largest = _largest_relative(ev)
    at_base = _relative(plain)
    sizes = (
        f"; the largest relative update per step of any parameter is {largest:.1e} of its norm"
        if largest is not None
        else ""
    ) + (f", against {at_base:.1e} at the base LR" if at_base else "")
    return OwnFinding(
        "H1",
        "lr_never_rises",
        f"the learning rate is too small all along: your schedule holds it "
        f"at {lrs[0]:.2g} at the first step and {peak:.2g} at most, {base / peak:.0f}x below the "
        f"optimizer's base LR {base:g} (a warm-up far longer than the run, or a start factor that "
        f"never ramps up within it), so {why}{sizes}; the same loop at the base LR, no schedule, "
        f"reaches {plain.level():.3g}",
        arm="own",
        variable=("learning-rate schedule", "yours", f"none: the base LR {base:g}"),
    )


def runaway_rule(ev, f) -> OwnFinding | None:
    """H1 when the LR keeps rising to the last step, past where the run did best, and a constant
    LR at that best step learns (see above)."""
    lrs = [max(st["lr"]) if st["lr"] else 0.0 for st in ev.replay.steps]
    raw = [float(v) if v is not None else math.nan for v in ev.run.table["loss_raw"]]
    n = len(lrs)
    if n < 10 or len(raw) != n:
        return None
    mean = smoothed(raw, max(2, n // 20))
    best = min(range(n), key=lambda i: mean[i] if math.isfinite(mean[i]) else math.inf)
    at_best, last, half = lrs[best], lrs[-1], lrs[n // 2 :]
    if at_best <= 0 or any(b < a for a, b in zip(half, half[1:])) or not last > half[0]:
        return None  # not rising all through its last half
    if not above("lowlr.runaway", last / at_best, RISE, seed=ev.seed, log=True):
        return None
    why = fails(ev)
    if why is None:
        return None
    for lr in (at_best, at_best / 3, at_best / 10):  # the best step's LR may be past the edge
        plain = ev.arm(f"lr={lr!r}")
        if below("lowlr.runaway_learns", plain.level(), HALF * f["own_level"], seed=ev.seed):
            break
    else:
        return None
    return OwnFinding(
        "H1",
        "lr_runs_away",
        f"the learning rate keeps rising to the end: your schedule takes it from {lrs[0]:.2g} to "
        f"{last:.2g} at the last step, still climbing, {last / at_best:.3g}x the {at_best:.2g} it "
        f"had where your loss was lowest (step {best} of {n}), so {why} (a warm-up with no cap, "
        f"lr = base * step / warmup, or a factor that grows without end); the same loop at a "
        f"constant LR of {lr:.2g} reaches {plain.level():.3g}",
        arm=f"lr={lr!r}",
        variable=("learning-rate schedule", "yours, rising to the end", f"constant {lr:.3g}"),
    )
