"""The reviews' twin of the forgery suite (`test_grade_forgery`), and its forgeries.

A review never fails on a miss: it says which predictions hit. So a run handed to it under
another name (the detached run as the healthy one, the two broken optimizers swapped, the
control as the dropout run) changes only what the review says, and the points stay. The twin
seals Exercises A, B, D, E and F's predictions, starts their runs after the seals (real
three-step runs, trained once here and handed over as JSON) and reviews each; the forgery
hands the reviews real runs of other setups under the exercise's names, with the data made
beside them (E's first batches, D's four-way table) made from those runs, so that only the
names are forged (and Exercise F's run is a real run of its data at another LR). The grader
refuses each with the setup the name stands for and the one the run was trained with.
"""

import functools

import nbformat

IMPORTS = """import time
import torch
import labkit
from labkit.check import (ex_a_predict, ex_a_review, ex_b_predict, ex_b_review, ex_d_predict,
                          ex_d_review, ex_e_predict, ex_e_review, ex_f_predict, ex_f_review)
from labkit.learn.check.ex.made import four_way_table
"""
PREDICTIONS = """pa = {"null_groups": ["backbone.0", "backbone.2"], "head_learns": True,
      "why": "detach() cuts the graph, so no gradient reaches the backbone"}
pb = {"frozen_backbone_only": ["head"], "frozen_head_only": ["backbone.0", "backbone.2"],
      "left_out_grad": "finite", "zero_grad_clears": False, "worse": "backbone_only",
      "why": "step() and zero_grad() only walk their own list of parameters"}
pd = {"dropout_run": "online > train_eval ≈ val", "control_run": "online ≈ train_eval ≈ val",
      "cause": "dropout", "dropout_under_no_grad": True, "graph_under_eval": True,
      "why": "dropout handicaps only the train()-mode number of the online loss"}
pe = {"nan_run": "all_masked_labels", "two_ahead_run": "double_shift",
      "inflated_runs": ["padding_in_loss", "prompt_in_loss"],
      "lowest_train_loss": "padding_in_loss",
      "why": "a mean over zero targets is 0/0, and two shifts train two tokens ahead"}
pf = {"recall_leaves_zero": "after step 50", "exposing": "minority_recall",
      "why": "a mean dominated by class 0 hides class 1, which only a per-class number shows"}
print(ex_a_predict(pa), ex_b_predict(pb), ex_d_predict(pd), ex_e_predict(pe), ex_f_predict(pf))
"""
CELLS = [
    IMPORTS,
    PREDICTIONS,
    "RUNS",  # `source()`: the runs, and the data made beside them
    "print(ex_a_review(pa, healthy, detached))",
    "print(ex_b_review(pb, runs_b))",
    "print(ex_d_review(pd, run_d, control_d, seen))",
    "print(ex_e_review(pe, runs_e, batches))",
    "print(ex_f_review(pf, run_f, cm_early))",
]
LM = {"task": "lm", "steps": 3}
SETUPS = {  # name in the notebook -> labkit.train's arguments (three steps each)
    "healthy": {},
    "detached": {"bug": "detach"},
    "backbone_only": {"bug": "missing_optimizer_params"},
    "head_only": {"bug": "missing_optimizer_params:head_only"},
    "run_d": {"dropout": 0.5, "eval_every": 16},
    "control_d": {"dropout": 0.0, "eval_every": 16},
    "correct": LM,
    "double_shift": {**LM, "bug": "double_shift"},
    "padding_in_loss": {**LM, "bug": "padding_in_loss"},
    "all_masked_labels": {**LM, "bug": "all_masked_labels"},
    "prompt_in_loss": {**LM, "response_only": False},
    "run_f": {"dataset": "imbalanced", "eval_every": 10},
    "f_lr": {"dataset": "imbalanced", "eval_every": 10, "lr": 30.0},  # for a forgery: its
    # minority recall leaves 0 by step 2, the original's does not
}
FORGERIES = {  # name -> (the block added to the runs' cell, {check: its row starts})
    "names": (  # runs swapped under each other's names, the data beside them made to fit, and
        # Exercise F's run a real run of its data at another LR
        """healthy, detached = detached, healthy
runs_b["backbone_only"], runs_b["head_only"] = runs_b["head_only"], runs_b["backbone_only"]
run_d, control_d = control_d, run_d
seen = table_of(run_d)
for swapped in (runs_e, batches):
    swapped["correct"], swapped["double_shift"] = swapped["double_shift"], swapped["correct"]
run_f = f_lr
""",
        {
            "ex_a_review": "the answer to ex_a_review could not be checked: healthy (given as "
            "argument 2) is not the healthy run: it was trained with bug='detach', not None",
            "ex_b_review": "the answer to ex_b_review could not be checked: runs (given as "
            "argument 2) is not the runs the exercise names (healthy, backbone_only, head_only): "
            "the run under 'backbone_only' was trained with "
            "bug='missing_optimizer_params:head_only', not 'missing_optimizer_params'",
            "ex_d_review": "the answer to ex_d_review could not be checked: control (given as "
            "argument 3) is not the dropout=0 control: it was trained with dropout=0.5, not 0.0",
            "ex_e_review": "the answer to ex_e_review could not be checked: runs (given as "
            "argument 2) is not the runs the exercise names (correct, double_shift, "
            "padding_in_loss, all_masked_labels, prompt_in_loss): the run under 'correct' was "
            "trained with bug='double_shift', not None",
            "ex_f_review": "the answer to ex_f_review could not be checked: run (given as "
            "argument 2) is not the original run: it was trained with lr=30.0, not 0.1",
        },
    ),
}


@functools.cache
def source() -> str:
    """The runs' cell: every run of `SETUPS` from JSON, started when the cell runs (after the
    seals), E's first batches and D's four-way table made from the runs as the exercises'
    cells make them, and F's 50-step matrix as the grader makes it (then in its cache)."""
    import labkit
    from labkit.learn.check.ex import made

    cm = made._confusions(0)["its model's confusion matrix after 50 steps"].tolist()
    lines = ["now = time.time()"]
    for name, kwargs in SETUPS.items():
        run = labkit.train(**{"steps": 3, **kwargs})
        lines += [
            f"{name} = labkit.Run.from_json({run.to_json()!r})",
            f"{name}.timing['started_at'] = now",
        ]
    return "\n".join(
        lines
        + [
            "runs_b = {'healthy': healthy, 'backbone_only': backbone_only, 'head_only': head_only}",
            "runs_e = {n: globals()[n] for n in ('correct', 'double_shift', 'padding_in_loss',",
            "                                    'all_masked_labels', 'prompt_in_loss')}",
            "def trainer_of(run):",
            "    return labkit.Trainer(labkit.Config(**run.meta['config']), bug=run.meta['bug'])",
            "def table_of(run):",
            "    trainer = trainer_of(run)",
            "    return four_way_table(trainer.ctx.model, trainer.ctx.data.val['x'])",
            "batches = {name: trainer_of(run).batch(0) for name, run in runs_e.items()}",
            "seen = table_of(run_d)",
            f"cm_early = torch.tensor({cm!r})",
        ]
    )


def write(folder, name: str, forgery: str = "") -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source() if c == "RUNS" else c) for c in CELLS]
    nb.cells[2].source += "\n" + forgery
    nbformat.write(nb, folder / f"ex_rev_{name}.ipynb")
