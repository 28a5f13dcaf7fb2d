"""The loss path of a learner's own setup: what loss_fn does between the model's output and
the labels, measured on one batch at init (labkit.diagnosis.own.step4_h1.losspath)."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit.diagnosis.own.step4_h1.losspath import audit

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
        return [(X[i : i + 32], self.y[i : i + 32]) for i in (0, 32)]

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
    "accuracy computed beside the loss": setup(
        loss=lambda p, y: F.cross_entropy(p, y) + 0 * (p.argmax(1) == y).float().mean()
    ),
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
    assert a["broadcasts"] == [
        (
            "mse_loss combines the prediction (32, 1) with the labels (32,), "
            "which broadcast to (32, 32)"
        )
    ]
    s = setup(1, Y_REAL, loss=lambda p, y: ((p - y) ** 2).mean())  # the same, written by hand
    assert "which broadcast to (32, 32)" in audit(s, 0, s.batches(0))["broadcasts"][0]


@pytest.mark.parametrize(
    "head, loss, words",
    [
        ((nn.Sigmoid(),), nn.BCEWithLogitsLoss(), "its own sigmoid again"),
        ((nn.Softmax(dim=1),), nn.CrossEntropyLoss(), "its own log-softmax again"),
        ((nn.Softmax(dim=1),), nn.NLLLoss(), "where nll_loss wants log-probabilities"),
    ],
)
def test_probabilities_given_to_a_loss_on_logits_are_measured(head, loss, words):
    s = setup(
        3 if isinstance(loss, nn.BCEWithLogitsLoss) else 4,
        Y_TAGS if isinstance(loss, nn.BCEWithLogitsLoss) else Y_CLASS,
        head,
        loss,
    )
    a = audit(s, 0, s.batches(0))
    said = a["probabilities"] + [text for _, text in a["log_space"]]  # nll_loss: `callargs`
    assert len(said) == 1 and words in said[0]


@pytest.mark.parametrize("op", [torch.round, torch.floor, torch.sign])
def test_a_piecewise_constant_op_with_zero_gradients_is_measured(op):
    s = setup(1, Y_REAL, loss=lambda p, y: F.mse_loss(op(p).squeeze(1), y))
    a = audit(s, 0, s.batches(0))
    assert a["zero_grads"] is True and len(a["flat_ops"]) == 1


def test_the_rule_needs_both_seeds_and_names_the_mechanism():
    from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
    from labkit.diagnosis.own.step4_h1.losspath import loss_path

    s = setup(1, Y_REAL, loss=lambda p, y: F.mse_loss(torch.round(p), y.unsqueeze(1)))
    found = loss_path([SeedEvidence(s, 0), SeedEvidence(s, 1)])
    assert found.system == "H1" and found.key == "no_gradient" and "torch.round" in found.mechanism
    assert loss_path([SeedEvidence(HEALTHY["cross_entropy"], k) for k in (0, 1)]) is None


@pytest.mark.parametrize(
    "smoothing, flagged", [(0.0, False), (0.1, False), (0.3, False), (0.8, True), (0.9, True)]
)
def test_the_floor_of_the_loss_is_measured_with_the_calls_own_options(smoothing, flagged):
    """A confident right answer scores ~0 without smoothing; with 0.9 over 4 classes the best
    reachable loss sits within a few percent of a uniform guess."""
    from labkit.diagnosis.own.step4_h1.targets import FLOOR

    s = setup(loss=nn.CrossEntropyLoss(label_smoothing=smoothing))
    fl = audit(s, 0, s.batches(0))["floor"]
    assert fl["chance"] == pytest.approx(torch.log(torch.tensor(4.0)).item(), rel=1e-5)
    assert fl["label_smoothing"] == pytest.approx(smoothing)
    assert (fl["best"] >= FLOOR * fl["chance"]) is flagged, fl
    if smoothing == 0.0:
        assert fl["best"] < 1e-6


def test_the_floor_rule_names_label_smoothing():
    from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
    from labkit.diagnosis.own.step4_h1.losspath import loss_path

    s = setup(loss=lambda p, y: F.cross_entropy(p, y, label_smoothing=0.9))
    found = loss_path([SeedEvidence(s, 0), SeedEvidence(s, 1)])
    assert found.system == "H1" and found.key == "floor_near_chance"
    assert "label_smoothing=0.9" in found.mechanism and "true class gets 0.325" in found.mechanism
    s = setup(loss=lambda p, y: F.nll_loss(F.log_softmax(p, 1), y))  # nll_loss: floor ~0
    assert audit(s, 0, s.batches(0))["floor"]["best"] < 1e-6


TOKENS = torch.randint(0, 12, (64, 10), generator=G)


class GruLm(nn.Module):  # causal: position t reads tokens 0..t
    def __init__(self):
        super().__init__()
        self.embed, self.rnn, self.out = (
            nn.Embedding(12, 16),
            nn.GRU(16, 16, batch_first=True),
            nn.Linear(16, 12),
        )

    def forward(self, ids):
        return self.out(self.rnn(self.embed(ids))[0])


class BiGru(GruLm):  # not causal: every position reads every token
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(16, 8, batch_first=True, bidirectional=True)


class TokenSetup(Setup):
    model, shift = GruLm, False

    def make_model(self, seed):
        torch.manual_seed(seed)
        return self.model()

    def batches(self, seed):
        return [
            {"input_ids": TOKENS[i : i + 32], "labels": TOKENS[i : i + 32].clone()} for i in (0, 32)
        ]

    def loss_fn(self, model, batch):
        logits, labels = model(batch["input_ids"]), batch["labels"]
        if self.shift:
            logits, labels = logits[:, :-1], labels[:, 1:]
        return F.cross_entropy(logits.reshape(-1, 12), labels.reshape(-1))


@pytest.mark.parametrize(
    "model, shift, copies", [(GruLm, False, True), (GruLm, True, None), (BiGru, False, False)]
)
def test_labels_equal_to_a_causal_models_inputs_are_measured(model, shift, copies):
    """Unshifted labels on a causal model: flagged. Shifted in the loss (the Hugging Face way):
    the targets are not the inputs. A bidirectional model: the labels are the inputs, but its
    early outputs read the last token, so nothing is claimed."""
    s = type("T", (TokenSetup,), {"model": model, "shift": shift})()
    assert audit(s, 0, s.batches(0))["copies"] is copies


def test_the_copy_rule_is_h2_and_says_shift():
    from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
    from labkit.diagnosis.own.step4_h1.losspath import loss_path

    s = TokenSetup()
    found = loss_path([SeedEvidence(s, 0), SeedEvidence(s, 1)])
    assert found.system == "H2" and found.key == "labels_are_inputs" and "shift" in found.mechanism


@pytest.mark.parametrize("dim, flagged", [(0, True), (-2, True), (1, False), (-1, False)])
def test_a_softmax_over_the_batch_dimension_is_measured(dim, flagged):
    s = setup(loss=lambda p, y: F.nll_loss(F.log_softmax(p, dim=dim), y))
    assert bool(audit(s, 0, s.batches(0))["batch_softmax"]) is flagged


def test_a_square_similarity_matrix_may_be_normalised_over_dim_0():
    """A contrastive term (examples against examples) takes log_softmax over both dims."""

    def loss(p, y):
        sim = p @ p.T
        return F.cross_entropy(p, y) - 0.1 * F.log_softmax(sim, dim=0).diagonal().mean()

    s = setup(loss=loss)
    assert audit(s, 0, s.batches(0))["batch_softmax"] == []
    from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
    from labkit.diagnosis.own.step4_h1.losspath import loss_path

    s = setup(loss=lambda p, y: F.nll_loss(F.log_softmax(p, dim=0), y))
    found = loss_path([SeedEvidence(s, 0), SeedEvidence(s, 1)])
    assert found.key == "softmax_over_batch" and "log_softmax(dim=0)" in found.mechanism


@pytest.mark.parametrize(
    "loss, floored",
    [
        (lambda p, y: F.cross_entropy(F.softmax(p, 1), y), True),  # saturates: a real floor
        (lambda p, y: F.cross_entropy(p, y), False),
        # a term of its own that no certainty removes: a floor, but not a saturated one
        (
            lambda p, y: F.cross_entropy(p, y) + 0.5 * (1 - F.normalize(p, dim=1)[:, 0]).mean(),
            False,
        ),
    ],
)
def test_the_loss_floor_needs_saturation_not_just_a_bounded_term(loss, floored):
    from labkit.diagnosis.own.step4_h1.floor import loss_floor

    s = setup(loss=loss)
    found = loss_floor(s, 0, s.batches(0) * 2)
    assert (found is not None and found.key == "loss_floor") is floored
