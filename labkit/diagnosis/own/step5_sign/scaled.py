"""labkit's own intervention for an LR convicted as too high (an arm ``lr/10`` or ``lr/100``:
`flow`'s divergence, `unsettled`): the learner's own loop, unchanged, with every parameter
group of the optimizer that ``make_optimizer`` returns at its LR divided by the same factor.

The plain loop of the ``lr/k`` arm (the finding's evidence) changes more than the LR: it has no
clipping, no schedule and no carried state of the learner's. Where the learner's loop needs its
clipping, the plain loop at the lower LR can itself be unstable, and whether it ends below the
learner's run then turns on the CPU's rounding (a verdict that flips between CPU paths). The
learner's own loop at the lower LR changes the one thing the finding names. It is tried first;
where it does not beat the learner's run (or ``train()`` builds its own optimizer, so nothing
changes), the plain arm is planned as before. The forecast is read off seed 0's trial, as
`stepped`'s.
"""

from __future__ import annotations

from .stepped import own_loop_plan, with_optimizer

ARMS = {"lr/10": 10, "lr/100": 100}


def plan(finding, evs):
    """(forecast, run(seed) -> Run, variable), or None (see the module docstring)."""
    k, ev = ARMS.get(finding.arm), evs[0]
    if k is None or getattr(type(ev.setup), "make_optimizer", None) is None:
        return None

    def lowered(opt, fixed, model):
        for group in opt.param_groups:
            group["lr"] = group["lr"] / k
        return opt

    name, before, _ = finding.variable or ("lr", "yours", "")
    return own_loop_plan(
        evs,
        lambda: with_optimizer(ev.setup, lowered),
        (name, before, f"yours / {k}, in your own loop (nothing else changed)"),
    )
