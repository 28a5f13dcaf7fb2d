"""The seams the exercise notebooks give, by name: what `labkit grade` re-creates their runs with.

A run's ``meta["seams"]`` names each seam that was not labkit's own (``{"forward":
"forward_detach_deeper"}``); the grader never runs the notebook's copy, which the learner
could have changed, but these, and compares the run it gets with the run handed over
(`labkit.learn.grade.truth`). Each is the notebook's function, unchanged: a copy that drifted
would fail the solution's own row, which the grading tests read.
"""

from __future__ import annotations

from ....bugs._lm import rewrite_labels
from ....core import data as datasets
from ....core.data import EOS, IGNORE
from ....core.seams import make_optimizer


def forward_detach_deeper(ctx):  # Exercise A's transfer
    hidden = ctx.model.backbone[:2](ctx.batch["x"]).detach()  # (B, hidden): cut after backbone.0
    hidden = ctx.model.backbone[2:](hidden)  # (B, hidden)
    return ctx.model.head(hidden)  # (B, C)


def optimizer_skip_middle(config, model):  # Exercise B's transfer
    return make_optimizer(
        config, model, [*model.backbone[0].parameters(), *model.head.parameters()]
    )


def labels_without_eos(split):
    return split["labels"].masked_fill(split["input_ids"] == EOS, IGNORE)


def data_without_eos(cfg):  # Exercise E's transfer
    return rewrite_labels(cfg, labels_without_eos)


def twenty_percent(config):  # Exercise F's transfer
    return datasets.load("imbalanced", seed=config.seed, minority=0.2)


GIVEN = {  # (seam, the function's name) -> the function
    ("forward", "forward_detach_deeper"): forward_detach_deeper,
    ("optimizer", "optimizer_skip_middle"): optimizer_skip_middle,
    ("data", "data_without_eos"): data_without_eos,
    ("data", "twenty_percent"): twenty_percent,
}
