"""The label-shuffle control's close case and the loss shown without its label smoothing, written
before the readings they test, on cases the twenty-first batch does not hold (a second set).

Label signal (`rules._label_signal`, `data.permuted_signal`): a model wide enough to memorise
noise learns shuffled labels too, so real labels beat shuffled ones on every seed by less than
three seed spreads; more label permutations then decide. A memorising MLP on noisy teacher
labels must read "signal"; the same MLP on labels drawn at random must not (it reads "none", the
conviction's verdict); numbers whose permutations spread as wide as the gap stay "unclear".

Smoothing (`smoothing.series`, read by the logger check): a report of the cross-entropy without
the label smoothing the loss trains with must be named as that, and so must the same summed over
each row's labels; a report of the smoothed loss agrees; a report scaled by a constant or lagging
one step is not named as smoothing; plain cross-entropy fits no smoothing.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit.core.run import Run
from labkit.diagnosis.own.step1_capture.replay import _columns
from labkit.diagnosis.own.step2_h3 import smoothing
from labkit.diagnosis.own.step2_h3.logger import check_logger
from labkit.diagnosis.own.step3_h2.data import permuted_signal
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence
from labkit.diagnosis.own.step6_decide.rules import _label_signal


class _Memorise:
    """A two-layer MLP (width 256) on 128 rows of 20 features; 3 classes from a linear teacher,
    a quarter of them replaced by a random class (or, `random`, every label drawn at random),
    Adam at 1e-2, batches of 64. It memorises the shuffled labels too."""

    def __init__(self, random=False, seed=29):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(128, 20, generator=g)
        y = (self.x @ torch.randn(20, 3, generator=g)).argmax(1)
        noisy = torch.rand(128, generator=g) < 0.25
        self.y = torch.where(noisy, torch.randint(0, 3, (128,), generator=g), y)
        if random:
            self.y = torch.randint(0, 3, (128,), generator=g)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(20, 256), nn.ReLU(), nn.Linear(256, 3))

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=1e-2)

    def loss_fn(self, model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    def batches(self, seed):
        order = torch.randperm(128, generator=torch.Generator().manual_seed(seed))
        return [(self.x[i], self.y[i]) for i in order.split(64)]


def _signal(setup) -> dict:
    return _label_signal([SeedEvidence(setup, seed) for seed in (0, 1)])


def test_memorising_model_on_noisy_labels_reads_signal():
    sig = _signal(_Memorise())
    assert sig["verdict"] == "signal", sig
    assert "permuted" in sig  # decided by the further permutations, not by the seed spread


def test_memorising_model_on_random_labels_reads_no_signal():
    assert _signal(_Memorise(random=True))["verdict"] == "none"


def _close(real, shuffled, floor=0.02):
    gaps = [s - r for r, s in zip(real, shuffled)]
    spread = max(abs(real[0] - real[1]), abs(shuffled[0] - shuffled[1]))
    return {"real": real, "shuffled": shuffled, "verdict": "unclear", "gaps": gaps,
            "spread": spread, "floor": floor}  # fmt: skip


def test_permutations_as_spread_as_the_gap_stay_unclear():
    sig = permuted_signal(
        _close([0.30, 0.31], [0.40, 0.35]), [[0.28, 0.45, 0.36], [0.33, 0.40, 0.29]]
    )
    assert sig["verdict"] == "unclear"


def test_real_below_every_permutation_by_three_spreads_reads_signal():
    sig = permuted_signal(
        _close([0.20, 0.19], [0.32, 0.27]), [[0.31, 0.32, 0.30], [0.31, 0.30, 0.29]]
    )
    assert sig["verdict"] == "signal"


def test_one_permutation_below_the_real_run_stays_unclear():
    sig = permuted_signal(
        _close([0.20, 0.19], [0.32, 0.27]), [[0.31, 0.32, 0.19], [0.31, 0.30, 0.29]]
    )
    assert sig["verdict"] == "unclear"


# ---------------------------------------------------------------- the loss shown without smoothing
# A per-token tagger (an embedding and a linear head, 6 tags) over rows of 5 tokens, some
# labels -100, trained with cross-entropy under label_smoothing=0.2; 3 epochs of 8 batches. The
# logger check is given the losses `smoothing.series` computes from each step's forward
# (`replay._columns`), as `logcount` gives them on a learner's run.

PER_EPOCH = 8


def _tagged(smoothing=0.2):
    g = torch.Generator().manual_seed(3)
    torch.manual_seed(3)
    x = torch.randint(0, 20, (PER_EPOCH, 4, 5), generator=g)  # (batches, B, T)
    y = (x % 6).masked_fill(torch.rand(x.shape, generator=g) < 0.2, -100)
    model = nn.Sequential(nn.Embedding(20, 16), nn.Linear(16, 6))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    forwards, raw, plain, summed = [], [], [], []
    for step in range(3 * PER_EPOCH):
        xb, yb = x[step % PER_EPOCH], y[step % PER_EPOCH]
        out = model(xb)  # (B, T, 6)
        columns = _columns(out, (xb, yb))
        forwards.append({"step": step, "columns": columns})
        loss = F.cross_entropy(out.flatten(0, 1), yb.flatten(), label_smoothing=smoothing)
        opt.zero_grad()
        loss.backward()
        opt.step()
        raw.append(loss.item())
        plain.append(F.cross_entropy(out.flatten(0, 1), yb.flatten()).item())
        summed.append(columns["nll_rows"])
    return forwards, raw, plain, summed


def _epoch_mean(values):
    return [
        sum(values[t - t % PER_EPOCH : t + 1]) / (t % PER_EPOCH + 1) for t in range(len(values))
    ]


def _check(reported, forwards, raw):
    steps = list(range(len(raw)))
    run = Run.from_log(
        {"step": steps, "loss_raw": raw, "loss_reported": reported}, seed=0, started_at=0.0
    )
    return check_logger(run, per_epoch=PER_EPOCH, series=smoothing.series(forwards, raw))


def test_report_without_the_smoothing_is_named():
    forwards, raw, plain, _ = _tagged()
    result = _check(_epoch_mean(plain), forwards, raw)
    assert result.details["mechanism"] == "ce_unsmoothed_0.2_shown", result.verdict
    assert "label_smoothing=0.2" in result.verdict


def test_report_summed_over_each_row_is_named():
    forwards, raw, _, summed = _tagged()
    result = _check(_epoch_mean(summed), forwards, raw)
    assert result.details["mechanism"] == "ce_unsmoothed_per_row_0.2_shown", result.verdict


def test_report_of_the_smoothed_loss_agrees():
    forwards, raw, _, _ = _tagged()
    assert _check(_epoch_mean(raw), forwards, raw).details["agree"]


def test_report_scaled_or_lagging_is_not_named_as_smoothing():
    forwards, raw, _, _ = _tagged()
    for reported in ([2 * v for v in _epoch_mean(raw)], [raw[0]] + raw[:-1]):
        result = _check(reported, forwards, raw)
        assert not result.details["agree"]
        assert "smoothing" not in result.verdict, result.verdict


def test_plain_cross_entropy_fits_no_smoothing():
    forwards, raw, plain, _ = _tagged(smoothing=0.0)
    assert smoothing.series(forwards, raw) == {}


def test_labels_outside_the_outputs_range_keep_the_accuracy_alone():
    # an ordinal model: 4 outputs (cut points) against grades 0..4; the replay's forward hook
    # must not raise inside the learner's forward
    columns = _columns(torch.randn(6, 4), (None, torch.tensor([0, 4, 2, -100, 3, 1])))
    assert set(columns) == {"accuracy"}
