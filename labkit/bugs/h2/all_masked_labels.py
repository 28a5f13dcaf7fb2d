"""all_masked_labels: every label in the batch is -100, so the mean loss is 0/0.

Symptom:   NaN loss from the very first step; ``valid_tokens`` is 0.
Mechanism: the collator looks for the response after a separator token, but searches for
           the wrong token id, finds no response anywhere and masks everything with -100.
           ``cross_entropy(reduction="mean")`` divides a sum over zero tokens by zero: NaN.
           PyTorch's backward gives exactly-zero gradients here, so the weights never move:
           the NaN is in the loss only, and every update norm is 0.
Fix:       guard each batch: ``labkit.guards.require_supervised_tokens(labels)`` raises a clear
           error ("no supervised tokens") instead of a silent NaN; fix the separator id.
Stage:     loss/masking.    System: H2 (the batches carry no supervised targets).
Taught in: Exercise E.
"""

from ...core.data import IGNORE, SEP
from .._base import Bug
from .._lm import rewrite_labels

WRONG_SEP = SEP + 100  # an id that never occurs: the response is never found


def _mask_everything(split):
    ids = split["input_ids"]
    found = (ids == WRONG_SEP).cumsum(1) > 0  # True after the separator -- never, here
    return ids.masked_fill(~found, IGNORE)


def data_all_masked(config):
    return rewrite_labels(config, _mask_everything)


BUG = Bug(
    name="all_masked_labels",
    system="H2",
    stage="loss/masking",
    exercise="Exercise E",
    seam="data",
    replacement=data_all_masked,
    setup={"task": "lm"},
    symptom="NaN loss from step 0; valid_tokens is 0 in every batch",
    mechanism="every label is -100 (response never found): mean over zero tokens is 0/0 = NaN",
)
