"""The loss's range and scale as evidence: the learner's loss beside labkit's reference loss
(`refloss.reference`) on the same model outputs and labels.

- **below its floor** (`range_rule`): cross-entropy, NLL, binary cross-entropy and MSE are
  never below 0. When a reference applies to the model's output and labels and the learner's
  training loss falls below 0 by more than BELOW of the reference loss at init, the loss's
  construction is wrong (H1), provided it is one of those losses (the loss call is
  ``cross_entropy`` / ``nll_loss`` on the prediction), or else it runs away from the reference:
  the reference loss, logged while the learner's loss trains, rises RISES-fold. The line names
  what the loss does, measured at init: a constant negative multiple of the reference (a sign
  flipped: a log-likelihood minimised without its minus), or ``nll_loss`` given rows that are
  not log-probabilities (raw logits).
- **summed, not averaged** (`summed`): the learner's loss is, batch after batch, exactly n
  times the reference mean, n the batch's rows or label elements. Alone that is a choice (Adam
  does not see the scale, an LR can be tuned for it); beside an optimizer or LR finding of a
  run that fails, it is the cause closest to the failure: under an LR tuned for a mean every
  step is n times too large, and the mean (the reference loss) is the one change that fixes it.
- **unbounded below** (`_runaway_rule`), whatever the loss: the learner's raw loss stays below
  -RUNAWAY times its start's size over the second half of the run on both seeds. No loss a model
  fits goes there: a term of it is subtracted where it should be added (a KL term or a penalty
  with its sign flipped), and minimising the sum drives that term toward -inf.
The first two are signed by labkit's own intervention: the reference loss in place of the learner's.
"""

from __future__ import annotations

import copy
import math
import warnings

import torch

from ..step5_sign import refloss
from ..step1_capture import setup as proto
from ...finding import OwnFinding
from ..margins import above, below

BELOW = 0.1  # the learner's loss below -BELOW x the reference loss at init: below the floor of 0
RISES = (
    2.0  # the reference loss ends this many times above its start while yours trains: it runs away
)
RUNAWAY = 1e3  # the loss below -this x its start's size all through the run's second half
SAME = 1e-3  # ratios that agree to this (relative): one constant relation
BATCHES = 4  # batches read at init


@torch.no_grad()
def relation(ev) -> list[dict]:
    """On the first batches at init: the learner's loss, the reference loss, the batch's rows
    and label elements, and the input of the first nll_loss call on the prediction, if any."""

    def make():
        torch.manual_seed(ev.seed)
        model = proto.make_model(ev.setup, ev.seed)
        proto.make_optimizer(ev.setup, model)
        model = copy.deepcopy(model)
        out = []
        for batch in ev.batches[:BATCHES]:
            outs = []
            hook = model.register_forward_hook(lambda m, a, o: outs.append(o))  # noqa: B023 (removed below)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    yours = ev.setup.loss_fn(model, batch)
            except Exception:  # a loss this check cannot call: nothing measured
                return []
            finally:
                hook.remove()
            ref = refloss.reference(refloss._tensor(outs[0]), batch) if outs else None
            if ref is None or not torch.is_tensor(yours) or yours.numel() != 1:
                return []
            y = proto.labels_of(batch)
            kind = (
                "mean squared error"
                if y.is_floating_point()
                else "cross-entropy"
                if refloss._tensor(outs[0]).dim() > y.dim()
                else "binary cross-entropy"
            )
            out.append(
                {
                    "yours": float(yours),
                    "ref": float(ref),
                    "rows": len(y),
                    "kind": kind,
                    "elements": int((y != -100).sum()) if not y.is_floating_point() else y.numel(),
                }
            )
        return out

    return ev.once("loss_relation", make)


def _ratio(rel: list[dict]) -> float | None:
    """The one constant yours / reference over the batches read, or None."""
    ratios = [r["yours"] / r["ref"] for r in rel if r["ref"] > 1e-6]
    if len(ratios) < min(2, len(rel)) or not ratios:
        return None
    return ratios[0] if all(abs(q - ratios[0]) <= SAME * abs(ratios[0]) for q in ratios) else None


def _first_call(ev) -> tuple | None:
    """(name, input) of the first cross_entropy / nll_loss call on the prediction, or None."""
    from .losspath import _follow

    def make():
        torch.manual_seed(ev.seed)
        model = copy.deepcopy(proto.make_model(ev.setup, ev.seed))
        with torch.no_grad():
            mode, _ = _follow(ev.setup, model, ev.batches[0])
        return (mode.meets[0][1], mode.meets[0][2][0].detach().float()) if mode.meets else None

    return ev.once("bounded_call", make)


def _nll_on_logits(ev) -> str | None:
    """The mean of exp(input) summed over a row of the first nll_loss call on the prediction,
    when its rows are not log-probabilities (that sum is 1 for them)."""
    call = _first_call(ev)
    if call is None or call[0] != "nll_loss" or call[1].dim() < 2:
        return None
    total = float(call[1].logsumexp(1).exp().mean())
    return None if abs(total - 1) < 1e-3 else f"{total:.3g}"


def _below_floor(ev) -> dict | None:
    rel = relation(ev)
    raw = [float(v) for v in ev.run.table["loss_raw"] if v is not None]
    if not rel or not raw:
        return None
    start = rel[0]["ref"]
    low = min((v for v in raw if math.isfinite(v)), default=math.inf)
    if not below("range.below_floor", low, -BELOW * start, seed=ev.seed):
        return None
    call = _first_call(ev)
    if call is None:  # not a loss labkit knows the floor of: it must run away from the reference
        ref = [
            float(v)
            for v in refloss.run(ev.setup, ev.seed, ev.steps, "scored", ev.batches).table[
                "loss_raw"
            ]
        ]
        tail = ref[-max(1, len(ref) // 5) :]
        end = sum(tail) / len(tail) if all(map(math.isfinite, tail)) else math.inf
        if not above("range.reference_rises", end / ref[0], RISES, seed=ev.seed, log=True):
            return None
    return {
        "low": low,
        "start": start,
        "call": call and call[0],
        "ratio": _ratio(rel),
        "nll": _nll_on_logits(ev),
    }


def _runaway(ev) -> tuple[float, float] | None:
    """(start, lowest) of the learner's raw loss where it falls below -RUNAWAY x its start's
    size (at least 1) and stays there over the run's second half: a loss unbounded below."""
    raw = [float(v) for v in ev.run.table["loss_raw"] if v is not None]
    raw = [v for v in raw if math.isfinite(v)]
    if len(raw) < 10:
        return None
    limit = -RUNAWAY * max(abs(raw[0]), 1.0)
    late = max(raw[len(raw) // 2 :])  # the highest of the second half: still far below
    if not below("range.runaway", late, limit, seed=ev.seed):
        return None
    return raw[0], min(raw)


def _runaway_rule(evs) -> OwnFinding | None:
    """H1 when the learner's loss runs away below 0 on both seeds (`_runaway`)."""
    got = [_runaway(ev) for ev in evs]
    if not all(got):
        return None
    lows = " / ".join(f"{g[1]:.3g}" for g in got)
    return OwnFinding(
        "H1",
        "unbounded_below",
        f"your loss decreases without bound: from {got[0][0]:.3g} at the first step it falls "
        f"to {lows} (seeds {evs[0].seed} / {evs[1].seed}), and over the second half of each "
        f"run it stays below -{RUNAWAY:g} times its start's size: a loss a model can fit has a "
        "floor (an error or a negative log-likelihood), so minimising this one drives some "
        "term toward -inf instead of fitting the data; look for a term whose sign is flipped "
        "(one subtracted where it should be added, such as a KL or a penalty written as its "
        "negative, or a log-likelihood minimised without its minus)",
    )


def range_rule(evs) -> OwnFinding | None:
    """H1 when the learner's loss falls below the floor of the loss it is, on both seeds, or
    runs away below 0 whatever loss it is (`_runaway_rule`)."""
    found = [_below_floor(ev) for ev in evs]
    if not all(found):
        return _runaway_rule(evs)
    f = found[0]
    kind = relation(evs[0])[0]["kind"]
    if f["nll"] is not None:
        key, what = (
            "nll_logits",
            (
                f"nll_loss is fed raw logits where log-probabilities belong (the exp of "
                f"its input rows sums to {f['nll']} on average, not 1): nll_loss only picks "
                "-input[label], so on logits it has no floor and falls without bound as the "
                "label's logit grows; take log_softmax first, or call cross_entropy"
            ),
        )
    elif (
        f["ratio"] is not None
        and f["ratio"] < 0
        and all(x["ratio"] is not None and x["ratio"] < 0 for x in found)
    ):
        key, what = (
            "loss_sign",
            (
                f"the loss's sign is flipped: at init it is exactly {f['ratio']:.3g} x the "
                f"{kind} on the same outputs and labels, a log-likelihood minimised without "
                "its minus sign, so minimising it makes the right answers less likely"
            ),
        )
    else:
        key, what = (
            "below_floor",
            (
                f"the loss is built wrong: it is a {kind} in shape, which is never below "
                "0, yet it falls below 0 and keeps falling"
            ),
        )
    return OwnFinding(
        "H1",
        key,
        f"{what} (your loss reaches {f['low']:.3g}, below the floor of 0 that a "
        f"{kind} has; the reference {kind} at init is {f['start']:.3g})",
    )


def summed(evs, finding: OwnFinding) -> OwnFinding:
    """`finding` (an optimizer or LR mechanism of a failing run), or the summed loss behind it."""
    counts = []
    for ev in evs:
        rel = relation(ev)
        ratio = _ratio(rel)
        if ratio is None or not rel:
            return finding
        n = next(
            (
                k
                for k in ("rows", "elements")
                if all(
                    abs(r["yours"] / r["ref"] - r[k]) <= SAME * r[k] for r in rel if r["ref"] > 1e-6
                )
            ),
            None,
        )
        if n is None or rel[0][n] < 2:
            return finding
        counts.append(rel[0][n])
    what = "examples" if counts[0] == len(proto.labels_of(evs[0].batches[0])) else "label elements"
    return OwnFinding(
        "H1",
        "loss_summed",
        f"the loss is summed over the batch, not averaged (a reduction of "
        f"'sum', or .sum() where .mean() belongs): batch after batch it is exactly {counts[0]}x "
        f"the mean loss on the same outputs and labels, one term for each of the {counts[0]} "
        f"{what}, so under an LR tuned for a mean every step is {counts[0]} times too large; "
        f"reduction='mean' is the one change closest to the cause (also worked: {finding.mechanism})",
    )
