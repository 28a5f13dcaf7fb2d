"""padding_in_loss: pad positions keep their labels instead of -100.

Symptom:   the LM loss drops fast and low, yet the response-token loss lags the correct run;
           the valid-token count is too large.
Mechanism: ``labels = input_ids`` without masking ``attention_mask == 0``. Predicting PAD
           after EOS or PAD is trivial, so these many easy tokens dominate the mean and pull
           the reported loss down, while the gradient for the real tokens is diluted.
Fix:       ``labels[attention_mask == 0] = -100``; count valid tokens and check the number.
Stage:     loss/masking.    System: H1 (loss averaged over padding).    Taught in: Exercise E.
"""

from ...core.data import PAD
from .._base import Bug
from .._lm import rewrite_labels


def _keep_padding(split):
    pads = split["attention_mask"] == 0
    return split["labels"].masked_fill(pads, PAD)  # the bug: pads are supervised targets


def data_padding_in_loss(config):
    return rewrite_labels(config, _keep_padding)


BUG = Bug(
    name="padding_in_loss",
    system="H1",
    stage="loss/masking",
    exercise="Exercise E",
    seam="data",
    replacement=data_padding_in_loss,
    setup={"task": "lm"},
    symptom="LM loss falls fast on easy pad tokens while response-token loss lags; too many valid tokens",
    mechanism="pad positions not set to -100: the loss is averaged over padding",
)
