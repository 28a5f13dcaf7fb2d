"""The study packet's seven loss-curve cases, as prompts for spoken-answer practice.

Each case has the curve to describe, the content words each element of a strong
answer should contain; `MODELS` holds a model answer for each (written for labkit:
the hedge, then the five parts). `verbal` holds the rubric that reads an answer against them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    title: str
    curve: str  # what the learner is shown
    leading: tuple  # content words of the leading hypothesis
    alternatives: tuple  # of the alternatives worth ruling out
    test: tuple  # of a discriminating test
    intervention: tuple  # of an intervention


CASES = (
    Case(
        "training falls, validation rises",
        "Training loss keeps falling. Validation loss fell for a few epochs, then climbs.",
        ("overfit", "generaliz", "generalis", "memoriz", "memoris", "gap"),
        ("leak", "duplicate", "split", "contamina", "distribution", "mismatch", "shift"),
        ("split", "duplicate", "dedup", "audit", "distribution", "overlap"),
        (
            "early stop",
            "regulariz",
            "regularis",
            "weight decay",
            "dropout",
            "more data",
            "augment",
            "capacity",
            "smaller model",
            "fewer epochs",
            "checkpoint",
        ),
    ),
    Case(
        "both losses high and flat",
        "Training and validation loss both sit high and flat for the whole run.",
        (
            "underfit",
            "not being optimi",
            "not optimi",
            "broken",
            "not learning",
            "capacity",
            "bug",
            "pipeline",
        ),
        (
            "label",
            "mask",
            "learning rate",
            "lr",
            "frozen",
            "optimizer",
            "gradient",
            "capacity",
            "underfit",
            "data",
        ),
        ("overfit", "single batch", "one batch", "small batch", "tiny subset", "64"),
        ("fix", "learning rate", "lr", "optimizer", "capacity", "mask", "label", "gradient"),
    ),
    Case(
        "noisy loss with spikes",
        "The training loss is noisy and shows sharp spikes every so often.",
        (
            "learning rate",
            "lr",
            "instab",
            "batch",
            "outlier",
            "corrupt",
            "noise",
            "unstable",
            "diverg",
        ),
        (
            "learning rate",
            "lr",
            "batch",
            "outlier",
            "corrupt",
            "shuffl",
            "fp16",
            "precision",
            "scheduler",
            "warmup",
            "data",
        ),
        (
            "replay",
            "checkpoint",
            "batch id",
            "shard",
            "gradient norm",
            "grad norm",
            "sequence length",
            "fp32",
            "amp scale",
            "correlate",
        ),
        (
            "lower",
            "warmup",
            "clip",
            "shuffl",
            "remove",
            "batch size",
            "scheduler",
            "fp32",
            "bf16",
            "scal",
        ),
    ),
    Case(
        "validation below training",
        "Validation loss sits below training loss for the whole run.",
        (
            "dropout",
            "augment",
            "regulariz",
            "regularis",
            "timing",
            "end of the epoch",
            "end of epoch",
            "averaged over the epoch",
            "earlier",
            "easier",
        ),
        (
            "contamina",
            "leak",
            "easier",
            "duplicate",
            "dropout",
            "augment",
            "reduction",
            "normaliz",
            "mask",
        ),
        (
            "eval mode",
            "eval()",
            "evaluation mode",
            "train_eval",
            "recompute",
            "same pipeline",
            "training set",
        ),
        (
            "nothing",
            "no change",
            "benign",
            "fix the split",
            "dedup",
            "same reduction",
            "report",
            "remove",
        ),
    ),
    Case(
        "training loss flat",
        "The training loss is flat from the very first step.",
        (
            "grad_fn",
            "graph",
            "detach",
            "requires_grad",
            "optimizer",
            "learning rate",
            "lr",
            "step",
            "zero_grad",
            "frozen",
            "disconnected",
            "logging",
            "mechanic",
        ),
        (
            "grad_fn",
            "graph",
            "detach",
            "requires_grad",
            "optimizer",
            "learning rate",
            "lr",
            "step",
            "frozen",
            "logging",
            "label",
            "data",
        ),
        (
            "grad_fn",
            "requires_grad",
            "gradient norm",
            "grad norm",
            "parameter delta",
            "update",
            "optimizer membership",
            "param_groups",
            "audit",
            "overfit",
            "raw",
        ),
        ("fix", "remove", "add", "optimizer", "set", "learning rate", "call", "register"),
    ),
    Case(
        "loss becomes NaN",
        "The loss is fine for a while, then becomes NaN and stays NaN.",
        (
            "learning rate",
            "lr",
            "overflow",
            "fp16",
            "diverg",
            "explod",
            "log(0)",
            "division",
            "data",
            "mask",
        ),
        (
            "learning rate",
            "lr",
            "overflow",
            "fp16",
            "precision",
            "data",
            "input",
            "mask",
            "log",
            "division",
            "softmax",
        ),
        (
            "first non-finite",
            "first nonfinite",
            "first nan",
            "anomaly",
            "isfinite",
            "fp32",
            "locate",
            "in order",
        ),
        (
            "lower",
            "clip",
            "fp32",
            "bf16",
            "gradscaler",
            "scal",
            "mask",
            "clean",
            "stable",
            "log_softmax",
            "cross_entropy",
            "warmup",
        ),
    ),
    Case(
        "loss falls, metric flat",
        "The loss keeps falling, but the evaluation metric (accuracy, exact match) stays flat.",
        (
            "surrogate",
            "metric",
            "threshold",
            "imbalance",
            "argmax",
            "probabilit",
            "prompt",
            "calibrat",
            "exact match",
            "token",
        ),
        (
            "imbalance",
            "threshold",
            "decod",
            "generation",
            "checkpoint",
            "metric",
            "tokeniz",
            "distribution",
            "prompt",
            "template",
        ),
        (
            "training set",
            "confusion matrix",
            "per class",
            "per-class",
            "free-running",
            "generation",
            "hand-written",
            "probabilit",
            "token accuracy",
            "decod",
        ),
        (
            "mask",
            "threshold",
            "reweight",
            "weight",
            "decod",
            "fix the metric",
            "template",
            "stop token",
            "resampl",
        ),
    ),
)

MODELS = (
    (
        "Assuming both curves use the same loss on comparable settings, overfitting is the leading "
        "hypothesis. It could also be a leaky or shifted split, so I would first audit the split for "
        "duplicates and distribution differences. If the split is sound, I would restore the "
        "checkpoint at minimum validation loss and add regularisation. I would confirm it when the "
        "validation loss stops rising and the gap narrows on a second seed."
    ),
    (
        "If both curves are computed the same way, high and flat most likely means the training loop "
        "is broken rather than underfitting. Alternatives are wrong labels or masks, a zero learning "
        "rate, or frozen parameters. My first test is to overfit one small clean batch. If it cannot, "
        "I would fix the gradient flow, the optimizer membership or the labels it points to, and "
        "expect that batch to reach near-zero loss."
    ),
    (
        "Assuming the loss is logged per batch the same way throughout, I suspect the learning rate "
        "is too high. It could also be corrupt batches or bad shuffling. I would correlate spikes with "
        "batch id, gradient norm and learning rate, then replay the spiking batch from a checkpoint. "
        "If the same batch spikes every time it is data; otherwise I would lower the LR or add warmup "
        "and clipping, and expect the spikes to disappear."
    ),
    (
        "Validation below training is not automatically a bug, provided both use the same loss and "
        "reduction. The leading explanation is dropout or augmentation active in training; an easier "
        "or contaminated validation set is the alternative. I would recompute the training loss in "
        "eval mode with the validation pipeline. If train_eval matches validation, no change is "
        "needed; I would expect the gap to vanish in eval mode."
    ),
    (
        "Assuming I am looking at the raw loss and not a stale log, a flat loss most likely means the "
        "optimisation mechanics are broken. It could also be a detached graph, frozen parameters or "
        "an LR of zero. I would check grad_fn, gradient norms and the parameter delta after a step. "
        "Then fix what the audit shows, for example add the head to the optimizer, and confirm that "
        "the parameters move and the loss falls."
    ),
    (
        "Assuming the NaN is in the logged loss itself, I suspect a learning rate that diverges. "
        "Alternatives are fp16 overflow or a NaN in the data. I would locate the first non-finite "
        "value: inputs, logits, loss, gradients, in order, and retry the step in fp32. The fix "
        "follows: lower the LR and clip, or use a stable cross_entropy; I would confirm that the run "
        "stays finite on two seeds."
    ),
    (
        "If the metric is computed on the same data as the loss, the likely cause is that the surrogate "
        "loss improves probabilities without moving the argmax. Alternatives: class imbalance, a bad "
        "threshold, or decoding settings for an LM. I would compute the metric on the training set "
        "and inspect a confusion matrix. Then I would reweight classes or fix the threshold, and "
        "expect per-class recall to rise."
    ),
)
