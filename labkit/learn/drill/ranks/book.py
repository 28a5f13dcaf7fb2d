"""The distributed mysteries' rule book: the probe menu, the words a forecast may use, the
cheapest sufficient paths, the key terms of each mechanism and the interview answers.

The same shapes as the one-process drill's (`menu.MENU`, `words.OUTCOMES`, `paths.PATHS`,
`paths.KEY_TERMS`, `answers.ANSWERS`), so the rubric and the feedback read either. Prices
follow the same scale: reading what the ranks logged costs 1, a run of the same model in
one process beside them 3, the whole two-rank launch again on another seed 8.
"""

from __future__ import annotations

from ..menu import Probe

MENU = {
    p.name: p
    for p in (
        Probe(
            "reported_vs_mean",
            1,
            "each rank's reported loss beside the mean over both ranks (all-reduced): does the "
            "dashboard show the loss of the whole batch? (H3)",
        ),
        Probe(
            "rank_losses",
            1,
            "each rank's own loss on its own shard, step by step: the per-rank curves",
        ),
        Probe(
            "rank_check",
            1,
            "labkit.watch's check across ranks every 16 steps: do the ranks hold the same "
            "parameters and BatchNorm buffers, as DDP should keep them?",
        ),
        Probe(
            "epoch_order",
            1,
            "the first examples of each epoch on each rank: does every epoch get a new order?",
        ),
        Probe(
            "first_update",
            3,
            "the norm of each rank's first update beside the same model's first update in ONE "
            "process on the same 32 examples",
        ),
        Probe(
            "second_seed",
            8,
            "the whole two-rank run again on another seed: do the four cheap probes above "
            "show the same again?",
        ),
    )
}

OUTCOMES = {  # probe -> outcome -> phrases that predict it (longest match wins: words.py)
    "reported_vs_mean": {
        "agree": ["agree", "match", "same", "equal", "identical", "honest", "the mean"],
        "disagree": [
            "disagree",
            "differ",
            "mismatch",
            "not match",
            "don't match",
            "not the mean",
            "local",
            "own shard",
            "one rank",
            "rank 0 only",
        ],
    },
    "rank_losses": {
        "fall": ["fall", "falls", "drop", "descend", "decreas", "goes down", "learn", "both fall"],
        "flat": ["flat", "stall", "stuck", "plateau", "doesn't fall", "does not fall"],
        "rise": ["rise", "rises", "climb", "increas", "diverg", "nan", "blow"],
    },
    "rank_check": {
        "equal": ["equal", "identical", "in sync", "same", "agree", "no finding", "match"],
        "parameters": [
            "parameters differ",
            "weights differ",
            "params differ",
            "parameters drift",
            "weights drift",
            "drift",
            "diverge",
            "out of sync",
            "desync",
        ],
        "buffers": ["buffer", "running stat", "running mean", "batchnorm", "batch norm"],
    },
    "epoch_order": {
        "reshuffled": ["reshuffl", "new order", "differ", "changes", "shuffled", "different"],
        "repeats": ["repeat", "same order", "same every", "identical", "unchanged", "no shuffle"],
    },
    "first_update": {
        "matches": ["match", "same", "equal", "1x", "x1", "agree", "as one process"],
        "double": ["double", "twice", "2x", "x2", "world size", "world-size", "two times"],
        "differs": ["differ", "larger", "noisier", "each rank", "per rank", "not equal"],
    },
    "second_seed": {
        "same": ["same", "reproduc", "repeat", "identical", "again", "persists"],
        "different": ["differ", "not reproduc", "goes away", "vanish", "changes", "fluke"],
    },
}

FIRST = "reported_vs_mean"  # the instrumentation first, as in one process
LATE = (
    "second_seed",
    ("reported_vs_mean",),
    ("rank_check", "epoch_order", "first_update"),
    "a second seed before the reported loss and a probe of the ranks were read (-5)",
)
AGREE = ("reported_vs_mean", "agree")

PATHS = {
    "healthy": [
        [AGREE, ("rank_check", "equal"), ("epoch_order", "reshuffled"), ("first_update", "matches")]
    ],
    "local_reported_loss": [[("reported_vs_mean", "disagree")]],
    "forward_through_module": [[AGREE, ("rank_check", "parameters")]],
    "no_sync_every_step": [[AGREE, ("rank_check", "parameters")]],
    "buffers_not_broadcast": [[AGREE, ("rank_check", "buffers")]],
    "no_set_epoch": [[AGREE, ("epoch_order", "repeats")]],
    "double_allreduce": [[AGREE, ("first_update", "double")]],
}

_SYNC = ["sync", "all-reduce", "allreduce", "all_reduce", "averag", "hook", "communicat"]
# The two ways of skipping the sync leave the same evidence (parameters and gradients apart
# from the first check on), so either one named earns the second group on both mysteries.
_SKIP = [".module", "module", "wrapper", "bypass", "no_sync", "no sync", "accumulat"]
KEY_TERMS = {
    "healthy": [["healthy", "no bug", "nothing wrong", "nothing is wrong", "fine", "normal", "ok"]],
    "local_reported_loss": [
        ["local", "own shard", "one rank", "rank 0", "its own", "not reduced", "not all-reduced"],
        ["report", "log", "logg", "print", "metric", "dashboard"],
    ],
    "forward_through_module": [_SKIP, _SYNC],
    "no_sync_every_step": [_SKIP, _SYNC],
    "buffers_not_broadcast": [
        ["buffer", "running stat", "running mean", "batchnorm", "batch norm", "syncbatchnorm"],
        ["broadcast", "broadcast_buffers", "per rank", "each rank", "own statistics"],
    ],
    "no_set_epoch": [
        ["set_epoch", "set epoch", "epoch"],
        ["sampler", "shuffle", "order", "same order"],
    ],
    "double_allreduce": [
        ["twice", "double", "again", "by hand", "manual", "extra all-reduce", "summed"],
        ["learning rate", "lr", "step size", "world size", "world-size", "2x", "too large"],
    ],
}

ANSWERS = {  # the five parts of `answers.PARTS`
    "healthy": (
        "Nothing is broken: DDP keeps the ranks equal, and the dashboard shows the mean loss.",
        "A report from one rank (H3), an order that never changes (H2), or a skipped sync (H1).",
        "Reported vs mean agree; the rank check finds the ranks equal; epochs reshuffle.",
        "None to the code; watch the check across ranks on the real run as well.",
        "The same four probes on a second seed, and the first update equal to one process's.",
    ),
    "local_reported_loss": (
        "H3: each rank reports its own shard's loss, not the mean over ranks.",
        "Ranks that drifted apart (H1) would also give per-rank losses that differ.",
        "Reported vs mean: the reported value equals the rank's own loss, not the all-reduced one.",
        "All-reduce the loss (SUM, then divide by world size) before logging it, on every rank.",
        "The reported loss equals the mean over ranks at every step, on every rank.",
    ),
    "forward_through_module": (
        "H1: the forward goes through ddp.module, so DDP's hooks never all-reduce the gradients.",
        "Every step under no_sync() gives the same drift; broadcast_buffers=False drifts buffers.",
        "The check across ranks: the parameters differ from the first check on, grads too.",
        "Call the DDP wrapper itself (ddp(x)), never ddp.module, in the training step.",
        "The parameters' fingerprints are equal across ranks at every check (exactly 0).",
    ),
    "no_sync_every_step": (
        "H1: every step runs under no_sync(), so the gradient sync never happens.",
        "A forward through ddp.module gives the same drift; look for no_sync in the loop.",
        "The check across ranks: the parameters differ from the first check on, grads too.",
        "Leave no_sync() on the last micro-batch of each accumulation window.",
        "The parameters' fingerprints are equal across ranks at every check (exactly 0).",
    ),
    "buffers_not_broadcast": (
        "H1: DDP(broadcast_buffers=False) with BatchNorm: each rank keeps its own statistics.",
        "A skipped gradient sync would move the parameters apart too; here they stay equal.",
        "The check across ranks: parameters equal, BatchNorm buffers apart at the next forward.",
        "Use SyncBatchNorm, or leave broadcast_buffers on.",
        "Buffers equal across ranks at every check; eval gives the same answer on each rank.",
    ),
    "no_set_epoch": (
        "H2: sampler.set_epoch(epoch) is never called, so every epoch has the same order.",
        "shuffle=False on the sampler, or a seed reset each epoch, would look the same.",
        "The first examples of each epoch on each rank: the same every epoch.",
        "Call sampler.set_epoch(epoch) at the start of every epoch.",
        "Each epoch starts on other examples; the ranks still see disjoint shards.",
    ),
    "double_allreduce": (
        "H1: gradients DDP already averaged are all-reduced again by hand: summed over ranks.",
        "A learning rate set world-size times too high gives the same step; the code tells which.",
        "The first update beside one process's on the same batch: about world-size (2x) times it.",
        "Delete the hand-written all-reduce (or divide by world size, if DDP is not used).",
        "The first update matches the one-process run; the ranks still agree at every check.",
    ),
}
