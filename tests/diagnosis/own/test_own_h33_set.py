"""Issue 55's second set for h33, written before the rules changed: a loss that reads an argument
as log-probabilities given probabilities (``nll_loss`` / ``NLLLoss`` on a softmax, ``KLDivLoss``
on a softmax in a label smoothing written by hand, ``kl_div(log_target=True)`` given a
probability target), ``kl_div``'s target given as log-probabilities, each beside a healthy
twin in log space; read by the loss-path rule on two seeds at init (no training), and one full
triage of the MLP's ``nll_loss`` on a softmax.

Not copies of the twenty-third batch (a 1-D conv student distilled by ``F.kl_div``): an MLP
classifier on blobs, a per-token tagger over embeddings, a hand-made label smoothing."""

import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import labkit
from labkit.diagnosis.own import callargs
from labkit.diagnosis.own.step4_h1.losspath import loss_path
from labkit.diagnosis.own.step5_sign import channels, refloss
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
from own_setups.healthy import BlobSetup

CLASSES, FEATURES = 5, 8


def _blobs(n=256, seed=3):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, CLASSES, (n,), generator=g)
    centres = 2.5 * torch.randn(CLASSES, FEATURES, generator=torch.Generator().manual_seed(9))
    return centres[y] + torch.randn(n, FEATURES, generator=g), y


class _Mlp(BlobSetup):
    """An MLP on 5 Gaussian blobs, Adam, the epoch's running mean on the bar (`BlobSetup`'s
    loop); `loss_fn` differs."""

    def __init__(self):
        self.x, self.y = _blobs()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, CLASSES))

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        order = torch.randperm(len(self.y), generator=torch.Generator().manual_seed(seed))
        return [(self.x[i], self.y[i]) for i in order.split(32)]


class NllOnSoftmax(_Mlp):
    def loss_fn(self, model, batch):
        x, y = batch
        return F.nll_loss(F.softmax(model(x), dim=1), y)  # bug: nll_loss wants log-probabilities


class NllOnLogSoftmax(_Mlp):
    def loss_fn(self, model, batch):
        x, y = batch
        return nn.NLLLoss()(F.log_softmax(model(x), dim=1), y)


class NllOnLogOfSoftmax(_Mlp):
    def loss_fn(self, model, batch):
        x, y = batch
        return F.nll_loss(torch.log(F.softmax(model(x), 1) + 1e-8), y)  # a log taken by hand


def _smoothed(y, eps=0.1):
    return torch.full((len(y), CLASSES), eps / CLASSES).scatter(
        1, y[:, None], 1 - eps + eps / CLASSES
    )


class SmoothedKLOnSoftmax(_Mlp):
    def loss_fn(self, model, batch):
        x, y = batch  # label smoothing by hand, the KL to the smoothed one-hot
        return nn.KLDivLoss(reduction="batchmean")(F.softmax(model(x), 1), _smoothed(y))


class SmoothedKLOnLogSoftmax(_Mlp):
    def loss_fn(self, model, batch):
        x, y = batch
        return nn.KLDivLoss(reduction="batchmean")(F.log_softmax(model(x), 1), _smoothed(y))


class LogTargetGivenProbabilities(_Mlp):
    def loss_fn(self, model, batch):
        x, y = batch
        log_p = F.log_softmax(model(x), 1)
        return F.kl_div(log_p, _smoothed(y), reduction="batchmean", log_target=True)  # bug


class LogTargetGivenLogs(_Mlp):
    def loss_fn(self, model, batch):
        x, y = batch
        log_p = F.log_softmax(model(x), 1)
        return F.kl_div(log_p, _smoothed(y).log(), reduction="batchmean", log_target=True)


class TargetGivenLogs(_Mlp):
    def loss_fn(self, model, batch):
        x, y = batch  # bug: log-probabilities as the target, log_target left False
        return F.kl_div(F.log_softmax(model(x), 1), _smoothed(y).log(), reduction="batchmean")


class BceOnSigmoid(_Mlp):
    def loss_fn(self, model, batch):
        x, y = batch  # probabilities where binary_cross_entropy wants them: healthy
        return F.binary_cross_entropy(torch.sigmoid(model(x)), F.one_hot(y, CLASSES).float())


class _Tagger(_Mlp):
    """A per-token tagger: embeddings and a linear head over (B, T) ids, nll_loss over (B, C, T)."""

    def __init__(self):
        g = torch.Generator().manual_seed(5)
        self.x = torch.randint(0, 20, (128, 6), generator=g)
        self.y = self.x % CLASSES

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Embedding(20, 16), nn.Linear(16, CLASSES))

    def loss_fn(self, model, batch):
        x, y = batch
        return F.nll_loss(self.norm(model(x), dim=-1).transpose(1, 2), y)


class TaggerOnSoftmax(_Tagger):
    norm = staticmethod(F.softmax)


class TaggerOnLogSoftmax(_Tagger):
    norm = staticmethod(F.log_softmax)


class _Quantiles(_Mlp):
    """A linear-ReLU net forecasting per-row levels of y = x0 + |x1| * noise; `loss_fn` differs."""

    LEVELS = torch.tensor([0.25, 0.5, 0.75])

    def __init__(self):
        x, _ = _blobs()
        g = torch.Generator().manual_seed(4)
        self.x, self.y = x, x[:, 0] + x[:, 1].abs() * torch.randn(len(x), generator=g)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, self.LEVELS.numel()))

    def loss_fn(self, model, batch):
        x, y = batch
        e = self.residual(model(x), y[:, None])
        return torch.max((self.LEVELS - 1) * e, self.LEVELS * e).mean()


class QuantilesRight(_Quantiles):
    residual = staticmethod(lambda pred, y: y - pred)


class QuantilesDescending(QuantilesRight):
    LEVELS = torch.tensor([0.9, 0.5, 0.1])  # the learner's own order: still healthy


class QuantilesFlipped(_Quantiles):
    residual = staticmethod(lambda pred, y: pred - y)


class RowOfLevelsFlipped(QuantilesFlipped):
    LEVELS = torch.tensor([[0.2, 0.5, 0.8]])  # levels held as a (1, 3) row


class TwoQuantilesFlippedByWhere(_Quantiles):
    LEVELS = torch.tensor([0.05, 0.95])

    def loss_fn(self, model, batch):
        x, y = batch
        e = model(x) - y[:, None]  # bug: pred - y
        return torch.where(e >= 0, self.LEVELS * e, (self.LEVELS - 1) * e).mean()


class WeightedMse(QuantilesRight):
    def loss_fn(self, model, batch):
        x, y = batch  # three heads on one target, weighted: no quantiles at all
        return (self.LEVELS * (model(x) - y[:, None]) ** 2).mean()


def _read(setup):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return loss_path([SeedEvidence(setup, seed) for seed in (0, 1)])


@pytest.mark.parametrize(
    "setup, key, words",
    [
        (NllOnSoftmax, callargs.KEY_PROBS, "nll_loss's input (its first argument) holds values"),
        (SmoothedKLOnSoftmax, callargs.KEY_PROBS, "kl_div's input (its first argument)"),
        (LogTargetGivenProbabilities, callargs.KEY_PROBS, "log_target=True wants log-prob"),
        (TargetGivenLogs, callargs.KEY_LOGS, "log_target=False wants probabilities"),
        (TaggerOnSoftmax, callargs.KEY_PROBS, "of its 192 rows along dim 1 is 1"),
        (QuantilesFlipped, "quantile_flipped", "output 0 (level 0.25) as 0.75"),
        (TwoQuantilesFlippedByWhere, "quantile_flipped", "output 1 (level 0.95) as 0.05"),
        (RowOfLevelsFlipped, "quantile_flipped", "output 2 (level 0.8) as 0.2"),
    ],
)
def test_an_argument_in_the_wrong_space_is_named_with_its_values(setup, key, words):
    found = _read(setup())
    assert found is not None and found.system == "H1" and found.key == key, found
    assert words in found.mechanism, found.mechanism


@pytest.mark.parametrize(
    "setup",
    [
        NllOnLogSoftmax,
        NllOnLogOfSoftmax,
        SmoothedKLOnLogSoftmax,
        LogTargetGivenLogs,
        BceOnSigmoid,
        TaggerOnLogSoftmax,
        QuantilesRight,
        QuantilesDescending,
        WeightedMse,
    ],
)
def test_the_log_space_twins_are_not_flagged(setup):
    assert _read(setup()) is None


def test_rows_that_do_not_sum_to_one_are_not_probabilities():
    p = torch.rand(8, 4)  # in [0, 1], rows summing to about 2
    assert callargs.probability_rows(p, (1,)) is None
    assert callargs.probability_rows(p / p.sum(1, keepdim=True), (1,))["rows"] == 8
    assert callargs.read("mse_loss", (p, p), {}) == []


@pytest.fixture(scope="module")
def triaged():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return labkit.diagnose(NllOnSoftmax(), seeds=(0, 1))


def test_the_full_triage_convicts_nll_loss_on_a_softmax(triaged):
    conv = triaged.rows["conviction"]
    assert conv["data"].get("system") == "H1" and triaged.finding_key == callargs.KEY_PROBS
    assert "nll_loss" in conv["text"] and "log_softmax" in conv["text"]


def _strokes(n=64, seed=6):
    """Gray 10x10 'digits': a bright bar whose place is the class, on noise. (n, 1, 10, 10)."""
    g = torch.Generator().manual_seed(seed)
    x, y = 0.1 * torch.randn(n, 1, 10, 10, generator=g), torch.randint(0, 5, (n,), generator=g)
    for i in range(n):
        x[i, 0, 2 * int(y[i]) : 2 * int(y[i]) + 2] += 1.0
    return x, y


def test_channels_copied_in_every_row_are_read_and_colour_is_not():
    x, y = _strokes()
    gray3 = [(x[:32].expand(-1, 3, -1, -1), y[:32]), (x[32:].repeat(1, 3, 1, 1), y[32:])]
    found = channels.copied(gray3)  # a healthy digit set repeated to fit a 3-channel CNN
    assert found == {"channels": 3, "dim": 1, "rows": 64, "batches": 2}
    assert "exact copies of each other in every one of the 64 rows" in channels.words(found)
    last = [(x[:32].permute(0, 2, 3, 1).repeat(1, 1, 1, 3), y[:32])]  # channels last
    assert channels.copied(last)["dim"] == -1
    colour = x[:32].repeat(1, 3, 1, 1)
    colour[5, 1, 0, 0] += 0.01  # one value of one row differs
    assert channels.copied([(colour, y[:32])]) is None
    assert channels.copied([(x[:32], y[:32])]) is None  # one channel: nothing to copy
    assert channels.copied([(torch.randn(32, 3, 10, 10), y[:32])]) is None


def test_the_signing_ruler_is_the_pinball_loss_at_the_loss_own_levels():
    s, model = QuantilesRight(), QuantilesRight().make_model(0)
    batch = s.batches(0)[0]
    with torch.no_grad():
        ruler = refloss.ruled(model(batch[0]), batch, "pinball:0.25,0.5,0.75")
        assert torch.allclose(ruler, s.loss_fn(model, batch))  # the healthy twin's own loss
        assert refloss.ruled(model(batch[0]), batch, "pinball:0.1,0.9") is None  # 3 outputs
