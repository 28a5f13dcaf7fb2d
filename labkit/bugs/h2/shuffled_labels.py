"""shuffled_labels: the training labels were shuffled separately from the inputs.

Symptom:   the loss stays near ln C and validation accuracy near chance, with healthy
           gradient norms; a model can only memorise noise.
Mechanism: labels and inputs were shuffled with different permutations (or joined on the
           wrong key), so a label says nothing about its input. Descent is impossible, not slow.
Fix:       shuffle indices once and apply them to inputs and labels together; inspect pairs.
Stage:     data/targets.    System: H2 (no learnable signal).    Taught in: Lab 15.
"""

import torch

from ...core.seams import make_data
from .._base import Bug


def data_shuffled_labels(config):
    data = make_data(config)
    gen = torch.Generator().manual_seed(config.seed + 12345)
    y = data.train["y"]
    data.train["y"] = y[torch.randperm(len(y), generator=gen)]  # the bug
    return data


BUG = Bug(
    name="shuffled_labels",
    system="H2",
    stage="data/targets",
    exercise="Lab 15",
    seam="data",
    replacement=data_shuffled_labels,
    symptom="loss stays near ln C, val accuracy near chance, gradients healthy",
    mechanism="labels shuffled independently of inputs: the labels carry no signal",
)
