"""H2 setups: the loop and the optimizer are fine, the data carries no usable signal."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .common import batches_of, blob_mixture, split
from .healthy import BlobSetup, GruLanguageModel, MlpAdam


class ShuffledLabels(MlpAdam):
    """'Shuffle the data set once before splitting': x and y are indexed with two different
    permutations, so every label now belongs to another row."""

    def __init__(self):
        x, y = blob_mixture()
        gen = torch.Generator().manual_seed(5)
        x = x[torch.randperm(len(x), generator=gen)]
        y = y[torch.randperm(len(y), generator=gen)]
        (self.x, self.y), (self.val_x, self.val_y) = split(x, y)


class ConstantInputs(BlobSetup):
    """Features min-max scaled to [0, 1], then stored as uint8 'to save memory': the cast
    truncates every value below 1 to 0, so nearly every row becomes all zeros."""

    def __init__(self):
        super().__init__()
        scaled = (self.x - self.x.min()) / (self.x.max() - self.x.min())
        self.x_u8 = scaled.to(torch.uint8)

    def batches(self, seed):
        return batches_of(self.x_u8, self.y, self.batch_size, seed)

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x.float()), y)


class NanInputs(MlpAdam):
    """A CSV with empty cells: 4% of the values of feature 3 are missing and load as NaN."""

    def __init__(self):
        super().__init__()
        gen = torch.Generator().manual_seed(9)
        missing = torch.rand(len(self.x), generator=gen) < 0.04
        self.x = self.x.clone()
        self.x[missing, 3] = float("nan")


class NoiseDrownedInputs(BlobSetup):
    """Augmentation meant to add noise of std 0.03 adds std 30 (a unit slip): the signal
    is about 1/10 of the noise in every feature."""

    def __init__(self):
        super().__init__()
        gen = torch.Generator().manual_seed(21)
        self.x = self.x + 30.0 * torch.randn(self.x.shape, generator=gen)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-3)


class ValLabelsOtherMapping(BlobSetup):
    """The held-out file numbers its classes from 1 (1..6 with 6 written as 0 after a
    modulo): its labels follow another mapping than the training labels."""

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def val_batches(self, seed):
        return batches_of(self.val_x, (self.val_y + 1) % 6, 128, seed)


class LmLabelsMisaligned(GruLanguageModel):
    """Labels were made from a length-sorted copy of the sequences (sorted by their first
    token), the inputs from the original order: rows of labels belong to other inputs."""

    def __init__(self):
        super().__init__()
        self.label_rows = self.ids[torch.argsort(self.ids[:, 0], stable=True)]

    def batches(self, seed):
        order = torch.randperm(len(self.ids), generator=torch.Generator().manual_seed(seed))
        return [{"input_ids": self.ids[i, :-1], "labels": self.label_rows[i, 1:]}
                for i in order.split(32)]


H2 = {"h2_shuffled_labels": ShuffledLabels, "h2_constant_inputs": ConstantInputs,
      "h2_nan_inputs": NanInputs, "h2_noise_drowned_inputs": NoiseDrownedInputs,
      "h2_val_labels_other_mapping": ValLabelsOtherMapping,
      "h2_lm_labels_misaligned": LmLabelsMisaligned}
