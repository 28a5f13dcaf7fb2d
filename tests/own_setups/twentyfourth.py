"""The twenty-fourth batch: a fresh batch of kinds no earlier batch holds, each beside a healthy
twin that differs by the bug's one change, written in plain PyTorch without reading any rule of
the triage (nor the tests that reveal them, nor the triage's docs), and scored at first sight.

The optimizer, the loss (H1), here:
- a heteroscedastic regressor (an MLP trunk with a mean head and a log-std head) whose
  hand-written Gaussian NLL is `0.5 * ((y - mean) / std) ** 2` without its `+ log(std)`: nothing
  holds the spread down, the std grows at every step and the loss falls toward 0 (twin: the
  term in);
- a 1-D conv encoder learning to match two augmented views of a signal with SimCLR's InfoNCE
  whose logits are `z1 @ z1.T / tau`, each view against itself: the positive is always the
  nearest, and the loss only spreads the batch apart, never pulls two views together (twin:
  `z1 @ z2.T / tau`).
The data (H2), in `twentyfourth_b.py`:
- a tabular ResNet (two pre-norm residual blocks) classifying clustered rows whose loader ends
  `np.clip(x, 0, 1)`, kept from an image loader, after the columns were standardised: every
  value below a column's mean is 0, every one a std above it is 1 (twin: no clip);
- a matrix-factorisation recommender (user and item embeddings, biases) whose loader reads
  the target as `table[:, 3]`, the rating's column in another export (user, item, timestamp,
  rating): in this one it is the timestamp, which nothing about the user or item tells (twin:
  `table[:, 2]`).
The report (H3), in `twentyfourth_b.py`:
- a causal transformer LM trained with gradient accumulation (4 micro-batches of 8 per step)
  whose logging line reads the scaled loss, `loss = loss / 4; loss.backward(); running +=
  loss.item()`: the bar shows a quarter of the loss (twin: the micro-batch's own loss logged);
- a GRU cell unrolled by hand over 15 steps, its loss the sum of the steps' cross-entropies,
  whose logging line reads `step_loss.item()`, the loop's variable, where `loss.item()` was
  meant: the bar shows the last step's loss alone, about a fifteenth of the sum (twin:
  `loss.item()`).

Every setup runs `twentythird_b._Loop` (per batch `model.train()`, the loss, zero_grad,
backward, step; Adam, batches of 32; the bar the epoch's running mean of the logged values),
but the accumulation pair, which has its own loop (one step per 4 micro-batches, the bar the
running mean over the epoch's micro-batches). The Gaussian pair changes the NLL's log-std term,
the contrastive pair the logits' second operand, the table pair the clip, the recommender pair
the target's column, the accumulation pair the logged value, the unrolled pair the name read.

Each was checked in plain PyTorch against its twin before the score (`python -m
own_setups.twentyfourth` from tests/, seeds 0 and 1, about 150 steps; each setup under 1.3 s of
CPU on one thread once torch is warm, the first setup run in a process paying about 1.5 s more):
the trained model's loss on all of its data in eval mode without the defect (the Gaussian NLL
with its log-std; the InfoNCE of a view against the other view, in batches of 32; the table
pair on the data as served, since what the model can read is the defect; the recommender's MSE
against the standardised ratings), and for the H3 pairs the last value shown over the last
epoch's mean raw loss:

    twentyfourth_h1_gaussian_nll_without_log_std      4.092 4.384 | twin -0.210 -0.212
    twentyfourth_h1_info_nce_view_against_itself      2.373 2.375 | twin 1.574 1.741
    twentyfourth_h2_standardised_features_clipped     0.245 0.271 | twin 0.083 0.053
    twentyfourth_h2_target_column_is_timestamp        1.294 1.293 | twin 0.185 0.175
    twentyfourth_h3_accumulation_scaled_loss_logged   0.787 0.788 shown/raw 0.25 0.25
                                                      | twin 0.787 0.788 shown/raw 1 1
    twentyfourth_h3_unrolled_last_step_logged         12.43 12.32 shown/raw 0.0788 0.0791
                                                      | twin 12.43 12.32 shown/raw 1 1

(The untrained encoder's InfoNCE is 3.45, ln 32 = 3.47: the self-contrasted encoder still
learns some of the views' likeness from the conv's continuity, 1.1 nats of the twin's 1.8. A
predictor of the standardised ratings' mean scores 1.0: the recommender fitted to timestamps
is worse than that. The unrolled LM's loss is a sum of 15 steps, 0.83 per step.)

First score (`python -m own_setups.score_twentyfourth`, labkit/ as at 253750a (the worktree's
base, main's head then), the setups committed at bf7aa81 before it, scored once, 45 s on a
quiet machine): 9 of 12 right system (3 of 6 bugs, 6 of 6 twins), 7 of 12 right mechanism as
the scorer counted (1 of 6 bugs, 6 of 6 twins acquitted with their references), 0 of 6
healthy convicted, 0 UNKNOWN, 0 CRASH; 3 of the 3 right convictions granted, and the 2 wrong
ones granted too. Seconds per setup, bug / twin: 2.8 / 1.7, 3.7 / 4.0, 2.3 / 2.2, 1.5 / 1.1,
4.6 / 6.6, 4.2 / 7.5.
- Gaussian NLL without its log-std: MISS, H2 (granted): "the inputs are drowned in noise: real
  and shuffled labels train alike, and the inputs' feature correlations are no stronger than
  pure noise of this shape gives (top eigenvalue 0.93x the noise edge)": the loss falls toward
  0 whatever the labels, as the std grows, so real and shuffled labels train alike; the inputs
  are 4 uniform features (no correlation to find), and nothing of the NLL's missing term;
- InfoNCE of a view against itself: MISS, H2 (granted), the same line (1.14x the noise edge):
  the second view, the "label", no longer enters the loss, so shuffling it changes nothing;
  nothing of the logits' operand;
- standardised features clipped: MISS, acquitted (NONE, "no defect found: the logger is honest
  ..., the inputs (1024 rows of 12 features) are finite, no feature is constant, ..., the
  labels carry signal ..."), its twin's line word for word;
- target column is the timestamp: H2 right, mechanism right: "the labels are decorrelated from
  the inputs: a plain loop trains alike on real and on shuffled labels (no signal), while the
  inputs themselves are structured"; no word of the column; granted;
- accumulation's scaled loss logged: H3 right, mechanism MISS as counted: "the reported value
  is the honest mean of the epoch so far times one constant scale, x0.25 at every one of the
  160 reports: the numbers are right but in other units than the loss passed to backward()":
  the scale is exact, but none of the keys written before the score ("accumulat", "scaled",
  "quarter", "constant factor", ...) is in it, nor a word of the accumulation; granted;
- unrolled RNN's last step logged: H3 right, mechanism MISS: "the reported value matches no
  honest summary of the loss passed to backward() (largest gap to the raw loss 42.1): it is
  computed from another tensor: another forward pass, the model in eval mode, or another batch
  (a validation batch?)": no word of one step of the sum; granted.
The twins: all six acquitted (NONE, "no defect found: the logger is honest ..." with their
references). The scorer prints each verdict's first 300 characters; the words above are
those. No setup broke the setup protocol; no setup was changed after the score.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .eleventh import _gen
from .nineteenth import verify as verify_batch
from .twentieth import clean_loss
from .twentyfourth_b import (
    AccumulationLossLogged,
    AccumulationScaledLossLogged,
    StandardisedFeaturesClipped,
    StandardisedFeaturesKept,
    TargetColumnIsRating,
    TargetColumnIsTimestamp,
    UnrolledLastStepLogged,
    UnrolledSumLogged,
)
from .twentythird import heteroscedastic
from .twentythird_b import _Loop


# ------------------------------------------------------- a Gaussian NLL without its log-sigma
class _GaussianHeads(nn.Module):
    """An MLP trunk with two heads: the mean and the log of the standard deviation."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.mean, self.log_std = nn.Linear(64, 1), nn.Linear(64, 1)

    def forward(self, x):  # (B, 4) -> (B,) mean, (B,) log std
        h = self.trunk(x)
        return self.mean(h)[:, 0], self.log_std(h)[:, 0]


def gaussian_nll(mean, log_std, y, with_log_std=True):
    """The Gaussian negative log-likelihood per row, without its constant:
    `0.5 * ((y - mean) / std) ** 2 + log_std` (without `with_log_std`, the first term only)."""
    nll = 0.5 * ((y - mean) * torch.exp(-log_std)) ** 2
    return (nll + log_std if with_log_std else nll).mean()


class _Heteroscedastic(_Loop):
    """The two-headed net predicts a mean and a spread for the demand, Gaussian NLL, Adam."""

    MODEL, WITH_LOG_STD = _GaussianHeads, True

    def __init__(self):
        self.x, self.y = heteroscedastic(seed=7345)

    def loss_fn(self, model, batch):
        x, y = batch
        return gaussian_nll(*model(x), y, self.WITH_LOG_STD)

    def clean_loss(self):
        """The trained net's Gaussian NLL on every row, the log-std term in."""
        with torch.no_grad():
            return gaussian_nll(*self.model(self.x), self.y).item()


class GaussianNLLWithoutLogStd(_Heteroscedastic):
    """Bug (H1): the NLL is written `0.5 * ((y - mean) / std) ** 2`, "the squared error weighed by
    the predicted variance", without its `+ log(std)`: nothing holds the spread down, every
    step widens it, the loss falls toward 0 as the std grows, and the mean's gradient shrinks
    as 1 / std ** 2."""

    WITH_LOG_STD = False


class GaussianNLLWithLogStd(_Heteroscedastic):
    """Healthy: `0.5 * ((y - mean) / std) ** 2 + log(std)`."""


# ------------------------------------------------------- a contrastive loss of a view with itself
LENGTH, TAU = 32, 0.2


def paired_views(n=1024, seed=7346):
    """Two views of each of n 1-D signals (a sum of three sines of random frequency, phase and
    amplitude): each view scaled by 0.8 to 1.2, shifted by up to 6 samples and noised (std 0.4).
    (n, 32), (n, 32)."""
    g = _gen(seed)
    t = torch.arange(LENGTH + 6).float()
    freq = 0.05 + 0.4 * torch.rand(n, 3, 1, generator=g)
    phase = 2 * math.pi * torch.rand(n, 3, 1, generator=g)
    amp = torch.rand(n, 3, 1, generator=g)
    base = (amp * torch.sin(2 * math.pi * freq * t + phase)).sum(1)  # (n, 38)

    def view():
        shift = torch.randint(0, 7, (n,), generator=g)
        rows = base[torch.arange(n)[:, None], shift[:, None] + torch.arange(LENGTH)]
        scale = 0.8 + 0.4 * torch.rand(n, 1, generator=g)
        return scale * rows + 0.4 * torch.randn(n, LENGTH, generator=g)

    return view(), view()


class _ConvEncoder(nn.Module):
    """A 1-D conv encoder and a projection head, the embedding L2-normalised."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(16, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
            nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 16),
        )  # fmt: skip

    def forward(self, x):  # (B, 32) -> (B, 16) unit embeddings
        return F.normalize(self.net(x[:, None]), dim=-1)


def info_nce(z1, z2):
    """SimCLR's InfoNCE one way: each first view's positive is its own second view, the batch's
    other second views its negatives, temperature 0.2."""
    logits = z1 @ z2.T / TAU
    return F.cross_entropy(logits, torch.arange(len(z1)))


class _Contrastive(_Loop):
    """The conv encoder learns to match each signal's two views, InfoNCE, Adam."""

    MODEL, SELF = _ConvEncoder, False

    def __init__(self):
        self.x, self.y = paired_views()

    def loss_fn(self, model, batch):
        x1, x2 = batch
        z1, z2 = model(x1), model(x2)
        return info_nce(z1, z1 if self.SELF else z2)

    def clean_loss(self):
        """The trained encoder's InfoNCE, view against other view, over the rows in batches of 32
        in order."""
        with torch.no_grad():
            z1, z2 = self.model(self.x), self.model(self.y)
            return sum(info_nce(a, b).item() for a, b in zip(z1.split(32), z2.split(32))) / 32


class InfoNCEViewAgainstItself(_Contrastive):
    """Bug (H1): `logits = z1 @ z1.T / tau` (the second `z1` meant `z2`): each view's positive is
    itself, which after the normalisation is always the nearest; the loss only pushes the
    batch's embeddings apart and never pulls a signal's two views together."""

    SELF = True


class InfoNCEViewAgainstOther(_Contrastive):
    """Healthy: `logits = z1 @ z2.T / tau`."""


TWENTYFOURTH = {
    "twentyfourth_h1_gaussian_nll_without_log_std": GaussianNLLWithoutLogStd,
    "twentyfourth_ok_gaussian_nll_with_log_std": GaussianNLLWithLogStd,
    "twentyfourth_h1_info_nce_view_against_itself": InfoNCEViewAgainstItself,
    "twentyfourth_ok_info_nce_view_against_other": InfoNCEViewAgainstOther,
    "twentyfourth_h2_standardised_features_clipped": StandardisedFeaturesClipped,
    "twentyfourth_ok_standardised_features_kept": StandardisedFeaturesKept,
    "twentyfourth_h2_target_column_is_timestamp": TargetColumnIsTimestamp,
    "twentyfourth_ok_target_column_is_rating": TargetColumnIsRating,
    "twentyfourth_h3_accumulation_scaled_loss_logged": AccumulationScaledLossLogged,
    "twentyfourth_ok_accumulation_loss_logged": AccumulationLossLogged,
    "twentyfourth_h3_unrolled_last_step_logged": UnrolledLastStepLogged,
    "twentyfourth_ok_unrolled_sum_logged": UnrolledSumLogged,
}

TWENTYFOURTH_EXPECTED = {
    **{name: ("NONE", []) for name in TWENTYFOURTH if name.startswith("twentyfourth_ok_")},
    "twentyfourth_h1_gaussian_nll_without_log_std": (
        "H1",
        [
            ("nll", "likelihood", "gaussian", "std", "sigma", "variance", "spread", "loss"),
            (
                "log",
                "normalis",
                "normaliz",
                "missing",
                "grow",
                "unbounded",
                "no floor",
                "below 0",
                "toward 0",
                "inflat",
            ),  # fmt: skip
        ],
    ),
    "twentyfourth_h1_info_nce_view_against_itself": (
        "H1",
        [
            ("contrastive", "infonce", "info_nce", "nce", "view", "positive", "pair", "logits"),
            ("itself", "self", "same", "identity", "diagonal", "trivial", "z1"),
        ],
    ),
    "twentyfourth_h2_standardised_features_clipped": (
        "H2",
        [
            ("feature", "input", "column", "clip", "clamp"),
            (
                "clip",
                "clamp",
                "saturat",
                "[0, 1]",
                "0 and 1",
                "constant",
                "lost",
                "truncat",
                "bounded",
            ),  # fmt: skip
        ],
    ),
    "twentyfourth_h2_target_column_is_timestamp": (
        "H2",
        [
            ("target", "label", "column", "rating", "timestamp"),
            (
                "timestamp",
                "wrong column",
                "decorrelated",
                "unrelated",
                "no signal",
                "noise",
                "random",
                "shuffled",
            ),  # fmt: skip
        ],
    ),
    "twentyfourth_h3_accumulation_scaled_loss_logged": (
        "H3",
        [
            (
                "accumulat",
                "micro-batch",
                "micro batch",
                "scaled",
                "divided by 4",
                "/ 4",
                "quarter",
                "factor of 4",
                "4 times",
                "constant factor",
            )
        ],  # fmt: skip
    ),
    "twentyfourth_h3_unrolled_last_step_logged": (
        "H3",
        [
            (
                "step",
                "time step",
                "last",
                "per-step",
                "one term",
                "component",
                "sum over",
                "fifteenth",
                "15",
            )
        ],  # fmt: skip
    ),
}
assert set(TWENTYFOURTH) == set(TWENTYFOURTH_EXPECTED)


def verify(names=()) -> None:
    """`nineteenth.verify` on this batch: each bug and its twin trained on seeds 0 and 1, about
    150 steps, each trained model's `clean_loss` (and for H3 the last value shown over the last
    epoch's mean raw loss): the Gaussian NLL with its log-std term, the InfoNCE of a view
    against the other view, the recommender's MSE against the ratings, else the loss on the
    data as served (the clipped table: what the model can read is the defect)."""
    verify_batch(names, TWENTYFOURTH, clean_loss)


if __name__ == "__main__":
    import sys

    verify(sys.argv[1:])
