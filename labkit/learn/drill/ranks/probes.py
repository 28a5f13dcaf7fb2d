"""Each distributed probe's answer: the lines the learner reads, and one outcome of
`book.OUTCOMES[probe]`, all read from the runs of one launch (`RankCase`).

Every sentence says what the numbers show. The thresholds, and why they hold on every CPU:
  - DDP keeps the ranks' parameters equal bit for bit, so a healthy run's differences are
    exactly 0; anything above the watch's TOLERANCE (1e-6 relative) is "differ".
  - A healthy reported loss IS the all-reduced mean (the same float), so any gap is a bug.
  - A first update within 0.8-1.25x one process's is "matches" (healthy DDP: the ranks'
    BatchNorm sees 16 examples each, one process 32, so it is near 1, not exactly 1); within
    1.7-2.3x on both ranks, "double".
"""

from __future__ import annotations

import math

from ....core.watch.ranks import TOLERANCE
from ..front.text import num, point_rows
from ..probes import Answer
from .case import RankCase

EVERY_SHOWN = 8  # values shown every this many steps
MATCH, DOUBLE = (0.8, 1.25), (1.7, 2.3)


def answer(case: RankCase, name: str) -> Answer:
    if name == "second_seed":
        return _second_seed(case)
    return _ANSWERS[name](case.pair(), case.one_process())


def _row(label: str, values) -> str:
    return f"  {label:<18}" + " ".join(f"{num(v):>7}" for v in values[::EVERY_SHOWN])


def _steps_head(n: int) -> str:
    return f"  {'step':<18}" + " ".join(f"{s:>7}" for s in range(0, n, EVERY_SHOWN))


def reported_vs_mean(pair, one=None) -> Answer:
    mean = pair[0]["mean_loss"]
    lines = [
        f"reported loss of each rank and the mean over both ranks, every {EVERY_SHOWN} steps:",
        _steps_head(len(mean)),
        *(_row(f"rank {r['rank']} reported", r["reported"]) for r in pair),
        _row("mean over ranks", mean),
    ]
    gaps = [max(abs(a - b) for a, b in zip(r["reported"], mean)) for r in pair]
    for r, gap in zip(pair, gaps):
        if gap <= 0:
            lines.append(f"rank {r['rank']}: its reported value equals the mean at all steps")
            continue
        own = all(a == b for a, b in zip(r["reported"], r["local_loss"]))
        lines.append(
            f"rank {r['rank']}: reported and mean differ by up to {num(gap, 3)}"
            + ("; the reported value is this rank's own loss at every step" if own else "")
        )
    outcome = "agree" if max(gaps) <= 0 else "disagree"
    curves = {f"rank {r['rank']} reported": r["reported"] for r in pair}
    return Answer("reported_vs_mean", outcome, lines, {**curves, "mean over ranks": mean})


def rank_losses(pair, one=None) -> Answer:
    lines = [
        f"each rank's own loss (its own 16 examples a step), every {EVERY_SHOWN} steps:",
        _steps_head(len(pair[0]["local_loss"])),
        *(_row(f"rank {r['rank']} own loss", r["local_loss"]) for r in pair),
    ]
    ratios = []
    for r in pair:
        v = r["local_loss"]
        k = max(1, len(v) // 8)
        head, tail = sum(v[:k]) / k, sum(v[-k:]) / k
        ratios.append(tail / head if math.isfinite(tail) and head > 0 else math.inf)
        lines.append(
            f"rank {r['rank']}: mean of the first {k} steps {num(head, 4)}, "
            f"of the last {k} {num(tail, 4)}"
        )
    outcome = (
        "fall" if max(ratios) < 0.9 else "rise" if max(ratios) > 1.1 else "flat"
    )  # both ranks fall by 10% or more; or one ends 10% higher or non-finite; else flat
    return Answer(
        "rank_losses", outcome, lines, {f"rank {r['rank']}": r["local_loss"] for r in pair}
    )


def rank_check(pair, one=None) -> Answer:
    checks = pair[0]["checks"]
    lines = [
        "labkit.watch's check across ranks (relative differences; DDP keeps them at 0):",
        f"  {'step':>6} {'parameters':>12} {'buffers':>10}  gradients",
    ]
    params = buffers = 0.0
    for c in checks:
        p = max(c["max_rel_diff"].values(), default=0.0)
        b = c.get("buffers_rel_diff")
        params, buffers = max(params, p), max(buffers, b or 0.0)
        grads = "differ" if c["grads_differ"] else "equal"
        b_text = "-" if b is None else num(b, 3)
        lines.append(f"  {c['step']:>6} {num(p, 3):>12} {b_text:>10}  {grads}")
    lines.append(
        "after the last step, the largest parameter difference between the ranks: "
        + num(max(r["max_param_diff"] for r in pair), 3)
    )
    lines += [f"watch: {f}" for f in pair[0]["findings"]] or ["watch: no finding"]
    outcome = "parameters" if params > TOLERANCE else "buffers" if buffers > TOLERANCE else "equal"
    return Answer("rank_check", outcome, lines)


def epoch_order(pair, one=None) -> Answer:
    lines = ["the first four examples of each epoch (dataset indices):"]
    same = []
    for r in pair:
        orders = r["epoch_orders"]
        for e, o in enumerate(orders):
            lines.append(f"  rank {r['rank']} epoch {e}: {o}")
        repeats = sum(o == orders[0] for o in orders[1:])
        same.append(repeats == len(orders) - 1)
        lines.append(
            f"  rank {r['rank']}: {repeats} of {len(orders) - 1} later epochs start on the "
            "same four examples as epoch 0"
        )
    return Answer("epoch_order", "repeats" if all(same) else "reshuffled", lines)


def first_update(pair, one) -> Answer:
    norms = [r["update_norm_0"] for r in pair]
    ratios = [u / one for u in norms]
    equal = norms[0] == norms[1]
    lines = [
        "norm of the first update (all parameters):",
        *(
            f"  rank {r['rank']}: {num(u, 4)}  ({num(q, 3)}x one process)"
            for r, u, q in zip(pair, norms, ratios)
        ),
        f"  one process, the same model on the same 32 examples: {num(one, 4)}",
        "the two ranks' first update norms are "
        + ("equal" if equal else f"not equal (rank 1 / rank 0 = {num(norms[1] / norms[0], 3)})"),
    ]
    inside = lambda q, lo_hi: lo_hi[0] <= q <= lo_hi[1]  # noqa: E731
    outcome = (
        "double"
        if all(inside(q, DOUBLE) for q in ratios)
        else "matches"
        if equal and all(inside(q, MATCH) for q in ratios)
        else "differs"
    )
    return Answer("first_update", outcome, lines)


_ANSWERS = {
    "reported_vs_mean": reported_vs_mean,
    "rank_losses": rank_losses,
    "rank_check": rank_check,
    "epoch_order": epoch_order,
    "first_update": first_update,
}


def _second_seed(case: RankCase) -> Answer:
    s0, s1 = case.seeds
    lines = [f"the same two-rank run on seed {s1}, read by the four probes above:"]
    same = True
    for name in ("reported_vs_mean", "rank_check", "epoch_order", "first_update"):
        a = _ANSWERS[name](case.pair(), case.one_process())
        b = _ANSWERS[name](case.pair(True), case.one_process(True))
        same &= a.outcome == b.outcome
        lines.append(f"  {name:<17} seed {s1}: {b.outcome:<11} seed {s0}: {a.outcome}")
    lines.append(
        "every outcome is the same on both seeds" if same else "at least one outcome differs"
    )
    return Answer(
        "second_seed",
        "same" if same else "different",
        lines,
        {f"rank 0 reported, seed {s1}": case.pair(True)[0]["reported"]},
    )


def symptom_lines(case: RankCase) -> list[str]:
    """Rank 0's reported loss, the way the team's dashboard shows it, and a teammate's take."""
    from ..front.text import ascii_plot, wrap

    reported = case.reported()
    return [
        *wrap(f"The run: {case.mystery.setting}."),
        f"Rank 0's reported training loss, {len(reported)} steps (raw points, no smoothing):",
        *ascii_plot(reported),
        *point_rows(reported),
        *wrap(f"Your teammate: {teammate_says(reported)}"),
    ]


def teammate_says(reported: list) -> str:
    """A confident one-liner from rank 0's reported curve alone; never from the hidden bug."""
    first, last, n = reported[0], reported[-1], len(reported)
    if not all(v is not None and math.isfinite(v) for v in reported):
        return '"It went NaN. Two ranks means twice the LR; halve it and rerun."'
    if last < 0.9 * first:
        return (
            f'"Rank 0 went from {first:.2f} to {last:.2f} in {n} steps. DDP keeps the ranks '
            'in step, so the other rank is the same; ship it."'
        )
    return (
        f"\"It's at {last:.2f} after {n} steps. With two ranks the LR should be doubled; "
        'do that and rerun."'
    )
