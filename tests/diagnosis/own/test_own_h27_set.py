"""The label-shuffle control's close case and the loss shown without its label smoothing, written
before the readings they test, on cases the twenty-first batch does not hold (a second set).

Label signal (`rules._label_signal`, `data.permuted_signal`): a model wide enough to memorise
noise learns shuffled labels too, so real labels beat shuffled ones on every seed by less than
three seed spreads; more label permutations then decide. A memorising MLP on noisy teacher
labels must read "signal"; the same MLP on labels drawn at random must not (it reads "none", the
conviction's verdict); numbers whose permutations spread as wide as the gap stay "unclear".
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

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
