"""The twelfth batch (issue 55, item 5): a fresh batch of kinds no earlier batch holds, each
beside a healthy twin, written in plain PyTorch before any rule of `step2_h3` .. `step6_decide`
was read, and scored at first sight (figures in docs/developer/triage-scores.md).

- the optimizer's state rebuilt inside the loop: an SGD with momentum made again at every step
  (twin: built once);
- data parallel by hand in one process: four "ranks" each backpropagate their quarter of the
  batch, the gradients are summed as `all_reduce(SUM)` leaves them and never divided by the
  world size (twin: divided);
- targets aligned wrong after a transpose: a sequence-first LM whose logits are flattened time
  first and whose targets are flattened batch first (twin: both flattened the same way);
- token ids that change between batches: a vocabulary rebuilt for every batch, in order of first
  appearance (twin: one vocabulary for the corpus);
- class ids that change between batches: a label encoder fitted per batch, in order of first
  appearance;
- features and labels paired off by one row (a header dropped from the features only);
- an augmentation that changes what the label means: a random 90-degree rotation of bar images
  whose classes are the bar's orientation (twin: a random upside-down flip, which keeps it);
- a bad init: every weight set to one constant, so the hidden units never differ (twin:
  orthogonal init);
- a weighted loss: `pos_weight=50` copied from an imbalanced project onto balanced data (twin:
  `pos_weight` set to the data's own negative/positive ratio);
- a frozen tied head: an LM whose output layer shares the embedding, frozen at its GPT-style
  init (std 0.02) "because embeddings are pretrained" (twin: the same, trainable);
- a loss reported in bits (divided by ln 2; twin: a running mean of the last ten losses).

`python -m own_setups.twelfth` (from tests/) trains each bug and its twin in plain PyTorch and
prints the loss of each trained model on all its data, clean: the bug must hurt, the twin learn.

Nothing here uses labkit but `Run.from_log`.
"""

from __future__ import annotations

import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import MLP, SmallCNN, TinyGRULM, bar_images, blob_mixture, markov_tokens, split
from .eleventh import _Blobs as _ElevenBlobs, _Plain, _gen, _log, full_data_loss
from .fourth import mlp, shuffled, tabular_regression


class _Blobs(_ElevenBlobs):
    def __init__(self):
        (self.x, self.y), _ = split(*blob_mixture(n=1280, seed=5510))


# ------------------------------------------------------------------ the optimizer's state
class SgdRebuiltEachStep(_Blobs):
    """Bug (H1): `opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)` sits inside
    the batch loop: the momentum buffer starts from zero at every step, so each step is a plain
    SGD step at lr 0.01, ten times smaller than the momentum it was tuned with."""

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    REBUILD = True

    def batch_optimizer(self, model, opt):
        return self.make_optimizer(model) if self.REBUILD else opt


class SgdBuiltOnce(SgdRebuiltEachStep):
    """Healthy: the same SGD with momentum, built once before the loop."""

    REBUILD = False


# ------------------------------------------------------------------ data parallel by hand
class _ByHandDataParallel(_Plain):
    """A regression under SGD; each batch of 32 is cut into 4 'ranks' of 8. Each rank runs its
    own backward, its gradients are kept, then summed as all_reduce(SUM) would leave them and
    divided by `self.DIVIDE` before one step."""

    WORLD, DIVIDE, LR = 4, 4, 0.1

    def __init__(self):
        self.x, self.y = tabular_regression(n=1024, seed=5520)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return mlp(8, 1)

    def make_optimizer(self, model):
        return torch.optim.SGD(model.parameters(), lr=self.LR, momentum=0.9)

    def batches(self, seed):
        return [(self.x[i], self.y[i]) for i in shuffled(len(self.x), 32, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.mse_loss(model(x).squeeze(-1), y)

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        opt = self.make_optimizer(model)
        params = list(model.parameters())
        raw, shown = [], []
        for epoch in range(epochs):
            running = 0.0
            for i, (x, y) in enumerate(self.batches(seed * 10 + epoch)):
                per_rank, losses = [], []
                for xs, ys in zip(x.chunk(self.WORLD), y.chunk(self.WORLD)):  # one rank each
                    opt.zero_grad()
                    loss = self.loss_fn(model, (xs, ys))
                    loss.backward()
                    per_rank.append([p.grad.clone() for p in params])
                    losses.append(loss.item())
                for k, p in enumerate(params):  # dist.all_reduce(p.grad, op=SUM)
                    p.grad = torch.stack([g[k] for g in per_rank]).sum(0) / self.DIVIDE
                opt.step()
                mean = sum(losses) / len(losses)
                running += mean
                raw.append(mean)
                shown.append(running / (i + 1))
        self.model = model
        return _log(raw, shown, seed, started)


class AllReduceSumNotDivided(_ByHandDataParallel):
    """Bug (H1): the summed gradients are never divided by the world size: every step is 4
    times the step of one process on the whole batch (no cross-rank check can see it: the
    'ranks' stay equal)."""

    DIVIDE = 1


class AllReduceMean(_ByHandDataParallel):
    """Healthy: the summed gradients divided by the world size, as DDP does."""


# ------------------------------------------------------------------ sequence-first alignment
class _SeqFirstGru(_Plain):
    """A GRU LM on sequence-first batches (time, batch), as PyTorch's word_language_model
    batchifies a corpus: inputs ids[:-1], targets ids[1:], both (T, B)."""

    class Model(nn.Module):
        def __init__(self, vocab=20, dim=32):
            super().__init__()
            self.embed, self.rnn = nn.Embedding(vocab, dim), nn.GRU(dim, dim)
            self.out = nn.Linear(dim, vocab)

        def forward(self, ids):  # (T, B) -> (T, B, V)
            return self.out(self.rnn(self.embed(ids))[0])

    def __init__(self):
        self.ids = markov_tokens(n=384, seed=5530)[:, :13]  # (384, 13)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return self.Model()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=5e-3)

    def batches(self, seed):
        t = self.ids.T  # (13, 384)
        return [(t[:-1, i], t[1:, i]) for i in shuffled(t.shape[1], 24, seed)]

    def flat_targets(self, y):  # y (T, B)
        return y.reshape(-1)  # time first, as the logits

    def loss_fn(self, model, batch):
        x, y = batch
        logits = model(x)  # (T, B, V)
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), self.flat_targets(y))


class SeqFirstTargetsTransposed(_SeqFirstGru):
    """Bug (H2): the targets are flattened batch first (`y.t().reshape(-1)`, copied from a
    batch-first loop) while the logits are flattened time first: each prediction is scored
    against another sequence's token at another position."""

    def flat_targets(self, y):
        return y.t().reshape(-1)


class SeqFirstFlattenedTogether(_SeqFirstGru):
    """Healthy: targets and logits flattened in the same (time, batch) order."""


# ------------------------------------------------------------------ ids that change meaning
_WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "a",
    "dog",
    "ran",
    "to",
    "park",
    "big",
    "red",
    "ball",
    "in",
    "sun",
    "and",
    "hat",
    "was",
    "my",
    "old",
]


def _first_appearance(items):
    """{item: id} in order of first appearance (what `pd.factorize` or a dict built on the fly
    gives)."""
    table: dict = {}
    for it in items:
        table.setdefault(it, len(table))
    return table


class _WordLm(_Plain):
    """A GRU LM on sentences of words; the words become ids through a vocabulary."""

    PER_BATCH = False

    def __init__(self):
        ids = markov_tokens(n=384, seed=5540)[:, :11]
        self.sentences = [[_WORDS[int(t)] for t in row] for row in ids]
        self.vocab = _first_appearance(w for s in self.sentences for w in s)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return TinyGRULM()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=5e-3)

    def batches(self, seed):
        out = []
        for i in shuffled(len(self.sentences), 24, seed):
            rows = [self.sentences[int(k)] for k in i]
            vocab = _first_appearance(w for s in rows for w in s) if self.PER_BATCH else self.vocab
            ids = torch.tensor([[vocab[w] for w in s] for s in rows])  # (24, 11)
            out.append({"input_ids": ids[:, :-1], "labels": ids[:, 1:]})
        return out

    def loss_fn(self, model, batch):
        logits = model(batch["input_ids"])
        return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())


class VocabRebuiltPerBatch(_WordLm):
    """Bug (H2): the collate function builds its vocabulary from the batch it is given: the same
    word gets another id in each batch, so no id means anything from one batch to the next."""

    PER_BATCH = True


class VocabBuiltOnce(_WordLm):
    """Healthy: one vocabulary built from the whole corpus, first appearance order."""


_NAMES = ["ash", "birch", "cedar", "elm", "fir", "oak"]


class LabelEncoderPerBatch(_Blobs):
    """Bug (H2): labels arrive as species names and are encoded per batch in order of first
    appearance (`pd.factorize(batch.species)`): class 0 is whichever species comes first in the
    batch, so a class id names another species in every batch."""

    def batches(self, seed):
        out = []
        for i in shuffled(len(self.x), 32, seed):
            names = [_NAMES[int(c)] for c in self.y[i]]
            codes = _first_appearance(names)
            out.append((self.x[i], torch.tensor([codes[n] for n in names])))
        return out


class PairedOffByOne(_Blobs):
    """Bug (H2): the CSV's header row was dropped from the features only (`x = x[1:]`,
    `y = y[:-1]`): every row is paired with its neighbour's label."""

    def __init__(self):
        super().__init__()
        self.x, self.y = self.x[1:], self.y[:-1]


# ------------------------------------------------------------------ an augmentation
class _BarsAugmented(_Plain):
    """Bar images (class 0 horizontal, 1 vertical, 2 diagonal, 3 square) under a small CNN;
    half of each batch goes through `self.augment`."""

    def __init__(self):
        self.x, self.y = bar_images(n=640, seed=5550)

    def make_model(self, seed):
        torch.manual_seed(seed)
        return SmallCNN()

    def make_optimizer(self, model):
        return torch.optim.Adam(model.parameters(), lr=3e-3)

    def augment(self, x):
        raise NotImplementedError

    def batches(self, seed):
        g = _gen(seed + 55)
        out = []
        for i in shuffled(len(self.x), 32, seed):
            x = self.x[i].clone()
            pick = torch.rand(len(i), generator=g) < 0.5
            x[pick] = self.augment(x[pick])
            out.append((x, self.y[i]))
        return out

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x), y)


class Rot90Augment(_BarsAugmented):
    """Bug (H2): a random 90-degree rotation, copied from a digit pipeline: a horizontal bar
    becomes vertical and keeps the label 'horizontal', so half of classes 0 and 1 carry the
    other class's label."""

    def augment(self, x):
        return torch.rot90(x, 1, dims=(-2, -1))


class UpsideDownAugment(_BarsAugmented):
    """Healthy: a random upside-down flip; every bar keeps its orientation (a diagonal becomes
    the other diagonal, which no other class has)."""

    def augment(self, x):
        return torch.flip(x, dims=(-2,))


# ------------------------------------------------------------------ the init
class ConstantInit(_Blobs):
    """Bug (H1): `nn.init.constant_(m.weight, 0.05)` on every Linear ('a small init'): every
    hidden unit of a layer starts equal and gets the same gradient, so the layers stay one unit
    wide."""

    def make_model(self, seed):
        model = super().make_model(seed)
        for m in model.modules():
            if isinstance(m, nn.Linear):
                self.init(m.weight)
                nn.init.zeros_(m.bias)
        return model

    def init(self, w):
        nn.init.constant_(w, 0.05)


class OrthogonalInit(ConstantInit):
    """Healthy: orthogonal init with ReLU gain, biases at zero."""

    def init(self, w):
        nn.init.orthogonal_(w, gain=nn.init.calculate_gain("relu"))


# ------------------------------------------------------------------ a weighted loss
class _Binary(_Blobs):
    """A binary task from the blobs: is the class below `self.CUT`? BCE with logits and a
    `pos_weight`."""

    CUT, POS_WEIGHT = 3, 1.0

    def __init__(self):
        super().__init__()
        self.y = (self.y < self.CUT).float()

    def make_model(self, seed):
        torch.manual_seed(seed)
        return MLP(n_out=1)

    def loss_fn(self, model, batch):
        x, y = batch
        weight = torch.tensor(self.POS_WEIGHT)
        return F.binary_cross_entropy_with_logits(model(x).squeeze(-1), y, pos_weight=weight)


class PosWeightCopied(_Binary):
    """Bug (H1): `pos_weight=50`, copied from a fraud project where positives were 2%, on data
    whose classes are balanced: the model is pushed to call nearly everything positive."""

    POS_WEIGHT = 50.0


class PosWeightMatched(_Binary):
    """Healthy (a choice): positives are one class in six, `pos_weight=5` (negatives over
    positives), as the PyTorch docs advise."""

    CUT, POS_WEIGHT = 1, 5.0


# ------------------------------------------------------------------ a frozen tied head
class _TiedLm(_Plain):
    """A GRU LM whose output layer shares the embedding (`out.weight = embed.weight`),
    initialised as GPT does (std 0.02)."""

    FREEZE = False

    class Model(nn.Module):
        def __init__(self, vocab=20, dim=32):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.rnn = nn.GRU(dim, dim, batch_first=True)
            self.out = nn.Linear(dim, vocab, bias=False)
            nn.init.normal_(self.embed.weight, std=0.02)
            self.out.weight = self.embed.weight  # tied

        def forward(self, ids):  # (B, T) -> (B, T, V)
            return self.out(self.rnn(self.embed(ids))[0])

    def __init__(self):
        self.ids = markov_tokens(n=384, seed=5560)[:, :11]

    def make_model(self, seed):
        torch.manual_seed(seed)
        model = self.Model()
        if self.FREEZE:
            model.embed.weight.requires_grad_(False)  # "the embeddings are pretrained"
        return model

    def make_optimizer(self, model):
        return torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=5e-3)

    def batches(self, seed):
        return [(self.ids[i, :-1], self.ids[i, 1:]) for i in shuffled(len(self.ids), 24, seed)]

    def loss_fn(self, model, batch):
        x, y = batch
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())


class TiedHeadFrozen(_TiedLm):
    """Bug (H1): the embedding is frozen as if pretrained, and the head is tied to it: the
    output layer stays at its random init of std 0.02, so logits stay near 0."""

    FREEZE = True


class TiedHeadTrained(_TiedLm):
    """Healthy: the same tied LM, everything trainable."""


# ------------------------------------------------------------------ the logger
class LossInBits(_Blobs):
    """Bug (H3): the progress bar divides the running epoch mean by ln 2 ('bits per sample', a
    habit from compression papers) while everything else reads nats: a constant x1.443."""

    def shown(self, running, epoch_raw):
        return running / len(epoch_raw) / math.log(2)


class WindowMean(_Blobs):
    """Healthy: the progress bar shows the mean of the last ten losses (a sliding window)."""

    def shown(self, running, epoch_raw):
        last = epoch_raw[-10:]
        return sum(last) / len(last)


TWELFTH = {
    "twelfth_h1_sgd_rebuilt_each_step": SgdRebuiltEachStep,
    "twelfth_ok_sgd_built_once": SgdBuiltOnce,
    "twelfth_h1_all_reduce_sum_not_divided": AllReduceSumNotDivided,
    "twelfth_ok_all_reduce_mean": AllReduceMean,
    "twelfth_h2_seq_first_targets_transposed": SeqFirstTargetsTransposed,
    "twelfth_ok_seq_first_flattened_together": SeqFirstFlattenedTogether,
    "twelfth_h2_vocab_rebuilt_per_batch": VocabRebuiltPerBatch,
    "twelfth_ok_vocab_built_once": VocabBuiltOnce,
    "twelfth_h2_label_encoder_per_batch": LabelEncoderPerBatch,
    "twelfth_h2_paired_off_by_one": PairedOffByOne,
    "twelfth_h2_rot90_augment": Rot90Augment,
    "twelfth_ok_upside_down_augment": UpsideDownAugment,
    "twelfth_h1_constant_init": ConstantInit,
    "twelfth_ok_orthogonal_init": OrthogonalInit,
    "twelfth_h1_pos_weight_copied": PosWeightCopied,
    "twelfth_ok_pos_weight_matched": PosWeightMatched,
    "twelfth_h1_tied_head_frozen": TiedHeadFrozen,
    "twelfth_ok_tied_head_trained": TiedHeadTrained,
    "twelfth_h3_loss_in_bits": LossInBits,
    "twelfth_ok_window_mean": WindowMean,
}

_CHANGES = ("change", "differ", "per batch", "between batches", "each batch", "every batch")
TWELFTH_EXPECTED = {
    **{name: ("NONE", []) for name in TWELFTH if name.startswith("twelfth_ok_")},
    "twelfth_h1_sgd_rebuilt_each_step": (
        "H1",
        [("optimizer",), ("rebuilt", "inside the loop", "every step", "each step", "state", "new")],
    ),
    "twelfth_h1_all_reduce_sum_not_divided": (
        "H1",
        [("sum", "world size", "rank", "divid", "average"), ("grad", "step", "update")],
    ),
    "twelfth_h2_seq_first_targets_transposed": (
        "H2",
        [("target", "label"), ("align", "order", "transpos", "flatten", "position")],
    ),
    "twelfth_h2_vocab_rebuilt_per_batch": ("H2", [("vocab", "token id", "ids"), _CHANGES]),
    "twelfth_h2_label_encoder_per_batch": (
        "H2",
        [("label", "class id"), ("encod", "mapping", "meaning", *_CHANGES)],
    ),
    "twelfth_h2_paired_off_by_one": (
        "H2",
        [("label",), ("pair", "decorrelated", "unrelated", "no signal", "carry no", "offset")],
    ),
    "twelfth_h2_rot90_augment": ("H2", [("augment", "transform"), ("label",)]),
    "twelfth_h1_constant_init": ("H1", [("init",)]),
    "twelfth_h1_pos_weight_copied": ("H1", [("weight",), ("loss",)]),
    "twelfth_h1_tied_head_frozen": (
        "H1",
        [("frozen", "requires_grad"), ("embed", "head", "tied", "out.weight")],
    ),
    "twelfth_h3_loss_in_bits": ("H3", [("bits", "ln 2", "log 2", "1.44", "scale", "divisor")]),
}
assert set(TWELFTH) == set(TWELFTH_EXPECTED)

TWINS = {
    "twelfth_h1_sgd_rebuilt_each_step": "twelfth_ok_sgd_built_once",
    "twelfth_h1_all_reduce_sum_not_divided": "twelfth_ok_all_reduce_mean",
    "twelfth_h2_seq_first_targets_transposed": "twelfth_ok_seq_first_flattened_together",
    "twelfth_h2_vocab_rebuilt_per_batch": "twelfth_ok_vocab_built_once",
    "twelfth_h2_label_encoder_per_batch": "twelfth_ok_sgd_built_once",
    "twelfth_h2_paired_off_by_one": "twelfth_ok_sgd_built_once",
    "twelfth_h2_rot90_augment": "twelfth_ok_upside_down_augment",
    "twelfth_h1_constant_init": "twelfth_ok_orthogonal_init",
    "twelfth_h1_pos_weight_copied": "twelfth_ok_pos_weight_matched",
    "twelfth_h1_tied_head_frozen": "twelfth_ok_tied_head_trained",
    "twelfth_h3_loss_in_bits": "twelfth_ok_window_mean",
}


def clean_loss(setup) -> float:
    """The trained model's loss on all of its data without the setup's own defect: the word LM
    through the corpus vocabulary, the classifiers on their true labels, the binary task
    unweighted; else `eleventh.full_data_loss`."""
    model = setup.model
    with torch.no_grad():
        if isinstance(setup, _WordLm):
            ids = torch.tensor([[setup.vocab[w] for w in s] for s in setup.sentences])
            return F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten()).item()
        if isinstance(setup, _SeqFirstGru):
            t = setup.ids.T
            return F.cross_entropy(model(t[:-1]).flatten(0, 1), t[1:].flatten()).item()
        if isinstance(setup, _Binary):
            return F.binary_cross_entropy_with_logits(model(setup.x).squeeze(-1), setup.y).item()
        if isinstance(setup, (LabelEncoderPerBatch, PairedOffByOne)):
            (x, y), _ = split(*blob_mixture(n=1280, seed=5510))
            return F.cross_entropy(model(x), y).item()
    return full_data_loss(setup)


def verify() -> None:
    """Train every bug and its twin in plain PyTorch (seeds 0 and 1), about 150 steps, and print
    each trained model's clean loss: the bug must clearly hurt, the twin must learn."""
    for bug, twin in TWINS.items():
        cells = []
        for name in (bug, twin):
            losses = []
            for seed in (0, 1):
                s = TWELFTH[name]()
                s.train(seed, max(3, min(50, math.ceil(150 / len(s.batches(seed))))))
                losses.append(clean_loss(s))
            cells.append(" ".join(f"{v:.3f}" if math.isfinite(v) else "nan" for v in losses))
        print(f"{bug:42s} {cells[0]:>16s} | twin {cells[1]}", flush=True)


if __name__ == "__main__":
    verify()
