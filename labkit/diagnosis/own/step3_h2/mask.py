"""H2: a mask in the batch whose meaning is the other way round from what the model reads.

Hugging Face's ``attention_mask`` is 1 (True) on the tokens to attend; PyTorch's
``key_padding_mask`` and ``src_key_padding_mask`` are True on the positions to leave out. One
passed as the other hides every real token and attends only to the padding, so the model's
output no longer depends on what each example holds.

Measured at init on the first batch of each seed, with the prediction the loss receives
(`inner.prediction`): for each other tensor of a dict batch that has the inputs'
shape and only the values 0 and 1 (a mask), the prediction as given is the same for every
example (its spread across the batch below SAME of its size), and with that mask inverted it
differs between examples (above APART). Then the mask, not the model, is what hides the inputs.
"""

from __future__ import annotations

import copy
import warnings

import torch

from ...finding import OwnFinding
from ..margins import above, below
from ..step1_capture import inner, setup as proto

SAME = 1e-6  # the prediction's spread across examples over its size: every example alike
APART = 1e-3  # with the mask inverted, the spread above this: the examples differ again


def _masks(batch) -> list[str]:
    if not isinstance(batch, dict):
        return []
    try:
        x = proto.inputs_of(batch)
    except (KeyError, ValueError, TypeError):
        return []
    keys = []
    for k, v in batch.items():
        if not torch.is_tensor(v) or v is x or v.shape != x.shape or v.is_floating_point():
            continue
        if k in proto.LABEL_KEYS or not bool(((v == 0) | (v == 1)).all()):
            continue
        if bool((v == v.reshape(-1)[0]).all()):
            continue  # all ones or all zeros: no polarity to read
        keys.append(k)
    return keys


def _inverted(v: torch.Tensor) -> torch.Tensor:
    return ~v if v.dtype == torch.bool else 1 - v


def _spread(pred) -> float | None:
    if not torch.is_tensor(pred) or pred.dim() == 0 or len(pred) < 2:
        return None
    p = pred.detach().double()
    if not bool(torch.isfinite(p).all()):
        return None
    size = float(p.abs().mean()) or 1.0
    return float(p.std(0).max()) / size


def spreads(setup, seed: int, batch, key: str) -> tuple[float, float] | None:
    """(spread across examples as given, with `key` inverted) of the first prediction."""
    model = proto.make_model(setup, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            given = _spread(inner.prediction(setup, copy.deepcopy(model), batch, seed))
            other = {**batch, key: _inverted(batch[key])}
            flipped = _spread(inner.prediction(setup, copy.deepcopy(model), other, seed))
        except Exception:  # a model or loss this check cannot call twice: nothing measured
            return None
    return None if given is None or flipped is None else (given, flipped)


def inverted_batches(batches: list, key: str) -> list:
    """The batches with the mask `key` inverted."""
    return [{**b, key: _inverted(b[key])} for b in batches]


def inverted_run(ev, key: str):
    """The plain loop (the learner's optimizer) on the batches with `key` inverted, once."""
    from ..step1_capture.loops import changed_data

    return changed_data(ev, f"mask:{key}", lambda batches: inverted_batches(batches, key))


def mask_rule(evs) -> OwnFinding | None:
    """H2 where, on every seed, the prediction is the same for every example with a mask of
    the batch as given and differs with that mask inverted (see above)."""
    for key in _masks(evs[0].batches[0]):
        found = [spreads(ev.setup, ev.seed, ev.batches[0], key) for ev in evs]
        if any(f is None for f in found) or not all(
            below("mask.given_alike", g, SAME, seed=ev.seed)
            and above("mask.inverted_apart", f, APART, seed=ev.seed)
            for (g, f), ev in zip(found, evs)
        ):
            continue
        share = float(evs[0].batches[0][key].float().mean())
        return OwnFinding(
            "H2",
            "mask_inverted",
            f"the batch's mask '{key}' is read the other way round: with it as given, the "
            f"model's prediction is the same for every example of the batch (spread "
            f"{found[0][0]:.1e} of its size), so no real token reaches the output, and with "
            f"the mask inverted the examples differ again ({found[0][1]:.2g}); '{key}' is 1 "
            f"on {share:.0%} of the positions: a mask that marks the tokens to attend (Hugging "
            "Face's attention_mask) passed where True marks what to leave out (PyTorch's "
            "key_padding_mask) does this; pass ~mask (or build it as ids == pad)",
            arm=f"mask:{key}",
            variable=(key, "as given", "inverted"),
        )
    return None
