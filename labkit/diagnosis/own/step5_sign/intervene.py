"""The one-variable intervention that tests a finding of the setup triage, and its FORECAST.

`plan(finding, evs)` returns the forecast line and a function that runs the intervention
on a seed (after the forecast is sealed). The threshold is read off the seed-0 evidence
gathered before the conviction (the learner's run and the plain arm it is compared
with); seed 1 is the confirmation. Arms:

- a plain-loop arm ("own", "rebuilt", "ref", "lr/10", "lr/100", "unfrozen", "init"): the loss
  lands at least halfway from the curve it replaces to the arm's curve;
- "logger": the learner's own loop re-run, reported as the honest running mean of its
  raw losses: the reported curve moves at least halfway to the honest one, at the step where
  every seed's reports stand furthest on one side of every seed's honest mean (seed 0's widest
  gap where none separates them all);
- "shuffled": labels permuted again; the loss ends no better than with the real labels;
- "cleaned": non-finite input values replaced by 0; the loss stays finite and bounded;
- "held_out_train": train on all but the last fifth of the training batches and score
  that fifth: the held-out loss falls at least halfway from its value at init.
"""

from __future__ import annotations

import math
import time

import torch

from ....core.run import Run
from ..step1_capture import setup as proto
from ..step6_decide.evidence import epochs_for
from ..step1_capture.loops import known_arm, plain_loop, shuffled_labels

BASES = {
    "own": "run",
    "rebuilt": "own",
    "ref": "own",
    "lr/10": "own",
    "lr/100": "own",
    "unfrozen": "ref",
    "init": "run",
}


def _window(values, step: int) -> float:
    part = [v for v in values[max(0, step - 9) : step + 1] if v is not None]
    return sum(part) / len(part) if part and all(map(math.isfinite, part)) else math.inf


def _num(x: float) -> str:
    return f"{x:.4f}" if abs(x) >= 1e-3 else f"{x:.3e}"


def _epoch_mean(raw, per_epoch):
    out, total = [], 0.0
    for t, v in enumerate(raw):
        total = (0.0 if t % per_epoch == 0 else total) + v
        out.append(total / (t % per_epoch + 1))
    return out


def _logger_run(ev, seed):
    n_batches = len(proto.batches(ev.setup, seed))
    epochs = epochs_for(n_batches)
    started = time.time()
    run = proto.train(ev.setup, seed, epochs)
    raw = [float(v) for v in run.table["loss_raw"]]
    per = len(raw) // epochs if len(raw) % epochs == 0 else n_batches
    return Run.from_log(
        {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": _epoch_mean(raw, per)},
        seed=seed,
        started_at=started,
        config={"task": "your loop, honest logger"},
    )


def _separation(evs, t: int):
    """(gap, midpoint, op) at step t where every seed's reported window lies on one side of
    every seed's honest window, or None: the threshold a fix must cross on both seeds."""
    h, r = [], []
    for ev in evs:
        raw = [float(v) for v in ev.run.table["loss_raw"]]
        rep = ev.run.table["loss_reported"]
        if t >= len(raw) or rep[t] is None or not math.isfinite(rep[t]):
            return None
        h.append(_window(_epoch_mean(raw, ev.rows_per_epoch), t))
        r.append(_window(rep, t))
    if max(r) < min(h):
        return min(h) - max(r), (min(h) + max(r)) / 2, ">"
    if min(r) > max(h):
        return min(r) - max(h), (min(r) + max(h)) / 2, "<"
    return None


def _plan_logger(evs):
    """The step where the honest and the reported windows stand furthest apart on every seed,
    the threshold halfway between them; on seed 0 alone where no step separates all seeds."""
    ev = evs[0]
    raw = [float(v) for v in ev.run.table["loss_raw"]]
    both = [(t, _separation(evs, t)) for t in range(9, len(raw))]
    both = [(t, sep) for t, sep in both if sep is not None]
    if len(evs) > 1 and both:
        where, (_, mid, op) = max(both, key=lambda b: b[1][0])
        return f"loss_reported {op} {_num(mid)} by step {where}", lambda seed: _logger_run(ev, seed)
    honest = _epoch_mean(raw, ev.rows_per_epoch)
    rep = ev.run.table["loss_reported"]
    best, where = 0.0, None
    for t in range(9, len(raw)):
        if rep[t] is None or not math.isfinite(rep[t]):
            continue
        gap = abs(rep[t] - _window(honest, t))  # the widest gap: where seeds agree best, early
        if gap > best:
            best, where = gap, t
    if where is None:
        return None
    h, r = _window(honest, where), float(rep[where])
    mid = (h + r) / 2
    op = "<" if r > h else ">"
    return f"loss_reported {op} {_num(mid)} by step {where}", lambda seed: _logger_run(ev, seed)


def _plan_arm(finding, evs):
    ev, arm = evs[0], finding.arm
    step = ev.steps - 1
    after = _window(ev.arm(arm).losses, step)
    base_arm = BASES.get(arm, "own")  # default:<setting> arms compare with your optimizer
    base = ev.run.table["loss_raw"] if base_arm == "run" else ev.arm(base_arm).losses
    start = float(base[0]) if base[0] is not None else math.inf
    before = min(_window(base, min(step, len(base) - 1)), start)
    if not (math.isfinite(after) and after < before):
        return None
    target = after + 0.5 * (before - after)
    return (
        f"loss < {_num(target)} by step {step}",
        lambda seed: plain_loop(ev.setup, seed, ev.steps, arm, batches=_batches(evs, seed)).run,
    )


def halfway(evs, after: float, before: float, run, variable):
    """(forecast, run, variable): the loss at least halfway from `before` down to `after` by
    the last step; None where `after` is not below `before`."""
    if not (math.isfinite(after) and after < before):
        return None
    return (
        f"loss < {_num(after + 0.5 * (before - after))} by step {evs[0].steps - 1}",
        run,
        variable,
    )


def _batches(evs, seed):
    return next(ev.batches for ev in evs if ev.seed == seed)


def _plan_shuffled(evs):
    ev, arm = evs[0], evs[0].best_arm()
    step = ev.steps - 1
    real = [_window(e.arm(arm).losses, step) for e in evs]
    if not all(map(math.isfinite, real)):
        return None
    margin = max(0.1 * abs(real[0]), 3 * abs(real[0] - real[1]))
    return (
        f"loss > {_num(real[0] - margin)} by step {step}",
        lambda seed: (
            plain_loop(
                ev.setup, seed, ev.steps, arm, batches=shuffled_labels(_batches(evs, seed), seed)
            ).run
        ),
    )


def _cleaned(batches):
    return [
        proto.with_inputs(b, torch.nan_to_num(proto.inputs_of(b), nan=0.0, posinf=0.0, neginf=0.0))
        for b in batches
    ]


def _plan_cleaned(evs):
    ev = evs[0]
    with torch.no_grad():
        start = float(
            proto.loss(ev.setup, proto.make_model(ev.setup, ev.seed), _cleaned(ev.batches)[0])
        )
    if not math.isfinite(start):
        return None
    return (
        f"loss < {_num(1.5 * abs(start))} by step {ev.steps - 1}",
        lambda seed: (
            plain_loop(ev.setup, seed, ev.steps, "ref", batches=_cleaned(_batches(evs, seed))).run
        ),
    )


def _held_out_run(ev, batches, seed):
    started = time.time()
    k = max(1, len(batches) // 5)
    res = plain_loop(
        ev.setup,
        seed,
        ev.steps,
        ev.best_arm(),
        batches=batches[:-k] or batches,
        held_out=batches[-k:],
        checkpoints=10,
    )
    return res.evals_run(seed, started, "held-out slice of training")


def _plan_held_out(evs):
    ev = evs[0]
    if ev.n_batches < 2:
        return None
    trial = _held_out_run(ev, ev.batches, ev.seed)
    first, last = trial.table["loss_raw"][0], trial.table["loss_raw"][-1]
    if not (math.isfinite(last) and last < first):
        return None
    return (
        f"loss < {_num(last + 0.5 * (first - last))} by step {trial.table['step'][-1]}",
        lambda seed: _held_out_run(ev, _batches(evs, seed), seed),
    )


def _plan_data(evs, once, change):
    """A plain loop (the learner's optimizer) on the batches as `change` makes them: `once(ev)`
    is that loop on the first seed, already run by the rule."""
    ev = evs[0]
    step = ev.steps - 1
    after, before = _window(once(ev).losses, step), _window(ev.arm("own").losses, step)
    if not (math.isfinite(after) and after < before):
        return None
    return (
        f"loss < {_num(after + 0.5 * (before - after))} by step {step}",
        lambda seed: (
            plain_loop(ev.setup, seed, ev.steps, "own", batches=change(_batches(evs, seed))).run
        ),
    )


def plan(finding, evs):
    """(forecast text, run(seed) -> Run) for the finding's intervention, or None."""
    if finding.arm == "logger":
        return _plan_logger(evs)
    if finding.arm == "shuffled":
        return _plan_shuffled(evs)
    if finding.arm == "cleaned":
        return _plan_cleaned(evs)
    if finding.arm == "held_out_train":
        return _plan_held_out(evs)
    if finding.arm == "reread":  # the images re-read from channels-last memory (`layout`)
        from ..step3_h2.layout import reread, reread_batches

        return _plan_data(evs, reread, reread_batches)
    if finding.arm.startswith("mask:"):  # the batch's mask inverted (`mask`)
        from ..step3_h2.mask import inverted_batches, inverted_run

        key = finding.arm[5:]
        return _plan_data(evs, lambda ev: inverted_run(ev, key), lambda b: inverted_batches(b, key))
    if finding.arm.startswith("repaired:"):  # masks flipped back to their images (`paired`)
        from ..step3_h2.paired import repaired, repaired_batches

        how = finding.arm[9:]
        return _plan_data(evs, lambda ev: repaired(ev, how), lambda b: repaired_batches(b, how))
    if known_arm(finding.arm):
        return _plan_arm(finding, evs)
    return None
