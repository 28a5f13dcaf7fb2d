"""H2 on a distributed setup: each rank's share of the data, epoch by epoch.

Each training forward's input rows become integer keys (`rankhooks.row_keys`); a rank's run
splits into its epochs. Healthy DistributedDataParallel training gives each rank its own
rows (a `DistributedSampler`) in a new order every epoch (``sampler.set_epoch(epoch)``).
"""

from __future__ import annotations

from ...finding import Finding
from ..margins import above

OVERLAP = 0.5  # share of rank 0's rows that another rank also trains on in the same epoch


def epochs(ev: dict) -> list[list[int]] | None:
    keys, n = ev["keys"], ev["epochs"]
    if n < 2 or not keys or len(keys) % n:
        return None
    size = len(keys) // n
    return [keys[e * size : (e + 1) * size] for e in range(n)]


def overlap(ranks: list[dict]) -> float | None:
    """The largest share of rank 0's rows of epoch 0 that another rank trains on in epoch 0."""
    split = [epochs(ev) for ev in ranks]
    if any(s is None for s in split):
        return None
    mine = set(split[0][0])
    return max(len(mine & set(s[0])) / max(len(mine), 1) for s in split[1:])


def same_order(ranks: list[dict]) -> bool | None:
    """Whether every rank visits its rows in the same order in every epoch."""
    split = [epochs(ev) for ev in ranks]
    if any(s is None for s in split):
        return None
    return all(all(e == s[0] for e in s[1:]) for s in split)


def describe(evs: dict) -> str:
    ranks = next(iter(evs.values()))
    share, same = overlap(ranks), same_order(ranks)
    if share is None:
        return "the ranks' shares of the data were not compared (epochs of unequal length)"
    return (
        f"{share:.0%} of rank 0's rows of epoch 0 are also another rank's; the order of the "
        f"rows {'repeats' if same else 'changes'} from epoch to epoch"
    )


def shares_rule(evs: dict) -> Finding | None:
    """`evs`: {seed: [each rank's evidence]}."""
    shares = [overlap(ranks) for ranks in evs.values()]
    if all(
        s is not None and above("ranks.overlap", s, OVERLAP, seed=seed)
        for s, seed in zip(shares, evs)
    ):
        return Finding(
            "H2",
            "ranks_same_data",
            f"the ranks train on the same examples: {shares[0]:.0%} of rank 0's rows in "
            "epoch 0 are also another rank's, where a DistributedSampler gives each rank "
            "its own share; the ranks repeat each other's work",
        )
    if all(same_order(ranks) for ranks in evs.values()):
        return _same_order(next(iter(evs.values()))[0])
    return None


def _same_order(ev: dict) -> Finding:
    """Why every epoch repeats the order, from what the sampler said at each epoch's start."""
    seen = f"every epoch visits the examples in the same order on every rank ({ev['epochs']} epochs compared, row by row)"
    samplers = ev["samplers"]
    if not samplers:
        return Finding(
            "H2",
            "same_order",
            f"{seen}, and no DistributedSampler was iterated: shuffle the data differently "
            "each epoch (a DistributedSampler with set_epoch)",
        )
    if not all(s["shuffle"] for s in samplers):
        return Finding(
            "H2",
            "sampler_no_shuffle",
            f"{seen}: the DistributedSampler was made with shuffle=False",
        )
    epochs = sorted({s["epoch"] for s in samplers})
    return Finding(
        "H2",
        "no_set_epoch",
        f"{seen}: the DistributedSampler's epoch was {epochs[0] if len(epochs) == 1 else epochs} "
        f"at the start of all {len(samplers)} epochs, and it shuffles with seed + epoch; "
        "without sampler.set_epoch(epoch) the epoch never changes",
        arm="set_epoch",
        variable=("sampler.set_epoch(epoch)", "never called", "called at every epoch"),
    )


def sign_set_epoch(signed: dict) -> list[tuple[bool, str]]:
    out = []
    for seed, ranks in signed.items():
        same = same_order(ranks)
        out.append(
            (
                same is False,
                (
                    f"seed {seed}: with set_epoch called, the order "
                    f"{'still repeats' if same else 'changes'} from epoch to epoch"
                ),
            )
        )
    return out
