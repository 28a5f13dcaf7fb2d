"""The loss path of a learner's own setup: what loss_fn does between the model's output and
the labels, measured on one batch at init (labkit.diagnosis.own_losspath)."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit.diagnosis.own_losspath import audit

G = torch.Generator().manual_seed(0)
X = torch.randn(64, 6, generator=G)
Y_CLASS = torch.randint(0, 4, (64,), generator=G)
Y_REAL = torch.randn(64, generator=G)
Y_TAGS = (torch.rand(64, 3, generator=G) > 0.5).float()


class Setup:
    out, y = 4, Y_CLASS
    head = ()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, self.out), *self.head)

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-3)

    def batches(self, seed):
        return [(X[i:i + 32], self.y[i:i + 32]) for i in (0, 32)]

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def train(self, seed, epochs):
        raise NotImplementedError  # the audit never runs the learner's loop


def setup(out=4, y=Y_CLASS, head=(), loss=None):
    s = type("S", (Setup,), {"out": out, "y": y, "head": head})()
    if loss is not None:
        s.loss_fn = lambda model, batch: loss(model(batch[0]), batch[1])
    return s


HEALTHY = {
    "cross_entropy": setup(),
    "mse on matching shapes": setup(1, Y_REAL, loss=lambda p, y: F.mse_loss(p.squeeze(1), y)),
    "bce with logits": setup(3, Y_TAGS, loss=nn.BCEWithLogitsLoss()),
    "accuracy computed beside the loss": setup(loss=lambda p, y: F.cross_entropy(p, y) + 0 * (
        p.argmax(1) == y).float().mean()),
    "log_softmax into nll_loss": setup(loss=lambda p, y: F.nll_loss(F.log_softmax(p, 1), y)),
}


@pytest.mark.parametrize("name", HEALTHY)
def test_honest_losses_are_not_flagged(name):
    s = HEALTHY[name]
    a = audit(s, 0, s.batches(0))
    assert a["broadcasts"] == [] and a["probabilities"] == [] and a["zero_grads"] is False, a


def test_a_prediction_broadcast_against_the_labels_is_measured():
    s = setup(1, Y_REAL, loss=F.mse_loss)  # (32, 1) against (32,)
    a = audit(s, 0, s.batches(0))
    assert a["broadcasts"] == ["mse_loss combines the prediction (32, 1) with the labels (32,), "
                               "which broadcast to (32, 32)"]
    s = setup(1, Y_REAL, loss=lambda p, y: ((p - y) ** 2).mean())  # the same, written by hand
    assert "which broadcast to (32, 32)" in audit(s, 0, s.batches(0))["broadcasts"][0]


@pytest.mark.parametrize("head, loss, words", [
    ((nn.Sigmoid(),), nn.BCEWithLogitsLoss(), "its own sigmoid again"),
    ((nn.Softmax(dim=1),), nn.CrossEntropyLoss(), "its own log-softmax again"),
    ((nn.Softmax(dim=1),), nn.NLLLoss(), "nll_loss expects log-probabilities"),
])
def test_probabilities_given_to_a_loss_on_logits_are_measured(head, loss, words):
    s = setup(3 if isinstance(loss, nn.BCEWithLogitsLoss) else 4,
              Y_TAGS if isinstance(loss, nn.BCEWithLogitsLoss) else Y_CLASS, head, loss)
    a = audit(s, 0, s.batches(0))
    assert len(a["probabilities"]) == 1 and words in a["probabilities"][0]


@pytest.mark.parametrize("op", [torch.round, torch.floor, torch.sign])
def test_a_piecewise_constant_op_with_zero_gradients_is_measured(op):
    s = setup(1, Y_REAL, loss=lambda p, y: F.mse_loss(op(p).squeeze(1), y))
    a = audit(s, 0, s.batches(0))
    assert a["zero_grads"] is True and len(a["flat_ops"]) == 1


def test_the_rule_needs_both_seeds_and_names_the_mechanism():
    from labkit.diagnosis.own_evidence import SeedEvidence
    from labkit.diagnosis.own_losspath import loss_path
    s = setup(1, Y_REAL, loss=lambda p, y: F.mse_loss(torch.round(p), y.unsqueeze(1)))
    found = loss_path([SeedEvidence(s, 0), SeedEvidence(s, 1)])
    assert found.system == "H1" and found.key == "no_gradient" and "torch.round" in found.mechanism
    assert loss_path([SeedEvidence(HEALTHY["cross_entropy"], k) for k in (0, 1)]) is None
