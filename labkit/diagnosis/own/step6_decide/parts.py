"""A measured gap decides (issue 55), one part replaced: the learner's run, or the plain loop
on the learner's parts, against the same loop with one part as PyTorch or the textbook gives
it: the init (`init_gap`, and `init_first` where the replay blamed the LR), the dropout
(`dropout_gap`), a clip called where it finds no gradient (`clip_gap`), a one-way RNN read at
its first step (`first_step_gap`). The loop and the data as a whole are in `gaps`."""

from __future__ import annotations

import torch

from ...finding import OwnFinding
from ..margins import above, below
from ..step1_capture.loops import held_out_loss, learner_model, plain_loop
from ..step5_sign.reread import first_step_rnns, with_reversed
from .gaps import _pair, spread_margin

INIT_MARGIN = 0.1  # the default init's loop below the learner's init's by this share of the start
HIGH_DROP = 0.5  # a dropout layer dropping this share of its units or more is read (`dropout_gap`)
DROP_HALF = 0.5  # with dropout off, the trained model scores below this share of the learner's


def init_gap(evs, plain: list[float]) -> OwnFinding | None:
    """H1, the init: a plain loop on the model as PyTorch's layers draw it ends below the same
    loop on the learner's init by more than INIT_MARGIN of the start (and the seed spread)."""
    init = [ev.arm("init").level() for ev in evs]
    start = abs(evs[0].arm("own").losses[0])
    margin = max(spread_margin(plain, start, INIT_MARGIN), spread_margin(init, start, INIT_MARGIN))
    if not all(
        above("gap.init", p - i, margin, seed=ev.seed) for p, i, ev in zip(plain, init, evs)
    ):
        return None
    return OwnFinding(
        "H1",
        "init",
        f"your model's init, not the loop: the same plain loop (your data, loss and optimizer) "
        f"reaches {init[0]:.3g} / {init[1]:.3g} on your model re-initialised as PyTorch's layers "
        f"draw themselves (reset_parameters()), where on your init it ends at {plain[0]:.3g} / "
        f"{plain[1]:.3g} (seeds {evs[0].seed} / {evs[1].seed}); the init in make_model "
        "(a constant, a scale, a copy) keeps the model from learning",
        arm="init",
        variable=("init", "your make_model's init", "each layer's reset_parameters()"),
    )


def init_first(evs, finding: OwnFinding | None) -> OwnFinding | None:
    """The init, where `finding` blames the LR (a divergence, a loss that never settles) but
    the same plain loop at the learner's own LR on PyTorch's default init ends far below it
    (`init_gap`): the LR is then not what differs."""
    if finding is None or finding.key not in ("divergence", "unsettled"):
        return finding
    found = init_gap(evs, [ev.arm("own").level() for ev in evs])
    if found is None:
        return finding
    found.mechanism += f" (also measured: {finding.mechanism})"
    return found


def dropout_gap(evs) -> OwnFinding | None:
    """H1, the model's dropout: a dropout layer with p >= HIGH_DROP, and the same plain loop
    on the model with every dropout at p=0 leaves a model that scores (in eval mode, on the
    learner's batches) below DROP_HALF of what the learner's model scores after it, beyond
    the seed spread, on every seed."""
    drops = [
        m.p
        for m in learner_model(evs[0]).modules()
        if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0
    ]
    if not drops or not above("gap.dropout_p", max(drops), HIGH_DROP, seed=evs[0].seed):
        return None
    kept = [held_out_loss(ev.setup, ev.arm("own").model, ev.batches) for ev in evs]
    off = [held_out_loss(ev.setup, ev.arm("nodrop").model, ev.batches) for ev in evs]
    margin = spread_margin(kept, abs(evs[0].arm("own").losses[0]))
    if not all(
        above("gap.dropout", k - o, margin, seed=ev.seed)
        and below("gap.dropout_half", o, DROP_HALF * k, seed=ev.seed)
        for k, o, ev in zip(kept, off, evs)
    ):
        return None
    p = max(drops)
    return OwnFinding(
        "H1",
        "dropout_high",
        f"your model's dropout drops {p:.0%} of the units at every training step "
        f"(nn.Dropout(p={p:g}): PyTorch's p is the share dropped, where TensorFlow 1's "
        f"keep_prob is the share kept): after the same plain loop, your model scores "
        f"{_pair(kept)} on your batches in eval mode, and with every dropout at p=0 it scores "
        f"{_pair(off)} (seeds {evs[0].seed} / {evs[1].seed}); set p to the share to drop "
        "(1 - keep_prob), usually 0.1 to 0.5",
        arm="nodrop",
        variable=("dropout p", f"{p:g}", "0"),
    )


def _clips_without_gradient(ev) -> tuple[str, float] | None:
    """The clip asked for ((kind, limit)) when the learner's run called a clip three times or
    more and not one call found a gradient to clip (called before backward(), or after
    zero_grad()); else None."""
    try:
        found, clips = ev.replay.clip_grads, ev.replay.clips
    except Exception:  # a replay that did not travel (the ranks of a DDP run): nothing read
        return None
    if len(found) < 3 or any(found) or not clips:
        return None
    return clips[-1]


def clip_gap(evs, own: list[float]) -> OwnFinding | None:
    """H1: every clip call of the run found no gradient, and a plain loop with that clip after
    backward() ends beyond the seed spread below the learner's run, on every seed."""
    asked = [_clips_without_gradient(ev) for ev in evs]
    if any(a is None for a in asked):
        return None
    kind, limit = asked[0]
    clipped = [
        ev.once(
            "clipped", lambda ev=ev: plain_loop(ev.setup, ev.seed, ev.steps, clip=(kind, limit))
        )
        for ev in evs
    ]
    levels = [c.level() for c in clipped]
    margin = spread_margin(levels, abs(evs[0].arm("own").losses[0]))
    if not all(
        above("gap.clip", o - c, margin, seed=ev.seed) for o, c, ev in zip(own, levels, evs)
    ):
        return None
    call = "clip_grad_value_" if kind == "clip_value" else "clip_grad_norm_"
    calls_made = len(evs[0].replay.clip_grads)
    return OwnFinding(
        "H1",
        "clip_before_backward",
        f"your clip never clips: all {calls_made} calls of {call}(..., {kind}={limit:g}) found "
        "no gradient (called before backward(), or after zero_grad()), so every step takes the "
        f"unclipped gradient; a plain loop with your model, data, loss and optimizer and the same "
        f"clip after backward() reaches {_pair(levels)} where your run ends at {_pair(own)}: "
        "call the clip between backward() and step()",
        arm=None,
        variable=None,
    )


def first_step_gap(evs) -> OwnFinding | None:
    """H1: a one-way RNN's hidden-to-hidden weight had a gradient of exactly 0 at every step
    (`zero_grad`: only its first step is read, its state before it being 0), and the same plain
    loop with that layer's outputs read in reverse time order (its last step where the forward
    reads the first) ends below the loop as written by more than the seed spread, on every
    seed."""
    names = first_step_rnns(evs[0])
    if not names:
        return None
    modules = dict(learner_model(evs[0]).named_modules())
    plain = [ev.arm("own").level() for ev in evs]
    flipped = [
        ev.once(
            "reversed_rnn",
            lambda ev=ev: plain_loop(with_reversed(ev.setup, names), ev.seed, ev.steps, "own"),
        ).level()
        for ev in evs
    ]
    margin = spread_margin(plain, abs(evs[0].arm("own").losses[0]))
    if not all(
        above("gap.first_step", p - f, margin, seed=ev.seed)
        for p, f, ev in zip(plain, flipped, evs)
    ):
        return None
    return OwnFinding(
        "H1",
        "first_step_read",
        f"your model reads its one-way {type(modules[names[0]]).__name__} "
        f"({names[0] or 'the model'}) at its first time step, whose state has seen one input: "
        f"its hidden-to-hidden weight had a gradient of exactly 0 after every backward() (the "
        f"state before the first step is 0, so nothing read uses it); the same plain loop "
        f"(your model, data, loss and optimizer) with that layer's outputs read in reverse time "
        f"order, so that position 0 holds the state after the whole sequence, reaches "
        f"{_pair(flipped)} where as written it ends at {_pair(plain)} (seeds {evs[0].seed} / "
        f"{evs[1].seed}): read the last step's output (out[:, -1] batch-first), or the final "
        "hidden state",
        arm=None,
        variable=None,
    )
