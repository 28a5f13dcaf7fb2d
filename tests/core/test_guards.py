import math

import pytest
import torch
import torch.nn.functional as F

from labkit.core.data import make_tokens
from labkit.core.guards import require_finite, require_supervised_tokens


def test_counts_supervised_tokens_after_the_shift():
    labels = make_tokens().train["labels"][:4]
    assert require_supervised_tokens(labels) == int((labels[:, 1:] != -100).sum())


def test_all_masked_batch_is_nan_in_pytorch_and_a_sentence_with_the_guard():
    labels = torch.full((3, 6), -100)
    logits = torch.randn(3, 5, 10, requires_grad=True)
    raw = F.cross_entropy(logits.reshape(-1, 10), labels[:, 1:].reshape(-1), ignore_index=-100)
    assert math.isnan(raw.item())  # what plain PyTorch gives: 0/0
    raw.backward()
    assert torch.count_nonzero(logits.grad) == 0  # and the gradient is exactly zero
    with pytest.raises(ValueError, match="no supervised tokens: all 15 labels are -100"):
        require_supervised_tokens(labels)


def test_require_finite_names_the_tensor_and_first_bad_index():
    x = torch.zeros(2, 3)
    x[1, 2] = math.inf
    with pytest.raises(ValueError, match=r"inputs has 1 non-finite values .* index \(1, 2\)"):
        require_finite("inputs", x)
    require_finite("ok", torch.ones(3))
    with pytest.raises(TypeError, match="labels must be a tensor"):
        require_supervised_tokens([[-100]])
