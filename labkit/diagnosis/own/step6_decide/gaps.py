"""A measured gap decides (issue 55): the learner's run against runs labkit made with one part
replaced.

When the learner's loop ends beyond the seed spread above a plain loop with the same model,
data, loss and optimizer, the difference lies in the loop (`loop_gap`), even where no finer
mechanism was measured; when a plain loop on the learner's model re-initialised as PyTorch's
layers draw themselves ends far below the same loop on the learner's init, the difference lies
in the init (`init_gap`); when a plain loop on a new call of batches() each epoch ends as far
above the same loop on one call's epoch, it lies in the data each call re-makes (`data_gap`).
Each conviction names the gap, the part that differs and the
one-change run, and is signed by that run (the arm "own" or "init").

Before a loop is blamed, what can be measured about it is named: several optimizers built
during one run (an optimizer rebuilt inside the loop: its state, the momentum or Adam's
moments, starts from zero each time); gradients summed over several backward() calls per step
and never divided (`summed_backwards`: data parallel by hand with all_reduce(SUM), or
micro-batches accumulated), read as the step's gradient over a one-process step's on the same
data; several backward() calls per step with the gradients cleared before each after the
first (`_backwards_dropped`: a step() indented out of the batch loop), so only the last
batch's gradient is applied.
"""

from __future__ import annotations

import math
import statistics

import torch.nn as nn


from ...finding import OwnFinding
from ..margins import above, below
from ..step1_capture import setup as proto
from ..step1_capture.loops import plain_loop
from ..step3_h2 import calls
from ..step4_h1.norms import describe as describe_layers


def spread_margin(values: list[float], start: float, share: float = 0.05) -> float:
    """The gap a difference must exceed: `share` of the start loss or three times the
    seed-to-seed spread of `values`, whichever is larger."""
    return max(share * abs(start), 3 * abs(values[0] - values[-1]))


def _optimizers_built(ev) -> tuple[int, int]:
    """(optimizers that stepped one after another in the learner's run, each taking over from
    the last and never stepping again, steps taken). Two optimizers stepped side by side (a GAN,
    one per group) count once."""
    ids = [st.get("optimizer") for st in ev.replay.steps]
    first, last = {}, {}
    for t, i in enumerate(ids):
        first.setdefault(i, t)
        last[i] = t
    order = sorted(first, key=first.get)
    handoffs = sum(1 for a, b in zip(order, order[1:]) if last[a] < first[b])
    return handoffs + 1, len(ids)


def _fresh_calls(ev):
    """A plain loop (the learner's optimizer) on a new call of batches() for each epoch, as a
    loop that asks for every epoch does: the data part of the learner's run, without its loop."""

    def make():
        data = [b for k in range(ev.epochs) for b in proto.batches(ev.setup, ev.seed + 1 + k)]
        return plain_loop(ev.setup, ev.seed, ev.steps, "own", batches=data)

    return ev.once("fresh_calls", make)


def _within_rows(ev) -> bool:
    """Whether two calls hold the same values in each example, in another order (the features
    permuted), as opposed to other values."""

    def rows(batches) -> list[bytes]:
        return [
            r.reshape(-1).sort().values.numpy().tobytes()
            for b in batches
            for r in proto.inputs_of(b).detach()
        ]

    try:
        a, b = rows(ev.batches), rows(proto.batches(ev.setup, ev.seed + 1))
    except Exception:  # inputs this check cannot read row by row: say nothing
        return False
    return calls._changed(a, b) <= calls.DRIFT


def data_gap(evs, own: list[float], plain: list[float]) -> OwnFinding | None:
    """H2, the data each call re-makes: inputs that differ between two calls of batches() on
    every seed, and a plain loop on a new call each epoch that ends beyond the seed spread above
    the same loop repeating one call's epoch (the learner's loop is then not what differs)."""
    shares = calls.re_made(evs, "inputs")
    if shares is None:
        return None
    fresh = [_fresh_calls(ev).level() for ev in evs]
    start = abs(evs[0].arm("own").losses[0])
    margin = spread_margin(plain, start)
    if not all(
        above("gap.fresh_calls", f - p, margin, seed=ev.seed) for f, p, ev in zip(fresh, plain, evs)
    ):
        return None
    how = (
        "each example keeps its values in another order between calls: the features are "
        "permuted on every call (a shuffle along the feature axis, where the rows were meant); "
        "shuffle the rows, and keep the columns in one order"
        if _within_rows(evs[0])
        else "the values themselves change between calls (a random transform, an augmentation): "
        "check that it keeps what each label means"
    )
    return OwnFinding(
        "H2",
        "re_made_inputs",
        f"the input values change between two calls of batches(): {shares[0]:.0%} / "
        f"{shares[1]:.0%} of one call's examples are not in the other (seeds {evs[0].seed} / "
        f"{evs[1].seed}), and the data, not your loop, holds the gap: a plain loop with your "
        f"model, loss and optimizer on a new call of batches() each epoch ends at "
        f"{_pair(fresh)} where the same loop repeating one call's epoch reaches {_pair(plain)}, "
        f"beyond the seed spread above it as your loop is ({_pair(own)}); {how}",
        arm="own",
        variable=("batches()", "re-made at every call", "one call's epoch, repeated"),
    )


def loop_gap(evs, own: list[float], plain: list[float]) -> OwnFinding:
    """H1, the loop: the learner's run ends beyond the seed spread above the plain loop; H2
    where a plain loop on the learner's calls of batches() ends as far above (`data_gap`)."""
    found = data_gap(evs, own, plain)
    if found is not None:
        return found
    built, steps = _optimizers_built(evs[0])
    rebuilt = built >= 3
    dropped = [_backwards_dropped(ev) for ev in evs]
    dropped = dropped[0] if not rebuilt and all(dropped) else None
    said = (
        f"your run built {built} optimizers one after another over its {steps} steps (a new one "
        + ("at every step" if built >= steps else f"every {steps / built:.3g} steps on average")
        + "): the optimizer is rebuilt inside the loop, so its state (momentum, Adam's moments) "
        "starts from zero each time; build it once, before the loop"
        if rebuilt
        else f"step() ran {steps} times for {dropped[1]} backward() calls (one step per "
        f"{dropped[0]:.3g} batches, as a step() indented out of the batch loop does), and the "
        "gradients were cleared before every backward() after a step's first (measured), so "
        "each step applies the last batch's gradient alone and the others' are thrown away; "
        "call step() after every backward(), or clear the gradients only after step()"
        if dropped
        else _norm_pieces(evs[0])
        or "the difference is in train(): what it does beside zero_grad, the loss, backward() "
        "and step() (an optimizer or its state rebuilt, gradients or the loss changed by hand, "
        "the batches it asks for); compare it with the plain loop line by line"
    )
    key = "optimizer_rebuilt" if rebuilt else "backwards_dropped" if dropped else "loop_gap"
    return OwnFinding(
        "H1",
        key,
        f"your loop, not its parts: a plain loop with your model, data, loss and optimizer "
        f"reaches {plain[0]:.3g} / {plain[1]:.3g} where your loop ends at {own[0]:.3g} / "
        f"{own[1]:.3g} (seeds {evs[0].seed} / {evs[1].seed}); {said}",
        arm="own",
        variable=("training loop", "your train()", "a plain loop: zero_grad, loss, backward, step"),
    )


def _norm_pieces(ev) -> str | None:
    """Where the loop calls the model in training mode on pieces of one or two examples of its
    batches (micro-batches of gradient accumulation) and the model holds BatchNorm layers: a
    sentence naming both, with the rows per call; None otherwise."""
    try:
        rows = [f["rows"] for f in ev.replay.forwards if f.get("grad_enabled") and f.get("rows")]
        models = list(ev.replay.models.values())
    except Exception:  # a replay that did not travel (the ranks of a DDP run): nothing read
        return None
    norms = [
        n
        for m in models
        for n, x in m.named_modules()
        if isinstance(x, nn.modules.batchnorm._BatchNorm)
    ]
    if not rows or not norms or not statistics.median(rows) < min(3, statistics.median(ev.sizes)):
        return None  # pieces of 3 or more examples give BatchNorm a batch's statistics
    piece, whole = statistics.median(rows), statistics.median(ev.sizes)
    return (
        f"your loop calls the model in training mode on pieces of {piece:.3g} "
        + ("example (a micro-batch of one)" if piece == 1 else "examples")
        + f" where each batch holds {whole:.3g}, and the model normalises with BatchNorm "
        f"({', '.join(norms[:4])}): in training mode each BatchNorm takes its statistics over "
        "the piece it is given, so a micro-batch of one is normalised over its own positions "
        "alone: its offset from the other examples is normalised away; accumulate "
        "over micro-batches of several examples, or normalise per example (GroupNorm, "
        "LayerNorm) where the batch must be small"
    )


def _backwards_dropped(ev) -> tuple[float, int] | None:
    """(backward() calls per step(), all backward() calls) when each step follows two or more
    backward() calls and the gradients were cleared before every one after the first (only
    the last gradient reaches step()); None otherwise (one backward per step, or gradients
    accumulated on purpose)."""
    try:
        steps, backs = ev.replay.steps, ev.replay.backwards
    except Exception:  # a replay that did not travel (the ranks of a DDP run): nothing read
        return None
    per = [st.get("backwards", 1) for st in steps]
    later = [b.get("cleared") for b in backs if b.get("cleared") is not None]
    if len(steps) < 2 or statistics.median(per) < 2 or len(later) < 3 or not all(later):
        return None
    return statistics.median(per), len(backs)


def _pair(values: list[float]) -> str:
    return " / ".join(f"{v:.3g}" for v in values)


def references(evs, plain: list[float]) -> str:
    """The references an acquittal stands beside, each with its numbers."""
    ev0, ev1 = evs[0], evs[1]
    init = [ev0.arm("init").level(), ev1.arm("init").level()]
    parts = [
        f"a plain loop with your model, data, loss and optimizer reaches {_pair(plain)}",
        f"the same loop on your model re-initialised by PyTorch's defaults reaches {_pair(init)}",
    ]
    if ev0.ran("ref") and ev1.ran("ref"):
        parts.append(
            f"labkit's reference optimizer, Adam(lr=1e-3), reaches {ev0.arm('ref').level():.3g} "
            f"/ {ev1.arm('ref').level():.3g}"
        )
    own = [ev.facts["own_level"] for ev in evs]
    return (
        f"your run ends at {own[0]:.3g} / {own[1]:.3g} (last fifth, seeds {ev0.seed} / "
        f"{ev1.seed}) where " + ", ".join(parts)
    )


SUM_SAME = 0.05  # the factor within this share of the number of backward() calls: a plain sum


def summed_backwards(ev) -> tuple[float, int] | None:
    """(factor, k): the median over the steps with k >= 2 backward() calls of the step's
    gradient over the gradient of the loss you log (a one-process step on the step's data):
    (the gradient the step uses / what the k calls added) x (the sum of the k values
    backpropagated / the logged raw loss). k for k means summed and never divided; 1 for the
    mean, or for each loss divided by k before its backward()."""
    try:
        raw, steps, backwards = ev.run.table["loss_raw"], ev.replay.steps, ev.replay.backwards
    except Exception:  # a replay that did not travel (the ranks of a DDP run): nothing read
        return None
    values: dict[int, list[float]] = {}
    logged: dict[int, list[float]] = {}  # the raw losses logged for each step's data
    for i, b in enumerate(backwards):
        values.setdefault(b["step"], []).append(b["value"])
        if len(raw) == len(backwards) and raw[i] is not None:  # a row per backward() call
            logged.setdefault(b["step"], []).append(float(raw[i]))
    if len(raw) == len(steps):  # a row per step
        logged = {t: [float(v)] for t, v in enumerate(raw) if v is not None}
    if not logged:
        return None
    factors, ks = [], []
    for t, st in enumerate(steps):
        rows = logged.get(t, [])
        vals, ratio = values.get(t, []), st.get("over_produced")
        loss = sum(rows) / len(rows) if rows else None
        if len(vals) < 2 or ratio is None or not loss or not all(map(math.isfinite, vals)):
            continue
        factors.append(ratio * sum(vals) / float(loss))
        ks.append(len(vals))
    if len(factors) < 3:
        return None
    return statistics.median(factors), round(statistics.median(ks))


def summed_rule(evs, finding: OwnFinding | None) -> OwnFinding | None:
    """H1: each step's gradient is k times a one-process step's on the same data, on every seed,
    where the run fails (`finding`, a divergence or a loop gap, is what it explains)."""
    got = [summed_backwards(ev) for ev in evs]
    if any(g is None for g in got) or not all(
        g[1] >= 2 and below("gap.summed", abs(g[0] / g[1] - 1), SUM_SAME, seed=ev.seed)
        for g, ev in zip(got, evs)
    ):
        return finding
    factor, k = got[0]
    also = f" (also measured: {finding.mechanism})" if finding is not None else ""
    return OwnFinding(
        "H1",
        "grad_summed",
        f"gradients summed over the {k} backward() calls of each step and never divided by {k}: "
        f"each step's gradient is {factor:.3g}x the gradient of the loss you log on the same "
        f"data (a one-process step on the whole batch), as an all_reduce(SUM) across {k} ranks "
        f"by hand, or {k} accumulated micro-batches, leaves it; divide by the world size (the "
        f"number of micro-batches), as DDP's averaging does, or the LR is {k} times what you "
        f"tuned{also}",
        arm=finding.arm if finding is not None else None,
        variable=finding.variable if finding is not None else None,
    )


def noted(found: OwnFinding, evs) -> OwnFinding:
    """The frozen parameters (a deliberate freeze convicts nothing) and the per-layer relative
    updates, reported whatever the verdict."""
    for note in (
        evs[0].results.get("frozen_note"),
        *evs[0].results.get("advice", ()),
        describe_layers(evs[0]) if "own" in evs[0].results else None,
    ):
        if note and note not in found.notes:
            found.notes.append(note)
    return found
