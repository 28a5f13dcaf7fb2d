import pytest
import torch

from labkit.core.data import BOS, EOS, IGNORE, PAD, SEP, make_blobs, make_imbalanced, make_tokens


@pytest.mark.parametrize("make", [make_blobs, make_imbalanced, make_tokens])
def test_same_seed_same_hash_and_tensors(make):
    a, b, c = make(seed=0), make(seed=0), make(seed=1)
    assert a.hash == b.hash
    assert a.hash != c.hash
    for k in a.train:
        assert torch.equal(a.train[k], b.train[k])


def test_blobs_have_ten_balanced_classes_and_unit_scale():
    ds = make_blobs()
    counts = torch.bincount(torch.cat([ds.train["y"], ds.val["y"]]), minlength=10)
    assert counts.tolist() == [128] * 10
    x = torch.cat([ds.train["x"], ds.val["x"]])
    assert torch.allclose(x.mean(0), torch.zeros(2), atol=1e-5)
    assert torch.allclose(x.std(0), torch.ones(2), atol=1e-4)


def test_blobs_are_separable_by_nearest_centre():
    ds = make_blobs()
    x, y = ds.train["x"], ds.train["y"]
    centres = torch.stack([x[y == c].mean(0) for c in range(10)])
    pred = torch.cdist(x, centres).argmin(1)
    assert (pred == y).float().mean() > 0.99


def test_imbalanced_is_about_95_to_5():
    ds = make_imbalanced(seed=0)
    frac = ds.train["y"].float().mean().item()
    assert 0.03 < frac < 0.07
    assert ds.n_classes == 2


def test_token_layout_masks_and_labels():
    ds = make_tokens(seed=0)
    ids, att, resp, labels = (
        ds.train[k] for k in ("input_ids", "attention_mask", "response_mask", "labels")
    )
    assert (ids[:, 0] == BOS).all()
    lengths = att.sum(1)
    assert lengths.min() < lengths.max()  # variable lengths
    for i in range(20):
        n = int(lengths[i])
        assert (ids[i, n:] == PAD).all() and (ids[i, :n] != PAD).all()  # right padding
        assert ids[i, n - 1] == EOS
        sep = (ids[i] == SEP).nonzero()[0, 0]
        assert resp[i, sep + 1 : n].all() and not resp[i, : sep + 1].any()
    assert (labels[~resp] == IGNORE).all()  # prompt and padding carry no loss
    assert torch.equal(labels[resp], ids[resp])


def test_tokens_full_loss_mask_keeps_prompt_but_not_padding():
    ds = make_tokens(response_only=False)
    labels, att = ds.train["labels"], ds.train["attention_mask"]
    assert ((labels != IGNORE) == att.bool()).all()


def test_vocab_size_is_configurable():
    ds = make_tokens(vocab_size=20)
    assert ds.train["input_ids"].max() < 20 and ds.n_classes == 20


def test_bad_sizes_are_refused_with_the_parameter_name():
    with pytest.raises(ValueError, match="n_classes=1"):
        make_blobs(n_classes=1)
    with pytest.raises(ValueError, match="minority=0.9"):
        make_imbalanced(minority=0.9)
    with pytest.raises(TypeError, match="vocab_size must be a whole number"):
        make_tokens(vocab_size="50")


def test_responses_follow_the_two_successor_chain():
    # Each response token is one of two successors of the token before it, so a
    # model reading the previous token can reach ln 2 per response token.
    from labkit.core.data import _successors

    ds = make_tokens(seed=3)
    succ = _successors(50, torch.Generator().manual_seed(3))
    ids, resp = ds.train["input_ids"], ds.train["response_mask"]
    checked = 0
    for i in range(50):
        pos = resp[i].nonzero().flatten().tolist()[:-1]  # last response slot is EOS
        for t in pos:
            prev = t - 2 if t == pos[0] else t - 1  # the first one follows the token before SEP
            assert int(ids[i, t]) in succ[int(ids[i, prev])].tolist()
            checked += 1
    assert checked > 100
