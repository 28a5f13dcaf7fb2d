"""The scale reading (`blank.scale_rule`), written before it, on inputs the nineteenth batch does
not hold (a second set): targets multiplied by a factor the inputs do not show must convict the
data (H2); the same targets scaled right, and targets with independent noise on each coordinate,
must not, nor a forecast of several steps ahead, whose errors move together as one shift. Each case trains a small model for a few hundred steps on CPU."""

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit.diagnosis.own.step3_h2 import blank

SIZE = 32  # the length every signal is resampled to


def _peaks(n=768, seed=11, over_input=False, noise=0.0):
    """1-D signals of 32, 48 or 64 samples with two bumps, each resampled to 32. Targets: the
    bumps' positions over the signal's own length (healthy), or over 32 (the bug: a bump in the
    middle reads 0.5 or 1.0 for the same resampled signal); `noise` adds independent noise to
    each coordinate (healthy, and hard)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([32, 48, 64])[torch.randint(0, 3, (n,), generator=g)]
    x, y = torch.zeros(n, 1, SIZE), torch.zeros(n, 2)
    for i in range(n):
        length = int(lengths[i])
        at = length * torch.stack([0.1 + 0.35 * torch.rand(1, generator=g)[0],
                                   0.55 + 0.35 * torch.rand(1, generator=g)[0]])  # fmt: skip
        t = torch.arange(length).float() + 0.5
        s = sum(torch.exp(-((t - a) ** 2) / (2 * (length / 25) ** 2)) for a in at)
        s = s + 0.03 * torch.randn(length, generator=g)
        x[i] = F.interpolate(s[None, None], size=SIZE, mode="linear", align_corners=False)[0]
        y[i] = at / (SIZE if over_input else length)
    return x.flatten(1), y + noise * torch.randn(n, 2, generator=g)


def _sources(n=768, seed=12, mixed=False):
    """A table of 6 features; three positive measurements, linear in the features. With `mixed`,
    a random 40% of the rows come from a source that reports them in inches over cm (x 2.54),
    which no feature shows."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 6, generator=g)
    y = 3 + x[:, :3] + 0.5 * x[:, 3:]
    if mixed:
        y = y * torch.where(torch.rand(n, 1, generator=g) < 0.4, 2.54, 1.0)
    return x, y


def _walks(n=768, seed=13, past=12, ahead=4):
    """Random walks around a level of 10: the last `ahead` steps forecast from the `past` ones.
    The steps share the same unseen future, so their errors move together, as a shift."""
    g = torch.Generator().manual_seed(seed)
    walk = (
        10
        + 3 * torch.randn(n, 1, generator=g)
        + 0.5 * torch.randn(n, past + ahead, generator=g).cumsum(1)
    )
    return walk[:, :past], walk[:, past:]


class _Regression:
    def __init__(self, x, y, width):
        self.x, self.y, self.width = x, y, width

    def make_model(self, seed):
        torch.manual_seed(seed)
        d = self.x.shape[1]
        return nn.Sequential(
            nn.Linear(d, self.width), nn.ReLU(), nn.Linear(self.width, self.width), nn.ReLU(),
            nn.Linear(self.width, self.y.shape[1]),
        )  # fmt: skip

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x), y)

    def batches(self, seed):
        order = torch.randperm(len(self.x), generator=torch.Generator().manual_seed(seed))
        return [(self.x[i], self.y[i]) for i in order.split(64)]


def _evs(setup, steps=600):
    evs = []
    for seed in (0, 1):
        model, batches = setup.make_model(seed), setup.batches(seed)
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        for step in range(steps):
            opt.zero_grad()
            setup.loss_fn(model, batches[step % len(batches)]).backward()
            opt.step()
        replay = SimpleNamespace(models={"learner": model})
        evs.append(SimpleNamespace(replay=replay, batches=batches, setup=setup, seed=seed))
    return evs


def test_positions_over_the_input_length_convict_the_data():
    found = blank.scale_rule(_evs(_Regression(*_peaks(over_input=True), width=64)))
    assert found is not None and found.system == "H2" and found.key == "targets_scaled"


def test_positions_over_their_own_length_stay_silent():
    assert blank.scale_rule(_evs(_Regression(*_peaks(), width=64))) is None


def test_independent_noise_on_each_coordinate_stays_silent():
    assert blank.scale_rule(_evs(_Regression(*_peaks(noise=0.05), width=64))) is None


def test_units_mixed_between_sources_convict_the_data():
    found = blank.scale_rule(_evs(_Regression(*_sources(mixed=True), width=32)))
    assert found is not None and found.system == "H2"


def test_one_unit_for_every_source_stays_silent():
    assert blank.scale_rule(_evs(_Regression(*_sources(), width=32))) is None


def test_a_forecast_of_several_steps_stays_silent():
    assert blank.scale_rule(_evs(_Regression(*_walks(), width=32))) is None
