"""For each mystery: the cheapest sufficient probe path and the key terms of its mechanism.

A path is a list of (probe, outcome it shows). It starts with raw_vs_reported, because
the triage clears instrumentation (H3) first, then takes the cheapest probes whose
outcomes name the mechanism. Some mysteries have a second path of the same price; a
learner who follows either has followed a cheapest path. `tests/learn/drill/test_drill.py` runs
every path on every run seed and checks each probe shows the outcome listed here.

A mechanism's key terms are groups of synonyms; a conviction earns the mechanism
points for the share of groups its text names (see `score`).
"""

from __future__ import annotations

RVR_AGREE = ("raw_vs_reported", "agree")

PATHS = {
    "healthy": [[RVR_AGREE, ("overfit", "reaches"), ("update_probe", "ok")]],
    "stale_log": [[("raw_vs_reported", "disagree")]],
    "wrong_logging_divisor": [[("raw_vs_reported", "disagree")]],
    "shuffled_labels": [[RVR_AGREE, ("overfit", "stalls"), ("label_shuffle", "same")]],
    "constant_inputs": [[RVR_AGREE, ("label_audit", "constant")]],
    "nan_in_inputs": [
        [RVR_AGREE, ("first_nonfinite", "input")],
        [RVR_AGREE, ("label_audit", "nonfinite")],
    ],
    "all_masked_labels": [
        [RVR_AGREE, ("first_nonfinite", "labels")],
        [RVR_AGREE, ("label_audit", "empty")],
    ],
    "double_shift": [[RVR_AGREE, ("label_audit", "shifted")]],
    "padding_in_loss": [[RVR_AGREE, ("label_audit", "padding")]],
    "detach": [[RVR_AGREE, ("gradient_audit", "none")]],
    "loss_from_item": [[RVR_AGREE, ("gradient_audit", "none")]],
    "missing_optimizer_params": [
        [RVR_AGREE, ("gradient_audit", "outside")],
        [RVR_AGREE, ("update_probe", "partial")],
    ],
    "missing_optimizer_params:head_only": [
        [RVR_AGREE, ("gradient_audit", "outside")],
        [RVR_AGREE, ("update_probe", "partial")],
    ],
    "zero_lr": [[RVR_AGREE, ("update_probe", "zero")]],
    "zero_lr:per_batch_scheduler": [[RVR_AGREE, ("update_probe", "vanishing")]],
    "missing_step": [[RVR_AGREE, ("update_probe", "zero")]],
    "missing_zero_grad": [[RVR_AGREE, ("gradient_audit", "accumulating")]],
    "double_softmax": [[RVR_AGREE, ("label_audit", "probabilities")]],
    "fp16_overflow": [[RVR_AGREE, ("first_nonfinite", "loss")]],
    "lr_too_high": [[RVR_AGREE, ("overfit", "reaches"), ("lr_sweep", "too_high")]],
}

KEY_TERMS = {  # mystery -> groups of synonyms the mechanism line should name
    "healthy": [
        [
            "healthy",
            "no bug",
            "nothing wrong",
            "nothing is wrong",
            "fine",
            "normal",
            "no defect",
            "working",
            "as expected",
            "ok",
        ]
    ],
    "stale_log": [
        [
            "stale",
            "cached",
            "once",
            "never refresh",
            "not refresh",
            "never updated",
            "not updated",
            "old value",
            "first value",
            "first step",
            "frozen",
            "buffer",
        ],
        ["log", "logg", "report", "print", "metric", "curve"],
    ],
    "wrong_logging_divisor": [
        ["divisor", "divid", "500", "denominator", "hard-coded", "hardcoded"],
        ["log", "logg", "report", "epoch", "average", "mean", "sum"],
    ],
    "shuffled_labels": [
        ["label"],
        [
            "shuffl",
            "permut",
            "random",
            "decorrelat",
            "misalign",
            "mismatch",
            "wrong key",
            "no signal",
        ],
    ],
    "constant_inputs": [
        ["input", "feature", "x"],
        ["constant", "identical", "same", "variance", "clamp", "clip"],
    ],
    "nan_in_inputs": [
        ["nan", "nans", "non-finite", "nonfinite", "inf", "infinit", "corrupt"],
        ["input", "data", "example", "row", "feature", "sample"],
    ],
    "all_masked_labels": [
        ["mask", "-100", "ignored", "ignore"],
        ["all", "every", "no supervised", "zero tokens", "no tokens", "0/0", "empty", "separator"],
    ],
    "double_shift": [
        ["shift"],
        ["twice", "double", "two", "again", "already", "by hand", "manual", "2 tokens"],
    ],
    "padding_in_loss": [
        ["pad", "padding", "padded"],
        ["loss", "label", "-100", "mask", "averag", "mean"],
    ],
    "detach": [
        ["detach", "graph", "no gradient", "none", "stop gradient"],
        ["backbone", "hidden", "lower layer", "early layer", "first layer"],
    ],
    "loss_from_item": [
        [
            "item",
            "rebuilt",
            "new tensor",
            "torch.tensor",
            "python float",
            "leaf",
            "disconnected",
            "no graph",
            "graph",
        ],
        ["loss"],
    ],
    "missing_optimizer_params": [
        ["optimizer", "optimiser"],
        ["head", "missing", "not in", "left out", "omit", "exclud", "only the backbone"],
    ],
    "missing_optimizer_params:head_only": [
        ["optimizer", "optimiser"],
        ["backbone", "missing", "not in", "left out", "omit", "exclud", "only the head"],
    ],
    "zero_lr": [["lr", "learning rate"], ["zero", "0", "0.0"]],
    "zero_lr:per_batch_scheduler": [
        ["scheduler", "schedule", "steplr"],
        [
            "every batch",
            "per batch",
            "each batch",
            "every step",
            "each step",
            "per step",
            "too often",
            "collapse",
            "halv",
            "decay",
        ],
    ],
    "missing_step": [
        ["step"],
        [
            "missing",
            "never",
            "not called",
            "forgot",
            "deleted",
            "absent",
            "skipped",
            "not applied",
            "no optimizer",
        ],
    ],
    "missing_zero_grad": [
        ["zero_grad", "zero grad", "clear", "reset"],
        ["accumul", "pile", "sum", "missing", "never", "not called", "forgot"],
    ],
    "double_softmax": [
        ["softmax"],
        ["twice", "double", "two", "already", "probabilit", "before cross", "in forward", "again"],
    ],
    "fp16_overflow": [
        ["fp16", "float16", "half", "mixed precision", "amp", "autocast"],
        ["overflow", "exp", "exponent", "softmax", "inf", "infinit", "range", "65504"],
    ],
    "lr_too_high": [
        ["lr", "learning rate", "step size"],
        ["high", "large", "big", "diverg", "overshoot", "explod", "too"],
    ],
}


def paths_for(key: str) -> list[list[tuple[str, str]]]:
    return PATHS[key]


def cost(path, menu) -> int:
    return sum(menu[name].price for name, _ in path)
