"""The prescription: the one change the learner makes in their own code, for every conviction.

Where labkit has an intervention of its own, that run tests the mechanism and the prescription
waits for the learner's fix; where it has none, the prescription is what signs the conviction.
`prescribe(finding, evs, labkit_plan)` gives:
- ``change``: the one change to make, in a sentence for the mechanism;
- ``touches``: the setup methods that change may live in (a change anywhere else is a second
  change, and `record.intervene` refuses it);
- ``forecast``: what the fixed run must meet, on both seeds, and the baseline meets on neither
  (read off the baseline evidence: the learner's own run beside a plain loop on the same model,
  data, loss and optimizer), or None with ``why`` when the evidence gives no threshold;
- ``seeds``: the two seeds the fixed run is judged on.

The fixed run is the fixed setup's own ``train(seed, epochs)``, for the same epochs as the
baseline (``judged_by``: "your loop"). A fix of the logger meets the forecast of labkit's
honest-logger arm; a fix that changes what the loss measures (RESCALED) meets the reference
loss's forecast, judged on a plain loop with the learner's optimizer and fixed loss, scored by
the reference loss of `own.refloss` ("reference"). Where the data made the training loss too
low (MEMORISED: the baseline fell below half its start), the fix is judged on the held-out
batches (a plain loop scored on ``val_batches``, "held-out:<arm>"), or else by a higher loss.
"""

from __future__ import annotations

import math

from ..step2_h3.rebuild import CANDIDATES as REBUILT
from .refloss import level

LOOP, OPT, MODEL, DATA, LOSS = "train", "make_optimizer", "make_model", "batches", "loss_fn"
OWN = "your loop"  # the fixed run is the fixed setup's own train()
_LOGGER = (
    {LOOP},
    (
        "report the honest running mean of the raw losses: the sum of loss.item() over "
        "this epoch's batches so far divided by their count, reset when each epoch starts"
    ),
)
_LOSS_SENTENCE = {
    "no_gradient": "take the loss on the model's raw output (its logits or values), not on an "
    "argmax, round or comparison of it, so that it has a gradient",
    "probabilities": "pass the logits to the loss as they are: drop the softmax/sigmoid taken "
    "before a loss that applies its own",
    "probabilities_as_log": "give the loss log-probabilities where it reads them: log_softmax "
    "of the logits, not softmax, as nll_loss's or kl_div's input (and, with log_target=True, "
    "kl_div's target as log-probabilities)",
    "log_as_probabilities": "give kl_div's target as probabilities (target.exp()), or pass "
    "log_target=True",
    "quantile_flipped": "take the pinball loss's residual as the label minus the prediction "
    "(e = y - pred), so that level q weighs an output below the label by q",
    "broadcast": "make the prediction and the target the same shape before the loss (squeeze "
    "the output's last dim, or view the target as the output)",
    "unpaired": "compare each prediction with its own label, then reduce: take the mean of the "
    "per-example errors, not the error of the batch means",
    "floor_near_chance": "use the loss's default target: drop the label_smoothing (or set it "
    "to 0.1 at most) so the right class is rewarded",
    "multi_hot_softmax": "score each label on its own: binary_cross_entropy_with_logits(logits, "
    "targets.float()) in place of cross_entropy over labels that are not exclusive",
    "softmax_over_batch": "normalise over the classes: softmax/log_softmax with dim=1 (or -1), "
    "not dim=0",
    "class_weights": "weigh each class by the inverse of its frequency in the labels "
    "(n / (classes x count); pos_weight = negatives / positives), or leave the weights out",
    "logits_clamped": "drop the clamp on the logits (or clamp them to a wide range such as "
    "[-50, 50]): the loss applies its own softmax or sigmoid",
    "loss_floor": "compute the loss on the logits, with no softmax, offset or scale before it",
    "nll_logits": "give nll_loss log-probabilities: log_softmax of the logits first (or call "
    "cross_entropy on the logits)",
    "loss_sign": "put the minus sign back: minimise the negative log-likelihood, not the "
    "log-likelihood",
    "below_floor": "compute the loss as the textbook loss of the outputs and labels (it is never "
    "below 0)",
    "unbounded_below": "flip the sign of the term that runs toward -inf (add a KL or a penalty, "
    "subtract a log-likelihood) so that the loss has a floor",
    "penalty_dominates": "drop the penalty from the loss where the optimizer's weight_decay "
    "already regularises, or scale it down until it no longer holds the data term",
    "loss_summed": "average the loss over the batch: reduction='mean' (or .mean() in place of "
    ".sum())",
    "loss_rebuilt": "backpropagate the loss tensor itself: no .item(), torch.tensor(...) or "
    "detach() between the model's output and backward()",
    "padding_in_loss": "leave the pad positions out of the loss: ignore_index=<the pad id> in "
    "cross_entropy, or labels set to -100 where the attention mask is 0",
}
CHANGES = {
    **dict.fromkeys(
        (
            "stale",
            "divisor",
            "sum",
            "never_reset",
            "after_step",
            "other_tensor",
            "ema_from_zero",
            "running_extreme",
            *REBUILT,
        ),
        _LOGGER,
    ),
    "ema_correction": (
        {LOOP},
        (
            "count the EMA's bias correction with the EMA itself: t = the updates it has had "
            "(the run's step count where it carries across epochs), or start it at the first "
            "loss and drop the correction"
        ),
    ),
    "terms_reweighted": (
        {LOOP},
        (
            "report loss.item(), the weighted sum passed to backward(), or each term with the "
            "weight the loss gives it"
        ),
    ),
    **{k: ({LOSS}, s) for k, s in _LOSS_SENTENCE.items()},
    "labels_are_inputs": (
        {DATA, LOSS},
        (
            "shift the targets by one: logits[:, :-1] against "
            "labels[:, 1:], so position t predicts token t+1"
        ),
    ),
    "double_shift": (
        {DATA, LOSS},
        (
            "shift the targets exactly once: either the batches carry "
            "labels[:, 1:] against inputs[:, :-1], or the loss shifts, not both"
        ),
    ),
    "input_nonfinite": (
        {DATA},
        (
            "replace or drop the non-finite input values in batches() "
            "(torch.nan_to_num, or the training mean)"
        ),
    ),
    "repeated_rows": (
        {DATA},
        (
            "make batches(seed) return each example once per epoch: advance the "
            "batch index and copy any reused buffer"
        ),
    ),
    "constant_inputs": ({DATA}, "build each input from its own example's features"),
    "constant_labels": ({DATA}, "read each example's own label, not one value for all"),
    "labels_decorrelated": (
        {DATA},
        ("keep each label with its own input when the data is shuffled, split or joined"),
    ),
    "noise_inputs": ({DATA}, "feed the real features, not noise of the same shape"),
    "class_unseen": (
        {DATA},
        (
            "shuffle the rows (or split each class apart, stratified) before the split, so "
            "every class the model outputs is in the training batches"
        ),
    ),
    "targets_scaled": (
        {DATA},
        (
            "scale every target by its own example's size before any resize or crop (or "
            "convert every source to one unit), so inputs that look alike get targets that agree"
        ),
    ),
    "dropout_at_eval": (
        {MODEL},
        (
            "pass training=self.training to the functional dropout in forward (or use "
            "nn.Dropout, which follows model.eval())"
        ),
    ),
    "masks_transformed_apart": (
        {DATA},
        "draw each random transform once per pair and apply it to the image and to its mask",
    ),
    "order_unmixed": (
        {DATA},
        (
            "shuffle the rows across the epoch (a DataLoader with shuffle=True, or a new "
            "random permutation every epoch), so that each batch is a sample of the whole epoch"
        ),
    ),
    "category_as_number": (
        {DATA},
        "one-hot encode the categorical column (or feed its id to an nn.Embedding), not its code",
    ),
    "feature_scale": ({DATA}, "standardise every input feature with the training statistics"),
    "transform_changes_label": (
        {DATA},
        (
            "apply only augmentations that keep each label (or transform the label with its "
            "input: mix the targets with the same lambda as the inputs)"
        ),
    ),
    "rows_normalised": (
        {DATA},
        "normalise each feature over the training set (dim=0), not each row over its features",
    ),
    "held_out_mismatch": (
        {"val_batches"},
        (
            "build the held-out batches with the same features, "
            "scaling and labels as the training batches"
        ),
    ),
    "no_step": ({LOOP}, "call optimizer.step() after every backward()"),
    "backwards_dropped": (
        {LOOP},
        "call optimizer.step() after every backward(), inside the batch loop",
    ),
    "forward_no_graph": (
        {LOOP, MODEL},
        (
            "run the training forward with autograd on: no "
            "torch.no_grad() or inference_mode around it"
        ),
    ),
    "grads_cleared": (
        {LOOP},
        ("call optimizer.zero_grad() before backward(), not between backward() and step()"),
    ),
    "clip_zero": ({LOOP}, "clip to a positive max_norm (1.0 is usual), not 0"),
    "grad_accumulates": ({LOOP}, "call optimizer.zero_grad() once per step, before backward()"),
    "lr_collapse": (
        {LOOP},
        (
            "step the scheduler at the interval it was built for (once per "
            "epoch for a per-epoch schedule)"
        ),
    ),
    "lr_runs_away": (
        {LOOP},
        (
            "cap the schedule: the LR rises to its base and stays there (a warm-up of "
            "lr = base * min(1, step / warmup)), or falls after it"
        ),
    ),
    "lr_never_rises": (
        {LOOP},
        (
            "let the LR reach its base value within the run: a warm-up shorter "
            "than the run (a few percent of its steps), or no schedule"
        ),
    ),
    "fp16_overflow": (
        {LOOP, MODEL, LOSS},
        (
            "keep the loss and the softmax in float32 (autocast's "
            "default for them), or scale with a GradScaler"
        ),
    ),
    "other_params": ({OPT}, "build the optimizer on the model it trains: model.parameters()"),
    "replaced": ({OPT}, "build the optimizer after the model's last change"),
    "not_in_optimizer": ({OPT}, "pass every trainable parameter to the optimizer"),
    "lr_zero": ({OPT, LOOP}, "give the optimizer a learning rate above 0 at every step"),
    "lr_tiny": ({OPT}, "raise the learning rate to a usual value for the optimizer"),
    "divergence": (
        {OPT, LOOP},
        ("lower the learning rate (by 10x, as the plain loop that descends did)"),
    ),
    "flow_blocked": (
        {MODEL},
        (
            "remove the detach() (or no_grad) inside the model's forward so "
            "every layer that runs gets a gradient"
        ),
    ),
    "frozen": ({MODEL, OPT}, "leave requires_grad=True on the layers that should train"),
    "leaf_not_stepped": (
        {OPT},
        (
            "pass every tensor the loss learns to the optimizer: the model's parameters and "
            "the ones made beside the model"
        ),
    ),
    "leaf_never_moves": ({OPT}, "give every parameter group that should train an LR above 0"),
    "layer_never_moves": ({OPT}, "give every parameter group that should train an LR above 0"),
    "label_in_inputs": (
        {DATA, MODEL},
        "drop the label from the inputs (and the model's input width with it)",
    ),
}


RESCALED = set(_LOSS_SENTENCE) | {"labels_are_inputs"}  # a fix changes the loss's scale
# memorised or read off the input: a fix makes the training loss higher
MEMORISED = {"repeated_rows", "constant_labels", "label_in_inputs"}


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _loop_forecast(evs, key: str):
    """(forecast, why, judged_by) for the fixed setup, from the baseline runs of both seeds."""
    ev = evs[0]
    step = int(ev.run.table["step"][-1])
    base = [level(e.run, step) for e in evs]
    start = ev.run.column("loss_raw")[0]
    finite = all(map(math.isfinite, base)) and start is not None and math.isfinite(start)
    if key in MEMORISED and finite and max(base) < 0.5 * abs(start):  # it memorised the repeats
        held = [e.held_out() for e in evs]
        scores = [h.evals[-1][1] for h in held] if held[0] is not None else []
        if scores and all(map(math.isfinite, scores)):  # what memorising costs: the held-out loss
            return (
                f"loss < {_fmt(0.8 * min(scores))} by step {held[0].evals[-1][0]}",
                None,
                f"held-out:{ev.best_arm()}",
            )
        over = max(base) + max(0.05 * abs(start), 2 * abs(base[0] - base[1]))
        return f"loss > {_fmt(over)} by step {step}", None, OWN
    plain = ev.arm(ev.best_arm())
    goal = level(plain.run, len(plain.losses) - 1)
    worst = min(base)  # the baseline must miss the forecast on both seeds
    if not math.isfinite(worst):  # a finite loss, no higher than at init, is what it misses
        if start is None or not math.isfinite(start):
            return None, "your loop's loss is not finite even at its first step", OWN
        return f"loss < {_fmt(1.5 * abs(start))} by step {step}", None, OWN
    if math.isfinite(goal) and goal < worst:
        return f"loss < {_fmt(goal + 0.5 * (worst - goal))} by step {step}", None, OWN
    if worst <= 0:
        return (
            None,
            f"your loop already ends at {_fmt(worst)}: no lower loss tells a fix apart",
            OWN,
        )
    return f"loss < {_fmt(0.8 * worst)} by step {step}", None, OWN


def prescribe(finding, evs, labkit_plan=None) -> dict:
    """The prescription for `finding` (an `OwnFinding`) on the seeds of `evs` (see above);
    `labkit_plan` is labkit's own intervention, whose forecast a fix in the logger or the loss
    must meet too."""
    parts = finding.key.split("|")  # two candidate loggers: one change, if both live in the logger
    same = len({id(CHANGES.get(k)) for k in parts}) == 1 and parts[0] in CHANGES
    touches, change = CHANGES.get(
        parts[0] if same else finding.key,
        ({LOOP, OPT, MODEL, DATA, LOSS}, f"undo what the mechanism names: {finding.mechanism}"),
    )
    judged_by, forecast, why = OWN, None, None
    if finding.key in RESCALED or finding.system == "H3":
        if labkit_plan is not None:
            forecast = labkit_plan[0]  # on the reference loss when labkit swapped the loss
            ruler = getattr(labkit_plan[1], "ruler", "")  # which reference it was read on
            if labkit_plan[2][0] == "loss_fn":
                judged_by = f"reference:{ruler}" if ruler else "reference"
        else:
            why = (
                "the fix changes what the loss or the logger measures, and labkit found no "
                "reference that learned better than yours, so no threshold compares the runs"
            )
    elif finding.key == "order_unmixed" and labkit_plan is not None:
        forecast, judged_by = labkit_plan[0], "epoch:own"  # the ruler of labkit's `mixed` run
    else:
        forecast, why, judged_by = _loop_forecast(evs, finding.key)
    return {
        "key": finding.key,
        "change": change,
        "touches": sorted(touches),
        "forecast": forecast,
        "why": why,
        "judged_by": judged_by,
        "seeds": [e.seed for e in evs],
        "steps": evs[0].steps,
        "epochs": evs[0].epochs,
    }


def text(p: dict) -> str:
    forecast = (
        f"FORECAST for the fixed run on seeds {p['seeds'][0]} and {p['seeds'][1]}: {p['forecast']}"
        if p["forecast"]
        else f"no forecast: {p['why']}"
    )
    where = " or ".join(f"{m}()" for m in p["touches"])
    return (
        f"PRESCRIBED: {p['change']} (one change, in {where}); {forecast}; then "
        "record.intervene(fixed_setup)"
    )
