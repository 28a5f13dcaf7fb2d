"""nan_in_inputs: one corrupt training example holds a NaN feature.

Symptom:   training is normal until one step, where the loss turns NaN and never recovers.
Mechanism: the corrupt row reaches the model in some batch; its NaN flows through the
           forward pass into the loss and every gradient, and one SGD step writes NaN into
           every weight. The first non-finite tensor is the *input*, not the loss.
Fix:       validate data (``torch.isfinite(x).all()``) when loading; drop or repair the row.
Stage:     data/targets.    System: H2.    Taught in: the bug gallery (NaN section).
"""

import math

from ...core.seams import make_data
from .._base import Bug

CORRUPT_ROW = 300  # a row of the training split, fixed so the NaN step is reproducible


def data_with_nan_row(config):
    data = make_data(config)
    data.train["x"] = data.train["x"].clone()
    data.train["x"][CORRUPT_ROW, 0] = math.nan  # the bug: a corrupt reading
    return data


BUG = Bug(
    name="nan_in_inputs",
    system="H2",
    stage="data/targets",
    exercise="bug gallery",
    seam="data",
    replacement=data_with_nan_row,
    symptom="loss normal, then NaN at one step for good; the first non-finite tensor is an input",
    mechanism="a training example contains NaN: it poisons the loss, gradients and weights",
)
