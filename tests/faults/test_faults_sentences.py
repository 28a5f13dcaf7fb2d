"""Every refusal's advice checked against the situation it is given in: a loss without a
graph names the part of the setup that lost it (loss_fn, make_model or train itself)."""

import pytest
import torch

import labkit
from own_setups.healthy import BlobSetup


class DetachedLoss(BlobSetup):
    def loss_fn(self, model, batch):
        return super().loss_fn(model, batch).detach()


class FrozenModel(BlobSetup):
    def make_model(self, seed):
        return super().make_model(seed).requires_grad_(False)


class NoGradLoop(BlobSetup):
    def train(self, seed, epochs):
        with torch.no_grad():
            return super().train(seed, epochs)


@pytest.mark.parametrize(
    "setup, names",
    [
        (DetachedLoss, "DetachedLoss.loss_fn(model, batch) returns a loss that does not require"),
        (FrozenModel, "FrozenModel.make_model(0) returns a model none of whose parameters"),
        (NoGradLoop, "make_model and loss_fn give a loss with a graph, so NoGradLoop.train()"),
    ],
)
def test_a_loss_without_a_graph_names_the_part_that_lost_it(setup, names):
    with pytest.raises(ValueError) as err:
        labkit.diagnose(setup(), budget_s=60)
    said = str(err.value)
    assert said.startswith(f"{setup.__name__}.train(0, ") and names in said, said
    assert "element 0 of tensors does not require grad" in said  # what torch said, kept
