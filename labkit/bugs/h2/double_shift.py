"""double_shift: labels shifted by hand, then shifted again inside the model.

Symptom:   the loss descends but levels off clearly above the correct run, and the
           response-token loss measured independently stays high.
Mechanism: the collator does ``labels[:, :-1] = input_ids[:, 1:]`` as a custom model would
           need, but the model follows the Hugging Face convention and shifts ``labels`` itself.
           Position t is now trained to predict token t+2. For this corpus the best possible
           loss rises from ln 2 (one step of the chain) to about ln 4 (two steps).
Fix:       pass ``labels=input_ids`` (with -100 masks) and let the model shift, exactly once.
Stage:     data/targets.    System: H2 (input-label pairs misaligned).    Taught in: Exercise E.
"""

import torch

from ...core.data import IGNORE
from .._base import Bug
from .._lm import rewrite_labels


def _shift_by_hand(split):
    labels = split["labels"]
    shifted = torch.full_like(labels, IGNORE)
    shifted[:, :-1] = labels[:, 1:]  # the bug: the model will shift these again
    return shifted


def data_double_shift(config):
    return rewrite_labels(config, _shift_by_hand)


BUG = Bug(
    name="double_shift",
    system="H2",
    stage="data/targets",
    exercise="Exercise E",
    seam="data",
    replacement=data_double_shift,
    setup={"task": "lm"},
    symptom="LM loss floor measurably above the correct run; response loss stays high",
    mechanism="labels shifted by hand and again inside the model: trained to predict 2 tokens ahead",
)
