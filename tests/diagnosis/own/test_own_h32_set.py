"""Issue 55's second set for h32, written before the rules changed: a report that is an
exponential moving average (EMA) of the losses, honest where its bias correction counts the
EMA's own updates; a report that combines the loss's own terms with other weights.

Not copies of the twenty-third batch (a GRU seq2seq's bar, a classifier with a decoder): the
EMAs smooth the losses of an MLP regression (beta 0.98, 0.95, 0.9; reported every step or
every 4), and the weighted losses are an MLP regression trained on MSE + 0.1 * L1 of its
outputs and a three-task head (a regression, a classification and a sign, weights 1, 0.3, 2),
each logged wrongly and honestly. Before h32 every wrong one read "matches no honest summary"
(another tensor), and the honest ones past the grid, or reported at some steps, were convicted.
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import labkit
from labkit import Run
from labkit.diagnosis.own.step2_h3 import logcount
from labkit.diagnosis.own.step2_h3.logger import check_logger
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence

# ------------------------------------------------------------------ an EMA and its correction
PER_EPOCH, EPOCHS = 16, 4


def _regression_losses():
    """The raw losses of an MLP regression on a noisy sine, 4 epochs of 16 batches."""
    g = torch.Generator().manual_seed(11)
    x = torch.rand(PER_EPOCH, 16, 3, generator=g) * 4 - 2
    y = torch.sin(x.sum(-1, keepdim=True)) + 0.1 * torch.randn(PER_EPOCH, 16, 1, generator=g)
    torch.manual_seed(11)
    model = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    raw = []
    for step in range(PER_EPOCH * EPOCHS):
        loss = F.mse_loss(model(x[step % PER_EPOCH]), y[step % PER_EPOCH])
        opt.zero_grad()
        loss.backward()
        opt.step()
        raw.append(loss.item())
    return raw


RAW = _regression_losses()


def _bar(beta, count=None, from_first=False, restart=False):
    """A progress bar's EMA of RAW: kept over the run (or `restart`ed at each epoch), from 0
    (or `from_first` loss), shown divided by 1 - beta ** count(step, index in epoch)."""
    out, ema = [], 0.0
    for t, v in enumerate(RAW):
        i = t % PER_EPOCH
        if t == 0 or (restart and i == 0):
            ema = v if from_first else 0.0
        ema = beta * ema + (1 - beta) * v
        out.append(ema / (1 - beta ** count(t, i)) if count else ema)
    return out


def _read(reported, every=1):
    shown = [v if t % every == every - 1 else None for t, v in enumerate(reported)]
    run = Run.from_log(
        {"step": list(range(len(RAW))), "loss_raw": RAW, "loss_reported": shown},
        seed=0,
        started_at=0.0,
    )
    return logcount.recount(run, PER_EPOCH, check_logger(run, per_epoch=PER_EPOCH))


def test_ema_corrected_by_the_epochs_batch_count_is_named_with_its_beta():
    for every in (1, 4):
        result = _read(_bar(0.98, count=lambda t, i: i + 1), every)
        assert result.details["mechanism"] == "ema_correction", result.verdict
        assert "beta 0.98" in result.verdict and "restarts each epoch" in result.verdict
        assert "the run's step count" in result.verdict  # the counter that fixes it


def test_ema_restarted_each_epoch_but_corrected_by_the_run_is_named():
    result = _read(_bar(0.9, count=lambda t, i: t + 1, restart=True))
    assert result.details["mechanism"] == "ema_correction", result.verdict
    assert "pulled toward 0" in result.verdict


def test_honest_emas_are_acquitted_and_named():
    cases = (
        (_bar(0.98, count=lambda t, i: t + 1), 1, "bias-corrected by the run's step count"),
        (_bar(0.985, count=lambda t, i: t + 1), 4, "beta 0.985"),  # off the grid, every 4
        (_bar(0.95, from_first=True), 1, "started at the first loss, no bias correction"),
        (_bar(0.9, count=lambda t, i: i + 1, restart=True), 1, "restarted at each epoch"),
    )
    for reported, every, words in cases:
        result = _read(reported, every)
        assert result.details["agree"], result.verdict
        assert "exponential moving average" in result.verdict and words in result.verdict


def test_a_scaled_ema_is_not_read_as_an_ema():
    result = _read([1.5 * v for v in _bar(0.98, count=lambda t, i: t + 1)])
    assert not result.details["agree"]
    assert result.details["mechanism"] != "ema_correction", result.verdict


# ------------------------------------------------------------------ the loss's terms reweighed
class _TwoTerms:
    """An MLP regression trained on MSE + 0.1 * L1 of its outputs (a sparsity penalty); the
    bar shows the epoch's running mean of `shown(mse, l1, loss)`."""

    def __init__(self, shown=lambda mse, l1, loss: loss.item()):
        g = torch.Generator().manual_seed(5)
        self.x = torch.randn(8, 16, 4, generator=g)
        self.y = self.x[..., :2] * 2 + 1
        self.shown = shown

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in range(len(self.x))]

    def loss_fn(self, model, batch):
        x, y = batch
        out = model(x)
        self.parts = (F.mse_loss(out, y), out.abs().mean())
        return self.parts[0] + 0.1 * self.parts[1]

    def train(self, seed, epochs):
        model, raw, shown = self.make_model(seed), [], []
        opt = self.make_optimizer(model)
        for _ in range(epochs):
            total = 0.0
            for i, batch in enumerate(self.batches(seed)):
                loss = self.loss_fn(model, batch)
                opt.zero_grad()
                loss.backward()
                opt.step()
                raw.append(loss.item())
                total += self.shown(*self.parts, loss)
                shown.append(total / (i + 1))
        steps = list(range(len(raw)))
        return Run.from_log(
            {"step": steps, "loss_raw": raw, "loss_reported": shown}, seed=seed, started_at=0.0
        )


class _ThreeTasks(_TwoTerms):
    """A shared trunk with a regression, a 3-class and a sign head, loss 1 * mse + 0.3 * ce +
    2 * bce; `shown` gets the three terms and the loss."""

    def __init__(self, shown=lambda a, b, c, loss: loss.item()):
        super().__init__()
        g = torch.Generator().manual_seed(6)
        self.y = torch.cat([self.x[..., :1], (self.x[..., 1:2] > 0).float()], -1)
        self.c = torch.randint(0, 3, (8, 16), generator=g)
        self.shown = shown

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 5))

    def batches(self, seed):
        return [(self.x[i], self.y[i], self.c[i]) for i in range(len(self.x))]

    def loss_fn(self, model, batch):
        x, y, c = batch
        out = model(x)
        self.parts = (
            F.mse_loss(out[:, 0], y[:, 0]),
            F.cross_entropy(out[:, 1:4], c),
            F.binary_cross_entropy_with_logits(out[:, 4], y[:, 1]),
        )
        return self.parts[0] + 0.3 * self.parts[1] + 2 * self.parts[2]


def _logger(setup):
    return logcount.logger_check(SeedEvidence(setup, 0))


def test_two_term_loss_logged_as_one_term_or_unweighted_is_named():
    for shown, what in (
        (lambda mse, l1, loss: mse.item(), "one term alone"),
        (lambda mse, l1, loss: mse.item() + l1.item(), "the terms summed unweighted"),
    ):
        result = _logger(_TwoTerms(shown))
        assert result.details["mechanism"] == "terms_reweighted", result.verdict
        assert what in result.verdict and "0.1 x term 2 (mean)" in result.verdict


def test_honest_weighted_bars_agree():
    assert _logger(_TwoTerms()).details["agree"]
    assert _logger(_ThreeTasks()).details["agree"]


def test_the_loss_passed_to_backward_is_read_only_while_it_is_a_sum():
    class _Plain(_TwoTerms):
        def loss_fn(self, model, batch):
            self.parts = (F.mse_loss(model(batch[0]), batch[1]), torch.tensor(0.0))
            return self.parts[0]

    ev = SeedEvidence(_Plain(), 0)
    assert ev.replay.terms is None  # one term: the replay stopped at the first step
    assert ev.replay.setup.loss_fn.__func__ is _Plain.loss_fn  # the wrapper is gone


@pytest.fixture(scope="module")
def three_tasks_wrong():
    """One full triage: the three-task head whose logger weighs its terms 1, 0.3, 1."""
    setup = _ThreeTasks(lambda a, b, c, loss: a.item() + 0.3 * b.item() + c.item())
    return labkit.diagnose(setup, seeds=(0, 1))


def test_three_tasks_logged_with_the_wrong_weights_are_convicted_by_their_weights(
    three_tasks_wrong,
):
    conv = three_tasks_wrong.rows["conviction"]["data"]
    assert conv["system"] == "H3", conv
    assert three_tasks_wrong.finding_key == "terms_reweighted", conv
    words = conv["mechanism"]
    assert "the terms with other weights" in words, words
    assert "0.3 x term 2 (cross_entropy)" in words and "2 x term 3" in words, words


def test_a_report_held_at_each_epochs_first_loss_is_not_named_an_ema():
    """The first batch's loss of each epoch shown for the whole epoch is a held value: an EMA
    with beta near 1 started at the first loss reproduces it too, and named it an honest
    average, so `fresh_h3_first_batch_logged` went from H3 stale to UNKNOWN."""
    from labkit.diagnosis.own.step2_h3 import ema
    from labkit.diagnosis.probes import ProbeResult

    raw = [2.0 * 0.97**t + 0.05 * ((t * 7919) % 13) / 13 for t in range(60)]
    per_epoch = 10
    rep = [raw[t - t % per_epoch] for t in range(60)]
    rows = list(range(60))
    starts = [t - t % per_epoch for t in range(60)]
    assert ema.held(raw, rep, rows, starts)
    assert ema.honest(raw, rep, rows, starts) is None
    stale = ProbeResult("logger", "disagree: stale", {"mechanism": "stale"})
    assert ema.reread(stale, raw, rep, rows, per_epoch) is None
    honest = ema.shown(raw, 0.9, ("zero", "run", "run"), starts)  # a real EMA moves
    assert not ema.held(raw, honest, rows, starts)
    assert "beta 0.9" in ema.honest(raw, honest, rows, starts)
