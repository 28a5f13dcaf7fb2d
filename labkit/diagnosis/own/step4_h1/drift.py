"""H1 on a distributed setup: ranks whose parameters drift apart, and gradients summed twice.

The drift is `labkit.watch`'s cross-rank check (`labkit.core.watch.ranks`) on the learner's
own model; what the wrapper saw (`rankhooks`) names the cause: no training forward went
through DDP (a forward through ``ddp.module``), or every one ran with DDP's sync off
(``no_sync()`` on every step). Gradients all-reduced by hand while DDP synced the same
backward are summed twice.
"""

from __future__ import annotations

from ...finding import Finding
from ..margins import above

RATIO = 0.01  # relative: the first gradient's ratio to the arm's within this of world_size


def _said(ev: dict, start: str) -> str | None:
    return next((f for f in ev["findings"] if f.startswith(start)), None)


def last_diff(ev: dict, key: str = "max_rel_diff") -> float | None:
    """The largest relative difference between the ranks at the watch's last check."""
    if not ev["checks"]:
        return None
    values = ev["checks"][-1][key]
    return max(values.values(), default=0.0) if isinstance(values, dict) else values


def _first(checks: list[dict]) -> str:
    """Whether the gradients or only the updates differed at the first check that drifted."""
    from ....core.watch.ranks import TOLERANCE

    c = next(c for c in checks if max(c["max_rel_diff"].values(), default=0.0) > TOLERANCE)
    if c["grads_differ"]:
        return f"the ranks' gradients already differed at that check (step {c['step']})"
    if c["updates_differ"]:
        return f"the gradients agreed at step {c['step']} but the updates did not"
    return f"gradients and updates agreed at step {c['step']}"


def drift_rule(evs: dict) -> Finding | None:
    """`evs`: {seed: [each rank's evidence]}."""
    runs = [ranks[0] for ranks in evs.values()]
    if not all(ev["checks"] for ev in runs):
        return Finding(
            "UNKNOWN",
            "not_compared",
            "the ranks' parameters were not compared: at the first training forward, no "
            "optimizer held the model's parameters, so labkit.watch could not hook the loop",
        )
    if not all(_said(ev, "ranks diverged") for ev in runs):
        return None
    ev, said = runs[0], _said(runs[0], "ranks diverged")
    f = ev["forwards"]
    seen = (
        f"the watch's check: {said.split(';')[0]}; {_first(ev['checks'])}; of {f['inner']} "
        f"training forwards, {f['ddp']} went through the DDP wrapper, {f['ddp_synced']} with "
        "its gradient sync on"
    )
    if not ev["ddp"]:
        return Finding(
            "H1",
            "no_ddp",
            f"{seen}: the loop builds no DistributedDataParallel, so nothing averages the "
            "gradients and each rank trains its own copy of the model on its own shard "
            "(wrap the model: DDP(model))",
        )
    if f["ddp"] == 0 and f["inner"] > 0:
        return Finding(
            "H1",
            "forward_through_module",
            f"{seen}: the forward goes through ddp.module, so DDP's hooks never average the "
            "gradients and each rank steps on its own shard's gradient",
            arm="wrapper",
            variable=("the forward", "ddp.module(x)", "ddp(x)"),
        )
    if f["ddp"] > 0 and f["ddp_synced"] == 0:
        return Finding(
            "H1",
            "no_sync_every_step",
            f"{seen}: every backward runs under no_sync(), so the gradients are never "
            "averaged (the last micro-batch of an accumulation must leave no_sync())",
            arm="sync",
            variable=("no_sync()", "around every backward", "left out"),
        )
    apart = settings_apart(evs[next(iter(evs))])
    if apart is not None:
        return Finding(
            "H1",
            "optimizer_differs_per_rank",
            f"{seen}: the ranks' optimizers are not the same: {apart}; DDP averages the "
            "gradients, so the same gradient takes a different step on each rank and the "
            "copies part (build the optimizer from settings every rank shares)",
        )
    return Finding("UNKNOWN", "ranks_diverged", f"{seen}; no cause was measured")


def settings_apart(ranks: list[dict]) -> str | None:
    """Where the ranks' optimizer settings differ ("lr 0.05 on rank 0, 0.1 on rank 1"), or
    None where they agree or were not read."""
    settings = [ev.get("settings") for ev in ranks]
    if any(s is None for s in settings) or len({len(s) for s in settings}) > 1:
        return None
    said = []
    for g, group in enumerate(settings[0]):
        for k, v in group.items():
            values = [s[g].get(k) for s in settings]
            if any(x != v for x in values):
                where = f" of param group {g}" if len(settings[0]) > 1 else ""
                each = ", ".join(
                    f"{x:g} on rank {r}" if isinstance(x, float) else f"{x} on rank {r}"
                    for r, x in enumerate(values)
                )
                said.append(f"{k}{where}: {each}")
    return "; ".join(said) or None


def steps_apart_rule(evs: dict) -> Finding | None:
    """Ranks that make different numbers of optimizer steps in the same loop (a step under
    ``if rank == 0``), on every seed: their copies of the model part, whatever DDP averages."""
    counts = {s: [ev.get("optimizer_steps") for ev in ranks] for s, ranks in evs.items()}
    if any(None in c or len(set(c)) == 1 for c in counts.values()):
        return None
    seed, c = next(iter(counts.items()))
    ev = evs[seed][0]
    each = ", ".join(f"rank {r} made {n}" for r, n in enumerate(c))
    unanswered = _said(ev, "the other ranks did not answer")
    return Finding(
        "H1",
        "steps_apart",
        f"the ranks do not make the same number of optimizer steps: over the same "
        f"{ev['forwards']['inner']} training forwards each, {each} (seed {seed}; every seed "
        "alike)"
        + ("; the watch's checks went unanswered from then on" if unanswered else "")
        + ": DDP averages every rank's gradients, but a rank that skips optimizer.step() "
        "keeps its old parameters, so the copies part (is the step under `if rank == 0`?)",
    )


def buffers_rule(evs: dict) -> Finding | None:
    runs = [ranks[0] for ranks in evs.values()]
    if not all(_said(ev, "ranks' buffers") for ev in runs):
        return None
    ev = runs[0]
    said = _said(ev, "ranks' buffers")
    if ev["ddp_kwargs"].get("broadcast_buffers", True):
        return Finding("UNKNOWN", "buffers_diverged", said)
    return Finding(
        "H1",
        "buffers_not_broadcast",
        f"the watch's check: {said.split(';')[0]}, under "
        "DDP(broadcast_buffers=False): each rank keeps its own running statistics, so the "
        "same model evaluates differently on each rank",
        arm="broadcast_buffers",
        variable=("broadcast_buffers", False, True),
    )


def double_rule(evs: dict, world: int) -> Finding | None:
    evs_all = [ev for ranks in evs.values() for ev in ranks]
    if not all(ev["hand_reduces"] > 0 and ev["forwards"]["ddp_synced"] > 0 for ev in evs_all):
        return None
    ev = evs_all[0]
    return Finding(
        "H1",
        "double_allreduce",
        f"the gradients are all-reduced by hand ({ev['hand_reduces']} calls on parameters' "
        f"gradients over {ev['steps']} steps) on top of DDP's own average "
        f"({ev['forwards']['ddp_synced']} synced forwards): summed over {world} ranks after "
        f"being averaged, each gradient is {world} times too large, as is the step of SGD",
        arm="no_hand_allreduce",
        variable=("the gradients' all-reduce by hand", "after backward", "removed"),
    )


def sign_drift(signed: dict, what: str = "parameters") -> list[tuple[bool, str]]:
    key = "max_rel_diff" if what == "parameters" else "buffers_rel_diff"
    out = []
    for seed, ranks in signed.items():
        checks = ranks[0]["checks"]
        diffs = [last_diff({"checks": [c]}, key) for c in checks if key in c]
        worst = max((d for d in diffs if d is not None), default=None)
        met = worst == 0.0
        if worst is None:
            out.append((False, f"seed {seed}: the ranks' {what} were not compared (no check)"))
            continue
        out.append(
            (
                met,
                (
                    f"seed {seed}: the ranks' {what} differ by {worst:.3g} at most over "
                    f"{len(diffs)} checks (relative; 0 under DDP)"
                ),
            )
        )
    return out


def sign_double(own: dict, signed: dict, world: int) -> list[tuple[bool, str]]:
    out = []
    for seed, ranks in signed.items():
        before, after = own[seed][0]["grad_norm_1"], ranks[0]["grad_norm_1"]
        if before is None or after is None:
            out.append((False, f"seed {seed}: no first step's gradient norm was measured"))
            continue
        ratio = before / after if after else float("inf")
        up = (own[seed][0]["update_norm_1"] or 0.0) / max(ranks[0]["update_norm_1"] or 0.0, 1e-30)
        met = not above("ranks.double_ratio", abs(ratio - world) / world, RATIO, seed=seed)
        out.append(
            (
                met,
                (
                    f"seed {seed}: the first step's gradient norm is {ratio:.4g} times the one "
                    f"without the hand all-reduce, its update {up:.4g} times (world_size {world})"
                ),
            )
        )
    return out


def unanswered_rule(evs: dict) -> Finding | None:
    """A watch whose cross-rank checks went unanswered on some seed, the ranks' step counts
    equal (else `steps_apart_rule`): the ranks were not compared to the end, so no acquittal
    may say they agree."""
    for ranks in evs.values():
        said = next((f for ev in ranks if (f := _said(ev, "the other ranks did not answer"))), None)
        if said is not None:
            return Finding("UNKNOWN", "checks_unanswered", f"the watch's check: {said}")
    return None
