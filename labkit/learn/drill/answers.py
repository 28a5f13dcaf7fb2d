"""The interview-ready answer for each mystery, in five parts.

The parts follow the study packet's "say it out loud" order: the leading hypothesis,
the alternatives still alive, the first test that separates them, the one change you
would make, and the evidence that would confirm it worked.
"""

from __future__ import annotations

PARTS = (
    "leading hypothesis",
    "alternatives",
    "first discriminating test",
    "intervention",
    "confirming evidence",
)

_FLAT = "H2 (labels or inputs carry no signal) and H1 (no step, LR of 0, a cut graph)"

ANSWERS = {
    "healthy": (
        "Nothing is broken: the curve is a healthy run that simply has not finished.",
        "A logging artefact (H3) or a structural defect that still lets the loss fall (H1).",
        "Raw vs reported agree, the 64-row overfit reaches ~0 and every group updates.",
        "None to the code; train longer or tune one setting at a time, with a forecast.",
        "The same evidence on a second seed, and the loss keeps falling past step 50.",
    ),
    "stale_log": (
        "H3: the logger shows a value it read once; training itself is fine.",
        f"A flat curve is also what {_FLAT} would give.",
        "Raw vs reported over the same 50 steps: raw falls while the reported value never moves.",
        "Log the current step's loss, and assert it against an independent recomputation.",
        "Reported loss tracks the raw loss and falls below 1.0 by step 150, on two seeds.",
    ),
    "wrong_logging_divisor": (
        "H3: the epoch average is divided by a hard-coded count, not the batches seen.",
        "A tiny loss could be real convergence, or a leak (H2); an H1 defect cannot look this good.",
        "Raw vs reported: reported equals the epoch sum over one constant at every step.",
        "Divide by the true number of batches; assert the logged mean against a recomputation.",
        "Reported loss equals the epoch running mean of the raw loss, on two seeds.",
    ),
    "shuffled_labels": (
        "H2: labels were shuffled apart from their inputs, so they carry no signal.",
        "H1 (a loss that cannot descend) or H3 (a logger that hides descent).",
        "Overfit 64 rows, then the label-shuffle control: real and shuffled labels behave alike.",
        "Shuffle indices once and apply them to inputs and labels together.",
        (
            "Overfit reaches ~0 on real labels and differs from the shuffled control; val accuracy "
            "rises above chance."
        ),
    ),
    "constant_inputs": (
        "H2: preprocessing turns every input into the same vector (a clamp with swapped bounds).",
        "Shuffled labels (H2) or a broken step (H1) would also leave the loss at the prior.",
        "Audit a batch after preprocessing: every feature has zero variance.",
        "Fix the clip bounds; check min, max and std per feature when data is loaded.",
        "Per-feature std is back near 1 and the loss falls below 1.0 by step 150.",
    ),
    "nan_in_inputs": (
        "H2: one training row holds a NaN that poisons loss, gradients and weights.",
        "An LR that diverges (H1) or fp16 overflow (H1) also end in NaN.",
        "Locate the first non-finite value at the NaN step: it is an input, before any layer.",
        "Validate data on load (torch.isfinite) and drop or repair the corrupt row.",
        "No non-finite values in the data and the loss stays finite through the run.",
    ),
    "all_masked_labels": (
        "H2: every label is -100, so the mean loss is 0/0 from the first step.",
        "An exploding LR (H1) or fp16 overflow (H1) would need healthy steps first.",
        "First non-finite value, or a label audit: no supervised tokens in the batch.",
        "Fix the separator id the collator searches for; guard each batch for supervised tokens.",
        "Every batch has valid tokens and the loss is finite and falling from step 0.",
    ),
    "double_shift": (
        "H2: labels are shifted by hand and again inside the model: it predicts two tokens ahead.",
        "Padding in the loss (H1) or plain underfitting would also leave a high floor.",
        "Label audit: labels equal the input ids moved one position left.",
        "Pass labels = input_ids (with -100 masks) and let the model shift once.",
        "Labels align with inputs and the response loss falls well below the two-step floor.",
    ),
    "padding_in_loss": (
        "H1: pad positions keep labels, so the loss is averaged over easy padding tokens.",
        "A shifted label (H2) or a leak (H2) would also distort an LM loss.",
        "Label audit: padding positions carry labels instead of -100, valid-token count too big.",
        "Set labels to -100 wherever attention_mask is 0; count valid tokens per batch.",
        "No supervised padding, and the response-token loss matches the correct run.",
    ),
    "detach": (
        "H1: a detach between backbone and head cuts the graph; only the head learns.",
        "Missing optimizer parameters (H1) or weak data (H2) would also slow the descent.",
        "Gradient audit: backbone gradients are None while the head's are finite.",
        "Remove the detach from the forward pass (one change).",
        "Every group gets a gradient and the loss falls below 1.0 by step 150, on two seeds.",
    ),
    "loss_from_item": (
        "H1: the loss is rebuilt from loss.item(), a new leaf with no graph to the weights.",
        f"A flat loss is also what {_FLAT} would give.",
        "Gradient audit: every parameter's gradient is None after backward.",
        "Backpropagate the loss tensor the model produced; use .item() only for logging.",
        "Gradients reach every parameter and the loss falls below 1.0 by step 150.",
    ),
    "missing_optimizer_params": (
        "H1: the head was never handed to the optimizer: it gets gradients but never moves.",
        "An LR of 0 (H1) or a cut graph (H1) would also freeze the loss.",
        "Gradient audit: the head's parameters are not in the optimizer.",
        "Build the optimizer from model.parameters(), after any change to the head.",
        "Every group's update norm is above 0 and the loss falls below 1.0 by step 150.",
    ),
    "missing_optimizer_params:head_only": (
        "H1: only the head is in the optimizer: the backbone gets gradients but never moves.",
        "A detach (H1) also leaves the backbone frozen, but with None gradients.",
        "Gradient audit: the backbone's parameters are not in the optimizer.",
        "Build the optimizer from model.parameters().",
        "Every group's update norm is above 0 and the loss falls like the healthy run.",
    ),
    "zero_lr": (
        "H1: the learning rate is 0: gradients flow and every update is exactly 0.",
        "A flat curve at ln C is also what H2 (no signal) and H3 (a stale logger) would give.",
        "Update probe: lr 0 and update norm 0 for every group, with healthy gradients.",
        "Set a real learning rate (one change).",
        "Update norms above 0 and the loss falls below 1.0 by step 150, on two seeds.",
    ),
    "zero_lr:per_batch_scheduler": (
        "H1: an epoch scheduler stepped every batch halves the LR each step, to ~0 by epoch 2.",
        "An LR of 0 from the start (H1) or a stale logger (H3).",
        "Update probe: the logged LR and the updates collapse within the first steps.",
        "Step the scheduler once per epoch, not per batch.",
        "The LR stays at its value through epoch 1 and the loss falls below 1.0 by step 150.",
    ),
    "missing_step": (
        "H1: optimizer.step() is never called: gradients are computed and thrown away.",
        f"A flat loss is also what {_FLAT} would give.",
        "Update probe: lr > 0 and healthy gradients, yet every update is exactly 0.",
        "Call optimizer.step() after backward() every step.",
        "Update norms above 0 and the loss falls below 1.0 by step 150.",
    ),
    "missing_zero_grad": (
        "H1: zero_grad is missing, so .grad sums every past step: an ever-growing step size.",
        "An LR that is simply too high (H1) gives spikes too, but without growing gradients.",
        "Gradient audit: a second backward on the same batch doubles the gradient norm.",
        "Call optimizer.zero_grad() once per step, before backward().",
        "The second backward leaves the norm unchanged and the spikes disappear.",
    ),
    "double_softmax": (
        "H1: the model returns probabilities and cross_entropy applies log_softmax again.",
        "No signal in the data (H2) or an LR that is too small (H1).",
        "Audit a batch: the model's output rows lie in [0, 1] and sum to 1.",
        "Return raw logits from forward; let cross_entropy do the log-softmax once.",
        "Outputs are unbounded logits and the 64-row overfit reaches ~0.",
    ),
    "fp16_overflow": (
        "H1: a hand-written softmax overflows float16 (exp above ~11 is inf), not the LR.",
        "An LR that diverges (H1) or a NaN in the data (H2).",
        "First non-finite value: the loss, from finite outputs, and the same step in fp32 is fine.",
        "Use F.cross_entropy on logits (or subtract the max before exp); keep the loss in fp32.",
        "The fp16 run stays finite and amp_scale stops falling, on two seeds.",
    ),
    "lr_too_high": (
        "H1: the learning rate is far too high: steps overshoot and the weights blow up.",
        "Accumulating gradients (H1), fp16 overflow (H1) or a NaN in the data (H2).",
        "After raw vs reported and the overfit gate: LR /10 descends where the current LR NaNs.",
        "Lower the LR (or add warmup and gradient clipping), one change at a time.",
        "The loss stays finite at the lower LR with no gradient explosion, on two seeds.",
    ),
}


def answer_lines(key: str) -> list[tuple[str, str]]:
    return list(zip(PARTS, ANSWERS[key]))
