import math

import pytest
import torch
import torch.nn.functional as F

from labkit.core.data import IGNORE, make_blobs, make_tokens
from labkit.core.models import MLP, TinyCausalLM, shifted_lm_loss


def test_mlp_has_named_backbone_and_head_and_dropout():
    m = MLP(dropout=0.2)
    names = {n.split(".")[0] for n, _ in m.named_parameters()}
    assert names == {"backbone", "head"}
    assert any(isinstance(x, torch.nn.Dropout) for x in m.backbone)
    assert m(torch.randn(5, 2)).shape == (5, 10)


def test_mlp_loss_at_init_is_ln_c():
    torch.manual_seed(0)
    ds = make_blobs()
    loss = F.cross_entropy(MLP()(ds.train["x"]), ds.train["y"]).item()
    assert loss == pytest.approx(math.log(10), abs=0.01)


def _lm_batch(seed=0, n=8):
    ds = make_tokens(seed=seed)
    return {k: v[:n] for k, v in ds.train.items()}


def test_lm_loss_equals_manual_shifted_cross_entropy():
    torch.manual_seed(0)
    model = TinyCausalLM()
    b = _lm_batch()
    out = model(b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"])
    logits = out.logits
    manual = F.cross_entropy(
        logits[:, :-1].reshape(-1, 50), b["labels"][:, 1:].reshape(-1), ignore_index=IGNORE
    )
    assert torch.allclose(out.loss, manual)
    assert out.loss.item() == pytest.approx(math.log(50), abs=0.05)  # near-uniform at init


def test_lm_is_causal_and_ignores_padding():
    torch.manual_seed(0)
    model = TinyCausalLM().eval()
    b = _lm_batch(n=2)
    ids, att = b["input_ids"].clone(), b["attention_mask"]
    base = model(ids, attention_mask=att).logits
    changed = ids.clone()
    changed[:, 5] = 7  # a change at position 5 may only affect positions >= 5
    after = model(changed, attention_mask=att).logits
    assert torch.allclose(base[:, :5], after[:, :5], atol=1e-6)
    assert not torch.allclose(base[:, 5:], after[:, 5:])
    padded = ids.clone()
    n = int(att[0].sum())
    padded[0, n:] = 9  # garbage in padded slots must not change real positions
    assert torch.allclose(model(padded, attention_mask=att).logits[0, :n], base[0, :n], atol=1e-6)


def test_all_ignored_labels_give_nan_like_pytorch():
    logits = torch.randn(2, 5, 50)
    labels = torch.full((2, 5), IGNORE)
    assert torch.isnan(shifted_lm_loss(logits, labels))


def test_lm_refuses_wrong_input():
    model = TinyCausalLM(max_len=8)
    with pytest.raises(TypeError, match="input_ids must be"):
        model(torch.randn(2, 4))
    with pytest.raises(ValueError, match="max_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_hf_convention_matches_gpt2lmheadmodel():
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=50, n_positions=32)
    torch.manual_seed(0)
    gpt2 = transformers.GPT2LMHeadModel(cfg).eval()
    b = _lm_batch()
    out = gpt2(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"])
    # Both conventions: labels shifted inside the model, -100 ignored.
    assert torch.allclose(out.loss, shifted_lm_loss(out.logits, b["labels"]), atol=1e-5)
    ours = TinyCausalLM()
    mine = ours(b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"])
    assert torch.allclose(mine.loss, shifted_lm_loss(mine.logits, b["labels"]))
    # Passing pre-shifted labels to either model is the double-shift bug: it changes the loss.
    pre = torch.cat([b["labels"][:, 1:], torch.full_like(b["labels"][:, :1], IGNORE)], 1)
    assert not torch.allclose(gpt2(input_ids=b["input_ids"], labels=pre).loss, out.loss)
