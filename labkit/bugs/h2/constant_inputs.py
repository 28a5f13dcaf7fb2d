"""constant_inputs: preprocessing turns every input into the same vector.

Symptom:   the loss drops to the class prior (ln C for balanced classes) and stays there.
Mechanism: a clip with its bounds swapped, ``x.clamp(min=3.0)`` instead of
           ``x.clamp(max=3.0)``, lifts every standardised feature to 3.0. All rows are
           identical, so the best the model can do is predict the label frequencies.
Fix:       look at a batch of inputs after preprocessing (min, max, std per feature).
Stage:     data/targets.    System: H2 (no learnable signal).    Taught in: Lab 15.
"""

from ...core.seams import make_data
from .._base import Bug


def data_constant_inputs(config):
    data = make_data(config)
    for split in (data.train, data.val):
        split["x"] = split["x"].clamp(min=3.0)  # the bug: meant clamp(max=3.0)
    return data


BUG = Bug(
    name="constant_inputs",
    system="H2",
    stage="data/targets",
    exercise="Lab 15",
    seam="data",
    replacement=data_constant_inputs,
    symptom="loss settles at the class prior (ln C); input features have zero variance",
    mechanism="inputs clipped to a constant (clamp bounds swapped): every row is identical",
)
