"""Issue 55's second set for h30, written before the readings: a loss that reads the parameters
themselves (a penalty written into `loss_fn`), and an input column of integer codes read as one
number.

Not copies of the twenty-second batch (a matrix factorisation under AdamW with an L2 by hand, a
store id standardised): an SGD regression MLP with an L1 penalty by hand, an L2 on a bag-of-words
classifier's embedding table alone, a healthy MLP with a small deliberate L2, a loss that reads a
learned temperature (no norm); a weekday column standardised as a float with an effect in no
order of the days, a healthy count column of 6 levels, a binary flag and a continuous column.
No full triage here (a decision on two seeds took 12 s under load): the readings' rules run on
two seeds' evidence, and the twenty-second batch's scorer runs them in the decision."""

import time

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import labkit
from labkit.diagnosis.own import codes, penalty
from labkit.diagnosis.own.step6_decide.evidence import SeedEvidence


def _table(n=384, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    return x, x @ torch.tensor([0.8, -0.5, 0.3, 0.0, 0.6, -0.2]) + 0.1 * torch.randn(n, generator=g)


class _Regression:
    """An MLP regression, MSE, SGD; `penalty` adds what the case adds to the loss."""

    LR, BATCH = 0.05, 32

    def __init__(self):
        self.x, self.y = self.data()

    def data(self):
        return _table()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(self.x.shape[1], 32), nn.ReLU(), nn.Linear(32, 1))

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR, momentum=0.9)

    def batches(self, seed):
        order = torch.randperm(len(self.x), generator=torch.Generator().manual_seed(seed))
        return [(self.x[i], self.y[i]) for i in order.split(self.BATCH)]

    def penalty(self, model):
        return 0.0

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1), y) + self.penalty(model)

    def train(self, seed, epochs):
        started, model = time.time(), self.make_model(seed)
        opt, raw = self.make_optimizer(model), []
        for epoch in range(epochs):
            for batch in self.batches(seed * 100 + epoch):
                opt.zero_grad()
                loss = self.loss_fn(model, batch)
                loss.backward()
                opt.step()
                raw.append(loss.item())
        return labkit.Run.from_log(
            {"step": list(range(len(raw))), "loss_raw": raw, "loss_reported": raw},
            seed=seed,
            started_at=started,
        )


class _L1ByHand(_Regression):
    """Bug: `0.3 * sum(p.abs().sum())` over every parameter, against a mean over 32 rows."""

    def penalty(self, model):
        return 0.3 * sum(p.abs().sum() for p in model.parameters())


class _SmallL2(_Regression):
    """Healthy: a deliberate L2 of 1e-5 (the SGD script's weight decay, written in the loss)."""

    def penalty(self, model):
        return 1e-5 * sum(p.pow(2).sum() for p in model.parameters())


class _Temperature(_Regression):
    """Healthy: the loss reads a learned scale, `model[2].weight.exp()`: no norm penalty."""

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1) * model[2].bias.exp(), y)


class _BagOfWords(_Regression):
    """A bag-of-words classifier (EmbeddingBag, 300 words) whose loss adds an L2 on the
    embedding table alone."""

    def data(self):
        g = torch.Generator().manual_seed(1)
        ids = torch.randint(0, 300, (256, 12), generator=g)
        return ids, (ids < 150).sum(1).gt(6).long()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.EmbeddingBag(300, 16), nn.Linear(16, 2))

    def loss_fn(self, model, batch):
        ids, y = batch
        return F.cross_entropy(model(ids), y) + 1e-3 * model[0].weight.pow(2).sum()


def _evs(setup):
    return [SeedEvidence(setup, s) for s in (0, 1)]


def test_an_l1_penalty_by_hand_is_read_with_its_weight():
    s = _L1ByHand()
    found = penalty.read(s, 0, s.batches(0)[0])
    assert found["kind"] == "L1" and found["lam"] == pytest.approx(0.3, rel=1e-3)
    assert found["names"] == ["0.bias", "0.weight", "2.bias", "2.weight"]


def test_an_l2_on_one_table_reads_that_table_alone():
    s = _BagOfWords()
    found = penalty.read(s, 0, s.batches(0)[0])
    assert found["kind"] == "L2" and found["lam"] == pytest.approx(1e-3, rel=1e-3)
    assert found["names"] == ["0.weight"]


def test_a_loss_on_the_outputs_alone_or_a_learned_scale_reads_no_penalty():
    for s in (_Regression(), _Temperature()):
        assert penalty.read(s, 0, s.batches(0)[0]) is None


def test_a_large_penalty_by_hand_is_convicted_with_what_was_measured():
    found = penalty.penalty_rule(_evs(_L1ByHand()))
    assert found.system == "H1" and found.key == "penalty_dominates"
    assert "an L1 penalty" in found.mechanism and "0.3 over all 257 values" in found.mechanism
    assert "applied twice" not in found.mechanism  # SGD here has no weight_decay


def test_a_small_deliberate_l2_is_acquitted_with_its_share():
    evs = _evs(_SmallL2())
    assert penalty.penalty_rule(evs) is None
    (note,) = evs[0].results["advice"]
    assert "an L2 penalty" in note and "of the loss at init" in note
    assert "under 2x the data term without it" in note


# ------------------------------------------------------------------ codes read as numbers
def _coded(column, effect, n=512, seed=3):
    """Rows of 3 numeric features and one coded column (`column(g, n)` gives its codes),
    the target a linear mix plus `effect[code]`."""
    g = torch.Generator().manual_seed(seed)
    code = column(g, n)
    numeric = torch.randn(n, 3, generator=g)
    y = numeric @ torch.tensor([0.5, -0.3, 0.2]) + effect[code] + 0.1 * torch.randn(n, generator=g)
    c = code.float()
    return torch.cat([numeric, ((c - c.mean()) / c.std())[:, None]], 1), y


class _Weekday(_Regression):
    """Bug: the weekday (0-6) standardised as one float; its effect in no order of the days."""

    LR = 0.02

    def data(self):
        effect = torch.tensor([1.5, -1.2, 0.9, -1.6, 1.1, -0.4, 0.2])
        return _coded(lambda g, n: torch.randint(0, 7, (n,), generator=g), effect)


class _Count(_Weekday):
    """Healthy: a count of 0 to 5 (children in a household), its effect growing with it."""

    def data(self):
        return _coded(lambda g, n: torch.randint(0, 6, (n,), generator=g), 0.3 * torch.arange(6.0))


def test_the_grid_reads_codes_standardised_and_leaves_flags_and_measurements():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 20, (400,), generator=g).float()
    x = torch.stack(
        [
            (ids - ids.mean()) / ids.std(),  # a zip-code-like id, standardised: 20 levels
            torch.randint(0, 2, (400,), generator=g).float(),  # a binary flag
            torch.randn(400, generator=g),  # a measurement
            torch.randint(2015, 2025, (400,), generator=g).float(),  # a year: 10 levels
        ],
        1,
    )
    found = codes.candidates([(x, torch.zeros(400))])
    assert sorted(found) == [0, 3] and found[0][2] == 20 and found[3][:3] == (2015.0, 1.0, 10)


def test_a_weekday_read_as_a_number_is_convicted_by_the_one_hot_run():
    found = codes.codes_rule(_evs(_Weekday()))
    assert found.system == "H2" and found.key == "category_as_number"
    assert "column 3 (7 levels)" in found.mechanism and "one-hot" in found.mechanism


def test_a_count_column_is_acquitted_with_both_levels():
    evs = _evs(_Count())
    assert codes.codes_rule(evs) is None
    (note,) = evs[0].results["advice"]
    assert "column 3 (6 levels)" in note and "read as numbers, no defect" in note


class _RawYear(_Count):
    """A year (2015-2024) passed raw, its effect a trend: one-hot beats it, and so does the
    same column centred and scaled: a scale, not a category."""

    def data(self):
        g = torch.Generator().manual_seed(5)
        year = torch.randint(2015, 2025, (512,), generator=g).float()
        num = torch.randn(512, 3, generator=g)
        y = num @ torch.tensor([0.5, -0.3, 0.2]) + 0.2 * (year - 2020)
        return torch.cat([num, year[:, None]], 1), y + 0.1 * torch.randn(512, generator=g)


def test_a_raw_year_is_named_by_its_scale_not_as_a_category():
    evs = _evs(_RawYear())
    assert codes.codes_rule(evs) is None
    (note,) = evs[0].results["advice"]
    assert "column 3 (10 levels)" in note and "the gap is the columns' scale" in note


def test_rows_of_quantised_pixels_are_no_table_of_codes():
    g = torch.Generator().manual_seed(0)
    pixels = torch.randint(0, 17, (400, 64), generator=g).float()  # 8x8 digits, 0..16
    assert codes.candidates([(pixels, torch.zeros(400))]) == {}
