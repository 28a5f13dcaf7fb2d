"""The eighteenth batch: a fresh batch of kinds no earlier batch holds, each beside a healthy
twin that differs by the bug's one change, written in plain PyTorch without reading any rule of
the triage (nor the tests that reveal them, nor the triage's docs), and scored at first sight.

The model, the loss (H1):
- a Transformer encoder classifier whose `self.pos = nn.Embedding(10, 32)` is built but never
  added in `forward` (`h = self.embed(ids)`): with mean pooling the model sees a bag of events,
  and the label is the group of the FIRST event (twin: `h = self.embed(ids) + self.pos(...)`);
- a multi-label tagger (6 independent tags, about half of them on per row) trained with
  `F.cross_entropy(logits, tags.float())`, which takes the multi-hot rows as class
  probabilities and fits one softmax over the tags (twin: `binary_cross_entropy_with_logits`).
The data (H2), in `eighteenth_b.py`:
- a segmentation data set whose image and mask each get a `RandomHorizontalFlip(0.5)`: two
  random draws, so half the masks mark the arrow's mirror image (twin: one draw for both);
- a GRU topic classifier whose vocabulary is built from the texts as written while the
  tokenizer looks every word up lower-cased: each capitalised word (the topic's names) becomes
  UNK (twin: the vocabulary built from the lower-cased texts).
The report (H3), in `eighteenth_b.py`:
- a 1-D conv amplitude regressor whose bar shows `math.sqrt(running / (i + 1))`, the RMSE,
  as its "loss" (twin: the running MSE);
- a three-output tabular regression whose bar shows `per_target[0]`, the first target's MSE,
  as its "loss" (twin: `per_target.mean()`).

Each was checked in plain PyTorch against its twin before the score (`python -m
own_setups.eighteenth` from tests/, seeds 0 and 1, 5 epochs of 32 batches, 160 steps, each setup
under 1 s on one thread once torch is warm): the trained model's loss on all of its data with
the true labels (the masks against the unflipped images, the texts as served, the tags through
one sigmoid each, the houses' MSE over the three targets), and for the H3 pairs the last value
shown over the last epoch's mean raw loss:

    eighteenth_h1_positions_never_added             1.244 1.258 | twin 0.003 0.002
    eighteenth_h1_multilabel_softmax_cross_entropy  0.378 0.382 | twin 0.096 0.097
    eighteenth_h2_flips_drawn_apart                 0.134 0.125 | twin 0.004 0.005
    eighteenth_h2_vocab_cased_lookup_lowered        0.481 0.485 | twin 0.001 0.001
    eighteenth_h3_rmse_shown_as_loss                0.005 0.005 shown/raw 14 13.8
                                                    | twin 0.005 0.005 shown/raw 1 1
    eighteenth_h3_first_target_shown                0.126 0.118 shown/raw 0.1 0.103
                                                    | twin 0.126 0.118 shown/raw 1 1

(The events' chance level is ln 4 = 1.386; a model that sees the bag of events and not their
order still reads which groups are frequent, hence 1.24. The tagger's softmax-trained logits
read through sigmoids give 0.38 against the binary cross-entropy's 0.10. The cased vocabulary
leaves the two cue words, each the topic's own with probability 0.4.) These are the first
run's numbers: no setup was changed after it.

First score (`python -m own_setups.score_eighteenth`, labkit/ as at 617e192, the setups
committed at 06fe7c5 before it, scored once, 57 s): 7 of 12 right system (2 of 6 bugs, 5 of 6
twins), 6 of 12 right mechanism on a strict reading, as the scorer counted too (1 of 6 bugs, 5
of 6 twins acquitted with their references), 1 of 6 healthy convicted (5 acquitted, each NONE),
0 UNKNOWN; the 2 right convictions granted (and the healthy twin's false conviction granted too).
- positions never added: MISS, acquitted (NONE, "no defect found: ... the labels carry signal
  (real beat shuffled by more than the seed spread), all 27 tensors [your loss depends on]"):
  the unused position table is silently left out of that count (28 in the twin's line);
- multi-label under softmax cross-entropy: MISS, acquitted (NONE, "... the labels carry signal
  ..., all 6 tensors your loss depends on ...");
- flips drawn apart: MISS, acquitted (NONE, "... the labels carry signal ...");
- cased vocabulary, lowered lookup: MISS, acquitted (NONE, "... the labels carry signal ...");
- RMSE shown as the loss: H3 right, "the reported value is the square root of the honest mean
  of the epoch so far at every one of the 160 reports (a root-mean-square, sqrt(loss), shown as
  the loss)": right;
- first target shown: H3 right, mechanism MISS: "matches no honest summary of the loss passed
  to backward() (largest gap to the raw loss 0.492): it is computed from another tensor: another
  forward pass, the model in eval mode, or another batch (a validation batch?)": one output's
  error out of three not named (the helper does run a second forward pass, under no_grad on the
  same batch and weights, so "another forward pass" is literally so, but not the mechanism);
- the MSE twin of the RMSE bug (healthy, the running MSE shown): CONVICTED, H2 "the labels are
  decorrelated from the inputs: a plain loop trains alike on real and on shuffled labels (no
  signal), while the inputs themselves are structured", verdict granted; its trained model's
  MSE is 0.005 on both seeds against the amplitudes' variance of 1.5^2 / 12 = 0.19.
The scorer prints each verdict's first 300 characters; the words above are those. No setup broke
the setup protocol; no setup was changed after the score.

Nothing here uses labkit but `Run.from_log` (through `eleventh._log`).
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .eighteenth_b import (
    FirstTargetShown,
    FlipsDrawnApart,
    FlipsDrawnTogether,
    MeanOverTargetsShown,
    MseShown,
    RmseShownAsLoss,
    VocabCasedLookupLowered,
    VocabLowered,
    _Houses,
    _Segmentation,
    _Topics,
)
from .eleventh import _gen, _Plain, full_data_loss
from .fourth import shuffled


# ------------------------------------------------------------------ positions never added
def event_sequences(n=1024, seed=6001, length=10):
    """Sequences of 10 event ids (0..7); the label is the group (id // 2) of the first event."""
    ids = torch.randint(0, 8, (n, length), generator=_gen(seed))
    return ids, ids[:, 0] // 2


class _EventEncoder(nn.Module):
    ADD_POSITIONS = True

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(8, 32)
        self.pos = nn.Embedding(10, 32)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 4)

    def forward(self, ids):  # (B, 10) -> (B, 4)
        h = self.embed(ids)
        if self.ADD_POSITIONS:
            h = h + self.pos(torch.arange(ids.shape[1]))
        return self.head(self.encoder(h).mean(1))


class _NoPositions(_EventEncoder):
    ADD_POSITIONS = False


class _Events(_Plain):
    """A 2-layer Transformer encoder (mean-pooled) classifies event sequences, AdamW."""

    MODEL = _EventEncoder

    def __init__(self):
        self.x, self.y = event_sequences()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return self.MODEL()

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class PositionsNeverAdded(_Events):
    """Bug (H1): `forward` starts `h = self.embed(ids)`; the position table is built, never
    added. Attention and the mean pooling are blind to order: the first event cannot be told
    from the others."""

    MODEL = _NoPositions


class PositionsAdded(_Events):
    """Healthy: `h = self.embed(ids) + self.pos(torch.arange(T))`."""


# ------------------------------------------------------------------ multi-label under softmax
def tagged_rows(n=1024, seed=6002, tags=6):
    """16 features; each of 6 tags is on where its own linear score is above 0 (independent)."""
    g = _gen(seed)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, tags, generator=g)
    return x, (x @ w + 0.3 * torch.randn(n, tags, generator=g) > 0).long()


class _Tagger(_Plain):
    """An MLP tagger with one logit per tag, Adam; a row may hold any number of tags."""

    def __init__(self):
        self.x, self.y = tagged_rows()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                             nn.Linear(64, 6))  # fmt: skip

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, tags = batch
        return F.binary_cross_entropy_with_logits(model(x), tags.float())

    def clean_loss(self):
        """Each tag's probability as the tagger's users read it, sigmoid(logit), against the
        tags: the binary cross-entropy over every row."""
        with torch.no_grad():
            return F.binary_cross_entropy_with_logits(self.model(self.x), self.y.float()).item()


class MultiLabelSoftmaxCrossEntropy(_Tagger):
    """Bug (H1): `F.cross_entropy(logits, tags.float())`: PyTorch reads float targets of the
    logits' shape as class probabilities, so the multi-hot rows train one softmax over the 6
    tags; nothing asks each tag's logit to say on or off."""

    def loss_fn(self, model, batch):
        x, tags = batch
        return F.cross_entropy(model(x), tags.float())


class MultiLabelBinaryCrossEntropy(_Tagger):
    """Healthy: `F.binary_cross_entropy_with_logits(logits, tags.float())`, one sigmoid a tag."""


EIGHTEENTH = {
    "eighteenth_h1_positions_never_added": PositionsNeverAdded,
    "eighteenth_ok_positions_added": PositionsAdded,
    "eighteenth_h1_multilabel_softmax_cross_entropy": MultiLabelSoftmaxCrossEntropy,
    "eighteenth_ok_multilabel_binary_cross_entropy": MultiLabelBinaryCrossEntropy,
    "eighteenth_h2_flips_drawn_apart": FlipsDrawnApart,
    "eighteenth_ok_flips_drawn_together": FlipsDrawnTogether,
    "eighteenth_h2_vocab_cased_lookup_lowered": VocabCasedLookupLowered,
    "eighteenth_ok_vocab_lowered": VocabLowered,
    "eighteenth_h3_rmse_shown_as_loss": RmseShownAsLoss,
    "eighteenth_ok_mse_shown": MseShown,
    "eighteenth_h3_first_target_shown": FirstTargetShown,
    "eighteenth_ok_mean_over_targets_shown": MeanOverTargetsShown,
}

EIGHTEENTH_EXPECTED = {
    **{name: ("NONE", []) for name in EIGHTEENTH if name.startswith("eighteenth_ok_")},
    "eighteenth_h1_positions_never_added": (
        "H1",
        [
            ("position", "pos.weight", "self.pos"),
            (
                "never added",
                "not added",
                "unused",
                "never used",
                "order",
                "permutation",
                "never receive",
                "no gradient",
            ),
        ],
    ),
    "eighteenth_h1_multilabel_softmax_cross_entropy": (
        "H1",
        [
            ("multi-label", "multilabel", "multi-hot", "several tags", "more than one"),
            (
                "softmax",
                "cross_entropy",
                "cross-entropy",
                "sigmoid",
                "bce",
                "binary",
                "independent",
            ),
        ],
    ),
    "eighteenth_h2_flips_drawn_apart": (
        "H2",
        [
            ("flip", "augment", "transform"),
            ("mask", "target"),
            (
                "separate",
                "independent",
                "apart",
                "differ",
                "mismatch",
                "mirror",
                "not the same",
                "two draws",
            ),
        ],
    ),
    "eighteenth_h2_vocab_cased_lookup_lowered": (
        "H2",
        [
            ("vocab", "token", "unk", "case"),
            ("unk", "unknown", "lower", "case", "out-of-vocab", "out of vocab"),
        ],
    ),
    "eighteenth_h3_rmse_shown_as_loss": (
        "H3",
        [("rmse", "square root", "sqrt", "root of", "root mean")],
    ),
    "eighteenth_h3_first_target_shown": (
        "H3",
        [
            (
                "first target",
                "first output",
                "one target",
                "one output",
                "one of the outputs",
                "one of the targets",
                "first column",
                "[0]",
                "per_target",
                "per-target",
                "single target",
                "single output",
            )
        ],
    ),
}
assert set(EIGHTEENTH) == set(EIGHTEENTH_EXPECTED)

TWINS = dict(zip(list(EIGHTEENTH)[::2], list(EIGHTEENTH)[1::2]))


def clean_loss(setup) -> float:
    """The trained model's loss on all of its data, true labels, without the setup's defect:
    the masks against the unflipped images, the texts as served (their ids are the defect's
    only trace), the tags under one sigmoid each; else `eleventh.full_data_loss` on the true
    (x, y) pairs. For the H3 bugs the defect is in the report: this is the trained model's
    loss, and `shown/raw` tells the report's harm."""
    setup.model.eval()
    if isinstance(setup, _Segmentation | _Topics | _Tagger):
        return setup.clean_loss()
    if isinstance(setup, _Houses):
        with torch.no_grad():
            return F.mse_loss(setup.model(setup.x), setup.y).item()
    return full_data_loss(setup)


def verify(names=()) -> None:
    """Train every bug and its twin in plain PyTorch (seeds 0 and 1), about 150 steps, and print
    each trained model's clean loss: the bug must clearly hurt, the twin must learn. For the H3
    setups each cell also gives the last value shown over the last epoch's mean raw loss."""
    import time

    for bug, twin in TWINS.items():
        if names and not any(n in bug for n in names):
            continue
        cells = []
        for name in (bug, twin):
            losses, ratios, seconds = [], [], []
            for seed in (0, 1):
                started = time.time()
                s = EIGHTEENTH[name]()
                n = len(s.batches(seed))
                run = s.train(seed, max(3, min(50, math.ceil(150 / n))))
                seconds.append(time.time() - started)
                losses.append(clean_loss(s))
                raw, shown = run.table["loss_raw"], run.table["loss_reported"]
                ratios.append(shown[-1] / (sum(raw[-n:]) / n))
            cell = " ".join(f"{v:.3f}" if math.isfinite(v) else "nan" for v in losses)
            if bug.startswith("eighteenth_h3_"):
                cell += " shown/raw " + " ".join(f"{r:.3g}" for r in ratios)
            cell += f" ({max(seconds):.1f} s)"
            cells.append(cell)
        print(f"{bug:48s} {cells[0]:>28s} | twin {cells[1]}", flush=True)


if __name__ == "__main__":
    import sys

    verify(sys.argv[1:])
