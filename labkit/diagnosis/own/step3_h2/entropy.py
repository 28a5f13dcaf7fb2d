"""The overfit row beside a healthy verdict: a gate that stalls on targets that are partly random.

The overfit probe asks the model to memorise 64 samples in 100 steps. A language model's
next token is partly random, so its loss stops near the data's entropy instead of 0, and
the probe's own words ("stalls with healthy gradient norms: the data or the loss carries
no usable signal") would contradict a NONE verdict whose label-shuffle control showed
that the labels do carry signal. `explain_stall` rewrites the row for that case: what the
probe reached, the data's entropy floor where it can be estimated (for token labels: the
entropy of the label given the input token at the same position, over the whole epoch,
an estimate of what a model that sees one token of context is left with), and why the
stall is not a defect. `explain_model_stall` does the same beside an H1 conviction of the
model itself (units that never fire, a vanishing gradient, frozen parameters): there the
gradient norms the probe calls healthy are a total that hides a stalled layer, and the
stall is the model's, not the data's.
"""

from __future__ import annotations

import math

import torch

from ..step1_capture import setup as proto


def token_entropy(batches) -> float | None:
    """H(label | input token at the same position) in nats, over the epoch; None if the batch
    is not token ids in and token ids out of the same shape."""
    pairs = []
    for b in batches:
        try:
            x, y = proto.inputs_of(b), proto.labels_of(b)
        except (TypeError, ValueError, KeyError):
            return None
        if (
            not (torch.is_tensor(x) and torch.is_tensor(y))
            or x.shape != y.shape
            or x.is_floating_point()
            or y.is_floating_point()
            or x.dim() < 2
        ):
            return None
        keep = y.flatten() >= 0
        pairs.append(torch.stack([x.flatten()[keep], y.flatten()[keep]], 1))
    if not pairs:
        return None
    pairs = torch.cat(pairs)
    joint = pairs[:, 0] * (int(pairs[:, 1].max()) + 1) + pairs[:, 1]
    _, joint_counts = joint.unique(return_counts=True)
    _, x_counts = pairs[:, 0].unique(return_counts=True)
    n = len(pairs)
    h_joint = -sum(float(c) / n * math.log(float(c) / n) for c in joint_counts)
    h_x = -sum(float(c) / n * math.log(float(c) / n) for c in x_counts)
    return h_joint - h_x


def _against(last, floor: float) -> str:
    if last is None:
        return "without a final loss"
    if last < 0.75 * floor:
        return (
            f"below it ({last:.3g}): it was memorising the 64 samples, which takes more than the "
            "probe's steps when the targets are random"
        )
    return (
        f"at that level ({last:.3g}), not at 0" if last < 1.25 * floor else f"above it ({last:.3g})"
    )


def explain_stall(record, batches, seed_signal: dict | None) -> None:
    """Rewrite the overfit row when the gate stalled but the verdict is NONE."""
    row = record.rows.get("overfit")
    if not row or row["data"].get("reached", True):
        return
    first, last = row["data"].get("loss_first"), row["data"].get("loss_last")
    floor = token_entropy(batches)
    shown = f"{first:.3g} -> {last:.3g}" if first is not None and last is not None else "stalled"
    text = (
        f"does not reach ~0 on 64 samples ({shown}), and a healthy run need not: the targets are "
        "partly random. "
    )
    if floor is not None:
        text += (
            f"In your data the next token given the current one has an entropy of about "
            f"{floor:.3g} nats (a floor for a model that sees one token of context; more context "
            f"lowers it), and the probe ended {_against(last, floor)}. "
        )
    if seed_signal and seed_signal.get("verdict") == "signal":
        text += "The label-shuffle control shows the labels carry signal (real beat shuffled), "
    text += "so the stall is the data's entropy floor, not a defect"
    row["text"] = text
    row["data"]["entropy_floor"] = floor


MODEL_KEYS = {
    "dead_units": "units that never activate",
    "flow_blocked": "a layer whose gradient is blocked",
    "vanishing": "a layer whose gradient vanishes",
    "frozen": "frozen parameters",
}


def explain_model_stall(record, finding) -> None:
    """Rewrite the overfit row when it blames the data beside an H1 conviction of the model."""
    row = record.rows.get("overfit")
    if not row or row["data"].get("reached", True) or finding.key not in MODEL_KEYS:
        return
    first, last = row["data"].get("loss_first"), row["data"].get("loss_last")
    norm = row["data"].get("median_grad_norm")
    row["text"] = (
        f"stalls ({first:.3g} -> {last:.3g}"
        + (f", median gradient norm {norm:.3g}" if norm is not None else "")
        + f"), and the norms are not healthy: the total hides {MODEL_KEYS[finding.key]} (see the "
        "conviction), so the model as set up cannot fit 64 samples; this is not a sign that the "
        "data carries no signal"
    )
