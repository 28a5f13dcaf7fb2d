"""The readings added from the nineteenth batch's misses, written before each reading, on
inputs that batch does not hold: each must fire on its defect and stay silent on the healthy
look-alikes beside it (no training here but a few steps: each reading is a function of a model
and its batches, or of the replay of a short loop)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit.diagnosis.own.step1_capture.replay import Replay
from labkit.diagnosis.own.step3_h2 import unseen
from labkit.diagnosis.own.step5_sign import acquit
from labkit.diagnosis.own.step6_decide import evalnoise


class _Net(nn.Module):
    """A small regressor whose middle is one of: functional dropout without the training flag,
    with it, nn.Dropout, BatchNorm, Gaussian noise with or without `self.training`, nothing."""

    def __init__(self, middle: str):
        super().__init__()
        self.a, self.b, self.middle = nn.Linear(6, 16), nn.Linear(16, 2), middle
        self.drop, self.norm = nn.Dropout(0.4), nn.BatchNorm1d(16)

    def forward(self, x):  # (B, 6) -> (B, 2)
        h = F.relu(self.a(x))
        if self.middle == "functional":
            h = F.dropout(h, 0.4)
        elif self.middle == "functional_flag":
            h = F.dropout(h, 0.4, self.training)
        elif self.middle == "module":
            h = self.drop(h)
        elif self.middle == "batchnorm":
            h = self.norm(h)
        elif self.middle == "alpha":
            h = F.alpha_dropout(h, 0.2, True)
        return self.b(h)


class _Setup:
    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x), y)


def _batches(n=4, rows=16):
    g = torch.Generator().manual_seed(3)
    return [
        (torch.randn(rows, 6, generator=g), torch.randn(rows, 2, generator=g)) for _ in range(n)
    ]


def _repeat(middle):
    torch.manual_seed(0)
    return evalnoise.repeat(_Setup(), _Net(middle), _batches(), seed=0)


def test_functional_dropout_that_ignores_eval_gives_two_outputs_for_one_batch():
    found = _repeat("functional")
    assert found["relative"] > 0.05 and found["drops"] == [("dropout", 0.4)]
    assert _repeat("alpha")["drops"] == [("alpha_dropout", 0.2)]


def test_dropout_that_follows_eval_batchnorm_and_plain_models_repeat_exactly():
    for middle in ("functional_flag", "module", "batchnorm", "none"):
        found = _repeat(middle)
        assert found["relative"] == 0 and found["drops"] == [], middle


class _TrainsInLoss(_Setup):
    def loss_fn(self, model, batch):
        model.train()  # a loss_fn that puts the model back in train mode: nn.Dropout is on
        return super().loss_fn(model, batch)


def test_a_loss_fn_that_puts_the_model_in_train_mode_is_not_read():
    torch.manual_seed(0)
    assert evalnoise.repeat(_TrainsInLoss(), _Net("module"), _batches(), seed=0) is None


def test_the_model_is_left_in_the_mode_it_came_in():
    model = _Net("functional")
    model.train()
    evalnoise.repeat(_Setup(), model, _batches(), seed=0)
    assert model.training


def _counts(labels, classes):
    return unseen.missing(torch.bincount(labels, minlength=classes), classes)


def test_a_class_the_output_has_and_the_training_labels_never_hold_is_named():
    labels = torch.arange(4).repeat_interleave(200)  # classes 0..3, the model outputs 5
    found = _counts(labels, 5)
    assert found["missing"] == [4] and found["rarest"] == 200 and found["rows"] == 800
    middle = torch.tensor([0, 1, 3, 4]).repeat_interleave(50)  # class 2 never
    assert _counts(middle, 5)["missing"] == [2]


def test_every_class_present_one_based_labels_and_rare_classes_are_not_named():
    assert _counts(torch.arange(5).repeat_interleave(100), 5) is None  # all present
    assert _counts(torch.arange(1, 6).repeat_interleave(100), 6) is None  # 1-based, 0 kept free
    rare = torch.cat([torch.arange(4).repeat_interleave(3), torch.tensor([0] * 50)])
    assert _counts(rare, 5) is None  # the rarest present class is seen 3 times: chance
    vocab = torch.randint(0, 20, (400,))  # an output far wider than the labels (a vocabulary)
    assert _counts(vocab, 100) is None
    assert _counts(torch.tensor([0, 1] * 100), 3) is None  # two classes of three: too few kinds


class _Seq(nn.Module):
    """A one-way LSTM read at its first or its last time step."""

    def __init__(self, first: bool):
        super().__init__()
        self.rnn, self.head, self.first = nn.LSTM(3, 8, batch_first=True), nn.Linear(8, 2), first

    def forward(self, x):  # (B, T, 3) -> (B, 2)
        out, _ = self.rnn(x)  # (B, T, 8)
        return self.head(out[:, 0] if self.first else out[:, -1])


def _zero_grad(first: bool):
    torch.manual_seed(0)
    model = _Seq(first)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 5, 3), torch.randint(0, 2, (8,))
    with Replay() as rp:
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
    return acquit.zero_grad(rp)


def test_a_recurrent_weight_whose_gradient_is_exactly_zero_at_every_step_is_named():
    assert _zero_grad(True) == [("rnn.weight_hh_l0", 256, True)]  # recurrent: h0 = 0


def test_a_recurrent_layer_read_at_its_last_step_has_no_zero_gradient():
    assert _zero_grad(False) == []


def test_the_one_change_run_reads_a_one_way_rnn_in_reverse_time():
    from labkit.diagnosis.own.step5_sign.reread import reversed_rnn

    torch.manual_seed(0)
    model, x = _Seq(True), torch.randn(4, 5, 3)
    last = _Seq(False)
    last.load_state_dict(model.state_dict())
    reversed_rnn(model, ["rnn"])
    assert torch.allclose(model(x), last(x))  # position 0 now holds the whole sequence's state
    gru = nn.GRU(3, 8)  # sequence-first: time is dim 0
    out, _ = gru(x.transpose(0, 1))
    reversed_rnn(gru, [""])
    assert torch.equal(gru(x.transpose(0, 1))[0], out.flip(0))
