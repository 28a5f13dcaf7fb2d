"""Issue 55's second set, written before the rules changed: labels the loss never reads are not
labels (a placeholder target is not "constant labels"), and a running mean reset every k
batches is an honest logger while a stale value and a window over the wrong count are not.

Not copies of the twenty-second batch: an autoencoder and a contrastive model with dummy
targets, a classifier whose constant labels are read (at init, and with a zero head whose
logits are uniform), and logs built by hand from a plateauing raw loss."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit import Run
from labkit.diagnosis.own.step2_h3 import logcount
from labkit.diagnosis.own.step2_h3.logger import check_logger
from labkit.diagnosis.own.step3_h2.data import describe_signal, labels_read

# ------------------------------------------------------------------ labels the loss reads


def _points(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 6, generator=g)


class _Setup:
    """The four methods `labels_read` calls; `loss_fn` differs per case."""

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Dropout(0.2), nn.Linear(8, 6))

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.1)

    def batches(self, seed):
        return [(_points(), torch.zeros(64))]


class _AutoEncoder(_Setup):
    def loss_fn(self, model, batch):
        x, _ = batch  # the dataset yields a dummy label, never read
        return F.mse_loss(model(x + 0.1 * torch.randn_like(x)), x)  # a denoising AE: noise drawn


class _Contrastive(_Setup):
    def batches(self, seed):
        return [(_points(), torch.full((64,), 7))]  # a constant dummy class id

    def loss_fn(self, model, batch):
        x, _ = batch
        a = F.normalize(model(x + 0.05 * torch.randn_like(x)), dim=1)
        b = F.normalize(model(x + 0.05 * torch.randn_like(x)), dim=1)
        return F.cross_entropy(a @ b.T / 0.1, torch.arange(len(x)))  # targets made in the loss


class _ConstantClass(_Setup):
    def batches(self, seed):
        return [(_points(), torch.full((64,), 3))]  # every example labelled 3: a real bug

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class _ConstantClassZeroHead(_ConstantClass):
    def make_model(self, seed):
        model = super().make_model(seed)
        nn.init.zeros_(model[3].weight)
        nn.init.zeros_(model[3].bias)  # uniform logits at init: the loss's value ignores y
        return model


def test_a_placeholder_target_the_loss_never_reads_is_not_read():
    for setup in (_AutoEncoder(), _Contrastive()):
        assert labels_read(setup, 0, setup.batches(0)[0]) is False
    unread = {"verdict": "unread", "why": "your loss reads no labels"}  # `rules._label_signal`
    assert describe_signal(unread).startswith("label-shuffle control: not run")


def test_constant_labels_the_loss_reads_are_read_even_where_the_logits_are_uniform():
    for setup in (_ConstantClass(), _ConstantClassZeroHead()):
        assert labels_read(setup, 0, setup.batches(0)[0]) is True


def test_labels_that_cannot_be_replaced_are_not_measured():
    class _Refuses(_ConstantClass):
        def loss_fn(self, model, batch):
            x, y = batch
            if not bool((y == 3).all()):
                raise ValueError("only class 3 here")
            return F.cross_entropy(model(x), y)

    setup = _Refuses()
    assert labels_read(setup, 0, setup.batches(0)[0]) is None  # None: convicted as before


# ------------------------------------------------------------------ a window reset every k
PER_EPOCH, EPOCHS = 32, 5
RAW = [0.77 + 0.3 * math.exp(-t / 20) + 0.04 * math.sin(1.7 * t) for t in range(160)]


def _windowed(reset, divisor=None):
    """The bar of a loop that sums the raw losses and empties the sum where `reset(t)` (before
    adding batch t), shown as sum / divisor(t, batches in the window)."""
    out, total, n = [], 0.0, 0
    for t, v in enumerate(RAW):
        if reset(t):
            total, n = 0.0, 0
        total, n = total + v, n + 1
        out.append(total / (divisor(t, n) if divisor else n))
    return out


def _read(reported):
    run = Run.from_log(
        {"step": list(range(len(RAW))), "loss_raw": RAW, "loss_reported": reported},
        seed=0,
        started_at=0.0,
    )
    return logcount.recount(run, PER_EPOCH, check_logger(run, per_epoch=PER_EPOCH))


def _every(k, over_run=False):
    return lambda t: (t if over_run else t % PER_EPOCH) % k == 0 or t % PER_EPOCH == 0


def test_a_mean_reset_every_k_batches_is_honest():
    for reset in (_every(10), _every(8, over_run=True), _every(5)):
        result = _read(_windowed(reset))
        assert result.details["agree"], result.verdict


def test_honest_means_over_the_epoch_the_run_and_an_ema_still_agree():
    ema, e = [], 0.0
    for t, v in enumerate(RAW):
        e = 0.9 * e + 0.1 * v
        ema.append(e / (1 - 0.9 ** (t + 1)))
    for reported in (_windowed(_every(PER_EPOCH)), _windowed(lambda t: t == 0), ema):
        assert _read(reported).details["agree"]


def test_a_value_repeated_from_an_earlier_window_is_still_stale():
    shown = [RAW[0]] + _windowed(_every(10))[:-1]  # the previous batch's bar, one batch late
    result = _read(shown)
    assert not result.details["agree"] and result.details["mechanism"] == "stale"


def test_a_window_over_the_wrong_count_is_named_as_a_wrong_divisor():
    result = _read(_windowed(_every(10), divisor=lambda t, n: t % PER_EPOCH + 1))
    assert not result.details["agree"] and result.details["mechanism"] == "divisor"
    assert "reset" in result.verdict and "10" in result.verdict


def test_a_forward_that_draws_its_own_noise_is_not_read_as_mixing_the_batch():
    from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
    from labkit.diagnosis.own.step6_decide.examples import mixing

    class _Sampler(nn.Module):  # a VAE's sample: noise drawn in eval mode too
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 6)

        def forward(self, x):  # (B, 6) -> (B, 6)
            return self.lin(x) + torch.randn_like(x)

    class _Noisy(_AutoEncoder):
        def make_model(self, seed):
            torch.manual_seed(seed)
            return _Sampler()

    assert mixing(SeedEvidence(_Noisy(), 0)) is None


# ------------------------------------------------------------------ a loss unbounded below
def _loss_run(raw, seed):
    from types import SimpleNamespace

    log = {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": raw}
    return SimpleNamespace(run=Run.from_log(log, seed=seed, started_at=0.0), seed=seed)


def test_a_loss_that_runs_away_below_zero_is_named_and_a_negative_nll_is_not():
    from labkit.diagnosis.own.step4_h1.lossrange import _runaway_rule

    away = [[16.0 - 3.0 * math.exp(t / (6 + s)) for t in range(120)] for s in (0, 1)]
    found = _runaway_rule([_loss_run(r, s) for s, r in enumerate(away)])
    assert found.system == "H1" and found.key == "unbounded_below"
    nll = [2.0 - 5.0 * (1 - math.exp(-t / 20)) for t in range(120)]  # a Gaussian NLL: ends at -3
    spike = [2.0 if t != 5 else -1e6 for t in range(120)]  # one bad step, then back
    for raw in (nll, spike):
        assert _runaway_rule([_loss_run(raw, 0), _loss_run(raw, 1)]) is None
