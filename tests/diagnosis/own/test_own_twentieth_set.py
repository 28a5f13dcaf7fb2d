"""The readings added from the twentieth batch's misses, written before each reading, on inputs
that batch does not hold (a second set): each must fire on its defect and stay silent on the
healthy look-alikes beside it (no training here but a few steps: each reading is a function of
a model and its batches, or of the replay of a short loop)."""

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

from labkit.diagnosis.own.step1_capture.replay import Replay
from labkit.diagnosis.own.step3_h2 import data
from labkit.diagnosis.own.step4_h1 import padding
from labkit.diagnosis.own.step5_sign import refloss
from labkit.diagnosis.own.step6_decide import gaps, neighbours, padsides


# ------------------------------------------------------------------ labels a loss ignores
class _Tagger(nn.Module):
    """A token tagger: an embedding and a linear head, (B, T) ids -> (B, T, 4) logits."""

    def __init__(self):
        super().__init__()
        self.embed, self.head = nn.Embedding(12, 8, padding_idx=0), nn.Linear(8, 4)

    def forward(self, ids):  # (B, T) -> (B, T, 4)
        return self.head(self.embed(ids))


def _tags(sentinel: int, rows=32, length=10, side="right"):
    """Ids 1..11 padded with 0, tags 0..3 (mostly 0) padded with `sentinel`, both on `side`."""
    g = torch.Generator().manual_seed(5)
    ids, tags = torch.zeros(rows, length, dtype=torch.long), torch.full((rows, length), sentinel)
    for i in range(rows):
        n = int(torch.randint(3, length - 2, (1,), generator=g))
        at = slice(0, n) if side == "right" else slice(length - n, length)
        ids[i, at] = torch.randint(1, 12, (n,), generator=g)
        tags[i, at] = torch.where(ids[i, at] < 6, 0, ids[i, at] % 4)
    return ids, tags


class _Tagging:
    """Cross-entropy that ignores `ignore` (-100 by default), or a mask that drops -1 tags."""

    def __init__(self, sentinel: int):
        self.sentinel = sentinel

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _Tagger()

    def loss_fn(self, model, batch):
        ids, tags = batch
        out = model(ids)
        if self.sentinel == -100:
            return F.cross_entropy(out.flatten(0, 1), tags.flatten(), ignore_index=-100)
        keep = tags >= 0  # a mask, where the loop marks padding with -1
        return F.cross_entropy(out[keep], tags[keep])


def test_the_padding_check_leaves_out_the_labels_a_loss_ignores():
    for sentinel in (-100, -1):
        setup = _Tagging(sentinel)
        ev = SimpleNamespace(setup=setup, seed=0, batches=[_tags(sentinel)])
        at_pad, at_real, loss, kept = padding._counted(ev, 0)  # raised IndexError before
        assert at_pad == 0 and at_real > 0 and kept is not None, sentinel


def test_the_reference_loss_over_real_tokens_leaves_out_negative_labels():
    ids, tags = _tags(-100)
    out = _Tagger()(ids)
    value = refloss.unpadded(out, (ids, tags), 0)  # raised IndexError before
    keep = (tags >= 0) & (tags != 0)
    assert torch.allclose(value, F.cross_entropy(out[keep], tags[keep]))


# ------------------------------------------------------------------ signal the mean does not show
class _Loop:
    """A plain loop's result as `data.label_signal` reads it: its losses, flowing gradients."""

    def __init__(self, start, end, until=0.3, steps=100):  # reaches `end` at `until` of the run
        self.losses = [start + (end - start) * min(1.0, t / (until * steps)) for t in range(steps)]
        self.grad_norms, self.update_norms = [1.0] * steps, [0.1] * steps

    @property
    def mean(self):
        return sum(self.losses) / len(self.losses)

    def level(self, frac=0.2):
        tail = self.losses[-int(len(self.losses) * frac) :]
        return sum(tail) / len(tail)


def test_runs_whose_ends_all_sit_apart_are_not_read_as_no_signal():
    # one seed learns fast, the other slowly: the whole-run means spread wide, the ends do not
    real = [_Loop(1.1, -0.2, until=0.8), _Loop(1.2, -0.5, until=0.1)]
    shuffled = [_Loop(1.1, 0.4, until=0.8), _Loop(1.2, 0.3, until=0.1)]
    sig = data.label_signal(real, shuffled)
    assert sig["verdict"] != "none" and "apart" in sig
    # the same shapes with the shuffled runs ending among the real ones stay "no signal"
    alike = [_Loop(1.1, -0.1, until=0.8), _Loop(1.2, -0.4, until=0.1)]
    assert data.label_signal(real, alike)["verdict"] == "none"


def _branches(n=600, seed=1, mean_only=False):
    """y = +-f(x) on two branches (its mean 0 at every x), or y drawn apart from x."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g) * 2 - 1
    sign = torch.where(torch.rand(n, generator=g) < 0.5, 1.0, -1.0)
    y = sign * (0.3 + x[:, 0].abs() + 0.5 * x[:, 1] ** 2)
    if mean_only:
        y = y[torch.randperm(n, generator=g)]
    return [(x[i : i + 50], y[i : i + 50]) for i in range(0, n, 50)]


def test_neighbours_place_two_branch_targets_and_not_targets_drawn_apart():
    found = neighbours.reading(_branches())
    assert found["shuffled"] - found["real"] > 2 * neighbours.GAP
    apart = neighbours.reading(_branches(mean_only=True))
    assert apart["shuffled"] - apart["real"] < neighbours.GAP
    tags = [(torch.randn(50, 3), torch.randint(0, 3, (50,))) for _ in range(12)]
    assert neighbours.reading(tags) is None  # class ids: the control's loss is a likelihood


class _Mixture(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(2, 3 * 2)

    def forward(self, x):  # (B, 2) -> three (B, 2): weights' logits, means, log-stds
        return self.net(x).chunk(3, -1)


class _MixtureLoss:
    def __init__(self, logsumexp: bool):
        self.logsumexp = logsumexp

    def make_model(self, seed):
        torch.manual_seed(seed)
        return _Mixture()

    def loss_fn(self, model, batch):
        x, y = batch
        logits, mu, log_sd = model(x)
        terms = F.log_softmax(logits, -1) - log_sd - 0.5 * ((y[:, None] - mu) / log_sd.exp()) ** 2
        return -(torch.logsumexp(terms, -1) if self.logsumexp else terms.sum(-1)).mean()


def test_a_mixture_summed_over_its_logs_is_told_from_one_under_logsumexp():
    batch = _branches()[0]
    summed = neighbours._graph_ops(_MixtureLoss(False), 0, batch)
    assert "LogSoftmaxBackward0" in summed and "LogsumexpBackward0" not in summed
    assert "LogsumexpBackward0" in neighbours._graph_ops(_MixtureLoss(True), 0, batch)


# ------------------------------------------------------------------ ids and labels padded apart
def _dict_batches(ids_side, labels_side, subwords=False):
    """Dict batches of a subword tagger: ids padded on `ids_side` with 0, labels (-100 on the
    padding and, with `subwords`, on every second piece of a word) on `labels_side`."""
    out = []
    for b in range(4):
        ids, _ = _tags(-100, side=ids_side)
        ids = ids.roll(b, 0)
        labels = torch.full_like(ids, -100)
        for i in range(len(ids)):
            real = ids[i][ids[i] != 0]
            tags = real % 3
            if subwords:
                tags[1::2] = -100
            n = len(real)
            at = slice(0, n) if labels_side == "right" else slice(len(ids[i]) - n, None)
            labels[i, at] = tags
        out.append({"input_ids": ids, "labels": labels})
    return out


def test_ids_and_labels_padded_on_opposite_sides_are_read():
    found = padsides.reading(_dict_batches("left", "right"))
    assert found["apart"] == 1 and found["ids_side"] == "left" and found["pad"] == 0
    assert found["scored_on_pad"] > 0.5
    moved = padsides.realigned_batches(_dict_batches("left", "right"), 0)
    assert padsides.reading(moved)["apart"] == 0
    assert torch.equal(moved[0]["labels"], _dict_batches("left", "left")[0]["labels"])


def test_ids_and_labels_padded_alike_are_not_read():
    for side in ("left", "right"):
        for subwords in (False, True):  # -100 on word pieces inside the row too
            found = padsides.reading(_dict_batches(side, side, subwords))
            assert found["apart"] == 0 and found["scored_on_pad"] == 0, (side, subwords)
    no_ignored = [(ids, ids % 3) for ids, _ in [_tags(-100)] * 3]  # every position scored
    assert padsides.reading(no_ignored) is None


# ------------------------------------------------------------------ BatchNorm on micro-batches
def _accumulated(piece: int, norm: bool):
    """Three steps of a conv net (BatchNorm2d or GroupNorm) on batches of 8 images, the
    gradient accumulated over pieces of `piece` images, as the replay sees them."""
    torch.manual_seed(0)
    layer = nn.BatchNorm2d(4) if norm else nn.GroupNorm(1, 4)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), layer, nn.ReLU(), nn.Flatten(), nn.Linear(144, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 2, (8,))
    with Replay() as rp:
        for _ in range(3):
            opt.zero_grad()
            for xs, ys in zip(x.split(piece), y.split(piece)):
                (F.cross_entropy(model(xs), ys) * len(xs) / len(x)).backward()
            opt.step()
    return gaps._norm_pieces(SimpleNamespace(replay=rp, sizes=[8, 8, 8]))


def test_batchnorm_fed_micro_batches_of_one_is_named():
    found = _accumulated(1, norm=True)
    assert "BatchNorm" in found and "micro-batch of one" in found and "1" in found


def test_batchnorm_on_larger_pieces_or_groupnorm_on_one_is_not_named():
    assert _accumulated(4, norm=True) is None and _accumulated(8, norm=True) is None
    assert _accumulated(1, norm=False) is None


# ------------------------------------------------------------------ a series shuffled, then cut
def _windows(shuffle_first: bool, n=300, width=12):
    """(N, 12) windows of a noisy two-tone series and the value after each, in batches of 30;
    with `shuffle_first`, the series' steps are permuted before the windows are cut."""
    g = torch.Generator().manual_seed(2)
    t = torch.arange(n + width).double()
    s = torch.sin(t / 5) + 0.3 * torch.cos(t / 2) + 0.1 * torch.randn(len(t), generator=g)
    if shuffle_first:
        s = s[torch.randperm(len(s), generator=g)]
    x, y = s.unfold(0, width, 1)[:-1].float(), s[width:].float()
    order = torch.randperm(n, generator=g)
    return [(x[order[i : i + 30]], y[order[i : i + 30]]) for i in range(0, n, 30)]


def test_windows_of_a_series_shuffled_before_it_was_cut_are_named():
    assert "windows cut from one series" in data.series_order(_windows(True))


def test_windows_cut_in_order_and_rows_that_are_not_windows_are_not_named():
    assert data.series_order(_windows(False)) is None  # neighbours correlated
    g = torch.Generator().manual_seed(3)
    rows = [(torch.randn(30, 12, generator=g), torch.randn(30, generator=g)) for _ in range(10)]
    assert data.series_order(rows) is None  # white, but no window is another's shift
