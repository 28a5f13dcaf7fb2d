"""The readings added from the held-out batches, on inputs none of those batches hold: each
must stay silent where its defect is absent, and say nothing rather than fail on what it
cannot read (no training here: every reading below is a function of tensors)."""

import math

import torch

from labkit.diagnosis.own.step3_h2 import layout, mask
from labkit.diagnosis.own.step4_h1 import targets


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def test_the_layout_reading_skips_grey_images_and_finds_no_colours_in_noise():
    grey = [(torch.rand(8, 1, 12, 12, generator=_gen(0)), torch.zeros(8))]
    assert layout.readings(grey) is None  # one channel: no colour to correlate
    noise = [(torch.randn(16, 3, 12, 12, generator=_gen(1)), torch.zeros(16))]
    given, reread = layout.readings(noise)
    assert abs(given) < 0.1 and abs(reread) < 0.1  # neither reading looks like colours
    mixed = noise + [(torch.randn(4, 3, 16, 16, generator=_gen(2)), torch.zeros(4))]
    assert layout.readings(mixed) is not None  # batches of another size are left out


def test_colour_images_stored_channels_first_read_as_such():
    base = torch.rand(16, 1, 12, 12, generator=_gen(3))
    rgb = torch.cat([base, 0.9 * base, 0.8 * base], 1) + 0.05 * torch.rand(16, 3, 12, 12)
    given, reread = layout.readings([(rgb, torch.zeros(16))])
    assert given > layout.HIGH and reread < given  # the rule needs given < LOW: silent here


def test_masks_are_only_two_valued_tensors_of_the_inputs_shape_with_both_values():
    ids = torch.randint(0, 9, (4, 6), generator=_gen(4))
    batch = {
        "input_ids": ids,
        "labels": torch.randint(0, 2, (4, 6), generator=_gen(5)),  # labels are never a mask
        "all_real": torch.ones(4, 6, dtype=torch.bool),  # one value: no polarity to read
        "weights": torch.rand(4, 6),  # float: not a mask
        "padding_mask": ids == 0,
    }
    batch["padding_mask"][:, -1] = True  # at least one pad per row
    assert mask._masks(batch) == ["padding_mask"]
    assert mask._masks((ids, ids)) == []  # a tuple batch holds no named mask


def test_class_weights_are_not_read_where_a_class_is_weighed_zero_or_none_is_given():
    y = torch.tensor([0] * 30 + [1] * 10 + [2] * 5)
    zero = ("cross_entropy", (torch.zeros(45, 3), y), {"weight": torch.tensor([1.0, 0.0, 2.0])})
    assert targets.class_weights(zero, (torch.zeros(45, 3), y), []) is None
    none = ("cross_entropy", (torch.zeros(45, 3), y), {})
    assert targets.class_weights(none, (torch.zeros(45, 3), y), []) is None
    even = ("cross_entropy", (torch.zeros(45, 3), y), {"weight": 45 / (3 * torch.bincount(y))})
    found = targets.class_weights(even, (torch.zeros(45, 3), y), [])
    assert math.isclose(found["weighted"], 1.0, rel_tol=1e-6) and found["uneven"] == 6.0


def test_integer_counts_and_soft_labels_are_not_read_as_defects():
    counts = torch.poisson(torch.full((200,), 3.0), generator=_gen(6)).long()
    assert targets.truncated("mse_loss", [(None, counts)]) is None  # never below 0
    ratings = torch.randint(-1, 2, (200,), generator=_gen(7))  # -1, 0, 1 evenly: a third 0
    assert targets.truncated("mse_loss", [(None, ratings)]) is None
    assert targets.outside_unit("binary_cross_entropy", torch.rand(50)) == []
    assert targets.outside_unit("binary_cross_entropy", torch.randint(0, 2, (50,))) == []


def test_a_clamp_is_read_by_the_best_loss_it_leaves():
    shape = (8, 10)
    assert targets.clamp_floor("cross_entropy", -50.0, 50.0, shape) < 1e-20
    assert targets.clamp_floor("cross_entropy", 0.0, 1.0, shape) > 1.0  # 9 others at e^-1
    assert targets.clamp_bounds("clamp", (torch.zeros(2), 0.0, 1.0), {}) == (0.0, 1.0)
    assert targets.clamp_bounds("clamp", (torch.zeros(2),), {"min": 0.0}) is None  # one bound
