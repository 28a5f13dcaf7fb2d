"""A second set for the transform readings (issue 55, item 3; `step3_h2.transform`), written
before the rules were wired in and unlike the setups they were written against (the eleventh's
sign flip, the twenty-first's mixup and rows standardised): other models' data, other
transforms, each bug beside a healthy look-alike.

Bugs: a horizontal flip of images whose label names the side a blob is on; cutmix that pastes
another image's half while the label stays; each row scaled to unit L2 norm where the target is
the row's magnitude (a regression) or its size class. Healthy: the same flip on a label that
names the top or the bottom (a flip keeps it); mixup with its targets mixed; rows scaled to unit
norm where the label is the largest feature (the scale does not set it); one-hot rows (all of one
norm, and no normalisation). Each reading runs on small tensors, without a triage."""

import torch

from labkit.diagnosis.own.step3_h2 import transform

N = 512


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _blobs(side_label: bool, seed=2601):
    """(N, 1, 8, 8) images, one bright 2x2 blob on a dark noisy ground; the label is the blob's
    side, left (0) or right (1), or else its half, top (0) or bottom (1)."""
    g = _gen(seed)
    x = 0.1 * torch.randn(N, 1, 8, 8, generator=g)
    row = torch.randint(0, 7, (N,), generator=g)
    col = torch.randint(0, 7, (N,), generator=g)
    for i in range(N):
        x[i, 0, row[i] : row[i] + 2, col[i] : col[i] + 2] += 1.0
    y = (col >= 3.5).long() if side_label else (row >= 3.5).long()
    keep = (col != 3) if side_label else (row != 3)  # no blob across the middle
    return x[keep], y[keep]


class _Table:
    """What the readings see of a setup: its table as attributes, and `batches(seed)`."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def augment(self, x, y, g):
        return x, y

    def batches(self, seed):
        g, order = _gen(100 + seed), torch.randperm(len(self.x), generator=_gen(seed))
        return [self.augment(self.x[i], self.y[i], g) for i in order.split(32)]


class _HFlip(_Table):
    def augment(self, x, y, g):
        flip = torch.rand(len(x), generator=g) < 0.5
        return torch.where(flip[:, None, None, None], x.flip(-1), x), y


def _gap(setup, seed=0):
    r = transform.augmented(setup, setup.batches(seed))
    return r["given"] - r["raw"], r


def test_a_flip_of_a_label_that_names_the_side_places_the_table_worse():
    gap, r = _gap(_HFlip(*_blobs(side_label=True)))
    assert r["kept"] and gap > 2 * transform.GAP, r


def test_a_flip_that_keeps_the_label_places_it_as_well_as_the_table():
    gap, r = _gap(_HFlip(*_blobs(side_label=False)))
    assert abs(gap) < 0.5 * transform.GAP, r


def _stripes(seed=2602):
    """(N, 1, 8, 8) images of 4 kinds: a bright row band in the top or bottom half, or a
    column band in the left or right half, on noise; (N, 4) one-hot targets."""
    g = _gen(seed)
    x = 0.2 * torch.randn(N, 1, 8, 8, generator=g)
    y = torch.randint(0, 4, (N,), generator=g)
    for i in range(N):
        k = int(y[i])
        at = slice(1, 3) if k % 2 == 0 else slice(5, 7)
        if k < 2:
            x[i, 0, at, :] += 1.0
        else:
            x[i, 0, :, at] += 1.0
    return x, torch.nn.functional.one_hot(y, 4).float()


class _CutMix(_Table):
    """Pastes the partner's (the batch reversed) lower rows from a random height on; the
    targets are mixed by the pasted area only where MIX."""

    MIX = False

    def augment(self, x, y, g):
        cut = torch.randint(0, 9, (len(x),), generator=g)  # rows from `cut` on are pasted
        rows = torch.arange(8)[None, :] >= cut[:, None]  # (B, 8)
        mask = rows[:, None, :, None].float()  # (B, 1, 8, 1)
        mixed = (1 - mask) * x + mask * x.flip(0)
        if not self.MIX:
            return mixed, y
        share = rows.float().mean(1, keepdim=True)  # (B, 1): the pasted area
        return mixed, (1 - share) * y + share * y.flip(0)


class _CutMixMixed(_CutMix):
    MIX = True


def test_cutmix_whose_labels_stay_unmixed_places_the_table_worse():
    gap, r = _gap(_CutMix(*_stripes()))
    assert r["kept"] and gap > transform.GAP, r


def test_cutmix_with_its_targets_mixed_is_not_read_as_changing_the_label():
    gap, r = _gap(_CutMixMixed(*_stripes()))
    assert not r["kept"] and gap < transform.GAP, r


class _Mixup(_Table):
    def augment(self, x, y, g):
        lam = torch.rand(len(x), generator=g)
        mixed = lam[:, None, None, None] * x + (1 - lam[:, None, None, None]) * x.flip(0)
        return mixed, lam[:, None] * y + (1 - lam[:, None]) * y.flip(0)


def test_mixup_with_its_targets_mixed_places_the_table_about_as_well():
    gap, r = _gap(_Mixup(*_stripes()))
    assert not r["kept"] and gap < transform.GAP, r


def test_a_setup_without_a_table_or_with_its_rows_as_given_is_not_read():
    x, y = _blobs(side_label=True)
    plain = _Table(x, y)
    assert transform.augmented(plain, plain.batches(0)) is None  # the batches are its rows
    bare = _HFlip(x, y)
    batches = bare.batches(0)
    del bare.x, bare.y
    assert transform.augmented(bare, batches) is None


def _sized(seed=2603):
    """(N, 6) positive readings: a size per row (log-normal) times a pattern of shares."""
    g = _gen(seed)
    size = torch.exp(torch.randn(N, 1, generator=g))
    pattern = torch.exp(0.5 * torch.randn(N, 6, generator=g))
    return size * pattern, size.squeeze(1), pattern


def _unit_rows(x):
    return x / x.norm(dim=1, keepdim=True)


def test_rows_scaled_to_one_norm_lose_a_magnitude_target():
    x, size, _ = _sized()
    batches = [(x_, y_) for x_, y_ in zip(_unit_rows(x).split(32), size.log().split(32))]
    lost = transform.unplaced(batches)
    assert [c["name"] for c in lost] == ["the target"], lost
    assert abs(lost[0]["shuffled"] - lost[0]["real"]) < transform.PLACED


def test_rows_standardised_lose_a_size_class():
    x, size, _ = _sized(2604)
    z = (x - x.mean(1, keepdim=True)) / x.std(1, keepdim=True)
    big = (size > size.median()).long()
    assert transform.row_scale(z)[0] == "standard deviation"
    lost = transform.unplaced(list(zip(z.split(32), big.split(32))))
    assert [c["name"] for c in lost] == ["the class"], lost


def test_rows_scaled_to_one_norm_keep_a_label_the_scale_does_not_set():
    x, _, pattern = _sized(2605)
    top = pattern.argmax(1)  # the largest share: the same at any scale
    batches = list(zip(_unit_rows(x).split(32), top.split(32)))
    assert transform.row_scale(_unit_rows(x))[0] == "L2 norm"
    assert transform.unplaced(batches) == []


def test_rows_of_many_scales_or_one_hot_rows_are_not_normalised_rows():
    x, size, _ = _sized(2606)
    assert transform.row_scale(x) is None  # raw readings: every row its own size
    one_hot = torch.nn.functional.one_hot(torch.arange(N) % 6, 6).float()
    assert transform.row_scale(one_hot) is None  # one norm, but no normalisation
    assert transform.unplaced([(one_hot, size)]) == []


def test_rows_too_wide_to_read_in_full_are_left_unread():
    wide = torch.randn(70, 3, 200, 200)
    wide = wide / wide.flatten(1).norm(dim=1)[:, None, None, None]  # unit rows of 120,000 values
    assert transform._read(wide) < 4 * transform.K  # 2**22 values hold fewer than 64 such rows
    assert transform.row_scale(wide) is None
